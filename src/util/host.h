/* Where lockbox runs: as its own program, or inside a process that lives on after it (the bash builtin). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_HOST_H
#define LOCKBOX_HOST_H

#include <signal.h>
#include <sys/types.h>

/*
 * As a program, lockbox ends by exit(3) and its caller is its parent.
 * Inside a host (shell/builtin.c: bash runs an applet's acquire or
 * release in its own process), the host lives on: what would end the
 * program ends the call instead, the caller is the host itself, and a
 * wait gives up when the host has a signal to act on.
 *
 * What ending the call means: lb_exit goes back to lb_host_run by
 * longjmp(3), past whatever the applet was doing. So code that may run
 * in a host calls lb_exit (lb_die, lb_usage_error, lb_help...) only
 * while it holds nothing that must be given back: no fd opened, no
 * memory allocated, no lock taken. In the acquire and release front
 * ends those calls are all in option parsing, before the lock file is
 * touched; errors after that are returned.
 */

/* The program's end: exit(STATUS); in a host, the call's end with STATUS. */
_Noreturn void lb_exit(int status);

/* Whether this run is a call inside a host. */
int lb_hosted(void);

/*
 * The process whose open file acquire --fd and release --fd lock, and
 * that their records name: the program's parent (a shell that ran
 * lockbox on an fd it opened), or in a host the host itself.
 */
pid_t lb_caller(void);

/*
 * The host's side, around each call: FN(ARGC, ARGV) run as lockbox, its
 * status returned, or the status lb_exit was given. While it runs, the
 * host keeps its signals blocked (the caller's job), and a wait sleeps
 * with SLEEP_MASK instead, so that a signal is taken only there, never
 * lost between a look and a sleep; after each signal STOP says whether
 * the host must act on one now (its number), and the wait then ends as
 * interrupted. Calls do not nest.
 */
int lb_host_run(int (*fn)(int, char **), int argc, char **argv,
    const sigset_t *sleep_mask, int (*stop)(void));

/*
 * For the wait layer, inside a host: the mask to sleep with (NULL: not
 * hosted), and whether to end the wait now. lb_host_stop remembers the
 * signal, which lb_host_interrupted then gives (0: none). Once the host
 * must act on a signal, the call says nothing more: the program, killed
 * by it, would have said nothing either.
 */
const sigset_t *lb_host_sleep_mask(void);
int lb_host_stop(void);
int lb_host_interrupted(void);

#endif

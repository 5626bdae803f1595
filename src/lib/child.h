/* Running a command as a child: exec failure told apart, signals passed on. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_CHILD_H
#define LOCKBOX_CHILD_H

#include <stdint.h>
#include <sys/types.h>

struct lb_child {
	pid_t pid;		/* -1 when not running */
	int exec_errno;		/* why exec failed; 0 when it did not */
};

/*
 * Catch the n signals in sigs so that lb_child_wait passes them on to the
 * running child (one ignored on entry stays ignored, as in sh(1)), and keep
 * them and SIGCHLD blocked except inside lb_child_wait and
 * lb_child_sleep_until. Call once, before the first lb_child_start.
 * Returns 0, or -1 with errno.
 */
int lb_child_catch(const int *sigs, int n);

/* The last signal caught by lb_child_catch's handler, 0 when none. */
int lb_child_caught(void);

/*
 * Fork and execvp argv with the signal state lockbox was started with.
 * Returns 0 once argv[0] runs. Returns -1 with errno when it could not be
 * started; c->exec_errno is that errno when exec itself failed (the child is
 * reaped), 0 when fork or pipe did.
 */
int lb_child_start(struct lb_child *c, char *const argv[]);

/*
 * Wait for the child to end, passing caught signals on to it. Returns 0
 * with its wait status in *wstatus, or -1 with errno.
 */
int lb_child_wait(struct lb_child *c, int *wstatus);

/* A wait status as a shell sees it: the exit code, or 128+n for signal n. */
int lb_child_status(int wstatus);

/* The status for a failed exec: 127 not found, 126 found but not runnable. */
int lb_child_exec_status(int exec_errno);

/*
 * End by SIG, as the signal's default action does, so that the calling
 * shell sees a process killed by it (an interactive ^C then stops the
 * whole script, not just us). Returns only if SIG's default is to go on.
 */
void lb_reraise(int sig);

/*
 * Sleep until the CLOCK_MONOTONIC deadline (ns) or until a caught signal,
 * also one caught before the call. Returns 0, or that signal.
 */
int lb_child_sleep_until(int64_t deadline);

#endif

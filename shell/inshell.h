/* The shell library's builtins, between their files (internal to shell/: bash's headers come first). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_INSHELL_H
#define LOCKBOX_INSHELL_H

#include <stdint.h>
#include <sys/types.h>

/*
 * builtin.c: bash's side of every call.
 *
 * lb_sh_applet runs `lockbox APPLET ARG...` (ARGV[0] is the applet) in
 * this process, for the forms that never exec: acquire, release and
 * `-- LOCKFILE create`. What it prints on stdout goes into OUT (a string
 * to free, its last newline dropped) when OUT is not NULL. Its status.
 */
int lb_sh_applet(char **out, int argc, char **argv);

/* FN(ARGC, ARGV) run as lockbox's applet PROG would run it, in this process. */
int lb_sh_hosted(const char *prog, int (*fn)(int, char **), int argc, char **argv);

/*
 * Bash's builtin FN run with WORDS (NULL-terminated, its name left out),
 * what it prints on stdout into *OUT (to free) when OUT is not NULL.
 */
int lb_sh_builtin(char **out, int (*fn)(WORD_LIST *), char **words);

/* Sleep NS nanoseconds; 0, or 128+N when the shell has signal N to act on. */
int lb_sh_nap(int64_t ns);

/*
 * Run ARGV as a simple command of the shell (a function, a builtin or
 * a program, found as "$@" would find it), its status the command's,
 * with set -e held off inside it as for `CMD || ...`.
 */
int lb_sh_run(char **argv);

/* The binary the library belongs to, for the forms that are the program's. */
const char *lb_sh_binary(void);

/* Messages as the library's functions give them: NAME: TEXT, one write. */
void lb_sh_warn(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* locks.c: the locks this shell holds, and the calls on them. */
int lb_sh_acquire_mutex(int argc, char **argv);
int lb_sh_release_mutex(int argc, char **argv);
int lb_sh_acquire_slot(int argc, char **argv);
int lb_sh_release_slot(int argc, char **argv);
int lb_sh_mutex(int argc, char **argv);
/* Every lock this shell holds, mutexes and slots, let go: the EXIT trap's. */
int lb_sh_release_all(void);

/* traps.c: the EXIT trap that releases, chained with the script's own. */
int lb_sh_trap(int argc, char **argv);
/* Install the release on EXIT in this shell, once (before a lock is taken). */
void lb_sh_arm(void);
/* The handler itself: release, then the script's own EXIT command. */
int lb_sh_on_exit(void);
/* The library unloaded (enable -d): what is held let go, the script's trap put back. */
void lb_sh_disarm(void);

/* retry.c: waitfor in the shell. */
int lb_sh_waitfor(int argc, char **argv);

#endif

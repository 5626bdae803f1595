/* The one child runner: fork and exec a command, pass it signals, wait for it. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_SUPERVISE_H
#define LOCKBOX_SUPERVISE_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* lb_super_init's flags */
enum {
	/* the child leads a process group of its own, and signals go to the group */
	LB_SUPER_GROUP = 1,
	/*
	 * A signal the kernel sent (a terminal's ^C goes to its whole
	 * foreground group, the child included) is noted, not passed on:
	 * the child has it already.
	 */
	LB_SUPER_NOT_KERNEL = 2
};

struct lb_super {
	pid_t pid;		/* the child; -1 when none runs */
	int exec_errno;		/* why its exec failed; 0 when it did not */
	int caught;		/* the last signal to pass on that came, 0 when none */
	unsigned flags;
	sigset_t set;		/* blocked from lb_super_init on, taken with sigwaitinfo */
	sigset_t pass;		/* those of SET that are passed on */
	sigset_t entry_mask;	/* restored in the child */
	struct sigaction entry_chld;
};

/*
 * Block the n signals in PASS (to be passed on to the child; one ignored
 * on entry stays ignored, as in sh(1), and the child inherits that),
 * the n_own in OWN (for the caller: lb_super_wait returns them), and
 * SIGCHLD. They stay blocked and are taken with sigwaitinfo: no handler,
 * no race between a signal and the wait. Call once, before the first
 * lb_super_start. Returns 0, or -1 with errno.
 */
int lb_super_init(struct lb_super *s, const int *pass, int n, const int *own, int n_own,
    unsigned flags);

/*
 * Fork and execvp argv with the signal state lockbox was started with.
 * Returns 0 once argv[0] runs. Returns -1 with errno when it could not be
 * started; s->exec_errno is that errno when exec itself failed (the child,
 * which left with _exit, is reaped), 0 when fork or pipe did.
 */
int lb_super_start(struct lb_super *s, char *const argv[]);

/*
 * Wait for the child, passing signals on to it (s->caught tells the last
 * one). Returns 0 once it has ended, with its wait status in *wstatus;
 * one of the caller's own signals when it comes; -1 with errno EAGAIN
 * when DEADLINE (CLOCK_MONOTONIC ns, or LB_NO_DEADLINE) has passed, or with another
 * errno on failure.
 */
int lb_super_wait(struct lb_super *s, int64_t deadline, int *wstatus);

/*
 * Start ARGV and wait for its end, passing signals on (lb_super_start,
 * then lb_super_wait with no deadline): 0 with its wait status in
 * *WSTATUS; or, when ARGV could not be executed, the status for that (126
 * or 127, reported). A failure to fork or to wait ends lockbox (125).
 */
int lb_super_run(struct lb_super *s, char *const argv[], int *wstatus);

/*
 * The same until DEADLINE (CLOCK_MONOTONIC ns): -1 with errno EAGAIN when
 * it passed first, the child still running (lb_super_wait for its end).
 */
int lb_super_run_until(struct lb_super *s, char *const argv[], int64_t deadline, int *wstatus);

/* Pass SIG on to the child as lb_super_wait does (to its group with LB_SUPER_GROUP). */
void lb_super_signal(const struct lb_super *s, int sig);

/*
 * Sleep until the CLOCK_MONOTONIC deadline (ns) or until a signal to pass
 * on comes, also one that came before the call. There is no child to pass
 * it to: it is only noted. Returns 0, or that signal.
 */
int lb_super_sleep_until(struct lb_super *s, int64_t deadline);

/* A wait status as a shell sees it: the exit code, or 128+n for signal n. */
int lb_child_status(int wstatus);

/*
 * End by SIG, as the signal's default action does, so that the calling
 * shell sees a process killed by it (an interactive ^C then stops the
 * whole script, not just us). Returns only if SIG's default is to go on.
 */
void lb_reraise(int sig);

#endif

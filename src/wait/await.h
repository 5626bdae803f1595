/* The one door into waiting: what a wait is for, and what ended it, by name (await.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_AWAIT_H
#define LOCKBOX_AWAIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wait.h"

/* What ended a wait. */
enum lb_outcome {
	LB_GRANTED,	/* a lock asked for to keep: it is ours */
	LB_FREE,	/* a lock watched: it could be had (and was let go) */
	LB_ENDED,	/* a process watched ended (awaited.pid) */
	LB_CHANGED,	/* a word watched changed; with err, it can no longer be watched */
	LB_CLOSED,	/* a last close of the file on this host (a hint: see lb_await_close) */
	LB_STOPPED,	/* ^Z: the caller lets go of what others wait for, then lb_await_suspend */
	LB_LOOK,	/* the caller's time to look again (lb_await_run's LOOK_MS) */
	LB_DEADLINE,	/* the deadline passed first */
	LB_INTERRUPTED,	/* inside a host (the bash builtin): a signal the host must act on */
	LB_REFUSED,	/* a lock request the kernel refused: awaited.err (EDEADLK...) */
	LB_FAILED,	/* the wait itself failed: awaited.err */
};

/* An outcome, and of what: the caller's TAG, the process that ended, why it failed. */
struct lb_awaited {
	enum lb_outcome what;
	int tag;
	pid_t pid;
	int err;
};

/*
 * One lock of TYPE on [START, START+LEN) of FD, waited for up to DEADLINE
 * (LB_NO_WAIT: tried once). KEEP: taken, and kept (LB_GRANTED); else
 * watched until it could be had, and let go (LB_FREE): the caller holds
 * no lock of its own in the range and has no wait set open. Or
 * LB_DEADLINE, LB_STOPPED (^Z, a watch only: SIGTSTP when it was not
 * ignored on entry), LB_INTERRUPTED, LB_FAILED (errno). The door picks
 * how: a lock held for a moment (a header) is tried again, the processor
 * given up between, before any thread is started; a watch blocks in
 * this thread, a lock request ended by a timer's flag or ^Z's; what
 * cannot be done so (a kept lock that stays busy, any wait inside a
 * host) is a wait set's, with a helper thread.
 */
enum lb_outcome lb_await_lock_one(int fd, short type, off_t start, off_t len, int64_t deadline,
    int keep);

/*
 * A wait for several things at once: wait.h's events (a lock or flock(2)
 * request by a helper thread, a word, a process's end, a last close,
 * ^Z), added one by one, as wait.h says of each (the same returns), then
 * lb_await_run. It is the only way into wait.c.
 */
struct lb_await {
	struct lb_wait w;
};

/* 0, or -1 with errno (nothing left to shut). ^Z is watched (unless it was ignored on entry). */
int lb_await_open(struct lb_await *a);
int lb_await_lock(struct lb_await *a, int fd, short type, off_t start, off_t len, int keep,
    int tag);
int lb_await_flock(struct lb_await *a, int fd, int op, int keep, int tag);
int lb_await_word(struct lb_await *a, int fd, off_t off, const unsigned char expect[4], int tag);
int lb_await_pid(struct lb_await *a, pid_t pid, uint64_t starttime, int tag);
int lb_await_close(struct lb_await *a, int fd, int tag);
/* How many lock requests may still be added (the word's thread counts as one). */
size_t lb_await_room(const struct lb_await *a);

/*
 * Sleep until one of the events, DEADLINE, or LOOK_MS (> 0; LB_NO_RECHECK:
 * none) for a caller that must look at something no event tells of:
 * the outcome, and what it is of in *OUT.
 */
enum lb_outcome lb_await_run(struct lb_await *a, int64_t deadline, int look_ms,
    struct lb_awaited *out);

/* Withdraw the lock requests (a lock granted and not reported is let go); the rest stays. */
void lb_await_forget_locks(struct lb_await *a);
/* Withdraw everything, free the set. */
void lb_await_shut(struct lb_await *a);
/* After LB_STOPPED: stop as ^Z asks. */
void lb_await_suspend(void);

#endif

/* Waiting for one lock with a deadline: the one front door (lockwait.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKWAIT_H
#define LOCKBOX_LOCKWAIT_H

#include <stdint.h>
#include <sys/types.h>

/* What lb_lock_wait does with the lock once it is granted. */
enum lb_lock_how {
	/*
	 * Keep it: 1 granted, 0 the deadline passed (errno EAGAIN), -1
	 * error. A lock that is free, or held for a moment (a header), is
	 * taken without a thread; else on a wait set's helper (wait.h).
	 */
	LB_LOCK_KEEP,
	/*
	 * Watch it: wait, in the caller's own thread, until it can be
	 * granted, and let it go at once. The caller holds no lock of its
	 * own in the range, and has no wait set going (its helpers would
	 * have its signals). 1 it was free, 0 the deadline passed, 2 stopped
	 * by ^Z (SIGTSTP, when it was not ignored on entry; the caller lets
	 * go of what others wait for, then stops with lb_wait_suspend), -1
	 * error (errno; EINTR: a host's signal to act on). It takes a timer
	 * signal and SIGTSTP for the call and, inside a host, the host's
	 * signals, each handed back to the host's handler at once.
	 */
	LB_LOCK_WATCH,
};

/* Wait up to DEADLINE for a lock of TYPE on [START, START+LEN) of FD. */
int lb_lock_wait(int fd, short type, off_t start, off_t len, int64_t deadline,
    enum lb_lock_how how);

#endif

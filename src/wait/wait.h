/* The one place lockbox blocks: lock requests, process exits and announced changes, with a deadline. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_WAIT_H
#define LOCKBOX_WAIT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/*
 * A wait set: the kernel wakes the caller when any of its events happens,
 * or the deadline passes. Nothing polls. Events:
 *
 *   lock   a blocking fcntl or flock(2) lock request, made by a helper
 *          thread (there is no syscall that waits for one of several locks)
 *   word   a change of a 32-bit word in a file's first page, announced by
 *          its writer with lb_wake_word (a shared futex on a mapping of
 *          the file, waited on by a helper thread)
 *   pid    a process ending, through a pidfd (race-free: the kernel has
 *          released the process's locks before the pidfd is readable)
 *   stop   SIGTSTP (a terminal's ^Z) when it was not ignored on entry:
 *          the caller can leave a queue before it stops
 *   close  the last close of an open file of a given file on this host
 *          (inotify): the moment an open file description lock held
 *          through it goes. Reported just before the kernel drops that
 *          lock, so the caller may find it held still: a hint, for a
 *          caller that looks again in any case (LB_EV_RECHECK)
 *
 * At most LB_WAIT_HELPERS helper threads at a time (lock requests and the
 * word together), so a waiter never has more threads than that besides
 * its own, whatever the pool's size. Every event carries the caller's
 * TAG; lb_wait_run returns one event that happened (events that happened
 * together are returned by the calls that follow, without sleeping).
 */
#define LB_WAIT_HELPERS	3

/* What woke a wait. */
enum { LB_EV_LOCK, LB_EV_PID, LB_EV_WORD, LB_EV_STOP, LB_EV_RECHECK, LB_EV_CLOSE };
struct lb_wait_event {
	int kind;
	int tag;		/* the caller's, for LOCK, PID, WORD and CLOSE */
	int err;		/* LOCK, WORD: 0 granted, found free or changed; else why not */
	int kept;		/* LOCK: asked for to keep (granted: it is ours) */
	pid_t pid;		/* PID: the process that ended */
};

struct lb_wait_helper;
struct lb_wait_pin;

struct lb_wait {
	int ep;			/* epoll */
	int bell[2];		/* helper threads write their id here */
	int sig;		/* signalfd for SIGTSTP, -1 when none */
	int closes;		/* inotify for the file's closes, -1 when none */
	int close_tag;
	sigset_t stop_mask;	/* the mask before SIGTSTP was blocked */
	struct lb_wait_helper *helpers[LB_WAIT_HELPERS];
	unsigned starts;	/* helpers started: part of each one's id */
	struct lb_wait_pin *pins;	/* sorted by pid */
	size_t npins, cappins;
	struct lb_wait_event *ready;	/* seen, not yet returned */
	size_t nready, capready;
	int fd_limit_raised;
	rlim_t saved_fd_limit;
	int counted;		/* among the live sets (wait.c's wake signal) */
};

/* 0, or -1 with errno. */
int lb_wait_init(struct lb_wait *w);

/*
 * Ask for a lock of TYPE on [START, START+LEN) of FD. KEEP: the lock is
 * held once granted (the event means "it is yours"); else it is dropped at
 * once (the event means "it was free"). 0, or -1 with errno (EMFILE when
 * LB_WAIT_HELPERS helpers are out already).
 */
int lb_wait_on_lock(struct lb_wait *w, int fd, short type, off_t start, off_t len,
    int keep, int tag);

/*
 * The same for a flock(2) lock of FD's open file: OP is LOCK_SH or
 * LOCK_EX; its event is an LB_EV_LOCK.
 */
int lb_wait_on_flock(struct lb_wait *w, int fd, int op, int keep, int tag);

/* The number of helpers (lock requests, or the word) that may still be added. */
size_t lb_wait_locks_free(const struct lb_wait *w);

/*
 * A change of the 32-bit word at OFF (a multiple of 4, in the first page)
 * of the file open on FD: the event comes once its bytes are not EXPECT,
 * checked at once and again at every lb_wake_word on it. The word is
 * watched once: a watch of it with the same EXPECT that has not fired yet
 * is kept as it is (and not restarted), otherwise replaced. 0, or -1 with
 * errno (a file that cannot be mapped).
 */
int lb_wait_on_word(struct lb_wait *w, int fd, off_t off, const unsigned char expect[4], int tag);


/*
 * The end of process PID, which must have started at STARTTIME (clock
 * ticks after boot, as /proc/PID/stat says; 0: do not check). 1 watched,
 * 0 already gone (or another process now has that PID), -1 with errno.
 * A PID watched already is not watched twice.
 */
int lb_wait_on_pid(struct lb_wait *w, pid_t pid, uint64_t starttime, int tag);

/*
 * Report the closes of the file open on FD (any open file of it, by any
 * process of this host, as its last descriptor goes) as LB_EV_CLOSE, one
 * event for those seen together. One file per set; a second call only
 * changes the TAG. 0, or -1 with errno (no inotify instance left, no
 * /proc...).
 */
int lb_wait_on_close(struct lb_wait *w, int fd, int tag);

/* Report SIGTSTP as LB_WAIT_STOP while waiting (unless it is ignored). */
int lb_wait_stop(struct lb_wait *w);

/*
 * Sleep until an event or DEADLINE (CLOCK_MONOTONIC ns; LB_NO_WAIT means
 * now). MAX_MS > 0 caps the sleep, for a caller that must look again at
 * something no kernel event covers (LB_EV_RECHECK); LB_NO_RECHECK does
 * not. 1 with *EV filled, 0 when the deadline passed, -1 on error (errno).
 */
#define LB_NO_RECHECK	0
int lb_wait_run(struct lb_wait *w, int64_t deadline, int max_ms, struct lb_wait_event *ev);

/* After LB_EV_STOP: stop as ^Z asks (the caller has let go of what others wait for). */
void lb_wait_suspend(void);

/* Withdraw the lock requests only (pids, the word and closes stay watched). */
void lb_wait_clear_locks(struct lb_wait *w);

/* Clear, then free everything; the fd limit is what it was before. */
void lb_wait_done(struct lb_wait *w);

#endif

/* Which slots of a lock file are locked, by lock tests; who holds what on it, from the tests and, on request, the kernel's lock table (lockscan.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKSCAN_H
#define LOCKBOX_LOCKSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"
#include "slotset.h"

/* Locks as the kernel named them, each once. */
struct lb_lockset {
	struct lb_lockinfo *v;
	size_t n, cap;
};
void lb_lockset_free(struct lb_lockset *s);

/*
 * Each lock the kernel names in bytes [LO, HI] of FD's file (HI < 0: to
 * the end of any file) that keeps a lock of TYPE out, each once, by lock
 * tests of the file's own lock list: a test of a range has the kernel
 * name one lock in it (F_GETLK), and the ranges on either side of that
 * lock are tested in turn, 2k + 1 tests for k locks. FN(L, ARG) for
 * each, until it returns nonzero (returned). At most TESTS tests (0: no
 * bound; anyone who can read a file can lock any byte of it): 0 all were
 * seen, 1 the bound came first, -1 error.
 */
int lb_lock_each(int fd, short type, long long lo, long long hi, size_t tests,
    int (*fn)(const struct lb_lockinfo *l, void *arg), void *arg);

/*
 * Every slot of the lock file open on FD whose lock byte is write-locked,
 * by any process, through any open file but FD's own description, found
 * by lock tests of the file's own locks (never the host's lock table):
 * 2k + 1 tests for k locks on its slots, whatever else the host locks.
 * Read locks hold no slot (a waiter's brief look, or another program's
 * read lock, which keeps a claim out all the same). MET (NULL: not
 * wanted): every lock the tests met, read ones too, each once, as the
 * kernel named it: a lockbox holder's slot, a waiter's look, another
 * program's lock over many. 0, or -1 with errno.
 */
int lb_scan_held(int fd, struct lb_slotset *out, struct lb_lockset *met);

/*
 * The slots whose lock is held through FD's own open file description
 * (/proc/self/fdinfo). 0, or -1 with errno.
 */
int lb_scan_own(int fd, struct lb_slotset *out);

/*
 * Lock bytes of the header that check, list and status read-lock while
 * they read: its fields only, never the whole header (see
 * lb_lock_is_lockbox).
 */
#define LB_HDR_LOOK_LEN	64

/*
 * The bytes a waiter's lock request on a held slot asks to read-lock, from
 * the slot's own byte on: two, the slot's and the first of its record,
 * which nobody locks, so that the moment it is granted (and let go) it is
 * told from another program's read lock on the slot's byte alone.
 */
#define LB_WATCH_LEN	2


/*
 * Whether lockbox could have taken lock L: its range is one that
 * lockbox locks (the rule is written at the function). 0: another
 * program's, for sure.
 */
int lb_lock_is_lockbox(const struct lb_lockinfo *l);

/*
 * Whether L is the fcntl half of a holder of the file as any file
 * (LB_PATH_LEN): a mutex's, taken when the file was no lock file.
 */
int lb_path_half(const struct lb_lockinfo *l);

/*
 * The lock that keeps a lock of TYPE on [START, START+LEN) of FD's file
 * (LEN 0: to the end) from being granted, from the kernel (F_GETLK; the
 * first one it finds): 1 with *OUT filled, 0 when nothing does, -1 error.
 */
int lb_lock_conflict(int fd, short type, off_t start, off_t len, struct lb_lockinfo *out);

/*
 * Name the processes of the locks of V that have none (OFD locks): each
 * gets the first process found with it in the lock list of one of its
 * descriptors (/proc/PID/fdinfo), one walk of /proc for them all, within
 * the run's budget (lockowners.h); one not found (another user's
 * process, or not found in time) keeps 0.
 */
void lb_lock_owners(int fd, struct lb_lockinfo *v, size_t n);

/*
 * Who holds a lock of TYPE (F_RDLCK or F_WRLCK) on byte BYTE of FD's file,
 * as the kernel names it (and, in a look at the host, its lock table),
 * its process named as lb_lock_owners names one: the PID, or 0 when none
 * is found.
 */
pid_t lb_scan_locker(int fd, off_t byte, short type);

/*
 * Every flock(2) lock of FD's file in the run's kernel's lock table (a
 * look at the host: lb_locktab_pin), held or waited for (blocked), in
 * the table's order (a held lock's waiters after it, in the order they
 * came), in *V (malloc'd, N of them). 0, or -1 with errno (no table).
 */
int lb_scan_flocks(int fd, struct lb_lockline **v, size_t *n);

/* The same for every lock of FD's file, of any kind (flock(2), OFD, POSIX). */
int lb_scan_lines(int fd, struct lb_lockline **v, size_t *n);

/* A waiter of a lock file's queue, as lock tests of its bytes find it. */
struct lb_queued {
	uint64_t ticket;
	pid_t pid;		/* from its mark (LB_WAITER_OFF); 0: not shown */
	int shared;		/* its mark says a shared request */
	/*
	 * not a waiter: a lock in the queue's bytes that lockbox did not
	 * take (another program's, which keeps every waiter out): L, its
	 * process in PID (0: not found); TICKET is UINT64_MAX
	 */
	int foreign;
	struct lb_lockinfo l;
};

/*
 * The waiters in the queue of the lock file open on FD: each held ticket
 * byte (LB_QUEUE_OFF + t), with the process and kind of its mark, in
 * ticket order, then the locks in the queue's bytes that are no
 * waiter's, in *V (malloc'd, N of them). Lock tests of the file's own
 * locks, none of the host's table. 0, or -1 with errno.
 */
int lb_scan_queue(int fd, struct lb_queued **v, size_t *n);

/*
 * A process that holds lock L of FD's file through one of its descriptors,
 * other than L->pid and us: an fcntl lock told by its range and kind, or
 * with FLOCK a flock(2) lock, told by the PID of the process that took it
 * (which the kernel keeps showing after that process is gone). Its PID,
 * or 0 when none is found (another user's, or too many descriptors to
 * look at).
 */
pid_t lb_lock_keeper(int fd, const struct lb_lockinfo *l, int flock);

/* Whether process PID runs this very program (the same executable file). */
int lb_proc_runs_self(pid_t pid);

#endif

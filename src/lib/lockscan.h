/* Which slots of a lock file are locked, and who holds what on it, from the kernel's lock table (lockscan.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKSCAN_H
#define LOCKBOX_LOCKSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"
#include "slotset.h"

/*
 * Every slot of the lock file open on FD whose lock byte is write-locked,
 * by any process, through any open file but FD's own description. Read
 * locks (a waiter's brief look) do not count. EXPECT, when not NULL, is
 * the slots that have a record, read while the header was locked (and is
 * locked still): a pool with few is settled by range tests of the file's
 * own locks; otherwise, and for a bigger pool, a pass over /proc/locks
 * where it shows this file, each slot of EXPECT it did not show tested on
 * its own (without EXPECT, passes until two agree); where the table does
 * not show the file (no /proc, a file system whose locks it does not
 * list), range tests, which cost more with many holders.
 * 0, or -1 with errno.
 */
int lb_scan_held(int fd, const struct lb_slotset *expect, struct lb_slotset *out);

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
 * Every lock held on FD's file (not a request that waits), from one pass
 * over /proc/locks, in *V (malloc'd, N of them): 1, or 0 when the table
 * does not show the file (then *V is NULL), or -1 with errno.
 */
int lb_scan_locks(int fd, struct lb_lockinfo **v, size_t *n);

/*
 * Who holds a lock of FD's file that lockbox could not have taken
 * (lb_lock_is_lockbox) on bytes [START, START+LEN) (LEN 0: to the end):
 * 1 with *OUT filled (its process named where it can be found), 0 none,
 * -1 with errno. Reads the kernel's lock table; where that does not show
 * the file, only the first conflicting lock is known (F_GETLK).
 */
int lb_lock_foreign(int fd, off_t start, off_t len, struct lb_lockinfo *out);

/*
 * Name the processes of the locks of V that have none (OFD locks): each
 * gets the first process found with it in the lock list of one of its
 * descriptors (/proc/PID/fdinfo), one pass over /proc for them all; one
 * not found (another user's process, or too many to look at) keeps 0.
 */
void lb_lock_owners(int fd, struct lb_lockinfo *v, size_t n);

/*
 * The same for one lock L that processes hold in turn (a header's), to
 * decide whether its holder runs: looked for afresh, up to DEADLINE (0:
 * the whole host; see lb_lookup_holder_now).
 */
void lb_lock_owner_now(int fd, struct lb_lockinfo *l, int64_t deadline);

/*
 * Who holds a lock of TYPE (F_RDLCK or F_WRLCK) on byte BYTE of FD's file,
 * as the kernel's lock table shows it, its process named as
 * lb_lock_owners names one: the PID, or 0 when none is found.
 */
pid_t lb_scan_locker(int fd, off_t byte, short type);

/*
 * Every flock(2) lock of FD's file in the kernel's lock table, held or
 * waited for (blocked), in the table's order (a held lock's waiters
 * after it, in the order they came), in *V (malloc'd, N of them). 0, or
 * -1 with errno (no /proc/locks).
 */
int lb_scan_flocks(int fd, struct lb_lockline **v, size_t *n);

/* The same for every lock of FD's file, of any kind (flock(2), OFD, POSIX). */
int lb_scan_lines(int fd, struct lb_lockline **v, size_t *n);

/* A waiter of a lock file's queue, as the kernel's lock table shows it. */
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
 * waiter's, in *V (malloc'd, N of them). One read of /proc/locks.
 * 0, or -1 with errno (no /proc/locks).
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

/* Every lock on the host, of every kind, with its process and its file's path (lockedfiles.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKEDFILES_H
#define LOCKBOX_LOCKEDFILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procfs.h"

/* A file with locks on it, as the host's view shows it. */
struct lb_host_file {
	dev_t dev;
	ino_t ino;
	const char *path;	/* a path to it (the view's own); NULL: none found */
	int deleted;		/* removed from PATH since it was opened (PATH is what it was) */
	/*
	 * it may be a lockbox lock file, to be read as one to know
	 * (lb_host_lockfile): a regular file at PATH that this user may
	 * read, with an fcntl lock on it; its holders are then not looked
	 * up (the records name them) unless lb_host_find_holders asks
	 */
	int lockbox;
	int err;		/* why it could not be looked at (EACCES...); 0: it was, or needs none */
	long long size;		/* its size; -1: not known */
};

/* A lock of the host's view: one line of the kernel's table. */
struct lb_host_lock {
	size_t file;		/* its file, in the view's */
	struct lb_lockline x;	/* x.l.pid: the process the table names (0: none, an OFD lock) */
	pid_t pid;		/* its holder: the table's, or one found with it (0: not found) */
	int taker_gone;		/* a flock(2) lock whose taker (x.l.pid) has exited: PID keeps it */
	pid_t blocker;		/* a request that waits: the holder of what it waits for (0: not known) */
};

struct lb_host_view {
	struct lb_host_file *files;
	size_t nfiles;
	struct lb_host_lock *locks;	/* in the table's order */
	size_t nlocks;
	int cut;		/* stopped short at the deadline: the table or the walk */
};

/*
 * Every lock on the host, held or waited for, of every kind: one read of
 * /proc/locks, kept for the run (lb_locktab_pin), and one walk of /proc
 * for the processes of locks that name none (an open file description's,
 * a flock(2) lock whose taker has exited) and the paths of the files,
 * both up to DEADLINE (0: none). Inside a run of lookups (lockowners.h),
 * which the caller ends. 0, or -1 with errno (no /proc/locks).
 */
int lb_scan_host(struct lb_host_view *hv, int64_t deadline);
void lb_host_view_free(struct lb_host_view *hv);

/* The processes of file FI's locks, for one whose holders were not looked up (lockbox). */
void lb_host_find_holders(struct lb_host_view *hv, size_t fi);

/*
 * The holders (*H) and waiters (*W) of file FI of the view, a lockbox
 * lock file, as list shows them (filepool.c), from the view's lines of
 * it (LOCKS, N of them: indexes in hv->locks) and its records, read once
 * under the lookers' lock: a few system calls a file, where a pool's
 * look makes a few dozen. 0; 1 when it is no lockbox lock file now, or
 * cannot be read (hv->files[FI].err says why); -1 out of memory.
 */
struct lb_holders;
int lb_host_lockfile(struct lb_host_view *hv, size_t fi, const size_t *locks, size_t n,
    struct lb_holders *h, struct lb_holders *w);

/* The byte whose write lock is slot SLOT of a lockbox lock file. */
long long lb_slot_byte(unsigned slot);

/*
 * The processes that hold a lock on a file that was at PATH and has been
 * deleted or replaced since (renamed over): a lock line of the kernel's
 * table that names its process (flock(2), classic POSIX; an open file
 * description's names none) on PATH's file system, whose process has the
 * file open under PATH marked deleted. At most MAX, in *PIDS (*N of
 * them). 0 (none found when PATH's directory cannot be looked at).
 */
int lb_scan_moved(const char *path, pid_t *pids, size_t max, size_t *n);

#endif

/* Reading /proc: its small files, and the lines of its lock lists (/proc/locks, fdinfo). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_PROCFS_H
#define LOCKBOX_PROCFS_H

#include <stddef.h>
#include <sys/types.h>

/* One held fcntl lock on a file. */
struct lb_lockinfo {
	long long lo, hi;	/* bytes [lo, hi]; hi -1: to the end of any file */
	pid_t pid;		/* its process; 0: not known (an OFD lock names none) */
	int write;		/* a write lock, else a read lock */
	int ofd;		/* an open file description lock, else a classic POSIX one */
};

/*
 * The start of the /proc file PATH, at most SIZE - 1 bytes (a longer one
 * is cut), NUL-terminated: its length, or -1 with errno (ESRCH for an
 * empty file: its process has just gone).
 */
ssize_t lb_procfs_read(const char *path, char *buf, size_t size);

/*
 * The whole of the /proc file PATH (it has no size to stat), read CHUNK
 * bytes at a time (0: as much as fits), NUL-terminated, malloc'd, its
 * length in *LEN; NULL with errno.
 */
char *lb_procfs_slurp(const char *path, size_t chunk, size_t *len);

/*
 * One line of /proc/locks, or of fdinfo with its "lock:" cut, [LINE, END):
 *   1: OFDLCK ADVISORY  WRITE -1 fe:00:1234 4096 4096
 *   2: -> POSIX  ADVISORY  WRITE 311 fe:00:1234 4352 4352   (blocked: not held)
 *   3: FLOCK  ADVISORY  READ 4242 fe:00:1234 0 EOF          (flock(2))
 * lb_procfs_lock_any returns 1 and fills in *OUT for any fcntl or flock(2)
 * lock on DEV/INO, held or waited for; lb_procfs_lock_line for a held
 * fcntl lock (OFD or POSIX, read or write) only, in *L. Both set *SEEN
 * for any line about the file. Every field is checked; a line that does
 * not parse is 0.
 */
enum { LB_LOCK_POSIX, LB_LOCK_OFD, LB_LOCK_FLOCK };
struct lb_lockline {
	struct lb_lockinfo l;	/* a flock(2) lock: bytes 0 to EOF, and its locker's PID */
	int kind;		/* LB_LOCK_ */
	int blocked;		/* a request that waits, not a lock held */
};
int lb_procfs_lock_any(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockline *out, int *seen);
int lb_procfs_lock_line(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockinfo *l, int *seen);

/* The file a line of /proc/locks is about: 1 with *DEV and *INO, or 0. */
int lb_procfs_lock_id(const char *line, const char *end, dev_t *dev, ino_t *ino);

/*
 * The held fcntl locks (lb_procfs_fdinfo_locks) or flock(2) locks
 * (lb_procfs_fdinfo_flocks) on DEV/INO that the fdinfo file PATH lists,
 * one at a time: FN(L, ARG) for each, until it returns nonzero (that
 * value is returned). 0 when all were seen; -1 with errno when PATH
 * cannot be read.
 */
int lb_procfs_fdinfo_locks(const char *path, dev_t dev, ino_t ino,
    int (*fn)(const struct lb_lockinfo *l, void *arg), void *arg);
int lb_procfs_fdinfo_flocks(const char *path, dev_t dev, ino_t ino,
    int (*fn)(const struct lb_lockinfo *l, void *arg), void *arg);

#endif

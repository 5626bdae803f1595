/* A line of the kernel's lock lists, parsed (lockline.c): the locks it describes. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKLINE_H
#define LOCKBOX_LOCKLINE_H

#include <sys/types.h>

/* One held fcntl lock on a file. */
struct lb_lockinfo {
	long long lo, hi;	/* bytes [lo, hi]; hi -1: to the end of any file */
	pid_t pid;		/* its process; 0: not known (an OFD lock names none) */
	int write;		/* a write lock, else a read lock */
	int ofd;		/* an open file description lock, else a classic POSIX one */
};

/*
 * One line of /proc/locks, or of fdinfo with its "lock:" cut, [LINE, END):
 *   1: OFDLCK ADVISORY  WRITE -1 fe:00:1234 4096 4096
 *   2: -> POSIX  ADVISORY  WRITE 311 fe:00:1234 4352 4352   (blocked: not held)
 *   3: FLOCK  ADVISORY  READ 4242 fe:00:1234 0 EOF          (flock(2))
 * lb_lockline_any returns 1 and fills in *OUT for any fcntl or flock(2)
 * lock on DEV/INO, held or waited for; lb_lockline_held for a held
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
int lb_lockline_any(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockline *out, int *seen);
int lb_lockline_held(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockinfo *l, int *seen);

/* The file a line of /proc/locks is about, alone: 0 with *DEV and *INO, or -1. */
int lb_lockline_file(const char *line, const char *end, dev_t *dev, ino_t *ino);

/*
 * Any line of /proc/locks: 1 with the file it is about (*DEV, *INO) and
 * the lock in *OUT; 0 for a line that does not parse, or one of a kind
 * lockbox does not know (a lease), whose file is still given when
 * *DEV is set (2: the file alone).
 */
int lb_lockline_parse(const char *line, const char *end, dev_t *dev, ino_t *ino,
    struct lb_lockline *out);

#endif

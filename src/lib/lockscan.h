/* Which slots of a lock file are locked: one pass over the kernel's lock table. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKSCAN_H
#define LOCKBOX_LOCKSCAN_H

#include <stddef.h>

/* A set of slot numbers, ascending, each once. */
struct lb_slotset {
	unsigned *v;
	size_t n, cap;
};

int lb_slotset_add(struct lb_slotset *s, unsigned slot);
int lb_slotset_has(const struct lb_slotset *s, unsigned slot);
void lb_slotset_sort(struct lb_slotset *s);	/* ascending, duplicates dropped */
void lb_slotset_free(struct lb_slotset *s);

/*
 * Every slot of the lock file open on FD whose lock byte is write-locked,
 * by any process, through any open file but FD's own description. Read
 * locks (a waiter's brief look) do not count. Passes over /proc/locks
 * (two, unless the table changed under the first) where it shows this
 * file; otherwise (no /proc, a file system whose locks it does not list)
 * range tests, which cost more with many holders.
 * 0, or -1 with errno.
 */
int lb_scan_held(int fd, struct lb_slotset *out);

/*
 * The slots whose lock is held through FD's own open file description
 * (/proc/self/fdinfo). 0, or -1 with errno.
 */
int lb_scan_own(int fd, struct lb_slotset *out);

#endif

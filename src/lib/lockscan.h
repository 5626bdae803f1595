/* Which slots of a lock file are locked: one pass over the kernel's lock table. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKSCAN_H
#define LOCKBOX_LOCKSCAN_H

#include <stddef.h>
#include <sys/types.h>

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
 * Who holds a lock of TYPE (F_RDLCK or F_WRLCK) on byte BYTE of the file
 * open on FD, as the kernel's lock table (/proc/locks) shows it: the PID
 * it names (a classic POSIX lock) or, for an open file description lock,
 * which it shows as -1, another process that has the file open with that
 * lock (its /proc/PID/fdinfo; a walk of every process's descriptors, for
 * rare questions only). The PID, or 0 when none is found.
 */
pid_t lb_scan_locker(int fd, off_t byte, short type);

#endif

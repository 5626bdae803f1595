/* SPDX-License-Identifier: ISC */
/*
 * The locks on a lock file that lockbox did not take, for the lock-file
 * backend: whether there may be some (a few lock tests), and which they
 * are, one for each process (the kernel's lock table), the slots they
 * lock taken from the lockbox holders. The shapes lockbox's own locks
 * take are lockscan.c's rule (lb_lock_is_lockbox).
 */
#include "config.h"

#include <stdlib.h>

#include "err.h"
#include "filepool.h"
#include "lockfile.h"
#include "lockscan.h"

/* Up to this many held slots, look for another program's locks by lock tests first. */
#define FEW_HELD	64

/* The slot whose lock byte alone L locks, or 0. */
unsigned fp_slot_of(const struct lb_lockinfo *l)
{
	if (l->lo < LB_HDR_SIZE || l->hi != l->lo ||
	    l->lo >= (long long)lb_slot_offset(LB_SLOT_LIMIT + 1) ||
	    (l->lo - LB_HDR_SIZE) % LB_REC_SIZE != 0)
		return 0;
	return (unsigned)((l->lo - LB_HDR_SIZE) / LB_REC_SIZE) + 1;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct lb_lockinfo *)a)->pid, y = ((const struct lb_lockinfo *)b)->pid;

	return (x > y) - (x < y);
}

/*
 * The locks on the file that lockbox did not take, in p->fgn, one for
 * each process that holds some (the union of its ranges), and the slots
 * they lock dropped from p->held: a slot that another program locks is
 * that program's lock, not a lockbox holder, however many slot bytes its
 * one range covers (lockf(3) from offset 0 covers all ten thousand).
 * Foreign is what lb_lock_is_lockbox says cannot be lockbox's, and, of
 * the shapes lockbox takes, on a slot's byte:
 *  - a write lock without a holder record, when RECORDS (buf's records
 *    were read with the header locked): lockbox claims a slot and writes
 *    its record under one header write lock, and clears a record only
 *    once the slot is free, so no lockbox holder is ever seen without one;
 *  - a read lock, unless the program that holds it is this one: lockbox
 *    read-locks a slot only in a waiter's watch, for the moment between
 *    the grant and the waiter letting it go, and the waiter runs lockbox.
 * 0, or -1 (reported).
 */
int fp_find_foreign(struct filepool *p, int records)
{
	struct lb_lockinfo *v, *m;
	size_t n, i, k;
	unsigned s;
	int r = lb_scan_locks(p->cfd, &v, &n);

	p->nfgn = 0;
	p->hdr_foreign = 0;
	if (r < 0) {
		lb_warn("%s: cannot read the kernel's lock table", p->name);
		return -1;
	}
	for (i = k = 0; i < n; i++) {
		s = fp_slot_of(&v[i]);
		/*
		 * A lock in the queue's bytes alone holds neither the header nor
		 * a slot: it stops waiters, who name it when they meet it
		 * (queue_foreign), not the holders
		 */
		if (v[i].lo >= (long long)LB_JOIN_OFF)
			continue;
		if (!lb_lock_is_lockbox(&v[i]) || (s != 0 && !v[i].write) ||
		    (s != 0 && records && fp_state(p, s) != LB_REC_HELD))
			v[k++] = v[i];
	}
	/*
	 * A held slot without a record is another program's too, though this
	 * read of the table may have missed its line (a lock taken or dropped
	 * anywhere on the host between two reads shifts the lines after it):
	 * the kernel names its lock when asked about that byte alone.
	 */
	for (i = 0; records && i < p->held.n; i++) {
		long long at = (long long)lb_slot_offset(p->held.v[i]);
		struct lb_lockinfo l, *grown;
		size_t j;

		if (fp_state(p, p->held.v[i]) == LB_REC_HELD)
			continue;
		for (j = 0; j < k && !(v[j].lo <= at && (v[j].hi < 0 || at <= v[j].hi)); j++)
			;
		if (j < k || lb_lock_conflict(p->cfd, F_WRLCK, (off_t)at, 1, &l) != 1)
			continue;
		grown = realloc(v, (k + 1) * sizeof *v);
		if (grown == NULL)
			continue;	/* then it counts as a holder of its slot, unnamed */
		v = grown;
		v[k++] = l;
	}
	lb_lock_owners(p->cfd, v, k);
	for (i = n = 0; i < k; i++)
		if (!(lb_lock_is_lockbox(&v[i]) && !v[i].write && v[i].pid != 0 &&
		    lb_proc_runs_self(v[i].pid)))
			v[n++] = v[i];
	/* the slots they lock are theirs */
	for (i = k = 0; i < p->held.n; i++) {
		long long at = (long long)lb_slot_offset(p->held.v[i]);
		size_t j;

		for (j = 0; j < n && !(v[j].lo <= at && (v[j].hi < 0 || at <= v[j].hi)); j++)
			;
		if (j == n)
			p->held.v[k++] = p->held.v[i];
	}
	p->held.n = k;
	/* one for each process; those whose process was not found stay apart */
	if (n > 1)
		qsort(v, n, sizeof *v, by_pid);
	for (i = k = 0; i < n; i++) {
		m = k > 0 ? &v[k - 1] : NULL;
		if (m == NULL || v[i].pid == 0 || m->pid != v[i].pid) {
			v[k++] = v[i];
			continue;
		}
		m->write |= v[i].write;
		m->lo = v[i].lo < m->lo ? v[i].lo : m->lo;
		m->hi = m->hi < 0 || v[i].hi < 0 ? -1 : v[i].hi > m->hi ? v[i].hi : m->hi;
	}
	free(p->fgn);
	p->fgn = v;
	p->nfgn = k;
	return 0;
}

/*
 * Whether another program may lock some of the file, from a few tests of
 * the file's own lock list: for a few holders that costs less than a line
 * each of the host's lock table, which settles it (fp_find_foreign) when the
 * answer is yes. A test for a write lock finds read locks too. While we
 * look, lockbox keeps nothing on the header but other lookers' locks; on
 * the slot bytes, nothing but the held slots' bytes (each with its record
 * when LOCKED: the records were read with the header locked); and nothing
 * between the last slot and the queue. Anything else is a yes.
 */
int fp_maybe_foreign(struct filepool *p, int locked)
{
	struct lb_lockinfo l;
	off_t lo = LB_HDR_SIZE, hi, end = lb_slot_offset(LB_SLOT_LIMIT + 1);
	size_t i;

	if (p->held.n > FEW_HELD || lb_lock_conflict(p->cfd, F_WRLCK, 0, LB_HDR_SIZE, &l) != 0)
		return 1;
	for (i = 0; i <= p->held.n; i++) {
		hi = i < p->held.n ? lb_slot_offset(p->held.v[i]) : end;
		if (i < p->held.n && locked && fp_state(p, p->held.v[i]) != LB_REC_HELD)
			return 1;
		if (hi > lo && lb_lock_conflict(p->cfd, F_WRLCK, lo, hi - lo, &l) != 0)
			return 1;
		lo = hi + 1;
	}
	return lb_lock_conflict(p->cfd, F_WRLCK, end, LB_JOIN_OFF - end, &l) != 0;
}

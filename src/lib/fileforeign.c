/* SPDX-License-Identifier: ISC */
/*
 * The locks on a lock file that lockbox did not take, for the lock-file
 * backend: which they are, one for each process (the kernel's lock
 * table, flock(2) locks included: no test tells of those), the slots they
 * lock taken from the lockbox holders. The shapes lockbox's own locks
 * take are lockscan.c's rule (lb_lock_is_lockbox).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "err.h"
#include "filepool.h"
#include "lockfile.h"
#include "lockscan.h"

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
 * One read of the kernel's lock table: the held fcntl locks on the file
 * in *V (N of them), its held flock(2) locks in *FLOCKS (NFLOCKS). 0, or
 * -1 with errno; malloc'd, the caller frees both.
 */
static int split_lines(struct filepool *p, struct lb_lockinfo **v, size_t *n,
    struct lb_lockline **flocks, size_t *nflocks)
{
	struct lb_lockline *all;
	size_t nall, i;

	*v = NULL;
	*n = *nflocks = 0;
	if (lb_scan_lines(p->cfd, &all, &nall) != 0)
		return -1;
	*v = calloc(nall ? nall : 1, sizeof **v);
	if (*v == NULL) {
		free(all);
		return -1;
	}
	for (i = 0; i < nall; i++) {
		if (all[i].blocked)
			continue;
		if (all[i].kind == LB_LOCK_FLOCK)
			all[(*nflocks)++] = all[i];
		else
			(*v)[(*n)++] = all[i].l;
	}
	*flocks = all;
	return 0;
}

/*
 * Another program's flock(2) locks (flock(1), setlock, chpst), added to
 * V (N of them, room for N + NFLOCKS) as locks on the whole file. A
 * lockbox holder's own flock(2) lock (a mutex's, beside its slot) names
 * the holder's process as its record does; one whose process is gone
 * was taken by a helper (acquire --fd) for its caller, whose record
 * names it. The new count.
 */
static size_t add_flocks(struct filepool *p, struct lb_lockinfo **v, size_t n,
    const struct lb_lockline *flocks, size_t nflocks)
{
	struct lb_lockinfo *grown;
	size_t i, j;
	int ours;

	if (nflocks == 0 || (grown = realloc(*v, (n + nflocks) * sizeof **v)) == NULL)
		return n;
	*v = grown;
	for (i = 0; i < nflocks; i++) {
		pid_t pid = flocks[i].l.pid;

		ours = pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH);
		for (j = 0; !ours && j < p->held.n; j++)
			ours = fp_state(p, p->held.v[j]) == LB_REC_HELD &&
			    lb_record_pid(fp_record(p, p->held.v[j])) == pid;
		if (!ours)
			(*v)[n++] = flocks[i].l;
	}
	return n;
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
#define UNLOCKED_ASKS	8

int fp_find_foreign(struct filepool *p, int records)
{
	struct lb_lockinfo *v, *m;
	size_t n, i, k, nflocks, asked;
	unsigned s;
	struct lb_lockline *flocks = NULL;
	int r = split_lines(p, &v, &n, &flocks, &nflocks);

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
	 * A held slot that no lock read here covers, and whose record does
	 * not name a holder: this read of the table may have missed the
	 * line of the lock that holds it (a lock taken or dropped anywhere
	 * on the host between two reads shifts the lines after it), and the
	 * kernel names that lock when asked about the byte alone. It is
	 * another program's when lockbox never takes its shape (lockf(3) on
	 * the whole file, which also keeps the header's lock from this look)
	 * or, with the records read under the header's lock, when the slot
	 * has no record. Without that lock only a few slots are asked: each
	 * question is a walk of the file's lock list.
	 */
	for (i = 0, asked = 0; i < p->held.n; i++) {
		long long at = (long long)lb_slot_offset(p->held.v[i]);
		struct lb_lockinfo l, *grown;
		size_t j;

		if (fp_state(p, p->held.v[i]) == LB_REC_HELD)
			continue;
		for (j = 0; j < k && !(v[j].lo <= at && (v[j].hi < 0 || at <= v[j].hi)); j++)
			;
		if (j < k)
			continue;
		if (!records && asked++ == UNLOCKED_ASKS)
			break;
		if (lb_lock_conflict(p->cfd, F_WRLCK, (off_t)at, 1, &l) != 1 ||
		    (!records && lb_lock_is_lockbox(&l)))
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
	n = add_flocks(p, &v, n, flocks, nflocks);
	free(flocks);
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

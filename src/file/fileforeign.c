/* SPDX-License-Identifier: ISC */
/*
 * The locks on a lock file that lockbox did not take, for the lock-file
 * backend: which they are, one for each process, and the slots they lock
 * taken from the lockbox holders. They are the locks the held-slot
 * scan's tests met (and the kernel names for a slot asked about); a
 * person's look at the host (list) reads the kernel's lock table once
 * too, which shows flock(2) locks, that no test tells of. The shapes
 * lockbox's own locks take are lockscan.c's rule (lb_lock_is_lockbox).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "err.h"
#include "filepool.h"
#include "lockformat.h"
#include "lockowners.h"
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
 * The locks on the file that may be another program's, as a look at the
 * host sees them: from its one read of the kernel's lock table, the held
 * fcntl locks on the file in *V (N of them), its held flock(2) locks in
 * *FLOCKS (NFLOCKS). 1, 0 when there is no such table (the tests' locks
 * are all there is), or -1 with errno; malloc'd, the caller frees both.
 */
static int split_lines(struct filepool *p, struct lb_lockinfo **v, size_t *n,
    struct lb_lockline **flocks, size_t *nflocks)
{
	struct lb_lockline *all;
	size_t nall, i;

	*v = NULL;
	*flocks = NULL;
	*n = *nflocks = 0;
	if (lb_locktab_get() == NULL)
		return 0;
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
	return 1;
}

/* header ranges a look tests for locks that are not lockbox's, at most */
#define HEADER_TESTS	16

/* The locks found on the header (met_locks), after those met before. */
struct met {
	struct lb_lockinfo *v;
	size_t n, cap;
};

static int header_lock(const struct lb_lockinfo *l, void *arg)
{
	struct met *m = arg;

	if (m->n < m->cap)
		m->v[m->n++] = *l;
	return 0;
}

/*
 * The locks the held-slot scan met (p->met), and those on the header,
 * by tests around each the kernel names (a looker's is there for a
 * moment, another program's a while), in *V (malloc'd, N of them): 0,
 * or -1.
 */
static int met_locks(struct filepool *p, struct lb_lockinfo **v, size_t *n)
{
	struct met m = { malloc((p->met.n + HEADER_TESTS) * sizeof *m.v), p->met.n,
	    p->met.n + HEADER_TESTS };

	if (m.v == NULL)
		return -1;
	if (m.n > 0)
		memcpy(m.v, p->met.v, m.n * sizeof *m.v);
	if (lb_lock_each(p->cfd, F_WRLCK, 0, LB_HDR_SIZE - 1, HEADER_TESTS, header_lock, &m) < 0) {
		free(m.v);
		return -1;
	}
	*v = m.v;
	*n = m.n;
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

int fp_flock_probe(int fd)
{
	int r;

	do
		r = flock(fd, LOCK_SH | LOCK_NB);
	while (r != 0 && errno == EINTR);
	if (r == 0)
		flock(fd, LOCK_UN);
	return r != 0 && errno == EWOULDBLOCK;
}

/*
 * Without the host's lock table, another program's flock(2) lock on a
 * lock file is known only when it keeps us out: a run's slot found its
 * flock(2) lock taken (p->path_busy), or, with no slot held, a shared
 * flock(2) lock taken for a moment is refused (fp_flock_probe). It is
 * added to V (N of them) as a lock on the whole file, its process named
 * when a look through /proc finds it within the run's budget, and not
 * when that process is a recorded holder's (a mutex's, beside its slot).
 * The new count.
 */
static size_t probe_flocks(struct filepool *p, struct lb_lockinfo **v, size_t n)
{
	struct lb_lockinfo l, *grown;
	struct stat st;
	pid_t pid;
	size_t j;

	if (!p->path_busy && (p->held.n > 0 || !fp_flock_probe(p->cfd)))
		return n;
	if (fstat(p->cfd, &st) != 0 || (grown = realloc(*v, (n + 1) * sizeof **v)) == NULL)
		return n;
	*v = grown;
	pid = lb_lookup_flock(st.st_dev, st.st_ino, &l);
	for (j = 0; pid > 0 && j < p->held.n; j++)
		if (fp_state(p, p->held.v[j]) == LB_REC_HELD &&
		    lb_record_pid(fp_record(p, p->held.v[j])) == pid)
			return n;
	/* named by the one that took it, as the table names it, while it lives */
	if (pid > 0 && l.pid > 0 && l.pid != pid && kill(l.pid, 0) == 0)
		pid = l.pid;
	(*v)[n++] = (struct lb_lockinfo){ .lo = 0, .hi = -1, .write = pid == 0 || l.write,
	    .pid = pid };
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
	if (r == 0 && met_locks(p, &v, &n) != 0) {
		lb_warn("%s", p->name);
		return -1;
	}
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
	n = r == 1 ? add_flocks(p, &v, n, flocks, nflocks) : probe_flocks(p, &v, n);
	free(flocks);
	/*
	 * one for each process; those whose process was not found are one
	 * "another program" (a look that does not read the host's lock table
	 * may name none of them: a count of locks would be no count of holders)
	 */
	if (n > 1)
		qsort(v, n, sizeof *v, by_pid);
	for (i = k = 0; i < n; i++) {
		m = k > 0 ? &v[k - 1] : NULL;
		if (m == NULL || m->pid != v[i].pid) {
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

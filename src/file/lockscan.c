/* Which slots of a lock file are locked, and who holds what on it: lock tests of the file's own locks; the kernel's lock table only in a person's look at the host. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lockformat.h"
#include "lockowners.h"
#include "lockprim.h"
#include "lockscan.h"
#include "procfs.h"

/* the slot bytes: after the header, before the queue */
#define SLOTS_END	lb_slot_offset(LB_SLOT_LIMIT + 1)

/* Every slot whose lock byte lies in [lo, hi]; hi < 0: no end. */
static int add_range(struct lb_slotset *s, long long lo, long long hi)
{
	unsigned slot;

	if (lo < LB_HDR_SIZE)
		lo = LB_HDR_SIZE;
	if (hi < 0 || hi >= (long long)SLOTS_END)
		hi = (long long)SLOTS_END - 1;
	slot = (unsigned)((lo - LB_HDR_SIZE + LB_REC_SIZE - 1) / LB_REC_SIZE) + 1;
	for (; slot <= LB_SLOT_LIMIT && lb_slot_offset(slot) <= hi; slot++)
		if (lb_slotset_add(s, slot) != 0)
			return -1;
	return 0;
}

/* The first slot whose lock byte is at BYTE or after it (LB_SLOT_LIMIT + 1: none). */
static unsigned slot_from(long long byte)
{
	if (byte <= LB_HDR_SIZE)
		return 1;
	if (byte >= (long long)SLOTS_END)
		return LB_SLOT_LIMIT + 1;
	return (unsigned)((byte - LB_HDR_SIZE + LB_REC_SIZE - 1) / LB_REC_SIZE) + 1;
}

/* The last slot whose lock byte is at BYTE or before it (0: none); BYTE < 0: no end. */
static unsigned slot_to(long long byte)
{
	if (byte < 0 || byte >= (long long)SLOTS_END)
		return LB_SLOT_LIMIT;
	if (byte < LB_HDR_SIZE)
		return 0;
	return (unsigned)((byte - LB_HDR_SIZE) / LB_REC_SIZE) + 1;
}

void lb_lockset_free(struct lb_lockset *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* L into S, unless the same lock is there already. 0, or -1. */
static int lockset_add(struct lb_lockset *s, const struct lb_lockinfo *l)
{
	struct lb_lockinfo *grown;
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].lo == l->lo && s->v[i].hi == l->hi && s->v[i].write == l->write &&
		    s->v[i].pid == l->pid && s->v[i].ofd == l->ofd)
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;

		grown = realloc(s->v, cap * sizeof *grown);
		if (grown == NULL)
			return -1;
		s->v = grown;
		s->cap = cap;
	}
	s->v[s->n++] = *l;
	return 0;
}

int lb_lock_each(int fd, short type, long long lo, long long hi, size_t tests,
    int (*fn)(const struct lb_lockinfo *l, void *arg), void *arg)
{
	struct range {
		long long lo, hi;	/* hi < 0: to the end */
	} *stack = malloc(64 * sizeof *stack), *grown;
	size_t depth = 0, cap = 64, done = 0;
	struct lb_lockinfo c;
	int r = stack != NULL ? 0 : -1;

	if (stack != NULL)
		stack[depth++] = (struct range){ lo, hi };
	while (r == 0 && depth > 0) {
		lo = stack[--depth].lo;
		hi = stack[depth].hi;
		if (hi >= 0 && lo > hi)
			continue;
		if (tests != 0 && done++ == tests) {
			r = 1;
			break;
		}
		r = lb_lock_conflict(fd, type, (off_t)lo, hi < 0 ? 0 : (off_t)(hi - lo + 1), &c);
		if (r <= 0)
			continue;
		if (depth + 2 > cap) {
			if ((grown = realloc(stack, 2 * cap * sizeof *stack)) == NULL) {
				r = -1;
				break;
			}
			stack = grown;
			cap *= 2;
		}
		if (c.lo > lo)
			stack[depth++] = (struct range){ lo, c.lo - 1 };
		if (c.hi >= 0 && (hi < 0 || c.hi < hi))
			stack[depth++] = (struct range){ c.hi + 1, hi };
		r = fn(&c, arg);
	}
	free(stack);
	return r;
}

/*
 * The slots are found by lock tests of the file's own lock list, never
 * by the host's lock table: a test of a range of slots' bytes has the
 * kernel name one lock in the way, whose slots are held, and the ranges
 * of slots on either side of it are tested in turn. A lock that covers
 * no slot's byte (anyone who can read the file can lock any byte) splits
 * its range between two slots all the same, so the tests are bounded by
 * the slots, whatever the locks: 2k + 1 tests for k locks on slots, each
 * a walk of the file's lock list.
 */
int lb_scan_held(int fd, struct lb_slotset *out, struct lb_lockset *met)
{
	struct range {
		unsigned a, b;		/* slots a to b */
	} *stack = malloc(64 * sizeof *stack), *grown;
	size_t depth = 0, cap = 64;
	int rc = stack != NULL ? 0 : -1;

	out->n = 0;
	if (met != NULL)
		met->n = 0;
	if (stack != NULL)
		stack[depth++] = (struct range){ 1, LB_SLOT_LIMIT };
	while (rc == 0 && depth > 0) {
		struct lb_lockinfo c;
		unsigned a = stack[--depth].a, b = stack[depth].b, sa, sb;
		int r;

		if (a > b)
			continue;
		r = lb_lock_conflict(fd, F_WRLCK, lb_slot_offset(a),
		    lb_slot_offset(b) - lb_slot_offset(a) + 1, &c);
		if (r <= 0) {
			rc = r;
			continue;
		}
		if (depth + 2 > cap) {
			grown = realloc(stack, 2 * cap * sizeof *stack);
			if (grown == NULL) {
				rc = -1;
				break;
			}
			stack = grown;
			cap *= 2;
		}
		if (met != NULL && lockset_add(met, &c) != 0) {
			rc = -1;
			break;
		}
		sa = slot_from(c.lo);
		sb = slot_to(c.hi);
		sa = sa < a ? a : sa;
		sb = sb > b ? b : sb;
		if (sa <= sb) {
			/* a read lock holds no slot (a waiter's look, or another program's) */
			if (c.write && add_range(out, (long long)lb_slot_offset(sa),
			    (long long)lb_slot_offset(sb)) != 0)
				rc = -1;
			stack[depth++] = (struct range){ a, sa - 1 };
			stack[depth++] = (struct range){ sb + 1, b };
		} else {
			/* between the bytes of slots sb and sa: no slot of its own */
			stack[depth++] = (struct range){ a, sb };
			stack[depth++] = (struct range){ sa, b };
		}
	}
	free(stack);
	if (rc < 0)
		return -1;
	lb_slotset_sort(out);
	return 0;
}

/* A held write lock of the caller's own open file: its slots into the set ARG. */
static int add_own(const struct lb_lockline *x, void *arg)
{
	const struct lb_lockinfo *l = &x->l;

	if (x->kind == LB_LOCK_FLOCK || !l->write || (l->hi >= 0 && l->hi < LB_HDR_SIZE) ||
	    l->lo >= (long long)SLOTS_END)
		return 0;
	return add_range(arg, l->lo, l->hi);
}

int lb_scan_own(int fd, struct lb_slotset *out)
{
	struct stat st;
	int rc;

	out->n = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	rc = lb_procfs_each_fd_lock(0, fd, st.st_dev, st.st_ino, add_own, out);
	lb_slotset_sort(out);
	return rc;
}

/* ---- locks lockbox did not take ---- */

/*
 * Every lock lockbox takes has one of a few shapes, whatever its kind (an
 * OFD lock, or a classic POSIX one from a build without them: the two
 * builds may share a file):
 *   the whole header, write-locked for every change: [0, 4096); or
 *     [0, 4097) for the moment when slot 1's byte, claimed through the
 *     same open file under the header lock, is merged with it;
 *   the header's fields, read-locked while check, list and status read
 *     records: [0, LB_HDR_LOOK_LEN), never the whole header;
 *   one slot's byte, written by its holder; read, with the byte after it
 *     (LB_WATCH_LEN), by a waiter's watch the moment it is granted (the
 *     waiter lets it go at once);
 *   one queue byte, the join byte, or those two merged [2^32-1, 2^32].
 * Anything else is another program's: lockf(3) from offset 0 (to the end
 * of the file and beyond), a range over several slots, a read lock on the
 * whole header. Why the lookers lock only the fields: then a read lock
 * on the whole header is never lockbox's, and a foreign reader is told at
 * once from the lock alone, without finding its process; and the
 * exclusion is kept, the fields lying inside the writers' lock. (An older
 * lockbox's look, which read-locked the whole header, is taken for a
 * foreign one during an upgrade.) The same shapes taken by another program
 * cannot be told from lockbox's by the lock alone: callers look further
 * (a slot's record, the program that holds the lock) or, for the header,
 * wait for it as for a lockbox process, a bounded time.
 */
int lb_lock_is_lockbox(const struct lb_lockinfo *l)
{
	long long lo = l->lo, hi = l->hi;

	if (hi < 0)
		return 0;
	if (lo == 0)
		return l->write ? hi == LB_HDR_SIZE - 1 || hi == LB_HDR_SIZE :
		    hi == LB_HDR_LOOK_LEN - 1;
	if (lo >= LB_HDR_SIZE && lo < (long long)SLOTS_END)
		return hi == lo + (l->write ? 0 : LB_WATCH_LEN - 1) &&
		    (lo - LB_HDR_SIZE) % LB_REC_SIZE == 0;
	if (lo >= (long long)LB_JOIN_OFF)
		return hi == lo || (l->write && lo == (long long)LB_JOIN_OFF && hi == lo + 1);
	return 0;
}

int lb_path_half(const struct lb_lockinfo *l)
{
	return l->lo == 0 && l->hi == (long long)LB_PATH_LEN - 1;
}

int lb_lock_conflict(int fd, short type, off_t start, off_t len, struct lb_lockinfo *out)
{
	struct flock c;
	int r = lb_lock_test(fd, type, start, len, &c);

	if (r != 0)
		return r < 0 ? -1 : 0;
	out->lo = (long long)c.l_start;
	out->hi = c.l_len == 0 ? -1 : (long long)(c.l_start + c.l_len - 1);
	out->write = c.l_type == F_WRLCK;
	/* the kernel names no process for an open file's lock: -1 */
	out->ofd = c.l_pid == -1;
	out->pid = c.l_pid > 0 ? c.l_pid : 0;
	return 1;
}

/*
 * Whether a line of /proc/locks about DEV/INO is one to keep: 1 with *OUT
 * filled; *SEEN set for any line about the file.
 */
typedef int table_keep_fn(const char *line, const char *end, dev_t dev, ino_t ino,
    void *out, int *seen);

/* The lines kept of one file, and how. */
struct keeping {
	int fd;
	dev_t dev;
	ino_t ino;
	table_keep_fn *keep;
	size_t size, n, cap, tested;
	int seen, pinned;
	void *v;
};

/* fcntl locks of a table read earlier in the run tested afresh, at most, a file */
#define PINNED_TESTS	64

/*
 * Whether a held fcntl lock of a table read earlier in the run (a lock
 * that lockbox locks lists) has gone since: the kernel names no lock
 * that conflicts with it now. A holder that let go meanwhile is then not
 * shown, and its record, cleared meanwhile, does not make its lock look
 * like another program's.
 */
static int gone_since(int fd, const struct lb_lockline *x)
{
	struct lb_lockinfo c;
	long long len = x->l.hi < 0 ? 0 : x->l.hi - x->l.lo + 1;

	return lb_lock_conflict(fd, x->l.write ? F_RDLCK : F_WRLCK, (off_t)x->l.lo, (off_t)len,
	    &c) == 0;
}

static int keep_line(const char *line, const char *end, void *arg)
{
	struct keeping *k = arg;
	/* (one element's worth, aligned for any of them) */
	union { struct lb_lockinfo a; struct lb_lockline b; } one;
	struct lb_lockline x;
	char *grown;
	int seen = 0;

	if (!k->keep(line, end, k->dev, k->ino, &one, &k->seen))
		return 0;
	if (k->pinned && k->tested < PINNED_TESTS &&
	    lb_lockline_any(line, end, k->dev, k->ino, &x, &seen) && !x.blocked &&
	    x.kind != LB_LOCK_FLOCK) {
		k->tested++;
		if (gone_since(k->fd, &x))
			return 0;
	}
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 16;
		grown = realloc(k->v, k->cap * k->size);
		if (grown == NULL)
			return -1;
		k->v = grown;
	}
	memcpy((char *)k->v + k->n++ * k->size, &one, k->size);
	return 0;
}

/*
 * One look at /proc/locks (read twice where it spans pages: see
 * lb_locktab_get): the lines about FD's file that KEEP keeps, in
 * *V (malloc'd, *N of them, SIZE bytes each). 1 when the table says
 * something of the file, 0 when it does not (*V NULL), -1 with errno;
 * *UNREADABLE set when there is no table to read.
 */
static int table_scan(int fd, table_keep_fn *keep, size_t size, void **v, size_t *n,
    int *unreadable)
{
	struct stat st;
	struct keeping k = { .fd = fd, .keep = keep, .size = size };
	struct lb_locktab *t;
	int r;

	*v = NULL;
	*n = 0;
	*unreadable = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	t = lb_locktab_get();
	if (t == NULL) {
		*unreadable = 1;
		return 0;
	}
	k.dev = st.st_dev;
	k.ino = st.st_ino;
	k.pinned = t->pinned;
	r = lb_locktab_each(t, st.st_dev, st.st_ino, keep_line, &k);
	lb_locktab_done(t);
	if (r != 0 || !k.seen) {
		free(k.v);
		return r != 0 ? -1 : 0;
	}
	*v = k.v;
	*n = k.n;
	return 1;
}

/* Held fcntl locks. */
static int keep_fcntl(const char *line, const char *end, dev_t dev, ino_t ino, void *out,
    int *seen)
{
	return lb_lockline_held(line, end, dev, ino, out, seen);
}

/*
 * Every lock held on FD's file (not a request that waits), from the
 * run's one read of the kernel's lock table (a person's look at the
 * host: lb_locktab_pin), in *V (malloc'd, N of them): 1, or 0 when there
 * is no such table or it does not show the file (then *V is NULL), or -1
 * with errno.
 */
static int scan_locks(int fd, struct lb_lockinfo **v, size_t *n)
{
	int unreadable;

	return table_scan(fd, keep_fcntl, sizeof **v, (void **)v, n, &unreadable);
}

static int overlaps(const struct lb_lockinfo *l, off_t start, off_t len)
{
	return (l->hi < 0 || l->hi >= (long long)start) &&
	    (len == 0 || l->lo < (long long)(start + len));
}

pid_t lb_scan_locker(int fd, off_t byte, short type)
{
	struct lb_lockinfo l, *v;
	size_t n, i;
	pid_t pid = 0;

	/*
	 * The kernel's answer for that byte first. /proc/locks is read a
	 * page at a time, by position, so a read while the host's locks
	 * change can miss a line: a waiter that missed the line of the one
	 * ahead of it would take a stopped waiter for a running one for
	 * good. The table is read only when the lock the kernel names is
	 * not of TYPE (another lock on that byte too).
	 */
	if (lb_lock_conflict(fd, F_WRLCK, byte, 1, &l) == 1 && l.write == (type == F_WRLCK)) {
		lb_lock_owners(fd, &l, 1);
		return l.pid;
	}
	if (scan_locks(fd, &v, &n) != 1)
		return 0;
	for (i = 0; i < n; i++)
		if (overlaps(&v[i], byte, 1) && v[i].write == (type == F_WRLCK)) {
			lb_lock_owners(fd, &v[i], 1);
			pid = v[i].pid;
			break;
		}
	free(v);
	return pid;
}

/* flock(2) locks, held or waited for. */
static int keep_flock(const char *line, const char *end, dev_t dev, ino_t ino, void *out,
    int *seen)
{
	struct lb_lockline *x = out;

	return lb_lockline_any(line, end, dev, ino, x, seen) && x->kind == LB_LOCK_FLOCK;
}

/* A scan whose table cannot be read is an error; one that does not show the file, none. */
static int lines_scan(int fd, table_keep_fn *keep, struct lb_lockline **v, size_t *n)
{
	int unreadable, r = table_scan(fd, keep, sizeof **v, (void **)v, n, &unreadable);

	if (r == 0 && unreadable)
		return -1;
	return r < 0 ? -1 : 0;
}

int lb_scan_flocks(int fd, struct lb_lockline **v, size_t *n)
{
	return lines_scan(fd, keep_flock, v, n);
}

/* Locks of any kind, held or waited for. */
static int keep_any(const char *line, const char *end, dev_t dev, ino_t ino, void *out,
    int *seen)
{
	return lb_lockline_any(line, end, dev, ino, out, seen);
}

int lb_scan_lines(int fd, struct lb_lockline **v, size_t *n)
{
	return lines_scan(fd, keep_any, v, n);
}

static int by_ticket(const void *a, const void *b)
{
	uint64_t x = ((const struct lb_queued *)a)->ticket, y = ((const struct lb_queued *)b)->ticket;

	return (x > y) - (x < y);
}

/*
 * Which of lockbox's shapes a held fcntl lock in the queue's bytes
 * (from LB_JOIN_OFF on) has: a ticket (a write lock on one queue byte, or
 * merged with the join byte for ticket 0: *AT its byte), a mark (a
 * classic POSIX read lock on one mark byte), the join byte alone (taken
 * for a moment to take a ticket), or none: another program's.
 */
enum { Q_OTHER, Q_TICKET, Q_MARK, Q_JOIN };

static int queue_shape(const struct lb_lockinfo *l, long long *at)
{
	*at = l->lo == (long long)LB_JOIN_OFF && l->hi == l->lo + 1 ? l->hi : l->lo;
	if (l->hi < 0 || (l->hi != *at))
		return Q_OTHER;
	if (l->write && *at == (long long)LB_JOIN_OFF)
		return Q_JOIN;
	if (l->write && *at >= (long long)LB_QUEUE_OFF &&
	    *at < (long long)LB_QUEUE_OFF + (long long)LB_QUEUE_TICKETS)
		return Q_TICKET;
	if (!l->ofd && !l->write && l->lo == l->hi && *at >= (long long)LB_WAITER_OFF &&
	    *at < (long long)LB_WAITER_OFF + 2 * (long long)LB_QUEUE_TICKETS)
		return Q_MARK;
	return Q_OTHER;
}

static int add_queued(struct lb_queued **q, size_t *k, size_t *cap, const struct lb_queued *x)
{
	struct lb_queued *grown;

	if (*k == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		grown = realloc(*q, *cap * sizeof *grown);
		if (grown == NULL)
			return -1;
		*q = grown;
	}
	(*q)[(*k)++] = *x;
	return 0;
}

/* The waiters and other locks found so far, for queue_lock. */
struct queue_scan {
	int fd;
	struct lb_queued *q;
	size_t k, cap;
};

static int queue_lock(const struct lb_lockinfo *c, void *arg)
{
	struct queue_scan *qs = arg;
	struct lb_queued one;
	struct lb_lockinfo m;
	long long at;

	switch (queue_shape(c, &at)) {
	case Q_JOIN:
		return 0;
	case Q_TICKET:
		/* a classic POSIX build's ticket names its process itself */
		one = (struct lb_queued){ .ticket = (uint64_t)(at - LB_QUEUE_OFF),
		    .pid = c->ofd ? 0 : c->pid, .l = *c };
		if (lb_lock_conflict(qs->fd, F_WRLCK, LB_WAITER_OFF + 2 * (off_t)one.ticket, 2, &m) == 1 &&
		    !m.write && !m.ofd && m.lo == m.hi) {
			one.pid = m.pid;
			one.shared = m.lo != (long long)(LB_WAITER_OFF + 2 * (off_t)one.ticket);
		}
		break;
	default:
		/* a lock from below the queue is a holder's, shown among the holders */
		if (c->lo < (long long)LB_JOIN_OFF)
			return 0;
		one = (struct lb_queued){ .ticket = UINT64_MAX, .foreign = 1, .l = *c };
		break;
	}
	return add_queued(&qs->q, &qs->k, &qs->cap, &one);
}

/*
 * The queue's bytes by lock tests of the file's own lock list, as the
 * held slots are found (lb_lock_each: 2k + 1 tests for k locks). A write
 * lock on one ticket's byte (merged with the join byte for ticket 0) is
 * a waiter, whose mark (a classic POSIX lock, which the kernel names
 * with its process) says who it is and whether it asks for a shared
 * lock; the join byte alone is a waiter taking its ticket; any other
 * lock there is not a waiter's: another program's, which keeps every
 * waiter out (filequeue.c reports it to those who meet it); it comes
 * after the waiters, named as lb_lock_owners names a process.
 */
int lb_scan_queue(int fd, struct lb_queued **v, size_t *n)
{
	struct queue_scan qs = { fd, NULL, 0, 0 };
	size_t waiters, i;

	*v = NULL;
	*n = 0;
	if (lb_lock_each(fd, F_WRLCK, (long long)LB_JOIN_OFF,
	    (long long)LB_QUEUE_OFF + (long long)LB_QUEUE_TICKETS - 1, 0, queue_lock, &qs) != 0) {
		free(qs.q);
		return -1;
	}
	/* the waiters in ticket order, then the foreign locks */
	if (qs.k > 1)
		qsort(qs.q, qs.k, sizeof *qs.q, by_ticket);
	for (waiters = 0; waiters < qs.k && !qs.q[waiters].foreign; waiters++)
		;
	for (i = waiters; i < qs.k; i++)
		lb_lock_owners(fd, &qs.q[i].l, 1);
	for (i = waiters; i < qs.k; i++)
		qs.q[i].pid = qs.q[i].l.pid;
	*v = qs.q;
	*n = qs.k;
	return 0;
}

/* The lock line that fcntl lock L is. */
static struct lb_lockline line_of(const struct lb_lockinfo *l)
{
	struct lb_lockline x = { *l, l->ofd ? LB_LOCK_OFD : LB_LOCK_POSIX, 0 };

	return x;
}

void lb_lock_owners(int fd, struct lb_lockinfo *v, size_t n)
{
	struct lb_lockline *x;
	struct stat st;
	pid_t *pids;
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += v[i].pid == 0;
	if (k == 0 || fstat(fd, &st) != 0)
		return;
	x = calloc(k, sizeof *x);
	pids = calloc(k, sizeof *pids);
	if (x != NULL && pids != NULL) {
		for (i = k = 0; i < n; i++)
			if (v[i].pid == 0)
				x[k++] = line_of(&v[i]);
		lb_lookup_holders(st.st_dev, st.st_ino, x, k, 0, pids);
		for (i = k = 0; i < n; i++)
			if (v[i].pid == 0)
				v[i].pid = pids[k++];
	}
	free(x);
	free(pids);
}

pid_t lb_lock_keeper(int fd, const struct lb_lockinfo *l, int flock)
{
	struct lb_lockline x = line_of(l);
	struct stat st;
	pid_t pid = 0;

	if (fstat(fd, &st) != 0)
		return 0;
	if (flock)
		x.kind = LB_LOCK_FLOCK;
	lb_lookup_holders(st.st_dev, st.st_ino, &x, 1, l->pid, &pid);
	return pid;
}

int lb_proc_runs_self(pid_t pid)
{
	return lb_procfs_runs_self(pid);
}

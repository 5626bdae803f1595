/* Which slots of a lock file are locked, from the kernel's lock table. */
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

#include "lockfile.h"
#include "lockowners.h"
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

/* A look at the lines of one file: its identity, whether the table names it, what is kept. */
struct scan {
	dev_t dev;
	ino_t ino;
	int seen;
	void *out;
};

/* A held write lock's slots into the set s->out. */
static int held_slots(const char *line, const char *end, void *arg)
{
	struct scan *s = arg;
	struct lb_lockinfo l;

	if (!lb_lockline_held(line, end, s->dev, s->ino, &l, &s->seen) || !l.write ||
	    !((l.hi < 0 || l.hi >= LB_HDR_SIZE) && l.lo < (long long)SLOTS_END))
		return 0;
	return add_range(s->out, l.lo, l.hi);
}

/*
 * 1 when /proc/locks listed the file (OUT filled), 0 when it did not, 2
 * when the table was read only in part (a description's, cut at its
 * deadline) and did not, -1 error. It is read CHUNK bytes at a time. The
 * table lists every lock of the host; only the lines about the file are
 * parsed.
 */
static int scan_table(const struct stat *st, size_t chunk, struct lb_slotset *out)
{
	struct scan s = { st->st_dev, st->st_ino, 0, out };
	struct lb_locktab *t = lb_locktab_pass(chunk);
	int rc, cut;

	if (t == NULL)
		return 0;
	rc = lb_locktab_each(t, st->st_dev, st->st_ino, held_slots, &s);
	cut = t->cut;
	lb_locktab_done(t);
	if (rc != 0)
		return -1;
	return s.seen ? 1 : cut ? 2 : 0;
}

/*
 * Without the table: test a whole range for a write lock; the kernel names
 * one lock in it, and the ranges on either side are tested in turn. 2k+1
 * tests for k holders, each a walk of the file's lock list (to the first
 * lock in the range, or to its end): quadratic, and cheap only for a few.
 * At most LIMIT tests (0: no limit): 0 done, 1 the limit came first (OUT
 * then incomplete), -1 error.
 */
static int scan_tests(int fd, size_t limit, struct lb_slotset *out)
{
	struct range {
		off_t lo, hi;
	} *stack = NULL, *grown;
	size_t depth = 0, cap = 0, tests = 0;
	int rc = 0;

	for (;;) {
		struct flock c;
		off_t lo, hi, clo, chi;
		int r;

		if (depth + 2 > cap) {
			cap = cap ? 2 * cap : 64;
			grown = realloc(stack, cap * sizeof *stack);
			if (grown == NULL) {
				rc = -1;
				break;
			}
			stack = grown;
		}
		if (depth == 0) {
			if (rc == 1)
				break;
			stack[depth++] = (struct range){ LB_HDR_SIZE, SLOTS_END };
			rc = 1;
		}
		if (limit != 0 && tests++ == limit) {
			rc = 2;
			break;
		}
		lo = stack[--depth].lo;
		hi = stack[depth].hi;
		r = lb_lock_test(fd, F_RDLCK, lo, hi - lo, &c);
		if (r < 0) {
			rc = -1;
			break;
		}
		if (r == 1)
			continue;
		clo = c.l_start > lo ? c.l_start : lo;
		chi = c.l_len == 0 || c.l_start + c.l_len > hi ? hi : c.l_start + c.l_len;
		if (add_range(out, clo, chi - 1) != 0) {
			rc = -1;
			break;
		}
		if (clo > lo)
			stack[depth++] = (struct range){ lo, clo };
		if (chi < hi)
			stack[depth++] = (struct range){ chi, hi };
	}
	free(stack);
	return rc < 0 ? -1 : rc == 2;
}

static int same_set(const struct lb_slotset *a, const struct lb_slotset *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * sizeof *a->v) == 0);
}

/*
 * The kernel hands /proc/locks out a read at a time (a page at most), and
 * a lock of any file taken or dropped between two reads shifts the lines
 * after it: the line at the boundary can be missed. What a pass may have
 * missed is settled one of two ways:
 *
 *  - EXPECT, the slots that have a record, read with the header locked:
 *    then no slot without one is locked by lockbox (a slot is locked
 *    before its record is written, both under the header's write lock,
 *    and a record is cleared only once its slot is free), so only a slot
 *    of EXPECT that the pass did not show can have been missed, and each
 *    is tested on its own, if there are at most CONFIRM_MAX of them;
 *  - else the table is read again with reads of other sizes, which put
 *    the boundaries elsewhere, until two passes in a row agree (at most
 *    SCAN_PASSES); a slot seen held in any pass counts: it was held
 *    during the look.
 *
 * 1, 0, 2 or -1 as scan_table; OUT is left unsorted.
 */
#define SCAN_PASSES	4
#define CONFIRM_MAX	64

static int scan_table_stable(int fd, const struct stat *st, const struct lb_slotset *expect,
    struct lb_slotset *out)
{
	/*
	 * Near a page each: every read is a walk of the table up to where it
	 * starts. Each pass reads the table once (lb_locktab_pass): what one
	 * read misses is settled here, by EXPECT's tests or by the next pass,
	 * and every read of the table holds up the lock calls of the whole
	 * host while it runs.
	 */
	static const size_t chunk[SCAN_PASSES] = { 0, 3677, 3259, 2939 };
	struct lb_slotset prev = { NULL, 0, 0 }, cur = { NULL, 0, 0 }, unseen = { NULL, 0, 0 };
	struct flock c;
	int pass, r, seen = 0, cut = 0;
	size_t i;

	for (pass = 0; pass < SCAN_PASSES; pass++) {
		r = scan_table(st, chunk[pass], &cur);
		cut |= r == 2;
		/* not listed at all: lb_scan_held tests the file itself */
		if (r < 0 || (pass == 0 && (r == 0 || r == 2)))
			break;
		r = r == 2 ? 0 : r;
		seen |= r;
		lb_slotset_sort(&cur);
		for (i = 0; i < cur.n && r >= 0; i++)
			if (lb_slotset_add(out, cur.v[i]) != 0)
				r = -1;
		if (r >= 0 && pass == 0 && expect != NULL) {
			for (i = 0; r >= 0 && i < expect->n; i++)
				if (!lb_slotset_has(&cur, expect->v[i]) &&
				    lb_slotset_add(&unseen, expect->v[i]) != 0)
					r = -1;
			for (i = 0; r >= 0 && unseen.n <= CONFIRM_MAX && i < unseen.n; i++) {
				int unlocked = lb_lock_test(fd, F_RDLCK, lb_slot_offset(unseen.v[i]), 1, &c);

				if (unlocked < 0 || (unlocked == 0 && lb_slotset_add(out, unseen.v[i]) != 0))
					r = -1;
			}
			if (r < 0 || unseen.n <= CONFIRM_MAX)
				break;
		}
		if (r < 0 || (pass > 0 && same_set(&prev, &cur)))
			break;
		lb_slotset_free(&prev);
		prev = cur;
		cur = (struct lb_slotset){ NULL, 0, 0 };
	}
	lb_slotset_free(&prev);
	lb_slotset_free(&cur);
	lb_slotset_free(&unseen);
	return r < 0 ? -1 : seen ? seen : cut ? 2 : 0;
}

/* A pool with at most this many records is settled by lock tests alone. */
#define FEW_RECORDS	64

int lb_scan_held(int fd, const struct lb_slotset *expect, struct lb_slotset *out)
{
	struct stat st;
	struct flock c;
	int r;

	out->n = 0;
	/* no slot locked at all: one test says so, whatever else the host locks */
	r = lb_lock_test(fd, F_RDLCK, LB_HDR_SIZE, SLOTS_END - LB_HDR_SIZE, &c);
	if (r != 0)
		return r < 0 ? -1 : 0;
	/*
	 * A few holders: 2k+1 tests of the file's own lock list cost less
	 * than one line each of the host's lock table, however many other
	 * locks that lists. More locks than records (not lockbox's) end the
	 * tests early, and the table is read after all.
	 */
	if (expect != NULL && expect->n <= FEW_RECORDS) {
		r = scan_tests(fd, 2 * FEW_RECORDS + 1, out);
		if (r <= 0) {
			lb_slotset_sort(out);
			return r;
		}
		out->n = 0;
	}
	if (fstat(fd, &st) != 0)
		return -1;
	r = scan_table_stable(fd, &st, expect, out);
	if (r < 0)
		return -1;
	if (r == 0 || r == 2) {
		/*
		 * Locked, yet not listed: a file system whose locks the table
		 * does not show (btrfs subvolumes, network file systems); or a
		 * description's table, cut at its deadline, before the file:
		 * then only what a few tests find in time (the holders named
		 * are a few of them)
		 */
		out->n = 0;
		if (scan_tests(fd, r == 2 ? 2 * FEW_RECORDS + 1 : 0, out) < 0)
			return -1;
	}
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
 *   one slot's byte: written by its holder, read by a waiter's watch the
 *     moment it is granted (the waiter lets it go at once);
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
		return hi == lo && (lo - LB_HDR_SIZE) % LB_REC_SIZE == 0;
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

int lb_scan_locks(int fd, struct lb_lockinfo **v, size_t *n)
{
	int unreadable;

	return table_scan(fd, keep_fcntl, sizeof **v, (void **)v, n, &unreadable);
}

static int overlaps(const struct lb_lockinfo *l, off_t start, off_t len)
{
	return (l->hi < 0 || l->hi >= (long long)start) &&
	    (len == 0 || l->lo < (long long)(start + len));
}

int lb_lock_foreign(int fd, off_t start, off_t len, struct lb_lockinfo *out)
{
	struct lb_lockinfo *v;
	size_t n, i;
	int r = lb_scan_locks(fd, &v, &n);

	if (r < 0)
		return -1;
	if (r == 0) {
		r = lb_lock_conflict(fd, F_WRLCK, start, len, out);
		if (r == 1 && lb_lock_is_lockbox(out))
			r = 0;
	} else {
		for (i = 0, r = 0; r == 0 && i < n; i++)
			if (overlaps(&v[i], start, len) && !lb_lock_is_lockbox(&v[i])) {
				*out = v[i];
				r = 1;
			}
		free(v);
	}
	if (r == 1)
		lb_lock_owners(fd, out, 1);
	return r;
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
	if (lb_scan_locks(fd, &v, &n) != 1)
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

/* The waiter of ticket T in V (sorted), or NULL. */
static struct lb_queued *find_ticket(struct lb_queued *v, size_t n, uint64_t t)
{
	struct lb_queued key = { .ticket = t };

	return n == 0 ? NULL : bsearch(&key, v, n, sizeof *v, by_ticket);
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

/*
 * Two passes over the file's lines from one read of the table: the
 * tickets, then the marks. A lock of another shape there is not a
 * waiter's: another program's, which keeps every waiter out (filequeue.c
 * reports it to those who meet it); it comes after the waiters, named
 * as lb_lock_owners names a process.
 */
int lb_scan_queue(int fd, struct lb_queued **v, size_t *n)
{
	struct lb_lockline *x;
	struct lb_queued *q = NULL, *w, one;
	size_t nx, i, cap = 0, k = 0, waiters;
	long long at;
	int shape;

	*v = NULL;
	*n = 0;
	if (lb_scan_lines(fd, &x, &nx) != 0)
		return -1;
	for (i = 0; i < nx; i++) {
		if (x[i].blocked || x[i].kind == LB_LOCK_FLOCK || x[i].l.lo < (long long)LB_JOIN_OFF ||
		    queue_shape(&x[i].l, &at) != Q_TICKET)
			continue;
		/* a classic POSIX build's ticket names its process itself */
		one = (struct lb_queued){ .ticket = (uint64_t)(at - LB_QUEUE_OFF),
		    .pid = x[i].l.ofd ? 0 : x[i].l.pid, .l = x[i].l };
		if (add_queued(&q, &k, &cap, &one) != 0)
			goto fail;
	}
	if (k > 1)
		qsort(q, k, sizeof *q, by_ticket);
	waiters = k;
	for (i = 0; i < nx; i++) {
		if (x[i].blocked || x[i].kind == LB_LOCK_FLOCK || x[i].l.lo < (long long)LB_JOIN_OFF)
			continue;
		shape = queue_shape(&x[i].l, &at);
		if (shape == Q_MARK) {
			w = find_ticket(q, waiters, (uint64_t)(at - LB_WAITER_OFF) / 2);
			if (w != NULL) {
				w->pid = x[i].l.pid;
				w->shared = (at - LB_WAITER_OFF) % 2;
			}
		} else if (shape == Q_OTHER) {
			one = (struct lb_queued){ .ticket = UINT64_MAX, .foreign = 1, .l = x[i].l };
			if (add_queued(&q, &k, &cap, &one) != 0)
				goto fail;
		}
	}
	free(x);
	for (i = waiters; i < k; i++)
		lb_lock_owners(fd, &q[i].l, 1);
	for (i = waiters; i < k; i++)
		q[i].pid = q[i].l.pid;
	*v = q;
	*n = k;
	return 0;
fail:
	free(x);
	free(q);
	return -1;
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

void lb_lock_owner_now(int fd, struct lb_lockinfo *l, int64_t deadline)
{
	struct lb_lockline x = line_of(l);
	struct stat st;

	if (l->pid == 0 && fstat(fd, &st) == 0)
		l->pid = lb_lookup_holder_now(st.st_dev, st.st_ino, &x, deadline);
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

/* Which slots of a lock file are locked, from the kernel's lock table. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lockfile.h"
#include "lockscan.h"
#include "parse.h"
#include "procfs.h"

/* the slot bytes: after the header, before the queue */
#define SLOTS_END	lb_slot_offset(LB_SLOT_LIMIT + 1)

int lb_slotset_add(struct lb_slotset *s, unsigned slot)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		unsigned *v = realloc(s->v, cap * sizeof *v);

		if (v == NULL)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = slot;
	return 0;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

void lb_slotset_sort(struct lb_slotset *s)
{
	size_t i, n = 0;

	if (s->n < 2)
		return;
	qsort(s->v, s->n, sizeof *s->v, cmp_unsigned);
	for (i = 0; i < s->n; i++)
		if (n == 0 || s->v[n - 1] != s->v[i])
			s->v[n++] = s->v[i];
	s->n = n;
}

int lb_slotset_has(const struct lb_slotset *s, unsigned slot)
{
	return s->n != 0 &&
	    bsearch(&slot, s->v, s->n, sizeof *s->v, cmp_unsigned) != NULL;
}

void lb_slotset_free(struct lb_slotset *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

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

/* As lb_procfs_lock_line, for held write locks only: their range. */
static int parse_line(const char *line, const char *end, dev_t dev, ino_t ino,
    long long *lo, long long *hi, int *seen)
{
	struct lb_lockinfo l;

	if (!lb_procfs_lock_line(line, end, dev, ino, &l, seen) || !l.write)
		return 0;
	*lo = l.lo;
	*hi = l.hi;
	return 1;
}

/*
 * 1 when /proc/locks listed the file (OUT filled), 0 when it did not, -1
 * error. It is read CHUNK bytes at a time. The table lists every lock of
 * the host; only lines that name the file's inode number after a colon
 * (DEV:INO) are parsed.
 */
static int scan_table(const struct stat *st, size_t chunk, struct lb_slotset *out)
{
	size_t len, nlen;
	char *text = lb_procfs_slurp("/proc/locks", chunk, &len), needle[32];
	const char *at, *line, *end, *stop;
	long long lo, hi;
	int seen = 0, rc = 0;

	if (text == NULL)
		return 0;
	stop = text + len;
	nlen = (size_t)snprintf(needle, sizeof needle, ":%llu", (unsigned long long)st->st_ino);
	for (at = text; rc == 0 && (at = memmem(at, (size_t)(stop - at), needle, nlen)) != NULL;
	    at = end) {
		line = at;
		while (line > text && line[-1] != '\n')
			line--;
		end = memchr(at + nlen, '\n', (size_t)(stop - at - nlen));
		end = end != NULL ? end + 1 : stop;
		if (parse_line(line, end, st->st_dev, st->st_ino, &lo, &hi, &seen) &&
		    (hi < 0 || hi >= LB_HDR_SIZE) && lo < (long long)SLOTS_END)
			rc = add_range(out, lo, hi);
	}
	free(text);
	if (rc != 0)
		return -1;
	return seen;
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
 * 1, 0 or -1 as scan_table; OUT is left unsorted.
 */
#define SCAN_PASSES	4
#define CONFIRM_MAX	64

static int scan_table_stable(int fd, const struct stat *st, const struct lb_slotset *expect,
    struct lb_slotset *out)
{
	/* near a page each: every read is a walk of the table up to where it starts */
	static const size_t chunk[SCAN_PASSES] = { 0, 3677, 3259, 2939 };
	struct lb_slotset prev = { NULL, 0, 0 }, cur = { NULL, 0, 0 }, unseen = { NULL, 0, 0 };
	struct flock c;
	int pass, r, seen = 0;
	size_t i;

	for (pass = 0; pass < SCAN_PASSES; pass++) {
		r = scan_table(st, chunk[pass], &cur);
		/* not listed at all: lb_scan_held tests the file itself */
		if (r < 0 || (pass == 0 && r == 0))
			break;
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
	return r < 0 ? -1 : seen;
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
	if (r == 0) {
		/*
		 * Locked, yet not listed: a file system whose locks the table
		 * does not show (btrfs subvolumes, network file systems).
		 */
		out->n = 0;
		if (scan_tests(fd, 0, out) != 0)
			return -1;
	}
	lb_slotset_sort(out);
	return 0;
}

/* A held write lock of the caller's own open file: its slots into the set ARG. */
static int add_own(const struct lb_lockinfo *l, void *arg)
{
	if (!l->write || (l->hi >= 0 && l->hi < LB_HDR_SIZE) || l->lo >= (long long)SLOTS_END)
		return 0;
	return add_range(arg, l->lo, l->hi);
}

int lb_scan_own(int fd, struct lb_slotset *out)
{
	char path[64];
	struct stat st;
	int rc;

	out->n = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	rc = lb_procfs_fdinfo_locks(path, st.st_dev, st.st_ino, add_own, out);
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

/*
 * One read of /proc/locks: the lines about FD's file that KEEP keeps, in
 * *V (malloc'd, *N of them, SIZE bytes each). 1 when the table says
 * something of the file, 0 when it does not (*V NULL), -1 with errno;
 * *UNREADABLE set when there is no table to read.
 */
static int table_scan(int fd, table_keep_fn *keep, size_t size, void **v, size_t *n,
    int *unreadable)
{
	struct stat st;
	size_t len, nlen, cap = 0;
	char *text, needle[32], *grown;
	const char *at, *line, *end, *stop;
	int seen = 0;
	/* (one element's worth, aligned for any of them) */
	union { struct lb_lockinfo a; struct lb_lockline b; } one;

	*v = NULL;
	*n = 0;
	*unreadable = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	text = lb_procfs_slurp("/proc/locks", 0, &len);
	if (text == NULL) {
		*unreadable = 1;
		return 0;
	}
	stop = text + len;
	nlen = (size_t)snprintf(needle, sizeof needle, ":%llu", (unsigned long long)st.st_ino);
	for (at = text; (at = memmem(at, (size_t)(stop - at), needle, nlen)) != NULL; at = end) {
		line = at;
		while (line > text && line[-1] != '\n')
			line--;
		end = memchr(at + nlen, '\n', (size_t)(stop - at - nlen));
		end = end != NULL ? end + 1 : stop;
		if (!keep(line, end, st.st_dev, st.st_ino, &one, &seen))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(*v, cap * size);
			if (grown == NULL) {
				free(text);
				free(*v);
				*v = NULL;
				*n = 0;
				return -1;
			}
			*v = grown;
		}
		memcpy((char *)*v + (*n)++ * size, &one, size);
	}
	free(text);
	if (!seen) {
		free(*v);
		*v = NULL;
		*n = 0;
	}
	return seen;
}

/* Held fcntl locks. */
static int keep_fcntl(const char *line, const char *end, dev_t dev, ino_t ino, void *out,
    int *seen)
{
	return lb_procfs_lock_line(line, end, dev, ino, out, seen);
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

	return lb_procfs_lock_any(line, end, dev, ino, x, seen) && x->kind == LB_LOCK_FLOCK;
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
	return lb_procfs_lock_any(line, end, dev, ino, out, seen);
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
	struct lb_queued key = { t, 0, 0 };

	return n == 0 ? NULL : bsearch(&key, v, n, sizeof *v, by_ticket);
}

/*
 * Two passes over one read of the table: the tickets (a write lock on one
 * queue byte, or merged with the join byte for ticket 0), then the marks.
 * A lock of another shape there is not a waiter's (filequeue.c reports
 * it to those who meet it), and is left out.
 */
int lb_scan_queue(int fd, struct lb_queued **v, size_t *n)
{
	struct stat st;
	struct lb_lockline x;
	struct lb_queued *q = NULL, *grown, *w;
	size_t len, nlen, cap = 0, k = 0;
	char *text, needle[32];
	const char *at, *line, *end, *stop;
	int seen = 0, pass;

	*v = NULL;
	*n = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	text = lb_procfs_slurp("/proc/locks", 0, &len);
	if (text == NULL)
		return -1;
	stop = text + len;
	nlen = (size_t)snprintf(needle, sizeof needle, ":%llu", (unsigned long long)st.st_ino);
	for (pass = 0; pass < 2; pass++) {
		for (at = text; (at = memmem(at, (size_t)(stop - at), needle, nlen)) != NULL; at = end) {
			long long lo;

			line = at;
			while (line > text && line[-1] != '\n')
				line--;
			end = memchr(at + nlen, '\n', (size_t)(stop - at - nlen));
			end = end != NULL ? end + 1 : stop;
			if (!lb_procfs_lock_any(line, end, st.st_dev, st.st_ino, &x, &seen) ||
			    x.blocked || x.kind == LB_LOCK_FLOCK || x.l.hi < 0)
				continue;
			lo = x.l.lo == (long long)LB_JOIN_OFF && x.l.hi == x.l.lo + 1 ? x.l.hi : x.l.lo;
			if (pass == 1) {
				if (x.l.ofd || x.l.write || x.l.lo != x.l.hi || lo < (long long)LB_WAITER_OFF ||
				    lo >= (long long)LB_WAITER_OFF + 2 * (long long)LB_QUEUE_TICKETS)
					continue;
				w = find_ticket(q, k, (uint64_t)(lo - LB_WAITER_OFF) / 2);
				if (w != NULL) {
					w->pid = x.l.pid;
					w->shared = (lo - LB_WAITER_OFF) % 2;
				}
				continue;
			}
			if (!x.l.write || lo != x.l.hi || lo < (long long)LB_QUEUE_OFF ||
			    lo >= (long long)LB_QUEUE_OFF + (long long)LB_QUEUE_TICKETS)
				continue;
			if (k == cap) {
				cap = cap ? 2 * cap : 16;
				grown = realloc(q, cap * sizeof *q);
				if (grown == NULL) {
					free(q);
					free(text);
					return -1;
				}
				q = grown;
			}
			/* a classic POSIX build's ticket names its process itself */
			q[k++] = (struct lb_queued){ (uint64_t)(lo - LB_QUEUE_OFF),
			    x.l.ofd ? 0 : x.l.pid, 0 };
		}
		if (pass == 0 && k > 1)
			qsort(q, k, sizeof *q, by_ticket);
	}
	free(text);
	*v = q;
	*n = k;
	return 0;
}

/* descriptors looked at, at most, to name the processes of OFD locks */
#define OWNER_FDS_MAX	65536

/* The locks still without a process, and the process whose fdinfo is read. */
struct owners {
	struct lb_lockinfo *v;
	size_t n, *left;
	pid_t pid;
};

/* A lock in that fdinfo: the process of the locks of o->v it matches. 1 when none is left. */
static int owner_of(const struct lb_lockinfo *l, void *arg)
{
	struct owners *o = arg;
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->v[i].pid == 0 && o->v[i].ofd == l->ofd && o->v[i].write == l->write &&
		    o->v[i].lo == l->lo && o->v[i].hi == l->hi) {
			o->v[i].pid = o->pid;
			(*o->left)--;
		}
	return *o->left == 0;
}

/* Name the locks of V without a process that the fdinfo file PATH lists. */
static void owners_in(const char *path, pid_t pid, const struct stat *st,
    struct lb_lockinfo *v, size_t n, size_t *left)
{
	struct owners o = { v, n, left, pid };
	char head[4096];
	ssize_t r = lb_procfs_read(path, head, sizeof head);

	/* most descriptors hold no lock: their few lines say so */
	if (r <= 0 || ((size_t)r < sizeof head - 1 && strstr(head, "\nlock:") == NULL))
		return;
	lb_procfs_fdinfo_locks(path, st->st_dev, st->st_ino, owner_of, &o);
}

void lb_lock_owners(int fd, struct lb_lockinfo *v, size_t n)
{
	struct stat st;
	struct dirent *pe, *fe;
	DIR *procs, *fds;
	char dir[64], path[128];
	size_t left = 0, looked = 0, i;
	uint64_t pid, fdn;

	for (i = 0; i < n; i++)
		left += v[i].pid == 0;
	if (left == 0 || fstat(fd, &st) != 0 || (procs = opendir("/proc")) == NULL)
		return;
	while (left > 0 && looked < OWNER_FDS_MAX && (pe = readdir(procs)) != NULL) {
		if (lb_parse_uint(pe->d_name, 1, INT_MAX, &pid) != 0 || (pid_t)pid == getpid())
			continue;
		snprintf(dir, sizeof dir, "/proc/%d/fdinfo", (int)pid);
		fds = opendir(dir);
		if (fds == NULL)
			continue;	/* gone, or another user's */
		while (left > 0 && looked < OWNER_FDS_MAX && (fe = readdir(fds)) != NULL) {
			if (lb_parse_uint(fe->d_name, 0, INT_MAX, &fdn) != 0)
				continue;
			looked++;
			snprintf(path, sizeof path, "%s/%d", dir, (int)fdn);
			owners_in(path, (pid_t)pid, &st, v, n, &left);
		}
		closedir(fds);
	}
	closedir(procs);
}

/* The lock sought, and who was found with it. */
struct keeper {
	const struct lb_lockinfo *l;
	int flock;
	pid_t found;
};

/* A lock of the fdinfo being read: whether it is K's, told by what the kernel shows of it. */
static int keeps(const struct lb_lockinfo *l, void *arg)
{
	const struct lb_lockinfo *w = ((struct keeper *)arg)->l;

	if (((struct keeper *)arg)->flock)
		return l->write == w->write && l->pid == w->pid;
	return l->ofd == w->ofd && l->write == w->write && l->lo == w->lo && l->hi == w->hi;
}

pid_t lb_lock_keeper(int fd, const struct lb_lockinfo *l, int flock)
{
	struct keeper k = { l, flock, 0 };
	struct stat st;
	struct dirent *pe, *fe;
	DIR *procs, *fds;
	char dir[64], path[128];
	size_t looked = 0;
	uint64_t pid, fdn;
	int r;

	if (fstat(fd, &st) != 0 || (procs = opendir("/proc")) == NULL)
		return 0;
	while (k.found == 0 && looked < OWNER_FDS_MAX && (pe = readdir(procs)) != NULL) {
		if (lb_parse_uint(pe->d_name, 1, INT_MAX, &pid) != 0 || (pid_t)pid == getpid() ||
		    (pid_t)pid == l->pid)
			continue;
		snprintf(dir, sizeof dir, "/proc/%d/fdinfo", (int)pid);
		fds = opendir(dir);
		if (fds == NULL)
			continue;	/* gone, or another user's */
		while (k.found == 0 && looked < OWNER_FDS_MAX && (fe = readdir(fds)) != NULL) {
			char head[4096];
			ssize_t got;

			if (lb_parse_uint(fe->d_name, 0, INT_MAX, &fdn) != 0)
				continue;
			looked++;
			snprintf(path, sizeof path, "%s/%d", dir, (int)fdn);
			got = lb_procfs_read(path, head, sizeof head);
			if (got <= 0 || ((size_t)got < sizeof head - 1 && strstr(head, "\nlock:") == NULL))
				continue;
			r = flock ? lb_procfs_fdinfo_flocks(path, st.st_dev, st.st_ino, keeps, &k) :
			    lb_procfs_fdinfo_locks(path, st.st_dev, st.st_ino, keeps, &k);
			if (r > 0)
				k.found = (pid_t)pid;
		}
		closedir(fds);
	}
	closedir(procs);
	return k.found;
}

int lb_proc_runs_self(pid_t pid)
{
	struct stat a, b;
	char path[64];

	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

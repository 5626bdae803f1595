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

/*
 * The whole of a small /proc file (it has no size to stat), read CHUNK
 * bytes at a time (0: as much as fits). NUL-terminated.
 */
static char *slurp(const char *path, size_t chunk, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap), *grown;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || buf == NULL) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		if (cap - n < 4096) {
			grown = realloc(buf, cap * 2);
			if (grown == NULL)
				break;
			buf = grown;
			cap *= 2;
		}
		r = read(fd, buf + n, chunk != 0 && chunk < cap - n - 1 ? chunk : cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (r < 0 || cap - n < 4096) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The next word of [*at, end): its start, and *at past it; NULL at the end. */
static const char *word(const char **at, const char *end, size_t *len)
{
	const char *w = *at;

	while (w < end && (*w == ' ' || *w == '\t' || *w == '\n'))
		w++;
	*at = w;
	while (*at < end && **at != ' ' && **at != '\t' && **at != '\n')
		(*at)++;
	*len = (size_t)(*at - w);
	return *len != 0 ? w : NULL;
}

static int word_is(const char *w, size_t len, const char *lit)
{
	return w != NULL && len == strlen(lit) && memcmp(w, lit, len) == 0;
}

/* A whole decimal number of [w, w+len), at most MAX: 0, or -1. */
static int word_num(const char *w, size_t len, uint64_t max, uint64_t *v)
{
	char buf[32];

	if (w == NULL || len >= sizeof buf)
		return -1;
	memcpy(buf, w, len);
	buf[len] = '\0';
	return lb_parse_uint(buf, 0, max, v);
}

/* A device number's half, in hex as the kernel prints it: 0, or -1. */
static int word_hex(const char *w, size_t len, uint64_t *v)
{
	size_t i;

	*v = 0;
	for (i = 0; i < len && i < 8; i++) {
		int d = w[i] >= '0' && w[i] <= '9' ? w[i] - '0' :
		    w[i] >= 'a' && w[i] <= 'f' ? w[i] - 'a' + 10 : -1;

		if (d < 0)
			return -1;
		*v = *v * 16 + (uint64_t)d;
	}
	return len != 0 && i == len ? 0 : -1;
}

/*
 * One line of /proc/locks, or of a "lock:" line of fdinfo, [line, end):
 *   1: OFDLCK ADVISORY  WRITE -1 fe:00:1234 4096 4096
 *   2: -> POSIX  ADVISORY  WRITE 311 fe:00:1234 4352 4352   (blocked: not held)
 * Returns 1 and fills in *L when the line is a held fcntl lock (OFD or
 * POSIX, read or write) on DEV/INO; *seen is set for any line about the
 * file.
 */
static int parse_lock(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockinfo *l, int *seen)
{
	const char *at = line, *w, *kind, *access = NULL, *pidw = NULL, *c1, *c2;
	size_t len, klen, alen = 0, plen = 0;
	uint64_t maj, mnr, i, a, b, pid;
	int n, blocked, eof;

	w = word(&at, end, &len);	/* "1:", or "lock:" has been cut */
	if (w != NULL && w[len - 1] == ':')
		w = word(&at, end, &len);
	blocked = word_is(w, len, "->");
	kind = blocked ? word(&at, end, &klen) : w;
	klen = blocked ? klen : len;
	/* the access word is the one before the PID, two before DEV:INO */
	for (n = 0; n < 3 && (w = word(&at, end, &len)) != NULL; n++)
		if (n == 1) {
			access = w;
			alen = len;
		} else if (n == 2) {
			pidw = w;
			plen = len;
		}
	w = word(&at, end, &len);	/* MAJ:MIN:INO */
	if (n != 3 || w == NULL || (c1 = memchr(w, ':', len)) == NULL ||
	    (c2 = memchr(c1 + 1, ':', (size_t)(w + len - c1 - 1))) == NULL ||
	    word_hex(w, (size_t)(c1 - w), &maj) != 0 ||
	    word_hex(c1 + 1, (size_t)(c2 - c1 - 1), &mnr) != 0 ||
	    word_num(c2 + 1, (size_t)(w + len - c2 - 1), UINT64_MAX, &i) != 0 ||
	    maj != major(dev) || mnr != minor(dev) || (ino_t)i != ino)
		return 0;
	*seen = 1;
	if (blocked || !(word_is(kind, klen, "OFDLCK") || word_is(kind, klen, "POSIX")) ||
	    !(word_is(access, alen, "WRITE") || word_is(access, alen, "READ")))
		return 0;
	w = word(&at, end, &len);
	if (word_num(w, len, LLONG_MAX, &a) != 0)
		return 0;
	w = word(&at, end, &len);
	b = 0;
	eof = word_is(w, len, "EOF");
	if (!eof && word_num(w, len, LLONG_MAX, &b) != 0)
		return 0;
	l->lo = (long long)a;
	l->hi = eof ? -1 : (long long)b;
	l->write = access[0] == 'W';
	l->ofd = kind[0] == 'O';
	/* an OFD lock's PID is -1: it belongs to an open file, not a process */
	l->pid = word_num(pidw, plen, INT_MAX, &pid) == 0 ? (pid_t)pid : 0;
	return 1;
}

/* As parse_lock, for held write locks only: their range. */
static int parse_line(const char *line, const char *end, dev_t dev, ino_t ino,
    long long *lo, long long *hi, int *seen)
{
	struct lb_lockinfo l;

	if (!parse_lock(line, end, dev, ino, &l, seen) || !l.write)
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
	char *text = slurp("/proc/locks", chunk, &len), needle[32];
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

int lb_scan_own(int fd, struct lb_slotset *out)
{
	char path[64], *text;
	const char *line, *end, *stop;
	struct stat st;
	long long lo, hi;
	size_t len;
	int seen = 0, rc = 0;

	out->n = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	text = slurp(path, 0, &len);
	if (text == NULL)
		return -1;
	stop = text + len;
	for (line = text; rc == 0 && line < stop; line = end) {
		end = memchr(line, '\n', (size_t)(stop - line));
		end = end != NULL ? end + 1 : stop;
		if ((size_t)(end - line) > 5 && memcmp(line, "lock:", 5) == 0 &&
		    parse_line(line + 5, end, st.st_dev, st.st_ino, &lo, &hi, &seen) &&
		    (hi < 0 || hi >= LB_HDR_SIZE) && lo < (long long)SLOTS_END)
			rc = add_range(out, lo, hi);
	}
	free(text);
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

int lb_scan_locks(int fd, struct lb_lockinfo **v, size_t *n)
{
	struct stat st;
	struct lb_lockinfo l, *grown;
	size_t len, nlen, cap = 0;
	char *text, needle[32];
	const char *at, *line, *end, *stop;
	int seen = 0;

	*v = NULL;
	*n = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	text = slurp("/proc/locks", 0, &len);
	if (text == NULL)
		return 0;
	stop = text + len;
	nlen = (size_t)snprintf(needle, sizeof needle, ":%llu", (unsigned long long)st.st_ino);
	for (at = text; (at = memmem(at, (size_t)(stop - at), needle, nlen)) != NULL; at = end) {
		line = at;
		while (line > text && line[-1] != '\n')
			line--;
		end = memchr(at + nlen, '\n', (size_t)(stop - at - nlen));
		end = end != NULL ? end + 1 : stop;
		if (!parse_lock(line, end, st.st_dev, st.st_ino, &l, &seen))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(*v, cap * sizeof **v);
			if (grown == NULL) {
				free(text);
				free(*v);
				*v = NULL;
				*n = 0;
				return -1;
			}
			*v = grown;
		}
		(*v)[(*n)++] = l;
	}
	free(text);
	if (!seen) {
		free(*v);
		*v = NULL;
		*n = 0;
	}
	return seen;
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
	struct lb_lockinfo *v;
	size_t n, i;
	pid_t pid = 0;

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

/* descriptors looked at, at most, to name the processes of OFD locks */
#define OWNER_FDS_MAX	65536

/* Name the locks of V without a process that the fdinfo file PATH lists. */
static void owners_in(const char *path, pid_t pid, const struct stat *st,
    struct lb_lockinfo *v, size_t n, size_t *left)
{
	char head[4096], *text;
	const char *line, *end, *stop;
	struct lb_lockinfo l;
	ssize_t r;
	size_t len, i;
	int fd = open(path, O_RDONLY | O_CLOEXEC), seen = 0;

	if (fd < 0)
		return;
	do
		r = read(fd, head, sizeof head - 1);
	while (r < 0 && errno == EINTR);
	close(fd);
	if (r <= 0)
		return;
	head[r] = '\0';
	/* most descriptors hold no lock: their few lines say so */
	if ((size_t)r < sizeof head - 1 && strstr(head, "\nlock:") == NULL)
		return;
	text = slurp(path, 0, &len);
	if (text == NULL)
		return;
	stop = text + len;
	for (line = text; *left > 0 && line < stop; line = end) {
		end = memchr(line, '\n', (size_t)(stop - line));
		end = end != NULL ? end + 1 : stop;
		if ((size_t)(end - line) <= 5 || memcmp(line, "lock:", 5) != 0 ||
		    !parse_lock(line + 5, end, st->st_dev, st->st_ino, &l, &seen))
			continue;
		for (i = 0; i < n; i++)
			if (v[i].pid == 0 && v[i].ofd == l.ofd && v[i].write == l.write &&
			    v[i].lo == l.lo && v[i].hi == l.hi) {
				v[i].pid = pid;
				(*left)--;
			}
	}
	free(text);
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

int lb_proc_runs_self(pid_t pid)
{
	struct stat a, b;
	char path[64];

	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

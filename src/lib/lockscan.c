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
 * Returns 1 and fills in the held write lock's range when the line is one
 * on DEV/INO; *seen is set for any line about the file.
 */
static int parse_line(const char *line, const char *end, dev_t dev, ino_t ino,
    long long *lo, long long *hi, int *seen)
{
	const char *at = line, *w, *kind, *access = NULL, *c1, *c2;
	size_t len, klen, alen = 0;
	uint64_t maj, mnr, i, a, b;
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
	    !word_is(access, alen, "WRITE"))
		return 0;
	w = word(&at, end, &len);
	if (word_num(w, len, LLONG_MAX, &a) != 0)
		return 0;
	w = word(&at, end, &len);
	b = 0;
	eof = word_is(w, len, "EOF");
	if (!eof && word_num(w, len, LLONG_MAX, &b) != 0)
		return 0;
	*lo = (long long)a;
	*hi = eof ? -1 : (long long)b;
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

/*
 * A held lock of TYPE (F_RDLCK or F_WRLCK) on DEV/INO covering BYTE, in a
 * line of /proc/locks or of fdinfo ("lock:" cut off): its PID field (-1
 * for an open file description lock), or 0 when the line is not one.
 */
static long locker_line(const char *line, dev_t dev, ino_t ino, off_t byte, short type)
{
	char kind[16], mode[16], access[16], end[32];
	unsigned maj, mnr;
	unsigned long long i, lo;
	long pid;

	if (sscanf(line, "%*s %15s %15s %15s %ld %x:%x:%llu %llu %31s", kind, mode,
	    access, &pid, &maj, &mnr, &i, &lo, end) != 9 ||
	    (strcmp(kind, "OFDLCK") != 0 && strcmp(kind, "POSIX") != 0) ||
	    strcmp(access, type == F_RDLCK ? "READ" : "WRITE") != 0 ||
	    maj != major(dev) || mnr != minor(dev) || (ino_t)i != ino ||
	    lo > (unsigned long long)byte ||
	    (strcmp(end, "EOF") != 0 && strtoull(end, NULL, 10) < (unsigned long long)byte))
		return 0;
	return pid != 0 ? pid : -1;
}

pid_t lb_scan_locker(int fd, off_t byte, short type)
{
	char path[96], buf[8192], *text, *line, *save = NULL;
	struct dirent *e, *f;
	struct stat st, o;
	DIR *procs, *fds;
	size_t len;
	long pid = 0;
	ssize_t n;

	if (fstat(fd, &st) != 0 || (text = slurp("/proc/locks", 0, &len)) == NULL)
		return 0;
	for (line = strtok_r(text, "\n", &save); pid == 0 && line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		pid = locker_line(line, st.st_dev, st.st_ino, byte, type);
	free(text);
	if (pid >= 0)
		return (pid_t)pid;
	/* an open file description lock: whoever has that file open with it */
	pid = 0;
	procs = opendir("/proc");
	while (procs != NULL && pid == 0 && (e = readdir(procs)) != NULL) {
		long p = strtol(e->d_name, NULL, 10);

		if (p <= 0 || p == (long)getpid())
			continue;
		snprintf(path, sizeof path, "/proc/%ld/fd", p);
		fds = opendir(path);
		while (fds != NULL && pid == 0 && (f = readdir(fds)) != NULL) {
			char *rest;
			long d = strtol(f->d_name, &rest, 10);
			int info;

			if (f->d_name[0] < '0' || f->d_name[0] > '9' || *rest != '\0')
				continue;
			snprintf(path, sizeof path, "/proc/%ld/fd/%ld", p, d);
			if (stat(path, &o) != 0 || o.st_dev != st.st_dev || o.st_ino != st.st_ino)
				continue;
			snprintf(path, sizeof path, "/proc/%ld/fdinfo/%ld", p, d);
			info = open(path, O_RDONLY | O_CLOEXEC);
			n = info < 0 ? -1 : read(info, buf, sizeof buf - 1);
			if (info >= 0)
				close(info);
			buf[n > 0 ? n : 0] = '\0';
			save = NULL;
			for (line = strtok_r(buf, "\n", &save); pid == 0 && line != NULL;
			    line = strtok_r(NULL, "\n", &save))
				if (strncmp(line, "lock:", 5) == 0 &&
				    locker_line(line + 5, st.st_dev, st.st_ino, byte, type) != 0)
					pid = p;
		}
		if (fds != NULL)
			closedir(fds);
	}
	if (procs != NULL)
		closedir(procs);
	return (pid_t)pid;
}

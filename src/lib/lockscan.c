/* Which slots of a lock file are locked, from the kernel's lock table. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lockfile.h"
#include "lockscan.h"

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

/*
 * One line of /proc/locks, or of a "lock:" line of fdinfo:
 *   1: OFDLCK ADVISORY  WRITE -1 fe:00:1234 4096 4096
 *   2: -> POSIX  ADVISORY  WRITE 311 fe:00:1234 4352 4352   (blocked: not held)
 * Returns 1 and fills in the held write lock's range when the line is one
 * on DEV/INO; *seen is set for any line about the file.
 */
static int parse_line(char *line, dev_t dev, ino_t ino, long long *lo, long long *hi,
    int *seen)
{
	char *tok[12], *save = NULL, *t;
	unsigned maj, mnr;
	unsigned long long i;
	int n = 0, at;
	char tail;

	for (t = strtok_r(line, " \t", &save); t != NULL && n < 12; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	for (at = 2; at < n - 2; at++)
		if (strchr(tok[at], ':') != NULL &&
		    sscanf(tok[at], "%x:%x:%llu%c", &maj, &mnr, &i, &tail) == 3)
			break;
	if (at >= n - 2 || maj != major(dev) || mnr != minor(dev) || (ino_t)i != ino)
		return 0;
	*seen = 1;
	if (strcmp(tok[1], "->") == 0 || (strcmp(tok[1], "OFDLCK") != 0 && strcmp(tok[1], "POSIX") != 0) ||
	    strcmp(tok[at - 2], "WRITE") != 0)
		return 0;
	*lo = strtoll(tok[at + 1], NULL, 10);
	*hi = strcmp(tok[at + 2], "EOF") == 0 ? -1 : strtoll(tok[at + 2], NULL, 10);
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
	char *text = slurp("/proc/locks", chunk, &len), *at, *line, *end;
	char needle[32];
	long long lo, hi;
	int seen = 0, rc = 0;

	if (text == NULL)
		return 0;
	nlen = (size_t)snprintf(needle, sizeof needle, ":%llu", (unsigned long long)st->st_ino);
	for (at = text; rc == 0 && (at = memmem(at, len - (size_t)(at - text), needle, nlen)) != NULL;
	    at = end) {
		line = at;
		while (line > text && line[-1] != '\n' && line[-1] != '\0')
			line--;
		end = strchr(at + nlen, '\n');
		if (end != NULL)
			*end++ = '\0';
		else
			end = text + len;
		if (parse_line(line, st->st_dev, st->st_ino, &lo, &hi, &seen) &&
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
 * tests for k holders, each a walk of the file's lock list.
 */
static int scan_tests(int fd, struct lb_slotset *out)
{
	struct range {
		off_t lo, hi;
	} *stack = NULL, *grown;
	size_t depth = 0, cap = 0;
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
	return rc < 0 ? -1 : 0;
}

static int same_set(const struct lb_slotset *a, const struct lb_slotset *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * sizeof *a->v) == 0);
}

/*
 * The kernel hands /proc/locks out a read at a time (a page at most), and
 * a lock of any file taken or dropped between two reads shifts the lines
 * after it: the line at the boundary can be missed. So the table is read
 * again with reads of other sizes, which put the boundaries elsewhere,
 * until two passes in a row agree (at most SCAN_PASSES); a slot seen held
 * in any pass counts: it was held during the look. 1, 0 or -1 as
 * scan_table; OUT is left unsorted.
 */
#define SCAN_PASSES	4

static int scan_table_stable(const struct stat *st, struct lb_slotset *out)
{
	/* near a page each: every read is a walk of the table up to where it starts */
	static const size_t chunk[SCAN_PASSES] = { 0, 3677, 3259, 2939 };
	struct lb_slotset prev = { NULL, 0, 0 }, cur = { NULL, 0, 0 };
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
		if (r < 0 || (pass > 0 && same_set(&prev, &cur)))
			break;
		lb_slotset_free(&prev);
		prev = cur;
		cur = (struct lb_slotset){ NULL, 0, 0 };
	}
	lb_slotset_free(&prev);
	lb_slotset_free(&cur);
	return r < 0 ? -1 : seen;
}

int lb_scan_held(int fd, struct lb_slotset *out)
{
	struct stat st;
	struct flock c;
	int r;

	out->n = 0;
	/* no slot locked at all: one test says so, whatever else the host locks */
	r = lb_lock_test(fd, F_RDLCK, LB_HDR_SIZE, SLOTS_END - LB_HDR_SIZE, &c);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (fstat(fd, &st) != 0)
		return -1;
	r = scan_table_stable(&st, out);
	if (r < 0)
		return -1;
	if (r == 0) {
		/*
		 * Locked, yet not listed: a file system whose locks the table
		 * does not show (btrfs subvolumes, network file systems).
		 */
		out->n = 0;
		if (scan_tests(fd, out) != 0)
			return -1;
	}
	lb_slotset_sort(out);
	return 0;
}

int lb_scan_own(int fd, struct lb_slotset *out)
{
	char path[64], *text, *line, *save = NULL;
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
	for (line = strtok_r(text, "\n", &save); line != NULL && rc == 0;
	    line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "lock:", 5) == 0 &&
		    parse_line(line + 5, st.st_dev, st.st_ino, &lo, &hi, &seen) &&
		    (hi < 0 || hi >= LB_HDR_SIZE) && lo < (long long)SLOTS_END)
			rc = add_range(out, lo, hi);
	free(text);
	lb_slotset_sort(out);
	return rc;
}

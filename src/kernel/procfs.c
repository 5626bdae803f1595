/* Reading /proc, the one file that does: its small files, walks over processes and descriptors, and the kernel's lock table. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "lockline.h"
#include "parse.h"
#include "procfs.h"

/* The start of the /proc file PATH, as lb_procfs_pid_read says. */
static ssize_t read_start(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	/* nothing to read in a /proc file: its process has just gone */
	saved = n == 0 ? ESRCH : errno;
	close(fd);
	errno = saved;
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* what a read with a deadline reads in any case: some thousand lines of /proc/locks */
#define SLURP_MIN	(64 * 1024)

/* at most this many lines a read of the lock table is looked at for, as repeated from the read before */
#define REPEATS_MAX	16

/* Where the line at LINE ends in a text that ends at STOP: past its newline, or STOP. */
static const char *line_end(const char *line, const char *stop)
{
	const char *nl = memchr(line, '\n', (size_t)(stop - line));

	return nl != NULL ? nl + 1 : stop;
}

/* The line of TEXT that ends just before AT (a line's start), or NULL. */
static const char *line_before(const char *text, const char *at)
{
	const char *p = at - 1;

	if (at <= text)
		return NULL;
	while (p > text && p[-1] != '\n')
		p--;
	return p;
}

/* What the lock table's line [LINE, END) says past its ordinal ("12:"), which a shift renumbers. */
static const char *past_ordinal(const char *line, const char *end)
{
	const char *colon = memchr(line, ':', (size_t)(end - line));

	return colon != NULL ? colon + 1 : line;
}

/* Whether the lock table's lines A and B say the same past their ordinals. */
static int same_words(const char *a, const char *b, const char *stop)
{
	const char *ae = line_end(a, stop), *be = line_end(b, stop);
	const char *aw = past_ordinal(a, ae), *bw = past_ordinal(b, be);

	return ae - aw == be - bw && memcmp(aw, bw, (size_t)(ae - aw)) == 0;
}

/*
 * The bytes at AT, where a read of the lock table began, that repeat the
 * lines just before it. Each read starts at a line's place in the
 * kernel's list: a lock taken ahead of that place since the read before
 * moves the lines back by one, and the read's first line is the last
 * line of the read before, numbered anew. The most lines that so repeat,
 * up to REPEATS_MAX (two locks whose lines say the same, side by side at
 * a read's edge, are taken for one).
 */
static size_t repeated(const char *text, const char *at, const char *stop)
{
	const char *before[REPEATS_MAX], *after[REPEATS_MAX], *p;
	size_t nb = 0, na = 0, j, i;

	for (p = at; nb < REPEATS_MAX && (p = line_before(text, p)) != NULL;)
		before[nb++] = p;
	for (p = at; na < REPEATS_MAX && p < stop; p = line_end(p, stop))
		after[na++] = p;
	for (j = nb < na ? nb : na; j > 0; j--) {
		for (i = 0; i < j && same_words(before[j - 1 - i], after[i], stop); i++)
			;
		if (i == j)
			return (size_t)(line_end(after[j - 1], stop) - at);
	}
	return 0;
}

/*
 * The whole of the /proc file PATH (it has no size to stat), read as
 * much as fits a read at a time, until DEADLINE (0: none) once SLURP_MIN
 * bytes are read (then *CUT is set and what was read is kept to its last
 * whole line), NUL-terminated, malloc'd, its length in *LEN; NULL with
 * errno. With REPEATS (the lock table), the lines a read repeats from
 * the read before are left out.
 */
static char *slurp(const char *path, int64_t deadline, int repeats, size_t *len, int *cut)
{
	size_t cap = 64 * 1024, n = 0, drop;
	char *buf = malloc(cap), *grown;
	ssize_t r = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;

	*cut = 0;
	if (fd < 0 || buf == NULL) {
		saved = errno;
		if (fd >= 0)
			close(fd);
		free(buf);
		errno = saved;
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
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		/* (a read that began a line, after one that ended one) */
		drop = repeats && n > 0 && buf[n - 1] == '\n' ?
		    repeated(buf, buf + n, buf + n + (size_t)r) : 0;
		if (drop > 0)
			memmove(buf + n, buf + n + drop, (size_t)r - drop);
		n += (size_t)r - drop;
		/* a table of ordinary length is read whole, however busy the host */
		if (n >= SLURP_MIN && deadline != 0 && lb_remaining(deadline) == 0) {
			*cut = 1;
			while (n > 0 && buf[n - 1] != '\n')
				n--;
			r = 0;
			break;
		}
	}
	saved = r < 0 ? errno : ENOMEM;
	close(fd);
	if (r < 0 || cap - n < 4096) {
		free(buf);
		errno = saved;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* "/proc/PID/NAME", or "/proc/self/NAME" for PID 0. */
static void pid_path(char *buf, size_t size, pid_t pid, const char *name)
{
	if (pid == 0)
		snprintf(buf, size, "/proc/self/%s", name);
	else
		snprintf(buf, size, "/proc/%d/%s", (int)pid, name);
}

/* "/proc/PID/DIR/FD" (fd, fdinfo). */
static void fd_path(char *buf, size_t size, pid_t pid, const char *dir, int fd)
{
	if (pid == 0)
		snprintf(buf, size, "/proc/self/%s/%d", dir, fd);
	else
		snprintf(buf, size, "/proc/%d/%s/%d", (int)pid, dir, fd);
}

/*
 * A run that looks at many files (lb_locktab_pin) reads each process's
 * small files once: the same holder of two hundred lock files is looked
 * at once, not two hundred times.
 */
struct pid_file {
	pid_t pid;
	const char *name;	/* a literal: "stat", "comm", "cmdline" */
	ssize_t len;		/* -1: could not be read (ERR) */
	int err;
	char *text;
};
static struct pid_file *pid_files;
static size_t npid_files, cappid_files;
static int pinned;

static void forget_pid_files(void)
{
	size_t i;

	for (i = 0; i < npid_files; i++)
		free(pid_files[i].text);
	free(pid_files);
	pid_files = NULL;
	npid_files = cappid_files = 0;
}

ssize_t lb_procfs_pid_read(pid_t pid, const char *name, char *buf, size_t size)
{
	char path[64 + NAME_MAX], text[4096];
	struct pid_file *f, *grown;
	ssize_t n;
	size_t i;
	int saved;

	pid_path(path, sizeof path, pid, name);
	if (!pinned || pid == 0 || size > sizeof text)
		return read_start(path, buf, size);
	for (i = 0; i < npid_files; i++) {
		f = &pid_files[i];
		if (f->pid != pid || strcmp(f->name, name) != 0)
			continue;
		if (f->len < 0) {
			errno = f->err;
			return -1;
		}
		n = (size_t)f->len < size ? f->len : (ssize_t)size - 1;
		memcpy(buf, f->text, (size_t)n);
		buf[n] = '\0';
		return n;
	}
	n = read_start(path, text, sizeof text);
	saved = errno;
	if (npid_files == cappid_files) {
		size_t cap = cappid_files ? 2 * cappid_files : 64;

		grown = realloc(pid_files, cap * sizeof *grown);
		if (grown == NULL)
			goto out;
		pid_files = grown;
		cappid_files = cap;
	}
	f = &pid_files[npid_files];
	*f = (struct pid_file){ pid, name, n, saved, NULL };
	if (n >= 0 && (f->text = malloc((size_t)n + 1)) == NULL)
		goto out;
	if (n >= 0)
		memcpy(f->text, text, (size_t)n + 1);
	npid_files++;
out:
	if (n < 0) {
		errno = saved;
		return -1;
	}
	n = (size_t)n < size ? n : (ssize_t)size - 1;
	memcpy(buf, text, (size_t)n);
	buf[n] = '\0';
	return n;
}

int lb_procfs_pid_stat(pid_t pid, struct stat *st)
{
	char path[64];

	pid_path(path, sizeof path, pid, "");
	return stat(path, st);
}

ssize_t lb_procfs_boot_id(char *buf, size_t size)
{
	return read_start("/proc/sys/kernel/random/boot_id", buf, size);
}

int lb_procfs_runs_self(pid_t pid)
{
	struct stat a, b;
	char path[64];

	pid_path(path, sizeof path, pid, "exe");
	return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

char *lb_procfs_self_exe(void)
{
	return realpath("/proc/self/exe", NULL);
}

int lb_procfs_fd_stat(pid_t pid, int fd, struct stat *st)
{
	char path[96];

	fd_path(path, sizeof path, pid, "fd", fd);
	/* stat follows the descriptor's link to the open file itself */
	return stat(path, st);
}

ssize_t lb_procfs_fd_link(pid_t pid, int fd, char *buf, size_t size)
{
	char path[96];
	ssize_t n;

	fd_path(path, sizeof path, pid, "fd", fd);
	n = readlink(path, buf, size - 1);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

int lb_procfs_fd_reopen(int fd, int flags)
{
	char path[64];

	return open(lb_procfs_fd_name(fd, path, sizeof path), flags);
}

const char *lb_procfs_fd_name(int fd, char *buf, size_t size)
{
	fd_path(buf, size, 0, "fd", fd);
	return buf;
}

/* ---- the walks ---- */

/*
 * PIDs are given out in turn, up to a limit, then from the start again:
 * those just below ours were given last, then those above ours, from the
 * highest down.
 */
static pid_t self_pid;

static int newer(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	int xa = x > self_pid, ya = y > self_pid;

	if (xa != ya)
		return xa - ya;
	return (x < y) - (x > y);
}

int lb_procfs_each_process(int newest_first, int (*fn)(pid_t pid, void *arg), void *arg)
{
	struct dirent *e;
	uint64_t pid;
	pid_t *v = NULL, *grown;
	size_t n = 0, cap = 0, i;
	int r = 0, saved;
	DIR *d = opendir("/proc");

	if (d == NULL)
		return -1;
	for (;;) {
		errno = 0;
		if ((e = readdir(d)) == NULL)
			break;
		if (lb_parse_uint(e->d_name, 1, INT_MAX, &pid) != 0)
			continue;
		if (!newest_first) {
			if ((r = fn((pid_t)pid, arg)) != 0)
				break;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			if ((grown = realloc(v, cap * sizeof *v)) == NULL) {
				r = -1;
				break;
			}
			v = grown;
		}
		v[n++] = (pid_t)pid;
	}
	/* the listing ends with errno 0 only at its end; FN's errno is kept */
	saved = errno;
	closedir(d);
	if (newest_first && r == 0 && !(e == NULL && saved != 0)) {
		self_pid = getpid();
		if (n > 1)
			qsort(v, n, sizeof *v, newer);
		for (i = 0; i < n && r == 0; i++)
			r = fn(v[i], arg);
		saved = errno;
		e = NULL;
		free(v);
		errno = saved;
		return r;
	}
	free(v);
	errno = saved;
	return e == NULL && saved != 0 ? -1 : r;
}

int lb_procfs_each_fd(pid_t pid, int (*fn)(pid_t pid, int fd, void *arg), void *arg)
{
	char path[64];
	struct dirent *e;
	uint64_t fd;
	int r = 0, saved;
	DIR *d;

	pid_path(path, sizeof path, pid, "fd");
	d = opendir(path);
	if (d == NULL)
		return -1;
	while (r == 0 && (e = readdir(d)) != NULL)
		if (lb_parse_uint(e->d_name, 0, INT_MAX, &fd) == 0 &&
		    !(pid == 0 && (int)fd == dirfd(d)))
			r = fn(pid, (int)fd, arg);
	saved = errno;
	closedir(d);
	errno = saved;
	return r;
}

/* The "lock:" lines of an fdinfo text [TEXT, STOP) about DEV/INO. */
static int fdinfo_lines(const char *text, const char *stop, dev_t dev, ino_t ino,
    int (*fn)(const struct lb_lockline *x, void *arg), void *arg)
{
	struct lb_lockline x;
	const char *line, *end;
	int seen = 0, r = 0;

	for (line = text; r == 0 && line < stop; line = end) {
		end = line_end(line, stop);
		if ((size_t)(end - line) > 5 && memcmp(line, "lock:", 5) == 0 &&
		    lb_lockline_any(line + 5, end, dev, ino, &x, &seen) && !x.blocked)
			r = fn(&x, arg);
	}
	return r;
}

int lb_procfs_each_fd_lock(pid_t pid, int fd, dev_t dev, ino_t ino,
    int (*fn)(const struct lb_lockline *x, void *arg), void *arg)
{
	char path[96], head[4096], *text;
	size_t len;
	ssize_t r;
	int cut, rc;

	fd_path(path, sizeof path, pid, "fdinfo", fd);
	r = read_start(path, head, sizeof head);
	if (r < 0)
		return -1;
	/* most descriptors hold no lock: their few lines, read whole, say so */
	if ((size_t)r < sizeof head - 1)
		return strstr(head, "\nlock:") == NULL ? 0 :
		    fdinfo_lines(head, head + r, dev, ino, fn, arg);
	text = slurp(path, 0, 0, &len, &cut);
	if (text == NULL)
		return -1;
	rc = fdinfo_lines(text, text + len, dev, ino, fn, arg);
	free(text);
	return rc;
}

/* ---- the kernel's lock table ---- */

/* A line of an indexed table: its file, and where it is. */
struct lb_locktab_line {
	dev_t dev;
	ino_t ino;
	size_t off, len;
};

/*
 * The one table of a run that asked for the host's view (lb_locktab_pin),
 * until it lets go of it: no other read of the table is made.
 */
static struct lb_locktab *kept;

static int by_file(const void *a, const void *b)
{
	const struct lb_locktab_line *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (x->off > y->off) - (x->off < y->off);
}

/* Index T's lines by file (in table order within one): 0, or -1. */
static int index_table(struct lb_locktab *t)
{
	const char *line, *end, *stop = t->text + t->len;
	size_t cap = 0;
	struct lb_locktab_line *grown;
	dev_t dev;
	ino_t ino;

	for (line = t->text; line < stop; line = end) {
		end = line_end(line, stop);
		if (lb_lockline_file(line, end, &dev, &ino) != 0)
			continue;
		if (t->nidx == cap) {
			cap = cap ? 2 * cap : 256;
			grown = realloc(t->idx, cap * sizeof *grown);
			if (grown == NULL)
				return -1;
			t->idx = grown;
		}
		t->idx[t->nidx++] = (struct lb_locktab_line){ dev, ino,
		    (size_t)(line - t->text), (size_t)(end - line) };
	}
	if (t->nidx > 1)
		qsort(t->idx, t->nidx, sizeof *t->idx, by_file);
	return 0;
}

static void free_table(struct lb_locktab *t)
{
	if (t == NULL)
		return;
	free(t->text);
	free(t->idx);
	free(t);
}

/* The table read now, up to DEADLINE (0: none), indexed by file. NULL with errno. */
static struct lb_locktab *read_table(int64_t deadline)
{
	struct lb_locktab *t = calloc(1, sizeof *t);

	if (t == NULL)
		return NULL;
	t->text = slurp("/proc/locks", deadline, 1, &t->len, &t->cut);
	if (t->text == NULL || index_table(t) != 0) {
		free_table(t);
		return NULL;
	}
	return t;
}

struct lb_locktab *lb_locktab_get(void)
{
	if (kept == NULL)
		errno = EPERM;	/* not a run that looks at the host */
	return kept;
}

void lb_locktab_done(struct lb_locktab *t)
{
	(void)t;	/* the run's own, kept until lb_locktab_unpin */
}

const struct lb_locktab *lb_locktab_pin(int64_t deadline)
{
	lb_locktab_unpin();
	kept = read_table(deadline);
	if (kept != NULL)
		kept->pinned = 1;
	pinned = kept != NULL;
	return kept;
}

void lb_locktab_unpin(void)
{
	free_table(kept);
	kept = NULL;
	pinned = 0;
	forget_pid_files();
}

int lb_locktab_each(const struct lb_locktab *t, dev_t dev, ino_t ino,
    int (*fn)(const char *line, const char *end, void *arg), void *arg)
{
	const char *at, *line, *end, *stop = t->text + t->len;
	char needle[32];
	size_t nlen, lo = 0, hi = t->nidx, mid;
	dev_t d;
	ino_t i;
	int r = 0;

	if (t->idx != NULL) {
		/* the first line of the file, then the lines after it */
		struct lb_locktab_line key = { dev, ino, 0, 0 };

		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (by_file(&t->idx[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; r == 0 && lo < t->nidx && t->idx[lo].dev == dev && t->idx[lo].ino == ino; lo++)
			r = fn(t->text + t->idx[lo].off, t->text + t->idx[lo].off + t->idx[lo].len, arg);
		return r;
	}
	/* not indexed: only the lines that name the inode after a colon are parsed */
	nlen = (size_t)snprintf(needle, sizeof needle, ":%llu", (unsigned long long)ino);
	for (at = t->text; r == 0 && (at = memmem(at, (size_t)(stop - at), needle, nlen)) != NULL;
	    at = end) {
		line = at;
		while (line > t->text && line[-1] != '\n')
			line--;
		end = line_end(at + nlen, stop);
		if (lb_lockline_file(line, end, &d, &i) == 0 && d == dev && i == ino)
			r = fn(line, end, arg);
	}
	return r;
}

int lb_locktab_each_line(const struct lb_locktab *t,
    int (*fn)(const char *line, const char *end, void *arg), void *arg)
{
	const char *line, *end, *stop = t->text + t->len;
	int r = 0;

	for (line = t->text; r == 0 && line < stop; line = end) {
		end = line_end(line, stop);
		r = fn(line, end, arg);
	}
	return r;
}

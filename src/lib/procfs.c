/* Reading /proc: its small files, and the lines of its lock lists (/proc/locks, fdinfo). */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "parse.h"
#include "procfs.h"

ssize_t lb_procfs_read(const char *path, char *buf, size_t size)
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

char *lb_procfs_slurp(const char *path, size_t chunk, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap), *grown;
	ssize_t r = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;

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
		r = read(fd, buf + n, chunk != 0 && chunk < cap - n - 1 ? chunk : cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
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

/* As procfs.h says: every field checked, the numbers by the strict parser. */
int lb_procfs_lock_any(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockline *out, int *seen)
{
	const char *at = line, *w, *kind, *access = NULL, *pidw = NULL, *c1, *c2;
	size_t len, klen, alen = 0, plen = 0;
	uint64_t maj, mnr, i, a, b, pid;
	int n, eof;

	w = word(&at, end, &len);	/* "1:", or "lock:" has been cut */
	if (w != NULL && w[len - 1] == ':')
		w = word(&at, end, &len);
	out->blocked = word_is(w, len, "->");
	kind = out->blocked ? word(&at, end, &klen) : w;
	klen = out->blocked ? klen : len;
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
	if (word_is(kind, klen, "OFDLCK"))
		out->kind = LB_LOCK_OFD;
	else if (word_is(kind, klen, "POSIX"))
		out->kind = LB_LOCK_POSIX;
	else if (word_is(kind, klen, "FLOCK"))
		out->kind = LB_LOCK_FLOCK;
	else
		return 0;	/* a lease, or what a later kernel adds */
	if (!(word_is(access, alen, "WRITE") || word_is(access, alen, "READ")))
		return 0;
	w = word(&at, end, &len);
	if (word_num(w, len, LLONG_MAX, &a) != 0)
		return 0;
	w = word(&at, end, &len);
	b = 0;
	eof = word_is(w, len, "EOF");
	if (!eof && word_num(w, len, LLONG_MAX, &b) != 0)
		return 0;
	out->l.lo = (long long)a;
	out->l.hi = eof ? -1 : (long long)b;
	out->l.write = access[0] == 'W';
	out->l.ofd = out->kind == LB_LOCK_OFD;
	/* an OFD lock's PID is -1: it belongs to an open file, not a process */
	out->l.pid = word_num(pidw, plen, INT_MAX, &pid) == 0 ? (pid_t)pid : 0;
	return 1;
}

int lb_procfs_lock_id(const char *line, const char *end, dev_t *dev, ino_t *ino)
{
	const char *at = line, *w, *c1, *c2;
	size_t len;
	uint64_t maj, mnr, i;
	int n;

	w = word(&at, end, &len);	/* "1:" */
	if (w != NULL && w[len - 1] == ':')
		w = word(&at, end, &len);
	if (word_is(w, len, "->"))
		w = word(&at, end, &len);	/* the kind */
	/* ADVISORY, the access, the PID, then MAJ:MIN:INO */
	for (n = 0; n < 4 && (w = word(&at, end, &len)) != NULL; n++)
		;
	if (n != 4 || (c1 = memchr(w, ':', len)) == NULL ||
	    (c2 = memchr(c1 + 1, ':', (size_t)(w + len - c1 - 1))) == NULL ||
	    word_hex(w, (size_t)(c1 - w), &maj) != 0 ||
	    word_hex(c1 + 1, (size_t)(c2 - c1 - 1), &mnr) != 0 ||
	    word_num(c2 + 1, (size_t)(w + len - c2 - 1), UINT64_MAX, &i) != 0)
		return 0;
	*dev = makedev((unsigned)maj, (unsigned)mnr);
	*ino = (ino_t)i;
	return 1;
}

int lb_procfs_lock_line(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockinfo *l, int *seen)
{
	struct lb_lockline x;

	if (!lb_procfs_lock_any(line, end, dev, ino, &x, seen) || x.blocked ||
	    x.kind == LB_LOCK_FLOCK)
		return 0;
	*l = x.l;
	return 1;
}

/* The "lock:" lines of the fdinfo file PATH about DEV/INO, of KIND (FLOCK) or else fcntl's. */
static int fdinfo_walk(const char *path, dev_t dev, ino_t ino, int flock,
    int (*fn)(const struct lb_lockinfo *l, void *arg), void *arg)
{
	struct lb_lockline x;
	const char *line, *end, *stop;
	size_t len;
	int seen = 0, r = 0;
	char *text = lb_procfs_slurp(path, 0, &len);

	if (text == NULL)
		return -1;
	stop = text + len;
	for (line = text; r == 0 && line < stop; line = end) {
		end = memchr(line, '\n', (size_t)(stop - line));
		end = end != NULL ? end + 1 : stop;
		if ((size_t)(end - line) > 5 && memcmp(line, "lock:", 5) == 0 &&
		    lb_procfs_lock_any(line + 5, end, dev, ino, &x, &seen) && !x.blocked &&
		    (x.kind == LB_LOCK_FLOCK) == flock)
			r = fn(&x.l, arg);
	}
	free(text);
	return r;
}

int lb_procfs_fdinfo_locks(const char *path, dev_t dev, ino_t ino,
    int (*fn)(const struct lb_lockinfo *l, void *arg), void *arg)
{
	return fdinfo_walk(path, dev, ino, 0, fn, arg);
}

int lb_procfs_fdinfo_flocks(const char *path, dev_t dev, ino_t ino,
    int (*fn)(const struct lb_lockinfo *l, void *arg), void *arg)
{
	return fdinfo_walk(path, dev, ino, 1, fn, arg);
}

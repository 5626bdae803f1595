/* A line of the kernel's lock lists, parsed: text in, fields out, no reading. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "lockline.h"
#include "parse.h"

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

/* MAJ:MIN:INO, the file a line is about: 0, or -1. */
static int word_file(const char *w, size_t len, dev_t *dev, ino_t *ino)
{
	const char *c1, *c2;
	uint64_t maj, mnr, i;

	if (w == NULL || (c1 = memchr(w, ':', len)) == NULL ||
	    (c2 = memchr(c1 + 1, ':', (size_t)(w + len - c1 - 1))) == NULL ||
	    word_hex(w, (size_t)(c1 - w), &maj) != 0 ||
	    word_hex(c1 + 1, (size_t)(c2 - c1 - 1), &mnr) != 0 ||
	    word_num(c2 + 1, (size_t)(w + len - c2 - 1), UINT64_MAX, &i) != 0)
		return -1;
	*dev = makedev((unsigned)maj, (unsigned)mnr);
	*ino = (ino_t)i;
	return 0;
}

/* As lockline.h says: every field checked, the numbers by the strict parser. */
int lb_lockline_parse(const char *line, const char *end, dev_t *dev, ino_t *ino,
    struct lb_lockline *out)
{
	const char *at = line, *w, *kind, *access = NULL, *pidw = NULL;
	size_t len, klen, alen = 0, plen = 0;
	uint64_t a, b, pid;
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
	if (n != 3 || word_file(w, len, dev, ino) != 0)
		return 0;
	if (word_is(kind, klen, "OFDLCK"))
		out->kind = LB_LOCK_OFD;
	else if (word_is(kind, klen, "POSIX"))
		out->kind = LB_LOCK_POSIX;
	else if (word_is(kind, klen, "FLOCK"))
		out->kind = LB_LOCK_FLOCK;
	else
		return 2;	/* a lease, or what a later kernel adds */
	if (!(word_is(access, alen, "WRITE") || word_is(access, alen, "READ")))
		return 2;
	w = word(&at, end, &len);
	if (word_num(w, len, LLONG_MAX, &a) != 0)
		return 2;
	w = word(&at, end, &len);
	b = 0;
	eof = word_is(w, len, "EOF");
	if (!eof && word_num(w, len, LLONG_MAX, &b) != 0)
		return 2;
	out->l.lo = (long long)a;
	out->l.hi = eof ? -1 : (long long)b;
	out->l.write = access[0] == 'W';
	out->l.ofd = out->kind == LB_LOCK_OFD;
	/* an OFD lock's PID is -1: it belongs to an open file, not a process */
	out->l.pid = word_num(pidw, plen, INT_MAX, &pid) == 0 ? (pid_t)pid : 0;
	return 1;
}

int lb_lockline_any(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockline *out, int *seen)
{
	dev_t d;
	ino_t i;
	int r = lb_lockline_parse(line, end, &d, &i, out);

	if (r == 0 || d != dev || i != ino)
		return 0;
	*seen = 1;
	return r == 1;
}

int lb_lockline_held(const char *line, const char *end, dev_t dev, ino_t ino,
    struct lb_lockinfo *l, int *seen)
{
	struct lb_lockline x;

	if (!lb_lockline_any(line, end, dev, ino, &x, seen) || x.blocked ||
	    x.kind == LB_LOCK_FLOCK)
		return 0;
	*l = x.l;
	return 1;
}

int lb_lockline_file(const char *line, const char *end, dev_t *dev, ino_t *ino)
{
	const char *at = line, *w;
	size_t len;
	int n;

	w = word(&at, end, &len);	/* "1:" */
	if (w != NULL && w[len - 1] == ':')
		w = word(&at, end, &len);
	if (word_is(w, len, "->"))
		w = word(&at, end, &len);	/* the kind */
	/* ADVISORY, the access, the PID, then MAJ:MIN:INO */
	for (n = 0; n < 4 && (w = word(&at, end, &len)) != NULL; n++)
		;
	return n == 4 ? word_file(w, len, dev, ino) : -1;
}

/* The processes that hold a lock on a file gone from its path (list and held say who). */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "holder.h"
#include "lockedfiles.h"
#include "lockformat.h"
#include "lockowners.h"
#include "lockprim.h"
#include "lockscan.h"
#include "procfs.h"

/* What is looked for in one process's descriptors, and whether it was found. */
struct deleted {
	dev_t dev;
	ino_t ino;
	const char *name;
};

static int is_deleted(pid_t pid, int fd, void *arg)
{
	const struct deleted *d = arg;
	char target[PATH_MAX + 16];
	struct stat st;

	return lb_procfs_fd_link(pid, fd, target, sizeof target) > 0 &&
	    strcmp(target, d->name) == 0 && lb_procfs_fd_stat(pid, fd, &st) == 0 &&
	    st.st_dev == d->dev && st.st_ino == d->ino;
}

/*
 * Whether process PID has a descriptor open on DEV/INO under the name
 * DELETED (a path, then " (deleted)").
 */
static int holds_deleted(pid_t pid, dev_t dev, ino_t ino, const char *deleted)
{
	struct deleted d = { dev, ino, deleted };

	return lb_procfs_each_fd(pid, is_deleted, &d) > 0;
}

/* A look for the processes of lb_scan_moved. */
struct moved {
	dev_t dev;		/* PATH's file system */
	ino_t now;		/* the file at PATH now; 0: none */
	const char *deleted;
	pid_t *pids;
	size_t max, *n;
};

static int moved_line(const char *line, const char *end, void *arg)
{
	struct moved *m = arg;
	struct lb_lockline x;
	dev_t dev;
	ino_t ino;
	size_t i;

	if (*m->n >= m->max)
		return 1;
	/* a lock on this file system, not on the file at the path now, named by its process */
	if (lb_lockline_parse(line, end, &dev, &ino, &x) != 1 || dev != m->dev ||
	    (m->now != 0 && ino == m->now))
		return 0;
	/* (a lockbox waiter's mark in the queue holds nothing) */
	if (x.blocked || x.l.pid <= 0 || x.l.lo >= (long long)LB_JOIN_OFF)
		return 0;
	for (i = 0; i < *m->n && m->pids[i] != x.l.pid; i++)
		;
	if (i == *m->n && holds_deleted(x.l.pid, dev, ino, m->deleted))
		m->pids[(*m->n)++] = x.l.pid;
	return 0;
}

int lb_scan_moved(const char *path, pid_t *pids, size_t max, size_t *n)
{
	char *abs = NULL, *dir, *deleted = NULL;
	const char *base;
	struct stat now, ds;
	struct lb_locktab *t;
	struct moved m;

	*n = 0;
	base = strrchr(path, '/');
	dir = base != NULL ? strndup(path, (size_t)(base - path)) : strdup(".");
	base = base != NULL ? base + 1 : path;
	if (dir == NULL)
		return -1;
	if (dir[0] == '\0') {
		free(dir);
		dir = strdup("/");
	}
	abs = dir != NULL ? realpath(dir, NULL) : NULL;
	/* a directory gone or not ours to look in: nothing to say */
	if (abs == NULL || stat(abs, &ds) != 0 ||
	    asprintf(&deleted, "%s/%s (deleted)", strcmp(abs, "/") == 0 ? "" : abs, base) < 0) {
		free(dir);
		free(abs);
		return 0;
	}
	free(dir);
	free(abs);
	m = (struct moved){ ds.st_dev, stat(path, &now) == 0 ? now.st_ino : 0, deleted, pids,
	    max, n };
	t = lb_locktab_get();
	if (t != NULL)
		lb_locktab_each_line(t, moved_line, &m);
	lb_locktab_done(t);
	free(deleted);
	return 0;
}

/* ---- every lock on the host ---- */

/* The view being made, and the last lock held (the blocker of the waits after it). */
struct making {
	struct lb_host_view *hv;
	size_t cap;
	struct lb_file_id *ids;		/* each lock's file */
	ssize_t *waits_for;		/* a request's: the lock before it that it waits for */
	ssize_t last_held;
	int oom;
};

static int by_id(const void *a, const void *b)
{
	const struct lb_file_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

static int add_line(const char *line, const char *end, void *arg)
{
	struct making *m = arg;
	struct lb_host_lock *grown;
	struct lb_file_id *ids;
	ssize_t *waits;
	struct lb_lockline x;
	dev_t dev;
	ino_t ino;

	if (lb_lockline_parse(line, end, &dev, &ino, &x) != 1)
		return 0;	/* a lease, or what a later kernel adds */
	if (m->hv->nlocks == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		grown = realloc(m->hv->locks, m->cap * sizeof *grown);
		ids = realloc(m->ids, m->cap * sizeof *ids);
		waits = realloc(m->waits_for, m->cap * sizeof *waits);
		if (grown != NULL)
			m->hv->locks = grown;
		if (ids != NULL)
			m->ids = ids;
		if (waits != NULL)
			m->waits_for = waits;
		if (grown == NULL || ids == NULL || waits == NULL) {
			m->oom = 1;
			return 1;
		}
	}
	/* a request that waits comes right after the lock it waits for */
	if (!x.blocked)
		m->last_held = (ssize_t)m->hv->nlocks;
	m->ids[m->hv->nlocks] = (struct lb_file_id){ dev, ino };
	m->waits_for[m->hv->nlocks] = x.blocked ? m->last_held : -1;
	m->hv->locks[m->hv->nlocks++] = (struct lb_host_lock){ .x = x, .pid = x.l.pid };
	return 0;
}

/* Whether process PID has gone (a flock(2) lock's taker): the walk saw it, or the kernel says. */
static int process_gone(pid_t pid)
{
	int gone = lb_lookup_gone(pid);

	if (gone >= 0)
		return gone;
	return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/*
 * Whether file F may be a lockbox lock file, to be looked at as one: a
 * regular file at its path, that this user may read, with an fcntl lock
 * on it (lockbox's locks, or another program's on a lock file: flock(2)
 * alone is what other programs take on theirs). Its magic is read when
 * it is read as one (lb_host_lockfile); why it cannot be looked at in
 * F->err.
 */
static void look_at(struct lb_host_file *f, const struct stat *st, int shaped)
{
	if (!shaped || f->path == NULL || f->deleted || !S_ISREG(st->st_mode))
		return;
	if (access(f->path, R_OK) != 0)
		f->err = errno;
	else
		f->lockbox = 1;
}

/* Whether lock X may be on a lockbox lock file: an fcntl lock. */
static int lockbox_shaped(const struct lb_lockline *x)
{
	return x->kind != LB_LOCK_FLOCK;
}

/* The processes of the locks of file FI that name none (see lb_scan_host). */
static void find_holders(struct lb_host_view *hv, size_t fi, const struct lb_file_id *id, size_t i)
{
	struct lb_host_lock *l = &hv->locks[i];

	if (l->file != fi || l->x.blocked)
		return;
	if (l->x.kind == LB_LOCK_FLOCK && process_gone(l->x.l.pid)) {
		l->taker_gone = 1;
		lb_lookup_holders(id->dev, id->ino, &l->x, 1, l->x.l.pid, &l->pid);
	} else if (l->pid == 0) {
		lb_lookup_holders(id->dev, id->ino, &l->x, 1, 0, &l->pid);
	}
}

void lb_host_find_holders(struct lb_host_view *hv, size_t fi)
{
	struct lb_file_id id = { hv->files[fi].dev, hv->files[fi].ino };
	size_t i;

	for (i = 0; i < hv->nlocks; i++)
		find_holders(hv, fi, &id, i);
}

int lb_scan_host(struct lb_host_view *hv, int64_t deadline)
{
	struct making m = { .hv = hv, .last_held = -1 };
	struct lb_file_id *files = NULL;
	struct lb_file_seen seen;
	const struct lb_locktab *t;
	size_t i, k = 0;
	char *shaped = NULL;
	int saved;

	memset(hv, 0, sizeof *hv);
	t = lb_locktab_pin(deadline);
	if (t == NULL)
		return -1;
	hv->cut = t->cut;
	lb_locktab_each_line(t, add_line, &m);
	if (m.oom)
		goto fail;
	files = calloc(hv->nlocks ? hv->nlocks : 1, sizeof *files);
	if (files == NULL)
		goto fail;
	if (hv->nlocks > 0)
		memcpy(files, m.ids, hv->nlocks * sizeof *files);
	if (hv->nlocks > 1)
		qsort(files, hv->nlocks, sizeof *files, by_id);
	for (i = 0; i < hv->nlocks; i++)
		if (k == 0 || by_id(&files[k - 1], &files[i]) != 0)
			files[k++] = files[i];
	hv->files = calloc(k ? k : 1, sizeof *hv->files);
	if (hv->files == NULL)
		goto fail;
	hv->nfiles = k;
	if (lb_lookup_files(files, k) != 0)
		goto fail;
	hv->cut |= lb_lookup_short();
	shaped = calloc(k ? k : 1, 1);
	if (shaped == NULL)
		goto fail;
	for (i = 0; i < hv->nlocks; i++) {
		struct lb_host_lock *l = &hv->locks[i];
		struct lb_file_id *id = bsearch(&m.ids[i], files, k, sizeof *files, by_id);

		l->file = (size_t)(id - files);
		shaped[l->file] |= lockbox_shaped(&l->x);
	}
	for (i = 0; i < k; i++) {
		struct lb_host_file *f = &hv->files[i];

		*f = (struct lb_host_file){ .dev = files[i].dev, .ino = files[i].ino, .size = -1 };
		if (lb_lookup_file(f->dev, f->ino, &seen)) {
			f->path = seen.path;
			f->deleted = seen.deleted;
			if (S_ISREG(seen.st.st_mode))
				f->size = (long long)seen.st.st_size;
			look_at(f, &seen.st, shaped[i]);
		}
	}
	/* a lockbox lock file's holders are its records': looked up only if it is shown otherwise */
	for (i = 0; i < hv->nlocks; i++)
		if (!hv->files[hv->locks[i].file].lockbox)
			find_holders(hv, hv->locks[i].file, &files[hv->locks[i].file], i);
	/* a request's blocker: the holder of the lock it waits for */
	for (i = 0; i < hv->nlocks; i++)
		if (m.waits_for[i] >= 0)
			hv->locks[i].blocker = hv->locks[m.waits_for[i]].pid;
	free(files);
	free(shaped);
	free(m.ids);
	free(m.waits_for);
	return 0;
fail:
	saved = errno;
	free(files);
	free(shaped);
	free(m.ids);
	free(m.waits_for);
	lb_host_view_free(hv);
	errno = saved;
	return -1;
}

void lb_host_view_free(struct lb_host_view *hv)
{
	free(hv->files);
	free(hv->locks);
	memset(hv, 0, sizeof *hv);
}

long long lb_slot_byte(unsigned slot)
{
	return (long long)lb_slot_offset(slot);
}

/* ---- a lockbox lock file's holders, from the view ---- */

/* One lockbox lock file being described: its lines, and its records. */
struct lf {
	struct lb_host_view *hv;
	size_t fi;
	const size_t *locks;
	size_t n;
	int fd;
	int trusted;		/* the records were read under the lookers' lock */
	unsigned char *buf;	/* the header and the records read */
	size_t len;
	struct lb_lockinfo *fgn;	/* another program's locks */
	size_t nfgn;
};

/* tries for the lookers' lock while a writer has the header (microseconds) */
#define LOOK_TRIES	64
/* the slot bytes: after the header, before the queue */
#define SLOTS_END	lb_slot_offset(LB_SLOT_LIMIT + 1)

static uint32_t rec_state(const struct lf *f, unsigned slot)
{
	size_t at = (size_t)lb_slot_offset(slot);

	return at + LB_REC_SIZE > f->len ? LB_REC_FREE : lb_record_state(f->buf + at);
}

/* The slot whose lock byte alone L locks, or 0. */
static unsigned slot_of(const struct lb_lockinfo *l)
{
	if (l->lo < LB_HDR_SIZE || l->hi != l->lo || l->lo >= (long long)SLOTS_END ||
	    (l->lo - LB_HDR_SIZE) % LB_REC_SIZE != 0)
		return 0;
	return (unsigned)((l->lo - LB_HDR_SIZE) / LB_REC_SIZE) + 1;
}

/* The process of lock I of the view, looked up once (its file's openers' lock lists). */
static pid_t holder(struct lf *f, size_t i)
{
	struct lb_host_lock *l = &f->hv->locks[i];
	const struct lb_host_file *file = &f->hv->files[f->fi];

	if (l->pid == 0)
		lb_lookup_holders(file->dev, file->ino, &l->x, 1, 0, &l->pid);
	return l->pid;
}

static int add_foreign(struct lf *f, const struct lb_lockinfo *l)
{
	struct lb_lockinfo *grown = realloc(f->fgn, (f->nfgn + 1) * sizeof *grown);

	if (grown == NULL)
		return -1;
	f->fgn = grown;
	f->fgn[f->nfgn++] = *l;
	return 0;
}

/*
 * Open F's file and read its header and records up to its highest held
 * slot, under the lookers' read lock when it can be had at once (a
 * writer holds the header for microseconds; one that nobody gets
 * through is read past, as list does). 0, or 1: it is no lockbox lock file now, or cannot be read.
 */
static int read_records(struct lf *f)
{
	struct lb_host_file *file = &f->hv->files[f->fi];
	unsigned high = 0, s;
	struct stat st;
	ssize_t r;
	size_t i;
	int tries;

	f->fd = open(file->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (f->fd < 0) {
		file->err = errno;
		return 1;
	}
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != file->dev ||
	    st.st_ino != file->ino)
		return 1;	/* replaced at its path since the table was read */
	for (i = 0; i < f->n; i++) {
		s = slot_of(&f->hv->locks[f->locks[i]].x.l);
		high = s > high ? s : high;
	}
	f->len = (size_t)lb_slot_offset(high + 1);
	f->buf = malloc(f->len);
	if (f->buf == NULL)
		return 1;
	for (tries = 0; tries < LOOK_TRIES && !f->trusted; tries++)
		if ((f->trusted = lb_lock_try(f->fd, F_RDLCK, 0, LB_HDR_LOOK_LEN) == 1) == 0)
			sched_yield();
	do
		r = pread(f->fd, f->buf, f->len, 0);
	while (r < 0 && errno == EINTR);
	if (f->trusted)
		lb_lock_try(f->fd, F_UNLCK, 0, LB_HDR_LOOK_LEN);
	if (r < LB_MAGIC_LEN || memcmp(f->buf, LB_MAGIC, LB_MAGIC_LEN) != 0)
		return 1;
	f->len = (size_t)r;
	return 0;
}

/*
 * A held lock of the file, sorted as list sorts them: a slot held with a
 * record is its holder's (in HELD); another program's is in f->fgn.
 * What lockbox locks for a moment (the header, a waiter's look at a
 * slot) is neither.
 */
static int sort_lock(struct lf *f, size_t i, struct lb_slotset *held)
{
	struct lb_host_lock *l = &f->hv->locks[f->locks[i]];
	struct lb_lockinfo c, one = l->x.l;
	unsigned s = slot_of(&one);

	if (s != 0 && one.write && (!f->trusted || rec_state(f, s) == LB_REC_HELD))
		return lb_slotset_add(held, s);
	/*
	 * A write lock on a slot without a record is another program's (a
	 * slot is locked and its record written under one header lock), if
	 * it is still held: the table was read before the records.
	 */
	if (s != 0 && one.write && lb_lock_conflict(f->fd, F_RDLCK, (off_t)one.lo, 1, &c) != 1)
		return 0;
	/* what lockbox holds for a moment: the header, to write or look */
	if (s == 0 && lb_lock_is_lockbox(&one))
		return 0;
	one.pid = holder(f, f->locks[i]);
	/* a read lock on a slot's byte: a lockbox waiter's look, or another program's */
	if (s != 0 && !one.write && one.pid > 0 && lb_procfs_runs_self(one.pid))
		return 0;
	return add_foreign(f, &one);
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct lb_lockinfo *)a)->pid, y = ((const struct lb_lockinfo *)b)->pid;

	return (x > y) - (x < y);
}

/* Whether another program's lock L covers the byte of slot S. */
static int covers(const struct lb_lockinfo *l, unsigned s)
{
	long long at = (long long)lb_slot_offset(s);

	return l->lo <= at && (l->hi < 0 || at <= l->hi);
}

/* A holder of slot S, from its record: as list describes one (filepool.c). */
static void slot_holder(struct lf *f, unsigned s, struct lb_holder *h)
{
	const unsigned char *rec = f->buf + lb_slot_offset(s);

	h->slot = s;
	h->known = rec_state(f, s) == LB_REC_HELD;
	if (!h->known)
		return;
	lb_record_decode(rec, &h->who);
	h->shared = lb_record_shared(rec);
	if (!lb_ident_ended(&h->who))
		return;
#ifdef HAVE_OFD_LOCKS
	{
		/* exited, while the slot is held: by a process that inherited its open file */
		struct lb_lockline x = { { (long long)lb_slot_offset(s), (long long)lb_slot_offset(s),
		    0, 1, 1 }, LB_LOCK_OFD, 0 };
		const struct lb_host_file *file = &f->hv->files[f->fi];

		lb_lookup_holders(file->dev, file->ino, &x, 1, 0, &h->keeper);
		h->gone = 1;
	}
#endif
}

int lb_host_lockfile(struct lb_host_view *hv, size_t fi, const size_t *locks, size_t n,
    struct lb_holders *h, struct lb_holders *w)
{
	struct lf f = { .hv = hv, .fi = fi, .locks = locks, .n = n, .fd = -1 };
	struct lb_slotset held = { NULL, 0, 0 };
	struct lb_queued *q = NULL;
	size_t i, j, k, nq = 0;
	int rc = 1;

	h->v = w->v = NULL;
	h->n = w->n = 0;
	if (read_records(&f) != 0)
		goto out;
	rc = -1;
	for (i = 0; i < n; i++) {
		const struct lb_host_lock *l = &hv->locks[locks[i]];

		if (l->x.blocked || l->x.l.lo >= (long long)LB_JOIN_OFF)
			continue;	/* a waiter's request; the queue's, below */
		if (l->x.kind != LB_LOCK_FLOCK && sort_lock(&f, i, &held) != 0)
			goto out;
	}
	lb_slotset_sort(&held);
	/*
	 * Another program's flock(2) locks, on the whole file. A lockbox
	 * holder's own (beside its slot) names its process as its record
	 * does; one whose taker is gone was taken by a helper (acquire --fd)
	 * for its caller, whose record names it.
	 */
	for (i = 0; i < n; i++) {
		const struct lb_host_lock *l = &hv->locks[locks[i]];
		struct lb_lockinfo one = l->x.l;
		int ours = l->x.kind != LB_LOCK_FLOCK || l->x.blocked || one.pid <= 0 || l->taker_gone ||
		    process_gone(one.pid);

		for (j = 0; !ours && j < held.n; j++)
			ours = rec_state(&f, held.v[j]) == LB_REC_HELD &&
			    lb_record_pid(f.buf + lb_slot_offset(held.v[j])) == one.pid;
		if (!ours && add_foreign(&f, &one) != 0)
			goto out;
	}
	/* the slots another program locks are its own; its locks, one a process */
	for (i = k = 0; i < held.n; i++) {
		for (j = 0; j < f.nfgn && !covers(&f.fgn[j], held.v[i]); j++)
			;
		if (j == f.nfgn)
			held.v[k++] = held.v[i];
	}
	held.n = k;
	if (f.nfgn > 1)
		qsort(f.fgn, f.nfgn, sizeof *f.fgn, by_pid);
	for (i = k = 0; i < f.nfgn; i++) {
		struct lb_lockinfo *m = k > 0 ? &f.fgn[k - 1] : NULL;

		if (m == NULL || f.fgn[i].pid == 0 || m->pid != f.fgn[i].pid) {
			f.fgn[k++] = f.fgn[i];
			continue;
		}
		m->write |= f.fgn[i].write;
		m->lo = f.fgn[i].lo < m->lo ? f.fgn[i].lo : m->lo;
		m->hi = m->hi < 0 || f.fgn[i].hi < 0 ? -1 : f.fgn[i].hi > m->hi ? f.fgn[i].hi : m->hi;
	}
	f.nfgn = k;
	h->v = calloc(held.n + f.nfgn + 1, sizeof *h->v);
	if (h->v == NULL || lb_scan_queue(f.fd, &q, &nq) != 0)
		goto out;
	for (i = 0; i < held.n; i++)
		slot_holder(&f, held.v[i], &h->v[h->n++]);
	for (i = 0; i < f.nfgn; i++) {
		struct lb_holder *x = &h->v[h->n++];

		x->slot = slot_of(&f.fgn[i]);
		x->foreign = 1;
		x->foreign_write = f.fgn[i].write;
		x->lock_lo = f.fgn[i].lo;
		x->lock_hi = f.fgn[i].hi;
		if (f.fgn[i].pid > 0)
			lb_ident_fill(&x->who, f.fgn[i].pid, NULL, 0);
	}
	/* the waiters in queue order, then another program's locks in the queue */
	w->v = calloc(nq + 1, sizeof *w->v);
	if (w->v == NULL)
		goto out;
	for (i = 0; i < nq; i++) {
		struct lb_holder *x = &w->v[w->n++];

		if (q[i].foreign) {
			x->foreign = x->in_queue = 1;
			x->foreign_write = q[i].l.write;
			x->lock_lo = q[i].l.lo;
			x->lock_hi = q[i].l.hi;
			if (q[i].pid > 0)
				lb_ident_fill(&x->who, q[i].pid, NULL, 0);
			continue;
		}
		x->waiting = 1;
		x->queue = (unsigned)w->n;
		x->shared = q[i].shared;
		x->known = q[i].pid > 0 && lb_ident_of_waiter(&x->who, q[i].pid, &x->stopped) == 0;
	}
	rc = 0;
out:
	if (rc != 0) {
		free(h->v);
		free(w->v);
		h->v = w->v = NULL;
		h->n = w->n = 0;
	}
	if (f.fd >= 0)
		close(f.fd);
	free(f.buf);
	free(f.fgn);
	free(q);
	lb_slotset_free(&held);
	return rc;
}

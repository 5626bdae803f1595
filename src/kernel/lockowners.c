/* Who holds a lock: bounded walks of /proc, their answers kept for the run. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "lockowners.h"

/* descriptors looked at, at most, in one walk (a bound besides the deadline) */
#define LOOKUP_FDS_MAX	(1 << 20)
/*
 * processes a person's look at the host (lb_lookup_begin's HOST) looks
 * at before its deadline may end a walk: a host of ordinary size is
 * looked at whole, however busy (a few milliseconds of work); only a
 * bigger one's walk is cut at its deadline
 */
#define LOOKUP_PROCS_MIN	256
/*
 * processes any other walk looks at before its budget may end it, the
 * newest first (a holder started a moment ago, as a script's flock(1)
 * is, is found on a busy host too): a fixed cost, whatever the host holds
 */
#define LOOKUP_HOT_MIN		64

/* A lock a process holds through one of its descriptors, as its fdinfo lists it. */
struct found {
	dev_t dev;
	ino_t ino;
	struct lb_lockline x;
	pid_t pid;		/* -1: it let go of it since */
	int fd;			/* through this descriptor of its */
	unsigned walk;		/* found by this walk of the run */
};

/* A lock looked for, found or not: not looked for again in the run. */
struct looked {
	dev_t dev;
	ino_t ino;
	struct lb_lockline x;
};

/* A file of lb_lookup_files, and what a descriptor open on it showed. */
struct file {
	dev_t dev;
	ino_t ino;
	char *path;
	int deleted;
	int seen;
	struct stat st;
	int read;		/* its openers' lock lists have been read */
};

/* A descriptor open on a file of lb_lookup_files: its locks are read when asked for. */
struct opener {
	dev_t dev;
	ino_t ino;
	pid_t pid;
	int fd;
};

static struct {
	int active;		/* between lb_lookup_begin and lb_lookup_end */
	int host;		/* a person's look at the host: walks up to the deadline */
	int64_t deadline;
	int64_t spent;		/* not HOST: time the run's walks have taken */
	int shortened;		/* a walk stopped at the deadline */
	int all;		/* lb_lookup_files has walked: no walk after it */
	struct found *found;
	size_t nfound, capfound;
	struct looked *looked;
	size_t nlooked, caplooked;
	struct file *files;
	size_t nfiles;
	struct opener *openers;
	size_t nopeners, capopeners;
	pid_t *pids;		/* the processes lb_lookup_files's walk saw, sorted */
	size_t npids, cappids;
	pid_t self;
	unsigned walks;		/* walks made */
} run;

void lb_lookup_begin(int64_t deadline, int host)
{
	lb_lookup_end();
	run.active = 1;
	run.deadline = deadline;
	run.host = host;
}

int lb_lookup_active(void)
{
	return run.active;
}

void lb_lookup_end(void)
{
	size_t i;

	for (i = 0; i < run.nfiles; i++)
		free(run.files[i].path);
	free(run.files);
	free(run.found);
	free(run.looked);
	free(run.openers);
	free(run.pids);
	memset(&run, 0, sizeof run);
}

int lb_lookup_short(void)
{
	return run.shortened;
}

/*
 * How a lock is told, as lb_lookup_holders says: kind, access and bytes;
 * for a flock(2) lock, the process that took it. Then the holder's PID.
 */
static int cmp_lock(dev_t da, ino_t ia, const struct lb_lockline *a,
    dev_t db, ino_t ib, const struct lb_lockline *b)
{
	long long pa = a->kind == LB_LOCK_FLOCK ? a->l.pid : 0;
	long long pb = b->kind == LB_LOCK_FLOCK ? b->l.pid : 0;

	if (da != db)
		return da < db ? -1 : 1;
	if (ia != ib)
		return ia < ib ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->l.write != b->l.write)
		return a->l.write < b->l.write ? -1 : 1;
	if (a->l.lo != b->l.lo)
		return a->l.lo < b->l.lo ? -1 : 1;
	if (a->l.hi != b->l.hi)
		return a->l.hi < b->l.hi ? -1 : 1;
	return (pa > pb) - (pa < pb);
}

static int by_found(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	int c = cmp_lock(x->dev, x->ino, &x->x, y->dev, y->ino, &y->x);

	return c != 0 ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* The first found lock that is X (in run.found, sorted), or run.nfound. */
static size_t first_found(dev_t dev, ino_t ino, const struct lb_lockline *x)
{
	size_t lo = 0, hi = run.nfound, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cmp_lock(run.found[mid].dev, run.found[mid].ino, &run.found[mid].x,
		    dev, ino, x) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int same_lock(const struct lb_lockline *x, void *arg)
{
	const struct found *f = arg;

	return cmp_lock(f->dev, f->ino, x, f->dev, f->ino, &f->x) == 0;
}

/*
 * The holder found of lock X, not SKIP: its PID; 0 when none was found;
 * -1 when those found by an earlier walk have let go of it since (a run
 * that waits outlives its holders: each answer kept is checked, one
 * read of the holder's fdinfo, unless the whole host was looked at
 * once, lb_lookup_files).
 */
static pid_t holder_of(dev_t dev, ino_t ino, const struct lb_lockline *x, pid_t skip)
{
	size_t i = first_found(dev, ino, x);
	int stale = 0;

	for (; i < run.nfound && cmp_lock(run.found[i].dev, run.found[i].ino, &run.found[i].x,
	    dev, ino, x) == 0; i++) {
		struct found *f = &run.found[i];

		if (f->pid <= 0 || f->pid == skip)
			continue;
		if (run.all || f->walk == run.walks ||
		    lb_procfs_each_fd_lock(f->pid, f->fd, dev, ino, same_lock, f) > 0)
			return f->pid;
		f->pid = -1;
		stale = 1;
	}
	return stale ? -1 : 0;
}

/* Forget that X was looked for: its holders have gone, another may hold it now. */
static void unlook(dev_t dev, ino_t ino, const struct lb_lockline *x)
{
	size_t i;

	for (i = 0; i < run.nlooked; i++)
		if (cmp_lock(run.looked[i].dev, run.looked[i].ino, &run.looked[i].x, dev, ino, x) == 0)
			run.looked[i--] = run.looked[--run.nlooked];
}

static int was_looked(dev_t dev, ino_t ino, const struct lb_lockline *x)
{
	size_t i;

	for (i = 0; i < run.nlooked; i++)
		if (cmp_lock(run.looked[i].dev, run.looked[i].ino, &run.looked[i].x, dev, ino, x) == 0)
			return 1;
	return 0;
}

static void add_looked(dev_t dev, ino_t ino, const struct lb_lockline *x)
{
	struct looked *grown;

	if (run.nlooked == run.caplooked) {
		size_t cap = run.caplooked ? 2 * run.caplooked : 16;

		grown = realloc(run.looked, cap * sizeof *grown);
		if (grown == NULL)
			return;	/* looked for again, then: the cost, not the answer */
		run.looked = grown;
		run.caplooked = cap;
	}
	run.looked[run.nlooked++] = (struct looked){ dev, ino, *x };
}

/* ---- the walk ---- */

/* What a walk looks for, and how far it has got. */
struct walk {
	const struct file *files;	/* sorted; NULL: the one file DEV/INO */
	size_t nfiles;
	dev_t dev;
	ino_t ino;
	int paths;			/* find each file's path */
	/* a walk for one file ends once every lock of V has a holder but SKIP */
	const struct lb_lockline *v;
	int flock;			/* or once a flock(2) lock of it is found */
	size_t n;
	pid_t skip;
	char *got;			/* which of V have a holder now */
	size_t ngot;
	size_t fds;			/* descriptors looked at */
	size_t procs;			/* processes looked at */
	int64_t deadline;		/* after LOOKUP_PROCS_MIN of them */
	int oom;
	/* the descriptor being looked at */
	pid_t pid;
	int fd;
	dev_t fdev;
	ino_t fino;
};

/* V (*CAP elements of SIZE), with room for one more after N: V or a new one, NULL out of memory. */
static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
	size_t want = *cap ? 2 * *cap : 64;

	if (n < *cap)
		return v;
	v = realloc(v, want * size);
	if (v != NULL)
		*cap = want;
	return v;
}

static int add_found(const struct lb_lockline *x, void *arg)
{
	struct walk *w = arg;
	struct found *v = grow(run.found, &run.capfound, run.nfound, sizeof *v);
	size_t i;

	if (v == NULL) {
		w->oom = 1;
		return 1;
	}
	run.found = v;
	run.found[run.nfound++] = (struct found){ w->fdev, w->fino, *x, w->pid, w->fd, run.walks };
	if (w->flock && x->kind == LB_LOCK_FLOCK && !x->blocked)
		w->ngot = 1;
	for (i = 0; w->got != NULL && w->pid != w->skip && i < w->n; i++)
		if (!w->got[i] && cmp_lock(w->fdev, w->fino, x, w->dev, w->ino, &w->v[i]) == 0) {
			w->got[i] = 1;
			w->ngot++;
		}
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static int by_file(const void *a, const void *b)
{
	const struct file *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

/*
 * The path of descriptor FD of PID, open on the file ST. A descriptor
 * opened under a name since removed (a lock file lockbox made under a
 * temporary name, then linked under its own) shows that name: the file
 * is then looked for in that directory, by its inode; not found there,
 * the name is kept, and *DELETED set.
 */
static char *fd_path(pid_t pid, int fd, const struct stat *st, int *deleted)
{
	char buf[PATH_MAX], *slash, *found = NULL;
	ssize_t r = lb_procfs_fd_link(pid, fd, buf, sizeof buf);
	struct dirent *e;
	struct stat es;
	size_t len;
	DIR *d;

	*deleted = 0;
	if (r <= 0 || buf[0] != '/')
		return NULL;
	len = (size_t)r;
	if (len <= 10 || strcmp(buf + len - 10, " (deleted)") != 0)
		return strdup(buf);
	buf[len - 10] = '\0';
	slash = strrchr(buf, '/');
	*slash = '\0';
	d = opendir(slash == buf ? "/" : buf);
	while (d != NULL && found == NULL && (e = readdir(d)) != NULL)
		if (e->d_ino == st->st_ino && fstatat(dirfd(d), e->d_name, &es, AT_SYMLINK_NOFOLLOW) == 0 &&
		    es.st_dev == st->st_dev && es.st_ino == st->st_ino &&
		    asprintf(&found, "%s/%s", slash == buf ? "" : buf, e->d_name) < 0)
			found = NULL;
	if (d != NULL)
		closedir(d);
	if (found != NULL)
		return found;
	*slash = '/';
	*deleted = 1;
	return strdup(buf);
}

/*
 * A descriptor of PID open on a file of lb_lookup_files: its locks are
 * read when one of the file's is asked about (most of a host's locked
 * files are lockbox lock files, whose holders the records name).
 */
static int add_opener(struct walk *w, pid_t pid, int fd, const struct stat *st)
{
	struct opener *v = grow(run.openers, &run.capopeners, run.nopeners, sizeof *v);

	if (v == NULL) {
		w->oom = 1;
		return 1;
	}
	run.openers = v;
	run.openers[run.nopeners++] = (struct opener){ st->st_dev, st->st_ino, pid, fd };
	return 0;
}

static int walk_fd(pid_t pid, int fd, void *arg)
{
	struct walk *w = arg;
	struct stat st;
	struct file key, *f = NULL;

	if (w->fds++ >= LOOKUP_FDS_MAX)
		return 1;
	if (lb_procfs_fd_stat(pid, fd, &st) != 0)
		return 0;	/* closed meanwhile, or not ours to see */
	if (w->files != NULL) {
		key.dev = st.st_dev;
		key.ino = st.st_ino;
		f = bsearch(&key, w->files, w->nfiles, sizeof *w->files, by_file);
		if (f == NULL)
			return 0;
	} else if (st.st_dev != w->dev || st.st_ino != w->ino) {
		return 0;
	}
	if (f != NULL && !f->seen) {
		f->seen = 1;
		f->st = st;
	}
	if (f != NULL && w->paths && f->path == NULL)
		f->path = fd_path(pid, fd, &st, &f->deleted);
	if (f != NULL)
		return add_opener(w, pid, fd, &st);
	w->pid = pid;
	w->fd = fd;
	w->fdev = st.st_dev;
	w->fino = st.st_ino;
	/* gone meanwhile: nothing held through it */
	lb_procfs_each_fd_lock(pid, fd, st.st_dev, st.st_ino, add_found, w);
	return w->oom;
}

static int walk_process(pid_t pid, void *arg)
{
	struct walk *w = arg;
	pid_t *grown;

	if (w->files != NULL) {
		if (run.npids == run.cappids) {
			run.cappids = run.cappids ? 2 * run.cappids : 256;
			grown = realloc(run.pids, run.cappids * sizeof *grown);
			if (grown == NULL) {
				w->oom = 1;
				return 1;
			}
			run.pids = grown;
		}
		run.pids[run.npids++] = pid;
	}
	if (pid == run.self)
		return 0;
	if (w->procs >= (run.host ? LOOKUP_PROCS_MIN : LOOKUP_HOT_MIN) && w->deadline != 0 &&
	    lb_remaining(w->deadline) == 0)
		return LB_PROCFS_SHORT;
	w->procs++;
	/* gone, or another user's: nothing to see */
	lb_procfs_each_fd(pid, walk_fd, w);
	if (w->oom || w->fds >= LOOKUP_FDS_MAX)
		return 1;
	return w->files == NULL && (w->n > 0 || w->flock) && w->ngot == (w->flock ? 1 : w->n);
}

/*
 * One walk of /proc for W; the found locks sorted after it. A person's
 * look walks up to the run's deadline; any other, for what is left of
 * LB_LOOKUP_BUDGET.
 */
static void walk(struct walk *w)
{
	int64_t start = lb_now(CLOCK_MONOTONIC);

	run.self = getpid();
	run.walks++;
	w->deadline = run.host ? run.deadline : start + LB_LOOKUP_BUDGET - run.spent;
	if (!run.host && run.spent >= LB_LOOKUP_BUDGET) {
		run.shortened = 1;
		return;
	}
	if (lb_procfs_each_process(1, walk_process, w) == LB_PROCFS_SHORT)
		run.shortened = 1;
	if (!run.host)
		run.spent += lb_now(CLOCK_MONOTONIC) - start;
	if (run.nfound > 1)
		qsort(run.found, run.nfound, sizeof *run.found, by_found);
}

static int by_opener(const void *a, const void *b)
{
	const struct opener *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

/* The locks held through the descriptors lb_lookup_files found open on DEV/INO, read once. */
static void read_openers(dev_t dev, ino_t ino)
{
	struct file key = { .dev = dev, .ino = ino }, *f;
	struct opener okey = { dev, ino, 0, 0 };
	struct walk w = { .dev = dev, .ino = ino };
	size_t lo = 0, hi = run.nopeners, mid;

	f = run.nfiles > 0 ? bsearch(&key, run.files, run.nfiles, sizeof *run.files, by_file) : NULL;
	if (f == NULL || f->read)
		return;
	f->read = 1;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (by_opener(&run.openers[mid], &okey) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < run.nopeners && by_opener(&run.openers[lo], &okey) == 0 && !w.oom; lo++) {
		w.pid = run.openers[lo].pid;
		w.fd = run.openers[lo].fd;
		w.fdev = dev;
		w.fino = ino;
		/* closed, or gone, meanwhile: nothing held through it */
		lb_procfs_each_fd_lock(w.pid, run.openers[lo].fd, dev, ino, add_found, &w);
	}
	if (run.nfound > 1)
		qsort(run.found, run.nfound, sizeof *run.found, by_found);
}

void lb_lookup_holders(dev_t dev, ino_t ino, const struct lb_lockline *v, size_t n,
    pid_t skip, pid_t *pids)
{
	struct walk w = { .dev = dev, .ino = ino, .skip = skip };
	struct lb_lockline *want;
	size_t i, k = 0;

	if (run.all)
		read_openers(dev, ino);
	for (i = 0; i < n; i++)
		if ((pids[i] = holder_of(dev, ino, &v[i], skip)) < 0) {
			pids[i] = 0;
			unlook(dev, ino, &v[i]);
		}
	/* a walk only for those neither found nor looked for already */
	want = calloc(n ? n : 1, sizeof *want);
	if (want == NULL)
		return;
	for (i = 0; i < n; i++)
		if (pids[i] == 0 && !run.all && !was_looked(dev, ino, &v[i])) {
			want[k++] = v[i];
			add_looked(dev, ino, &v[i]);
		}
	w.got = calloc(k ? k : 1, 1);
	if (k > 0 && w.got != NULL) {
		w.v = want;
		w.n = k;
		walk(&w);
		for (i = 0; i < n; i++)
			if (pids[i] == 0 && (pids[i] = holder_of(dev, ino, &v[i], skip)) < 0)
				pids[i] = 0;
	}
	free(want);
	free(w.got);
	/* out of a run, nothing is kept: each lookup is its own */
	if (!run.active) {
		run.nfound = run.nlooked = 0;
		run.shortened = 0;
		run.spent = 0;
	}
}

/* A process holding a flock(2) lock of DEV/INO, as run.found shows it, or 0. */
static pid_t found_flock(dev_t dev, ino_t ino, struct lb_lockinfo *l)
{
	size_t i;

	for (i = 0; i < run.nfound; i++)
		if (run.found[i].dev == dev && run.found[i].ino == ino && run.found[i].pid > 0 &&
		    run.found[i].x.kind == LB_LOCK_FLOCK && !run.found[i].x.blocked) {
			*l = run.found[i].x.l;
			return run.found[i].pid;
		}
	return 0;
}

pid_t lb_lookup_flock(dev_t dev, ino_t ino, struct lb_lockinfo *l)
{
	struct walk w = { .dev = dev, .ino = ino, .flock = 1 };
	struct lb_lockline any = { .kind = LB_LOCK_FLOCK };
	pid_t pid = found_flock(dev, ino, l);

	/* (a lock of no process stands for "a flock(2) lock of the file" among those looked for) */
	if (pid == 0 && !run.all && !was_looked(dev, ino, &any)) {
		add_looked(dev, ino, &any);
		walk(&w);
		pid = found_flock(dev, ino, l);
	}
	if (!run.active) {
		run.nfound = run.nlooked = 0;
		run.shortened = 0;
		run.spent = 0;
	}
	return pid;
}

int lb_lookup_files(const struct lb_file_id *v, size_t n)
{
	struct walk w = { .paths = 1 };
	size_t i, k = 0;

	run.files = calloc(n ? n : 1, sizeof *run.files);
	if (run.files == NULL)
		return -1;
	for (i = 0; i < n; i++)
		run.files[i] = (struct file){ .dev = v[i].dev, .ino = v[i].ino };
	if (n > 1)
		qsort(run.files, n, sizeof *run.files, by_file);
	for (i = 0; i < n; i++)
		if (k == 0 || by_file(&run.files[k - 1], &run.files[i]) != 0)
			run.files[k++] = run.files[i];
	run.nfiles = k;
	w.files = run.files;
	w.nfiles = k;
	run.all = 1;
	if (k > 0)
		walk(&w);
	if (run.nopeners > 1)
		qsort(run.openers, run.nopeners, sizeof *run.openers, by_opener);
	if (run.npids > 1)
		qsort(run.pids, run.npids, sizeof *run.pids, by_pid);
	return w.oom ? -1 : 0;
}

int lb_lookup_gone(pid_t pid)
{
	if (!run.all || run.shortened || pid <= 0)
		return -1;
	return bsearch(&pid, run.pids, run.npids, sizeof *run.pids, by_pid) == NULL;
}

int lb_lookup_file(dev_t dev, ino_t ino, struct lb_file_seen *out)
{
	struct file key = { .dev = dev, .ino = ino }, *f;

	memset(out, 0, sizeof *out);
	f = run.nfiles > 0 ? bsearch(&key, run.files, run.nfiles, sizeof *run.files, by_file) : NULL;
	if (f == NULL || !f->seen)
		return 0;
	out->path = f->path;
	out->deleted = f->deleted;
	out->st = f->st;
	return 1;
}

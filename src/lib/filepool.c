/* SPDX-License-Identifier: ISC */
/*
 * The lock-file backend of a pool: slot scan, acquire, release, holders.
 *
 * The kernel's byte locks are the truth; holder records only describe them
 * and are trusted only for slots that are locked. Every acquisition happens
 * under the header's write lock, and a slot's lock is taken before its
 * record is written, so a record marked free always means an unlocked slot
 * (unless a foreign program locks bytes: that case is caught by the failed
 * claim and the full scan).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "lockfile.h"
#include "parse.h"
#include "backend.h"

/* a header lock is held for microseconds; this long means a stuck holder */
#define HEADER_WAIT	(5 * LB_NS_PER_S)
/* how long a claimed slot may stay blocked by a waiter's transient read lock */
#define CLAIM_WAIT	(100 * LB_NS_PER_MS)
/* holder probes (kill 0) per quick acquisition: cheap with many holders */
#define QUICK_PROBES	64
/* records per read in the quick path */
#define QUICK_CHUNK	64
/* watcher threads per waiter; past this a waiter also re-scans every 200ms */
#define WATCH_MAX	1024
#define WATCH_STACK	(64 * 1024)

struct filepool {
	struct lb_pool base;
	int fd;			/* -1: a missing file, seen read-only */
	int owned;		/* we opened the fd, so we close it */
	const char *name;	/* base.name */
	unsigned char *buf;	/* header and records as last read; zeros past that */
	size_t loaded;		/* bytes of buf read from the file */
	size_t cap;		/* bytes allocated for buf */
	unsigned nrec;		/* records in buf */
	unsigned *held;		/* last full scan: locked slots, ascending */
	size_t nheld, capheld;
};

#define BUF_SIZE ((size_t)LB_HDR_SIZE + (size_t)LB_SLOT_LIMIT * LB_REC_SIZE)

static const struct lb_pool_ops file_ops;

static struct lb_pool *pool_new(int fd, int owned, const char *name)
{
	struct filepool *p = calloc(1, sizeof *p);

	if (p == NULL) {
		lb_warn("%s", name);
		return NULL;
	}
	if (lb_pool_init(&p->base, &file_ops, name) != 0) {
		free(p);
		return NULL;
	}
	p->name = p->base.name;
	p->fd = fd;
	p->owned = owned;
	return &p->base;
}

static struct filepool *fp(struct lb_pool *pool)
{
	return (struct filepool *)pool;
}

struct lb_pool *lb_filepool_open(const char *path, int access, const struct lb_pool_opts *opts)
{
	struct lb_pool *p;
	int fd;

	(void)opts;
	fd = lb_lockfile_open(path, access == LB_POOL_WRITE);
	if (fd == -1)
		return NULL;
	p = pool_new(fd, 1, path);
	if (p == NULL && fd >= 0)
		close(fd);
	return p;
}

struct lb_pool *lb_filepool_from_fd(int fd, const char *name)
{
#ifndef HAVE_OFD_LOCKS
	/* a per-process lock taken by this helper would die with it */
	(void)fd;
	lb_warnx("%s: --fd needs open file description locks, which this build lacks", name);
	return NULL;
#else
	if (lb_lockfile_check_fd(fd, name, 1) != 0)
		return NULL;
	return pool_new(fd, 0, name);
#endif
}

static void file_close(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);

	if (p->owned && p->fd >= 0)
		close(p->fd);
	free(p->buf);
	free(p->held);
	free(p);
}

static int file_keep_on_exec(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);

	if (fcntl(p->fd, F_SETFD, 0) != 0) {
		lb_warn("%s", p->name);
		return -1;
	}
	return 0;
}

/* 1 locked, 0 the caller's deadline passed first, -1 error (reported) */
static int header_lock(struct filepool *p, short type, int64_t deadline)
{
	int64_t bound = lb_deadline_after(HEADER_WAIT);
	int64_t until = deadline != 0 && deadline < bound ? deadline : bound;
	int r = lb_lock_wait(p->fd, type, 0, LB_HDR_SIZE, until);

	if (r == 1)
		return 1;
	if (r < 0) {
		lb_warn("%s: cannot lock header", p->name);
		return -1;
	}
	if (until == deadline)
		return 0;
	lb_warnx("%s: header locked for %ds by a stuck process (stopped?); giving up",
	    p->name, (int)(HEADER_WAIT / LB_NS_PER_S));
	return -1;
}

static void header_unlock(struct filepool *p)
{
	lb_lock_try(p->fd, F_UNLCK, 0, LB_HDR_SIZE);
}

/* Room in buf for BYTES, the new part zeroed. */
static int reserve(struct filepool *p, size_t bytes)
{
	unsigned char *grown;

	if (bytes <= p->cap)
		return 0;
	grown = realloc(p->buf, bytes);
	if (grown == NULL) {
		lb_warn("%s", p->name);
		return -1;
	}
	memset(grown + p->cap, 0, bytes - p->cap);
	p->buf = grown;
	p->cap = bytes;
	return 0;
}

/* Read header and records; a partial last record reads as zeros (free). */
static int load(struct filepool *p, off_t size)
{
	size_t want = (size_t)size < BUF_SIZE ? (size_t)size : BUF_SIZE;
	ssize_t n;

	if (reserve(p, want > LB_HDR_SIZE ? want : LB_HDR_SIZE) != 0)
		return -1;
	do
		n = pread(p->fd, p->buf, want, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		lb_warn("%s", p->name);
		return -1;
	}
	if ((size_t)n < p->loaded)
		memset(p->buf + n, 0, p->loaded - (size_t)n);
	p->loaded = (size_t)n;
	p->nrec = (size_t)n <= LB_HDR_SIZE ? 0 :
	    (unsigned)(((size_t)n - LB_HDR_SIZE + LB_REC_SIZE - 1) / LB_REC_SIZE);
	return 0;
}

static unsigned char *record(struct filepool *p, unsigned slot)
{
	return p->buf + lb_slot_offset(slot);
}

static uint32_t state(struct filepool *p, unsigned slot)
{
	return slot > p->nrec ? LB_REC_FREE : lb_record_state(record(p, slot));
}

static int held_add(struct filepool *p, unsigned slot)
{
	if (p->nheld == p->capheld) {
		size_t cap = p->capheld ? 2 * p->capheld : 64;
		unsigned *v = realloc(p->held, cap * sizeof *v);

		if (v == NULL) {
			lb_warn("%s", p->name);
			return -1;
		}
		p->held = v;
		p->capheld = cap;
	}
	p->held[p->nheld++] = slot;
	return 0;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

static int is_held(const struct filepool *p, unsigned slot)
{
	return p->nheld != 0 &&
	    bsearch(&slot, p->held, p->nheld, sizeof *p->held, cmp_unsigned) != NULL;
}

/*
 * Find every locked slot. Testing slots one by one costs one kernel walk of
 * the file's lock list per slot, quadratic in the holders. Instead, test a
 * whole range for a write lock: the kernel names one conflicting lock, and
 * the ranges on either side of it are tested in turn. That is 2k+1 tests
 * for k holders, however far apart they sit. Testing for a *write* lock
 * makes waiters' transient read locks (see watch) invisible.
 */
static int scan_locked(struct filepool *p, int fd)
{
	struct range {
		off_t lo, hi;	/* hi 0: no end */
	} *stack = NULL, *grown;
	size_t depth = 0, cap = 0;
	int rc = -1;

	p->nheld = 0;
	for (;;) {
		struct flock c;
		off_t lo, hi, clo, chi;
		unsigned s;
		int r;

		if (depth + 2 > cap) {
			cap = cap ? 2 * cap : 64;
			grown = realloc(stack, cap * sizeof *stack);
			if (grown == NULL) {
				lb_warn("%s", p->name);
				goto out;
			}
			stack = grown;
		}
		if (depth == 0) {
			if (rc == 0)
				break;
			stack[depth++] = (struct range){ LB_HDR_SIZE, 0 };
			rc = 0;
		}
		lo = stack[--depth].lo;
		hi = stack[depth].hi;
		r = lb_lock_test(fd, F_RDLCK, lo, hi ? hi - lo : 0, &c);
		if (r < 0) {
			lb_warn("%s: cannot test locks", p->name);
			rc = -1;
			goto out;
		}
		if (r == 1)
			continue;
		clo = c.l_start > lo ? c.l_start : lo;
		chi = c.l_len == 0 ? hi : c.l_start + c.l_len;
		if (hi != 0 && (chi == 0 || chi > hi))
			chi = hi;
		/* every slot whose lock byte lies in [clo, chi) */
		s = (unsigned)((clo - LB_HDR_SIZE + LB_REC_SIZE - 1) / LB_REC_SIZE) + 1;
		for (; s <= LB_SLOT_LIMIT && (chi == 0 || lb_slot_offset(s) < chi); s++)
			if (held_add(p, s) != 0) {
				rc = -1;
				goto out;
			}
		if (clo > lo)
			stack[depth++] = (struct range){ lo, clo };
		if (chi != 0 && chi != hi)
			stack[depth++] = (struct range){ chi, hi };
	}
	if (p->nheld > 1)
		qsort(p->held, p->nheld, sizeof *p->held, cmp_unsigned);
out:
	free(stack);
	return rc;
}

/*
 * Lock a slot found free. A waiter's watcher may hold a read lock on it for
 * a few microseconds, so a refusal is retried briefly before counting the
 * slot as held.
 */
static int claim(struct filepool *p, unsigned slot)
{
	int r = lb_lock_try(p->fd, F_WRLCK, lb_slot_offset(slot), 1);

	if (r == 0)
		r = lb_lock_wait(p->fd, F_WRLCK, lb_slot_offset(slot), 1,
		    lb_deadline_after(CLAIM_WAIT));
	if (r < 0)
		lb_warn("%s: cannot lock slot %u", p->name, slot);
	return r;
}

/*
 * The cheap path, when the records alone prove a slot is free under MAX:
 * fewer records in use than MAX means fewer holders than MAX. Records are
 * streamed through a small buffer, so a big pool costs no big read. The
 * lowest free slot is preferred, reusing one whose holder is provably dead
 * (its lock confirmed free) over a never-used one, so slot numbers stay
 * small. Returns that slot, or 0 when only a full scan can tell; *high is
 * the highest slot with a record in use.
 */
static unsigned quick_pick(struct filepool *p, off_t size, unsigned max, unsigned *high)
{
	static unsigned char chunk[QUICK_CHUNK * LB_REC_SIZE];
	unsigned s = 1, used = 0, probes = 0, pick = 0, stale = 0, nrec;
	off_t off = LB_HDR_SIZE;
	struct lb_ident who;
	struct flock c;

	nrec = size <= LB_HDR_SIZE ? 0 :
	    (unsigned)((size - LB_HDR_SIZE + LB_REC_SIZE - 1) / LB_REC_SIZE);
	if (nrec > LB_SLOT_LIMIT)
		nrec = LB_SLOT_LIMIT;
	*high = 0;
	while (s <= nrec) {
		ssize_t n;
		size_t i;

		do
			n = pread(p->fd, chunk, sizeof chunk, off);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return 0;	/* the full path reads again and reports */
		if (n % LB_REC_SIZE != 0)	/* a cut last record reads as free */
			memset(chunk + n, 0, LB_REC_SIZE - (size_t)n % LB_REC_SIZE);
		off += n;
		for (i = 0; i < (size_t)n && s <= nrec; i += LB_REC_SIZE, s++) {
			uint32_t st = lb_record_state(chunk + i);

			if (st == LB_REC_FREE) {
				if (pick == 0 && s <= max)
					pick = s;
				continue;
			}
			used++;
			*high = s;
			if (pick != 0 || s > max || st != LB_REC_HELD ||
			    probes++ >= QUICK_PROBES)
				continue;
			lb_record_decode(chunk + i, &who);
			if (lb_ident_gone(&who) &&
			    lb_lock_test(p->fd, F_RDLCK, lb_slot_offset(s), 1, &c) == 1)
				pick = s, stale = 1;
		}
	}
	if (pick == 0 && nrec < max)
		pick = nrec + 1;
	return used - stale < max ? pick : 0;
}

static unsigned highest_used(struct filepool *p)
{
	unsigned s;

	for (s = p->nrec; s > 0; s--)
		if (state(p, s) != LB_REC_FREE)
			return s;
	return 0;
}

static int pwrite_all(struct filepool *p, const void *buf, size_t n, off_t off)
{
	ssize_t w;

	do
		w = pwrite(p->fd, buf, n, off);
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)n) {
		if (w >= 0)
			errno = ENOSPC;
		lb_warn("%s: cannot write", p->name);
		return -1;
	}
	return 0;
}

static int write_high(struct filepool *p, unsigned high)
{
	unsigned char word[4];

	lb_put32(word, high);
	return pwrite_all(p, word, sizeof word, LB_HDR_OFF_HIGH);
}

/* Record the holder of SLOT taken in the quick path; HIGH as quick_pick found it. */
static int commit_quick(struct filepool *p, unsigned slot, const struct lb_ident *who,
    unsigned high)
{
	unsigned char rec[LB_REC_SIZE];

	lb_record_encode(rec, slot, who);
	if (pwrite_all(p, rec, sizeof rec, lb_slot_offset(slot)) != 0)
		return -1;
	return slot > high ? write_high(p, slot) : 0;
}

/* Record the holder of SLOT after a full scan: stale records marked free in
 * buf are written back with it, and the free tail of the file goes. */
static int commit_full(struct filepool *p, unsigned slot, const struct lb_ident *who)
{
	unsigned high;

	if (reserve(p, (size_t)lb_slot_offset(slot + 1)) != 0)
		return -1;
	lb_record_encode(record(p, slot), slot, who);
	if (slot > p->nrec)
		p->nrec = slot;
	high = highest_used(p);
	if (pwrite_all(p, p->buf + LB_HDR_SIZE, (size_t)high * LB_REC_SIZE,
	    LB_HDR_SIZE) != 0)
		return -1;
	if ((off_t)p->loaded > lb_slot_offset(high + 1) &&
	    ftruncate(p->fd, lb_slot_offset(high + 1)) != 0)
		lb_warn("%s: cannot shrink", p->name);
	return lb_get32(p->buf + LB_HDR_OFF_HIGH) != high ? write_high(p, high) : 0;
}

/* With the header locked: 1 taken, 0 all busy (p->held lists them), -1 error. */
static int take_slot(struct filepool *p, unsigned max, const struct lb_ident *who,
    unsigned *slot)
{
	off_t size = lb_lockfile_identify(p->fd, p->name, 1);
	unsigned s, high;
	int r;

	if (size < 0)
		return -1;
	s = quick_pick(p, size, max, &high);
	if (s != 0) {
		r = claim(p, s);
		if (r < 0)
			return -1;
		if (r == 1) {
			if (commit_quick(p, s, who, high) != 0)
				goto undo;
			*slot = s;
			return 1;
		}
	}
	if (load(p, size) != 0 || scan_locked(p, p->fd) != 0)
		return -1;
	for (s = 1; s <= p->nrec; s++)
		if (state(p, s) != LB_REC_FREE && !is_held(p, s))
			lb_put32(record(p, s), LB_REC_FREE);
	for (;;) {
		if (p->nheld >= max)
			return 0;
		for (s = 1; is_held(p, s); s++)
			;
		r = claim(p, s);
		if (r < 0)
			return -1;
		if (r == 1)
			break;
		/* locked by something that left no record: count it */
		if (held_add(p, s) != 0)
			return -1;
		qsort(p->held, p->nheld, sizeof *p->held, cmp_unsigned);
	}
	if (commit_full(p, s, who) != 0)
		goto undo;
	*slot = s;
	return 1;
undo:
	lb_lock_try(p->fd, F_UNLCK, lb_slot_offset(s), 1);
	return -1;
}

static int describe(struct filepool *p, struct lb_holders *out)
{
	size_t i;

	out->n = 0;
	out->v = calloc(p->nheld ? p->nheld : 1, sizeof *out->v);
	if (out->v == NULL) {
		lb_warn("%s", p->name);
		return -1;
	}
	for (i = 0; i < p->nheld; i++) {
		struct lb_holder *h = &out->v[out->n++];

		h->slot = p->held[i];
		h->known = state(p, h->slot) == LB_REC_HELD;
		if (h->known)
			lb_record_decode(record(p, h->slot), &h->who);
	}
	return 0;
}

/*
 * Waiting without polling. No syscall waits for "any of these locks", so a
 * waiter runs one thread per held slot, each blocked in F_SETLKW for a read
 * lock on that slot's byte: the kernel grants it the moment the holder's
 * write lock goes (exit, kill, release). The thread drops it at once and
 * rings the main thread, which re-runs the whole acquisition. Watchers are
 * started while the header is still locked, so no slot can change hands
 * unwatched between the scan and the wait.
 */
struct watcher {
	pthread_t tid;
	int fd, bell;
	unsigned slot;
	int running;
};

static volatile sig_atomic_t watch_stop;

static void on_wake(int sig)
{
	(void)sig;	/* only interrupts F_SETLKW */
}

static void *watch(void *arg)
{
	struct watcher *w = arg;
	struct flock fl;

	for (;;) {
		memset(&fl, 0, sizeof fl);
		fl.l_type = F_RDLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = lb_slot_offset(w->slot);
		fl.l_len = 1;
#ifdef HAVE_OFD_LOCKS
		if (fcntl(w->fd, F_OFD_SETLKW, &fl) == 0)
#else
		if (fcntl(w->fd, F_SETLKW, &fl) == 0)
#endif
		{
			lb_lock_try(w->fd, F_UNLCK, lb_slot_offset(w->slot), 1);
			break;
		}
		if (errno != EINTR || watch_stop)
			break;
	}
	/* ring even on error: the main thread re-scans rather than sleeps on */
	while (write(w->bell, "", 1) < 0 && errno == EINTR)
		;
	return NULL;
}

struct watch_set {
	struct watcher *v;
	size_t n;
	int bell[2];
	int capped;
};

static void watch_start(struct filepool *p, struct watch_set *ws)
{
	struct sigaction sa;
	pthread_attr_t attr;
	sigset_t block, old;
	size_t i, n = p->nheld < WATCH_MAX ? p->nheld : WATCH_MAX;

	memset(ws, 0, sizeof *ws);
	ws->capped = n < p->nheld;
	if (pipe2(ws->bell, O_CLOEXEC | O_NONBLOCK) != 0) {
		ws->bell[0] = ws->bell[1] = -1;
		ws->capped = 1;
		return;
	}
	ws->v = calloc(n ? n : 1, sizeof *ws->v);
	if (ws->v == NULL) {
		ws->capped = 1;
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_wake;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN, &sa, NULL);
	watch_stop = 0;
	/*
	 * Threads inherit this mask: they never take the deadline alarm (the
	 * main thread's) and always take the wake signal, whatever mask we
	 * were started with.
	 */
	pthread_sigmask(SIG_BLOCK, NULL, &old);
	block = old;
	sigaddset(&block, SIGALRM);
	sigdelset(&block, SIGRTMIN);
	pthread_sigmask(SIG_SETMASK, &block, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WATCH_STACK);
	for (i = 0; i < n; i++) {
		struct watcher *w = &ws->v[ws->n];

		w->fd = p->fd;
		w->bell = ws->bell[1];
		w->slot = p->held[i];
		if (pthread_create(&w->tid, &attr, watch, w) != 0) {
			ws->capped = 1;
			break;
		}
		w->running = 1;
		ws->n++;
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void watch_ring_wait(struct watch_set *ws, int64_t deadline)
{
	struct pollfd pfd = { .fd = ws->bell[0], .events = POLLIN };
	char drain[64];

	for (;;) {
		int64_t left = lb_remaining(deadline);
		int ms = (int)((left + LB_NS_PER_MS - 1) / LB_NS_PER_MS);

		if (left == 0)
			return;
		if (ws->capped && ms > 200)
			ms = 200;
		if (pfd.fd < 0) {
			poll(NULL, 0, ms);
			return;
		}
		if (poll(&pfd, 1, ms) != 0 || ws->capped)
			break;
	}
	while (read(ws->bell[0], drain, sizeof drain) > 0)
		;
}

static void watch_stop_all(struct watch_set *ws)
{
	size_t i;

	watch_stop = 1;
	for (i = 0; i < ws->n; i++) {
		struct timespec ts;

		/* the wake signal may land just before F_SETLKW: send it again */
		do {
			pthread_kill(ws->v[i].tid, SIGRTMIN);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
		} while (pthread_timedjoin_np(ws->v[i].tid, NULL, &ts) == ETIMEDOUT);
	}
	free(ws->v);
	if (ws->bell[0] >= 0) {
		close(ws->bell[0]);
		close(ws->bell[1]);
	}
}

static int file_acquire(struct lb_pool *pool, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	struct filepool *p = fp(pool);
	struct watch_set ws;
	int r;

	for (;;) {
		r = header_lock(p, F_WRLCK, deadline);
		if (r == 1) {
			r = take_slot(p, max, who, slot);
			if (r == 0 && lb_remaining(deadline) > 0) {
				watch_start(p, &ws);
				header_unlock(p);
				watch_ring_wait(&ws, deadline);
				watch_stop_all(&ws);
				continue;
			}
			header_unlock(p);
		}
		if (r == 0 && busy != NULL && describe(p, busy) != 0)
			return -1;
		return r;
	}
}

/*
 * A lock test never reports the tester's own locks, so the file is opened
 * afresh: that second open file description sees every holder, ours too.
 * A slot it sees locked that is free as seen through our fd is ours, or
 * was released between the two tests; a third test through the second
 * description tells them apart. The header lock makes that third test
 * sound: without it a new holder could take the slot in between.
 */
static unsigned file_own_slot(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);
	char path[64];
	unsigned own = 0;
	size_t i;
	int other, r;

	snprintf(path, sizeof path, "/proc/self/fd/%d", p->fd);
	other = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (other < 0)
		return 0;
	if (header_lock(p, F_WRLCK, 0) != 1) {
		close(other);
		return 0;
	}
	r = scan_locked(p, other);
	for (i = 0; r == 0 && i < p->nheld && own == 0; i++) {
		off_t at = lb_slot_offset(p->held[i]);
		struct flock c;

		if (lb_lock_test(p->fd, F_RDLCK, at, 1, &c) == 1 &&
		    lb_lock_test(other, F_RDLCK, at, 1, &c) == 0)
			own = p->held[i];
	}
	header_unlock(p);
	close(other);
	return own;
}

static int file_release(struct lb_pool *pool, pid_t owner)
{
	struct filepool *p = fp(pool);
	int r = header_lock(p, F_WRLCK, 0);
	off_t size;
	unsigned s;

	/* the slot goes even when the header cannot be had: a record left
	 * behind is only stale, and stale records are cleaned up later */
	if (lb_lock_try(p->fd, F_UNLCK, LB_HDR_SIZE, 0) < 0) {
		lb_warn("%s: cannot unlock", p->name);
		r = -1;
	}
	if (r != 1)
		return -1;
	size = lb_lockfile_identify(p->fd, p->name, 0);
	if (size < 0 || load(p, size) != 0)
		r = -1;
	for (s = 1; r == 1 && s <= p->nrec; s++) {
		struct lb_ident who;
		struct flock c;

		if (state(p, s) != LB_REC_HELD)
			continue;
		lb_record_decode(record(p, s), &who);
		if (who.pid != owner ||
		    lb_lock_test(p->fd, F_RDLCK, lb_slot_offset(s), 1, &c) != 1)
			continue;
		lb_put32(record(p, s), LB_REC_FREE);
		if (pwrite_all(p, record(p, s), 4, lb_slot_offset(s)) != 0)
			r = -1;
	}
	header_unlock(p);
	return r == 1 ? 0 : -1;
}

static int file_holders(struct lb_pool *pool, struct lb_holders *out)
{
	struct filepool *p = fp(pool);
	off_t size;
	int locked, rc = -1;

	if (p->fd < 0)
		return 0;	/* no file: nobody holds it */
	/*
	 * A shared header lock keeps records steady while they are read; it
	 * is only a courtesy (the slot locks are the truth), so a header
	 * stuck in a stopped process is waited on briefly, never for long.
	 */
	locked = lb_lock_wait(p->fd, F_RDLCK, 0, LB_HDR_SIZE,
	    lb_deadline_after(250 * LB_NS_PER_MS)) == 1;
	size = lb_lockfile_identify(p->fd, p->name, 0);
	if (size >= 0 && load(p, size) == 0 && scan_locked(p, p->fd) == 0)
		rc = describe(p, out);
	if (locked)
		header_unlock(p);
	return rc;
}

static int file_atom(struct lb_pool *pool, lb_atom_fn *fn, void *arg)
{
	struct filepool *p = fp(pool);
	unsigned char area[LB_ATOM_SIZE];
	off_t size;
	int r = header_lock(p, F_WRLCK, 0);

	if (r != 1)
		return -1;
	size = lb_lockfile_identify(p->fd, p->name, 1);
	if (size < 0 || load(p, size) != 0) {
		header_unlock(p);
		return -1;
	}
	memcpy(area, p->buf + LB_ATOM_OFF, sizeof area);
	r = fn(area, sizeof area, arg);
	if (r == 1 && pwrite_all(p, area, sizeof area, LB_ATOM_OFF) != 0)
		r = -1;
	header_unlock(p);
	return r;
}

static int file_atom_read(struct lb_pool *pool, unsigned char *area, size_t len)
{
	struct filepool *p = fp(pool);
	off_t size;
	int locked, rc = -1;

	if (p->fd < 0)
		return 0;	/* no file: no state */
	/* a courtesy lock, as in file_holders: never waited on for long */
	locked = lb_lock_wait(p->fd, F_RDLCK, 0, LB_HDR_SIZE,
	    lb_deadline_after(LB_NS_PER_S)) == 1;
	size = lb_lockfile_identify(p->fd, p->name, 0);
	if (size >= 0 && load(p, size) == 0) {
		memcpy(area, p->buf + LB_ATOM_OFF, len < LB_ATOM_SIZE ? len : LB_ATOM_SIZE);
		rc = size > 0;
	}
	if (locked)
		header_unlock(p);
	return rc;
}

static int file_lock_site(struct lb_pool *pool, unsigned slot, struct lb_lock_site *site)
{
	struct filepool *p = fp(pool);
	struct stat st;

	if (p->fd < 0 || fstat(p->fd, &st) != 0)
		return -1;
	site->dev = st.st_dev;
	site->ino = st.st_ino;
	site->byte = lb_slot_offset(slot);
	return 0;
}

static const struct lb_pool_ops file_ops = {
	.acquire = file_acquire,
	.own_slot = file_own_slot,
	.release = file_release,
	.holders = file_holders,
	.atom = file_atom,
	.atom_read = file_atom_read,
	.lock_site = file_lock_site,
	.keep_on_exec = file_keep_on_exec,
	.close = file_close,
};

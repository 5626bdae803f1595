/* SPDX-License-Identifier: ISC */
/*
 * Any file, for the lock-file backend: a file that is not a lockbox lock
 * file (a directory, an empty file, a script, a data file, one the caller
 * may only read) is locked the way every other program locks a file, and
 * nothing is ever written into it. Its holder takes two locks on the
 * open file it was given, both or neither:
 *
 *   flock(2) on the whole file (LOCK_EX, or LOCK_SH for a shared lock):
 *     what flock(1), setlock, chpst and Python's filelock take, and what
 *     a lockbox lock file's mutex holders take beside their slot
 *   an fcntl lock on bytes [0, LB_PATH_LEN): what conflicts with the
 *     locks of s6-setlock, lckdo, lockf(3) and `flock --fcntl` (on the
 *     whole file), and with a lockbox lock file's slot locks, so that a
 *     file truncated or overwritten under its lockbox holders is still
 *     theirs. An exclusive holder's is a write lock, which keeps their
 *     readers out too, when the file is open for writing: lockfile.c
 *     opens so a regular file without an x bit that the caller may
 *     write (lockbox writes nothing into it). On one open only for
 *     reading (an executable: a script that locks itself must not be
 *     open for writing at its exec; one the caller may only read) it is
 *     a read lock: it keeps fcntl writers out, and an exclusive holder
 *     is refused while a reader holds, but a reader that comes later is
 *     not kept out (mutex(1) says so).
 *
 * Neither kind sees the other in the kernel, so both are taken: who gets
 * the file never depends on what it holds. There is no queue but the
 * kernel's: which of several waiters gets the lock is the kernel's
 * choice, as for flock(1). The locks belong to the open file, so the
 * command and its children that inherit the fd hold them, and they go
 * when the last of them closes it or ends, SIGKILL included.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "await.h"
#include "clock.h"
#include "err.h"
#include "filepool.h"
#include "lockformat.h"
#include "lockowners.h"
#include "lockprim.h"
#include "lockscan.h"
#include "parse.h"
#include "proc.h"
#include "procfs.h"

/* What kept an attempt out (p->any_blocked). */
enum { BY_FLOCK = 1, BY_FCNTL, BY_READER };
/* no fcntl half (F_RDLCK is 0) */
#define NO_FCNTL	(-1)
/* tries of a flock(2) lock held by a look for a moment (see holders_by_tests) */
#define FLOCK_TRIES	3

/*
 * The fcntl lock this open file can take: a read lock on a file open
 * only for reading (an executable, a directory, one the caller may not
 * write); on one open for writing, a write lock when alone, and when
 * shared a read lock, or none (NO_FCNTL) on a write-only one (flock(1)'s
 * 9>FILE, the FD form). None in a classic POSIX build on a caller's fd:
 * that lock would be this process's, and go with it.
 */
static int fcntl_kind(struct filepool *p)
{
	int fl = fcntl(p->fd, F_GETFL);

#ifndef HAVE_OFD_LOCKS
	if (!p->owned)
		return NO_FCNTL;
#endif
	if (fl < 0)
		return NO_FCNTL;
	if ((fl & O_ACCMODE) == O_RDONLY)
		return F_RDLCK;
	if (!p->shared)
		return F_WRLCK;
	return (fl & O_ACCMODE) == O_RDWR ? F_RDLCK : NO_FCNTL;
}

static void unlock_both(struct filepool *p)
{
	flock(p->fd, LOCK_UN);
	if (p->any_kind != NO_FCNTL)
		lb_lock_try(p->fd, F_UNLCK, 0, LB_PATH_LEN);
}

/* ranges a look for another reader tests, at most: lockbox's own looks come and go */
#define READER_TESTS	16

/* 1 for a lock that is another program's read lock (any write lock here is another's too). */
static int readers_lock(const struct lb_lockinfo *l, void *arg)
{
	(void)arg;
	return l->write || (!lb_lock_is_lockbox(l) && !lb_path_half(l));
}

/*
 * Whether another program holds a read lock on the file, by lock tests
 * around the locks the kernel names: not lockbox's own waiters, whose
 * looks take a read lock for a moment and let it go (the shape of this
 * file's, or of a slot's byte); a shared holder as any file holds
 * flock(2) too, which has kept us out already. Past READER_TESTS, or
 * on an error, one is taken to be there (the kernel's word).
 */
static int other_reader(struct filepool *p)
{
	return lb_lock_each(p->fd, F_WRLCK, 0, (long long)LB_PATH_LEN - 1, READER_TESTS,
	    readers_lock, NULL) != 0;
}

/*
 * Try once for both locks: 1 both held, 0 kept out (p->any_blocked says
 * by what), -1 error (reported). A file system that has flock(2) but no
 * fcntl locks for it (a directory on some) keeps the flock(2) lock alone.
 */
static int try_both(struct filepool *p)
{
	struct lb_lockinfo l;
	int r, tries = 0;

	/* (a look, check or held, holds a shared lock for a moment: tried again) */
	do
		r = flock(p->fd, (p->shared ? LOCK_SH : LOCK_EX) | LOCK_NB);
	while (r != 0 && (errno == EINTR || (errno == EWOULDBLOCK && tries++ < FLOCK_TRIES &&
	    sched_yield() == 0)));
	if (r != 0 && errno != EWOULDBLOCK) {
		lb_warn("%s: cannot lock", p->name);
		return -1;
	}
	if (r != 0) {
		p->any_blocked = BY_FLOCK;
		return 0;
	}
	p->any_kind = fcntl_kind(p);
	if (p->any_kind == NO_FCNTL)
		return 1;
	r = lb_lock_try(p->fd, (short)p->any_kind, 0, LB_PATH_LEN);
	if (r < 0) {
		p->any_kind = NO_FCNTL;	/* no fcntl locks here: flock(2) alone */
		return 1;
	}
	if (r == 0) {
		flock(p->fd, LOCK_UN);
		p->any_blocked = BY_FCNTL;
		return 0;
	}
	/* alone under a read lock: another's read lock, which ours does not keep out, is a holder */
	if (!p->shared && p->any_kind == F_RDLCK &&
	    lb_lock_conflict(p->fd, F_WRLCK, 0, LB_PATH_LEN, &l) == 1 && other_reader(p)) {
		unlock_both(p);
		p->any_blocked = BY_READER;
		return 0;
	}
	return 1;
}

/* Tell the pool's progress function our place among the waiters and a holder. */
static void any_progress(struct filepool *p)
{
	struct lb_holders h, w;
	unsigned place = 0;
	size_t i;

	if (p->base.progress == NULL)
		return;
	if (fa_holders(p, 0, &h) != 0)
		h.n = 0;
	if (fa_holders(p, 1, &w) == 0)
		for (i = 0; i < w.n && place == 0; i++)
			if (w.v[i].who.pid == getpid())
				place = w.v[i].queue;
	/* (a holder not found by the look is not named) */
	lb_pool_progress(&p->base, place, h.n > 0 && h.v[0].who.pid != 0 ? &h.v[0] : NULL);
	lb_holders_free(&h);
	lb_holders_free(&w);
}

/*
 * Wait in the kernel, up to DEADLINE, until what kept the last attempt
 * out (p->any_blocked, a flock(2) or an fcntl lock) has gone: a helper
 * thread makes the request (lb_await_flock, lb_await_lock), so that
 * ^Z and the deadline end the wait. A flock(2) lock granted is kept, as
 * the kernel's queue gave it to us (let go of at once, it went to the
 * next of flock(1)'s waiters before we tried again, every time); the
 * attempt that follows takes the fcntl half without waiting, and lets
 * the flock(2) lock go when it cannot: nothing is held while one lock
 * is waited for and the other not yet had (a holder of one waiting for
 * the other could wait on a waiter of the first). An fcntl lock granted
 * is let go of at once.
 * On ^Z the request is withdrawn before we stop (no lock is granted to a
 * stopped process), and made again when we go on. 1 free (try again),
 * 0 the deadline passed, -1 error (reported).
 */
static int wait_free(struct filepool *p, int64_t deadline)
{
	struct lb_await a;
	struct lb_awaited got;
	int r = -1;

	if (lb_await_open(&a) != 0) {
		lb_warn("%s: cannot wait", p->name);
		return -1;
	}
	if ((p->any_blocked == BY_FLOCK ?
	    lb_await_flock(&a, p->fd, p->shared ? LOCK_SH : LOCK_EX, 1, 0) :
	    lb_await_lock(&a, p->fd, (short)p->any_kind, 0, LB_PATH_LEN, 0, 0)) != 0) {
		lb_warn("%s: cannot wait", p->name);
		lb_await_shut(&a);
		return -1;
	}
	any_progress(p);
	for (;;) {
		switch (lb_await_run(&a, deadline,
		    p->base.progress != NULL ? LB_PROGRESS_MS : LB_NO_RECHECK, &got)) {
		case LB_LOOK:
			/* a status line, rewritten */
			any_progress(p);
			continue;
		case LB_STOPPED:
			/* nothing is granted to a stopped process: asked again as we go on */
			lb_await_forget_locks(&a);
			lb_await_suspend();
			r = 1;
			break;
		case LB_GRANTED:
		case LB_FREE:
			r = 1;
			break;
		case LB_DEADLINE:
			r = 0;
			break;
		case LB_INTERRUPTED:
			break;
		default:
			errno = got.err;
			lb_warn("%s: cannot lock", p->name);
			break;
		}
		break;
	}
	lb_await_shut(&a);
	return r;
}

/*
 * Whether the file, empty when it was opened, has become a lockbox lock
 * file since: lockbox adopts an empty file (slots, create, the shell
 * library) only while it can hold its flock(2) lock, and writes the
 * header under it (lb_lockfile_identify); a mutex that then gets that
 * lock must not hold the file in a way its new holders do not see.
 */
static int became_lockbox(struct filepool *p)
{
	unsigned char magic[LB_MAGIC_LEN];
	struct stat st;
	ssize_t n;

	if (fstat(p->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < LB_HDR_SIZE)
		return 0;
	do
		n = pread(p->fd, magic, sizeof magic, 0);
	while (n < 0 && errno == EINTR);
	return n == LB_MAGIC_LEN && memcmp(magic, LB_MAGIC, LB_MAGIC_LEN) == 0;
}

enum fp_step fa_acquire(struct filepool *p, unsigned max, int64_t deadline, unsigned *slot)
{
	int r;

	if (max > 1) {
		lb_warnx("%s: not a lockbox lock file; refusing to touch it (a pool of %u slots needs a lock file of its own: lockbox creates it)",
		    p->name, max);
		return FP_ERROR;
	}
	/* a reader's lock cannot be waited for on a file open read-only: refused at once */
	while ((r = try_both(p)) == 0 && p->any_blocked != BY_READER &&
	    lb_remaining(deadline) != 0 && (r = wait_free(p, deadline)) == 1)
		;
	if (r == 1 && p->owned && !p->any_forced && became_lockbox(p)) {
		/* its holders are lockbox's: the caller takes a slot as they do */
		unlock_both(p);
		return FP_BECAME_LOCK;
	}
	if (r == 1)
		*slot = 1;
	return r == 1 ? FP_TAKEN : r == 0 ? FP_BUSY : FP_ERROR;
}

int fa_release(struct filepool *p)
{
	if (flock(p->fd, LOCK_UN) != 0) {
		lb_warn("%s: cannot unlock", p->name);
		return -1;
	}
	/* whatever this open file holds of the fcntl half, taken by this run or an earlier one */
	if (fcntl_kind(p) != NO_FCNTL)
		lb_lock_try(p->fd, F_UNLCK, 0, LB_PATH_LEN);
	return 0;
}

/* Whether the table still shows the flock(2) lock L (its locker's PID and kind). */
static int still_held(struct filepool *p, const struct lb_lockinfo *l)
{
	struct lb_lockline *v;
	size_t n, i;
	int held = 0;

	if (lb_scan_flocks(p->fd, &v, &n) != 0)
		return 1;	/* not known: as it was */
	for (i = 0; i < n && !held; i++)
		held = !v[i].blocked && v[i].l.pid == l->pid && v[i].l.write == l->write;
	free(v);
	return held;
}

/*
 * Whether line X is the fcntl half of an any-file holder's locks: its
 * holder is the one its flock(2) lock names.
 */
static int path_half(const struct lb_lockline *x)
{
	return x->kind != LB_LOCK_FLOCK && lb_path_half(&x->l);
}

static int listed(const struct lb_holders *h, pid_t pid)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (h->v[i].who.pid == pid)
			return 1;
	return 0;
}

/* fcntl locks a look by tests finds on the file, at most */
#define HOLDER_TESTS	64

/* The fcntl locks a look by tests found (holders_by_tests). */
struct holder_locks {
	struct lb_lockinfo v[HOLDER_TESTS];
	size_t n;
};

static int holder_lock(const struct lb_lockinfo *l, void *arg)
{
	struct holder_locks *h = arg;

	if (h->n < HOLDER_TESTS)
		h->v[h->n++] = *l;
	return 0;
}

/* H's next row, for the lock L (its process 0: not known), the file's whole length for a flock(2) lock. */
static struct lb_holder *add_row(struct lb_holders *h, const struct lb_lockinfo *l)
{
	struct lb_holder *x = &h->v[h->n++];

	x->known = l->pid > 0;
	x->shared = !l->write;
	x->lock_lo = l->lo;
	x->lock_hi = l->hi;
	if (l->pid > 0)
		lb_ident_of_process(&x->who, l->pid);
	return x;
}

/*
 * The holders as lock tests find them, without the host's lock table (a
 * check, held, a refusal: the paths a script runs): the fcntl locks on
 * the file, by tests around each the kernel names (another program's:
 * s6-setlock's, lckdo's, lockf's; an any-file holder's fcntl half, which
 * stands for its flock(2) lock too), then a flock(2) lock held alone
 * (flock(1)'s, filelock's), by a shared flock(2) lock taken for a moment,
 * which one held for exclusive use refuses (an attempt of lockbox's that
 * meets that moment tries again: try_both). What tests cannot tell, list
 * shows: a flock(2) lock held for shared use alone, and each of several
 * holders of one lock. Each is named as the kernel names it, or by a look
 * through /proc within the run's budget. Nobody is seen waiting.
 */
static int holders_by_tests(struct filepool *p, int waiting, struct lb_holders *out)
{
	struct holder_locks found;
	struct lb_lockinfo l, *v = found.v;
	struct lb_holder *x;
	size_t n, i;
	struct stat st;
	pid_t pid, taker;
	int flocked, half = 0, slot = 0, gone;

	out->v = calloc(HOLDER_TESTS + 1, sizeof *out->v);
	out->n = 0;
	if (out->v == NULL) {
		lb_warn("%s", p->name);
		return -1;
	}
	if (waiting)
		return 0;
	found.n = 0;
	/* past the bound, the locks found so far */
	if (lb_lock_each(p->fd, F_WRLCK, 0, -1, HOLDER_TESTS, holder_lock, &found) < 0) {
		lb_warn("%s", p->name);
		return -1;
	}
	n = found.n;
	flocked = fp_flock_probe(p->fd);
	lb_lock_owners(p->fd, v, n);
	for (i = 0; i < n; i++) {
		/* an any-file holder's fcntl half stands for its flock(2) lock, exclusive when held so */
		if (lb_path_half(&v[i])) {
			half = 1;
			v[i].write = flocked;
		}
		slot |= v[i].write && lb_lock_is_lockbox(&v[i]) && !lb_path_half(&v[i]);
		/* one row a process: its flock(2) lock and its fcntl lock are one holder */
		if (v[i].pid == 0 || !listed(out, v[i].pid))
			add_row(out, &v[i]);
	}
	if ((!flocked && !half) || fstat(p->fd, &st) != 0)
		return 0;
	/*
	 * The flock(2) lock: named by the process that took it, which the
	 * walk that found the fcntl half's process has seen already
	 */
	pid = lb_lookup_flock(st.st_dev, st.st_ino, &l);
	for (i = 0, x = NULL; pid > 0 && i < out->n; i++)
		if (out->v[i].who.pid == pid)
			x = &out->v[i];
	/*
	 * (an fcntl half, found, is its holder's row: its process may not
	 * be; so is a slot's of a lock file cut short, whose mutex holder
	 * takes a flock(2) lock beside it, when the look named nobody else)
	 */
	if (x == NULL && (half || !flocked || (slot && pid == 0)))
		return 0;
	taker = pid > 0 ? l.pid : 0;
	gone = taker > 0 && taker != pid && kill(taker, 0) != 0 && errno == ESRCH;
	if (x == NULL) {
		if (pid == 0)
			l = (struct lb_lockinfo){ .lo = 0, .hi = -1, .write = 1 };
		/* the one that took it, as the table names it, while it lives */
		l.pid = taker > 0 && !gone ? taker : pid;
		x = add_row(out, &l);
	}
	/* the one that took it has ended; the processes that inherited its open file hold on */
	if (gone) {
		lb_ident_of_process(&x->who, taker);
		x->known = 1;
		x->gone = 1;
		x->keeper = pid;
	}
	return 0;
}

/*
 * The holders (WAITING 0) or the waiters (1) from the kernel's lock table,
 * of either kind: a flock(2) lock names the process that took it, which
 * may have ended while those that inherited its open file hold on
 * (KEEPER); another program's fcntl lock (s6-setlock, lckdo, lockf) is
 * named by its process, or for an open file's lock by one that has it
 * open (fdinfo).
 */
int fa_holders(struct filepool *p, int waiting, struct lb_holders *out)
{
	struct lb_lockline *v;
	size_t n, i;
	unsigned queue = 0;

	out->v = NULL;
	out->n = 0;
	/* the table is read only in a person's look at the host */
	if (lb_locktab_get() == NULL)
		return holders_by_tests(p, waiting, out);
	if (lb_scan_lines(p->fd, &v, &n) != 0) {
		lb_warn("%s: cannot read the kernel's lock table", p->name);
		return -1;
	}
	out->v = calloc(n ? n : 1, sizeof *out->v);
	if (out->v == NULL) {
		lb_warn("%s", p->name);
		free(v);
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct lb_holder *h;

		/* (a waiter's request names nobody else: shown on its own) */
		if (v[i].blocked != waiting || (!waiting && path_half(&v[i])))
			continue;
		if (v[i].kind != LB_LOCK_FLOCK && v[i].l.pid == 0)
			lb_lock_owners(p->fd, &v[i].l, 1);
		/* one row a process: its flock(2) lock and its fcntl lock are one holder */
		if (v[i].l.pid > 0 && listed(out, v[i].l.pid))
			continue;
		h = &out->v[out->n++];
		h->known = v[i].l.pid > 0;
		h->shared = !v[i].l.write;
		h->lock_lo = v[i].l.lo;
		h->lock_hi = v[i].l.hi;
		if (waiting) {
			h->waiting = 1;
			h->queue = ++queue;
			lb_ident_of_waiter(&h->who, v[i].l.pid, &h->stopped);
			continue;
		}
		lb_ident_of_process(&h->who, v[i].l.pid);
		if (v[i].kind == LB_LOCK_FLOCK && v[i].l.pid > 0 && kill(v[i].l.pid, 0) != 0 &&
		    errno == ESRCH) {
			h->keeper = lb_lock_keeper(p->fd, &v[i].l, 1);
			/* none found: another user's, or the lock went with it since the look */
			h->gone = h->keeper > 0 || still_held(p, &v[i].l);
		}
	}
	free(v);
	return 0;
}

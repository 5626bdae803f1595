/* SPDX-License-Identifier: ISC */
/*
 * Any file, for the lock-file backend: a file that is not a lockbox lock
 * file (a directory, an empty file, a script, a data file, one the caller
 * may only read) is locked as flock(1) locks it, with flock(2) on the
 * whole of an open file of it, so that lockbox and flock(1) exclude each
 * other on it. Nothing is ever written into it: there are no records, and
 * the holders and waiters are the kernel's lock table's, flock(2) locks
 * only (fcntl locks do not conflict with them on Linux).
 *
 * There is no queue but the kernel's: a flock(2) request waits in the
 * kernel, and which of several waiters gets the lock is the kernel's
 * choice, as for flock(1) (a shared request is not held back by an
 * exclusive one that waits). The lock belongs to the open file, so the
 * command and its children that inherit the fd hold it, and it goes when
 * the last of them closes it or ends, SIGKILL included.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "parse.h"
#include "filepool.h"
#include "lockscan.h"
#include "proc.h"
#include "wait.h"

/* Try once: 1 locked, 0 held by others, -1 error (reported). */
static int try_flock(struct filepool *p, int op)
{
	int r;

	do
		r = flock(p->fd, op | LOCK_NB);
	while (r != 0 && errno == EINTR);
	if (r == 0)
		return 1;
	if (errno == EWOULDBLOCK)
		return 0;
	lb_warn("%s: cannot lock", p->name);
	return -1;
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
	lb_pool_progress(&p->base, place, h.n > 0 ? &h.v[0] : NULL);
	lb_holders_free(&h);
	lb_holders_free(&w);
}

/*
 * Wait in the kernel for the lock, up to DEADLINE: a helper thread makes
 * the request (lb_wait_flock), so that ^Z and the deadline end it. On ^Z
 * the request is withdrawn before we stop (no lock is granted to a
 * stopped process), and made again when we go on. 1, 0, -1.
 */
static int wait_flock(struct filepool *p, int op, int64_t deadline)
{
	struct lb_wait w;
	struct lb_wait_event ev;
	int64_t progress_at = LB_NO_WAIT;
	int r, asked = 0;

	if (lb_wait_init(&w) != 0 || lb_wait_stop(&w) != 0) {
		lb_warn("%s: cannot wait", p->name);
		lb_wait_done(&w);
		return -1;
	}
	for (;;) {
		if (!asked && lb_wait_flock(&w, p->fd, op, 1, 0) != 0) {
			lb_warn("%s: cannot wait", p->name);
			r = -1;
			break;
		}
		/* a status line: the request shows in the lock table once the helper has made it */
		if (!asked && p->base.progress != NULL)
			progress_at = lb_deadline_after(10 * LB_NS_PER_MS);
		asked = 1;
		r = lb_wait_run(&w, lb_remaining(progress_at) > 0 && progress_at < deadline ?
		    progress_at : deadline, p->base.progress != NULL ? LB_PROGRESS_MS : LB_NO_RECHECK, &ev);
		if (r < 0)
			lb_warn("%s: cannot wait", p->name);
		if (r == 0 && lb_remaining(deadline) > 0) {
			progress_at = LB_NO_WAIT;
			any_progress(p);
			continue;
		}
		if (r == 1 && ev.kind == LB_EV_RECHECK) {
			any_progress(p);
			continue;
		}
		if (r != 1)
			break;
		if (ev.kind == LB_EV_STOP) {
			lb_wait_clear_locks(&w);
			asked = 0;
			lb_wait_suspend();
			r = try_flock(p, op);
			if (r != 0)
				break;
			continue;
		}
		if (ev.kind == LB_EV_LOCK) {
			if (ev.err != 0) {
				errno = ev.err;
				lb_warn("%s: cannot lock", p->name);
				r = -1;
			}
			/* granted: reported, so the helper's end leaves it held */
			break;
		}
	}
	lb_wait_done(&w);
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

int fa_acquire(struct filepool *p, unsigned max, int64_t deadline, unsigned *slot)
{
	int op = p->shared ? LOCK_SH : LOCK_EX, r;

	if (max > 1) {
		lb_warnx("%s: not a lockbox lock file; refusing to touch it (a pool of %u slots needs a lock file of its own: lockbox creates it)",
		    p->name, max);
		return -1;
	}
	r = try_flock(p, op);
	if (r == 0 && lb_remaining(deadline) != 0)
		r = wait_flock(p, op, deadline);
	if (r == 1 && became_lockbox(p)) {
		/* its holders are lockbox's: 3, the caller takes a slot as they do */
		flock(p->fd, LOCK_UN);
		return 3;
	}
	if (r == 1)
		*slot = 1;
	return r;
}

int fa_release(struct filepool *p)
{
	if (flock(p->fd, LOCK_UN) != 0) {
		lb_warn("%s: cannot unlock", p->name);
		return -1;
	}
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
 * The holders (WAITING 0) or the waiters (1) from the kernel's lock table:
 * a flock(2) lock names the process that took it, which may have ended
 * while those that inherited its open file hold on (KEEPER).
 */
int fa_holders(struct filepool *p, int waiting, struct lb_holders *out)
{
	struct lb_lockline *v;
	size_t n, i;
	unsigned queue = 0;

	out->v = NULL;
	out->n = 0;
	if (lb_scan_flocks(p->fd, &v, &n) != 0) {
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

		if (v[i].blocked != waiting)
			continue;
		h = &out->v[out->n++];
		h->known = 1;
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
		if (v[i].l.pid > 0 && kill(v[i].l.pid, 0) != 0 && errno == ESRCH) {
			h->keeper = lb_lock_keeper(p->fd, &v[i].l, 1);
			/* none found: another user's, or the lock went with it since the look */
			h->gone = h->keeper > 0 || still_held(p, &v[i].l);
		}
	}
	free(v);
	return 0;
}

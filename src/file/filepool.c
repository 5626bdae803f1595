/* SPDX-License-Identifier: ISC */
/*
 * The lock-file backend of a pool: acquire, wait, release, holders.
 * This is the backend's top but for its constructors (fileopen.c, which
 * call it): an arrival, a release, the holders described.
 * Below it, each calling only further down: filequeue.c (the wait queue,
 * its tail and its head, its invariants at its top), fileforeign.c
 * (locks lockbox did not take), filestore.c (the file's bytes, the header
 * lock, slot choice), fileany.c (a file that is no lock file); filepool.h
 * is theirs alone.
 *
 * An acquisition of a lock file's slot, step by step (each step returns
 * an enum fp_step; "header" is the write lock on the header's bytes):
 *   arrive     others queued and we wait: join behind them (filequeue.c),
 *              no header. Else fp_enter takes the header, fp_take_slot
 *              scans and claims a free slot; every slot busy and nobody
 *              queued: join the queue as its head, still under the
 *              header. arrive lets the header go in every case.
 *   turn       (queued) wait for the ticket ahead to go (fp_queue_turn),
 *              no header held; then fp_try_take (filestore.c): fp_enter,
 *              fp_take_slot, and the header let go there.
 *   head       (FP_HEAD, from arrive or the turn: every slot busy, at
 *              the queue's head) fp_head_wait watches the held slots with
 *              no header held; at each wake-up fp_try_take again.
 *   take       fp_take_slot, always under the header: the slot's lock,
 *              then its record.
 *   leave      the ticket is given back (fp_queue_leave) however it ended.
 * ^Z (FP_STOPPED) leaves the queue, stops, and arrives again.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atom.h"
#include "await.h"
#include "backend.h"
#include "clock.h"
#include "err.h"
#include "filepool.h"
#include "filewatch.h"
#include "futex.h"
#include "lockedfiles.h"
#include "lockfile.h"
#include "lockformat.h"
#include "lockowners.h"
#include "lockprim.h"
#include "lockscan.h"
#include "parse.h"
#include "proc.h"
#include "procfs.h"

/* how long check/list wait for a busy header before reading anyway */
#define LOOK_WAIT	(250 * LB_NS_PER_MS)
/* how many times a lock taken on a file no longer at its path is taken again */
#define REOPEN_TRIES	8

static int look_foreign(struct filepool *p);

static const struct lb_pool_ops file_ops;

static struct filepool *fp(struct lb_pool *pool)
{
	return (struct filepool *)pool;
}

struct lb_pool *fp_pool_new(int fd, int cfd, int owned, int idflags, const char *name)
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
	p->cfd = cfd;
	p->owned = owned;
	p->idflags = idflags;
	return &p->base;
}

/*
 * The path again, after a lock was taken on a file it no longer names:
 * the file now there, opened as the first was. 0, or -1 (reported).
 */
static int reopen(struct filepool *p)
{
	int idflags, any = 0;
	int fd = lb_lockfile_open(p->name, 1, p->mode, &idflags, p->any_ok ? &any : NULL);

	if (fd < 0)
		return -1;
	if (p->cfd != p->fd)
		close(p->cfd);
	close(p->fd);
	p->fd = p->cfd = fd;
	p->idflags = idflags;
	p->any = any;
	p->any_forced = 0;
	p->loaded = 0;
	p->nrec = 0;
	p->base.caps = any ? p->base.caps | LB_POOL_FLOCK : p->base.caps & ~LB_POOL_FLOCK;
	return 0;
}

static void file_close(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);

	if (p->cfd >= 0 && p->cfd != p->fd)
		close(p->cfd);
	if (p->owned && p->fd >= 0)
		close(p->fd);
	free(p->buf);
	lb_slotset_free(&p->held);
	lb_lockset_free(&p->met);
	free(p->fgn);
	free(p);
}

static int file_keep_on_exec(struct lb_pool *pool, const struct lb_ident *who)
{
	struct filepool *p = fp(pool);

	if (fcntl(p->fd, F_SETFD, 0) != 0) {
		lb_warn("%s", p->name);
		return -1;
	}
	/* a maximum hold: a watcher beside the command, for the lock on p->fd */
	if (p->max_hold > 0 && who != NULL)
		return lb_filewatch_start(pool, p->fd, who, p->on_loss, p->max_hold);
	return 0;
}

/*
 * Whether H's recorded process has ended while its slot is held: then
 * the lock lives on in processes that inherited its open file (a job's
 * children), and the first of them found is named (H->keeper).
 */
static void holder_gone(struct filepool *p, struct lb_holder *h)
{
	struct lb_lockinfo l;

	if (!lb_ident_ended(&h->who))
		return;
#ifdef HAVE_OFD_LOCKS
	l.lo = l.hi = (long long)lb_slot_offset(h->slot);
	l.pid = 0;
	l.write = 1;
	l.ofd = 1;
	h->keeper = lb_lock_keeper(p->fd, &l, 0);
	/*
	 * No process holds it: the holder ended since the look, and the
	 * slot went with it (its lock is not held now), or the keeper is
	 * another user's (the slot is still held).
	 */
	h->gone = h->keeper > 0 || lb_lock_conflict(p->cfd, F_WRLCK, (off_t)l.lo, 1, &l) == 1;
#else
	/* a classic POSIX lock dies with its process: the slot is free by now */
	(void)p;
	(void)l;
#endif
}

/* The holders: of the slots in p->held, from the records in buf; then another program's locks. */
static int describe(struct filepool *p, struct lb_holders *out)
{
	size_t i, held = p->hdr_foreign ? 0 : p->held.n;

	out->n = 0;
	out->v = calloc(held + p->nfgn ? held + p->nfgn : 1, sizeof *out->v);
	if (out->v == NULL) {
		lb_warn("%s", p->name);
		return -1;
	}
	for (i = 0; i < held; i++) {
		struct lb_holder *h = &out->v[out->n++];

		h->slot = p->held.v[i];
		h->known = fp_state(p, h->slot) == LB_REC_HELD;
		if (h->known) {
			lb_record_decode(fp_record(p, h->slot), &h->who);
			h->shared = lb_record_shared(fp_record(p, h->slot));
			holder_gone(p, h);
		}
	}
	for (i = 0; i < p->nfgn; i++) {
		struct lb_holder *h = &out->v[out->n++];
		const struct lb_lockinfo *l = &p->fgn[i];

		h->slot = fp_slot_of(l);
		h->foreign = 1;
		h->foreign_write = l->write;
		h->lock_lo = l->lo;
		h->lock_hi = l->hi;
		/* its name as the kernel gives it (/proc/PID/comm), never its arguments */
		if (l->pid > 0)
			lb_ident_fill(&h->who, l->pid, NULL, 0);
	}
	return 0;
}

/*
 * An arrival when nobody gets through the header (FP_STALLED): a slot
 * taken without it (fp_take_bare); every slot busy, one who waits joins
 * the queue, at its head when nobody else waits. As arrive returns.
 */
static enum fp_step arrive_bare(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, uint64_t *ticket)
{
	int queued = fp_queue_busy(p);
	enum fp_step r;

	if (p->shared && queued && lb_remaining(deadline) == 0) {
		p->behind = 2;	/* as arrive: a shared request goes behind those queued */
		return FP_BUSY;
	}
	r = fp_take_bare(p, max, who, slot);
	if (r != FP_BUSY || lb_remaining(deadline) == 0)
		return r;
	r = fp_queue_join(p, deadline, ticket);
	return r != FP_TAKEN ? r : queued ? FP_QUEUED : FP_HEAD;
}

/*
 * A caller's arrival: a slot taken at once or, for one who waits, a place
 * in the queue: at its back (*TICKET) when others wait, at its head
 * when nobody does. FP_TAKEN, FP_BUSY (or DEADLINE passed), FP_QUEUED
 * behind others, FP_HEAD (every slot busy, p->held lists them),
 * FP_NOT_LOCK or FP_ERROR.
 */
static enum fp_step arrive(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, uint64_t *ticket)
{
	off_t size;
	enum fp_step r;

	/*
	 * One who waits goes behind those waiting, and needs no header lock
	 * for that; the ticket count is written into lockbox files only (a
	 * file without a header yet gets one under the header lock first).
	 */
	if (lb_remaining(deadline) != 0 && fp_queue_busy(p)) {
		size = lb_lockfile_identify(p->cfd, p->name, p->any_ok ? LB_ID_ANY : 0);
		if (size < 0)
			return size == LB_ID_NOT_LOCK ? FP_NOT_LOCK : FP_ERROR;
		if (size >= LB_HDR_SIZE) {
			r = fp_queue_join(p, deadline, ticket);
			return r == FP_TAKEN ? FP_QUEUED : r;
		}
	}
	r = fp_enter(p, deadline, &size);
	if (r == FP_STALLED)
		return arrive_bare(p, max, deadline, who, slot, ticket);
	if (r != FP_TAKEN)
		return r;
	/*
	 * A shared request never goes past one that waits: the one queued
	 * may be a request for the lock alone, waiting for the shared holders
	 * to go, and later shared ones would keep it out for ever.
	 */
	if (p->shared && lb_remaining(deadline) == 0 && fp_queue_busy(p)) {
		fp_header_unlock(p);
		p->behind = 2;
		return FP_BUSY;
	}
	if (lb_remaining(deadline) == 0 || !fp_queue_busy(p)) {
		r = fp_take_slot(p, size, max, who, NULL, slot);
		/*
		 * every slot busy and nobody queued: the head already, with the
		 * scan in hand; its ticket is taken before the header goes, so
		 * that whoever comes next finds a queue to go behind
		 */
		if (r == FP_BUSY && lb_remaining(deadline) != 0) {
			r = fp_queue_join(p, deadline, ticket);
			r = r == FP_TAKEN ? FP_HEAD : r;
		}
		fp_header_unlock(p);
		return r;
	}
	fp_header_unlock(p);
	r = fp_queue_join(p, deadline, ticket);
	return r == FP_TAKEN ? FP_QUEUED : r;
}

static int look(struct filepool *p);

/*
 * A wait that ran out in the queue: what kept it is the holders when MAX
 * of them hold (the waiters ahead wait for them too), else the waiter
 * ahead (p->ahead).
 */
static void blame_ahead(struct filepool *p, unsigned max)
{
	struct lb_ident who;
	size_t i;

	if (look(p) != 0)
		return;
	/* a shared request is kept out by a holder that is not shared */
	for (i = 0; p->shared && i < p->held.n; i++)
		if (fp_state(p, p->held.v[i]) != LB_REC_HELD ||
		    !lb_record_shared(fp_record(p, p->held.v[i])))
			return;
	if ((!p->shared && p->held.n >= max) || p->nfgn > 0)
		return;
	if (p->behind == 2) {
		/* refused at once, not waited in the queue */
		p->base.why_at_once = 1;
		snprintf(p->base.why, sizeof p->base.why,
		    "another request waits in the queue, and a shared one does not go past it");
		return;
	}
	if (p->ahead > 0) {
		lb_ident_fill(&who, p->ahead, NULL, 0);
		snprintf(p->base.why, sizeof p->base.why, "waiting behind PID %d (%s%s) in the queue",
		    (int)p->ahead, who.command, p->ahead_stopped ? ", stopped" : "");
	} else {
		snprintf(p->base.why, sizeof p->base.why, "waiting behind another waiter in the queue");
	}
}

/*
 * A lock file's slot: arrive, then a turn in the queue or the head's wait.
 * FP_TAKEN, FP_BUSY (*BUSY described), FP_ERROR, or FP_NOT_LOCK for a
 * mutex's pool whose file is no lock file now (cut short or overwritten
 * since it was opened).
 */
static enum fp_step acquire_slot(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	uint64_t ticket;
	enum fp_step r;

	p->behind = 0;
	for (;;) {
		ticket = UINT64_MAX;
		r = arrive(p, max, deadline, who, slot, &ticket);
		if (r == FP_QUEUED) {
			r = fp_queue_turn(p, ticket, deadline);
			if (r == FP_TAKEN) {
				fp_queue_head(p, ticket);
				r = fp_try_take(p, max, deadline, who, NULL, slot);
			}
		} else if (r == FP_HEAD) {
			fp_queue_head(p, ticket);
		}
		if (r == FP_HEAD)
			r = fp_head_wait(p, max, deadline, who, slot);
		if (ticket != UINT64_MAX)
			fp_queue_leave(p, ticket);
		if (r != FP_STOPPED)
			break;
		/* ^Z: the place in the queue is given up; stop, and queue again after */
		lb_await_suspend();
	}
	if (r == FP_BUSY && busy != NULL && p->path_busy)
		return look(p) != 0 || describe(p, busy) != 0 ? FP_ERROR : FP_BUSY;
	if (r == FP_BUSY && busy != NULL) {
		if (p->behind)
			blame_ahead(p, max);
		/*
		 * Slots were found busy: whose locks are another program's is
		 * told with records read now, under the lookers' lock (a slot
		 * taken since the scan has its record by now).
		 */
		if (!p->hdr_foreign && p->loaded != 0 && look_foreign(p) != 0)
			return FP_ERROR;
		return describe(p, busy) != 0 ? FP_ERROR : FP_BUSY;
	}
	return r;
}

/* Whether the path names, now, the file open on FD (not moved, replaced or deleted). */
static int at_path(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(AT_FDCWD, path, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int file_release(struct lb_pool *pool, pid_t owner);

/* A caller's fd on a file no longer at its path: the lock is not taken; open it again. */
static int replaced(struct lb_pool *pool)
{
	pool->why_at_once = 1;
	snprintf(pool->why, sizeof pool->why,
	    "replaced at its path since it was opened; open it again");
	return 0;
}

/*
 * An acquisition of the file as it is: a lock file's slot, or any file's
 * lock. Then the path looked up again. The file is opened again, and the
 * acquisition made again on what is there then, when
 *  - it has changed kind while we waited: a lock file cut short or
 *    overwritten (acquire_slot: FP_NOT_LOCK), a file made a lock file
 *    (fa_acquire: FP_BECAME_LOCK);
 *  - a lock was taken on a file that has been moved, replaced or deleted
 *    since it was opened: it locks nothing anyone else will open by that
 *    path, and is given back.
 * A few times at most, or for as long as the caller waits. A caller's fd
 * (--fd, with --path) cannot be opened again here: the lock is not taken,
 * and the caller is told why.
 */
static int file_acquire(struct lb_pool *pool, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	struct filepool *p = fp(pool);
	enum fp_step r;
	int tries;

	for (tries = 1;; tries++) {
		/* a pool of one, or a shared holder, is seen by flock(2)'s users too */
		p->path_op = p->shared ? LOCK_SH : max == 1 ? LOCK_EX : 0;
		p->path_busy = 0;
		/* a caller's fd on a file replaced at its path since it was opened: not waited on */
		if (!p->owned && p->path != NULL && !at_path(p->fd, p->path))
			return replaced(pool);
		if (p->any) {
			r = fa_acquire(p, max, deadline, slot);
			if (r == FP_BUSY && busy != NULL && fa_holders(p, 0, busy) != 0)
				return -1;
		} else {
			r = acquire_slot(p, max, deadline, who, slot, busy);
		}
		if (r == FP_TAKEN) {
			if (p->path == NULL || at_path(p->fd, p->path))
				return 1;
			/* moved, replaced or deleted while we waited: given back */
			if ((p->any ? fa_release(p) : file_release(pool, who->pid)) != 0)
				return -1;
			if (!p->owned)
				return replaced(pool);
		} else if (r == FP_NOT_LOCK) {
			/*
			 * a mutex's lock file cut short or overwritten, or held as
			 * any file: locked as any file, through the same fd (one
			 * open for writing is a lock file's, not a script's)
			 */
			p->any = 1;
			p->any_forced = 1;
			pool->caps |= LB_POOL_FLOCK;
			continue;
		} else if (r != FP_BECAME_LOCK) {
			return r;	/* FP_BUSY or FP_ERROR: the pool's 0 and -1 */
		}
		if (tries >= REOPEN_TRIES && lb_remaining(deadline) == 0) {
			lb_warnx("%s: replaced or changed again and again while being locked; giving up",
			    p->name);
			return -1;
		}
		if (reopen(p) != 0)
			return -1;
	}
}

/* The slot the caller's open file holds already, found in its own lock list. */
static unsigned file_own_slot(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);
	struct lb_slotset own = { NULL, 0, 0 };
	unsigned slot = 0;

	if (p->any)
		return 0;	/* flock(2) takes again what it holds, as flock(1) does */
	if (lb_scan_own(p->fd, &own) == 0 && own.n > 0)
		slot = own.v[0];
	lb_slotset_free(&own);
	return slot;
}

static int file_release(struct lb_pool *pool, pid_t owner)
{
	struct filepool *p = fp(pool);
	struct lb_slotset own = { NULL, 0, 0 };
	unsigned char magic[LB_MAGIC_LEN];
	/*
	 * The bytes this open file may hold: its slots; a caller's fd (whose
	 * header locks are on an open file of our own) anything up to the
	 * queue, as any file's lock too (taken when the file was no lock file)
	 */
	off_t lo = p->fd != p->cfd ? 0 : LB_HDR_SIZE;
	off_t len = (p->fd != p->cfd ? LB_PATH_LEN : lb_slot_offset(LB_SLOT_LIMIT + 1)) - lo;
	off_t size;
	size_t i;
	int r, rc = 0;

	if (p->any)
		return fa_release(p);
	if (fp_pread_all(p, magic, sizeof magic, 0) != 0)
		return -1;
	if (lb_scan_own(p->fd, &own) != 0)
		own.n = 0;
	/*
	 * A file that is not a lock file keeps whatever locks the caller put
	 * on it; one that was cut short under its holders is written no
	 * more, but the slot this open file holds in it goes all the same.
	 */
	if (memcmp(magic, LB_MAGIC, LB_MAGIC_LEN) != 0 && own.n == 0) {
		lb_warnx("%s: not a lockbox lock file; refusing to touch it", p->name);
		return -1;
	}
	/*
	 * The flock(2) lock first, the slot last: a waiter that the slot's
	 * unlock wakes finds the flock(2) lock free already.
	 */
	if (flock(p->fd, LOCK_UN) != 0) {
		lb_warn("%s: cannot unlock", p->name);
		lb_slotset_free(&own);
		return -1;
	}
	if (memcmp(magic, LB_MAGIC, LB_MAGIC_LEN) != 0) {
		lb_slotset_free(&own);
		if (lb_lock_try(p->fd, F_UNLCK, lo, len) < 0) {
			lb_warn("%s: cannot unlock", p->name);
			return -1;
		}
		return 0;
	}
	/*
	 * The records first, then the slots: a waiter woken by the unlock
	 * finds the header free at once, rather than waiting on ours while
	 * we clear them (a release --fd, as the shell library's, is followed
	 * by a handoff). Our records are ours to clear while we hold their
	 * slots. The slots go even when the header cannot be had (another
	 * program holds it, or the file is no lock file since): a record left
	 * behind is only stale, and stale records are cleaned up later.
	 */
	r = fp_enter(p, LB_NO_WAIT, &size);
	if (r != 1) {
		lb_slotset_free(&own);
		if (lb_lock_try(p->fd, F_UNLCK, lo, len) < 0) {
			lb_warn("%s: cannot unlock", p->name);
			return -1;
		}
		return r == -1 ? -1 : 0;
	}
	if (fp_load(p, size) != 0)
		rc = -1;
	for (i = 0; rc == 0 && i < own.n; i++) {
		unsigned s = own.v[i];
		struct lb_ident who;

		if (fp_state(p, s) != LB_REC_HELD)
			continue;
		lb_record_decode(fp_record(p, s), &who);
		if (who.pid != owner)
			continue;
		/* the whole record: a command line says nothing once its run is over */
		memset(fp_record(p, s), 0, LB_REC_SIZE);
		if (fp_pwrite_all(p, fp_record(p, s), LB_REC_SIZE, lb_slot_offset(s)) != 0)
			rc = -1;
	}
	/* tells a waiter at the head that a slot was freed: the count changes, then a wake-up */
	if (fp_set_header_word(p, LB_HDR_OFF_RELEASES, fp_header_word(p, LB_HDR_OFF_RELEASES) + 1) != 0)
		rc = -1;
	fp_header_unlock(p);
	if (lb_lock_try(p->fd, F_UNLCK, lo, len) < 0) {
		lb_warn("%s: cannot unlock", p->name);
		rc = -1;
	}
	lb_wake_word(p->cfd, LB_HDR_OFF_RELEASES);
	lb_slotset_free(&own);
	return rc;
}

/*
 * A shared header lock keeps records steady while they are read, and
 * tells which slots can be locked at all (scan); a header held by a
 * stopped process is waited on briefly, never for long, and then the
 * slots are found without that help. 1 locked, 0 not.
 */
static int look_lock(struct filepool *p)
{
	struct lb_lockinfo l;
	int r = lb_lock_try(p->cfd, F_RDLCK, 0, LB_HDR_LOOK_LEN);

	if (r != 0)
		return r == 1;
	/* another program's lock is not let go of in microseconds: read without it */
	if (lb_lock_conflict(p->cfd, F_RDLCK, 0, LB_HDR_LOOK_LEN, &l) == 1 &&
	    !lb_lock_is_lockbox(&l))
		return 0;
	return lb_await_lock_one(p->cfd, F_RDLCK, 0, LB_HDR_LOOK_LEN, lb_deadline_after(LOOK_WAIT),
	    1) == LB_GRANTED;
}

/*
 * The file's size for a look; a mutex's file that is no lock file now
 * (cut short or overwritten under its holders) has no records: 0.
 */
static off_t look_size(struct filepool *p)
{
	off_t size = lb_lockfile_identify(p->cfd, p->name, p->any_ok ? LB_ID_ANY : 0);

	return size == LB_ID_NOT_LOCK ? 0 : size;
}

/*
 * Find the held slots (p->held), read the records, and find another
 * program's locks (p->fgn). 0, or -1 (reported).
 */
static int look(struct filepool *p)
{
	int locked = look_lock(p), rc = -1;
	off_t size = look_size(p);

	p->nfgn = 0;
	p->hdr_foreign = 0;
	if (size >= 0 && fp_load(p, size) == 0 && fp_scan(p) == 0 &&
	    fp_find_foreign(p, locked) == 0)
		rc = 0;
	if (locked)
		fp_header_unlock(p);
	return rc;
}

/* After a refusal: another program's locks (p->fgn), with fresh records. 0, or -1 (reported). */
static int look_foreign(struct filepool *p)
{
	int locked = look_lock(p), rc = -1;
	off_t size = look_size(p);

	if (size >= 0 && fp_load(p, size) == 0 && fp_find_foreign(p, locked) == 0)
		rc = 0;
	if (locked)
		fp_header_unlock(p);
	return rc;
}

static int file_holders(struct lb_pool *pool, struct lb_holders *out)
{
	struct filepool *p = fp(pool);

	if (p->fd < 0)
		return 0;	/* no file: nobody holds it */
	if (p->any)
		return fa_holders(p, 0, out);
	return look(p) != 0 ? -1 : describe(p, out);
}

static int file_waiters(struct lb_pool *pool, struct lb_holders *out)
{
	struct filepool *p = fp(pool);
	struct lb_queued *q;
	size_t n;

	if (p->fd < 0)
		return 0;	/* no file: nobody waits */
	if (p->any)
		return fa_holders(p, 1, out);
	if (lb_scan_queue(p->cfd, &q, &n) != 0) {
		lb_warn("%s: cannot look at the queue", p->name);
		return -1;
	}
	out->v = calloc(n ? n : 1, sizeof *out->v);
	if (out->v == NULL) {
		lb_warn("%s", p->name);
		free(q);
		return -1;
	}
	for (out->n = 0; out->n < n; out->n++)
		fp_queue_row(&out->v[out->n], &q[out->n], (unsigned)out->n + 1);
	free(q);
	return 0;
}

/* As file_holders, without describing anyone. */
static int file_count(struct lb_pool *pool, size_t *n)
{
	struct filepool *p = fp(pool);

	struct lb_holders h;

	*n = 0;
	if (p->fd < 0)
		return 0;
	if (p->any) {
		if (fa_holders(p, 0, &h) != 0)
			return -1;
		*n = h.n;
		lb_holders_free(&h);
		return 0;
	}
	if (look(p) != 0)
		return -1;
	*n = p->held.n + p->nfgn;
	return 0;
}

static int file_atom(struct lb_pool *pool, lb_atom_fn *fn, void *arg)
{
	struct filepool *p = fp(pool);
	unsigned char area[LB_ATOM_SIZE];
	struct lb_atom_clock now;
	off_t size;
	int r;

	if (p->any) {
		lb_warnx("%s: not a lockbox lock file; refusing to touch it", p->name);
		return -1;
	}
	r = fp_enter(p, LB_NO_WAIT, &size);

	if (r != 1) {
		if (r == 0)
			fp_warn_foreign(p);
		/* a run's state is written under the header: no way round it */
		if (r == FP_STALLED)
			lb_warnx("%s: the header stayed locked, and nobody got through it", p->name);
		return -1;
	}
	if (fp_pread_all(p, area, sizeof area, LB_ATOM_OFF) != 0) {
		fp_header_unlock(p);
		return -1;
	}
	lb_atom_local_clock(&now);
	r = fn(area, sizeof area, &now, arg);
	if (r == 1 && fp_pwrite_all(p, area, sizeof area, LB_ATOM_OFF) != 0)
		r = -1;
	fp_header_unlock(p);
	return r;
}

static int file_atom_read(struct lb_pool *pool, unsigned char *area, size_t len,
    struct lb_atom_clock *now)
{
	struct filepool *p = fp(pool);
	off_t size;
	int locked, rc = -1;

	lb_atom_local_clock(now);
	if (p->fd < 0)
		return 0;	/* no file: no state */
	locked = look_lock(p);
	size = lb_lockfile_identify(p->cfd, p->name, 0);
	if (size >= 0 && fp_pread_all(p, area, len < LB_ATOM_SIZE ? len : LB_ATOM_SIZE, LB_ATOM_OFF) == 0)
		rc = size > 0;
	if (locked)
		fp_header_unlock(p);
	return rc;
}

static int file_lock_site(struct lb_pool *pool, unsigned slot, struct lb_lock_site *site)
{
	struct filepool *p = fp(pool);
	struct stat st;

	if (p->any) {
		errno = ENOTSUP;
		return -1;
	}
	if (p->fd < 0 || fstat(p->fd, &st) != 0)
		return -1;
	site->dev = st.st_dev;
	site->ino = st.st_ino;
	site->byte = lb_slot_offset(slot);
	return 0;
}

static int file_moved(struct lb_pool *pool, pid_t *pids, size_t max, size_t *n)
{
	struct filepool *p = fp(pool);

	/* a caller's fd names no path of ours to look at */
	return p->owned || p->fd < 0 ? lb_scan_moved(p->name, pids, max, n) : 0;
}

static const struct lb_pool_ops file_ops = {
	.acquire = file_acquire,
	.own_slot = file_own_slot,
	.release = file_release,
	.holders = file_holders,
	.waiters = file_waiters,
	.count = file_count,
	.atom = file_atom,
	.atom_read = file_atom_read,
	.lock_site = file_lock_site,
	.moved = file_moved,
	.keep_on_exec = file_keep_on_exec,
	.close = file_close,
};

/* SPDX-License-Identifier: ISC */
/*
 * The wait queue of the lock-file backend, its tail and its head: the
 * tickets, the join byte, the turn, the stopped-waiter rule, the reports
 * of locks in the queue's bytes that lockbox did not take; and the head's
 * wait for a slot, with the kernel events it watches the holders with
 * (lock requests, pidfds, the release word, last closes).
 *
 * Waiting (-w) is a queue served in arrival order. A waiter takes a ticket
 * t under the queue's join lock (not the header's) and write-locks queue
 * byte t; then it waits for the waiter ahead of it to go (taken a slot,
 * given up, or died: the kernel drops a dead waiter's bytes), with a lock
 * request on that one's byte, so each departure wakes one waiter (see
 * fp_queue_turn). The one at the head (fp_head_wait) watches the holders
 * and takes the first slot that frees; nobody else looks. A waiter that
 * finds nobody queued is the head at once: it takes its ticket before it
 * lets the header go, without a second look at the slots, and sets its
 * watches after. Attempts that do not wait never queue: they take a free
 * slot or give up.
 *
 * A waiter that is stopped (SIGSTOP, a background job's SIGTTIN or
 * SIGTTOU, a debugger; ^Z is caught, and gives the place up first) still
 * holds its ticket, and would stall everyone behind it.
 * The rule: running waiters are served in arrival order; a stopped one
 * is passed over for as long as it is stopped. A waiter waits for the
 * nearest one ahead of it that is not stopped, and goes to the head when
 * all of those ahead are (see fp_queue_turn). Why not give a stopped waiter
 * its place back: it has no deadline of its own while stopped, and whoever
 * waits behind it has one. A stopped waiter that is continued keeps its
 * ticket, and is ahead again of those that had not passed it yet; one
 * that had passed it, at the head, competes with it for the next slot.
 *
 * The queue's bytes are locked by lockbox only with write locks (a ticket,
 * the join byte): anyone who can read the file can put a read lock on
 * them, and such a lock, or any other that is not a waiter's, stops an
 * attempt at once (as a busy pool does), naming the process from the
 * kernel's lock table. No loop over lock bytes is unbounded, and each ends
 * at the caller's deadline.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "err.h"
#include "filepool.h"
#include "host.h"
#include "lockfile.h"
#include "lockscan.h"
#include "lockwait.h"
#include "proc.h"
#include "wait.h"

/* a ticket count past this is not a real queue's: it starts again at 0 */
#define QUEUE_TICKETS	LB_QUEUE_TICKETS
/* ticket bytes still held past the count that a joiner passes, at most */
#define QUEUE_SKIP	1024
/* how often a waiter looks whether the one it waits for is stopped */
#define QUEUE_RECHECK_MS	1000
/* stopped waiters a waiter passes at one look, at most */
#define QUEUE_PASS	64

/*
 * A lock that lockbox did not take, of TYPE, on byte AT of the queue's
 * bytes (the join byte, a ticket's): the attempt ends at once, as when
 * a slot is held, and the message names the process that holds it, from
 * the kernel's lock table (HINT: the PID the kernel gave for it, if any).
 */
static void queue_foreign(struct filepool *p, off_t at, short type, pid_t hint)
{
	pid_t pid = lb_scan_locker(p->cfd, at, type);
	struct lb_ident who;

	if (pid <= 0)
		pid = hint;
	if (pid > 0) {
		lb_ident_fill(&who, pid, NULL, 0);
		snprintf(p->base.why, sizeof p->base.why,
		    "the wait queue is blocked by a %s lock lockbox did not take (PID %d, %s)",
		    type == F_RDLCK ? "read" : "write", (int)pid, who.command);
	} else {
		snprintf(p->base.why, sizeof p->base.why,
		    "the wait queue is blocked by a %s lock lockbox did not take (PID ?)",
		    type == F_RDLCK ? "read" : "write");
	}
	p->base.why_at_once = 1;
}

/* Whether some waiter holds a ticket (a queue byte is locked). */
int fp_queue_busy(struct filepool *p)
{
	struct flock c;

	return lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF, 0, &c) == 0;
}

/*
 * Take the next ticket, in a file known to have a header, under the join
 * byte's lock rather than the header's: a crowd of waiters arriving at
 * once then never keeps the header, which the head needs to take a slot,
 * from the head (a process holding a lock can be descheduled for as long
 * as hundreds of others run). The count is a hint, as every header value
 * is: a count of QUEUE_TICKETS or more (written by someone else: a
 * real queue never gets near it) starts the queue again at 0, and a
 * ticket byte that another waiter still holds (a count that went back)
 * is passed, at most QUEUE_SKIP of them. A ticket byte locked otherwise
 * than by a waiter (a read lock, a range) is a lock lockbox did not
 * take, reported at once. FP_TAKEN joined, FP_BUSY: DEADLINE passed or
 * a foreign lock (p->base.why says which), FP_ERROR (reported).
 */
enum fp_step fp_queue_join(struct filepool *p, int64_t deadline, uint64_t *ticket)
{
	uint64_t t;
	unsigned skips = 0;
	struct flock c;
	off_t at = 0;
	int r = fp_progress_lock(p, F_WRLCK, LB_JOIN_OFF, 1, LB_HDR_OFF_TICKET, deadline, "queue", 1);

	if (r != 1) {
		if (r == 0 && p->reader)
			queue_foreign(p, p->reader_at, F_RDLCK, p->reader_pid);
		/* another program's lock over it is named as a holder (describe) */
		if (r == 0 && p->base.why[0] == '\0' && !p->hdr_foreign)
			snprintf(p->base.why, sizeof p->base.why,
			    "the wait queue's join lock stayed locked (a stopped process?)");
		return r;
	}
	t = fp_read_count(p, LB_HDR_OFF_TICKET);
	if (t >= QUEUE_TICKETS)
		t = 0;
	for (;;) {
		at = LB_QUEUE_OFF + (off_t)t;
		r = lb_lock_try(p->cfd, F_WRLCK, at, 1);
		if (r != 0)
			break;
		r = lb_lock_test(p->cfd, F_WRLCK, at, 1, &c);
		if (r < 0)
			break;
		/*
		 * A waiter write-locks its ticket's byte alone; the kernel
		 * shows it merged with its join byte when it holds ticket 0.
		 */
		if (r == 0 && (c.l_type != F_WRLCK || c.l_len <= 0 || c.l_start + c.l_len <= at ||
		    (c.l_len != 1 && !(c.l_start == LB_JOIN_OFF && c.l_len == 2)))) {
			queue_foreign(p, at, c.l_type, c.l_pid);
			lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
			return FP_BUSY;
		}
		if (r == 0)
			t = (uint64_t)(c.l_start + c.l_len - LB_QUEUE_OFF);
		if (++skips == QUEUE_SKIP || lb_remaining(deadline) == 0) {
			r = skips == QUEUE_SKIP ? -1 : 0;
			if (r < 0)
				lb_warnx("%s: cannot join the queue: %u tickets past its count are taken",
				    p->name, QUEUE_SKIP);
			lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
			return r;
		}
	}
	if (r < 0 || fp_set_header_word(p, LB_HDR_OFF_TICKET, t + 1) != 0) {
		if (r < 0)	/* a failed write has said so */
			lb_warn("%s: cannot join the queue", p->name);
		if (r == 1)
			lb_lock_try(p->cfd, F_UNLCK, at, 1);
		lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
		return FP_ERROR;
	}
	lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
	/* the mark that names us in list: a failure only leaves us unnamed */
	lb_lock_try_process(p->cfd, F_RDLCK, LB_WAITER_OFF + 2 * (off_t)t + (p->shared != 0), 1);
	*ticket = t;
	return FP_TAKEN;
}

void fp_queue_leave(struct filepool *p, uint64_t ticket)
{
	lb_lock_try_process(p->cfd, F_UNLCK, LB_WAITER_OFF + 2 * (off_t)ticket, 2);
	lb_lock_try(p->cfd, F_UNLCK, LB_QUEUE_OFF, (off_t)ticket + 1);
}

/*
 * The highest ticket below TICKET whose byte another waiter holds, in
 * *AHEAD: 1, or 0 when there is none (our turn), or -1 (reported). Most
 * often it is the one just before ours; else (a waiter gave up, or died)
 * a search, each test a walk of the file's lock list.
 */
static int queue_ahead(struct filepool *p, uint64_t ticket, uint64_t *ahead)
{
	uint64_t lo, hi = ticket;
	struct flock c;
	int r;

	if (ticket == 0)
		return 0;
	r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)ticket - 1, 1, &c);
	if (r == 0) {
		*ahead = ticket - 1;
		return 1;
	}
	/* (a length of 0 would mean "to the end": ticket 1 has nobody else ahead) */
	if (r == 1 && ticket == 1)
		return 0;
	if (r == 1)
		r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF, (off_t)ticket - 1, &c);
	if (r == 1)
		return 0;
	/* [lo, hi) holds a locked byte, and lo is one */
	lo = r == 0 && c.l_start > LB_QUEUE_OFF ? (uint64_t)(c.l_start - LB_QUEUE_OFF) : 0;
	if (lo >= hi)
		lo = 0;
	while (r >= 0 && hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)mid, (off_t)(hi - mid), &c);
		if (r == 0)
			lo = mid;
		else
			hi = mid;
	}
	if (r < 0) {
		lb_warn("%s: cannot look at the queue", p->name);
		return -1;
	}
	*ahead = lo;
	return 1;
}

/*
 * The waiters ahead that a waiter has looked up: which process holds
 * which ticket (found once: a look through /proc costs), and its start
 * time, so that a PID used again is not taken for it.
 */
struct queue_seen {
	uint64_t ticket[QUEUE_PASS];
	pid_t pid[QUEUE_PASS];
	uint64_t start[QUEUE_PASS];
	size_t n;
};

/*
 * Whether the waiter holding TICKET is stopped (state T or t: SIGSTOP,
 * a background job's SIGTTIN or SIGTTOU, a debugger). A frozen cgroup's
 * tasks do not show as stopped: they count as running. One not seen
 * before is looked up only with LOOKUP; else it counts as running.
 */
static int queue_stopped(struct filepool *p, struct queue_seen *seen, uint64_t ticket,
    int lookup, pid_t *pid)
{
	struct lb_proc_stat st;
	size_t i;

	for (i = 0; i < seen->n && seen->ticket[i] != ticket; i++)
		;
	if (i == seen->n) {
		*pid = 0;
		if (!lookup)
			return 0;
		/*
		 * Kept only when found: a waiter not found now (its lock
		 * not yet shown, its process hidden from us) is looked up
		 * again at the next look, never taken for running for good.
		 */
		*pid = lb_scan_locker(p->cfd, LB_QUEUE_OFF + (off_t)ticket, F_WRLCK);
		if (*pid <= 0)
			return 0;
		if (i == QUEUE_PASS)
			i = seen->n = 0;	/* forget the oldest looks: a rare queue */
		seen->ticket[i] = ticket;
		seen->pid[i] = *pid;
		seen->start[i] = lb_proc_starttime(*pid);
		seen->n++;
	}
	*pid = seen->pid[i];
	if (*pid <= 0 || lb_proc_stat(*pid, &st) != 0 || st.starttime != seen->start[i])
		return 0;
	return st.state == 'T' || st.state == 't';
}

/*
 * The waiter to wait for: the nearest one ahead of TICKET that is not
 * stopped (see the top of the file), passing at most QUEUE_PASS stopped
 * ones; one not seen before is looked up only with LOOKUP. 1 with
 * *AHEAD (and its PID, 0 if not looked up), 0 none (our turn), -1 error
 * (reported).
 */
static int queue_next(struct filepool *p, uint64_t ticket, struct queue_seen *seen,
    int lookup, uint64_t *ahead, pid_t *pid)
{
	uint64_t below = ticket;
	int r = 0, passes;

	for (passes = 0; passes < QUEUE_PASS; passes++) {
		r = queue_ahead(p, below, ahead);
		if (r <= 0 || !queue_stopped(p, seen, *ahead, lookup, pid))
			return r;
		below = *ahead;
	}
	return r;
}

/* Tell the pool's progress function our place: one read of the lock table. */
static void queue_progress(struct filepool *p, uint64_t ticket)
{
	struct lb_queued *q;
	size_t n, i;
	unsigned place = 1;

	if (p->base.progress == NULL)
		return;
	if (lb_scan_queue(p->cfd, &q, &n) != 0) {
		lb_pool_progress(&p->base, 0, NULL);
		return;
	}
	for (i = 0; i < n; i++)
		place += q[i].ticket < ticket;
	free(q);
	lb_pool_progress(&p->base, place, NULL);
}

/*
 * Wait for our turn: every earlier ticket gone, or held by a waiter that
 * is stopped. A waiter waits for the one ahead of it only, with a lock
 * request on that ticket's byte, which is granted as that waiter goes.
 * (One request on all the bytes before ours would do it in one wait, but
 * the kernel keeps overlapping requests in a chain, and a request that
 * has to wait again first wakes every one chained behind it: each
 * departure would wake the whole queue, one after the other.) A stopped
 * process sends no event, so a waiter looks whether the one it waits
 * for is stopped every QUEUE_RECHECK_MS, and at once when the one it
 * waited for went and left an earlier one ahead (which that one passed,
 * or would have been behind): a newcomer behind the last of a moving
 * queue never looks through /proc. FP_TAKEN our turn, FP_BUSY the
 * deadline (p->ahead: for whom), FP_STOPPED by ^Z (the ticket is given
 * back first), FP_ERROR (reported).
 */
enum fp_step fp_queue_turn(struct filepool *p, uint64_t ticket, int64_t deadline)
{
	struct queue_seen seen = { { 0 }, { 0 }, { 0 }, 0 };
	struct lb_wait w;
	struct lb_wait_event ev;
	uint64_t ahead, waiting = 0;
	enum fp_step step = FP_ERROR;
	int r, asked = 0;
	pid_t pid;

	r = queue_next(p, ticket, &seen, 0, &ahead, &pid);
	if (r <= 0)
		return r == 0 ? FP_TAKEN : FP_ERROR;	/* nobody ahead: our turn */
	if (lb_wait_init(&w) != 0 || lb_wait_stop(&w) != 0) {
		lb_warn("%s: cannot wait", p->name);
		lb_wait_done(&w);
		return FP_ERROR;
	}
	queue_progress(p, ticket);
	for (;;) {
		if (asked && ahead != waiting) {
			lb_wait_clear_locks(&w);
			asked = 0;
		}
		if (!asked && lb_wait_on_lock(&w, p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)ahead, 1, 0, 0) != 0) {
			lb_warn("%s: cannot wait", p->name);
			break;
		}
		asked = 1;
		waiting = ahead;
		r = lb_wait_run(&w, deadline, QUEUE_RECHECK_MS, &ev);
		if (r == 1 && ev.kind == LB_EV_RECHECK)
			queue_progress(p, ticket);
		if (r == 1 && ev.kind == LB_EV_STOP) {
			step = FP_STOPPED;
			break;
		}
		if (r == 1 && ev.kind == LB_EV_LOCK && ev.err != 0) {
			errno = ev.err;
			lb_warn("%s: cannot wait in the queue", p->name);
			break;
		}
		if (r != 1) {
			if (r < 0) {
				lb_warn("%s: cannot wait", p->name);
			} else {	/* the deadline */
				p->behind = 1;
				p->ahead_stopped = queue_stopped(p, &seen, ahead, 1, &p->ahead);
				step = FP_BUSY;
			}
			break;
		}
		if (ev.kind == LB_EV_LOCK) {
			lb_wait_clear_locks(&w);	/* granted and dropped: that one went */
			asked = 0;
		}
		r = queue_next(p, ticket, &seen, 1, &ahead, &pid);
		if (r <= 0) {
			step = r == 0 ? FP_TAKEN : FP_ERROR;
			break;
		}
	}
	lb_wait_done(&w);
	return step;
}

void fp_queue_row(struct lb_holder *h, const struct lb_queued *q, unsigned place)
{
	if (q->foreign) {
		/* another program's lock: it keeps every waiter out, and is shown among them */
		h->foreign = 1;
		h->in_queue = 1;
		h->foreign_write = q->l.write;
		h->lock_lo = q->l.lo;
		h->lock_hi = q->l.hi;
		if (q->pid > 0)
			lb_ident_fill(&h->who, q->pid, NULL, 0);
		return;
	}
	h->waiting = 1;
	h->queue = place;
	h->shared = q->shared;
	/* one read of /proc/PID/stat each: a long queue costs little more than the table */
	h->known = q->pid > 0 && lb_ident_of_waiter(&h->who, q->pid, &h->stopped) == 0;
}

/* ---- the head of the queue ---- */

/* how often the head looks again when some holders cannot be watched */
#define RECHECK_MS	1000

/*
 * Pin the recorded holder of slot S when its end is the end of the slot's
 * lock: a process of this host that holds the lock itself. One that took
 * the slot on an fd and left it to others (the sem pattern: `slots acquire
 * --fd` in a shell, a job in the background that inherited the fd, the
 * shell closing its own copy and living on) does not: its end says nothing,
 * and the slot frees when the last of the others lets go. Whether it holds
 * is asked of the kernel (its fdinfo) once, when it is first pinned; a
 * holder whose descriptors we may not read is trusted as before. ST is
 * the lock file's, NULL when unknown. 1 pinned, 0 not (the caller asks
 * for the lock instead).
 */
static int pin_holder(struct filepool *p, struct lb_wait *w, unsigned s,
    const struct stat *st)
{
	struct lb_ident who;

	if (fp_state(p, s) != LB_REC_HELD)
		return 0;
	lb_record_decode(fp_record(p, s), &who);
	if (!lb_ident_local(&who))
		return 0;
	if (!lb_wait_has_pid(w, who.pid) && st != NULL &&
	    lb_proc_holds(who.pid, st->st_dev, st->st_ino, lb_slot_offset(s)) == 0)
		return 0;
	/* 0: the recorded process is gone (a zombie too), its children hold on */
	return lb_wait_on_pid(w, who.pid, who.starttime, (int)s) == 1;
}

/*
 * After a scan found every slot busy: set up the kernel events that tell
 * when one may be free. It is done with the header unlocked, so that the
 * others are not kept from it while a big pool's holders are looked up,
 * and nothing is missed for that: a holder that ended since the scan is
 * found gone, a slot freed since is granted to its lock request at once,
 * and a release since has moved the count on. An explicit release (the
 * shell library's) changes the header's release count and wakes whoever
 * waits on that word (*WORD, cleared once that watch has failed). A lock
 * request on a slot learns of every way it frees (an unlock, the last
 * close of the open file that holds it, its holders' ends), but a waiter
 * has only a few (LB_WAIT_HELPERS, the word's included); a pidfd scales to
 * any pool but tells only of one process's end. So: a slot whose recorded
 * holder is a process of this host that holds the lock itself is pinned
 * (see pin_holder; it ends: its locks are gone before the pidfd says so);
 * every other slot (another host on a shared file system, a process that
 * left the slot to others, a lock without a record) gets a lock request;
 * and the requests left over go to pinned slots too, so that a small pool
 * (a mutex, sem -j2) is watched exactly even when a pinned holder hands
 * its lock on after this look. Returns 1 when everything is watched, 0
 * when something is not: the head then looks again every RECHECK_MS, and
 * at every last close of an open file of the lock file on this host
 * (inotify), which is how a slot left to a job (the sem pattern, in a pool
 * too big for a lock request each) or to a holder's children comes free.
 */
static int watch(struct filepool *p, struct lb_wait *w, int *word)
{
	int all = 1;
	size_t i, npinned = 0, pinned[LB_WAIT_HELPERS];
	struct stat st;
	int have_st;

	lb_wait_clear_locks(w);
	/*
	 * A slot was free, but another program's flock(2) lock keeps us out
	 * (flock(1), setlock): the kernel tells when it goes, as it tells
	 * flock(1)'s own waiters.
	 */
	if (p->path_busy)
		return lb_wait_on_flock(w, p->fd, p->path_op, 0, 0) == 0;
	/*
	 * One slot held: its lock request learns of every way it frees, so it
	 * is all there is to watch (one helper, no futex thread, no pidfd).
	 */
	if (p->held.n == 1 && lb_wait_on_lock(w, p->cfd, F_RDLCK, lb_slot_offset(p->held.v[0]), 1, 0,
	    (int)p->held.v[0]) == 0)
		return 1;
	have_st = fstat(p->cfd, &st) == 0;
	/* the count as the scan's header lock saw it: a release since has changed it */
	if (*word && lb_wait_on_word(w, p->cfd, LB_HDR_OFF_RELEASES, p->head + LB_HDR_OFF_RELEASES, 0) != 0)
		*word = 0;
	if (!*word)
		all = 0;
	for (i = 0; i < p->held.n; i++) {
		unsigned s = p->held.v[i];

		if (pin_holder(p, w, s, have_st ? &st : NULL)) {
			if (npinned < LB_WAIT_HELPERS)
				pinned[npinned++] = i;
			continue;
		}
		if (lb_wait_locks_free(w) == 0 ||
		    lb_wait_on_lock(w, p->cfd, F_RDLCK, lb_slot_offset(s), 1, 0, (int)s) != 0)
			all = 0;
	}
	/* a failure here loses nothing: the pin stays */
	for (i = 0; i < npinned && lb_wait_locks_free(w) > 0; i++) {
		unsigned s = p->held.v[pinned[i]];

		lb_wait_on_lock(w, p->cfd, F_RDLCK, lb_slot_offset(s), 1, 0, (int)s);
	}
	/* a hint (a close is told just before its locks go): the look every RECHECK_MS stays */
	if (!all)
		lb_wait_on_close(w, p->cfd, 0);
	return all;
}

/* At the head: tell the pool's progress function, naming a holder with a record. */
static void head_progress(struct filepool *p)
{
	struct lb_holder h;
	size_t i;

	if (p->base.progress == NULL)
		return;
	memset(&h, 0, sizeof h);
	for (i = 0; i < p->held.n; i++)
		if (fp_state(p, p->held.v[i]) == LB_REC_HELD) {
			h.slot = p->held.v[i];
			h.known = 1;
			lb_record_decode(fp_record(p, h.slot), &h.who);
			h.shared = lb_record_shared(fp_record(p, h.slot));
			break;
		}
	lb_pool_progress(&p->base, 1, h.known ? &h : NULL);
}

/*
 * Whether the head waits for the one slot held with its own thread
 * (lb_lock_wait's LB_LOCK_WATCH), not a wait set: a pool of one, or any pool with one
 * slot held. The lock request learns of every way that slot frees (see
 * watch), so it is all there is to watch; what it saves is the handoff's
 * own time: no helper thread to wake, to join and to outlive the exec of
 * the command, one wake-up instead of three.
 */
static int await_one(const struct filepool *p, int have_set)
{
	/* (a status line is rewritten while it waits: the wait set's looks do that) */
	return !have_set && !p->path_busy && p->held.n == 1 && p->base.progress == NULL;
}

/*
 * At the head of the queue: wait for a slot. Called after a scan found
 * every slot busy (p->held), with the header unlocked; each later look
 * takes the header and lets it go here. FP_TAKEN, FP_BUSY (the deadline
 * passed), FP_STOPPED by ^Z, FP_NOT_LOCK or FP_ERROR.
 */
enum fp_step fp_head_wait(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot)
{
	struct lb_wait w;
	struct lb_wait_event ev;
	struct gone gone = { { 0 }, { 0 }, 0 };
	enum fp_step r = FP_BUSY;
	int got = 0, all, word = 1, have_set = 0, tstp = 0;
	struct sigaction cur;
	sigset_t mask, entry;
	unsigned s;

	/*
	 * ^Z from here on is taken by the wait (which leaves the queue, then
	 * stops), not at once with the ticket held: blocked when it would
	 * stop us, until the wait takes it or the head is done (as the wait
	 * set's lb_wait_stop does; a host blocks its signals already).
	 */
	if (!lb_hosted() && sigaction(SIGTSTP, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL) {
		sigemptyset(&mask);
		sigaddset(&mask, SIGTSTP);
		tstp = pthread_sigmask(SIG_BLOCK, &mask, &entry) == 0;
	}
	for (;;) {
		gone.n = 0;
		head_progress(p);
		if (await_one(p, have_set)) {
			s = p->held.v[0];
			got = lb_lock_wait(p->cfd, F_RDLCK, lb_slot_offset(s), 1, deadline,
			    LB_LOCK_WATCH);
			/* (a host with a signal to act on: its call ends, as interrupted) */
			if (got == 0 || got == 2 || (got < 0 && lb_host_interrupted())) {
				r = got == 0 ? FP_BUSY : got == 2 ? FP_STOPPED : FP_ERROR;
				break;
			}
			if (got == 1) {
				gone.pid[0] = -1;
				gone.slot[0] = s;
				gone.n = 1;
			}
			/* an error: the wait set's way from here (it tells more) */
		}
		if (!await_one(p, have_set) || got < 0) {
			if (!have_set) {
				if (lb_wait_init(&w) != 0 || lb_wait_stop(&w) != 0) {
					lb_warn("%s: cannot wait", p->name);
					lb_wait_done(&w);
					r = FP_ERROR;
					break;
				}
				have_set = 1;
			}
			all = watch(p, &w, &word);
			/* a status line is told again every LB_PROGRESS_MS: the look that follows is cheap */
			got = lb_wait_run(&w, deadline, !all ? RECHECK_MS :
			    p->base.progress != NULL ? LB_PROGRESS_MS : LB_NO_RECHECK, &ev);
			if (got != 1 || ev.kind == LB_EV_STOP) {
				if (got < 0)
					lb_warn("%s: cannot wait", p->name);
				r = got == 1 ? FP_STOPPED : got == 0 ? FP_BUSY : FP_ERROR;
				break;
			}
			if ((ev.kind == LB_EV_PID || (ev.kind == LB_EV_LOCK && ev.err == 0)) &&
			    gone.n < GONE_MAX) {
				gone.pid[gone.n] = ev.kind == LB_EV_PID ? ev.pid : -1;
				gone.slot[gone.n++] = (unsigned)ev.tag;
			}
			/* the word cannot be watched after all (the file was cut short?): look every RECHECK_MS */
			if (ev.kind == LB_EV_WORD && ev.err != 0)
				word = 0;
			/*
			 * The watch threads go first: their read locks are ours (same
			 * open file, or same process for classic locks), so a watch
			 * lock granted on the slot we are about to claim would merge
			 * with the claim, and its unlock would drop the claim.
			 */
			lb_wait_clear_locks(&w);
		}
		r = fp_try_take(p, max, deadline, who, &gone, slot);
		if (r != FP_HEAD)
			break;
	}
	if (have_set)
		lb_wait_done(&w);
	/* a ^Z not yet taken is delivered now, and stops us as it should */
	if (tstp)
		pthread_sigmask(SIG_SETMASK, &entry, NULL);
	return r;
}

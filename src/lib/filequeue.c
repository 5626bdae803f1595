/* SPDX-License-Identifier: ISC */
/*
 * The wait queue of the lock-file backend: tickets, the join byte, the
 * turn, the stopped-waiter rule, and the reports of locks in the queue's
 * bytes that lockbox did not take.
 *
 * Waiting (-w) is a queue served in arrival order. A waiter takes a ticket
 * t under the queue's join lock (not the header's) and write-locks queue
 * byte t; then it waits for the waiter ahead of it to go (taken a slot,
 * given up, or died: the kernel drops a dead waiter's bytes), with a lock
 * request on that one's byte, so each departure wakes one waiter (see
 * fp_queue_turn). The one at the head (filewatch.c) watches the holders
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
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "err.h"
#include "filepool.h"
#include "lockfile.h"
#include "lockscan.h"
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
 * take, reported at once. 1 joined, 0 DEADLINE passed or a foreign lock
 * (p->base.why says which), -1 error (reported).
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
 * queue never looks through /proc. 1 our turn, 0 deadline (p->ahead:
 * for whom), 2 stopped by ^Z (the ticket is given back first), -1 error
 * (reported).
 */
enum fp_step fp_queue_turn(struct filepool *p, uint64_t ticket, int64_t deadline)
{
	struct queue_seen seen = { { 0 }, { 0 }, { 0 }, 0 };
	struct lb_wait w;
	struct lb_wait_event ev;
	uint64_t ahead, waiting = 0;
	int r, asked = 0;
	pid_t pid;

	r = queue_next(p, ticket, &seen, 0, &ahead, &pid);
	if (r <= 0)
		return r == 0 ? 1 : -1;
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
			r = -1;
			break;
		}
		asked = 1;
		waiting = ahead;
		r = lb_wait_run(&w, deadline, QUEUE_RECHECK_MS, &ev);
		if (r == 1 && ev.kind == LB_EV_RECHECK)
			queue_progress(p, ticket);
		if (r == 1 && ev.kind == LB_EV_STOP) {
			r = 2;
			break;
		}
		if (r == 1 && ev.kind == LB_EV_LOCK && ev.err != 0) {
			errno = ev.err;
			lb_warn("%s: cannot wait in the queue", p->name);
			r = -1;
			break;
		}
		if (r != 1) {
			if (r < 0)
				lb_warn("%s: cannot wait", p->name);
			else {
				p->behind = 1;
				p->ahead_stopped = queue_stopped(p, &seen, ahead, 1, &p->ahead);
			}
			break;
		}
		if (ev.kind == LB_EV_LOCK) {
			lb_wait_clear_locks(&w);	/* granted and dropped: that one went */
			asked = 0;
		}
		r = queue_next(p, ticket, &seen, 1, &ahead, &pid);
		if (r <= 0) {
			r = r == 0 ? 1 : -1;
			break;
		}
	}
	lb_wait_done(&w);
	return r;
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

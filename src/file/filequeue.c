/* SPDX-License-Identifier: ISC */
/*
 * The wait queue of the lock-file backend, its tail and its head: the
 * tickets, the join byte, the turn, the stopped-waiter rule, the reports
 * of locks in the queue's bytes that lockbox did not take; and the head's
 * wait for a slot, with the kernel events it watches the holders with
 * (lock requests, pidfds, the release word, last closes).
 *
 * Waiting (-w) is a queue served in arrival order. A waiter takes a ticket
 * t under the queue's join lock (not the header's), write-locks queue
 * byte t and its "next" byte (LB_NEXT_OFF + t, held until it is at the
 * head), and puts its mark (a classic POSIX lock, which the kernel names
 * with its process). Then it waits for the waiter ahead of it only, with
 * one lock request: on that one's next byte while that one is not at the
 * head (granted as it gets there, or goes), then on its ticket (granted
 * as it goes: taken a slot, given up, or died: the kernel drops a dead
 * waiter's bytes). So each move of the queue wakes one waiter, and a
 * waiter asleep in the queue is woken by nothing else: no waiter looks
 * at anything on a timer but the one just behind the head. The one at
 * the head (fp_head_wait) watches the holders and takes the first slot
 * that frees; nobody else looks. A waiter that finds nobody queued is the
 * head at once: it takes its ticket before it lets the header go, without
 * a second look at the slots, and sets its watches after. Attempts that
 * do not wait never queue: they take a free slot or give up.
 *
 * A waiter that is stopped (SIGSTOP, a background job's SIGTTIN or
 * SIGTTOU, a debugger; ^Z is caught, and gives the place up first) still
 * holds its bytes, and would stall everyone behind it. The rule: running
 * waiters are served in arrival order; a stopped one is passed over for
 * as long as it is stopped. A stopped process sends no event, so someone
 * must look, and one waiter a queue does, besides two looks at moments
 * that come anyway:
 *  - the waiter just behind the head looks every QUEUE_WATCH_MS whether
 *    the head is stopped, and passes it (it goes to the head itself);
 *  - the head, as it gets to the head and as it leaves, looks whether the
 *    waiter just behind it is stopped (that one would be the next to look,
 *    or to move up), and if so moves the header's pass word on (a futex
 *    wake): every waiter then looks again at the one ahead of it, and
 *    passes the stopped ones.
 * Only the pass word wakes the whole queue, and only when a stopped waiter
 * is met. (Where the word cannot be watched, a file that cannot be
 * mapped, each waiter reads it every QUEUE_WATCH_MS instead.) What the
 * rule does not see: a head and the waiter behind it
 * both stopped, or the one behind the head stopped in the moment between
 * the head's last look and its own move: the queue behind them waits
 * until they go on, or until its deadline, which then names them. Why
 * not give a stopped waiter its place back: it has no deadline of its own
 * while stopped, and whoever waits behind it has one. A stopped waiter
 * that is continued keeps its ticket, and is ahead again of those that
 * had not passed it yet; one that had passed it, at the head, competes
 * with it for the next slot.
 *
 * The queue's bytes are locked by lockbox only with write locks (a ticket,
 * the join byte, a next byte): anyone who can read the file can put a
 * read lock on them, and such a lock, or any other that is not a
 * waiter's, stops an attempt at once (as a busy pool does), naming the
 * process the kernel names for it. No loop over lock bytes is unbounded,
 * and each ends at the caller's deadline.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "await.h"
#include "clock.h"
#include "err.h"
#include "filepool.h"
#include "futex.h"
#include "host.h"
#include "lockformat.h"
#include "lockprim.h"
#include "lockscan.h"
#include "proc.h"

/* a ticket count past this is not a real queue's: it starts again at 0 */
#define QUEUE_TICKETS	LB_QUEUE_TICKETS
/* ticket bytes still held past the count that a joiner passes, at most */
#define QUEUE_SKIP	1024
/* how often the waiter just behind the head looks whether the head is stopped */
#define QUEUE_WATCH_MS	1000
/* stopped waiters a waiter passes at one look, at most */
#define QUEUE_PASS	64

/*
 * A lock that lockbox did not take, of TYPE, on byte AT of the queue's
 * bytes (the join byte, a ticket's): the attempt ends at once, as when
 * a slot is held, and the message names the process that holds it, as
 * the kernel names it (HINT: the PID it gave for it, if any), or as a
 * look through /proc finds it within the run's budget.
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
		    "the wait queue is blocked by a %s lock lockbox did not take; 'lockbox locks %s' shows who",
		    type == F_RDLCK ? "read" : "write", p->name);
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
 * ticket byte that another waiter still holds (a count that went back,
 * or a joiner beside us) is passed, at most QUEUE_SKIP of them; so a
 * join lock that nobody gets through (FP_STALLED) is done without. A
 * ticket byte locked otherwise than by a waiter (a read lock, a range) is
 * a lock lockbox did not take, reported at once. The ticket taken, its
 * next byte and its mark are held. FP_TAKEN joined, FP_BUSY: DEADLINE
 * passed or a foreign lock (p->base.why says which), FP_ERROR (reported).
 */
enum fp_step fp_queue_join(struct filepool *p, int64_t deadline, uint64_t *ticket)
{
	uint64_t t;
	unsigned skips = 0;
	struct flock c;
	off_t at = 0;
	int r = fp_progress_lock(p, F_WRLCK, LB_JOIN_OFF, 1, LB_HDR_OFF_TICKET, deadline, "queue", 1);
	int joined = r == 1;

	if (r != 1 && r != FP_STALLED) {
		if (r == 0 && p->reader)
			queue_foreign(p, p->reader_at, F_RDLCK, p->reader_pid);
		/* another program's lock over it is named as a holder (describe) */
		if (r == 0 && p->base.why[0] == '\0' && !p->hdr_foreign)
			snprintf(p->base.why, sizeof p->base.why,
			    "the wait queue's join lock stayed locked");
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
			if (joined)
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
			if (joined)
				lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
			return r;
		}
	}
	if (r == 1 && lb_lock_try(p->cfd, F_WRLCK, LB_NEXT_OFF + (off_t)t, 1) != 1) {
		lb_lock_try(p->cfd, F_UNLCK, at, 1);
		r = -1;
	}
	if (r < 0 || fp_set_header_word(p, LB_HDR_OFF_TICKET, t + 1) != 0) {
		if (r < 0)	/* a failed write has said so */
			lb_warn("%s: cannot join the queue", p->name);
		if (r == 1) {
			lb_lock_try(p->cfd, F_UNLCK, LB_NEXT_OFF + (off_t)t, 1);
			lb_lock_try(p->cfd, F_UNLCK, at, 1);
		}
		if (joined)
			lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
		return FP_ERROR;
	}
	if (joined)
		lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
	/* the mark that names us: a failure only leaves us unnamed */
	lb_lock_try_process(p->cfd, F_RDLCK, LB_WAITER_OFF + 2 * (off_t)t + (p->shared != 0), 1);
	*ticket = t;
	return FP_TAKEN;
}

/*
 * The PID of the waiter of TICKET, from its mark (a classic POSIX lock,
 * which the kernel names with its process): 0 when it has none (an older
 * lockbox's waiter, or one gone).
 */
static pid_t queue_pid(struct filepool *p, uint64_t ticket)
{
	struct lb_lockinfo m;

	if (lb_lock_conflict(p->cfd, F_WRLCK, LB_WAITER_OFF + 2 * (off_t)ticket, 2, &m) != 1 ||
	    m.write || m.ofd)
		return 0;
	return m.pid;
}

/*
 * Whether the waiter of TICKET is stopped (state T or t: SIGSTOP, a
 * background job's SIGTTIN or SIGTTOU, a debugger), its PID in *PID (0:
 * not known). A frozen cgroup's tasks do not show as stopped: they count
 * as running.
 */
static int queue_stopped(struct filepool *p, uint64_t ticket, pid_t *pid)
{
	struct lb_proc_stat st;

	*pid = queue_pid(p, ticket);
	return *pid > 0 && lb_proc_stat(*pid, &st) == 0 && (st.state == 'T' || st.state == 't');
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
 * The lowest ticket above TICKET whose byte another waiter holds, in
 * *NEXT: 1, or 0 when there is none, or -1. Most often the one just after.
 */
static int queue_behind(struct filepool *p, uint64_t ticket, uint64_t *next)
{
	uint64_t lo = ticket + 1, hi = QUEUE_TICKETS;
	struct flock c;
	int r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)lo, 1, &c);

	if (r == 0) {
		*next = lo;
		return 1;
	}
	if (r == 1 && lo + 1 < hi)
		r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)lo + 1,
		    (off_t)(hi - lo - 1), &c);
	if (r != 0)
		return r == 1 ? 0 : -1;
	/* (lo, hi] holds a locked byte, and the one the kernel named bounds it */
	hi = c.l_start > LB_QUEUE_OFF + (off_t)lo ? (uint64_t)(c.l_start - LB_QUEUE_OFF) : lo + 1;
	while (r >= 0 && hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)lo + 1, (off_t)(mid - lo), &c);
		if (r == 0)
			hi = mid;
		else
			lo = mid;
	}
	if (r < 0)
		return -1;
	*next = hi;
	return 1;
}

/*
 * The waiter to wait for: the nearest one ahead of TICKET; with LOOK, the
 * nearest that is not stopped (see the top of the file), passing at most
 * QUEUE_PASS stopped ones. 1 with *AHEAD, 0 none (our turn), -1 error
 * (reported).
 */
static int queue_next(struct filepool *p, uint64_t ticket, int look, uint64_t *ahead)
{
	uint64_t below = ticket;
	pid_t pid;
	int r = 0, passes;

	for (passes = 0; passes < QUEUE_PASS; passes++) {
		r = queue_ahead(p, below, ahead);
		if (r <= 0 || !look || !queue_stopped(p, *ahead, &pid))
			return r;
		below = *ahead;
	}
	return r;
}

/* Whether the waiter of TICKET is at the head: its next byte let go (or never taken). */
static int at_head(struct filepool *p, uint64_t ticket)
{
	struct flock c;

	return lb_lock_test(p->cfd, F_RDLCK, LB_NEXT_OFF + (off_t)ticket, 1, &c) == 1;
}

/*
 * The head's look behind it, as it gets to the head and as it leaves:
 * the waiter after TICKET, stopped, would keep the queue behind it
 * waiting; the pass word is moved on, and every waiter looks again.
 */
static void queue_look_behind(struct filepool *p, uint64_t ticket)
{
	uint64_t next;
	pid_t pid;

	if (queue_behind(p, ticket, &next) != 1 || !queue_stopped(p, next, &pid))
		return;
	/* a count, not a value: two moving it at once still move it */
	if (fp_set_header_word(p, LB_HDR_OFF_PASSES, fp_read_count(p, LB_HDR_OFF_PASSES) + 1) == 0)
		lb_wake_word(p->cfd, LB_HDR_OFF_PASSES);
}

void fp_queue_head(struct filepool *p, uint64_t ticket)
{
	lb_lock_try(p->cfd, F_UNLCK, LB_NEXT_OFF + (off_t)ticket, 1);
	p->at_head = 1;
	queue_look_behind(p, ticket);
}

void fp_queue_leave(struct filepool *p, uint64_t ticket)
{
	if (p->at_head)
		queue_look_behind(p, ticket);
	p->at_head = 0;
	lb_lock_try_process(p->cfd, F_UNLCK, LB_WAITER_OFF + 2 * (off_t)ticket, 2);
	lb_lock_try(p->cfd, F_UNLCK, LB_NEXT_OFF + (off_t)ticket, 1);
	lb_lock_try(p->cfd, F_UNLCK, LB_QUEUE_OFF, (off_t)ticket + 1);
}

/* Tell the pool's progress function our place: lock tests of the queue's bytes. */
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
		place += !q[i].foreign && q[i].ticket < ticket;
	free(q);
	lb_pool_progress(&p->base, place, NULL);
}

/* Whether the pass word is no longer WAS (read again: a look without a futex). */
static int pass_moved(struct filepool *p, const unsigned char was[4])
{
	unsigned char now[4];

	return fp_pread_all(p, now, sizeof now, LB_HDR_OFF_PASSES) != 0 ||
	    memcmp(now, was, sizeof now) != 0;
}

/*
 * Wait for our turn: every earlier ticket gone, or held by a waiter that
 * is stopped. A waiter waits for the one ahead of it only, with one lock
 * request: on its next byte until it is at the head, then on its ticket,
 * each granted as that one gets there or goes. (One request on all the
 * bytes before ours would do it in one wait, but the kernel keeps
 * overlapping requests in a chain, and a request that has to wait again
 * first wakes every one chained behind it: each departure would wake the
 * whole queue, one after the other.) Beside it, the pass word (see the
 * top of the file); and behind the head, a look every QUEUE_WATCH_MS at
 * whether it is stopped. FP_TAKEN our turn, FP_BUSY the deadline
 * (p->ahead: for whom), FP_STOPPED by ^Z (the ticket is given back
 * first), FP_ERROR (reported).
 */
enum fp_step fp_queue_turn(struct filepool *p, uint64_t ticket, int64_t deadline)
{
	struct lb_await a;
	struct lb_awaited got;
	uint64_t ahead, waited;
	off_t on = -1, want;
	enum fp_step step = FP_ERROR;
	unsigned char pass[4];
	int r, look = 0, behind_head, tick, word;

	r = queue_next(p, ticket, 0, &ahead);
	if (r <= 0)
		return r == 0 ? FP_TAKEN : FP_ERROR;	/* nobody ahead: our turn */
	waited = ahead;
	if (lb_await_open(&a) != 0) {
		lb_warn("%s: cannot wait", p->name);
		return FP_ERROR;
	}
	queue_progress(p, ticket);
	for (;;) {
		/* the word before the look: a pass after the look moves it from this */
		if (fp_pread_all(p, pass, sizeof pass, LB_HDR_OFF_PASSES) != 0)
			break;
		r = queue_next(p, ticket, look, &ahead);
		/*
		 * the one waited for went, and left another ahead: one that it
		 * passed, or that we passed, stopped, or that it was behind:
		 * looked at once (the pass word moved long ago)
		 */
		if (r == 1 && !look && on == -1 && ahead != waited)
			r = queue_next(p, ticket, 1, &ahead);
		if (r <= 0) {
			step = r == 0 ? FP_TAKEN : FP_ERROR;
			break;
		}
		look = 0;
		waited = ahead;
		behind_head = at_head(p, ahead);
		want = behind_head ? LB_QUEUE_OFF + (off_t)ahead : LB_NEXT_OFF + (off_t)ahead;
		if (on != want) {
			lb_await_forget_locks(&a);
			if (lb_await_lock(&a, p->cfd, F_RDLCK, want, 1, 0, 0) != 0) {
				lb_warn("%s: cannot wait", p->name);
				break;
			}
			on = want;
		}
		/*
		 * (no futex watch, a file that cannot be mapped: the word is
		 * read again every QUEUE_WATCH_MS instead, or a pass past a
		 * stopped waiter that is not at the head would never be seen
		 * behind it)
		 */
		word = lb_await_word(&a, p->cfd, LB_HDR_OFF_PASSES, pass, 0) == 0;
		tick = behind_head ? QUEUE_WATCH_MS : p->base.progress != NULL ? LB_PROGRESS_MS :
		    !word ? QUEUE_WATCH_MS : LB_NO_RECHECK;
		switch (lb_await_run(&a, deadline, tick, &got)) {
		case LB_LOOK:
			look = behind_head || (!word && pass_moved(p, pass));
			queue_progress(p, ticket);
			continue;
		case LB_FREE:
			/* granted and let go: that one moved */
			lb_await_forget_locks(&a);
			on = -1;
			continue;
		case LB_CHANGED:
			/* the pass word moved: look at who is stopped ahead */
			look = 1;
			continue;
		case LB_STOPPED:
			step = FP_STOPPED;
			break;
		case LB_DEADLINE:
			p->behind = 1;
			p->ahead_stopped = queue_stopped(p, ahead, &p->ahead);
			step = FP_BUSY;
			break;
		case LB_INTERRUPTED:
			break;
		default:
			errno = got.err;
			lb_warn("%s: cannot wait in the queue", p->name);
			break;
		}
		break;
	}
	lb_await_shut(&a);
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

/* how often the head looks again when some holder cannot be watched (another host's) */
#define RECHECK_MS	1000
/*
 * A last close is told just before the kernel drops the locks held
 * through that open file: a head that finds the slot still held looks
 * again after these, then waits for the next event.
 */
static const int close_settle_ms[] = { 2, 20, 200 };
#define CLOSE_SETTLES	(sizeof close_settle_ms / sizeof close_settle_ms[0])
/* holders found gone whose slots a watch tests at once, at most */
#define GONE_LOOK	16

/*
 * Whether slot S is held by read locks alone: another program's (lockbox
 * holds a slot with a write lock, and the head's own watch is not seen
 * here). A waiter's watch, a read lock request, is granted beside them at
 * once and tells nothing of their going: such a slot is looked at again
 * every RECHECK_MS instead, where a watch would wake the head again and
 * again (a waiter spun on two CPUs to its deadline).
 */
static int read_held(const struct filepool *p, unsigned s)
{
	struct lb_lockinfo l;

	return lb_lock_conflict(p->cfd, F_WRLCK, lb_slot_offset(s), 1, &l) == 1 && !l.write;
}

/* A slot the look should try first, freed by PID's end (-1: found free); past GONE_MAX, none. */
static void gone_add(struct gone *g, pid_t pid, unsigned slot)
{
	if (g->n < GONE_MAX) {
		g->pid[g->n] = pid;
		g->slot[g->n++] = slot;
	}
}

/*
 * Whether slot S's record names a process of this host: its slot frees,
 * however it frees, by an explicit release (the word) or a last close
 * (inotify) that this host sees. Such a holder is pinned too: a pidfd
 * tells its end at once, and which slot it held. One that took the slot
 * on an fd and left it to others (the sem pattern: `slots acquire --fd`
 * in a shell, a job in the background that inherited the fd), or that
 * ended while its children hold on, ends without the slot freeing: its
 * pidfd wakes the head once for nothing, or not at all.
 */
static int local_holder(struct filepool *p, struct lb_await *w, unsigned s)
{
	struct lb_ident who;

	if (fp_state(p, s) != LB_REC_HELD)
		return 0;
	lb_record_decode(fp_record(p, s), &who);
	if (!lb_ident_local(&who))
		return 0;
	/*
	 * 0: the recorded process is gone (a zombie too): its children hold
	 * on, or it ended since the scan, its last close before the closes
	 * were watched (see watch)
	 */
	return lb_await_pid(w, who.pid, who.starttime, (int)s) == 0 ? 2 : 1;
}

/*
 * After a scan found every slot busy: set up the kernel events that tell
 * when one may be free. It is done with the header unlocked, so that the
 * others are not kept from it while a big pool's holders are looked up,
 * and nothing is missed for that: a holder that ended since the scan is
 * found gone, a slot freed since is granted to its lock request at once,
 * and a release since has moved the count on. A slot's lock goes in one
 * of three ways: an explicit unlock (lockbox's own release moves the
 * header's release count on and wakes whoever waits on that word, *WORD,
 * cleared once that watch has failed), the last close of the open file
 * that holds it (inotify tells of every close of the file on this host),
 * or its holder's end, which closes it. A lock request on a slot learns
 * of all three, but a waiter has only a few (LB_WAIT_HELPERS, the word's
 * included): a small pool (a mutex, sem -j2) gets one a slot. A bigger
 * one's slots recorded by a process of this host (local_holder) are left
 * to the word and the closes; every other slot (another host's on a
 * shared file system, a lock without a record, which another program may
 * let go of without a close) gets a lock request while there are
 * helpers. Returns how long the head may sleep before it looks again:
 * LB_NO_RECHECK when every way a held slot can free wakes it, RECHECK_MS
 * when one cannot (a slot of another host's, or another program's, past
 * the helpers; no futex or inotify here). *CLOSES: the closes are
 * watched (see close_settle_ms); *BY_END: some slots are left to their
 * holders' ends and the closes. A slot found free already (its holder
 * gone since the scan) is put in GONE, for the look to take it at once.
 */
static int watch(struct filepool *p, struct lb_await *w, int *word, int *closes, int *by_end,
    struct gone *g)
{
	int covered = 1, kind;
	size_t i, nlocal = 0, asked = 0, ngone = 0, local[LB_WAIT_HELPERS];
	unsigned gone[GONE_LOOK];
	struct flock l;

	*closes = *by_end = 0;
	lb_await_forget_locks(w);
	/*
	 * A slot was free, but another program's flock(2) lock keeps us out
	 * (flock(1), setlock): the kernel tells when it goes, as it tells
	 * flock(1)'s own waiters.
	 */
	if (p->path_busy)
		return lb_await_flock(w, p->fd, p->path_op, 0, 0) == 0 ? LB_NO_RECHECK : RECHECK_MS;
	/*
	 * One slot held: its lock request learns of every way it frees, so it
	 * is all there is to watch (one helper, no futex thread, no pidfd).
	 */
	if (p->held.n == 1 && !read_held(p, p->held.v[0]) &&
	    lb_await_lock(w, p->cfd, F_RDLCK, lb_slot_offset(p->held.v[0]), LB_WATCH_LEN, 0,
	    (int)p->held.v[0]) == 0)
		return LB_NO_RECHECK;
	/* the count as the scan's header lock saw it: a release since has changed it */
	if (*word && lb_await_word(w, p->cfd, LB_HDR_OFF_RELEASES, p->head + LB_HDR_OFF_RELEASES, 0) != 0)
		*word = 0;
	for (i = 0; i < p->held.n; i++) {
		unsigned s = p->held.v[i];

		if ((kind = local_holder(p, w, s)) != 0) {
			if (kind == 2 && ngone < GONE_LOOK)
				gone[ngone] = s;
			ngone += kind == 2;
			if (nlocal < LB_WAIT_HELPERS)
				local[nlocal] = i;
			nlocal++;
			continue;
		}
		if (lb_await_room(w) == 0 || read_held(p, s) ||
		    lb_await_lock(w, p->cfd, F_RDLCK, lb_slot_offset(s), LB_WATCH_LEN, 0, (int)s) != 0)
			covered = 0;
	}
	/* the requests left over go to this host's slots: a small pool is watched exactly */
	for (i = 0; i < nlocal && i < LB_WAIT_HELPERS && lb_await_room(w) > 0; i++)
		asked += lb_await_lock(w, p->cfd, F_RDLCK, lb_slot_offset(p->held.v[local[i]]),
		    LB_WATCH_LEN, 0, (int)p->held.v[local[i]]) == 0;
	/* (and a hint for the others: a close of theirs may be a last one) */
	*by_end = asked < nlocal;
	if (asked < nlocal || !covered) {
		*closes = lb_await_close(w, p->cfd, 0) == 0;
		if (asked < nlocal && (!*closes || !*word))
			covered = 0;
	}
	/*
	 * A holder found gone whose slot got no request: ended since the
	 * scan, its slot may be free already, its last close told before
	 * the closes were watched. Tested now that they are: free, a look at
	 * once; held, its children's last close will tell. (Past GONE_LOOK
	 * of them, a look after RECHECK_MS.)
	 */
	for (i = 0; i < ngone && i < GONE_LOOK; i++)
		if (lb_lock_test(p->cfd, F_WRLCK, lb_slot_offset(gone[i]), 1, &l) != 0) {
			gone_add(g, -1, gone[i]);
			return 1;
		}
	return covered && ngone <= GONE_LOOK ? LB_NO_RECHECK : RECHECK_MS;
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
 * Whether the head waits for the one slot held by itself (the door's
 * lb_await_lock_one, watched), not in a set: a pool of one, or any pool
 * with one slot held. The lock request learns of every way that slot
 * frees (see watch), so it is all there is to watch; what it saves is
 * the handoff's own time: in this thread no helper to wake, to join and
 * to outlive the exec of the command, one wake-up instead of three.
 */
static int alone(const struct filepool *p, int have_set)
{
	/* (a status line is rewritten while it waits: the set's looks do that) */
	return !have_set && !p->path_busy && p->held.n == 1 && p->base.progress == NULL &&
	    !read_held(p, p->held.v[0]);
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
	struct lb_await w;
	struct lb_awaited got;
	struct gone gone = { { 0 }, { 0 }, 0 };
	enum fp_step r = FP_BUSY;
	enum lb_outcome o = LB_FREE;
	int tick, word = 1, closes, by_end, have_set = 0, tstp = 0, in_thread;
	size_t settle = CLOSE_SETTLES;	/* the next look after a close, CLOSE_SETTLES: none */
	struct sigaction cur;
	sigset_t mask, entry;
	unsigned s;

	/*
	 * ^Z from here on is taken by the wait (which leaves the queue, then
	 * stops), not at once with the ticket held: blocked when it would
	 * stop us, until the wait takes it or the head is done (as a wait
	 * set's does; a host blocks its signals already).
	 */
	if (!lb_hosted() && sigaction(SIGTSTP, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL) {
		sigemptyset(&mask);
		sigaddset(&mask, SIGTSTP);
		tstp = pthread_sigmask(SIG_BLOCK, &mask, &entry) == 0;
	}
	for (;;) {
		gone.n = 0;
		head_progress(p);
		in_thread = alone(p, have_set);
		if (in_thread) {
			s = p->held.v[0];
			o = lb_await_lock_one(p->cfd, F_RDLCK, lb_slot_offset(s), LB_WATCH_LEN, deadline, 0);
			if (o == LB_FREE) {
				gone_add(&gone, -1, s);
			} else if (o != LB_FAILED) {
				r = o == LB_DEADLINE ? FP_BUSY : o == LB_STOPPED ? FP_STOPPED : FP_ERROR;
				break;
			}
			/* an error: the set's way from here (it tells more) */
		}
		if (!in_thread || o == LB_FAILED) {
			if (!have_set) {
				if (lb_await_open(&w) != 0) {
					lb_warn("%s: cannot wait", p->name);
					r = FP_ERROR;
					break;
				}
				have_set = 1;
			}
			tick = watch(p, &w, &word, &closes, &by_end, &gone);
			if (closes && settle < CLOSE_SETTLES &&
			    (tick == LB_NO_RECHECK || close_settle_ms[settle] < tick))
				tick = close_settle_ms[settle];
			/* a status line is told again every LB_PROGRESS_MS: the look that follows is cheap */
			if (p->base.progress != NULL && (tick == LB_NO_RECHECK || LB_PROGRESS_MS < tick))
				tick = LB_PROGRESS_MS;
			o = lb_await_run(&w, deadline, tick, &got);
			/*
			 * A last close is told a moment before its process's end,
			 * which names the slot it held: waited for, that moment, where
			 * holders' ends are watched. The look that follows takes that
			 * slot, where a look at the close alone tests every slot of a
			 * big pool, and finds the lock not dropped yet.
			 */
			if (o == LB_CLOSED && by_end) {
				enum lb_outcome end = lb_await_run(&w, deadline, close_settle_ms[0], &got);

				if (end != LB_LOOK)
					o = end;
			}
			if (o == LB_DEADLINE || o == LB_STOPPED || o == LB_INTERRUPTED) {
				r = o == LB_DEADLINE ? FP_BUSY : o == LB_STOPPED ? FP_STOPPED : FP_ERROR;
				break;
			}
			/* (a request refused, EDEADLK between classic locks: looked at again) */
			if (o == LB_FAILED) {
				errno = got.err;
				lb_warn("%s: cannot wait", p->name);
				r = FP_ERROR;
				break;
			}
			if (o == LB_ENDED || o == LB_FREE)
				gone_add(&gone, o == LB_ENDED ? got.pid : -1, (unsigned)got.tag);
			/* the word cannot be watched after all (the file was cut short?): look every RECHECK_MS */
			if (o == LB_CHANGED && got.err != 0)
				word = 0;
			/* a close: looks after it until one finds what it freed, or the settles are done */
			if (o == LB_CLOSED)
				settle = 0;
			else if (o == LB_LOOK)
				settle += settle < CLOSE_SETTLES;
			else
				settle = CLOSE_SETTLES;
			/*
			 * The watch threads go first: their read locks are ours (same
			 * open file, or same process for classic locks), so a watch
			 * lock granted on the slot we are about to claim would merge
			 * with the claim, and its unlock would drop the claim.
			 */
			lb_await_forget_locks(&w);
		}
		r = fp_try_take(p, max, deadline, who, &gone, slot);
		if (r != FP_HEAD)
			break;
	}
	if (have_set)
		lb_await_shut(&w);
	/* a ^Z not yet taken is delivered now, and stops us as it should */
	if (tstp)
		pthread_sigmask(SIG_SETMASK, &entry, NULL);
	return r;
}

/* SPDX-License-Identifier: ISC */
/*
 * The head of the lock-file backend's queue: the kernel events it watches
 * the holders with (lock requests, pidfds, the release word, last closes),
 * and its wait for a slot.
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "filepool.h"
#include "host.h"
#include "lockfile.h"
#include "lockwait.h"
#include "proc.h"
#include "wait.h"

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
	off_t size;
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
		r = fp_enter(p, deadline, &size);
		if (r != FP_TAKEN)
			break;
		r = fp_take_slot(p, size, max, who, &gone, slot);
		fp_header_unlock(p);
		if (r != FP_BUSY)
			break;
	}
	if (have_set)
		lb_wait_done(&w);
	/* a ^Z not yet taken is delivered now, and stops us as it should */
	if (tstp)
		pthread_sigmask(SIG_SETMASK, &entry, NULL);
	return r;
}

/* Expiring an overdue run: CONT, INT, TERM, KILL to its verified job, or its server session ended. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "exitcodes.h"
#include "expire.h"
#include "job.h"
#include "joblog.h"
#include "opts.h"
#include "parse.h"
#include "pool.h"
#include "runstate.h"
#include "statedir.h"

/* The least wait for the lock after SIGKILL, whatever GRACE. */
#define KILL_WAIT	(5 * LB_NS_PER_S)

static int same_holder(const struct lb_ident *a, const struct lb_ident *b)
{
	return a->pid == b->pid && a->starttime == b->starttime && a->wall_ns == b->wall_ns;
}

static void refuse_signal(struct lb_runctx *r, int sig, const char *pids)
{
	lb_joblog(LOG_ERR, r->name, "signal-refused sig=%s pids=%s", lb_signal_name(sig), pids);
	lb_warnx("%s: cannot send SIG%s to %s: not permitted", r->name, lb_signal_name(sig), pids);
}

/* The job could not be told for sure: say so, and fail rather than guess. */
static int blind(struct lb_runctx *r, const struct lb_job *job, int sig)
{
	errno = job->err;
	lb_warn("%s: cannot expire the run: checking its processes for SIG%s", r->name,
	    lb_signal_name(sig));
	lb_joblog(LOG_ERR, r->name, "expire-error sig=%s error=%s", lb_signal_name(sig),
	    strerror(job->err));
	return LB_EXIT_FAIL;
}

/*
 * The paper's garbage collection, made safe: CONT (a stopped job can act
 * on what follows), INT, TERM, KILL, each to every verified process of the
 * holder's job, each followed by up to GRACE (after KILL, KILL_WAIT at
 * least) of event-driven waiting for the lock. 1: the lock is ours; 0: someone else took it (*h describes
 * them); otherwise an exit status.
 */
static int expire_job(struct lb_runctx *r, struct lb_holder *h)
{
	const int *sigs = lb_expiry_sigs;
	struct lb_holders now = { NULL, 0 };
	struct lb_ident old = h->who;
	struct lb_lock_site site;
	struct lb_job job;
	char age[32], pids[512], refused[512], late[512];
	int64_t bound;
	unsigned slot;
	size_t i, reached;
	int got = -1, n, signalled = 0, sent = 0;

	lb_format_duration(lb_holder_age(&r->last, &r->last_now, &old), age);
	lb_joblog(LOG_NOTICE, r->name, "expire pid=%d age=%s", (int)old.pid, age);
	if (r->o->verbose)
		lb_warnx("%s: PID %d has run for %s; expiring it", r->name, (int)old.pid, age);
	if (lb_pool_lock_site(r->pool, LB_ATOM_SLOT, &site) != 0) {
		lb_warn("%s", r->path);
		return LB_EXIT_FAIL;
	}
	lb_run_mark_expiring(r, &old, 1);
	/* the records name old.pid, but only the kernel's locks say who holds it */
	lb_job_init(&job, &site);
	for (i = 0; i < LB_EXPIRY_STEPS; i++) {
		n = lb_job_scan(&job);
		if (n < 0) {
			/* a member missed must not pass for one that is gone */
			got = blind(r, &job, sigs[i]);
			break;
		}
		if (job.self_holds) {
			lb_warnx("%s: this process holds the lock itself (started from inside the run?)",
			    r->name);
			lb_joblog(LOG_ERR, r->name, "expire-refused pid=%d reason=self", (int)old.pid);
			got = LB_EXIT_BUSY;
			break;
		}
		if (n == 0 && i == 0) {
			/* nothing could be verified: never signal on a record's word */
			lb_warnx("%s: cannot expire PID %d: no process holding the lock can be verified",
			    r->name, (int)old.pid);
			lb_joblog(LOG_ERR, r->name, "expire-refused pid=%d reason=unverified",
			    (int)old.pid);
			got = LB_EXIT_BUSY;
			break;
		}
		if (n > 0) {
			/*
			 * Signal 0 first asks the kernel who may be signalled, so
			 * that the line can be logged before the signal (the log
			 * then reads in causal order) and names only those. A
			 * member that cannot be checked stops the expiry before
			 * anyone gets the signal.
			 */
			reached = lb_job_signal(&job, 0, pids, sizeof pids, refused, sizeof refused);
			if (job.err != 0) {
				got = blind(r, &job, sigs[i]);
				break;
			}
			if (reached > 0) {
				/* marked before it is sent: a start that takes over reads it after */
				lb_run_note_sent(r, old.pid, sigs[i]);
				sent = sigs[i];
				lb_joblog(LOG_NOTICE, r->name, "signal sig=%s pids=%s",
				    lb_signal_name(sigs[i]), pids);
				if (r->o->verbose)
					lb_warnx("%s: sending SIG%s to %s", r->name, lb_signal_name(sigs[i]),
					    pids);
			}
			if (refused[0] != '\0')
				refuse_signal(r, sigs[i], refused);
			/* a refusal only now (a member changed its credentials) is told too */
			lb_job_signal(&job, sigs[i], NULL, 0, late, sizeof late);
			signalled = 1;
			if (late[0] != '\0' && strcmp(late, refused) != 0)
				refuse_signal(r, sigs[i], late);
			if (job.err != 0) {
				got = blind(r, &job, sigs[i]);
				break;
			}
		}
		/*
		 * KILL cannot be ignored: what is left is the kernel ending the
		 * job and freeing the lock, which on a loaded machine may take
		 * longer than a short GRACE. Giving up then would leave the
		 * atom busy for a job already dead; so that wait has a bound of
		 * its own.
		 */
		bound = r->o->grace;
		if (sigs[i] == SIGKILL && bound < KILL_WAIT)
			bound = KILL_WAIT;
		lb_holders_free(&now);
		got = lb_pool_acquire(r->pool, 1, lb_deadline_after(bound), &r->who, &slot, &now);
		if (got == 1) {
			/*
			 * What ended the run: the strongest signal sent to it,
			 * by this start or by another expiring it at the same
			 * time (this one may still be at an earlier step).
			 */
			int by = lb_run_note_sent(r, old.pid, 0);

			if (by < 0) {
				/*
				 * Another start expired the run and took over, and
				 * its run has ended too: the lock is ours as at any
				 * start, with no expiry of ours to log or record.
				 */
				if (r->o->verbose)
					lb_warnx("%s: PID %d was expired by another start; lock free",
					    r->name, (int)old.pid);
				break;
			}
			if (lb_expiry_rank(by) < lb_expiry_rank(sent))
				by = sent;
			if (by == 0)	/* nothing reached: freed by itself meanwhile */
				by = sigs[i];
			lb_joblog(LOG_NOTICE, r->name, "expired pid=%d after=%s", (int)old.pid,
			    lb_signal_name(by));
			if (r->o->verbose)
				lb_warnx("%s: lock freed after SIG%s; taking over", r->name,
				    lb_signal_name(by));
			r->expired = 1;
			break;
		}
		if (got < 0) {
			got = LB_EXIT_FAIL;
			break;
		}
		if (now.n > 0 && now.v[0].known && !same_holder(&now.v[0].who, &old)) {
			*h = now.v[0];	/* another expirer took over first */
			got = 0;
			break;
		}
		got = -1;
	}
	if (got == -1) {
		lb_job_alive(&job, pids, sizeof pids);
		lb_warnx("%s: PID %s still holds the lock after SIGKILL; giving up", r->name,
		    pids[0] ? pids : "?");
		lb_joblog(LOG_ERR, r->name, "expire-failed pids=%s", pids[0] ? pids : "?");
		got = LB_EXIT_BUSY;
	}
	/* refused before any signal: the run goes on, and its end is its own */
	if (got != 0 && got != 1 && !signalled)
		lb_run_mark_expiring(r, &old, 0);
	lb_holders_free(&now);
	lb_job_free(&job);
	return got;
}

/*
 * Expiry of a run whose lock is a server's session lock. No process of
 * that run can be shown to be one to signal: it may be on another host,
 * and even on this one nothing proves which process holds the session.
 * So the server ends the holder's session instead (pg_terminate_backend,
 * only of the session that still holds the lock): that frees the lock,
 * and the holder's supervisor, told by its socket, signals its command
 * (--on-loss, then KILL after its GRACE). 1: the lock is ours; 0: someone
 * else has it (*h describes them); otherwise an exit status.
 */
static int expire_session(struct lb_runctx *r, struct lb_holder *h)
{
	struct lb_holders now = { NULL, 0 };
	struct lb_ident old = h->who;
	char age[32];
	unsigned slot;
	int ended, got;

	lb_format_duration(lb_holder_age(&r->last, &r->last_now, &old), age);
	lb_joblog(LOG_NOTICE, r->name, "expire pid=%d host=%s age=%s", (int)old.pid, old.host, age);
	if (r->o->verbose)
		lb_warnx("%s: PID %d on %s has run for %s; expiring it", r->name, (int)old.pid,
		    old.host, age);
	lb_run_mark_expiring(r, &old, 1);
	ended = lb_pool_end_session(r->pool, h);
	if (ended < 0 && errno == EPERM) {
		lb_warnx("%s: cannot expire PID %d on %s: the server does not let this role end its session",
		    r->name, (int)old.pid, old.host);
		lb_joblog(LOG_ERR, r->name, "expire-refused pid=%d reason=permission", (int)old.pid);
		lb_run_mark_expiring(r, &old, 0);
		return LB_EXIT_BUSY;
	}
	if (ended < 0) {
		lb_run_mark_expiring(r, &old, 0);	/* the run goes on, its end its own */
		return LB_EXIT_FAIL;
	}
	if (ended == 1) {
		lb_joblog(LOG_NOTICE, r->name, "session-ended pid=%d session=%d", (int)old.pid,
		    h->session.pid);
		if (r->o->verbose)
			lb_warnx("%s: the server ended session %d of PID %d", r->name,
			    h->session.pid, (int)old.pid);
	} else {
		lb_run_mark_expiring(r, &old, 0);
	}
	/* the server frees the lock as the session's process exits: wait for that, event-driven */
	got = lb_pool_acquire(r->pool, 1, ended == 1 ? lb_deadline_after(r->o->grace) : LB_NO_WAIT,
	    &r->who, &slot, &now);
	if (got == 1) {
		lb_joblog(LOG_NOTICE, r->name, "expired pid=%d after=session-end", (int)old.pid);
		if (r->o->verbose)
			lb_warnx("%s: lock freed; taking over", r->name);
		r->expired = ended == 1;
	} else if (got == 0 && now.n > 0 && now.v[0].known &&
	    now.v[0].session.pid != h->session.pid) {
		*h = now.v[0];	/* another took the lock first */
	} else if (got == 0) {
		lb_warnx("%s: PID %d still holds the lock after its session was ended; giving up",
		    r->name, (int)old.pid);
		lb_joblog(LOG_ERR, r->name, "expire-failed pids=%d", (int)old.pid);
		got = LB_EXIT_BUSY;
	} else {
		got = LB_EXIT_FAIL;
	}
	lb_holders_free(&now);
	return got;
}

/*
 * Ending an overdue holder, proving first that it still holds: where
 * holders are processes (a lock file), their verified job is signalled;
 * where the lock is a server's, the server ends the session that still
 * holds it. The pool's capabilities choose; the caller does not.
 */
int lb_expire(struct lb_runctx *r, struct lb_holder *h)
{
	if (lb_pool_caps(r->pool) & LB_POOL_PROCESSES)
		return expire_job(r, h);
	return expire_session(r, h);
}

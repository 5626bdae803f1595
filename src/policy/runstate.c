/* An adaptive run's record in the atom area: reading it, a run's start and end, an expiry's marks. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atom.h"
#include "clock.h"
#include "err.h"
#include "parse.h"
#include "pool.h"
#include "runstate.h"
#include "text.h"

/* Decode, reporting a corrupt area once; 1 when it must be written afresh. */
static int load_state(struct lb_runctx *r, const unsigned char *area, size_t len, struct lb_atom *a)
{
	const char *why;
	int d = lb_atom_decode(area, len, a, &why);

	if (d < 0) {
		if (!r->warned)
			lb_warnx("%s: %s: run state unreadable (%s); starting afresh",
			    r->name, r->path, why);
		r->warned = 1;
		return 1;
	}
	if (d == 1 && a->name_len > 0 && strcmp(a->name, r->name) != 0) {
		r->foreign = 1;
		snprintf(r->foreign_name, sizeof r->foreign_name, "%s", a->name);
		/* whoever wrote the file chose these bytes: no escapes to the terminal */
		lb_text_clean(r->foreign_name);
	}
	return d == 0;
}

/* The anti-spam check: sets too_soon and wait_left; 1 when A was changed. */
static int check_elapsed(struct lb_runctx *r, struct lb_atom *a, const struct lb_atom_clock *now)
{
	int future, changed = 0;
	/* from the last completion, as CFEngine's lastcompleted */
	int64_t since = lb_atom_since_end(a, now, &future);

	r->last_now = *now;
	if (future) {
		/*
		 * The clock went back past the last completion: count it as
		 * now and store that, so the atom waits one IFELAPSED at most
		 * rather than until the clock catches up. When that completion
		 * is the last run, its start moves with it (a start after its
		 * end would read as a negative duration).
		 */
		if (lb_atom_completed(a)) {
			memcpy(a->boot_id, now->boot_id, sizeof a->boot_id);
			a->start_wall = now->wall;
			a->start_boot = now->boot;
			a->duration = 0;
		}
		a->end_wall = now->wall;
		changed = 1;
	}
	r->too_soon = since >= 0 && since < r->o->ifelapsed;
	r->wait_left = r->too_soon ? r->o->ifelapsed - since : 0;
	return changed;
}

/* Looking, when the lock is busy: is it also too soon? */
static int peek_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct lb_runctx *r = arg;
	struct lb_atom *a = &r->last;
	int write = load_state(r, area, len, a);

	if (r->foreign)
		return 0;
	write |= check_elapsed(r, a, now);
	if (write)
		lb_atom_encode(area, len, a);
	return write;
}

/* With the lock held: check again, then record the start. */
static int begin_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct lb_runctx *r = arg;
	struct lb_atom *a = &r->last;
	int write = peek_fn(area, len, now, arg);

	if (r->foreign || r->too_soon)
		return write;
	if (a->flags & LB_ATOM_RUNNING) {
		/*
		 * The last run's end was never recorded: it was expired (by
		 * this start, or by another whose signals ended it first), or
		 * its supervisor vanished. Neither is a completion: end_wall
		 * keeps the last one, from which IFELAPSED counts.
		 */
		if (r->expired || (a->flags & LB_ATOM_EXPIRING)) {
			int future;
			int64_t d = lb_atom_since_start(a, now, &future);

			a->status = LB_STATUS_EXPIRED;
			a->duration = d > 0 ? d : 0;
			a->expiries++;
		} else {
			a->status = LB_STATUS_UNKNOWN;
			a->duration = -1;
		}
		lb_atom_push(a, a->start_wall, a->duration, a->status);
	}
	r->streak = lb_atom_expired_streak(a);
	/* what to put back should the command not start at all */
	r->before = *a;
	r->start_wall = now->wall;
	r->local_start = lb_now(CLOCK_BOOTTIME);
	a->flags = LB_ATOM_RUNNING;
	a->super_pid = getpid();
	memcpy(a->boot_id, now->boot_id, sizeof a->boot_id);
	a->start_wall = r->start_wall;
	a->start_boot = now->boot;
	a->cmd_pid = a->cmd_pgid = 0;
	a->cmd_starttime = 0;
	a->expiry_sig = 0;
	a->runs++;
	a->ifelapsed = r->o->ifelapsed;
	a->expireafter = r->o->expireafter;
	a->expire_auto = r->o->expire_auto;
	a->name_len = strlen(r->name);
	memcpy(a->name, r->name, a->name_len + 1);
	lb_atom_encode(area, len, a);
	return 1;
}

int64_t lb_run_expireafter(const struct lb_runctx *r)
{
	/* learned from the state read under the lock, bounded by this run's option */
	return r->o->expire_auto ? lb_atom_learn(&r->last, r->o->expireafter, NULL) :
	    r->o->expireafter;
}

/* Whether the area decodes to this run's own state, into A. */
static int ours(const struct lb_runctx *r, const unsigned char *area, size_t len,
    struct lb_atom *a)
{
	const char *why;

	return lb_atom_decode(area, len, a, &why) == 1 && (a->flags & LB_ATOM_RUNNING) &&
	    a->super_pid == getpid() && a->start_wall == r->start_wall;
}

static int started_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct lb_runctx *r = arg;
	struct lb_atom a;

	(void)now;
	if (!ours(r, area, len, &a))
		return 0;
	a.cmd_pid = r->child;
	a.cmd_pgid = r->child;
	a.cmd_starttime = lb_proc_starttime(r->child);
	lb_atom_encode(area, len, &a);
	return 1;
}

static int end_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct lb_runctx *r = arg;
	struct lb_atom a;
	int future;

	/* never overwrite a state that moved on (reset, or another run's) */
	if (!ours(r, area, len, &a))
		return 0;
	/* ours: started at r->start_wall, so never -1 */
	a.duration = lb_atom_since_start(&a, now, &future);
	a.status = r->status;
	/*
	 * Killed by a later start: an expiry, whoever records it first, and
	 * not a completion (end_wall keeps the last one). Otherwise the run
	 * ended by itself, whatever its status: it is the last completion.
	 */
	if (a.flags & LB_ATOM_EXPIRING) {
		a.status = LB_STATUS_EXPIRED;
		a.expiries++;
	} else {
		a.end_wall = now->wall;
	}
	a.flags = 0;
	lb_atom_push(&a, r->start_wall, a.duration, a.status);
	lb_atom_encode(area, len, &a);
	return 1;
}

/* The command could not be started: no run happened, the state goes back. */
static int unstart_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct lb_runctx *r = arg;
	struct lb_atom a;

	(void)now;
	if (!ours(r, area, len, &a))
		return 0;
	lb_atom_encode(area, len, &r->before);
	return 1;
}

struct expiring {
	const struct lb_ident *old;	/* the run's supervisor */
	int on;
};

/*
 * Mark the running run as being expired (its end is then an expiry), or
 * take the mark back when the expiry did not happen after all.
 */
static int expiring_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	const struct expiring *e = arg;
	uint32_t need = e->on ? LB_ATOM_RUNNING : LB_ATOM_EXPIRING;
	struct lb_atom a;
	const char *why;

	(void)now;
	if (lb_atom_decode(area, len, &a, &why) != 1 || !(a.flags & need) ||
	    a.super_pid != e->old->pid)
		return 0;
	if (e->on)
		a.flags |= LB_ATOM_EXPIRING;
	else
		a.flags &= ~LB_ATOM_EXPIRING;
	lb_atom_encode(area, len, &a);
	return 1;
}

void lb_run_mark_expiring(struct lb_runctx *r, const struct lb_ident *old, int on)
{
	struct expiring e = { old, on };

	if (lb_pool_atom(r->pool, expiring_fn, &e) < 0 && on)
		lb_warnx("%s: cannot mark the run as expiring", r->name);
}

/* The expiry's signals, weakest first. */
const int lb_expiry_sigs[LB_EXPIRY_STEPS] = { SIGCONT, SIGINT, SIGTERM, SIGKILL };

size_t lb_expiry_rank(int sig)
{
	size_t i;

	for (i = 0; i < LB_EXPIRY_STEPS; i++)
		if (lb_expiry_sigs[i] == sig)
			return i + 1;
	return 0;
}

struct sent {
	pid_t old;			/* the run's supervisor */
	int sig;			/* in: the signal about to be sent; out: the strongest sent */
	int gone;			/* out: the state has moved on to another run */
};

/*
 * Several starts may expire one run together, each at its own step: the
 * run's state keeps the strongest signal any of them sent, so that the
 * one that takes over can log what ended the run, not its own step.
 * The mark stays after the run's end is recorded (until the next start).
 */
static int sent_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct sent *s = arg;
	struct lb_atom a;
	const char *why;

	(void)now;
	if (lb_atom_decode(area, len, &a, &why) != 1)
		return 0;
	if (a.super_pid != s->old) {
		s->gone = 1;
		return 0;
	}
	if (lb_expiry_rank(s->sig) <= lb_expiry_rank(a.expiry_sig)) {
		s->sig = a.expiry_sig;
		return 0;
	}
	a.expiry_sig = s->sig;
	lb_atom_encode(area, len, &a);
	return 1;
}

/*
 * Record SIG (0: none) as sent to OLD's run; the strongest sent so far,
 * or 0; -1 when another run has started since (OLD's is over).
 */
int lb_run_note_sent(struct lb_runctx *r, pid_t old, int sig)
{
	struct sent s = { old, sig, 0 };

	if (lb_pool_atom(r->pool, sent_fn, &s) < 0)
		return sig;	/* reported */
	return s.gone ? -1 : s.sig;
}

/*
 * How long the holder's run has lasted: from the run's start in the state
 * A (read at NOW) when the state names the holder (a supervisor that took
 * over after an expiry waited before it started), else from its lock
 * record. A is NULL when no state could be read.
 */
int64_t lb_holder_age(const struct lb_atom *a, const struct lb_atom_clock *now,
    const struct lb_ident *who)
{
	int future;
	int64_t since;

	if (a != NULL && (a->flags & LB_ATOM_RUNNING) && a->super_pid == who->pid &&
	    (since = lb_atom_since_start(a, now, &future)) >= 0)
		return since;
	return lb_ident_age(who);
}

/* The callbacks above, each over the atom's area under its lock: as lb_pool_atom. */
int lb_run_peek(struct lb_runctx *r)
{
	return lb_pool_atom(r->pool, peek_fn, r);
}

int lb_run_begin(struct lb_runctx *r)
{
	return lb_pool_atom(r->pool, begin_fn, r);
}

int lb_run_started(struct lb_runctx *r)
{
	return lb_pool_atom(r->pool, started_fn, r);
}

int lb_run_end(struct lb_runctx *r)
{
	return lb_pool_atom(r->pool, end_fn, r);
}

int lb_run_unstart(struct lb_runctx *r)
{
	return lb_pool_atom(r->pool, unstart_fn, r);
}

/* An adaptive run's record in the atom area: reading it, a run's start and end, an expiry's marks. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_RUNSTATE_H
#define LOCKBOX_RUNSTATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "atom.h"
#include "pool.h"
#include "proc.h"

/* adaptive's options */
struct lb_run_opts {
	int64_t ifelapsed, expireafter, grace;	/* with expire_auto, expireafter bounds it */
	int expire_auto;		/* -x auto: EXPIREAFTER learned from the history */
	const char *dir;
	const char *log;
	int busy_status;
	int on_loss;			/* 0: none */
	int quiet, verbose, json, use_syslog;
};

/* One run's context, shared with the atom-area callbacks. */
struct lb_runctx {
	const struct lb_run_opts *o;
	const char *name;
	const char *path;		/* the state's lock file, or its server's URL */
	struct lb_pool *pool;
	struct lb_ident who;		/* this supervisor, as the lock records it */
	int warned;			/* corrupt state reported once */
	int foreign;			/* the state belongs to another NAME */
	char foreign_name[LB_ATOM_NAME_MAX + 1];
	/* results */
	int too_soon;
	int64_t wait_left;		/* until the next run is allowed */
	struct lb_atom last;		/* the state as last read */
	struct lb_atom_clock last_now;	/* when it was read, on the state's clocks */
	struct lb_atom before;		/* the state before this run's start */
	/* this run */
	int expired;			/* the lock was taken over from an expired run */
	int64_t expire_in_force;	/* the EXPIREAFTER that expired it */
	unsigned streak;		/* expiries in a row, that one included */
	int64_t start_wall;		/* on the state's clock */
	int64_t local_start;		/* on this host's boot clock, for the log */
	pid_t child;
	int status;
	int signalled;			/* the last signal passed on to the command */
	int lost;			/* the server ended the run's session */
	int killed;			/* the command died of a signal */
};

/*
 * Each under the atom's lock, as lb_pool_atom (0 or 1, or -1 reported):
 * peek: the lock is busy; is it also too soon (r->too_soon, r->last)?
 * begin: with the lock held, check again, then record the start;
 * started: the command's PID; end: how the run ended;
 * unstart: the command could not be started, the state goes back.
 * A state that belongs to another NAME sets r->foreign and is left alone.
 */
int lb_run_peek(struct lb_runctx *r);
int lb_run_begin(struct lb_runctx *r);
int lb_run_started(struct lb_runctx *r);
int lb_run_end(struct lb_runctx *r);
int lb_run_unstart(struct lb_runctx *r);

/* The EXPIREAFTER in force for a run found in the state last read (r->last). */
int64_t lb_run_expireafter(const struct lb_runctx *r);

/* Mark OLD's run as being expired (ON), or take the mark back. */
void lb_run_mark_expiring(struct lb_runctx *r, const struct lb_ident *old, int on);

/* The expiry's signals, weakest first, and a signal's place among them (0: none). */
#define LB_EXPIRY_STEPS 4
extern const int lb_expiry_sigs[LB_EXPIRY_STEPS];
size_t lb_expiry_rank(int sig);

/*
 * Record SIG (0: none) as sent to OLD's run; the strongest sent so far,
 * or 0; -1 when another run has started since (OLD's is over).
 */
int lb_run_note_sent(struct lb_runctx *r, pid_t old, int sig);

/*
 * How long the holder WHO's run has lasted: from the run's start in the
 * state A (read at NOW) when it names the holder, else from its lock
 * record. A is NULL when no state could be read.
 */
int64_t lb_holder_age(const struct lb_atom *a, const struct lb_atom_clock *now,
    const struct lb_ident *who);


#endif

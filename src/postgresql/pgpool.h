/* The PostgreSQL backend's insides, shared by its files (pg*.c: pgpool.c and what it stands on); no one else's. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_PGPOOL_H
#define LOCKBOX_PGPOOL_H

#include <stdint.h>

#include <libpq-fe.h>

#include "backend.h"
#include "parse.h"
#include "proc.h"
#include "watcher.h"

/*
 * The server ends a holder's session this long after its maximum hold H
 * (idle_session_timeout): the watcher, counting from before the taking
 * statement was sent, tells the command first, though the two clocks may
 * run apart by a thousandth.
 */
#define LBPG_HOLD_GRACE(h)	((h) > 0 ? LB_NS_PER_S + (h) / 1000 : 0)

/* what pg_stat_activity keeps of an application_name */
#define APPNAME_MAX	63

/* a session's start in microseconds since the epoch: pg_holders reads it,
 * pg_end_session matches it */
#define BACKEND_START_SQL	"(extract(epoch FROM a.backend_start) * 1000000)::bigint"

struct pgpool {
	struct lb_pool base;
	PGconn *conn;		/* NULL: none yet, or the last one failed */
	char *conninfo;		/* the URL without lock= */
	const char *sslmode;	/* lockbox's default for it (pgconn.c); NULL: libpq's */
	char *lock;		/* NAME */
	int32_t key;
	int access;		/* LB_POOL_READ, WRITE, LIST */
	int on_loss;
	int to_caller;		/* opts.loss_to_caller: the loss is this process's to handle */
	unsigned slot;		/* held, 0: none */
	int armed;		/* keep_on_exec: the holder's connection must stay silent */
	int connected;		/* a connection was made in this run (see lbpg_open_conn) */
	int fresh;		/* p->conn's setup is still to go, with its first query */
	struct lb_watcher watcher;	/* the loss watcher (pgwatch.c); ctl -1: none */
	char watched[LB_COMMAND_MAX];	/* the command's name, for its title */
	int64_t max_hold;	/* opts.max_hold, ns; 0: none */
	int64_t since;		/* CLOCK_BOOTTIME ns: the last taking statement was sent */
	int64_t srv_bound;	/* ns: how long the server takes to drop a silent client */
	int64_t cli_bound;	/* ns: how long this client takes to notice a silent server */
	int full;		/* the last connection was refused for too many connections */
	int gate;		/* pggate.c's file, once opened; -1: not yet */
	int in_gate;		/* this waiter holds the gate */
	const struct lb_ident *who;	/* the acquisition's holder-to-be, while it runs */
	int retrying;		/* lbpg_query keeps a lost connection's failure quiet, in lost */
	int lost;		/* the last lbpg_query failed with the connection (see lbpg_lost) */
	PGconn *state_conn;	/* for atom transactions once armed */
	char fence[24];		/* the acquisition's transaction id */
	char appname[APPNAME_MAX + 1];
	char last_err[256];	/* why the last attempt at the server failed, not yet reported */
};

static inline struct pgpool *pp(struct lb_pool *pool)
{
	return (struct pgpool *)pool;
}

/* pgconn.c: the URL, connections and their policy, error text */
int lbpg_split_url(struct pgpool *p, const char *url, int access);
/* libpq's last error, or R's, on one line: static storage */
const char *lbpg_error(PGconn *conn);
const char *lbpg_res_error(PGresult *r, PGconn *conn);
/* R's SQLSTATE, "" when it has none */
const char *lbpg_state(PGresult *r);
/* Whether a failure (R may be NULL) is the connection's end, or the server away for a while. */
int lbpg_lost(PGconn *conn, PGresult *r);
/*
 * Run SQL on CONN: the last result when it is OK. Else NULL, and the
 * failure reported; with p->retrying, a lost connection's failure is not,
 * but kept: p->lost set, p->last_err why.
 */
PGresult *lbpg_query(struct pgpool *p, PGconn *conn, const char *sql);
char *lbpg_literal(struct pgpool *p, PGconn *conn, const char *s);
PGconn *lbpg_connect(struct pgpool *p, const char *appname, int64_t deadline, int *passing);
/* 0 when CONN is a direct connection to a primary, else -1 (reported) */
int lbpg_check_server(struct pgpool *p, PGconn *conn);
/* the setup of a connection for ACCESS, as one statement (";"-ended) into SQL, and the check of its answer */
int lbpg_setup_sql(struct pgpool *p, PGconn *conn, int access, char *sql, size_t size);
int lbpg_setup_check(struct pgpool *p, PGconn *conn, int access, PGresult *r);
/* 0 when p->max_hold is one this client and the server can keep, else -1 (reported) */
int lbpg_check_hold(struct pgpool *p);
int lbpg_open_conn(struct pgpool *p, int access, int later, int64_t deadline);
void lbpg_drop(struct pgpool *p);

/*
 * pggate.c: the gate of the URL's role on this host, where waiters that
 * the server refuses for too many connections take turns to try again.
 * enter: with REFUSED (this waiter was refused), take it, waiting until
 * DEADLINE; without, only when another holds it now (else FREE: try on
 * your own). Returns what came of it. leave: let the next one in.
 */
enum {
	LBPG_GATE_NONE,		/* no gate to be had (its file): try on your own */
	LBPG_GATE_FREE,		/* nobody waits: try on your own */
	LBPG_GATE_IN,		/* taken at once: nobody was ahead */
	LBPG_GATE_WAITED,	/* taken after others: try at once */
	LBPG_GATE_LATE		/* the deadline passed in its queue */
};
int lbpg_gate_enter(struct pgpool *p, int64_t deadline, int refused);
void lbpg_gate_leave(struct pgpool *p);

/* pgstate.c: adaptive's state table (the ops of the same names in backend.h) */
int lbpg_atom(struct lb_pool *pool, lb_atom_fn *fn, void *arg);
int lbpg_atom_read(struct lb_pool *pool, unsigned char *area, size_t len,
    struct lb_atom_clock *now);
int lbpg_atom_names(struct lb_pool *pool, char ***names, size_t *n);

/*
 * pgwatch.c: the loss watcher of a command that holds a slot. start: one
 * for COMMAND, unarmed, before the acquisition (nothing when no one is to
 * be told and no maximum hold kept, or one runs already); arm: from now
 * on p->conn's end is the command's loss, and the hold counts from
 * p->since (a new watcher, armed, if the first is gone); stop: let an
 * unarmed one go. 0, or -1 (reported).
 */
int lbpg_watch_start(struct pgpool *p, const char *command);
int lbpg_watch_arm(struct pgpool *p);
void lbpg_watch_stop(struct pgpool *p);

#endif

/* SPDX-License-Identifier: ISC */
/*
 * adaptive's run state on a PostgreSQL server: the state table.
 *
 * adaptive's run state for NAME is a row of the table lockbox_atom, the
 * atom area of a lock file's header kept as it is (bytea), read and
 * written in one transaction under the transaction lock (KEY, -2). Its
 * times are the server's clock: every host that shares the state agrees
 * on how long ago they were, whatever its own clock says. Here: reading,
 * writing and listing atoms, and the server's clock. Calls only pgconn.c.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "backend.h"
#include "err.h"
#include "pgpool.h"

/* the atom transaction's lock: (KEY, -2) */
#define ATOM_LOCK	"-2"
/* creating the state table, once per database: a one-number advisory lock
 * ("lockbox" in ASCII), apart from the two-number locks of slots */
#define TABLE_LOCK	"30521908067921784"

/*
 * The server has no clock that is never set (nothing like CLOCK_BOOTTIME
 * that SQL can read): its wall clock stands in for the boot clock too,
 * under a boot id that says so.
 */
#define SERVER_CLOCK_ID	"postgresql clock"

/*
 * The table, made by the first run in a database: every role that may
 * connect may take an atom's lock, so every such role may keep its state
 * (an administrator may REVOKE that from PUBLIC and grant it to chosen
 * roles). Whoever made it first, it stays shared.
 */
#define ATOM_TABLE_SQL \
	"CREATE TABLE IF NOT EXISTS lockbox_atom (" \
	" name text PRIMARY KEY," \
	" lock_key integer NOT NULL," \
	" area bytea NOT NULL," \
	" updated timestamptz NOT NULL);" \
	" GRANT SELECT, INSERT, UPDATE ON lockbox_atom TO PUBLIC"
/* the server's time, in microseconds since the epoch */
#define SERVER_NOW_SQL	"(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

/*
 * The connection for atom transactions: the pool's own until its socket is
 * handed to the command, since after that anything arriving on it means
 * the session is lost; then one of its own, named apart from holders.
 * NULL (reported).
 */
static PGconn *state_conn(struct pgpool *p)
{
	char name[APPNAME_MAX + 1];
	int passing;

	if (!p->armed) {
		if (p->conn == NULL && lbpg_open_conn(p, p->access, 0, LB_NO_WAIT) != 1)
			return NULL;
		return p->conn;
	}
	if (p->state_conn != NULL && PQstatus(p->state_conn) == CONNECTION_OK)
		return p->state_conn;
	if (p->state_conn != NULL)
		PQfinish(p->state_conn);
	snprintf(name, sizeof name, "lockbox-state pid=%d", (int)getpid());
	p->state_conn = lbpg_connect(p, name, LB_NO_WAIT, &passing);
	if (p->state_conn == NULL)
		lb_warnx("%s: cannot connect: %s", p->base.name, p->last_err);
	if (p->state_conn != NULL && lbpg_check_server(p, p->state_conn) != 0) {
		PQfinish(p->state_conn);
		p->state_conn = NULL;
	}
	return p->state_conn;
}

/*
 * Report MSG, a permission denied: a role the table is not granted to (a
 * table an older lockbox made, or one an administrator restricted) is
 * told what its owner may grant. The failed transaction is rolled back.
 */
static void denied(struct pgpool *p, PGconn *conn, const char *msg)
{
	PGresult *r;

	if (PQtransactionStatus(conn) == PQTRANS_INERROR)
		PQclear(PQexec(conn, "ROLLBACK"));
	r = PQexec(conn, "SELECT pg_get_userbyid(relowner),"
	    " format('GRANT SELECT, INSERT, UPDATE ON %s TO %I', oid::regclass, current_user)"
	    " FROM pg_class WHERE oid = to_regclass('lockbox_atom')");
	if (r != NULL && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		lb_warnx("%s: %s; the table's owner, role %s, may grant it: %s", p->base.name,
		    msg, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
	else
		lb_warnx("%s: %s; a role that may create the table lockbox_atom there runs adaptive first",
		    p->base.name, msg);
	PQclear(r);
}

/* Report the failure R, after WHAT; a permission denied by denied(). */
static void state_failed(struct pgpool *p, PGconn *conn, PGresult *r, const char *what)
{
	char msg[300];

	snprintf(msg, sizeof msg, "%s%s", what, lbpg_res_error(r, conn));
	if (strcmp(lbpg_state(r), "42501") == 0)
		denied(p, conn, msg);
	else
		lb_warnx("%s: %s", p->base.name, msg);
}

/* Run SQL on CONN as lbpg_query does, a failure reported by state_failed(). */
static PGresult *state_query(struct pgpool *p, PGconn *conn, const char *sql)
{
	PGresult *r = PQexec(conn, sql);
	ExecStatusType st = r != NULL ? PQresultStatus(r) : PGRES_FATAL_ERROR;

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return r;
	state_failed(p, conn, r, "");
	PQclear(r);
	return NULL;
}

static void server_clock(const char *us, struct lb_atom_clock *now)
{
	now->wall = strtoll(us, NULL, 10) * 1000;
	now->boot = now->wall;
	memcpy(now->boot_id, SERVER_CLOCK_ID, sizeof now->boot_id);
}

/* A bytea in its text form into AREA, zero-filled past what was stored. */
static int unescape_area(struct pgpool *p, const char *text, unsigned char *area, size_t len)
{
	size_t n;
	unsigned char *b = PQunescapeBytea((const unsigned char *)text, &n);

	if (b == NULL) {
		lb_warnx("%s: cannot read the run state: out of memory", p->base.name);
		return -1;
	}
	memset(area, 0, len);
	memcpy(area, b, n < len ? n : len);
	PQfreemem(b);
	return 0;
}

/* Run SQL (ROLLBACK, COMMIT) whose result is only its success. */
static int command(struct pgpool *p, PGconn *conn, const char *sql, const char *tag)
{
	PGresult *r = lbpg_query(p, conn, sql);
	int ok = r != NULL && strcmp(PQcmdStatus(r), tag) == 0;

	if (r != NULL && !ok)
		lb_warnx("%s: %s did not happen (%s)", p->base.name, tag, PQcmdStatus(r));
	PQclear(r);
	return ok ? 0 : -1;
}

static int store_area(struct pgpool *p, PGconn *conn, const unsigned char *area, size_t len)
{
	char key[16];
	const char *values[3] = { p->lock, key, (const char *)area };
	int lens[3] = { 0, 0, (int)len }, fmts[3] = { 0, 0, 1 };
	PGresult *r;
	int rc = -1;

	snprintf(key, sizeof key, "%" PRId32, p->key);
	r = PQexecParams(conn,
	    "INSERT INTO lockbox_atom (name, lock_key, area, updated)"
	    " VALUES ($1, $2, $3, clock_timestamp()) ON CONFLICT (name) DO UPDATE"
	    " SET lock_key = EXCLUDED.lock_key, area = EXCLUDED.area, updated = EXCLUDED.updated",
	    3, NULL, values, lens, fmts, 0);
	if (r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK)
		rc = 0;
	else
		state_failed(p, conn, r, "cannot store the run state: ");
	PQclear(r);
	return rc;
}

/*
 * One transaction: take (KEY, -2), create the table if this is the
 * database's first atom, read the row and the server's time, let FN
 * change it, store it. Every change of one atom's row happens under
 * that lock, so a row that does not exist yet is covered too.
 */
int lbpg_atom(struct lb_pool *pool, lb_atom_fn *fn, void *arg)
{
	struct pgpool *p = pp(pool);
	PGconn *conn = state_conn(p);
	unsigned char area[LB_POOL_ATOM_SIZE];
	struct lb_atom_clock now;
	char sql[1024], *name;
	PGresult *r;
	int rc = -1;

	if (conn == NULL)
		return -1;
	name = lbpg_literal(p, conn, p->lock);
	if (name == NULL)
		return -1;
	snprintf(sql, sizeof sql,
	    "BEGIN; SELECT pg_advisory_xact_lock(%" PRId32 ", " ATOM_LOCK ");"
	    " DO $$BEGIN IF to_regclass('lockbox_atom') IS NULL THEN"
	    " PERFORM pg_advisory_xact_lock(" TABLE_LOCK ");"
	    " IF to_regclass('lockbox_atom') IS NULL THEN " ATOM_TABLE_SQL "; END IF;"
	    " END IF; END$$;"
	    " SELECT (SELECT area FROM lockbox_atom WHERE name = %s), " SERVER_NOW_SQL,
	    p->key, name);
	PQfreemem(name);
	r = state_query(p, conn, sql);
	if (r != NULL && PQntuples(r) == 1 &&
	    unescape_area(p, PQgetvalue(r, 0, 0), area, sizeof area) == 0) {
		server_clock(PQgetvalue(r, 0, 1), &now);
		rc = fn(area, sizeof area, &now, arg);
		if (rc == 1 && store_area(p, conn, area, sizeof area) != 0)
			rc = -1;
	}
	PQclear(r);
	if (rc == 1)
		return command(p, conn, "COMMIT", "COMMIT") == 0 ? 1 : -1;
	if (PQtransactionStatus(conn) != PQTRANS_IDLE)
		command(p, conn, "ROLLBACK", "ROLLBACK");
	return rc;
}

/* Whether the state table exists, and the server's time. 1, 0, or -1. */
static int state_table(struct pgpool *p, PGconn *conn, struct lb_atom_clock *now)
{
	PGresult *r = lbpg_query(p, conn,
	    "SELECT to_regclass('lockbox_atom') IS NOT NULL, " SERVER_NOW_SQL);
	int rc = -1;

	if (r != NULL && PQntuples(r) == 1) {
		if (now != NULL)
			server_clock(PQgetvalue(r, 0, 1), now);
		rc = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	}
	PQclear(r);
	return rc;
}

/* Reading creates nothing: no table is no state. */
int lbpg_atom_read(struct lb_pool *pool, unsigned char *area, size_t len,
    struct lb_atom_clock *now)
{
	struct pgpool *p = pp(pool);
	PGconn *conn = state_conn(p);
	char sql[512], *name;
	PGresult *r;
	int rc;

	if (conn == NULL)
		return -1;
	if ((rc = state_table(p, conn, now)) <= 0)
		return rc;
	name = lbpg_literal(p, conn, p->lock);
	if (name == NULL)
		return -1;
	snprintf(sql, sizeof sql, "SELECT area FROM lockbox_atom WHERE name = %s", name);
	PQfreemem(name);
	r = state_query(p, conn, sql);
	if (r == NULL)
		return -1;
	rc = PQntuples(r) == 1;
	if (rc && unescape_area(p, PQgetvalue(r, 0, 0), area, len) != 0)
		rc = -1;
	PQclear(r);
	return rc;
}

int lbpg_atom_names(struct lb_pool *pool, char ***names, size_t *n)
{
	struct pgpool *p = pp(pool);
	PGresult *r;
	int i, rc = state_table(p, p->conn, NULL);

	if (rc <= 0)
		return rc;
	r = state_query(p, p->conn, "SELECT name FROM lockbox_atom ORDER BY name COLLATE \"C\"");
	if (r == NULL)
		return -1;
	*names = calloc((size_t)PQntuples(r) + 1, sizeof **names);
	for (i = 0; *names != NULL && i < PQntuples(r); i++) {
		(*names)[i] = strdup(PQgetvalue(r, i, 0));
		if ((*names)[i] == NULL)
			break;
		*n = (size_t)i + 1;
	}
	rc = *names != NULL && *n == (size_t)PQntuples(r) ? 0 : -1;
	if (rc != 0)
		lb_warn("%s", p->base.name);
	PQclear(r);
	return rc;
}

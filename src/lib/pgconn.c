/* SPDX-License-Identifier: ISC */
/*
 * The PostgreSQL backend's connections: the URL (lock= apart from what
 * libpq gets, percent-decoded), the connection policy (keepalives on both
 * ends in the order that tells the command of a loss first, a session
 * hardened against the server's own timeouts, no standby, no pooler), and
 * the one-line error text of libpq's messages. Calls nothing above it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "backend.h"
#include "err.h"
#include "hash.h"
#include "pgpool.h"
#include "text.h"

/*
 * Keepalive defaults: the client gives up on a silent peer (~11 s) well
 * before the server does (~40 s), so the command is signalled before the
 * server frees its lock for someone else.
 */
#define CLI_IDLE	"5"
#define CLI_INTERVAL	"2"
#define CLI_COUNT	"3"
#define CLI_USER_TIMEOUT "11000"
#define SRV_IDLE	20
#define SRV_INTERVAL	5
#define SRV_COUNT	4
#define SRV_USER_TIMEOUT 40000

/*
 * Percent-decode S[0..n) into a new string; NULL on a bad escape, and on
 * %00: the name would end there and be another lock's.
 */
static char *pct_decode(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	size_t i;

	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = i + 2 < n ? lb_hexval(s[i + 1]) : -1;
			int lo = i + 2 < n ? lb_hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0 || hi * 16 + lo == 0) {
				free(out);
				return NULL;
			}
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/*
 * Split URL into what libpq gets (every query parameter but lock=) and
 * NAME. 0, or -1 (reported).
 */
int lbpg_split_url(struct pgpool *p, const char *url, int access)
{
	const char *q = strchr(url, '?'), *a, *e;
	size_t n = strlen(url);
	char *info = malloc(n + 1), *o;

	if (info == NULL) {
		lb_warn("%s", p->base.name);
		return -1;
	}
	p->conninfo = info;
	if (q == NULL)
		q = url + n;
	memcpy(info, url, (size_t)(q - url));
	o = info + (q - url);
	for (a = *q == '?' ? q + 1 : q; *a != '\0'; a = *e == '&' ? e + 1 : e) {
		e = a + strcspn(a, "&");
		if (e - a >= 5 && strncmp(a, "lock=", 5) == 0) {
			if (p->lock != NULL) {
				lb_warnx("%s: lock= given twice", p->base.name);
				return -1;
			}
			p->lock = pct_decode(a + 5, (size_t)(e - a - 5));
			if (p->lock == NULL || p->lock[0] == '\0') {
				lb_warnx("%s: invalid lock name", p->base.name);
				return -1;
			}
		} else if (e > a) {
			char sep = o == info + (q - url) ? '?' : '&';

			*o++ = sep;
			memcpy(o, a, (size_t)(e - a));
			o += e - a;
		}
	}
	*o = '\0';
	if (p->lock == NULL && access == LB_POOL_LIST)
		return 0;
	if (p->lock != NULL && access == LB_POOL_LIST) {
		lb_warnx("%s: a database to list takes no lock=", p->base.name);
		return -1;
	}
	if (p->lock == NULL) {
		lb_warnx("%s: no lock=NAME in the URL (postgresql://HOST/DB?lock=NAME)",
		    p->base.name);
		return -1;
	}
	/* FNV-1a folded to 31 bits: a positive int4, the same on every client */
	p->key = (int32_t)(lb_fnv1a32(p->lock, strlen(p->lock)) & 0x7fffffff);
	return 0;
}

/* The first line of libpq's last error, for a one-line message. */
const char *lbpg_error(PGconn *conn)
{
	static char line[256];
	const char *m = PQerrorMessage(conn);
	size_t n = strcspn(m, "\n");

	if (n >= sizeof line)
		n = sizeof line - 1;
	memcpy(line, m, n);
	line[n] = '\0';
	return line[0] != '\0' ? line : "unknown error";
}

/* R's error without its severity ("permission denied for ..."), else libpq's last. */
const char *lbpg_res_error(PGresult *r, PGconn *conn)
{
	static char line[256];
	const char *m = r != NULL ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	size_t n;

	if (m == NULL && r != NULL)
		m = PQresultErrorMessage(r);
	if (m == NULL || (n = strcspn(m, "\n")) == 0)
		return lbpg_error(conn);
	if (n >= sizeof line)
		n = sizeof line - 1;
	memcpy(line, m, n);
	line[n] = '\0';
	return line;
}

const char *lbpg_state(PGresult *r)
{
	const char *s = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;

	return s != NULL ? s : "";
}

/* Run SQL; the last result when it is OK, else NULL (reported). */
PGresult *lbpg_query(struct pgpool *p, PGconn *conn, const char *sql)
{
	PGresult *r = PQexec(conn, sql);
	ExecStatusType st = r != NULL ? PQresultStatus(r) : PGRES_FATAL_ERROR;

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return r;
	lb_warnx("%s: %s", p->base.name, lbpg_res_error(r, conn));
	PQclear(r);
	return NULL;
}

PGconn *lbpg_connect(struct pgpool *p, const char *appname)
{
	const char *kw[] = {
		"keepalives", "keepalives_idle", "keepalives_interval",
		"keepalives_count", "tcp_user_timeout", "connect_timeout",
		"application_name", "dbname", NULL
	};
	/* dbname comes last: what the URL sets overrides these defaults */
	const char *val[] = {
		"1", CLI_IDLE, CLI_INTERVAL, CLI_COUNT, CLI_USER_TIMEOUT, "10",
		appname, p->conninfo, NULL
	};
	PGconn *conn = PQconnectdbParams(kw, val, 1);

	if (conn == NULL) {
		lb_warnx("%s: cannot connect: out of memory", p->base.name);
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		lb_warnx("%s: cannot connect: %s", p->base.name, lbpg_error(conn));
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/*
 * A session advisory lock means something only on the primary and only
 * over a connection that is a session of its own. A standby takes advisory
 * locks that no other server sees. A pooler (PgBouncer) answers the startup
 * itself with a backend key of its own making, and in transaction mode
 * hands each transaction to any server session: the lock would stay in a
 * session this client no longer has.
 */
int lbpg_check_server(struct pgpool *p, PGconn *conn)
{
	PGresult *r = lbpg_query(p, conn, "SELECT pg_is_in_recovery(), pg_backend_pid()");
	int rc = -1;

	if (r == NULL)
		return -1;
	if (PQntuples(r) != 1)
		lb_warnx("%s: unexpected answer from the server", p->base.name);
	else if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
		lb_warnx("%s: the server is a standby (in recovery); its advisory locks are not shared with the primary",
		    p->base.name);
	else if (atoi(PQgetvalue(r, 0, 1)) != PQbackendPID(conn))
		lb_warnx("%s: the connection goes through a pooler (server PID %s, startup said %d); session locks need a direct connection",
		    p->base.name, PQgetvalue(r, 0, 1), PQbackendPID(conn));
	else
		rc = 0;
	PQclear(r);
	return rc;
}

/* A conninfo value as an integer; DEF when unset or not a number. */
static long conn_option(PGconn *conn, const char *key, long def)
{
	PQconninfoOption *o = PQconninfo(conn), *i;
	long v = def;
	char *end;

	for (i = o; i != NULL && i->keyword != NULL; i++)
		if (strcmp(i->keyword, key) == 0 && i->val != NULL && i->val[0] != '\0') {
			v = strtol(i->val, &end, 10);
			if (*end != '\0')
				v = def;
		}
	PQconninfoFree(o);
	return v;
}

/*
 * How long a silent peer goes unnoticed, in ms, as Linux counts it: with
 * a user timeout, the first probe after it; else the last probe.
 */
static long loss_bound(long idle, long interval, long count, long user_timeout)
{
	if (idle <= 0 || interval <= 0 || count <= 0)
		return -1;	/* no keepalives: never */
	if (user_timeout > 0) {
		long t = (idle + interval) * 1000;

		return (t > user_timeout ? t : user_timeout) + interval * 1000;
	}
	return (idle + interval * count) * 1000;
}

/*
 * Keepalives on both ends of a holder's connection, the client's shorter:
 * when a partition cuts it, the command must hear of it before the server
 * frees the lock for another holder. Server settings the user chose (in
 * the URL's options=-c ...) are kept, and refused when they would undo
 * that order. Over a Unix socket there is no TCP and nothing to set.
 */
static int set_keepalives(struct pgpool *p, PGconn *conn)
{
	static const char *const names[] = {
		"tcp_keepalives_idle", "tcp_keepalives_interval",
		"tcp_keepalives_count", "tcp_user_timeout"
	};
	static const long ours[] = { SRV_IDLE, SRV_INTERVAL, SRV_COUNT, SRV_USER_TIMEOUT };
	char sql[1024];
	long srv[4], cli, server;
	size_t n = 0, i;
	PGresult *r;

	n += (size_t)snprintf(sql + n, sizeof sql - n, "SELECT ");
	for (i = 0; i < 4; i++)
		n += (size_t)snprintf(sql + n, sizeof sql - n,
		    "%sSELECT CASE WHEN source = 'client' THEN setting"
		    " ELSE set_config(name, '%ld', false) END"
		    " FROM pg_settings WHERE name = '%s'", i ? "), (" : "(",
		    ours[i], names[i]);
	snprintf(sql + n, sizeof sql - n, ")");
	r = lbpg_query(p, conn, sql);
	if (r == NULL)
		return -1;
	for (i = 0; i < 4; i++)
		srv[i] = PQgetisnull(r, 0, (int)i) ? 0 : atol(PQgetvalue(r, 0, (int)i));
	PQclear(r);
	if (srv[0] == 0 && srv[1] == 0 && srv[2] == 0)
		return 0;	/* a Unix socket: the server has no TCP here */
	server = loss_bound(srv[0], srv[1], srv[2], 0);
	if (srv[3] > 0 && (server < 0 || srv[3] < server))
		server = srv[3];
	cli = conn_option(conn, "keepalives", 1) == 0 ? -1 :
	    loss_bound(conn_option(conn, "keepalives_idle", 7200),
	    conn_option(conn, "keepalives_interval", 75),
	    conn_option(conn, "keepalives_count", 9),
	    conn_option(conn, "tcp_user_timeout", 0));
	if (server >= 0 && (cli < 0 || cli >= server)) {
		lb_warnx("%s: the server would drop a silent connection (and free the lock) after %lds, before this client notices (%s): the command could outlive its lock",
		    p->base.name, server / 1000,
		    cli < 0 ? "keepalives off" : "later");
		return -1;
	}
	return 0;
}

/* Settings a holder's session must not have: timeouts that end it. */
static int harden_session(struct pgpool *p, PGconn *conn)
{
	PGresult *r = lbpg_query(p, conn,
	    "SELECT set_config('statement_timeout', '0', false),"
	    " set_config('idle_in_transaction_session_timeout', '0', false),"
	    " CASE WHEN current_setting('server_version_num')::int >= 140000"
	    " THEN set_config('idle_session_timeout', '0', false) END");

	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

/* A connection ready to take slots; NULL (reported) */
PGconn *lbpg_holder_conn(struct pgpool *p, int access)
{
	PGconn *conn = lbpg_connect(p, p->appname);

	if (conn == NULL)
		return NULL;
	if (lbpg_check_server(p, conn) != 0 || (access == LB_POOL_WRITE &&
	    (harden_session(p, conn) != 0 || set_keepalives(p, conn) != 0))) {
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* S quoted as an SQL literal (PQfreemem it), or NULL (reported). */
char *lbpg_literal(struct pgpool *p, PGconn *conn, const char *s)
{
	char *q = PQescapeLiteral(conn, s, strlen(s));

	if (q == NULL)
		lb_warnx("%s: %s", p->base.name, lbpg_error(conn));
	return q;
}

/* SPDX-License-Identifier: ISC */
/*
 * The PostgreSQL backend's connections: the URL (lock= apart from what
 * libpq gets, percent-decoded), the connection policy (keepalives on both
 * ends in the order that tells the command of a loss first, a session
 * hardened against the server's own timeouts, no standby, no pooler, one
 * round trip to set it all up), connecting within a deadline and again
 * after a restart (what failed for a while, and what for good), and the
 * one-line error text of libpq's messages. Calls nothing above it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <libpq-fe.h>

#include "backend.h"
#include "clock.h"
#include "err.h"
#include "hash.h"
#include "parse.h"
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

/* libpq's own default for connect_timeout is none: ours is 10 s */
#define CONNECT_TIMEOUT	10
/* a connection attempt within a wait gets at least this long */
#define CONNECT_MIN	(1 * LB_NS_PER_S)
/* between attempts at a server that is away: doubling from the first to the last */
#define RETRY_FIRST	(50 * LB_NS_PER_MS)
#define RETRY_LAST	(1 * LB_NS_PER_S)

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
 * passfile= and service= make libpq read a file the URL names, and libpq
 * warns about such a file on stderr itself, unescaped: a lock's URL
 * takes neither (PGPASSFILE, ~/.pgpass, PGSERVICE do the same). The key
 * A..E, percent-decoded as libpq decodes it; 0, or -1 (reported).
 */
static int refused_key(const struct pgpool *p, const char *a, const char *e)
{
	const char *eq = memchr(a, '=', (size_t)(e - a));
	char *key = pct_decode(a, (size_t)((eq != NULL ? eq : e) - a));
	int r = 0;

	if (key != NULL && strcmp(key, "passfile") == 0) {
		lb_warnx("%s: passfile= is not taken in a lock's URL: name the file in PGPASSFILE, or use ~/.pgpass",
		    p->base.name);
		r = -1;
	} else if (key != NULL && strcmp(key, "service") == 0) {
		lb_warnx("%s: service= is not taken in a lock's URL: name the service in PGSERVICE",
		    p->base.name);
		r = -1;
	}
	free(key);
	return r;
}

/* The value of KEY in O (NULL when unset or empty). */
static const char *option_in(const PQconninfoOption *o, const char *key)
{
	for (; o != NULL && o->keyword != NULL; o++)
		if (strcmp(o->keyword, key) == 0 && o->val != NULL && o->val[0] != '\0')
			return o->val;
	return NULL;
}

/* KEY's value in O as an integer; DEF when unset or not a number. */
static long option_long(const PQconninfoOption *o, const char *key, long def)
{
	const char *v = option_in(o, key);
	char *end;
	long n;

	if (v == NULL)
		return def;
	n = strtol(v, &end, 10);
	return *end == '\0' ? n : def;
}

/* A conninfo value of CONN as an integer; DEF when unset or not a number. */
static long conn_option(PGconn *conn, const char *key, long def)
{
	PQconninfoOption *o = PQconninfo(conn);
	long v = option_long(o, key, def);

	PQconninfoFree(o);
	return v;
}

/* Whether host (or hostaddr) H is this host itself: a Unix socket, loopback. */
static int local_host(const char *h, size_t n)
{
	char a[64];
	unsigned char b[16];

	if (n == 0 || h[0] == '/' || h[0] == '@')
		return 1;	/* a Unix socket (libpq's default when none is named) */
	if (n >= sizeof a)
		return 0;
	memcpy(a, h, n);
	a[n] = '\0';
	if (strcasecmp(a, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, a, b) == 1)
		return b[0] == 127;
	if (inet_pton(AF_INET6, a, b) == 1)
		return IN6_IS_ADDR_LOOPBACK((struct in6_addr *)b) ||
		    (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)b) && b[12] == 127);
	return 0;
}

/*
 * libpq's own default, sslmode=prefer, falls back to plain text when the
 * server offers no TLS, and checks no certificate: a lock's grants and
 * fences could be read and forged on the way. So unless the URL or
 * PGSSLMODE names a mode, a server reached over the network is asked for
 * TLS, sslmode=require (libpq then checks its certificate against
 * ~/.postgresql/root.crt when that file is there, as verify-ca). One
 * reached only over a Unix socket or loopback keeps libpq's default:
 * nothing it sends leaves this host. Decided from the URL's hosts
 * (hostaddr when given), else PGHOSTADDR or PGHOST, else libpq's Unix
 * socket; a PGSERVICE that may name another host counts as a network.
 */
static const char *tls_default(const char *conninfo)
{
	PQconninfoOption *o = PQconninfoParse(conninfo, NULL);
	const char *hosts = option_in(o, "hostaddr"), *h, *e;
	int net = 0;

	if (getenv("PGSSLMODE") != NULL || option_in(o, "sslmode") != NULL) {
		PQconninfoFree(o);
		return NULL;
	}
	if (hosts == NULL)
		hosts = option_in(o, "host");
	if (hosts == NULL)
		hosts = getenv("PGHOSTADDR") != NULL ? getenv("PGHOSTADDR") : getenv("PGHOST");
	if (hosts == NULL)
		net = getenv("PGSERVICE") != NULL;
	for (h = hosts; h != NULL && !net; h = *e == ',' ? e + 1 : NULL) {
		e = h + strcspn(h, ",");
		net = !local_host(h, (size_t)(e - h));
	}
	PQconninfoFree(o);
	return net ? "require" : NULL;
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
		if (refused_key(p, a, e) != 0)
			return -1;
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
	p->sslmode = tls_default(p->conninfo);
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


/*
 * A line of libpq's text for messages: the first line of M, without the
 * SQLSTATE that verbose errors put after the severity ("FATAL:  53300: ").
 */
static const char *one_line(const char *m, char *line, size_t size)
{
	size_t n = strcspn(m, "\n"), i, o = 0;

	for (i = 0; i < n && o + 1 < size; i++) {
		if (i >= 3 && m[i - 3] == ':' && m[i - 2] == ' ' && m[i - 1] == ' ' &&
		    n - i > 6 && strspn(m + i, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") == 5 &&
		    m[i + 5] == ':' && m[i + 6] == ' ')
			i += 7;
		line[o++] = m[i];
	}
	line[o] = '\0';
	return line[0] != '\0' ? line : "unknown error";
}

/* The SQLSTATE a verbose message M carries ("...:  57P03: ..."), in STATE; 0 when none. */
static int message_state(const char *m, char state[6])
{
	const char *s;

	for (s = strstr(m, ":  "); s != NULL; s = strstr(s + 1, ":  "))
		if (strspn(s + 3, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") == 5 &&
		    s[8] == ':' && s[9] == ' ') {
			memcpy(state, s + 3, 5);
			state[5] = '\0';
			return 1;
		}
	return 0;
}

/* The first line of libpq's last error, for a one-line message. */
const char *lbpg_error(PGconn *conn)
{
	static char line[256];

	return one_line(PQerrorMessage(conn), line, sizeof line);
}

/* R's error without its severity ("permission denied for ..."), else libpq's last. */
const char *lbpg_res_error(PGresult *r, PGconn *conn)
{
	static char line[256];
	const char *m = r != NULL ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	if (m == NULL && r != NULL)
		m = PQresultErrorMessage(r);
	if (m == NULL || m[0] == '\0' || m[0] == '\n')
		return lbpg_error(conn);
	return one_line(m, line, sizeof line);
}

/*
 * Whether an error with SQLSTATE S is the server being away for a while:
 * restarting, shutting down, starting up, out of connections, or the
 * connection itself failing. Anything else (a refused login, a database
 * that does not exist, a permission) stays as it is when tried again.
 */
static int passing(const char *s)
{
	return strncmp(s, "08", 2) == 0 || strncmp(s, "53", 2) == 0 ||
	    strcmp(s, "57P01") == 0 || strcmp(s, "57P02") == 0 ||
	    strcmp(s, "57P03") == 0 || strcmp(s, "57P05") == 0;
}

int lbpg_lost(PGconn *conn, PGresult *r)
{
	const char *s = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;

	return conn == NULL || PQstatus(conn) == CONNECTION_BAD || (s != NULL && passing(s));
}

const char *lbpg_state(PGresult *r)
{
	const char *s = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;

	return s != NULL ? s : "";
}

PGresult *lbpg_query(struct pgpool *p, PGconn *conn, const char *sql)
{
	PGresult *r = PQexec(conn, sql);
	ExecStatusType st = r != NULL ? PQresultStatus(r) : PGRES_FATAL_ERROR;

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return r;
	if (p->retrying && lbpg_lost(conn, r)) {
		p->lost = 1;
		snprintf(p->last_err, sizeof p->last_err, "%s", lbpg_res_error(r, conn));
	} else {
		lb_warnx("%s: %s", p->base.name, lbpg_res_error(r, conn));
	}
	PQclear(r);
	return NULL;
}

/* Why an attempt failed, into p->last_err; 1 when it may pass (see passing). */
static int attempt_failed(struct pgpool *p, PGconn *conn, const char *timeout)
{
	const char *m = timeout != NULL ? timeout : PQerrorMessage(conn);
	char state[6];

	one_line(m, p->last_err, sizeof p->last_err);
	if (timeout != NULL)
		return 1;
	if (message_state(m, state)) {
		/* too_many_connections: for the server, or for the role */
		p->full = strcmp(state, "53300") == 0;
		return passing(state);
	}
	/* no word from a server: it was not reached, or went away while we spoke */
	return !PQconnectionNeedsPassword(conn);
}

/*
 * One attempt at a connection, bounded by the URL's connect_timeout (ours
 * 10 s) and, for a wait (DEADLINE not LB_NO_WAIT), by its deadline, though
 * never by less than CONNECT_MIN. NULL when it failed: p->last_err says
 * why, and *PASSING whether trying again later may help.
 */
PGconn *lbpg_connect(struct pgpool *p, const char *appname, int64_t deadline, int *passing_)
{
	const char *kw[] = {
		"keepalives", "keepalives_idle", "keepalives_interval",
		"keepalives_count", "tcp_user_timeout", "application_name",
		"sslmode", "dbname", NULL
	};
	/*
	 * dbname comes last: what the URL sets overrides these defaults; a
	 * NULL sslmode (no default of ours) is skipped by libpq, whose own
	 * applies (PGSSLMODE, else prefer)
	 */
	const char *val[] = {
		"1", CLI_IDLE, CLI_INTERVAL, CLI_COUNT, CLI_USER_TIMEOUT, appname,
		p->sslmode, p->conninfo, NULL
	};
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	PGconn *conn = PQconnectStartParams(kw, val, 1);
	int64_t until, floor;
	long t;


	*passing_ = 0;
	p->full = 0;
	if (conn == NULL) {
		snprintf(p->last_err, sizeof p->last_err, "out of memory");
		return NULL;
	}
	if (PQstatus(conn) == CONNECTION_BAD) {	/* the URL itself */
		attempt_failed(p, conn, NULL);
		PQfinish(conn);
		return NULL;
	}
	/* a server's refusal then says which SQLSTATE: what may pass, what will not */
	PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
	t = conn_option(conn, "connect_timeout", CONNECT_TIMEOUT);
	if (t > 0 && t < 2)
		t = 2;	/* as libpq counts it */
	until = t > 0 ? lb_deadline_after(t * LB_NS_PER_S) : INT64_MAX;
	if (deadline != LB_NO_WAIT) {
		floor = lb_deadline_after(CONNECT_MIN);
		if (deadline > floor)
			floor = deadline;
		if (floor < until)
			until = floor;
	}
	while (st != PGRES_POLLING_OK) {
		struct pollfd pfd = { .fd = PQsocket(conn) };
		int64_t left = until == INT64_MAX ? -1 : lb_remaining(until);
		int r;

		if (st == PGRES_POLLING_FAILED) {
			*passing_ = attempt_failed(p, conn, NULL);
			PQfinish(conn);
			return NULL;
		}
		pfd.events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
		r = left == 0 ? 0 : poll(&pfd, 1, left < 0 ? -1 :
		    (int)((left + LB_NS_PER_MS - 1) / LB_NS_PER_MS));
		if (r < 0 && errno != EINTR) {
			snprintf(p->last_err, sizeof p->last_err, "poll: %s", strerror(errno));
			PQfinish(conn);
			return NULL;
		}
		if (r == 0) {
			*passing_ = attempt_failed(p, conn, "timeout expired");
			PQfinish(conn);
			return NULL;
		}
		if (r > 0)
			st = PQconnectPoll(conn);
	}
	PQsetErrorVerbosity(conn, PQERRORS_DEFAULT);
	return conn;
}

/*
 * Whether OPTIONS (libpq's options=, the server's command line for the
 * session: "-c name=value", "--name=value") sets the server's NAME.
 */
static int option_set(const char *options, const char *name)
{
	char word[128], key[128];
	const char *s = options;
	int next_is_c = 0;

	while (s != NULL && *s != '\0') {
		size_t n = 0, k = 0;
		const char *w = word;

		while (isspace((unsigned char)*s))
			s++;
		if (*s == '\0')
			break;
		/* a word, backslash quoting the next byte, as the server splits it */
		while (*s != '\0' && !isspace((unsigned char)*s)) {
			if (*s == '\\' && s[1] != '\0')
				s++;
			if (n + 1 < sizeof word)
				word[n++] = *s;
			s++;
		}
		word[n] = '\0';
		if (!next_is_c && strcmp(word, "-c") == 0) {
			next_is_c = 1;
			continue;
		}
		if (next_is_c)
			next_is_c = 0;
		else if (strncmp(word, "-c", 2) == 0)
			w = word + 2;
		else if (strncmp(word, "--", 2) == 0)
			w = word + 2;
		else
			continue;
		for (; *w != '\0' && *w != '=' && k + 1 < sizeof key; w++)
			key[k++] = *w == '-' ? '_' : *w;
		key[k] = '\0';
		if (strcasecmp(key, name) == 0)
			return 1;
	}
	return 0;
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

static const char *const srv_names[] = {
	"tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count",
	"tcp_user_timeout"
};
static const long srv_ours[] = { SRV_IDLE, SRV_INTERVAL, SRV_COUNT, SRV_USER_TIMEOUT };
/* the first server version that has each (tcp_user_timeout: 12) */
static const long srv_since[] = { 0, 0, 0, 120000 };

/*
 * Keepalives on both ends of a holder's connection, the client's shorter:
 * when a partition cuts it, the command must hear of it before the server
 * frees the lock for another holder. SRV are the server's settings as the
 * session now has them. 0, or -1 (reported) when they are in the wrong
 * order. Over a Unix socket there is no TCP and nothing to check.
 */
static int check_keepalives(struct pgpool *p, PGconn *conn, const long srv[4])
{
	long cli, server, idle = conn_option(conn, "keepalives_idle", 7200);

	if (srv[0] == 0 && srv[1] == 0 && srv[2] == 0)
		return 0;	/* a Unix socket: the server has no TCP here */
	server = loss_bound(srv[0], srv[1], srv[2], 0);
	if (srv[3] > 0 && (server < 0 || srv[3] < server))
		server = srv[3];
	cli = conn_option(conn, "keepalives", 1) == 0 ? -1 :
	    loss_bound(idle, conn_option(conn, "keepalives_interval", 75),
	    conn_option(conn, "keepalives_count", 9),
	    conn_option(conn, "tcp_user_timeout", 0));
	/*
	 * The server last heard from an idle client (its probes) up to IDLE
	 * before the link went silent: it counts from then, the client from
	 * the silence.
	 */
	if (server >= 0 && (cli < 0 || cli + idle * 1000 >= server)) {
		lb_warnx("%s: the server would drop a silent connection (and free the lock) after %lds, before this client notices (%s): the command could outlive its lock",
		    p->base.name, server / 1000,
		    cli < 0 ? "keepalives off" : "later");
		return -1;
	}
	/* for the loss watcher's message */
	p->srv_bound = server * LB_NS_PER_MS;
	p->cli_bound = cli * LB_NS_PER_MS;
	return 0;
}

/*
 * A maximum hold is longer than the time this client takes to notice a
 * silent server, by its keepalives as the URL sets them: a loss is then
 * told as a loss, never taken for the hold's end, and a hold so short is
 * a slip (of a unit: adaptive's bare numbers are minutes). And the server
 * must be able to keep a session that long (idle_session_timeout, in ms,
 * an int). 0, or -1 (reported).
 */
int lbpg_check_hold(struct pgpool *p)
{
	PQconninfoOption *o = PQconninfoParse(p->conninfo, NULL);
	int64_t most = (int64_t)INT32_MAX * LB_NS_PER_MS, bound;
	char a[32], b[32];
	long on;

	if (o == NULL)
		return 0;	/* libpq says what is wrong with it when it connects */
	on = option_long(o, "keepalives", 1);
	bound = loss_bound(option_long(o, "keepalives_idle", atol(CLI_IDLE)),
	    option_long(o, "keepalives_interval", atol(CLI_INTERVAL)),
	    option_long(o, "keepalives_count", atol(CLI_COUNT)),
	    option_long(o, "tcp_user_timeout", atol(CLI_USER_TIMEOUT))) * LB_NS_PER_MS;
	PQconninfoFree(o);
	/* no keepalives: refused by check_keepalives, with its reason */
	if (on != 0 && bound > 0 && p->max_hold <= bound) {
		lb_warnx("%s: --max-hold %s is not longer than the %s this client takes to notice a lost connection (its keepalives)",
		    p->base.name, lb_format_duration_ms(p->max_hold, a), lb_format_duration_ms(bound, b));
		return -1;
	}
	most -= LBPG_HOLD_GRACE(most);
	if (p->max_hold > most) {
		lb_warnx("%s: --max-hold %s is longer than the server keeps an idle session: at most %s",
		    p->base.name, lb_format_duration_ms(p->max_hold, a), lb_format_duration(most, b));
		return -1;
	}
	return 0;
}

/* The URL's options= (and PGOPTIONS), as libpq has them: "" when none. */
static char *conn_options(PGconn *conn)
{
	PQconninfoOption *o = PQconninfo(conn), *i;
	char *v = NULL;

	for (i = o; i != NULL && i->keyword != NULL; i++)
		if (strcmp(i->keyword, "options") == 0 && i->val != NULL)
			v = strdup(i->val);
	PQconninfoFree(o);
	return v != NULL ? v : strdup("");
}

/*
 * The setup of a new connection, in one round trip and checked in the
 * same statement before anything is changed: a session advisory lock
 * means something only on the primary and only over a connection that is
 * a session of its own. A standby takes advisory locks that no other
 * server sees. A pooler (PgBouncer) answers the startup itself with a
 * backend key of its own making, and in transaction mode hands each
 * transaction to any server session: a lock, or a setting, would stay in
 * a session this client no longer has. For a holder (WRITE), the session
 * then loses the timeouts that would end it, and gets lockbox's server
 * keepalives where the user did not choose them (options=-c ...: kept,
 * and refused when in the wrong order, see check_keepalives).
 * lbpg_setup_sql writes the one statement (0, or -1 reported);
 * lbpg_setup_check checks its answer R (0, or -1 reported).
 */
int lbpg_setup_sql(struct pgpool *p, PGconn *conn, int access, char *sql, size_t size)
{
	char *options;
	size_t n;
	int i;

	n = (size_t)snprintf(sql, size, "SELECT recovery, pid");
	if (access == LB_POOL_WRITE) {
		options = conn_options(conn);
		if (options == NULL) {
			lb_warn("%s", p->base.name);
			return -1;
		}
		n += (size_t)snprintf(sql + n, size - n,
		    ", CASE WHEN ours THEN set_config('statement_timeout', '0', false) END"
		    ", CASE WHEN ours THEN set_config('idle_in_transaction_session_timeout', '0', false) END"
		    ", CASE WHEN ours AND version >= 140000 THEN set_config('idle_session_timeout', '0', false) END");
		for (i = 0; i < 4 && n < size; i++) {
			if (option_set(options, srv_names[i]))
				n += (size_t)snprintf(sql + n, size - n,
				    ", CASE WHEN version >= %ld THEN current_setting('%s') END",
				    srv_since[i], srv_names[i]);
			else
				n += (size_t)snprintf(sql + n, size - n,
				    ", CASE WHEN ours AND version >= %ld THEN set_config('%s', '%ld', false) END",
				    srv_since[i], srv_names[i], srv_ours[i]);
		}
		free(options);
	}
	snprintf(sql + n, size - n, ", version"
	    " FROM (SELECT pg_is_in_recovery() AS recovery, pg_backend_pid() AS pid,"
	    " current_setting('server_version_num')::int AS version,"
	    " NOT pg_is_in_recovery() AND pg_backend_pid() = %d AS ours OFFSET 0) s;",
	    PQbackendPID(conn));
	return 0;
}

int lbpg_setup_check(struct pgpool *p, PGconn *conn, int access, PGresult *r)
{
	long srv[4], version = PQntuples(r) == 1 ? atol(PQgetvalue(r, 0, PQnfields(r) - 1)) : 0;
	int i;

	if (PQntuples(r) != 1)
		lb_warnx("%s: unexpected answer from the server", p->base.name);
	else if (access == LB_POOL_WRITE && p->max_hold > 0 && version < 140000)
		lb_warnx("%s: the server is PostgreSQL %ld.%ld: a maximum hold needs 14 or later (idle_session_timeout)",
		    p->base.name, version / 10000, version % 10000 / (version >= 100000 ? 1 : 100));
	else if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
		lb_warnx("%s: the server is a standby (in recovery); its advisory locks are not shared with the primary",
		    p->base.name);
	else if (atoi(PQgetvalue(r, 0, 1)) != PQbackendPID(conn))
		lb_warnx("%s: the connection goes through a pooler (server PID %s, startup said %d); session locks need a direct connection",
		    p->base.name, PQgetvalue(r, 0, 1), PQbackendPID(conn));
	else if (access != LB_POOL_WRITE)
		return 0;
	else {
		for (i = 0; i < 4; i++)
			srv[i] = PQgetisnull(r, 0, 5 + i) ? 0 : atol(PQgetvalue(r, 0, 5 + i));
		return check_keepalives(p, conn, srv);
	}
	return -1;
}

/* The setup on its own round trip. 0, or -1 (reported, or with p->lost when the connection went). */
static int setup(struct pgpool *p, PGconn *conn, int access)
{
	char sql[2048];
	PGresult *r;
	int rc;

	if (lbpg_setup_sql(p, conn, access, sql, sizeof sql) != 0)
		return -1;
	r = lbpg_query(p, conn, sql);
	if (r == NULL)
		return -1;
	rc = lbpg_setup_check(p, conn, access, r);
	PQclear(r);
	return rc;
}

int lbpg_check_server(struct pgpool *p, PGconn *conn)
{
	return setup(p, conn, LB_POOL_READ);
}

/*
 * One attempt at a connection ready for ACCESS (see setup), or, with
 * LATER, whose setup is left to go with its first query (p->fresh). NULL
 * when it failed: reported, or, when *PASSING_ is set, kept in p->last_err.
 */
static PGconn *holder_conn(struct pgpool *p, int access, int later, int64_t deadline,
    int *passing_)
{
	PGconn *conn = lbpg_connect(p, p->appname, deadline, passing_);
	int retrying = p->retrying;

	if (conn == NULL) {
		if (!*passing_)
			lb_warnx("%s: cannot connect: %s", p->base.name, p->last_err);
		return NULL;
	}
	p->fresh = later;
	if (later)
		return conn;
	/* a server that goes away during the setup is away */
	p->retrying = 1;
	p->lost = 0;
	if (setup(p, conn, access) != 0) {
		*passing_ = p->lost;
		PQfinish(conn);
		conn = NULL;
	}
	p->retrying = retrying;
	p->lost = 0;
	return conn;
}

static void nap(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / LB_NS_PER_S), (long)(ns % LB_NS_PER_S) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * p->conn, a connection ready for ACCESS (LATER: see holder_conn). A
 * server that is away for a while (restarting, starting up, out of
 * connections: see passing) is tried again until DEADLINE, at growing
 * intervals; LB_NO_WAIT tries once. A role the server refuses for too
 * many connections is tried again through this host's gate (pggate.c),
 * one waiter at a time, and without a wait it is busy. 1 connected; -1
 * failed (reported): for good, or away past the deadline when this run
 * never reached it; 0 busy: every connection the server allows is taken,
 * or away past the deadline after it had been reached in this run
 * (p->base.why says so: the lock was not taken).
 */
int lbpg_open_conn(struct pgpool *p, int access, int later, int64_t deadline)
{
	int64_t pause = RETRY_FIRST, wait;
	int passing_ = 0, gated = access == LB_POOL_WRITE && p->who != NULL, g = LBPG_GATE_NONE;

	/* others of this host are refused for too many connections: behind them */
	if (gated && deadline != LB_NO_WAIT)
		g = lbpg_gate_enter(p, deadline, 0);
	p->full = g == LBPG_GATE_LATE;
	while (g != LBPG_GATE_LATE) {
		p->conn = holder_conn(p, access, later, deadline, &passing_);
		if (p->conn != NULL) {
			lbpg_gate_leave(p);
			p->connected = 1;
			return 1;
		}
		if (!passing_ || lb_remaining(deadline) == 0)
			break;
		/* refused for too many connections: one waiter of this host tries at a time */
		if (p->full && gated && !p->in_gate) {
			g = lbpg_gate_enter(p, deadline, 1);
			if (g == LBPG_GATE_WAITED) {
				pause = RETRY_FIRST;
				continue;	/* its turn: the one before it got in */
			}
		}
		if (g == LBPG_GATE_LATE)
			break;
		/* spread out, so that waiters back from a restart do not all come at once */
		wait = pause / 2 + lb_now(CLOCK_MONOTONIC) % (pause / 2 + 1);
		if (wait > lb_remaining(deadline))
			wait = lb_remaining(deadline);
		nap(wait);
		pause = pause * 2 > RETRY_LAST ? RETRY_LAST : pause * 2;
	}
	lbpg_gate_leave(p);
	if (passing_ && p->full) {
		snprintf(p->base.why, sizeof p->base.why, "every connection the server allows is taken%s%.160s",
		    p->last_err[0] != '\0' ? ": " : " (waiters of this host queue for one)",
		    p->last_err);
		p->base.why_at_once = deadline == LB_NO_WAIT;
		return 0;
	}
	if (!passing_)
		return -1;
	if (!p->connected) {
		lb_warnx("%s: cannot connect: %s", p->base.name, p->last_err);
		return -1;
	}
	snprintf(p->base.why, sizeof p->base.why, "the server is unreachable: %.200s", p->last_err);
	p->base.why_at_once = deadline == LB_NO_WAIT;
	return 0;
}

/* Forget a connection that failed: the server ends its session, and its locks with it. */
void lbpg_drop(struct pgpool *p)
{
	if (p->conn != NULL)
		PQfinish(p->conn);
	p->conn = NULL;
	p->slot = 0;
	p->lost = 0;
}

/* S quoted as an SQL literal (PQfreemem it), or NULL (reported). */
char *lbpg_literal(struct pgpool *p, PGconn *conn, const char *s)
{
	char *q = PQescapeLiteral(conn, s, strlen(s));

	if (q == NULL)
		lb_warnx("%s: %s", p->base.name, lbpg_error(conn));
	return q;
}

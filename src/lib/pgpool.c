/* SPDX-License-Identifier: ISC */
/*
 * The PostgreSQL backend of a pool: session advisory locks.
 *
 * Slot S of lock NAME is the advisory lock (KEY, S) of the database the URL
 * names, KEY a stable 31-bit hash of NAME. The server frees a session lock
 * when its connection ends, for any reason, as the kernel frees a byte lock
 * when its file is closed; and the connection's socket is inherited across
 * exec like a lock fd, so the command holds its slot exactly as long as it
 * lives (or keeps the socket). Holders describe themselves in their
 * application_name; pg_locks joined with pg_stat_activity lists them.
 *
 * This is the backend's top: open, taking and waiting for slots, holders,
 * release, ending a holder's session, arming the loss signal for exec.
 * Below it, each calling only further down: pgstate.c (adaptive's state
 * table), pgconn.c (the URL, connections and their policy); pgpool.h is
 * theirs alone.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "backend.h"
#include "clock.h"
#include "err.h"
#include "parse.h"
#include "pgpool.h"
#include "text.h"

/* a waiter queues on at most this many held slots; past that it also
 * re-checks every WAIT_RECHECK */
#define WAIT_CONNS	8
#define WAIT_RECHECK	(500 * LB_NS_PER_MS)
/* the slot-counting transaction's own lock: (KEY, -1) */
#define COUNT_LOCK	"-1"

static const struct lb_pool_ops pg_ops;

/* The name messages, list, --json and status use: the URL with every secret hidden. */
static int set_name(struct pgpool *p, const char *url)
{
	char *name = lb_url_mask(url);

	if (name == NULL) {
		lb_warnx("out of memory");
		return -1;
	}
	if (lb_pool_init(&p->base, &pg_ops, name) != 0) {
		free(name);
		return -1;
	}
	free(name);
	return 0;
}

static void pg_close(struct lb_pool *pool)
{
	struct pgpool *p = pp(pool);

	if (p->conn != NULL)
		PQfinish(p->conn);
	if (p->state_conn != NULL)
		PQfinish(p->state_conn);
	free(p->conninfo);
	free(p->lock);
	free(p);
}

struct lb_pool *lb_pgpool_open(const char *url, int access, const struct lb_pool_opts *opts)
{
	struct pgpool *p = calloc(1, sizeof *p);
	char host[LB_HOST_MAX] = "";

	if (p == NULL) {
		lb_warnx("out of memory");
		return NULL;
	}
	if (set_name(p, url) != 0) {
		free(p);
		return NULL;
	}
	p->on_loss = opts->on_loss;
	gethostname(host, sizeof host - 1);
	snprintf(p->appname, sizeof p->appname, "lockbox pid=%d host=%.20s",
	    (int)getpid(), secure_getenv("LOCKBOX_HOST") != NULL ? secure_getenv("LOCKBOX_HOST") : host);
	if (lbpg_split_url(p, url, access) != 0 || (p->conn = lbpg_holder_conn(p, access)) == NULL) {
		lb_pool_close(&p->base);
		return NULL;
	}
	return &p->base;
}

/* "lockbox pid=P uid=U host=H cmd=C", cut to what pg_stat_activity keeps */
static void describe_self(struct pgpool *p, const struct lb_ident *who)
{
	const char *host = secure_getenv("LOCKBOX_HOST");
	char full[256];
	size_t i;

	snprintf(full, sizeof full, "lockbox pid=%d uid=%u host=%.16s cmd=%s",
	    (int)who->pid, (unsigned)who->uid, host != NULL ? host : who->host,
	    who->command);
	memcpy(p->appname, full, sizeof p->appname - 1);
	p->appname[sizeof p->appname - 1] = '\0';
	/* the server keeps printable ASCII only */
	for (i = 0; p->appname[i] != '\0'; i++)
		if ((unsigned char)p->appname[i] < 0x20 || (unsigned char)p->appname[i] > 0x7e)
			p->appname[i] = '?';
}

/* The WHERE clause of "held slots of this lock" over pg_locks l. */
static void held_where(const struct pgpool *p, char *buf, size_t n)
{
	snprintf(buf, n,
	    "l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database"
	    " WHERE datname = current_database()) AND l.classid = %" PRId32
	    " AND l.objsubid = 2 AND l.mode = 'ExclusiveLock' AND l.granted"
	    " AND l.objid BETWEEN 1 AND %d", p->key, LB_POOL_MAX_SLOTS);
}

/*
 * The start of every counting transaction: name the holder, then take the
 * pool's count lock. Writes it to SQL; -1 (reported) if NAME cannot be quoted.
 */
static int count_prefix(struct pgpool *p, PGconn *conn, char *sql, size_t size)
{
	char *name = lbpg_literal(p, conn, p->appname);

	if (name == NULL)
		return -1;
	snprintf(sql, size, "SET application_name = %s;"
	    " SELECT pg_advisory_xact_lock(%" PRId32 ", " COUNT_LOCK ");", name, p->key);
	PQfreemem(name);
	return 0;
}
/*
 * Take the lowest free slot in 1..MAX when fewer than MAX are held, all in
 * one round trip and one transaction. The count and the claim run under
 * the transaction lock (KEY, -1): two clients with different MAX cannot
 * both see room for one more. The count is of every holder, whatever slot
 * it sits in, so a MAX smaller than another client's still holds. The
 * transaction's id is the fence: each acquisition gets a larger one.
 * Returns 1 taken, 0 busy, 2 room by the count but no slot free in 1..MAX
 * (one is changing hands), -1 error (reported).
 */
static int try_take(struct pgpool *p, unsigned max)
{
	char where[512], sql[2048];
	PGresult *r;
	size_t n;
	int rc;

	if (count_prefix(p, p->conn, sql, sizeof sql) != 0)
		return -1;
	n = strlen(sql);
	held_where(p, where, sizeof where);
	snprintf(sql + n, sizeof sql - n,
	    " SELECT s, CASE WHEN s IS NOT NULL THEN txid_current() END, h"
	    " FROM (SELECT h, CASE WHEN h < %u THEN"
	    " (SELECT s FROM generate_series(1, %u) s"
	    " WHERE pg_try_advisory_lock(%" PRId32 ", s) LIMIT 1) END AS s"
	    " FROM (SELECT count(*) AS h FROM pg_locks l WHERE %s) c OFFSET 0) x",
	    max, max, p->key, where);
	r = lbpg_query(p, p->conn, sql);
	if (r == NULL)
		return -1;
	rc = 0;
	if (PQntuples(r) != 1) {
		lb_warnx("%s: unexpected answer from the server", p->base.name);
		rc = -1;
	} else if (!PQgetisnull(r, 0, 0)) {
		p->slot = (unsigned)atoi(PQgetvalue(r, 0, 0));
		snprintf(p->fence, sizeof p->fence, "%s", PQgetvalue(r, 0, 1));
		rc = 1;
	} else if (strtoul(PQgetvalue(r, 0, 2), NULL, 10) < max) {
		rc = 2;	/* room, but a slot in 1..MAX changing hands */
	}
	PQclear(r);
	return rc;
}

/*
 * After a wait handed CONN slot S: keep it if S is within MAX and the
 * holders, counted under the transaction lock, are no more than MAX (a
 * client with a larger MAX may have filled the pool meanwhile). 1 kept
 * (fence set), 0 let go, -1 error.
 */
static int confirm(struct pgpool *p, PGconn *conn, unsigned s, unsigned max)
{
	char where[512], sql[2048];
	PGresult *r;
	size_t n;
	int rc = 0;

	if (count_prefix(p, conn, sql, sizeof sql) != 0)
		return -1;
	n = strlen(sql);
	held_where(p, where, sizeof where);
	snprintf(sql + n, sizeof sql - n,
	    " SELECT CASE WHEN %u <= %u AND (SELECT count(*) FROM pg_locks l WHERE %s) <= %u"
	    " THEN txid_current() WHEN pg_advisory_unlock(%" PRId32 ", %u) THEN -1 ELSE -1 END",
	    s, max, where, max, p->key, s);
	r = lbpg_query(p, conn, sql);
	if (r == NULL)
		return -1;
	if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "-1") != 0) {
		snprintf(p->fence, sizeof p->fence, "%s", PQgetvalue(r, 0, 0));
		rc = 1;
	}
	PQclear(r);
	return rc;
}

/* The slots held now, ascending, preferring those within MAX; at most N. */
static int held_slots(struct pgpool *p, unsigned max, unsigned *v, size_t n, size_t *got)
{
	char where[512], sql[1024];
	PGresult *r;
	int i;

	held_where(p, where, sizeof where);
	snprintf(sql, sizeof sql,
	    "SELECT l.objid FROM pg_locks l WHERE %s ORDER BY l.objid > %u, l.objid LIMIT %zu",
	    where, max, n);
	r = lbpg_query(p, p->conn, sql);
	if (r == NULL)
		return -1;
	*got = 0;
	for (i = 0; i < PQntuples(r); i++)
		v[(*got)++] = (unsigned)strtoul(PQgetvalue(r, i, 0), NULL, 10);
	PQclear(r);
	return 0;
}

struct waiter {
	PGconn *conn;
	unsigned slot;
	int busy;	/* a query is in flight */
	int won;	/* it returned: the slot is this connection's */
};

/* Read what is there; 1 when the query finished, 0 not yet, -1 error. */
static int waiter_poll(struct pgpool *p, struct waiter *w)
{
	PGresult *r;
	int ok = 0, err = 0;

	if (!PQconsumeInput(w->conn)) {
		lb_warnx("%s: %s", p->base.name, lbpg_error(w->conn));
		return -1;
	}
	if (PQisBusy(w->conn))
		return 0;
	while ((r = PQgetResult(w->conn)) != NULL) {
		ExecStatusType st = PQresultStatus(r);

		if (st == PGRES_TUPLES_OK)
			ok = 1;
		else if (st != PGRES_COMMAND_OK)
			err = 1;
		PQclear(r);
	}
	w->busy = 0;
	w->won = ok && !err;
	return 1;
}

/* Cancel a query still waiting and collect its end, whatever it was. */
static void waiter_stop(struct pgpool *p, struct waiter *w)
{
	PGcancel *c;
	char buf[256];

	if (!w->busy)
		return;
	c = PQgetCancel(w->conn);
	if (c != NULL) {
		PQcancel(c, buf, sizeof buf);
		PQfreeCancel(c);
	}
	while (w->busy && waiter_poll(p, w) == 0) {
		struct pollfd pfd = { .fd = PQsocket(w->conn), .events = POLLIN };

		if (poll(&pfd, 1, 5000) <= 0)
			break;
	}
	w->busy = 0;
}

static int waiter_send(struct pgpool *p, struct waiter *w, int64_t deadline)
{
	char sql[256];
	/* the server ends the wait itself shortly after the deadline, so a
	 * client that vanishes leaves no waiter queued for long */
	long long ms = lb_remaining(deadline) / LB_NS_PER_MS + 1000;

	snprintf(sql, sizeof sql,
	    "SET lock_timeout = %lld; SELECT pg_advisory_lock(%" PRId32 ", %u)",
	    ms, p->key, w->slot);
	if (!PQsendQuery(w->conn, sql)) {
		lb_warnx("%s: %s", p->base.name, lbpg_error(w->conn));
		return -1;
	}
	w->busy = 1;
	return 0;
}

/*
 * Wait for one of the held slots without polling the server: queue a
 * blocking pg_advisory_lock on each (up to WAIT_CONNS), the first on our
 * own connection, the rest on connections of their own. The server hands
 * a freed lock to the first in its queue, so waiters are served in order
 * per slot and a newcomer cannot barge in. The first request granted wins
 * and the others are cancelled. Returns 1 with *slot held on p->conn,
 * 0 when the deadline passed or a re-check is due, -1 on error.
 */
static int wait_slot(struct pgpool *p, unsigned max, int64_t deadline, unsigned *slot)
{
	struct waiter w[WAIT_CONNS];
	struct pollfd pfd[WAIT_CONNS];
	unsigned held[WAIT_CONNS + 1];
	size_t n, i, nw = 0;
	int64_t until = deadline;
	int rc = -1, win = -1;

	if (held_slots(p, max, held, WAIT_CONNS + 1, &n) != 0)
		return -1;
	if (n == 0)
		return 0;	/* freed meanwhile: try again at once */
	if (n > WAIT_CONNS) {
		n = WAIT_CONNS;
		if (lb_remaining(deadline) > WAIT_RECHECK)
			until = lb_deadline_after(WAIT_RECHECK);
	}
	memset(w, 0, sizeof w);
	for (i = 0; i < n; i++) {
		w[i].slot = held[i];
		/* any of them may end up holding the slot: each is a holder's */
		w[i].conn = i == 0 ? p->conn : lbpg_holder_conn(p, LB_POOL_WRITE);
		if (w[i].conn == NULL)
			goto out;
		nw++;
		if (waiter_send(p, &w[i], deadline) != 0)
			goto out;
	}
	while (win < 0) {
		int64_t left = lb_remaining(until);
		int ms = (int)((left + LB_NS_PER_MS - 1) / LB_NS_PER_MS), r;

		if (left == 0) {
			rc = 0;
			goto out;
		}
		for (i = 0; i < nw; i++) {
			pfd[i].fd = PQsocket(w[i].conn);
			pfd[i].events = w[i].busy ? POLLIN : 0;
		}
		r = poll(pfd, nw, ms);
		if (r < 0 && errno != EINTR) {
			lb_warn("%s: poll", p->base.name);
			goto out;
		}
		for (i = 0; r > 0 && i < nw; i++) {
			if (pfd[i].revents == 0 || !w[i].busy)
				continue;
			if (waiter_poll(p, &w[i]) < 0)
				goto out;
			if (!w[i].busy && !w[i].won && lb_remaining(deadline) > 0) {
				lb_warnx("%s: %s", p->base.name, lbpg_error(w[i].conn));
				goto out;
			}
			if (w[i].won && win < 0)
				win = (int)i;
		}
	}
	rc = 1;
out:
	for (i = 0; i < nw; i++)
		waiter_stop(p, &w[i]);
	/* a request granted while being cancelled is let go with its connection */
	for (i = 0; i < nw; i++) {
		if ((int)i == win)
			continue;
		if (i == 0 && w[0].won) {
			char sql[128];
			PGresult *r;

			snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%" PRId32 ", %u)",
			    p->key, w[0].slot);
			r = lbpg_query(p, p->conn, sql);
			if (r == NULL)
				rc = -1;
			PQclear(r);
		}
		if (i > 0 && w[i].conn != NULL)
			PQfinish(w[i].conn);
	}
	if (rc == 1) {
		if (win > 0) {
			PQfinish(p->conn);
			p->conn = w[win].conn;
		}
		*slot = w[win].slot;
	}
	return rc;
}

static int pg_holders(struct lb_pool *pool, struct lb_holders *out);

static int pg_acquire(struct lb_pool *pool, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	struct pgpool *p = pp(pool);
	unsigned s;
	int r, tries = 0;

	describe_self(p, who);
	for (;;) {
		r = try_take(p, max);
		if (r == 1) {
			*slot = p->slot;
			return 1;
		}
		if (r < 0)
			return -1;
		/* a freed slot may be in a waiter's hands for an instant */
		if (r == 2 && tries++ < 3)
			continue;
		if (lb_remaining(deadline) == 0)
			break;
		r = wait_slot(p, max, deadline, &s);
		if (r < 0)
			return -1;
		if (r == 1) {
			r = confirm(p, p->conn, s, max);
			if (r < 0)
				return -1;
			if (r == 1) {
				*slot = p->slot = s;
				return 1;
			}
		}
	}
	if (busy != NULL && pg_holders(pool, busy) != 0)
		return -1;
	return 0;
}

static unsigned pg_own_slot(struct lb_pool *pool)
{
	return pp(pool)->slot;
}

static int pg_release(struct lb_pool *pool, pid_t owner)
{
	struct pgpool *p = pp(pool);
	PGresult *r = lbpg_query(p, p->conn, "SELECT pg_advisory_unlock_all()");

	(void)owner;
	if (r == NULL)
		return -1;
	PQclear(r);
	p->slot = 0;
	return 0;
}

/* Parse "lockbox pid=P uid=U host=H cmd=C" into WHO; 0 when it is not one. */
static int parse_appname(const char *s, struct lb_ident *who)
{
	const char *h, *c;
	int pid;
	unsigned uid = 0;

	if (sscanf(s, "lockbox pid=%d", &pid) != 1 || pid <= 0)
		return 0;
	who->pid = pid;
	if ((h = strstr(s, " uid=")) != NULL)
		sscanf(h, " uid=%u", &uid);
	who->uid = uid;
	h = strstr(s, " host=");
	c = strstr(s, " cmd=");
	if (h != NULL) {
		size_t n = c != NULL && c > h ? (size_t)(c - h - 6) : strlen(h + 6);

		snprintf(who->host, sizeof who->host, "%.*s", (int)n, h + 6);
	}
	if (c != NULL)
		snprintf(who->command, sizeof who->command, "%s", c + 5);
	return 1;
}

/*
 * Holders from the server: its lock table says who holds what, and each
 * holder's session says who it is. Ages are the server's (since the
 * holder's session last changed state: the end of its acquisition), so
 * clocks of other hosts do not matter. A role that may not see another
 * role's sessions in detail (pg_read_all_stats) gets no age for them.
 */
static int pg_holders(struct lb_pool *pool, struct lb_holders *out)
{
	struct pgpool *p = pp(pool);
	char where[512], sql[1024];
	PGresult *r;
	int i, n;

	held_where(p, where, sizeof where);
	snprintf(sql, sizeof sql,
	    "SELECT l.objid, a.application_name,"
	    " (extract(epoch FROM now() - a.state_change) * 1000)::bigint, l.pid,"
	    " " BACKEND_START_SQL
	    " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
	    " WHERE %s ORDER BY l.objid", where);
	r = lbpg_query(p, p->conn, sql);
	if (r == NULL)
		return -1;
	n = PQntuples(r);
	out->v = calloc(n ? (size_t)n : 1, sizeof *out->v);
	if (out->v == NULL) {
		lb_warn("%s", p->base.name);
		PQclear(r);
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct lb_holder *h = &out->v[out->n++];
		int64_t age = PQgetisnull(r, i, 2) ? 0 : strtoll(PQgetvalue(r, i, 2), NULL, 10);

		memset(h, 0, sizeof *h);
		h->slot = (unsigned)strtoul(PQgetvalue(r, i, 0), NULL, 10);
		h->known = !PQgetisnull(r, i, 1) && parse_appname(PQgetvalue(r, i, 1), &h->who);
		/* no boot id: ages are taken on the wall clock, from the server's;
		 * a session the server does not show this role has no age to show */
		h->who.wall_ns = lb_now(CLOCK_REALTIME) - (age > 0 ? age : 0) * LB_NS_PER_MS;
		h->age_unknown = h->known && PQgetisnull(r, i, 2);
		h->session.pid = atoi(PQgetvalue(r, i, 3));
		h->session.start_us = PQgetisnull(r, i, 4) ? -1 :
		    strtoll(PQgetvalue(r, i, 4), NULL, 10);
		snprintf(h->session.name, sizeof h->session.name, "%s", PQgetvalue(r, i, 1));
	}
	PQclear(r);
	return 0;
}

/*
 * pg_terminate_backend of the session that holds H's slot, in the same
 * statement that checks it is that session still: the server process,
 * its start (when the server shows it to us) and its application_name,
 * which names the holder's host and PID. A holder that let go, or another
 * that took the slot since, is never ended.
 */
static int pg_end_session(struct lb_pool *pool, const struct lb_holder *h)
{
	struct pgpool *p = pp(pool);
	char where[512], sql[2048], start[32], *name;
	PGresult *r;
	int rc = -1;

	if (h->session.pid <= 0)
		return 0;
	name = lbpg_literal(p, p->conn, h->session.name);
	if (name == NULL)
		return -1;
	if (h->session.start_us < 0)
		snprintf(start, sizeof start, "NULL");
	else
		snprintf(start, sizeof start, "%lld", (long long)h->session.start_us);
	held_where(p, where, sizeof where);
	snprintf(sql, sizeof sql,
	    "SELECT pg_terminate_backend(l.pid) FROM pg_locks l"
	    " JOIN pg_stat_activity a ON a.pid = l.pid WHERE %s AND l.objid = %u"
	    " AND l.pid = %d AND a.application_name = %s"
	    " AND " BACKEND_START_SQL " IS NOT DISTINCT FROM %s",
	    where, h->slot, h->session.pid, name, start);
	PQfreemem(name);
	r = PQexec(p->conn, sql);
	if (r != NULL && PQresultStatus(r) == PGRES_TUPLES_OK) {
		rc = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	} else if (r != NULL && PQresultErrorField(r, PG_DIAG_SQLSTATE) != NULL &&
	    strcmp(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42501") == 0) {
		errno = EPERM;	/* insufficient_privilege: told by the caller */
	} else {
		lb_warnx("%s: %s", p->base.name, lbpg_res_error(r, p->conn));
	}
	PQclear(r);
	return rc;
}

/*
 * The command inherits the connection's socket, and with it the lock.
 * The kernel signals the command (opts.on_loss) when the socket turns
 * readable or fails: after the last answer the server has nothing more to
 * say to a holder, so anything it sends (a FATAL message before it ends
 * the session, its FIN) and any error (keepalives gave up) means the
 * session, and the lock, are gone or going.
 */
static int pg_keep_on_exec(struct lb_pool *pool)
{
	struct pgpool *p = pp(pool);
	int fd = PQsocket(p->conn), fl;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (fd < 0 || fcntl(fd, F_SETFD, 0) != 0) {
		lb_warn("%s: socket", p->base.name);
		return -1;
	}
	if (p->on_loss != 0) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETOWN, getpid()) != 0 ||
		    fcntl(fd, F_SETSIG, p->on_loss) != 0 ||
		    fcntl(fd, F_SETFL, fl | O_ASYNC) != 0) {
			lb_warn("%s: cannot watch the connection", p->base.name);
			return -1;
		}
		/* what arrived before the watch was armed raised no signal */
		if (poll(&pfd, 1, 0) != 0) {
			lb_warnx("%s: the connection was lost before the command started",
			    p->base.name);
			return -1;
		}
	}
	if (setenv("LOCKBOX_FENCE", p->fence, 1) != 0) {
		lb_warn("setenv");
		return -1;
	}
	p->armed = 1;
	return 0;
}

static const struct lb_pool_ops pg_ops = {
	.acquire = pg_acquire,
	.own_slot = pg_own_slot,
	.release = pg_release,
	.holders = pg_holders,
	.atom = lbpg_atom,
	.atom_read = lbpg_atom_read,
	.atom_names = lbpg_atom_names,
	.end_session = pg_end_session,
	.lock_site = NULL,
	.keep_on_exec = pg_keep_on_exec,
	.close = pg_close,
};

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
 * This is the backend's top: open, taking and waiting for slots (one
 * connection a client, which becomes the holder's; a server that restarts
 * is reached again within the wait), holders, release, ending a holder's
 * session, arming the loss signal for exec. Below it, each calling only
 * further down: pgwatch.c (the loss watcher), pgstate.c (adaptive's state
 * table), pgconn.c (the URL, connections and their policy); pgpool.h is
 * theirs alone.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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

/*
 * A waiter queues on one held slot. When other slots are held it looks
 * again this often (lock_timeout ends its wait on the server): soon when
 * one of them has no waiter, so that a slot freed there is not left idle;
 * now and then otherwise, since waiters come and go.
 */
#define RECHECK_FAST	(250 * LB_NS_PER_MS)
#define RECHECK_SLOW	(2 * LB_NS_PER_S)
/* how long past its lock_timeout the client waits for a waiting statement's answer */
#define ANSWER_GRACE	(5 * LB_NS_PER_S)
/* the slot-counting transaction's own lock: (KEY, -1) */
#define COUNT_LOCK	"-1"
/* how long another session may keep the count lock, at least, before we give up */
#define COUNT_STUCK	(5 * LB_NS_PER_S)
/* new connections after the deadline, for a server that keeps ending them */
#define LATE_CONNECTS	3
/* how long a busy answer is looked at again when its holder has ended here (ending_here) */
#define ENDING_GRACE	(2 * LB_NS_PER_S)

/* what the steps of an acquisition return besides 1, 0 and -1 */
enum {
	LOST = -2,	/* the connection failed (p->last_err): connect again */
	STUCK = 3,	/* the count lock stayed held by another session (p->base.why) */
	AGAIN = 4	/* look again at once */
};

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
	lbpg_watch_stop(p);
	if (p->gate >= 0) {
		lbpg_gate_leave(p);
		close(p->gate);
	}
	free(p->conninfo);
	free(p->lock);
	free(p);
}

/*
 * A pool that takes slots (WRITE) connects when it acquires, within the
 * acquisition's deadline; one that only looks connects now.
 */
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
	p->access = access;
	p->watcher.ctl = -1;
	p->gate = -1;
	p->on_loss = opts->on_loss;
	p->to_caller = opts->loss_to_caller;
	p->max_hold = opts->max_hold;
	gethostname(host, sizeof host - 1);
	snprintf(p->appname, sizeof p->appname, "lockbox pid=%d host=%.20s",
	    (int)getpid(), secure_getenv("LOCKBOX_HOST") != NULL ? secure_getenv("LOCKBOX_HOST") : host);
	if (lbpg_split_url(p, url, access) != 0 ||
	    (p->max_hold > 0 && lbpg_check_hold(p) != 0) ||
	    (access != LB_POOL_WRITE && lbpg_open_conn(p, access, 0, LB_NO_WAIT) != 1)) {
		lb_pool_close(&p->base);
		return NULL;
	}
	return &p->base;
}

/* p->conn, connected now if it is not yet (for what is not an acquisition); NULL (reported). */
static PGconn *conn_now(struct pgpool *p)
{
	if (p->conn == NULL && lbpg_open_conn(p, p->access, 0, LB_NO_WAIT) != 1)
		return NULL;
	return p->conn;
}

/*
 * "lockbox pid=P uid=U w=W host=H cmd=C" (w= the watcher, when there is
 * one), cut to what pg_stat_activity keeps
 */
static void describe_self(struct pgpool *p, const struct lb_ident *who)
{
	const char *host = secure_getenv("LOCKBOX_HOST");
	char full[256], watcher[24] = "";
	size_t i;

	if (p->watcher.pid > 0)
		snprintf(watcher, sizeof watcher, " w=%d", (int)p->watcher.pid);
	snprintf(full, sizeof full, "lockbox pid=%d uid=%u%s host=%.16s cmd=%s",
	    (int)who->pid, (unsigned)who->uid, watcher, host != NULL ? host : who->host,
	    who->command);
	memcpy(p->appname, full, sizeof p->appname - 1);
	p->appname[sizeof p->appname - 1] = '\0';
	/* the server keeps printable ASCII only */
	for (i = 0; p->appname[i] != '\0'; i++)
		if ((unsigned char)p->appname[i] < 0x20 || (unsigned char)p->appname[i] > 0x7e)
			p->appname[i] = '?';
}

/* The WHERE clause of "held slots of this lock" over pg_locks l (static storage). */
static const char *held_where(const struct pgpool *p)
{
	static char buf[512];

	snprintf(buf, sizeof buf,
	    "l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database"
	    " WHERE datname = current_database()) AND l.classid = %" PRId32
	    " AND l.objsubid = 2 AND l.mode = 'ExclusiveLock' AND l.granted"
	    " AND l.objid BETWEEN 1 AND %d", p->key, LB_POOL_MAX_SLOTS);
	return buf;
}

/*
 * The count lock may be held by another session for a moment; a session
 * that keeps it (stopped, or hostile: any role that may connect may take
 * it) is waited for until DEADLINE, and at least COUNT_STUCK, or for the
 * tests a duration in LOCKBOX_TEST_PG_COUNT_STUCK. In milliseconds.
 */
static long long count_bound(int64_t deadline)
{
	static int64_t stuck;
	int64_t left = lb_remaining(deadline);
	const char *env;

	if (stuck == 0) {
		/* test only: see ARCHITECTURE.md */
		env = secure_getenv("LOCKBOX_TEST_PG_COUNT_STUCK");
		if (env == NULL || lb_parse_duration(env, LB_NS_PER_S, &stuck) != 0 || stuck <= 0)
			stuck = COUNT_STUCK;
	}
	if (left < stuck)
		left = stuck;
	return (long long)((left + LB_NS_PER_MS - 1) / LB_NS_PER_MS);
}

/*
 * The start of every counting transaction, into SQL: take the pool's
 * count lock, waiting for it no longer than count_bound (a lock_timeout
 * of this transaction alone); with FRESH, also let go of whatever an
 * interrupted wait may have left on this session. (The holder named
 * itself when it connected: describe_self comes first.)
 */
static void count_prefix(struct pgpool *p, char *sql, size_t size, int64_t deadline, int fresh)
{
	snprintf(sql, size, "SELECT pg_advisory_xact_lock(%" PRId32 ", " COUNT_LOCK ")%s"
	    " FROM (SELECT set_config('lock_timeout', '%lld', true) OFFSET 0) t;",
	    p->key, fresh ? ", pg_advisory_unlock_all()" : "", count_bound(deadline));
}

/*
 * Run SQL, a counting transaction, after the connection's setup when it is
 * fresh (one round trip for both: see try_take). 1 with *RES, the last
 * result, once the setup's answer passed lbpg_setup_check; else STUCK,
 * LOST, or -1 (reported).
 */
static int count_run(struct pgpool *p, const char *sql, int64_t deadline, PGresult **res)
{
	PGresult *r, *first = NULL, *last = NULL, *bad = NULL;
	char b[32];
	int rc = 1;

	if (!PQsendQuery(p->conn, sql)) {
		snprintf(p->last_err, sizeof p->last_err, "%s", lbpg_error(p->conn));
		return LOST;
	}
	while ((r = PQgetResult(p->conn)) != NULL) {
		ExecStatusType st = PQresultStatus(r);

		if ((st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) || bad != NULL) {
			if (bad == NULL)
				bad = r;
			else
				PQclear(r);
		} else if (first == NULL) {
			first = r;
		} else {
			PQclear(last);
			last = r;
		}
	}
	if (p->fresh && first != NULL) {
		/* the setup's answer, first; a refused server's session took nothing */
		p->fresh = 0;
		if (lbpg_setup_check(p, p->conn, LB_POOL_WRITE, first) != 0)
			rc = -1;
	}
	if (rc != 1) {
		/* reported */
	} else if (bad != NULL && strcmp(lbpg_state(bad), "55P03") == 0) {	/* our lock_timeout */
		snprintf(p->base.why, sizeof p->base.why,
		    "another session kept the lock's count lock (advisory lock %" PRId32 ", -1) for %s",
		    p->key, lb_format_duration_ms(count_bound(deadline) * LB_NS_PER_MS, b));
		p->base.why_at_once = deadline == LB_NO_WAIT;
		rc = STUCK;
	} else if (bad != NULL && lbpg_lost(p->conn, bad)) {
		snprintf(p->last_err, sizeof p->last_err, "%s", lbpg_res_error(bad, p->conn));
		rc = LOST;
	} else if (bad != NULL) {
		lb_warnx("%s: %s", p->base.name, lbpg_res_error(bad, p->conn));
		rc = -1;
	} else if (last == NULL || PQresultStatus(last) != PGRES_TUPLES_OK) {
		lb_warnx("%s: unexpected answer from the server", p->base.name);
		rc = -1;
	}
	PQclear(bad);
	PQclear(first);
	if (rc == 1)
		*res = last;
	else
		PQclear(last);
	return rc;
}

/*
 * Run a counting transaction: the setup of a fresh connection, then
 * count_prefix, then FMT. As count_run.
 */
static int counting(struct pgpool *p, int64_t deadline, int fresh, PGresult **res,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int counting(struct pgpool *p, int64_t deadline, int fresh, PGresult **res,
    const char *fmt, ...)
{
	char sql[4096];
	va_list ap;
	size_t n = 0;

	if (p->fresh) {
		if (lbpg_setup_sql(p, p->conn, LB_POOL_WRITE, sql, sizeof sql) != 0)
			return -1;
		n = strlen(sql);
	}
	count_prefix(p, sql + n, sizeof sql - n, deadline, fresh);
	n += strlen(sql + n);
	va_start(ap, fmt);
	vsnprintf(sql + n, sizeof sql - n, fmt, ap);
	va_end(ap);
	/* a maximum hold counts from before the server could have begun its own count */
	p->since = lb_now(CLOCK_BOOTTIME);
	return count_run(p, sql, deadline, res);
}

/*
 * The fence is the acquiring transaction's id, and that id must never be
 * handed out again, a server crash included. A transaction that writes
 * no WAL of its own commits without waiting for its commit record to
 * reach the disk, so after a crash (pg_ctl stop -m immediate, a killed
 * server) the next transaction could get the same id: two holders, one
 * fence. A transactional logical message (a WAL record any role may
 * write, whatever wal_level, and no table needed) makes the commit wait
 * for the flush: a fence seen by a holder survives the server.
 */
#define FENCE_DURABLE "pg_logical_emit_message(true, 'lockbox', 'fence') IS NOT NULL"

/*
 * A maximum hold is the server's to enforce too, so that a frozen host
 * (stopped, cut off) cannot keep the lock past it: the session that takes
 * the slot gets an idle_session_timeout (PostgreSQL 14) of the hold and
 * its grace, in the taking transaction. A holder's session never runs
 * another statement, so the server ends it that long after the take,
 * freeing the lock; the next holder's fence is larger. Into BUF, for
 * the taking statement's condition: "" without a hold.
 */
static const char *hold_cond(const struct pgpool *p, char *buf, size_t size)
{
	if (p->max_hold <= 0)
		return "";
	snprintf(buf, size, " AND set_config('idle_session_timeout', '%lld', false) IS NOT NULL",
	    (long long)((p->max_hold + LBPG_HOLD_GRACE(p->max_hold)) / LB_NS_PER_MS));
	return buf;
}

/*
 * Take the lowest free slot in 1..MAX when fewer than MAX are held, all in
 * one round trip and one transaction. The count and the claim run under
 * the transaction lock (KEY, -1): two clients with different MAX cannot
 * both see room for one more. The count is of every holder, whatever slot
 * it sits in, so a MAX smaller than another client's still holds. The
 * transaction's id is the fence: each acquisition gets a larger one.
 * Whatever an interrupted wait may have left on this session is let go
 * first. On a fresh connection its setup comes first in the same round
 * trip, and the claim checks what the setup checks (a primary, a session
 * of our own) for itself. Returns 1 taken, 0 busy, 2 room by the count
 * but no slot free in 1..MAX (one is changing hands), STUCK, LOST, -1
 * error (reported).
 */
static int try_take(struct pgpool *p, unsigned max, int64_t deadline)
{
	PGresult *r;
	char hold[128];
	int rc = counting(p, deadline, 1, &r,
	    " SELECT s, CASE WHEN s IS NOT NULL AND " FENCE_DURABLE "%s THEN txid_current() END, h"
	    " FROM (SELECT h, CASE WHEN h < %u AND NOT pg_is_in_recovery()"
	    " AND pg_backend_pid() = %d%s THEN"
	    " (SELECT s FROM generate_series(1, %u) s"
	    " WHERE pg_try_advisory_lock(%" PRId32 ", s) LIMIT 1) END AS s"
	    " FROM (SELECT count(*) AS h FROM pg_locks l WHERE %s) c OFFSET 0) x",
	    hold_cond(p, hold, sizeof hold), max, PQbackendPID(p->conn),
	    /* the setup refuses an older server for it; the claim checks too */
	    p->max_hold > 0 ? " AND current_setting('server_version_num')::int >= 140000" : "",
	    max, p->key, held_where(p));

	if (rc != 1)
		return rc;
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
 * After a wait handed us slot S: keep it if S is within MAX and the
 * holders, counted under the transaction lock, are no more than MAX (a
 * client with a larger MAX may have filled the pool meanwhile). 1 kept
 * (fence set), 0 let go, STUCK (let go), LOST, -1 error.
 */
static int confirm(struct pgpool *p, unsigned s, unsigned max, int64_t deadline)
{
	PGresult *r;
	char hold[128];
	int rc = counting(p, deadline, 0, &r,
	    " SELECT CASE WHEN %u <= %u AND (SELECT count(*) FROM pg_locks l WHERE %s) <= %u"
	    " AND " FENCE_DURABLE "%s THEN txid_current()"
	    " WHEN pg_advisory_unlock(%" PRId32 ", %u) THEN -1 ELSE -1 END",
	    s, max, held_where(p), max, hold_cond(p, hold, sizeof hold), p->key, s);

	if (rc == STUCK) {
		/* the slot is still ours: a session lock outlives the failed transaction */
		r = lbpg_query(p, p->conn, "SELECT pg_advisory_unlock_all()");
		if (r == NULL)
			return p->lost ? LOST : -1;
		PQclear(r);
		return STUCK;
	}
	if (rc != 1)
		return rc;
	rc = 0;
	if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "-1") != 0) {
		snprintf(p->fence, sizeof p->fence, "%s", PQgetvalue(r, 0, 0));
		rc = 1;
	}
	PQclear(r);
	return rc;
}

/*
 * The slot to wait for: a held one, within MAX if any is, with the fewest
 * waiters queued on it, the lowest of those. *N: how many are held, 0
 * when none is (freed meanwhile); *UNWATCHED: whether another held slot
 * has no waiter. 1, or LOST, -1 (reported).
 */
static int pick_slot(struct pgpool *p, unsigned max, unsigned *slot, long *n, int *unwatched)
{
	char sql[1024];
	PGresult *r;

	snprintf(sql, sizeof sql,
	    "SELECT (array_agg(objid ORDER BY objid > %u, q, objid))[1],"
	    " (array_agg(q ORDER BY objid > %u, q, objid))[1],"
	    " count(*) FILTER (WHERE q = 0), count(*)"
	    " FROM (SELECT l.objid, count(*) FILTER (WHERE NOT l.granted) AS q"
	    " FROM pg_locks l WHERE l.locktype = 'advisory' AND l.database ="
	    " (SELECT oid FROM pg_database WHERE datname = current_database())"
	    " AND l.classid = %" PRId32 " AND l.objsubid = 2 AND l.mode = 'ExclusiveLock'"
	    " AND l.objid BETWEEN 1 AND %d"
	    " GROUP BY l.objid HAVING bool_or(l.granted)) h",
	    max, max, p->key, LB_POOL_MAX_SLOTS);
	r = lbpg_query(p, p->conn, sql);
	if (r == NULL)
		return p->lost ? LOST : -1;
	*n = PQntuples(r) == 1 ? atol(PQgetvalue(r, 0, 3)) : 0;
	if (*n > 0) {
		*slot = (unsigned)strtoul(PQgetvalue(r, 0, 0), NULL, 10);
		/* the unwatched ones, but for the one picked */
		*unwatched = atol(PQgetvalue(r, 0, 2)) - (strcmp(PQgetvalue(r, 0, 1), "0") == 0) > 0;
	}
	PQclear(r);
	return 1;
}

/*
 * Wait on the server, with this client's one connection, for one held
 * slot (pick_slot): a blocking pg_advisory_lock, which the server grants
 * to the first in its queue when the slot's holder lets go, so waiters on
 * a slot are served in order and a newcomer cannot barge in. The wait's
 * lock_timeout is set for its own transaction only (set_config local to
 * the statement): the deadline, or sooner when other slots are held and
 * it is time to look again (see RECHECK_FAST). Returns 1 with *slot held
 * on p->conn, 0 when the deadline passed or a look is due, LOST, -1.
 */
static int wait_slot(struct pgpool *p, unsigned max, int64_t deadline, unsigned *slot)
{
	char sql[256];
	int64_t until = deadline, every, answer;
	long long ms;
	long n = 0;
	unsigned s = 0;
	int unwatched = 0, rc;
	PGresult *r;

	if ((rc = pick_slot(p, max, &s, &n, &unwatched)) != 1)
		return rc;
	if (n == 0)
		return 0;	/* freed meanwhile: try again at once */
	if (n > 1) {
		every = unwatched ? RECHECK_FAST : RECHECK_SLOW;
		if (lb_remaining(deadline) > every)
			until = lb_deadline_after(every);
	}
	ms = (lb_remaining(until) + LB_NS_PER_MS - 1) / LB_NS_PER_MS;
	if (ms < 1)
		ms = 1;
	if (ms > INT32_MAX)
		ms = INT32_MAX;
	snprintf(sql, sizeof sql,
	    "SELECT pg_advisory_lock(%" PRId32 ", %u)"
	    " FROM (SELECT set_config('lock_timeout', '%lld', true) OFFSET 0) t",
	    p->key, s, ms);
	if (!PQsendQuery(p->conn, sql)) {
		snprintf(p->last_err, sizeof p->last_err, "%s", lbpg_error(p->conn));
		return LOST;
	}
	/* the server answers by then; if it does not, it is gone */
	answer = lb_remaining(until) + ANSWER_GRACE;
	answer = lb_deadline_after(answer);
	while (PQisBusy(p->conn)) {
		struct pollfd pfd = { .fd = PQsocket(p->conn), .events = POLLIN };
		int64_t left = lb_remaining(answer);

		if (left == 0) {
			snprintf(p->last_err, sizeof p->last_err, "no answer from the server");
			return LOST;
		}
		if (poll(&pfd, 1, (int)((left + LB_NS_PER_MS - 1) / LB_NS_PER_MS)) < 0 &&
		    errno != EINTR) {
			lb_warn("%s: poll", p->base.name);
			return -1;
		}
		if (!PQconsumeInput(p->conn)) {
			snprintf(p->last_err, sizeof p->last_err, "%s", lbpg_error(p->conn));
			return LOST;
		}
	}
	rc = 0;
	while ((r = PQgetResult(p->conn)) != NULL) {
		ExecStatusType st = PQresultStatus(r);

		if (st == PGRES_TUPLES_OK && rc == 0) {
			rc = 1;
		} else if (st != PGRES_TUPLES_OK && strcmp(lbpg_state(r), "55P03") != 0) {
			/* not our lock_timeout: the connection went, or an error */
			snprintf(p->last_err, sizeof p->last_err, "%s", lbpg_res_error(r, p->conn));
			rc = lbpg_lost(p->conn, r) ? LOST : -1;
		}
		PQclear(r);
	}
	if (rc == -1)
		lb_warnx("%s: %s", p->base.name, p->last_err);
	if (rc == 1)
		*slot = s;
	return rc;
}

/*
 * One round of an acquisition on p->conn: take a slot, else wait for one
 * until a look is due. 1 taken (p->slot), 0 the deadline passed, AGAIN,
 * STUCK, LOST, -1 (reported).
 */
static int acquire_round(struct pgpool *p, unsigned max, int64_t deadline, int *tries)
{
	unsigned s = 0;
	int r = try_take(p, max, deadline);

	if (r != 0 && r != 2)
		return r;
	/* a freed slot may be in a waiter's hands for an instant */
	if (r == 2 && (*tries)++ < 3)
		return AGAIN;
	if (lb_remaining(deadline) == 0)
		return 0;
	r = wait_slot(p, max, deadline, &s);
	if (r == 1 && (r = confirm(p, s, max, deadline)) == 1)
		p->slot = s;
	return r == 0 ? AGAIN : r;
}

static int pg_holders(struct lb_pool *pool, struct lb_holders *out);
static int parse_appname(const char *s, struct lb_ident *who, pid_t *watcher);

/*
 * A holder's session outlives its command by a moment: the command's exit
 * closes the connection, and the server lets go of the session's locks
 * when its backend reads the end of it, some milliseconds later (more on
 * a busy host). A caller that starts right after another's command ended
 * (two lines of one script) would be refused by a process that is gone.
 * So a busy answer is worth another look when no holder is left (the
 * lock went as we looked), or when one holder names this host (as we
 * name ourselves) and a PID that no process has here. Such a PID may be
 * a process of another host of the same name, or one whose children keep
 * the connection: then the look costs a wait of ENDING_GRACE, no more.
 * Who holds the lock is still the server's to say. 1 when the holders H
 * are worth a look again, else 0.
 */
static int ending_here(struct pgpool *p, const struct lb_holders *h)
{
	struct lb_ident self;
	pid_t watcher;
	size_t i;

	if (h->n == 0)
		return 1;
	memset(&self, 0, sizeof self);
	parse_appname(p->appname, &self, &watcher);
	for (i = 0; i < h->n; i++)
		if (h->v[i].known && strcmp(h->v[i].who.host, self.host) == 0 &&
		    kill(h->v[i].who.pid, 0) != 0 && errno == ESRCH)
			return 1;
	return 0;
}

/*
 * Acquire with one connection, which becomes the holder's: take a slot,
 * or wait for one until DEADLINE. A connection that fails (the server
 * restarting or stopped, a network) is made again, within the deadline
 * (see lbpg_open_conn), and the acquisition goes on from the start: the
 * server ended the old session's locks and waits with it.
 */
static int pg_acquire(struct lb_pool *pool, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	struct pgpool *p = pp(pool);
	struct lb_holders seen = { NULL, 0 };
	int r, tries = 0, late = 0, looked = 0;

	/*
	 * The holder-to-be's watcher first, unarmed: a handoff does not wait
	 * for its fork, and the session names it (list shows it)
	 */
	if (lbpg_watch_start(p, who->command) != 0)
		return -1;
	describe_self(p, who);
	p->who = who;
	p->retrying = 1;
again:
	do {
		if (p->conn == NULL) {
			if (lb_remaining(deadline) == 0 && p->connected && late++ >= LATE_CONNECTS) {
				snprintf(p->base.why, sizeof p->base.why,
				    "the server keeps ending the session: %.200s", p->last_err);
				r = 0;
				break;
			}
			if ((r = lbpg_open_conn(p, LB_POOL_WRITE, 1, deadline)) != 1)
				break;
		}
		r = acquire_round(p, max, deadline, &tries);
		if (r == LOST) {
			lbpg_drop(p);
			r = AGAIN;
		}
	} while (r == AGAIN);
	if (r == 0 && p->base.why[0] == '\0' && !looked++) {
		r = pg_holders(pool, &seen) != 0 ? -1 : ending_here(p, &seen);
		if (r == 1) {
			lb_holders_free(&seen);
			deadline = lb_deadline_after(ENDING_GRACE);
			tries = 0;
			goto again;
		}
	}
	p->retrying = 0;
	p->who = NULL;
	if (r == 1)
		*slot = p->slot;
	/*
	 * busy: the holders (those just looked at, unless the look again ran
	 * after), unless something else kept the slot (why)
	 */
	if (r == 0 && p->base.why[0] == '\0' && busy != NULL) {
		if (seen.n > 0)
			*busy = seen;
		else if (pg_holders(pool, busy) != 0)
			r = -1;
	} else {
		lb_holders_free(&seen);
	}
	if (r == 0 && p->base.why[0] == '\0' && busy != NULL && busy->n == 0)
		snprintf(p->base.why, sizeof p->base.why,
		    "held, and let go as its holders were looked for; try again");
	return r == STUCK ? 0 : r;
}

static int pg_release(struct lb_pool *pool, pid_t owner)
{
	struct pgpool *p = pp(pool);
	PGresult *r;

	(void)owner;
	if (p->conn == NULL)
		return 0;	/* no session, no lock */
	r = lbpg_query(p, p->conn, "SELECT pg_advisory_unlock_all()");
	if (r == NULL)
		return -1;
	PQclear(r);
	p->slot = 0;
	return 0;
}

/*
 * Parse "lockbox pid=P uid=U w=W host=H cmd=C" into WHO and *WATCHER (left
 * as it is without w=); 0 when it is not one.
 */
static int parse_appname(const char *s, struct lb_ident *who, pid_t *watcher)
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
	c = strstr(s, " w=");
	if (c != NULL && (h == NULL || c < h) && sscanf(c, " w=%d", &pid) == 1 && pid > 0)
		*watcher = pid;
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
	char sql[1024];
	PGresult *r;
	int i, n;

	if (conn_now(p) == NULL)
		return -1;
	snprintf(sql, sizeof sql,
	    "SELECT l.objid, a.application_name,"
	    " (extract(epoch FROM now() - a.state_change) * 1000)::bigint, l.pid,"
	    " " BACKEND_START_SQL
	    " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
	    " WHERE %s ORDER BY l.objid", held_where(p));
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
		h->known = !PQgetisnull(r, i, 1) &&
		    parse_appname(PQgetvalue(r, i, 1), &h->who, &h->watcher);
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
	char sql[2048], start[32], *name;
	PGresult *r;
	int rc = -1;

	if (h->session.pid <= 0)
		return 0;
	if (conn_now(p) == NULL)
		return -1;
	name = lbpg_literal(p, p->conn, h->session.name);
	if (name == NULL)
		return -1;
	if (h->session.start_us < 0)
		snprintf(start, sizeof start, "NULL");
	else
		snprintf(start, sizeof start, "%lld", (long long)h->session.start_us);
	snprintf(sql, sizeof sql,
	    "SELECT pg_terminate_backend(l.pid) FROM pg_locks l"
	    " JOIN pg_stat_activity a ON a.pid = l.pid WHERE %s AND l.objid = %u"
	    " AND l.pid = %d AND a.application_name = %s"
	    " AND " BACKEND_START_SQL " IS NOT DISTINCT FROM %s",
	    held_where(p), h->slot, h->session.pid, name, start);
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
 * After the last answer the server has nothing more to say to a holder,
 * so anything it sends (a FATAL message before it ends the session, its
 * FIN) and any error (keepalives gave up) means the session, and the
 * lock, are gone or going. Who hears of it: a caller that supervises the
 * command (opts.loss_to_caller: adaptive) gets opts.on_loss itself from
 * the kernel (O_ASYNC); else the command's job is told by a watcher
 * (pgwatch.c), once.
 */
static int pg_keep_on_exec(struct lb_pool *pool, const struct lb_ident *who)
{
	struct pgpool *p = pp(pool);
	int fd = PQsocket(p->conn), fl;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	(void)who;	/* its watcher was started with the acquisition */
	if (fd < 0 || fcntl(fd, F_SETFD, 0) != 0) {
		lb_warn("%s: socket", p->base.name);
		return -1;
	}
	if (p->on_loss != 0 && p->to_caller) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETOWN, getpid()) != 0 ||
		    fcntl(fd, F_SETSIG, p->on_loss) != 0 ||
		    fcntl(fd, F_SETFL, fl | O_ASYNC) != 0) {
			lb_warn("%s: cannot watch the connection", p->base.name);
			return -1;
		}
	}
	if (p->on_loss != 0 || p->max_hold > 0) {
		/* what arrived before the watch was armed raised no signal */
		if (poll(&pfd, 1, 0) != 0) {
			lb_warnx("%s: the connection was lost before the command started",
			    p->base.name);
			return -1;
		}
		if (!p->to_caller && lbpg_watch_arm(p) != 0)
			return -1;
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

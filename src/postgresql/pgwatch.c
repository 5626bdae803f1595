/* SPDX-License-Identifier: ISC */
/*
 * The loss watcher of a command that holds a server's slot (watcher.c is
 * the process; this is what it watches): the connection the command
 * inherits, and the maximum hold.
 *
 * It watches the connection without holding it: the socket comes with
 * the arming, is registered with an epoll set of its own and closed, so
 * the session lives exactly as long as the command's descriptors (and its
 * children's), and ends the moment the last of them closes, as if no
 * watcher were there; a stopped watcher cannot keep the lock. After its
 * last answer the server has nothing more to say to a holder: anything
 * arriving (the FATAL message before it ends the session, its FIN) means
 * the server ended the session; an error (the keepalives or the user
 * timeout gave up on a silent server) means contact was lost, and the
 * server frees the lock later, by its own keepalives. The message says
 * which. A maximum hold is the server's to enforce (the holder's session
 * ends after it, idle_session_timeout: pgpool.c): the watcher tells the
 * job when it has passed, a moment before the server ends the session.
 * Calls only watcher.c and what is below it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "parse.h"
#include "pgpool.h"
#include "watcher.h"

/* the connection's set, in the watcher's */
#define EV_CONN		LB_WATCH_OWN

/* What the arming tells the watcher besides the socket. */
struct arm_data {
	int64_t srv_bound;	/* ns: a silent client is dropped by the server after this */
	int64_t cli_bound;	/* ns: ... and a silent server noticed here after this */
	int64_t grace;		/* ns: the server ends a session the hold's grace after it */
	int64_t hold_at;	/* CLOCK_BOOTTIME ns the maximum hold ends at; 0: none */
};

/* In the watcher: the connection as it was armed. */
static struct stat sock;
static struct arm_data armed_with;
static int conn = -1;

static int armed(void *arg, int ep, int fd, const void *data, size_t n)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.u32 = 0 };
	struct epoll_event out = { .events = EPOLLIN, .data.u32 = EV_CONN };
	(void)arg;
	if (fd < 0 || n != sizeof armed_with || fstat(fd, &sock) != 0)
		return -1;
	memcpy(&armed_with, data, n);
	/*
	 * Registered in CONN, a set of its own, the socket is watched for as
	 * long as any descriptor of it is open anywhere; this one then goes,
	 * so that when the command's last one closes, the session ends at once.
	 */
	conn = epoll_create1(EPOLL_CLOEXEC);
	if (conn < 0 || epoll_ctl(conn, EPOLL_CTL_ADD, fd, &ev) != 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, conn, &out) != 0)
		return -1;
	close(fd);
	return 0;
}

/*
 * What happened to the connection, from what its socket shows: an error is
 * the kernel giving up on a silent server (keepalives, the user timeout)
 * or on one that answers no more (a reset); anything else is the server's
 * doing: its message before it ends the session, its FIN.
 */
static const char *event(void *arg, uint32_t what, uint32_t events)
{
	static char why[192];
	struct epoll_event got = { 0, { 0 } };
	char b[32];

	(void)events;
	if (what != EV_CONN)
		return NULL;
	/* the set's own event says only that the socket has one: which */
	if (epoll_wait(conn, &got, 1, 0) < 0)
		got.events = EPOLLERR;
	if ((got.events & EPOLLERR) == 0 && armed_with.hold_at != 0 &&
	    lb_now(CLOCK_BOOTTIME) >= armed_with.hold_at) {
		/* a watcher that was stopped, or a server clock that runs fast */
		snprintf(why, sizeof why,
		    "held for its maximum hold, %s; the server ended the session; its lock is free",
		    lb_format_duration_ms(((struct pgpool *)arg)->max_hold, b));
		return why;
	}
	if ((got.events & EPOLLERR) == 0)
		return "the server ended the session; its lock is free";
	/*
	 * The server hears from an idle client at least every keepalives_idle
	 * and drops it srv_bound after the last: no sooner than srv_bound less
	 * what it took this client to give up.
	 */
	snprintf(why, sizeof why,
	    "lost contact with the server (its keepalives went unanswered); the server frees the lock within about %s",
	    lb_format_duration(armed_with.srv_bound > armed_with.cli_bound ?
	    armed_with.srv_bound - armed_with.cli_bound : 0, b));
	return why;
}

static const char *expire(void *arg, const struct lb_watched *w)
{
	static char why[192];
	struct pgpool *p = arg;
	struct epoll_event got;
	char h[32], g[32];

	(void)w;
	lb_format_duration_ms(p->max_hold, h);
	/* a watcher that was stopped past the server's end of the session: said so */
	if (epoll_wait(conn, &got, 1, 0) == 1 && (got.events & EPOLLERR) == 0)
		snprintf(why, sizeof why,
		    "held for its maximum hold, %s; the server ended the session; its lock is free", h);
	else
		snprintf(why, sizeof why,
		    "held for its maximum hold, %s; the server ends the session in about %s", h,
		    lb_format_duration(armed_with.grace, g));
	return why;
}

static int site(void *arg, struct lb_lock_site *s)
{
	(void)arg;
	/* every process with a descriptor of the socket holds the lock */
	s->dev = sock.st_dev;
	s->ino = sock.st_ino;
	s->byte = -1;
	return 0;
}

static const struct lb_watch_ops ops = { armed, event, expire, NULL, site };

void lbpg_watch_stop(struct pgpool *p)
{
	lb_watcher_stop(&p->watcher);
}

int lbpg_watch_start(struct pgpool *p, const char *command)
{
	struct lb_watch_spec spec = {
		"loss watcher", p->base.name, command, p->on_loss, NULL, 0, &ops, p
	};

	if (p->watcher.ctl >= 0 || p->to_caller || (p->on_loss == 0 && p->max_hold == 0))
		return 0;
	snprintf(p->watched, sizeof p->watched, "%s", command);
	return lb_watcher_start(&p->watcher, &spec);
}

int lbpg_watch_arm(struct pgpool *p)
{
	struct arm_data d = { p->srv_bound, p->cli_bound, LBPG_HOLD_GRACE(p->max_hold),
		p->max_hold > 0 ? p->since + p->max_hold : 0 };

	if (p->to_caller || (p->on_loss == 0 && p->max_hold == 0))
		return 0;
	/* the waiter's watcher, if it is still there; else a new one */
	if (lb_watcher_arm(&p->watcher, p->on_loss, p->max_hold, p->since, PQsocket(p->conn), &d,
	    sizeof d) == 0)
		return 0;
	lbpg_watch_stop(p);
	if (lbpg_watch_start(p, p->watched) != 0)
		return -1;
	if (lb_watcher_arm(&p->watcher, p->on_loss, p->max_hold, p->since, PQsocket(p->conn), &d,
	    sizeof d) != 0) {
		lb_warn("%s: cannot arm the loss watcher", p->base.name);
		return -1;
	}
	return 0;
}

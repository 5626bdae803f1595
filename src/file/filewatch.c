/* SPDX-License-Identifier: ISC */
/*
 * The maximum hold of a lock file's holder (the lock-file backend's, as
 * its file* name says): its watcher (watcher.c), which
 * holds nothing of the lock while it waits, and when the hold has passed
 * tells the job, then gives the lock back through the holder's own open
 * file, as release --fd does: the records cleared, the slot unlocked, a
 * waiter woken. A job that is stopped, hung or frozen cannot keep it.
 *
 * An open file description's lock belongs to the open file, not to a
 * process: any holder of that open file may unlock it. The watcher takes
 * a descriptor of it from the command (pidfd_getfd, Linux 5.6: the
 * descriptor the command inherited, at the number it had), or, when the
 * command has ended or moved it, from a process of the job that holds the
 * lock. It keeps none before: a copy would keep the lock past the job's
 * end for as long as the watcher took to notice (a back-to-back run
 * refused) or was stopped. Taking a descriptor is what a tracer may do:
 * the same user (a command that turned set-id excepted) or root; under
 * Yama's ptrace_scope 1 the command names its watcher its tracer
 * (PR_SET_PTRACER) before it runs. A lock that cannot be had so is not
 * given back, and the message says so. Classic POSIX locks are their
 * process's: slots.c refuses a hold without OFD locks. Calls watcher.c and
 * job.c; the release is the backend's own (its ops), on the watcher's copy
 * of the holder's pool with that descriptor in place of the holder's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "clock.h"
#include "err.h"
#include "filepool.h"
#include "filewatch.h"
#include "job.h"
#include "parse.h"
#include "proc.h"
#include "watcher.h"

/* What the watcher knows, set before its fork (one watcher a process). */
static struct held {
	struct lb_pool *pool;
	int64_t hold;
	pid_t holder;		/* the command, whose records go with its slot */
	int fd;			/* its descriptor of the lock's open file */
	int x;			/* ours of it, taken at the hold; -1: none */
	struct lb_lock_site site;	/* byte -1 (any file): none */
} held;

/* A descriptor of ours on the open file descriptor FD of PIDFD's process is on, if it is the lock's file. */
static int take_fd(const struct held *h, int pidfd, int fd)
{
	struct stat st;
	int x = lb_pidfd_getfd(pidfd, fd);

	if (x >= 0 && (fstat(x, &st) != 0 || st.st_dev != h->site.dev || st.st_ino != h->site.ino)) {
		close(x);
		x = -1;
		errno = EBADF;
	}
	return x;
}

/*
 * From a process of the job that holds the lock: after the command ended
 * (its children keep it), or when it moved its descriptor. -1 with errno.
 */
static int from_job(const struct held *h)
{
	struct lb_job job;
	size_t i;
	int x = -1, fd, e = ESRCH;	/* ESRCH: no process of the job holds it */

	if (h->site.byte < 0) {
		errno = e;
		return -1;	/* any file: no lock byte to find its holders by */
	}
	lb_job_init(&job, &h->site);
	lb_job_scan(&job);
	for (i = 0; i < job.n && x < 0; i++)
		if (job.v[i].pidfd >= 0 &&
		    lb_proc_holding_fd(job.v[i].pid, h->site.dev, h->site.ino, h->site.byte, &fd) == 1) {
			x = take_fd(h, job.v[i].pidfd, fd);
			e = errno;
		}
	lb_job_free(&job);
	errno = e;
	return x;
}

/*
 * The hold has passed: a descriptor of the holder's open file taken now,
 * from the command, else from a process of its job, so that what the job
 * is told is what is done.
 */
static const char *expire(void *arg, const struct lb_watched *w)
{
	static char why[200];
	struct held *h = arg;
	char b[32];
	int e = ENOSYS;	/* no pidfds, no pidfd_getfd */

	h->x = -1;
	if (!w->ended && w->pidfd >= 0) {
		h->x = take_fd(h, w->pidfd, h->fd);
		e = errno;
	}
	if (h->x < 0 && w->pidfd >= 0) {
		h->x = from_job(h);
		e = errno != 0 ? errno : e;
	}
	lb_format_duration_ms(h->hold, b);
	if (h->x >= 0)
		snprintf(why, sizeof why, "held for its maximum hold, %s; its lock is given back", b);
	else
		snprintf(why, sizeof why,
		    "held for its maximum hold, %s; its lock cannot be given back (taking its holder's open file: %s)",
		    b, strerror(e));
	return why;
}

/*
 * Then, the job told: as release --fd, on the watcher's copy of the
 * holder's pool, its descriptors (closed when the watcher started) now
 * the one taken: its slots and flock(2) lock, its records (the release
 * reports its failures).
 */
static void give_back(void *arg, const struct lb_watched *w)
{
	struct held *h = arg;
	struct filepool *p = (struct filepool *)h->pool;

	(void)w;
	if (h->x < 0)
		return;
	p->fd = p->cfd = h->x;
	h->pool->ops->release(h->pool, h->holder);
	close(h->x);
}

static int site(void *arg, struct lb_lock_site *s)
{
	struct held *h = arg;

	*s = h->site;
	return h->site.byte < 0 ? -1 : 0;
}

static const struct lb_watch_ops ops = { NULL, NULL, expire, give_back, site };

int lb_filewatch_start(struct lb_pool *pool, int fd, const struct lb_ident *who, int sig,
    int64_t hold)
{
	struct lb_watch_spec spec = { "max-hold watcher", pool->name, who->command, sig, NULL, 0,
		&ops, &held };
	unsigned slot = pool->ops->own_slot(pool);
	struct lb_watcher w;
	struct stat st;

	held.pool = pool;
	held.hold = hold;
	held.holder = getpid();
	held.fd = fd;
	if (fstat(fd, &st) != 0) {
		lb_warn("%s", pool->name);
		return -1;
	}
	held.site.dev = st.st_dev;
	held.site.ino = st.st_ino;
	held.site.byte = -1;
	if ((pool->caps & LB_POOL_FLOCK) == 0 &&
	    (slot == 0 || pool->ops->lock_site(pool, slot, &held.site) != 0)) {
		lb_warn("%s: cannot find the slot held", pool->name);
		return -1;
	}
	if (lb_watcher_start(&w, &spec) != 0)
		return -1;
	/* Yama's ptrace_scope 1: the watcher may take a descriptor of ours */
	prctl(PR_SET_PTRACER, w.pid, 0, 0, 0);
	/* the hold counts from the moment the slot was taken */
	if (lb_watcher_arm(&w, sig, hold, who->boot_ns > 0 ? who->boot_ns : lb_now(CLOCK_BOOTTIME),
	    -1, NULL, 0) != 0) {
		lb_warn("%s: cannot arm the max-hold watcher", pool->name);
		lb_watcher_stop(&w);
		return -1;
	}
	return 0;
}

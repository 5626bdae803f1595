/* SPDX-License-Identifier: ISC */
/*
 * The gate of a server's role on this host: while the server refuses the
 * role's connections (too many: its CONNECTION LIMIT, or the server's
 * max_connections), one waiter of this host at a time tries again, and
 * the others wait in the queue of a lock file, in the kernel, costing
 * the server nothing. Every attempt the server refuses has cost it a
 * process and a whole login (TLS, SCRAM) first, since the limit is
 * checked after authentication: a thousand waiters trying again, each
 * on its own, would spend the server's time on logins it refuses, not
 * on locks.
 *
 * A waiter refused for too many connections enters the gate (a mutex on
 * the gate's file) and tries again there until it connects, then lets
 * the next one in, which tries at once. A waiter that arrives while the
 * gate is held (others of this host are refused now) goes to its queue
 * without a try of its own. The file is per user and per URL (without
 * lock=): /run/lock for root, else $XDG_RUNTIME_DIR, else /tmp, named
 * lockbox-pg-UID-HASH.lock. A gate that cannot be had (a file someone
 * else planted there) is done without: the waiter tries on its own, as
 * it would anyway. Calls the lock-file backend, below the pool's seam.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "clock.h"
#include "err.h"
#include "hash.h"
#include "lockowners.h"
#include "pgpool.h"

/* The gate's lock file, in BUF. */
static void gate_path(const struct pgpool *p, char *buf, size_t size)
{
	const char *dir = secure_getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (getuid() == 0)
		dir = stat("/run/lock", &st) == 0 && S_ISDIR(st.st_mode) ? "/run/lock" : "/tmp";
	else if (dir == NULL || dir[0] != '/' || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid())
		dir = "/tmp";
	snprintf(buf, size, "%s/lockbox-pg-%u-%016llx.lock", dir, (unsigned)getuid(),
	    (unsigned long long)lb_fnv1a64(p->conninfo, strlen(p->conninfo)));
}

/* The gate taken (until DEADLINE): 1, 0 not by then, -1 no gate to be had. */
static int take(struct pgpool *p, const char *path, int64_t deadline)
{
	struct lb_pool_opts opts = { .mode = 0600 };
	unsigned slot;
	int r;

	if (p->gate == NULL) {
		p->gate = lb_filepool_open(path, LB_POOL_WRITE, &opts);
		if (p->gate == NULL)
			return -1;
	}
	lb_lookup_begin(deadline == LB_NO_WAIT ? 0 : deadline);
	r = p->gate->ops->acquire(p->gate, 1, deadline, p->who, &slot, NULL);
	lb_lookup_end();
	return r;
}

int lbpg_gate_enter(struct pgpool *p, int64_t deadline, int refused)
{
	char path[4096];
	struct stat st;
	int r;

	if (p->in_gate)
		return LBPG_GATE_IN;
	/* no gate yet: nobody of this host was ever refused (made when one is) */
	gate_path(p, path, sizeof path);
	if (!refused && p->gate == NULL && lstat(path, &st) != 0 && errno == ENOENT)
		return LBPG_GATE_FREE;
	r = take(p, path, LB_NO_WAIT);
	if (r == 1 && !refused) {
		/* nobody of this host is refused now: try on our own */
		p->gate->ops->release(p->gate, p->who->pid);
		return LBPG_GATE_FREE;
	}
	if (r == 0) {
		r = take(p, path, deadline);
		r = r == 1 ? LBPG_GATE_WAITED : r == 0 ? LBPG_GATE_LATE : LBPG_GATE_NONE;
	} else {
		r = r == 1 ? LBPG_GATE_IN : LBPG_GATE_NONE;
	}
	if (r == LBPG_GATE_NONE)
		return r;
	p->in_gate = r != LBPG_GATE_LATE;
	return r;
}

void lbpg_gate_leave(struct pgpool *p)
{
	if (!p->in_gate)
		return;
	p->in_gate = 0;
	p->gate->ops->release(p->gate, p->who->pid);
}

/* SPDX-License-Identifier: ISC */
/*
 * The gate of a server's role on this host: while the server refuses the
 * role's connections (too many: its CONNECTION LIMIT, or the server's
 * max_connections), one waiter of this host at a time tries again, and
 * the others wait for the gate in the kernel, costing the server nothing.
 * Every attempt the server refuses has cost it a process and a whole
 * login (TLS, SCRAM) first, since the limit is checked after
 * authentication: a thousand waiters trying again, each on its own,
 * would spend the server's time on logins it refuses, not on locks.
 *
 * The gate is a write lock on byte 0 of a file of its own, per user and
 * URL (without lock=): /run/lock for root, else $XDG_RUNTIME_DIR, else
 * /tmp, named lockbox-pg-UID-HASH.lock, made 0600 and used only when the
 * caller owns it. A waiter refused for too many connections takes it
 * (await.c: the kernel queues the requests in the order they came and
 * wakes one at each release) and tries again there until it connects,
 * then lets the next one in, which tries at once. A waiter that arrives
 * while the gate is held (others of this host are refused now) queues
 * for it without a try of its own. A gate that cannot be had (a file of
 * another owner in its place) is done without: the waiter tries on its
 * own, as it would anyway. Calls lockprim.c and await.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "await.h"
#include "clock.h"
#include "hash.h"
#include "lockprim.h"
#include "pgpool.h"

/* The gate's file, opened (made 0600 if need be): its descriptor, or -1. */
static int gate_open(const struct pgpool *p, int create)
{
	const char *dir = secure_getenv("XDG_RUNTIME_DIR");
	char path[4096];
	struct stat st;
	int fd;

	if (getuid() == 0)
		dir = stat("/run/lock", &st) == 0 && S_ISDIR(st.st_mode) ? "/run/lock" : "/tmp";
	else if (dir == NULL || dir[0] != '/' || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid())
		dir = "/tmp";
	snprintf(path, sizeof path, "%s/lockbox-pg-%u-%016llx.lock", dir, (unsigned)getuid(),
	    (unsigned long long)lb_fnv1a64(p->conninfo, strlen(p->conninfo)));
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
	/* in a directory anyone may write to, a file someone else put there is not ours */
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid())) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int lbpg_gate_enter(struct pgpool *p, int64_t deadline, int refused)
{
	struct flock l;
	int r;

	if (p->in_gate)
		return LBPG_GATE_IN;
	if (p->gate < 0)
		p->gate = gate_open(p, refused);
	if (p->gate < 0)
		return refused ? LBPG_GATE_NONE : LBPG_GATE_FREE;
	/* a lock the gate took for us is ours: it lets the next one in when we go */
	/* nobody of this host is refused now: try on our own */
	if (!refused && lb_lock_test(p->gate, F_WRLCK, 0, 1, &l) != 0)
		return LBPG_GATE_FREE;
	r = lb_lock_try(p->gate, F_WRLCK, 0, 1);
	if (r == 1) {
		p->in_gate = 1;
		return LBPG_GATE_IN;
	}
	if (r < 0)
		return LBPG_GATE_NONE;
	switch (lb_await_lock_one(p->gate, F_WRLCK, 0, 1, deadline, 1)) {
	case LB_GRANTED:
		p->in_gate = 1;
		return LBPG_GATE_WAITED;
	case LB_DEADLINE:
		return LBPG_GATE_LATE;
	default:
		return LBPG_GATE_NONE;
	}
}

void lbpg_gate_leave(struct pgpool *p)
{
	if (!p->in_gate)
		return;
	p->in_gate = 0;
	lb_lock_try(p->gate, F_UNLCK, 0, 1);
}

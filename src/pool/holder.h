/* A lock's holder, or a waiter, or another program's lock, as a pool reports them (list, the busy message, locks). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_HOLDER_H
#define LOCKBOX_HOLDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc.h"

/* A server's session holding a slot: enough to end exactly that one. */
struct lb_session {
	int pid;		/* the server's process for it; 0: not a server's lock */
	int64_t start_us;	/* its start on the server's clock; -1: not shown to us */
	char name[64];		/* its application_name */
};

/*
 * One row of what a pool reports: four records in one, told apart by
 * lb_holder_kind. Every kind has SLOT and WHO; the fields under each
 * heading below belong to that kind alone.
 */
enum lb_holder_kind {
	LB_HOLDER_LOCAL,	/* a holder with a record: a process of a host */
	LB_HOLDER_SESSION,	/* a holder that is a server's session (session.pid) */
	LB_HOLDER_FOREIGN,	/* a lock another program took (foreign) */
	LB_HOLDER_WAITER,	/* a waiter in the queue, not a holder (waiting) */
};

struct lb_holder {
	unsigned slot;		/* 0: a foreign lock on more than one slot, or none */
	struct lb_ident who;
	/* ---- a holder (LOCAL, SESSION) ---- */
	int known;		/* 0: the slot is locked but names no holder */
	struct lb_session session;	/* SESSION: the server's session */
	int age_unknown;	/* known, but its age is not shown to us (who.wall_ns: now) */
	int shared;		/* one of the shared holders (mutex -s); a waiter's request too */
	/*
	 * who.pid, the process named as the holder, has ended while the lock
	 * lives on in a process that inherited it: KEEPER (0: not found)
	 */
	int gone;
	pid_t keeper;
	/*
	 * The holder's watcher (watcher.h: its loss watcher, or the watcher
	 * of its maximum hold), a process of the holder's host beside its
	 * command; 0: none, or not known
	 */
	pid_t watcher;
	/* ---- FOREIGN ---- */
	/*
	 * A lock that lockbox did not take (another program's fcntl lock),
	 * not known: who.pid (0: not found) and who.command name its process,
	 * as the kernel shows it; its bytes are [lock_lo, lock_hi], lock_hi
	 * -1 meaning to the end of the file and beyond.
	 */
	int foreign;
	int foreign_write;
	long long lock_lo, lock_hi;
	int in_queue;		/* a foreign lock in the wait queue's bytes: it keeps waiters out */
	/* ---- WAITER ---- */
	/*
	 * lb_pool_waiters: a waiter, not a holder: QUEUE is its place (1: the
	 * next to be served), STOPPED whether it is stopped, who its process
	 * (who.boot_ns: its start, so that its age is how long it has waited)
	 */
	int waiting;
	unsigned queue;
	int stopped;
};

struct lb_holders {
	struct lb_holder *v;
	size_t n;
};

static inline enum lb_holder_kind lb_holder_kind(const struct lb_holder *h)
{
	return h->foreign ? LB_HOLDER_FOREIGN : h->waiting ? LB_HOLDER_WAITER :
	    h->session.pid != 0 ? LB_HOLDER_SESSION : LB_HOLDER_LOCAL;
}

#endif

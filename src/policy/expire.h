/* Expiring an overdue run: CONT, INT, TERM, KILL to its verified job, or its server session ended. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_EXPIRE_H
#define LOCKBOX_EXPIRE_H

#include "pool.h"
#include "runstate.h"

/*
 * Expire the overdue holder *H, proven to hold still: CONT, INT, TERM,
 * KILL to every verified process of its job when holders are processes
 * (a lock file), each followed by event-driven waiting for the lock; or,
 * for a server's lock, the server ends the session that holds it. 1: the
 * lock is ours; 0: someone else took it (*h describes them); otherwise an
 * exit status.
 */
int lb_expire(struct lb_runctx *r, struct lb_holder *h);

#endif

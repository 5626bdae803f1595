/* Expiring an overdue run: CONT, INT, TERM, KILL to its verified job, or its server session ended. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_EXPIRE_H
#define LOCKBOX_EXPIRE_H

#include "pool.h"
#include "runstate.h"

/* A signal's name without "SIG" (CONT too), else its number. */
const char *lb_sig_name(int sig);

/*
 * CONT, INT, TERM, KILL to every verified process of the holder *H's job,
 * each followed by event-driven waiting for the lock. 1: the lock is
 * ours; 0: someone else took it (*h describes them); otherwise an exit
 * status.
 */
int lb_expire(struct lb_runctx *r, struct lb_holder *h);

/*
 * The same for a server's session lock: the server ends the holder's
 * session. Chosen by r->remote; to become one pool operation with
 * lb_expire's "end this holder".
 */
int lb_expire_session(struct lb_runctx *r, struct lb_holder *h);

#endif

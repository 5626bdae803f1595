/* The pool's limits that the lowest files need too (the lock file's format), without the pool's interface. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_POOLSIZE_H
#define LOCKBOX_POOLSIZE_H

/* The largest MAX any backend takes, and the size of a pool's atom area. */
#define LB_POOL_MAX_SLOTS	10000
#define LB_POOL_ATOM_SIZE	4032

#endif

/* SPDX-License-Identifier: ISC */
/*
 * A pool of slots: the interface every lock backend implements (today the
 * lock file; the applets know nothing else). A mutex is a pool of one.
 */
#ifndef LOCKBOX_POOL_H
#define LOCKBOX_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "proc.h"

struct lb_pool;

struct lb_holder {
	unsigned slot;
	int known;		/* 0: the slot is locked but names no holder */
	struct lb_ident who;
};

struct lb_holders {
	struct lb_holder *v;
	size_t n;
};

/* Open by path, for taking slots (WRITE) or only looking (READ, which never
 * creates the file). NULL on error, already reported. */
enum { LB_POOL_READ, LB_POOL_WRITE };
struct lb_pool *lb_pool_open(const char *path, int mode);

/* Adopt an fd the caller opened read-write (acquire/release --fd). */
struct lb_pool *lb_pool_from_fd(int fd, const char *name);

/*
 * Take one slot among MAX: 1 (taken, *slot set), 0 (all busy until DEADLINE
 * on CLOCK_MONOTONIC, 0 meaning no wait; *busy then lists the holders if
 * busy is not NULL), -1 (error, reported). WHO is recorded as the holder.
 */
int lb_pool_acquire(struct lb_pool *pool, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy);

/* The slot this pool's own open file holds already (--fd), 0 when none. */
unsigned lb_pool_own_slot(struct lb_pool *pool);

/* Release every slot this pool's fd holds and forget OWNER's records. */
int lb_pool_release(struct lb_pool *pool, pid_t owner);

/* The current holders, by slot. 0, or -1 on error (reported). */
int lb_pool_holders(struct lb_pool *pool, struct lb_holders *out);

/*
 * The header's atom area (adaptive's run state): FN runs on a copy of it
 * with the header write-locked, and when FN returns 1 the copy is written
 * back. Returns what FN returned, or -1 on error (reported).
 */
typedef int lb_atom_fn(unsigned char *area, size_t len, void *arg);
int lb_pool_atom(struct lb_pool *pool, lb_atom_fn *fn, void *arg);

/*
 * Read the atom area without writing anything (read access is enough):
 * 1 read, 0 no file or an empty one (AREA zeroed), -1 error (reported).
 */
int lb_pool_atom_read(struct lb_pool *pool, unsigned char *area, size_t len);

/* The lock file's fd, to tell whether a process has the file open. */
int lb_pool_fd(const struct lb_pool *pool);

/* Keep the slot across exec: the lock lives as long as the fd. */
int lb_pool_keep_on_exec(struct lb_pool *pool);

void lb_pool_close(struct lb_pool *pool);
void lb_holders_free(struct lb_holders *h);

#endif

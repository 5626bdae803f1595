/* What a lock backend provides behind pool.h: an ops table and its base (poolbase.c), and the constructors (fileopen.c, pgpool.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_BACKEND_H
#define LOCKBOX_BACKEND_H

#include "pool.h"

struct lb_pool_ops;

/* Every backend's pool starts with this. */
struct lb_pool {
	const struct lb_pool_ops *ops;
	char *name;
	/* set by the backend when an acquisition gave up for another reason
	 * than the holders (see lb_pool_why); empty otherwise */
	char why[256];
	int why_at_once;
	unsigned caps;	/* lb_pool_caps; set by pool.c */
	lb_progress_fn *progress;	/* lb_pool_set_progress's, NULL: none */
	void *progress_arg;
};

/* The operations of pool.h, with the same contracts. */
struct lb_pool_ops {
	int (*acquire)(struct lb_pool *, unsigned max, int64_t deadline,
	    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy);
	unsigned (*own_slot)(struct lb_pool *);	/* NULL: none (no pool on a caller's fd) */
	int (*release)(struct lb_pool *, pid_t owner);
	int (*holders)(struct lb_pool *, struct lb_holders *out);
	int (*waiters)(struct lb_pool *, struct lb_holders *out);	/* NULL: none known */
	int (*count)(struct lb_pool *, size_t *n);	/* NULL: holders, counted */
	int (*atom)(struct lb_pool *, lb_atom_fn *fn, void *arg);
	int (*atom_read)(struct lb_pool *, unsigned char *area, size_t len,
	    struct lb_atom_clock *now);
	int (*atom_names)(struct lb_pool *, char ***names, size_t *n);
	int (*end_session)(struct lb_pool *, const struct lb_holder *h);
	int (*lock_site)(struct lb_pool *, unsigned slot, struct lb_lock_site *site);
	int (*moved)(struct lb_pool *, pid_t *pids, size_t max, size_t *n);	/* NULL: none */
	int (*keep_on_exec)(struct lb_pool *, const struct lb_ident *who);
	void (*close)(struct lb_pool *);	/* frees the backend's part */
};

/* Fill in the common part; NAME is copied. 0, or -1 (reported). (poolbase.c,
 * with lb_pool_close, which a backend may call on its own failed open) */
int lb_pool_init(struct lb_pool *pool, const struct lb_pool_ops *ops, const char *name);

/*
 * A waiting acquisition's progress, told to the pool's progress function
 * if it has one (poolbase.c): PLACE and HOLDER as lb_progress has them.
 */
void lb_pool_progress(struct lb_pool *pool, unsigned place, const struct lb_holder *holder);

/* How often a wait with a progress function tells it, at least (ms). */
#define LB_PROGRESS_MS	1000

/* The lock-file backend. */
struct lb_pool *lb_filepool_open(const char *path, int access, const struct lb_pool_opts *opts);
struct lb_pool *lb_filepool_from_fd(int fd, const char *name, const char *path,
    const struct lb_pool_opts *opts);

/* The PostgreSQL backend (lockbox-pg only): session advisory locks. */
struct lb_pool *lb_pgpool_open(const char *url, int access, const struct lb_pool_opts *opts);

#endif

/* The lock backends in one table: each one's name, URL schemes, capabilities and program (backends.c). */
/* SPDX-License-Identifier: ISC */
/*
 * What a target's name says of its backend, for pool.c (which opens it),
 * main.c (which hands a run to the program that has it) and the shell
 * (which takes lock files only). A backend is added here, in its own
 * files and in Makefile.am; nothing else spells its scheme.
 */
#ifndef LOCKBOX_BACKENDS_H
#define LOCKBOX_BACKENDS_H

#include "pool.h"

/* A backend's open: lb_pool_open's contract, for a target of its own. */
typedef struct lb_pool *lb_backend_open_fn(const char *target, int access,
    const struct lb_pool_opts *opts);

struct lb_backend {
	const char *name;		/* in messages: "PostgreSQL" */
	/*
	 * The URL schemes of its targets ("postgresql" for postgresql://...),
	 * NULL-terminated, the first the one a message suggests; NULL: the
	 * lock files', whose targets are paths.
	 */
	const char *const *schemes;
	unsigned caps;			/* lb_pool_caps: what its locks are like */
	lb_backend_open_fn *open;	/* NULL: this program does not link it */
	/*
	 * Where this program does not link it: the program that does (in
	 * pkglibexecdir, or beside a build tree's lockbox), to which lockbox
	 * hands the run; the environment variable that names another; the
	 * package that brings it; whether this build made it, and else the
	 * configure option that would.
	 */
	const char *helper;
	const char *helper_env;
	const char *package;
	int built;
	const char *configure;
};

/* TARGET's backend: a URL's by its scheme ("scheme://"), anything else the lock files'. */
const struct lb_backend *lb_backend_of(const char *target);

/* The lock-file backend's entry (a caller's fd is a file). */
const struct lb_backend *lb_backend_files(void);

/* The backend whose helper program is NAME (a basename), or NULL. */
const struct lb_backend *lb_backend_of_helper(const char *name);

/*
 * The backend SCHEME (lower case, without its ':') is a scheme of, or,
 * when SLASHES (slashes follow the ':'), a slip of one; else NULL.
 */
const struct lb_backend *lb_backend_near(const char *scheme, int slashes);

#endif

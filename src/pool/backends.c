/* The lock backends in one table: each one's name, URL schemes, capabilities and program. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "backend.h"
#include "backends.h"
#include "text.h"

/*
 * A backend's open is in a program only when the program links the
 * backend's objects (lockbox-pg: pg*.c, for libpq, which the static
 * lockbox never links); elsewhere this weak reference is NULL, and the
 * run goes to the backend's helper. (hidden: the builtin's shared object
 * asks no one at load time for it)
 */
extern lb_backend_open_fn lb_pgpool_open __attribute__((weak, visibility("hidden")));

#ifdef HAVE_LIBPQ
#define PG_BUILT	1
#else
#define PG_BUILT	0
#endif

static const char *const pg_schemes[] = { "postgresql", "postgres", NULL };

/* the lock files' first: every target that is no URL of another's */
static const struct lb_backend backends[] = {
	{
		.name = "lock file",
		.caps = LB_POOL_IN_FS | LB_POOL_PROCESSES,
		.open = lb_filepool_open,
	},
	{
		.name = "PostgreSQL",
		.schemes = pg_schemes,
		.caps = LB_POOL_HOSTS | LB_POOL_LOSS,
		.open = lb_pgpool_open,
		.helper = PACKAGE "-pg",
		.helper_env = "LOCKBOX_PG_HELPER",
		.package = "lockbox-postgresql",
		.built = PG_BUILT,
		.configure = "--with-libpq",
	},
};

#define NBACKENDS	(sizeof backends / sizeof backends[0])

const struct lb_backend *lb_backend_files(void)
{
	return &backends[0];
}

/* Whether TARGET starts with SCHEME "://". */
static int has_scheme(const char *target, const char *scheme)
{
	size_t n = strlen(scheme);

	return strncmp(target, scheme, n) == 0 && strncmp(target + n, "://", 3) == 0;
}

const struct lb_backend *lb_backend_of(const char *target)
{
	const char *const *s;
	size_t i;

	for (i = 1; i < NBACKENDS; i++)
		for (s = backends[i].schemes; *s != NULL; s++)
			if (has_scheme(target, *s))
				return &backends[i];
	return &backends[0];
}

const struct lb_backend *lb_backend_of_helper(const char *name)
{
	size_t i;

	for (i = 1; i < NBACKENDS; i++)
		if (strcmp(name, backends[i].helper) == 0)
			return &backends[i];
	return NULL;
}

const struct lb_backend *lb_backend_near(const char *scheme, int slashes)
{
	const char *const *s;
	size_t i, n;

	for (i = 1; i < NBACKENDS; i++)
		for (s = backends[i].schemes; *s != NULL; s++)
			if (strcmp(scheme, *s) == 0)
				return &backends[i];
	for (i = 1; i < NBACKENDS && slashes; i++) {
		for (n = 0; backends[i].schemes[n] != NULL; n++)
			continue;
		if (lb_nearest(scheme, backends[i].schemes, n) != NULL)
			return &backends[i];
	}
	return NULL;
}

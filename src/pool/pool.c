/* Pools: a lock target's name picks its backend; each call goes to that backend. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "backends.h"
#include "err.h"
#include "lockowners.h"
#include "procfs.h"
#include "text.h"

static lb_pool_handoff_fn *handoff;

void lb_pool_set_handoff(lb_pool_handoff_fn *fn)
{
	handoff = fn;
}

unsigned lb_pool_target_caps(const char *target)
{
	return lb_backend_of(target)->caps;
}

unsigned lb_pool_caps(const struct lb_pool *p)
{
	return p->caps;
}

/* CAPS, and what the backend found of this pool's own (LB_POOL_FLOCK) */
static struct lb_pool *with_caps(struct lb_pool *p, unsigned caps)
{
	if (p != NULL)
		p->caps = caps | (p->caps & LB_POOL_FLOCK);
	return p;
}

/* "TARGET: MSG", a URL of B's with nothing of its secrets */
static void url_warnx(const struct lb_backend *b, const char *target, const char *msg)
{
	char *shown = lb_url_mask(target);

	if (shown != NULL)
		lb_warnx("%s: %s", shown, msg);
	else
		lb_warnx("%s://: %s", b->schemes[0], msg);
	free(shown);
}

/* TARGET opened by B, or by the program that has B when this one does not */
static struct lb_pool *backend_open(const struct lb_backend *b, const char *target, int access,
    const struct lb_pool_opts *opts)
{
	char msg[128];

	if (b->open != NULL)
		return with_caps(b->open(target, access, opts), b->caps);
	/* main's to decide: the program this build made with the backend may run instead */
	if (handoff != NULL && b->built) {
		handoff(target, b);
		return NULL;
	}
	snprintf(msg, sizeof msg, "this lockbox was built without %s support (configure %s)",
	    b->name, b->configure);
	url_warnx(b, target, msg);
	return NULL;
}

int lb_pool_misspelt(const char *target)
{
	const struct lb_backend *b;
	char scheme[16], dir[64];
	size_t n = strspn(target, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), i;
	struct stat st;

	if (n == 0 || n >= sizeof scheme || target[n] != ':' ||
	    lb_backend_of(target) != lb_backend_files())
		return 0;
	for (i = 0; i < n; i++)
		scheme[i] = (char)(target[i] | 0x20);	/* ASCII letters to lower case */
	scheme[n] = '\0';
	/* a server's scheme with ":/" or ":", or a slip of one with ":" and slashes */
	b = lb_backend_near(scheme, target[n + 1] == '/');
	/* a file or a directory of that name is a path, however it looks */
	snprintf(dir, sizeof dir, "%.*s", (int)n + 1, target);
	if (b == NULL || lstat(target, &st) == 0 || lstat(dir, &st) == 0)
		return 0;
	lb_warnx("%.*s...: not a lock file's path nor a server's URL: did you mean %s://?",
	    (int)(n + 1 + strspn(target + n + 1, "/")), target, b->schemes[0]);
	return 1;
}

static const struct lb_pool_opts defaults;

struct lb_pool *lb_pool_open(const char *target, int access, const struct lb_pool_opts *opts)
{
	const struct lb_backend *b = lb_backend_of(target);

	if (opts == NULL)
		opts = &defaults;
	if (b != lb_backend_files()) {
		if (opts->shared && (b->caps & LB_POOL_IN_FS) == 0) {
			url_warnx(b, target,
			    "a shared lock needs a lock file; a server's locks are each for one holder");
			return NULL;
		}
		return backend_open(b, target, access, opts);
	}
	if (lb_pool_misspelt(target))
		return NULL;
	if (access == LB_POOL_LIST) {
		lb_warnx("%s: not a server: nothing to list", target);
		return NULL;
	}
	return backend_open(b, target, access, opts);
}

struct lb_pool *lb_pool_from_fd(int fd, const char *name, const char *path,
    const struct lb_pool_opts *opts)
{
	return with_caps(lb_filepool_from_fd(fd, name, path, opts != NULL ? opts : &defaults),
	    lb_backend_files()->caps);
}

int lb_pool_host_view(struct lb_host_view *hv, int64_t deadline)
{
	lb_lookup_begin(deadline, 1);
	if (lb_scan_host(hv, deadline) != 0) {
		lb_warn("cannot read the kernel's lock table");
		lb_lookup_end();
		return -1;
	}
	return 0;
}

int lb_pool_host_lockfile(struct lb_host_view *hv, size_t fi, const size_t *locks, size_t n,
    struct lb_holders *h, struct lb_holders *w)
{
	int r = lb_host_lockfile(hv, fi, locks, n, h, w);

	if (r < 0)
		lb_warn("%s", hv->files[fi].path);
	return r;
}

void lb_pool_host_done(struct lb_host_view *hv)
{
	lb_host_view_free(hv);
	lb_lookup_end();
	lb_locktab_unpin();
}

void lb_pool_look_host(int64_t deadline)
{
	lb_lookup_begin(deadline, 1);
	/* one read of the table for the whole look; none to be had: tests alone */
	lb_locktab_pin(deadline);
}

void lb_pool_look_done(void)
{
	lb_lookup_end();
	lb_locktab_unpin();
}

/* whether the last acquisition's lookups stopped at their deadline */
static int last_short;

int lb_pool_lookup_short(void)
{
	return last_short;
}

const char *lb_pool_name(const struct lb_pool *p)
{
	return p->name;
}

/*
 * An acquisition as one run of lookups (lockowners.h): a refusal's
 * description looks for its holders' processes for LB_LOOKUP_BUDGET at
 * most, whatever the host holds.
 */
static int with_lookups(struct lb_pool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	int r;

	lb_lookup_begin(0, 0);
	r = p->ops->acquire(p, max, deadline, who, slot, busy);
	last_short = lb_lookup_short();
	lb_lookup_end();
	return r;
}

int lb_pool_acquire(struct lb_pool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	if (busy != NULL) {
		busy->v = NULL;
		busy->n = 0;
	}
	p->why[0] = '\0';
	p->why_at_once = 0;
	return with_lookups(p, max, deadline, who, slot, busy);
}

const char *lb_pool_why(const struct lb_pool *p, int *at_once)
{
	*at_once = p->why_at_once;
	return p->why[0] != '\0' ? p->why : NULL;
}

void lb_pool_set_progress(struct lb_pool *p, lb_progress_fn *fn, void *arg)
{
	p->progress = fn;
	p->progress_arg = arg;
}

unsigned lb_pool_own_slot(struct lb_pool *p)
{
	return p->ops->own_slot != NULL ? p->ops->own_slot(p) : 0;
}

int lb_pool_release(struct lb_pool *p, pid_t owner)
{
	return p->ops->release(p, owner);
}

/* A look (holders, waiters, a count) as one run of lookups, unless it is part of one already. */
static int look_begin(void)
{
	if (lb_lookup_active())
		return 0;
	lb_lookup_begin(0, 0);
	return 1;
}

static void look_end(int own)
{
	if (own)
		lb_lookup_end();
}

int lb_pool_holders(struct lb_pool *p, struct lb_holders *out)
{
	int own = look_begin(), r;

	out->v = NULL;
	out->n = 0;
	r = p->ops->holders(p, out);
	look_end(own);
	return r;
}

int lb_pool_waiters(struct lb_pool *p, struct lb_holders *out)
{
	int own = look_begin(), r;

	out->v = NULL;
	out->n = 0;
	r = p->ops->waiters != NULL ? p->ops->waiters(p, out) : 0;
	look_end(own);
	return r;
}

int lb_pool_count(struct lb_pool *p, size_t *n)
{
	struct lb_holders h;
	int own, r;

	if (p->ops->count != NULL) {
		/* (a flock(2) lock's process is then the one the slot's walk saw, or nobody) */
		own = look_begin();
		r = p->ops->count(p, n);
		look_end(own);
		return r;
	}
	if (lb_pool_holders(p, &h) != 0)
		return -1;
	*n = h.n;
	lb_holders_free(&h);
	return 0;
}

int lb_pool_atom(struct lb_pool *p, lb_atom_fn *fn, void *arg)
{
	return p->ops->atom(p, fn, arg);
}

int lb_pool_atom_read(struct lb_pool *p, unsigned char *area, size_t len,
    struct lb_atom_clock *now)
{
	memset(area, 0, len);
	memset(now, 0, sizeof *now);
	return p->ops->atom_read(p, area, len, now);
}

int lb_pool_atom_names(struct lb_pool *p, char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	if (p->ops->atom_names == NULL) {
		errno = ENOTSUP;
		lb_warn("%s", p->name);
		return -1;
	}
	return p->ops->atom_names(p, names, n);
}

int lb_pool_end_session(struct lb_pool *p, const struct lb_holder *h)
{
	if (p->ops->end_session == NULL) {
		errno = ENOTSUP;
		return -1;
	}
	return p->ops->end_session(p, h);
}

int lb_pool_lock_site(struct lb_pool *p, unsigned slot, struct lb_lock_site *site)
{
	if (p->ops->lock_site == NULL) {
		errno = ENOTSUP;
		return -1;
	}
	return p->ops->lock_site(p, slot, site);
}

int lb_pool_moved(struct lb_pool *p, pid_t *pids, size_t max, size_t *n)
{
	*n = 0;
	return p->ops->moved != NULL ? p->ops->moved(p, pids, max, n) : 0;
}

int lb_pool_keep_on_exec(struct lb_pool *p, const struct lb_ident *who)
{
	return p->ops->keep_on_exec(p, who);
}


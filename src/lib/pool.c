/* Pools: a lock target's name picks its backend; each call goes to that backend. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "err.h"

int lb_pool_init(struct lb_pool *p, const struct lb_pool_ops *ops, const char *name)
{
	p->ops = ops;
	p->name = strdup(name);
	if (p->name == NULL) {
		lb_warn("%s", name);
		return -1;
	}
	return 0;
}

struct lb_pool *lb_pool_open(const char *target, int access, const struct lb_pool_opts *opts)
{
	static const struct lb_pool_opts defaults = { 0, 0 };

	return lb_filepool_open(target, access, opts != NULL ? opts : &defaults);
}

struct lb_pool *lb_pool_from_fd(int fd, const char *name)
{
	return lb_filepool_from_fd(fd, name);
}

const char *lb_pool_name(const struct lb_pool *p)
{
	return p->name;
}

int lb_pool_acquire(struct lb_pool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	if (busy != NULL) {
		busy->v = NULL;
		busy->n = 0;
	}
	return p->ops->acquire(p, max, deadline, who, slot, busy);
}

unsigned lb_pool_own_slot(struct lb_pool *p)
{
	return p->ops->own_slot(p);
}

int lb_pool_release(struct lb_pool *p, pid_t owner)
{
	return p->ops->release(p, owner);
}

int lb_pool_holders(struct lb_pool *p, struct lb_holders *out)
{
	out->v = NULL;
	out->n = 0;
	return p->ops->holders(p, out);
}

int lb_pool_atom(struct lb_pool *p, lb_atom_fn *fn, void *arg)
{
	return p->ops->atom(p, fn, arg);
}

int lb_pool_atom_read(struct lb_pool *p, unsigned char *area, size_t len)
{
	memset(area, 0, len);
	return p->ops->atom_read(p, area, len);
}

int lb_pool_lock_site(struct lb_pool *p, unsigned slot, struct lb_lock_site *site)
{
	if (p->ops->lock_site == NULL) {
		errno = ENOTSUP;
		return -1;
	}
	return p->ops->lock_site(p, slot, site);
}

int lb_pool_keep_on_exec(struct lb_pool *p)
{
	return p->ops->keep_on_exec(p);
}

void lb_pool_close(struct lb_pool *p)
{
	if (p == NULL)
		return;
	free(p->name);
	p->ops->close(p);
}

void lb_holders_free(struct lb_holders *h)
{
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

/* The part of a pool every backend shares: set up, told of, and freed below pool.c, never calling up. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

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

void lb_pool_progress(struct lb_pool *p, unsigned place, const struct lb_holder *holder)
{
	struct lb_progress pr = { place, holder };

	if (p->progress != NULL)
		p->progress(p->progress_arg, &pr);
}

void lb_holders_free(struct lb_holders *h)
{
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

void lb_pool_close(struct lb_pool *p)
{
	if (p == NULL)
		return;
	free(p->name);
	p->ops->close(p);
}

/* A set of slot numbers, ascending, each once (slotset.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_SLOTSET_H
#define LOCKBOX_SLOTSET_H

#include <stddef.h>

/* A set of slot numbers, ascending, each once. */
struct lb_slotset {
	unsigned *v;
	size_t n, cap;
};

int lb_slotset_add(struct lb_slotset *s, unsigned slot);
int lb_slotset_has(const struct lb_slotset *s, unsigned slot);
void lb_slotset_sort(struct lb_slotset *s);	/* ascending, duplicates dropped */
void lb_slotset_free(struct lb_slotset *s);

#endif

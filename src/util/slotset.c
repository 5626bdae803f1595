/* A set of slot numbers: grown, sorted, searched. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stdlib.h>

#include "slotset.h"

int lb_slotset_add(struct lb_slotset *s, unsigned slot)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		unsigned *v = realloc(s->v, cap * sizeof *v);

		if (v == NULL)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = slot;
	return 0;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

void lb_slotset_sort(struct lb_slotset *s)
{
	size_t i, n = 0;

	if (s->n < 2)
		return;
	qsort(s->v, s->n, sizeof *s->v, cmp_unsigned);
	for (i = 0; i < s->n; i++)
		if (n == 0 || s->v[n - 1] != s->v[i])
			s->v[n++] = s->v[i];
	s->n = n;
}

int lb_slotset_has(const struct lb_slotset *s, unsigned slot)
{
	return s->n != 0 &&
	    bsearch(&slot, s->v, s->n, sizeof *s->v, cmp_unsigned) != NULL;
}

void lb_slotset_free(struct lb_slotset *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* FNV-1a: the one hash of names and state areas, the same on every host. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "hash.h"

uint32_t lb_fnv1a32(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint32_t h = UINT32_C(2166136261);

	while (n-- > 0) {
		h ^= *c++;
		h *= UINT32_C(16777619);
	}
	return h;
}

uint64_t lb_fnv1a64(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = UINT64_C(14695981039346656037);

	while (n-- > 0) {
		h ^= *c++;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/* FNV-1a: the one hash of names and state areas, the same on every host. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_HASH_H
#define LOCKBOX_HASH_H

#include <stddef.h>
#include <stdint.h>

uint32_t lb_fnv1a32(const void *p, size_t n);
uint64_t lb_fnv1a64(const void *p, size_t n);

#endif

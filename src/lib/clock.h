/* Clocks and deadlines: monotonic for waits, boot clock for ages. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_CLOCK_H
#define LOCKBOX_CLOCK_H

#include <stdint.h>
#include <time.h>

int64_t lb_now(clockid_t clock);	/* nanoseconds on that clock */

/* A deadline on CLOCK_MONOTONIC; 0 means "do not wait at all". */
int64_t lb_deadline_after(int64_t ns);
int64_t lb_remaining(int64_t deadline);	/* ns left, never negative */

#endif

/* Clocks and deadlines: monotonic for waits, boot clock for ages. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_CLOCK_H
#define LOCKBOX_CLOCK_H

#include <stdint.h>
#include <time.h>

int64_t lb_now(clockid_t clock);	/* nanoseconds on that clock */

/* A deadline on CLOCK_MONOTONIC (ns), or LB_NO_WAIT. */
int64_t lb_deadline_after(int64_t ns);

/*
 * The deadline that has passed already: try once, never wait for holders.
 * (A lock held only for a moment, a lock file's header, is still waited
 * for while its holders make progress: see fp_progress_lock.)
 */
#define LB_NO_WAIT	INT64_C(0)
/*
 * No deadline at all: a wait that ends only with what it waits for (a
 * child's end, in supervise.c). Only APIs that say they take it do. The
 * far end of the clock, so that it cannot be taken for LB_NO_WAIT.
 */
#define LB_NO_DEADLINE	INT64_MAX
int64_t lb_remaining(int64_t deadline);	/* ns left, never negative */

#endif

/* Clocks and deadlines: monotonic for waits, boot clock for ages. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "clock.h"

int64_t lb_now(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t lb_deadline_after(int64_t ns)
{
	return lb_now(CLOCK_MONOTONIC) + ns;
}

int64_t lb_remaining(int64_t deadline)
{
	int64_t left = deadline - lb_now(CLOCK_MONOTONIC);

	return left > 0 ? left : 0;
}

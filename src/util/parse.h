/* The one strict parser for numbers and durations, and duration output. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_PARSE_H
#define LOCKBOX_PARSE_H

#include <stdint.h>

#define LB_NS_PER_MS	INT64_C(1000000)
#define LB_NS_PER_S	INT64_C(1000000000)
#define LB_NS_PER_MIN	(60 * LB_NS_PER_S)

/*
 * Whole decimal number in [min, max]: digits only, no sign, no spaces, no
 * trailing junk. Returns 0, or -1 with errno EINVAL (malformed) or ERANGE.
 */
int lb_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * File permissions in octal, as chmod takes them: one to four digits 0-7,
 * at most 0777 (no set-id or sticky bits). Returns 0, or -1 with errno
 * EINVAL or ERANGE.
 */
int lb_parse_mode(const char *s, unsigned *out);

/*
 * Duration: one or more terms NUMBER[UNIT], NUMBER decimal with an optional
 * fraction, UNIT one of ms, s or sec, m or min, h or hr, d ("1h30m",
 * "2.5s", "10min"). A lone bare number takes bare_unit (nanoseconds per
 * unit). Result in nanoseconds, at most
 * LB_DURATION_MAX. Returns 0, or -1 with errno EINVAL or ERANGE.
 */
#define LB_DURATION_MAX (INT64_C(100) * 366 * 86400 * LB_NS_PER_S)
int lb_parse_duration(const char *s, int64_t bare_unit, int64_t *out);

/* Whether S is a number without a unit ("50", "2.5"): the argument's bare unit applies. */
int lb_duration_is_bare(const char *s);

/* Human duration, largest two units: "850ms", "42s", "3m12s", "2h5m", "3d4h". */
const char *lb_format_duration(int64_t ns, char buf[32]);

/* The same, but a duration under a minute keeps its milliseconds ("1.5s"):
 * for durations a user gave, said back as given. */
const char *lb_format_duration_ms(int64_t ns, char buf[32]);

/* The same, rounded up to the second: "in 5m" right after a 5m run, not "4m59s". */
const char *lb_format_duration_up(int64_t ns, char buf[32]);

#endif

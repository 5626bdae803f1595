/* The one strict parser for numbers and durations, and duration output. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"

/* Digits of BASE (8 or 10) only, in [MIN, MAX]. */
static int parse_digits(const char *s, unsigned base, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (s == NULL || *s == '\0')
		goto invalid;
	for (; *s != '\0'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (d >= base)
			goto invalid;
		if (v > (UINT64_MAX - d) / base) {
			errno = ERANGE;
			return -1;
		}
		v = v * base + d;
	}
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
invalid:
	errno = EINVAL;
	return -1;
}

int lb_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_digits(s, 10, min, max, out);
}

int lb_parse_mode(const char *s, unsigned *out)
{
	uint64_t v;

	/* at most 4 digits: 00644, however small, is not a mode */
	if (s != NULL && strlen(s) > 4) {
		errno = EINVAL;
		return -1;
	}
	if (parse_digits(s, 8, 0, 0777, &v) != 0)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int64_t unit_ns(const char **p)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {
		/* "ms" and "min" before "m", "sec" before "s": longest match first */
		{ "ms", LB_NS_PER_MS },
		{ "min", LB_NS_PER_MIN },
		{ "sec", LB_NS_PER_S },
		{ "hr", 60 * LB_NS_PER_MIN },
		{ "s", LB_NS_PER_S },
		{ "m", LB_NS_PER_MIN },
		{ "h", 60 * LB_NS_PER_MIN },
		{ "d", 24 * 60 * LB_NS_PER_MIN },
	};
	size_t i;

	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		size_t n = strlen(units[i].name);

		if (strncmp(*p, units[i].name, n) == 0) {
			*p += n;
			return units[i].ns;
		}
	}
	return 0;
}

int lb_parse_duration(const char *s, int64_t bare_unit, int64_t *out)
{
	const char *p = s;
	int64_t total = 0;
	int terms = 0;

	if (s == NULL || *s == '\0')
		goto invalid;
	while (*p != '\0') {
		/* whole part and fraction kept in integers: no float rounding */
		int64_t whole = 0, frac = 0, scale = 1, unit, term;
		int digits = 0;

		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			if (whole > (LB_DURATION_MAX - 9) / 10)
				goto range;
			whole = whole * 10 + (*p - '0');
		}
		if (*p == '.') {
			for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
				if (scale < LB_NS_PER_S) {	/* finer than 1ns/unit is dropped */
					frac = frac * 10 + (*p - '0');
					scale *= 10;
				}
			}
		}
		if (digits == 0)
			goto invalid;
		unit = unit_ns(&p);
		if (unit == 0) {
			/* a bare number only as the whole argument: "90", not "1h30" */
			if (*p != '\0' || terms > 0)
				goto invalid;
			unit = bare_unit;
		}
		if (whole > LB_DURATION_MAX / unit)
			goto range;
		term = whole * unit + frac * (unit / scale) +
		    frac * (unit % scale) / scale;
		if (term > LB_DURATION_MAX - total)
			goto range;
		total += term;
		terms++;
	}
	*out = total;
	return 0;
range:
	errno = ERANGE;
	return -1;
invalid:
	errno = EINVAL;
	return -1;
}

int lb_duration_is_bare(const char *s)
{
	size_t n = strspn(s, "0123456789");

	if (s[n] == '.')
		n += 1 + strspn(s + n + 1, "0123456789");
	return n > 0 && s[n] == '\0' && strcmp(s, ".") != 0;
}

const char *lb_format_duration_ms(int64_t ns, char buf[32])
{
	int64_t sec = ns / LB_NS_PER_S;
	int ms = (int)(ns % LB_NS_PER_S / LB_NS_PER_MS), digits = 3;

	if (ns < LB_NS_PER_S || sec >= 60 || ms == 0)
		return lb_format_duration(ns, buf);
	/* "1.5s", "2.25s": a duration given with a fraction is said with it */
	for (; ms % 10 == 0; ms /= 10)
		digits--;
	snprintf(buf, 32, "%d.%0*ds", (int)sec, digits, ms);
	return buf;
}

const char *lb_format_duration(int64_t ns, char buf[32])
{
	static const struct {
		char name;
		int64_t s;
	} units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	int64_t sec;
	size_t i;

	if (ns < 0)
		ns = 0;
	if (ns < LB_NS_PER_S) {
		snprintf(buf, 32, "%dms", (int)(ns / LB_NS_PER_MS));
		return buf;
	}
	sec = ns / LB_NS_PER_S;
	for (i = 0; i < 3 && sec < units[i].s; i++)
		;
	if (i == 3 || sec % units[i].s == 0)
		snprintf(buf, 32, "%lld%c", (long long)(sec / units[i].s), units[i].name);
	else
		snprintf(buf, 32, "%lld%c%lld%c", (long long)(sec / units[i].s),
		    units[i].name, (long long)(sec % units[i].s / units[i + 1].s),
		    units[i + 1].name);
	return buf;
}

const char *lb_format_duration_up(int64_t ns, char buf[32])
{
	/* a forged IFELAPSED may be near INT64_MAX: no rounding up past it */
	if (ns >= LB_NS_PER_S && ns <= INT64_MAX - LB_NS_PER_S)
		ns = (ns + LB_NS_PER_S - 1) / LB_NS_PER_S * LB_NS_PER_S;
	return lb_format_duration(ns, buf);
}

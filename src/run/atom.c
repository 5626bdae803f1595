/* adaptive's run state: the atom area of a lock file's header, encoded and checked. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atom.h"
#include "clock.h"
#include "hash.h"
#include "le.h"
#include "parse.h"
#include "pool.h"
#include "proc.h"

enum {
	A_MAGIC = 0, A_VERSION = 8, A_SUM = 12, A_FLAGS = 16, A_SUPER = 20,
	A_BOOTID = 24, A_START_WALL = 40, A_START_BOOT = 48, A_END_WALL = 56,
	A_DURATION = 64, A_STATUS = 72, A_CMD_PID = 76, A_CMD_START = 80,
	A_CMD_PGID = 88, A_RUNS = 92, A_IFELAPSED = 96, A_EXPIREAFTER = 104,
	A_EXPIRIES = 112, A_NAME_LEN = 116, A_NRING = 118, A_RING_NEXT = 120,
	A_EXPIRY_SIG = 122, A_EXPIRE_FLAGS = 123, A_NAME = 128, A_RING = A_NAME + LB_ATOM_NAME_MAX, A_ENTRY = 24
};
_Static_assert(A_RING + LB_ATOM_RING * A_ENTRY == LB_ATOM_USED, "atom layout");
_Static_assert(LB_ATOM_USED <= LB_POOL_ATOM_SIZE, "atom area size");

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static int all_zero(const unsigned char *p, size_t n)
{
	while (n-- > 0)
		if (*p++ != 0)
			return 0;
	return 1;
}

int lb_atom_decode(const unsigned char *area, size_t len, struct lb_atom *a,
    const char **why)
{
	unsigned i;

	memset(a, 0, sizeof *a);
	a->duration = -1;
	a->status = LB_STATUS_UNKNOWN;
	*why = NULL;
	if (len < LB_ATOM_USED) {
		*why = "area too small";
		return -1;
	}
	if (all_zero(area, LB_ATOM_USED))
		return 0;
	if (memcmp(area + A_MAGIC, LB_ATOM_MAGIC, 8) != 0)
		*why = "bad magic";
	else if (lb_get32(area + A_VERSION) != LB_ATOM_VERSION)
		*why = "unknown layout version";
	else if (lb_get32(area + A_SUM) != lb_fnv1a32(area + A_FLAGS, LB_ATOM_USED - A_FLAGS))
		*why = "checksum mismatch";
	else if (get16(area + A_NAME_LEN) > LB_ATOM_NAME_MAX ||
	    get16(area + A_NRING) > LB_ATOM_RING ||
	    get16(area + A_RING_NEXT) >= LB_ATOM_RING)
		*why = "field out of range";
	if (*why != NULL)
		return -1;
	a->flags = lb_get32(area + A_FLAGS);
	a->super_pid = (pid_t)(lb_get32(area + A_SUPER) & 0x7fffffff);
	memcpy(a->boot_id, area + A_BOOTID, 16);
	a->start_wall = (int64_t)lb_get64(area + A_START_WALL);
	a->start_boot = (int64_t)lb_get64(area + A_START_BOOT);
	a->end_wall = (int64_t)lb_get64(area + A_END_WALL);
	a->duration = (int64_t)lb_get64(area + A_DURATION);
	a->status = (int32_t)lb_get32(area + A_STATUS);
	a->cmd_pid = (pid_t)(lb_get32(area + A_CMD_PID) & 0x7fffffff);
	a->cmd_starttime = lb_get64(area + A_CMD_START);
	a->cmd_pgid = (pid_t)(lb_get32(area + A_CMD_PGID) & 0x7fffffff);
	a->runs = lb_get32(area + A_RUNS);
	a->ifelapsed = (int64_t)lb_get64(area + A_IFELAPSED);
	a->expireafter = (int64_t)lb_get64(area + A_EXPIREAFTER);
	a->expiries = lb_get32(area + A_EXPIRIES);
	/* only a signal an expiry sends; any other byte is no signal */
	switch (area[A_EXPIRY_SIG]) {
	case SIGCONT: case SIGINT: case SIGTERM: case SIGKILL:
		a->expiry_sig = area[A_EXPIRY_SIG];
		break;
	}
	/* unknown bits are ignored: a newer version's, or a forger's */
	a->expire_auto = (area[A_EXPIRE_FLAGS] & LB_EXPIRE_AUTO) != 0;
	a->name_len = get16(area + A_NAME_LEN);
	memcpy(a->name, area + A_NAME, a->name_len);
	a->name[a->name_len] = '\0';
	a->nring = get16(area + A_NRING);
	a->ring_next = get16(area + A_RING_NEXT);
	for (i = 0; i < LB_ATOM_RING; i++) {
		const unsigned char *e = area + A_RING + i * A_ENTRY;

		a->ring[i].start_wall = (int64_t)lb_get64(e);
		a->ring[i].duration = (int64_t)lb_get64(e + 8);
		a->ring[i].status = (int32_t)lb_get32(e + 16);
	}
	return 1;
}

void lb_atom_encode(unsigned char *area, size_t len, const struct lb_atom *a)
{
	size_t name_len = a->name_len < LB_ATOM_NAME_MAX ? a->name_len : LB_ATOM_NAME_MAX;
	unsigned i;

	memset(area, 0, len);
	memcpy(area + A_MAGIC, LB_ATOM_MAGIC, 8);
	lb_put32(area + A_VERSION, LB_ATOM_VERSION);
	lb_put32(area + A_FLAGS, a->flags);
	lb_put32(area + A_SUPER, (uint32_t)a->super_pid);
	memcpy(area + A_BOOTID, a->boot_id, 16);
	lb_put64(area + A_START_WALL, (uint64_t)a->start_wall);
	lb_put64(area + A_START_BOOT, (uint64_t)a->start_boot);
	lb_put64(area + A_END_WALL, (uint64_t)a->end_wall);
	lb_put64(area + A_DURATION, (uint64_t)a->duration);
	lb_put32(area + A_STATUS, (uint32_t)a->status);
	lb_put32(area + A_CMD_PID, (uint32_t)a->cmd_pid);
	lb_put64(area + A_CMD_START, a->cmd_starttime);
	lb_put32(area + A_CMD_PGID, (uint32_t)a->cmd_pgid);
	lb_put32(area + A_RUNS, a->runs);
	lb_put64(area + A_IFELAPSED, (uint64_t)a->ifelapsed);
	lb_put64(area + A_EXPIREAFTER, (uint64_t)a->expireafter);
	lb_put32(area + A_EXPIRIES, a->expiries);
	area[A_EXPIRY_SIG] = (unsigned char)a->expiry_sig;
	area[A_EXPIRE_FLAGS] = a->expire_auto ? LB_EXPIRE_AUTO : 0;
	put16(area + A_NAME_LEN, (unsigned)name_len);
	put16(area + A_NRING, a->nring);
	put16(area + A_RING_NEXT, a->ring_next);
	memcpy(area + A_NAME, a->name, name_len);
	for (i = 0; i < LB_ATOM_RING; i++) {
		unsigned char *e = area + A_RING + i * A_ENTRY;

		lb_put64(e, (uint64_t)a->ring[i].start_wall);
		lb_put64(e + 8, (uint64_t)a->ring[i].duration);
		lb_put32(e + 16, (uint32_t)a->ring[i].status);
	}
	lb_put32(area + A_SUM, lb_fnv1a32(area + A_FLAGS, LB_ATOM_USED - A_FLAGS));
}

void lb_atom_push(struct lb_atom *a, int64_t start_wall, int64_t duration,
    int32_t status)
{
	struct lb_run *r = &a->ring[a->ring_next];

	r->start_wall = start_wall;
	r->duration = duration;
	r->status = status;
	a->ring_next = (a->ring_next + 1) % LB_ATOM_RING;
	if (a->nring < LB_ATOM_RING)
		a->nring++;
}

void lb_atom_local_clock(struct lb_atom_clock *now)
{
	now->wall = lb_now(CLOCK_REALTIME);
	now->boot = lb_now(CLOCK_BOOTTIME);
	if (lb_boot_id(now->boot_id) != 0)
		memset(now->boot_id, 0, sizeof now->boot_id);
}

/* A - B, saturated: times read from a state anyone may have forged never overflow. */
static int64_t sub_sat(int64_t a, int64_t b)
{
	if (b < 0 && a > INT64_MAX + b)
		return INT64_MAX;
	if (b > 0 && a < INT64_MIN + b)
		return INT64_MIN;
	return a - b;
}

/* A time since a moment "in the future" (the clock went back) counts as now. */
static int64_t not_future(int64_t since, int *future)
{
	*future = since < 0;
	return since < 0 ? 0 : since;
}

int64_t lb_atom_since_start(const struct lb_atom *a, const struct lb_atom_clock *now,
    int *future)
{
	int64_t since;

	*future = 0;
	if (a->start_wall == 0 && a->start_boot == 0)
		return -1;
	/*
	 * The boot clock does not jump when the wall clock is set, so within
	 * one boot it is the honest measure; across a reboot only the wall
	 * clock is comparable.
	 */
	if (lb_same_boot(now->boot_id, a->boot_id))
		since = sub_sat(now->boot, a->start_boot);
	else
		since = sub_sat(now->wall, a->start_wall);
	return not_future(since, future);
}

int lb_atom_completed(const struct lb_atom *a)
{
	return !(a->flags & LB_ATOM_RUNNING) && a->status >= 0 && a->duration >= 0 &&
	    a->end_wall != 0;
}

int64_t lb_atom_since_end(const struct lb_atom *a, const struct lb_atom_clock *now,
    int *future)
{
	int64_t since;

	*future = 0;
	/*
	 * CFEngine writes lastcompleted only when a run ends by itself: an
	 * expired run is not one, so the start that expires a hung run is
	 * measured from the completion before it, not made "too soon" by
	 * the expiry it just did.
	 */
	if (a->end_wall == 0)
		return -1;
	/* the boot clock while that completion is the last run, of this boot */
	if (lb_atom_completed(a) && lb_same_boot(now->boot_id, a->boot_id))
		since = sub_sat(sub_sat(now->boot, a->start_boot), a->duration);
	else
		since = sub_sat(now->wall, a->end_wall);
	return not_future(since, future);
}

int64_t lb_atom_last_end(const struct lb_atom *a)
{
	int64_t end;

	if ((a->flags & LB_ATOM_RUNNING) || a->status == LB_STATUS_UNKNOWN)
		return 0;
	if (a->status >= 0)
		return a->end_wall;
	/* an expired run's end is not a completion: it is its start and duration */
	if (a->duration < 0)
		return 0;
	end = a->start_wall > INT64_MAX - a->duration ? INT64_MAX : a->start_wall + a->duration;
	return end > 0 ? end : 0;
}

/* A run that ended by itself, with a duration: what learning and the stats count. */
static int completed(const struct lb_run *x)
{
	return x->status >= 0 && x->duration >= 0;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

size_t lb_atom_stats(const struct lb_atom *a, int64_t *longest, int64_t *median)
{
	int64_t d[LB_ATOM_RING];
	size_t i, n = 0;

	/* an expired run's duration is how long it was let run, not how long it takes */
	for (i = 0; i < a->nring; i++)
		if (completed(&a->ring[i]))
			d[n++] = a->ring[i].duration;
	*longest = *median = -1;
	if (n == 0)
		return 0;
	qsort(d, n, sizeof *d, cmp_i64);
	*longest = d[n - 1];
	/* halves first: forged durations near INT64_MAX must not overflow the sum */
	*median = n % 2 ? d[n / 2] :
	    d[n / 2 - 1] / 2 + d[n / 2] / 2 + (d[n / 2 - 1] % 2 + d[n / 2] % 2) / 2;
	return n;
}

/* The ring's Ith run counting back from the latest (0: the latest). */
static const struct lb_run *back(const struct lb_atom *a, unsigned i)
{
	unsigned k = a->nring < LB_ATOM_RING ? a->nring - 1 - i :
	    (a->ring_next + 2 * LB_ATOM_RING - 1 - i) % LB_ATOM_RING;

	return &a->ring[k];
}

unsigned lb_atom_expired_streak(const struct lb_atom *a)
{
	unsigned i;

	for (i = 0; i < a->nring && back(a, i)->status == LB_STATUS_EXPIRED; i++)
		;
	return i;
}

int64_t lb_atom_longest_completed(const struct lb_atom *a)
{
	int64_t longest = -1;
	unsigned i;

	for (i = 0; i < a->nring; i++)
		if (completed(&a->ring[i]) && a->ring[i].duration > longest)
			longest = a->ring[i].duration;
	return longest;
}

static int64_t times_factor(int64_t d)
{
	return d > INT64_MAX / LB_LEARN_FACTOR ? INT64_MAX : d * LB_LEARN_FACTOR;
}

int64_t lb_atom_learn(const struct lb_atom *a, int64_t bound, struct lb_learned *out)
{
	struct lb_learned l;
	int64_t d[LB_ATOM_RING], v;
	unsigned i;
	size_t n = 0;

	memset(&l, 0, sizeof l);
	l.bound = bound;
	l.pct = l.longest = l.raised = -1;
	for (i = 0; i < a->nring; i++)
		if (completed(&a->ring[i]))
			d[n++] = a->ring[i].duration;
	l.runs = n;
	if (n > 0) {
		qsort(d, n, sizeof *d, cmp_i64);
		/* nearest rank: the smallest duration with LB_LEARN_PCT % at or below it */
		l.pct = d[(n * LB_LEARN_PCT + 99) / 100 - 1];
		l.longest = d[n - 1];
	}
	l.streak = lb_atom_expired_streak(a);
	if (n < LB_LEARN_RUNS) {
		l.why = LB_LEARN_FEW;
		l.value = bound;
		goto done;
	}
	v = times_factor(l.pct);
	l.why = LB_LEARN_PCT_RULE;
	if (v < l.longest) {
		v = l.longest;
		l.why = LB_LEARN_LONGEST;
	}
	if (v < LB_LEARN_FLOOR) {
		v = LB_LEARN_FLOOR;
		l.why = LB_LEARN_FLOORED;
	}
	/*
	 * Starving: every recent run was killed at about the value in force,
	 * so the job needs more than its history says. Expired runs only
	 * ever raise the value, never lower it.
	 */
	if (l.streak >= LB_STARVING) {
		int64_t x = 0;

		for (i = 0; i < l.streak; i++)
			if (back(a, i)->duration > x)
				x = back(a, i)->duration;
		l.raised = times_factor(x);
		if (l.raised > v) {
			v = l.raised;
			l.why = LB_LEARN_RAISED;
		}
	}
	if (v > bound) {
		v = bound;
		l.why = LB_LEARN_CAPPED;
	}
	l.value = v;
done:
	if (out != NULL)
		*out = l;
	return l.value;
}

const char *lb_learned_text(const struct lb_learned *l, char *buf, size_t size)
{
	char b1[32], b2[32], b3[32];
	size_t len;

	if (l->why == LB_LEARN_FEW) {
		snprintf(buf, size, "the bound, %s: %zu of %d completed runs needed to learn",
		    lb_format_duration(l->bound, b1), l->runs, LB_LEARN_RUNS);
		return buf;
	}
	snprintf(buf, size, "learned from %zu runs: p%d %s x %d", l->runs, LB_LEARN_PCT,
	    lb_format_duration(l->pct, b1), LB_LEARN_FACTOR);
	len = strlen(buf);
	switch (l->why) {
	case LB_LEARN_LONGEST:
		snprintf(buf + len, size - len, ", raised to the longest, %s",
		    lb_format_duration(l->longest, b2));
		break;
	case LB_LEARN_FLOORED:
		snprintf(buf + len, size - len, ", raised to the floor, %s",
		    lb_format_duration(LB_LEARN_FLOOR, b2));
		break;
	case LB_LEARN_RAISED:
		snprintf(buf + len, size - len, "; starving, %u expired in a row: %s",
		    l->streak, lb_format_duration(l->raised, b2));
		break;
	case LB_LEARN_CAPPED:
		snprintf(buf + len, size - len, ", capped by the bound, %s",
		    lb_format_duration(l->bound, b3));
		break;
	default:
		break;
	}
	return buf;
}

/* adaptive's run state: the atom area of a lock file's header, encoded and checked. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_ATOM_H
#define LOCKBOX_ATOM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Layout version 1 of the atom area (file bytes 64..4095 of the header;
 * offsets below are from the start of the area). Every integer is
 * little-endian and fixed-width; times are nanoseconds, "wall" on
 * CLOCK_REALTIME since the epoch, "boot" on CLOCK_BOOTTIME of the boot
 * named by the boot id. The clocks are those of whatever keeps the state
 * (struct lb_atom_clock): a lock file's are this host's.
 *
 *     0   8  magic "adaptive"
 *     8   4  layout version (1)
 *    12   4  checksum: FNV-1a (32 bit) of bytes 16..1919
 *    16   4  flags: bit 0 a run started and its end is not recorded;
 *            bit 1 that run is being expired (its end is an expiry)
 *    20   4  supervisor PID of the last run
 *    24  16  boot id at the last start
 *    40   8  last start, wall
 *    48   8  last start, boot
 *    56   8  last completion, wall: the end of the last run that ended
 *            by itself, not expired (0: none)
 *    64   8  last duration (-1: unknown)
 *    72   4  last status, signed: 0..255 exit status (128+n: signal n),
 *            -1 unknown (the supervisor vanished), -2 expired (taken over)
 *    76   4  command PID
 *    80   8  command start time (clock ticks after boot)
 *    88   4  command process group
 *    92   4  runs started, ever (wraps)
 *    96   8  IFELAPSED of the last run
 *   104   8  EXPIREAFTER of the last run
 *   112   4  expiries, ever (wraps)
 *   116   2  length of NAME
 *   118   2  entries in the ring (0..64)
 *   120   2  ring slot the next entry goes to (0..63)
 *   122   1  strongest signal an expiry has sent the last run (0: none)
 *   123   1  flags of EXPIREAFTER: bit 0 learned (-x auto), the field at
 *            104 is then its bound (older versions read it as fixed)
 *   124   4  zero
 *   128 256  NAME, exactly as given (not NUL-terminated when 256 bytes)
 *   384  24  x 64 ring of recent runs, oldest overwritten first, each:
 *            +0 start wall (8), +8 duration (8, -1 unknown),
 *            +16 status (4, signed, as above), +20 zero (4)
 *  1920      zero up to the end of the area (4032 bytes)
 *
 * An area of zeros is a new atom. Anything else that fails the magic,
 * version, checksum or a bound is corrupt: reported and started afresh.
 */
#define LB_ATOM_MAGIC		"adaptive"
#define LB_ATOM_VERSION		1
#define LB_ATOM_NAME_MAX	256
#define LB_ATOM_RING		64
#define LB_ATOM_USED		1920

#define LB_ATOM_RUNNING		UINT32_C(1)
#define LB_ATOM_EXPIRING	UINT32_C(2)

#define LB_EXPIRE_AUTO		1	/* byte 123, bit 0 */

/*
 * A learned EXPIREAFTER (-x auto[:BOUND], see adaptive(1)): with at least
 * LB_LEARN_RUNS completed runs in the ring, LB_LEARN_FACTOR times the
 * LB_LEARN_PCT-th percentile (nearest rank) of their durations, never
 * below the longest of them nor LB_LEARN_FLOOR, never above the bound.
 * LB_STARVING expiries in a row make the atom starving; the learned value
 * is then at least LB_LEARN_FACTOR times the longest of those expired runs.
 */
#define LB_LEARN_RUNS		5
#define LB_LEARN_PCT		95
#define LB_LEARN_FACTOR		2
#define LB_LEARN_FLOOR		INT64_C(1000000000)
#define LB_STARVING		3

#define LB_STATUS_UNKNOWN	(-1)
#define LB_STATUS_EXPIRED	(-2)

struct lb_run {
	int64_t start_wall;
	int64_t duration;	/* -1: unknown */
	int32_t status;
};

struct lb_atom {
	uint32_t flags;
	pid_t super_pid;
	uint8_t boot_id[16];
	int64_t start_wall, start_boot;
	int64_t end_wall;
	int64_t duration;
	int32_t status;
	pid_t cmd_pid;
	uint64_t cmd_starttime;
	pid_t cmd_pgid;
	uint32_t runs;
	int64_t ifelapsed, expireafter;
	uint32_t expiries;
	int expiry_sig;		/* 0, or SIGCONT, SIGINT, SIGTERM, SIGKILL */
	int expire_auto;	/* expireafter is a learned value's bound */
	char name[LB_ATOM_NAME_MAX + 1];	/* NUL-terminated here */
	size_t name_len;
	unsigned nring, ring_next;
	struct lb_run ring[LB_ATOM_RING];
};

/*
 * Decode AREA into A: 1 a valid state, 0 a new atom (all zeros), -1 corrupt
 * (*why names the first fault). A is usable (zeroed) in every case.
 */
int lb_atom_decode(const unsigned char *area, size_t len, struct lb_atom *a,
    const char **why);

/* Encode A into AREA (LEN at least LB_ATOM_USED), zeroing the rest. */
void lb_atom_encode(unsigned char *area, size_t len, const struct lb_atom *a);

/* Append a finished run to the ring. */
void lb_atom_push(struct lb_atom *a, int64_t start_wall, int64_t duration,
    int32_t status);

struct lb_atom_clock;

/* This host's clocks, for state kept in a lock file. */
void lb_atom_local_clock(struct lb_atom_clock *now);

/*
 * Time from the last start to NOW: on the boot clock when it was the same
 * boot, else on the wall clock. A start in the future counts as now:
 * *future is set so the caller can store the clamped time. -1 when there
 * was no start.
 */
int64_t lb_atom_since_start(const struct lb_atom *a, const struct lb_atom_clock *now,
    int *future);

/*
 * The same from the last completion (CFEngine's lastcompleted): the end of
 * the last run that ended by itself. A run that was expired, whose end was
 * never recorded, or that goes on is not one. -1 when none ever completed.
 */
int64_t lb_atom_since_end(const struct lb_atom *a, const struct lb_atom_clock *now,
    int *future);

/* Whether the last run is the last completion (it ended by itself). */
int lb_atom_completed(const struct lb_atom *a);

/* When the last run ended, wall; 0 when it goes on or its end is unknown. */
int64_t lb_atom_last_end(const struct lb_atom *a);

/* Longest and median of the durations of the ring's completed runs: count of them. */
size_t lb_atom_stats(const struct lb_atom *a, int64_t *longest, int64_t *median);

/* How many of the latest runs in the ring were expired, in a row. */
unsigned lb_atom_expired_streak(const struct lb_atom *a);

/* How an EXPIREAFTER in force came about. */
struct lb_learned {
	int64_t value;		/* in force */
	int64_t bound;
	size_t runs;		/* completed runs in the ring */
	int64_t pct, longest;	/* of those; -1 when none */
	unsigned streak;	/* expiries in a row */
	int64_t raised;		/* LB_LEARN_FACTOR x the longest of those, or -1 */
	enum { LB_LEARN_FEW, LB_LEARN_PCT_RULE, LB_LEARN_LONGEST, LB_LEARN_FLOORED,
	    LB_LEARN_RAISED, LB_LEARN_CAPPED } why;
};

/*
 * The EXPIREAFTER that A's history gives under BOUND (> 0), into *L when
 * not NULL: any ring, forged ones too, gives a value in 1..BOUND (BOUND
 * itself when below the floor).
 */
int64_t lb_atom_learn(const struct lb_atom *a, int64_t bound, struct lb_learned *l);

/* Say *L as "learned from 37 runs: p95 4m10s x 2" into BUF. */
const char *lb_learned_text(const struct lb_learned *l, char *buf, size_t size);

/* Longest duration of a run in the ring that ended by itself; -1: none. */
int64_t lb_atom_longest_completed(const struct lb_atom *a);

#endif

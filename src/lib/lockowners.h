/* Who holds the locks the kernel's table shows: one bounded walk of /proc, its answers kept for the run. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKOWNERS_H
#define LOCKBOX_LOCKOWNERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "procfs.h"

/* A file, as the kernel's lock table names it. */
struct lb_file_id {
	dev_t dev;
	ino_t ino;
};

/*
 * How long a refusal may spend looking for its holders' processes past
 * its deadline (or past the moment it was decided, when that came
 * later), after one read of the kernel's lock table: a deadline is a
 * deadline, however many processes the host has or however busy it is.
 * What a walk through /proc has not found by then is "not found in
 * time". (A host of ordinary size is looked at whole in any case: the
 * first 256 processes of a walk.)
 */
#define LB_LOOKUP_GRACE	(80 * INT64_C(1000000))

/*
 * A run's lookups, from lb_lookup_begin to lb_lookup_end: a walk through
 * /proc for the processes of locks stops at DEADLINE (CLOCK_MONOTONIC ns;
 * 0: none), and what a walk found, or looked for in vain, is not looked
 * for again. lb_lookup_describe says that what the run decides is
 * decided, and what follows only describes it: the kernel's lock table
 * is then read once, whole, for the rest of the run
 * (lb_locktab_keep_from), and the walks have LB_LOOKUP_GRACE from then
 * at least.
 * Outside a run, each lookup walks on its own, without a deadline.
 */
void lb_lookup_begin(int64_t deadline);
void lb_lookup_describe(void);
void lb_lookup_end(void);

/* Whether a run is going on. */
int lb_lookup_active(void);

/* The run's deadline (0: none). */
int64_t lb_lookup_deadline(void);

/* Whether a walk of this run stopped at its deadline, leaving processes unfound. */
int lb_lookup_short(void);

/*
 * For each lock V[i] of DEV/INO (N of them): a process that holds it
 * through a descriptor of its own, not SKIP (0: none to skip) nor this
 * one, in PIDS[i]; 0 when none is found (another user's, gone, or not
 * found by the deadline). An open file description lock and a classic
 * POSIX one are told by their bytes and kind; a flock(2) lock by the PID
 * of the process that took it, which the kernel keeps showing. One walk
 * for all of them, made only for those not looked for before in the run.
 */
void lb_lookup_holders(dev_t dev, ino_t ino, const struct lb_lockline *v, size_t n,
    pid_t skip, pid_t *pids);

/*
 * As lb_lookup_holders for one lock X, for a decision rather than a
 * message (whether the holder of a lock file's header runs, or is stuck):
 * looked for afresh, since one process after another holds such a lock
 * and a look that found nobody says nothing of the next holder; and up
 * to DEADLINE (0: the whole host), not the run's, which bounds what is
 * looked up to describe a refusal. The holder's PID, or 0.
 */
pid_t lb_lookup_holder_now(dev_t dev, ino_t ino, const struct lb_lockline *x,
    int64_t deadline);

/*
 * Every file of V (N of them) looked up in one walk, now: a path to each
 * (lb_lookup_file) and the descriptors open on it, whose lock lists give
 * the processes of its locks when one is asked about. Later lookups of
 * the run make no walk of their own: what this one did not find stays
 * unfound. 0, or -1 with errno.
 */
int lb_lookup_files(const struct lb_file_id *v, size_t n);

/*
 * Whether process PID has gone, as lb_lookup_files's walk of every
 * process saw it: 1 gone, 0 not, -1 not known (no such walk, or one cut
 * short).
 */
int lb_lookup_gone(pid_t pid);

/* What a descriptor open on a file of lb_lookup_files showed of it. */
struct lb_file_seen {
	const char *path;	/* its path (owned by the run); NULL: none found */
	int deleted;		/* the kernel says it was removed since: PATH is what it was */
	struct stat st;		/* the open file's */
};

/* 1 with *OUT when a descriptor open on DEV/INO was found, else 0. */
int lb_lookup_file(dev_t dev, ino_t ino, struct lb_file_seen *out);

#endif

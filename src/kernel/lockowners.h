/* Who holds a lock: bounded walks of /proc, their answers kept for the run. */
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
 * How long the paths a script runs (a refusal's message, a run that
 * finds the header or the queue locked by another program) may spend in
 * all looking through /proc for the processes that hold a lock: a few
 * milliseconds, whatever the host holds. A holder not found by then is
 * "another program"; lockbox locks and list look further, on request.
 */
#define LB_LOOKUP_BUDGET	(5 * INT64_C(1000000))

/*
 * A run's lookups, from lb_lookup_begin to lb_lookup_end: what a walk
 * through /proc found, or looked for in vain, is not looked for again.
 * A run of the paths a script runs (HOST 0) walks for LB_LOOKUP_BUDGET
 * in all, and never past DEADLINE (CLOCK_MONOTONIC ns; 0: none) by more
 * than that. A person's look at the host (HOST 1: lockbox locks, list)
 * walks up to DEADLINE, the first processes of a walk in any case (a
 * host of ordinary size is looked at whole).
 * Outside a run, each lookup walks on its own, within LB_LOOKUP_BUDGET.
 */
void lb_lookup_begin(int64_t deadline, int host);
void lb_lookup_end(void);

/* Whether a run is going on. */
int lb_lookup_active(void);

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
 * A process that holds a flock(2) lock of DEV/INO through a descriptor of
 * its own, for a file whose flock(2) lock is known to be held while the
 * lock table is not read: a walk that ends at the first found. Its PID,
 * or 0 (not found, or not in time); the lock in *L (its kind, and the
 * process that took it, which may have ended since).
 */
pid_t lb_lookup_flock(dev_t dev, ino_t ino, struct lb_lockinfo *l);

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

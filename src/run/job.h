/* The processes of a lock holder's job, verified, and signals sent only to them. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_JOB_H
#define LOCKBOX_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pool.h"

struct lb_job_member {
	pid_t pid;
	uint64_t starttime;	/* with pid, the process's identity */
	int pidfd;		/* -1 when the kernel has no pidfds */
	int gone;
};

struct lb_job {
	dev_t dev;
	ino_t ino;
	off_t byte;		/* the lock byte held */
	int self_holds;		/* this process holds the lock itself */
	int err;		/* errno of a failed /proc read or pidfd_open: the job is unknown */
	struct lb_job_member *v;
	size_t n, cap;
};

/* For the lock at SITE (byte -1: whoever has a descriptor of it holds it). */
void lb_job_init(struct lb_job *job, const struct lb_lock_site *site);

/*
 * Find the job, adding what is new to it: every process that holds the
 * lock (its /proc/PID/fdinfo shows the write lock held through one of its
 * descriptors), every descendant of those, and the members of any process
 * group led by one of them. Nothing else: neither a PID in a record nor
 * having the file open makes a process a member. Each member is pinned by
 * a pidfd where the kernel has them, and kept only if its start time, read
 * after pinning, is what the scan saw.
 * Returns the number of members alive, or -1 (errno, and job->err, say
 * why) when the job cannot be known for sure: /proc, or a process in it,
 * could not be read for another reason than the process being gone or
 * another user's, or a member could not be pinned (EMFILE...).
 */
int lb_job_scan(struct lb_job *job);

/*
 * Send SIG to every member still alive, through its pidfd (or, without
 * pidfds, after checking its start time once more). The PIDs it reached go
 * to PIDS as "1,2,3", those the kernel refused (EPERM: another user's) to
 * REFUSED. Returns how many were signalled. A member whose /proc entry
 * cannot be read (EMFILE...) is not signalled, and job->err is set.
 */
size_t lb_job_signal(struct lb_job *job, int sig, char *pids, size_t size,
    char *refused, size_t rsize);

/* Members still alive (zombies do not count). */
size_t lb_job_alive(struct lb_job *job, char *pids, size_t size);

void lb_job_free(struct lb_job *job);

#endif

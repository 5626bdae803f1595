/* The process beside a command run in place holding a lock: started, titled, armed; its death told. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_WATCHER_H
#define LOCKBOX_WATCHER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pool.h"

/* The caller's side of a watcher. */
struct lb_watcher {
	pid_t pid;	/* the watcher; 0: none */
	int ctl;	/* the caller's end of the socket pair to it; -1: none */
};

/* An event of the backend's own in the watcher's epoll set has data.u32 of at least this. */
#define LB_WATCH_OWN	16

/* The command, as its watcher knows it. */
struct lb_watched {
	pid_t cmd;
	uint64_t start;		/* with cmd, the command's identity */
	int pidfd;		/* -1 without pidfds */
	int ended;		/* the command has ended (its job may not have) */
};

/*
 * What a backend gives its watcher to do; each runs in the watcher, with
 * the ARG of lb_watch_spec (a copy of the caller's memory, as at the fork).
 */
struct lb_watch_ops {
	/*
	 * Armed with FD (-1: none was sent) and the backend's DATA (N bytes):
	 * add what to watch to the epoll set EP, as LB_WATCH_OWN and up. FD
	 * is the watcher's to keep or close. 0, or -1 (the watcher failed).
	 */
	int (*armed)(void *arg, int ep, int fd, const void *data, size_t n);
	/* An event of its own: why the job must be told (static storage), or NULL. */
	const char *(*event)(void *arg, uint32_t what, uint32_t events);
	/* The maximum hold has passed: what the job is told (static storage). */
	const char *(*expire)(void *arg, const struct lb_watched *w);
	/* Then, the job told: give the lock back (NULL: the backend's server does). */
	void (*give_back)(void *arg, const struct lb_watched *w);
	/*
	 * Where the lock is, for the job (job.h): 0, or -1 when no local
	 * process can be proven to hold it (the command alone is told).
	 */
	int (*site)(void *arg, struct lb_lock_site *site);
};

struct lb_watch_spec {
	const char *what;	/* "loss watcher", for the title: "mutex: loss watcher for PID N (CMD)" */
	const char *name;	/* the lock, as messages name it */
	const char *command;	/* the command's name, for the title */
	int sig;		/* the --on-loss signal; 0: none (nothing is sent) */
	const int *keep;	/* descriptors the watcher keeps open (the backend's) */
	size_t nkeep;
	const struct lb_watch_ops *ops;
	void *arg;
};

/*
 * Start a watcher of this process (the command-to-be), unarmed: twice
 * forked, in a session of its own, its command line SPEC->what's title.
 * 0 with W set, or -1 (reported).
 */
int lb_watcher_start(struct lb_watcher *w, const struct lb_watch_spec *spec);

/*
 * Arm it: from now on it watches (FD, -1 for none, goes to it; DATA, N
 * bytes, at most LB_WATCH_DATA, to its backend), and the maximum hold,
 * HOLD ns (0: none), counts from SINCE (CLOCK_BOOTTIME ns). The caller's
 * end of the pair is left open across exec: the watcher stays until the
 * command and every process that inherited it have closed it (the job
 * has ended). With SIG, that end raises SIG in this process (the command)
 * when the watcher dies: the command is told of a watcher killed before
 * it ends. 0, or -1 with errno (EPIPE: the watcher is gone); nothing is
 * reported.
 */
#define LB_WATCH_DATA	64
int lb_watcher_arm(struct lb_watcher *w, int sig, int64_t hold, int64_t since, int fd,
    const void *data, size_t n);

/* Let an unarmed watcher go (it leaves when its end of the pair closes). */
void lb_watcher_stop(struct lb_watcher *w);

#endif

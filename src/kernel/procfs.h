/* Reading /proc, the one file that does: its small files, walks over processes and descriptors, and the kernel's lock table. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_PROCFS_H
#define LOCKBOX_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "lockline.h"

/* ---- one process's files (PID 0: this process) ---- */

/*
 * The start of /proc/PID/NAME ("stat", "comm", "cmdline", "status"), at
 * most SIZE - 1 bytes (a longer one is cut), NUL-terminated: its length,
 * or -1 with errno (ESRCH for an empty file: its process has just gone).
 */
ssize_t lb_procfs_pid_read(pid_t pid, const char *name, char *buf, size_t size);

/* stat(2) of /proc/PID: its owner is the process's. 0, or -1 with errno. */
int lb_procfs_pid_stat(pid_t pid, struct stat *st);

/* This boot's id, as the kernel prints it, in BUF: its length, or -1. */
ssize_t lb_procfs_boot_id(char *buf, size_t size);

/* Whether process PID runs the executable file this process runs. */
int lb_procfs_runs_self(pid_t pid);

/* The path of this process's executable (malloc'd), or NULL. */
char *lb_procfs_self_exe(void);

/* stat(2) of the file descriptor FD of PID is open on (the open file itself). */
int lb_procfs_fd_stat(pid_t pid, int fd, struct stat *st);

/*
 * What descriptor FD of PID is open on, as the kernel names it (a path,
 * " (deleted)" after it for a file since removed; "socket:[N]"...), in
 * BUF, NUL-terminated: its length, or -1 with errno.
 */
ssize_t lb_procfs_fd_link(pid_t pid, int fd, char *buf, size_t size);

/* A new open file of the file this process's FD is open on (open(2) FLAGS), or -1. */
int lb_procfs_fd_reopen(int fd, int flags);

/* A path to the file this process's FD is open on, wherever it is linked (inotify). */
const char *lb_procfs_fd_name(int fd, char *buf, size_t size);

/* ---- the walks ---- */

/* A walk that stopped at its deadline before the end. */
#define LB_PROCFS_SHORT	(-2)

/*
 * Each process /proc shows, this one too, in its order, or with
 * NEWEST_FIRST by PID, from the one given out before ours back, as the
 * kernel gives them out in turn (most often the newest first): FN(PID,
 * ARG), until FN returns nonzero (that value is returned). 0 when all
 * were seen; -1 with errno when /proc cannot be listed or its listing
 * fails midway.
 */
int lb_procfs_each_process(int newest_first, int (*fn)(pid_t pid, void *arg), void *arg);

/*
 * Each descriptor of process PID (0: this one, its walk's own left out):
 * FN(PID, FD, ARG) until nonzero (returned). 0 when all were seen; -1
 * with errno when they cannot be listed (ENOENT, ESRCH: gone; EACCES:
 * another user's).
 */
int lb_procfs_each_fd(pid_t pid, int (*fn)(pid_t pid, int fd, void *arg), void *arg);

/*
 * Each lock held through descriptor FD of PID (0: this process) on
 * DEV/INO, any kind, as its fdinfo lists them: FN(X, ARG) until nonzero
 * (returned). 0 when all were seen; -1 with errno when the fdinfo cannot
 * be read. A descriptor whose fdinfo lists no lock costs one short read.
 */
int lb_procfs_each_fd_lock(pid_t pid, int fd, dev_t dev, ino_t ino,
    int (*fn)(const struct lb_lockline *x, void *arg), void *arg);

/* ---- the kernel's lock table, /proc/locks ---- */

struct lb_locktab_line;

struct lb_locktab {
	char *text;		/* the table, NUL-terminated */
	size_t len;
	int cut;		/* the read stopped at its deadline: lines are missing */
	int pinned;		/* read at the start of a run that looks at the host */
	struct lb_locktab_line *idx;	/* its lines by file */
	size_t nidx;
};

/*
 * The kernel's lock table is read only when a person asks to see the
 * host (lockbox locks, list): every page of it that is read holds up
 * every flock(2) and fcntl lock call of the host, and a whole read costs
 * the square of its length. lb_locktab_pin reads it once, up to
 * DEADLINE (0: none; past it the table is cut short, t->cut), indexed by
 * file, and keeps it for the rest of the run, until lb_locktab_unpin.
 * lb_locktab_get returns that table; outside such a run, none (NULL,
 * errno EPERM): the paths a script runs never read it. Give a table back
 * with lb_locktab_done.
 */
const struct lb_locktab *lb_locktab_pin(int64_t deadline);
void lb_locktab_unpin(void);
struct lb_locktab *lb_locktab_get(void);
void lb_locktab_done(struct lb_locktab *t);

/*
 * Each line of T about DEV/INO, in the table's order (a held lock's
 * waiters after it): FN(LINE, END, ARG) until nonzero (returned); 0
 * when all were seen.
 */
int lb_locktab_each(const struct lb_locktab *t, dev_t dev, ino_t ino,
    int (*fn)(const char *line, const char *end, void *arg), void *arg);

/* Each line of T, in order: FN as above. */
int lb_locktab_each_line(const struct lb_locktab *t,
    int (*fn)(const char *line, const char *end, void *arg), void *arg);

#endif

/* Every row and sentence about a holder or waiter (holders.c), for slots, mutex, locks and adaptive. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_HOLDERS_H
#define LOCKBOX_HOLDERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * list's report: the holders H, then the waiters W (NULL: none), as a
 * table under a header line, or with JSON one array and a newline; a
 * HOST column when HOSTS.
 */
struct lb_holders;
void poolcmd_print_list(int json, int hosts, const struct lb_holders *h,
    const struct lb_holders *w);

/*
 * No slot taken: "slots: F: all 3 slots busy (PIDs 311, 312)",
 * "mutex: F: held by PID 4242 (backup.sh, 3m12s)" (MUTEX: the pool of
 * one, whose one holder is named), or what the backend says; after a
 * wait of WAIT ns (0: none) it timed out after it. H: the holders seen.
 */
struct lb_pool;
void poolcmd_report_busy(const char *name, int mutex, int64_t wait, unsigned max,
    const struct lb_holders *h, const struct lb_pool *pool);

/*
 * A waiter's status line on a terminal (-v), written over itself as a
 * pool's progress callback (lb_pool_set_progress): "mutex: F: waiting
 * 12s, 3rd in the queue, held by PID 4242 (backup, 3m12s)". ARG is a
 * struct poolcmd_status; SHOWN tells whether a line is there to clear.
 */
struct poolcmd_status {
	const char *name;
	int64_t start;		/* CLOCK_MONOTONIC of the first attempt */
	int shown;
};
struct lb_progress;
void poolcmd_status_line(void *arg, const struct lb_progress *pr);

/*
 * What list's COMMAND column says of a holder or waiter X before its
 * command, in BUF: "shared", "exited, kept by PID 4250 (sleep)", "waiting
 * 2nd, stopped, shared", "another program, in the wait queue", "watcher
 * PID 4251"; "" for a plain holder.
 */
struct lb_holder;
void poolcmd_annotation(const struct lb_holder *x, char *buf, size_t size);

/*
 * One holder's, waiter's or other program's row, as every table shows
 * it (list, lockbox locks): the one place its age is known or not.
 */
struct poolcmd_row {
	unsigned slot;		/* 0: none */
	pid_t pid;		/* 0: not known */
	const char *command;	/* X's; NULL: not known */
	int aged;		/* AGE says how long it has held, or waited */
	int64_t age;
	char note[200];		/* poolcmd_annotation's */
};
void poolcmd_holder_row(const struct lb_holder *x, struct poolcmd_row *r);

/*
 * adaptive's busy message: "job: already running (PID 4242 on host2,
 * 3m12s)", the host when not this one, AGE as the run measured it; X
 * NULL: "(PID ?, held without a record)".
 */
void poolcmd_report_running(const char *name, const struct lb_holder *x, const char *age);

#endif

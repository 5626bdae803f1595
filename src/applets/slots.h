/* The front end slots.c shares with mutex.c: run, acquire, release, check, list, create. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_SLOTS_H
#define LOCKBOX_SLOTS_H

#include <stddef.h>
#include <stdint.h>

/* --help's lines that slots and mutex share: the options after -v, and the end */
#define POOLCMD_HELP_OPTIONS \
	"      --mode MODE     permissions (octal) of LOCKFILE if it is created now;\n" \
	"                      default 0600 (less the umask): for the owner only\n" \
	"      --record-args   record the holder's whole command line, not only\n" \
	"                      its name (anyone who can read LOCKFILE sees it)\n" \
	"      --json          check/list output as JSON\n" \
	"      --fd FD         acquire/release: lock on FD, which the caller opened\n" \
	"      --path PATH     acquire/release: FD must be the file PATH names (no symlink)\n" \
	"      --on-loss SIG   postgresql:// target: signal COMMAND's job, once, with\n" \
	"                      SIG (default TERM; none: do not) when the server\n" \
	"                      connection is lost\n" \
	"  -h, --help          this help\n" \
	"  -V, --version       print lockbox's version and lock kind\n" \
	"\n" \
	"create makes LOCKFILE (or checks the one there) without taking it:\n" \
	"0 when it is a lock file lockbox may use, 125 otherwise.\n"
#define POOLCMD_HELP_TAIL \
	"LOCKFILE may be postgresql://HOST/DB?lock=NAME: a lock on a PostgreSQL\n" \
	"server, shared between hosts; see lockbox-postgresql(7).\n" \
	"Exit: 0 or COMMAND's status, 75 busy, 125 lockbox failed,\n" \
	"126 COMMAND not executable, 127 COMMAND not found; held: 1 free.\n" \
	"With -o, 128+n when signal n killed COMMAND. "

struct poolcmd {
	const char *usage;	/* the synopsis, as in the man page */
	const char *help;	/* the rest of --help */
	int fixed_max;		/* 0: MAX is an argument; else the pool's size */
};

int poolcmd_main(const struct poolcmd *cmd, int argc, char **argv);

/*
 * list's report: the holders H, then the waiters W (NULL: none), as a
 * table under a header line, or with JSON one array and a newline; a
 * HOST column when HOSTS.
 */
struct lb_holders;
void poolcmd_print_list(int json, int hosts, const struct lb_holders *h,
    const struct lb_holders *w);

/*
 * No slot taken (busy.c): "slots: F: all 3 slots busy (PIDs 311, 312)",
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
 * command, in BUF: "shared", "exited, kept by PID 4250", "waiting 2nd,
 * stopped, shared"; "" for a plain holder.
 */
struct lb_holder;
void poolcmd_annotation(const struct lb_holder *x, char *buf, size_t size);

/* "st", "nd", "rd" or "th": the suffix of N's ordinal (1st, 12th, 23rd) */
const char *poolcmd_ordinal(unsigned n);

#endif

/* The command line slots and mutex share: their options, which go together, and MAX (slotsopts.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_SLOTSOPTS_H
#define LOCKBOX_SLOTSOPTS_H

#include <stdint.h>

struct poolcmd;

struct poolcmd_opts {
	int64_t wait;		/* -w, ns; -1: do not wait; LB_DURATION_MAX: -w inf */
	int busy_status;	/* -E */
	int quiet, verbose, json;
	int flock_verbose;	/* mutex --verbose: flock(1)'s lines, on stdout as it prints them */
	int fd;			/* --fd, or flock(1)'s FD; -1: none */
	const char *path;	/* --path: the file FD must be; NULL: none */
	int reopen;		/* --reopen: the caller opens PATH again when it was replaced */
	int on_loss;		/* --on-loss: a signal, 0 for none */
	int64_t max_hold;	/* --max-hold, ns; 0: none */
	unsigned mode;		/* --mode: of a file created now; 0: the default */
	int record_args;	/* --record-args: the whole command line in the record */
	int shared;		/* -s: a shared lock; -x: not */
	int close;		/* -o: COMMAND does not inherit the lock */
	int no_fork;		/* -F: what lockbox always does (flock(1)'s spelling) */
	int unlock;		/* -u: flock(1)'s "flock -u FD" */
	int flock_fd;		/* flock(1)'s "flock FD": FD any file, nothing on stdout */
};

/*
 * What the command line asks for: LOCKFILE [MAX] COMMAND, check or list,
 * held, create, acquire, release (flock(1)'s "FD" and "-u FD" are these two).
 */
enum poolcmd_mode { RUN, LOOK, HELD, CREATE, ACQUIRE, RELEASE };

/* The options before the first positional word (COMMAND's own are never read): its index. */
int poolcmd_parse_opts(const struct poolcmd *cmd, struct poolcmd_opts *o, int argc, char **argv);
/* A usage error (125) when O has an option MODE does not take, or lacks one it needs; WORD: the mode's word. */
void poolcmd_check_mode(const struct poolcmd *cmd, const struct poolcmd_opts *o,
    enum poolcmd_mode mode, const char *word);
/* A usage error when WORD, found after LOCKFILE, is one of the options. */
void poolcmd_misplaced(const char *word);
/* MAX: the applet's fixed one, a number, or +N, -N or P% of the processors; else a usage error. */
unsigned poolcmd_parse_max(const struct poolcmd *cmd, const char *s);

#endif

/* The front end slots.c shares with mutex.c: run, acquire, release, check, list, create. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_SLOTS_H
#define LOCKBOX_SLOTS_H

/* --help's lines that slots and mutex share: the options' end, and the statuses */
#define POOLCMD_HELP_VERSION \
	"  -V, --version              print lockbox's version and lock kind\n"
#define POOLCMD_HELP_EXIT \
	"Exit: 0 or COMMAND's status, 75 busy, 125 lockbox failed, 126/127 COMMAND\n" \
	"not executable/found; held: 0 held, 1 free. "

struct poolcmd {
	const char *usage;	/* the synopsis, as in the man page */
	const char *help;	/* the rest of --help */
	int fixed_max;		/* 0: MAX is an argument; else the pool's size */
};

int poolcmd_main(const struct poolcmd *cmd, int argc, char **argv);

#endif

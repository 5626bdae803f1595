/* The front end slots.c shares with mutex.c: run, acquire, release, check, list, create. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_SLOTS_H
#define LOCKBOX_SLOTS_H

struct poolcmd {
	const char *usage;	/* the synopsis, as in the man page */
	const char *help;	/* the rest of --help */
	int fixed_max;		/* 0: MAX is an argument; else the pool's size */
};

int poolcmd_main(const struct poolcmd *cmd, int argc, char **argv);

#endif

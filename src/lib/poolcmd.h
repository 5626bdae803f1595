/* The command line shared by slots and mutex: run, acquire, release, check, list. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_POOLCMD_H
#define LOCKBOX_POOLCMD_H

struct lb_poolcmd {
	const char *usage;	/* the synopsis, as in the man page */
	const char *help;	/* the rest of --help */
	int fixed_max;		/* 0: MAX is an argument; else the pool's size */
};

int lb_poolcmd_main(const struct lb_poolcmd *cmd, int argc, char **argv);

#endif

/* The front end slots.c shares with mutex.c: run, acquire, release, check, list, create. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_SLOTS_H
#define LOCKBOX_SLOTS_H

/* --help's lines that slots and mutex share: the options after -v, and the end */
#define POOLCMD_HELP_OPTIONS \
	"      --mode MODE     permissions (octal) of LOCKFILE if it is created now;\n" \
	"                      default 0600 (less the umask): for the owner only\n" \
	"      --record-args   record the holder's whole command line, not only\n" \
	"                      its name (anyone who can read LOCKFILE sees it)\n" \
	"      --json          check/list output as JSON\n" \
	"      --fd FD         acquire/release: lock on FD, which the caller opened\n" \
	"      --path PATH     acquire/release: FD must be the file PATH names (no symlink)\n" \
	"      --max-hold DUR  give the lock back once COMMAND has held it for DUR\n" \
	"                      (bare number: seconds), its job told as on a loss;\n" \
	"                      a watcher beside COMMAND keeps it, and a server too\n" \
	"      --on-loss SIG   signal COMMAND's job, once, with SIG (default TERM;\n" \
	"                      none: do not) when its lock is lost: the server\n" \
	"                      connection of a postgresql:// target, --max-hold\n" \
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

#endif

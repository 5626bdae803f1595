/* mutex: run COMMAND holding an exclusive lock; a pool of one on the slots format. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "applets.h"
#include "slots.h"

#define USAGE \
	"usage: mutex [-qv] [-w DUR] [-E CODE] [--mode MODE] [--record-args] LOCKFILE [--] COMMAND [ARG...]\n" \
	"       mutex [--json] LOCKFILE check|list\n" \
	"       mutex [--mode MODE] LOCKFILE create\n" \
	"       mutex acquire [-qv] [-w DUR] [-E CODE] [--record-args] [--path PATH] --fd FD\n" \
	"       mutex release [--path PATH] --fd FD"

static const struct poolcmd mutex = {
	.usage = USAGE,
	.help =
	    "\n"
	    "Run COMMAND in place (exec) holding the exclusive lock on LOCKFILE\n"
	    "(exactly 'slots LOCKFILE 1'). Fail with 75, naming the holder, when\n"
	    "it is held. A COMMAND named check, list or create goes after '--'.\n"
	    "\n"
	    "  -w, --wait DUR      wait up to DUR for the lock (bare number: seconds;\n"
	    "                      units ms s m h d, sums like 1m30s)\n"
	    "  -E, --conflict-exit-code CODE\n"
	    "                      exit with CODE instead of 75 when the lock is not taken\n"
	    "  -q, --quiet         no message when the lock is not taken\n"
	    "  -v, --verbose       say when the lock is taken\n"
	    "      --mode MODE     permissions (octal) of LOCKFILE if it is created now;\n"
	    "                      default 0600 (less the umask): for the owner only\n"
	    "      --record-args   record the holder's whole command line, not only\n"
	    "                      its name (anyone who can read LOCKFILE sees it)\n"
	    "      --json          check/list output as JSON\n"
	    "      --fd FD         acquire/release: lock on FD, which the caller opened\n"
	    "      --path PATH     acquire/release: FD must be the file PATH names (no symlink)\n"
	    "      --on-loss SIG   postgresql:// target: signal COMMAND with SIG (default\n"
	    "                      TERM; none: do not) when the server connection is lost\n"
	    "  -h, --help          this help\n"
	    "      --version       print lockbox's version and lock kind\n"
	    "\n"
	    "create makes LOCKFILE (or checks the one there) without taking it:\n"
	    "0 when it is a lock file lockbox may use, 125 otherwise.\n"
	    "\n"
	    "LOCKFILE may be postgresql://HOST/DB?lock=NAME: a lock on a PostgreSQL\n"
	    "server, shared between hosts; see lockbox-postgresql(7).\n"
	    "Exit: 0 or COMMAND's status, 75 busy, 125 lockbox failed,\n"
	    "126 COMMAND not executable, 127 COMMAND not found. See mutex(1).\n",
	.fixed_max = 1,
};

int mutex_main(int argc, char **argv)
{
	return poolcmd_main(&mutex, argc, argv);
}

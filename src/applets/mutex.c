/* mutex: run COMMAND holding an exclusive lock; a pool of one on the slots format. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "applets.h"
#include "slots.h"

#define USAGE \
	"usage: mutex [-nqsvx] [-w DUR] [-E CODE] LOCKFILE [--] COMMAND [ARG...]\n" \
	"       mutex [OPTION...] LOCKFILE -c 'COMMAND'\n" \
	"       mutex [--json] LOCKFILE list|check|held|create\n" \
	"       mutex [OPTION...] FD | -u FD | --fd FD COMMAND  (flock(1)'s forms)\n" \
	"       mutex acquire|release [OPTION...] --fd FD  (the shell library's)"

static const struct poolcmd mutex = {
	.usage = USAGE,
	.help =
	    "\n"
	    "Run COMMAND in place holding LOCKFILE's exclusive lock ('slots LOCKFILE 1');\n"
	    "75 at once, naming the holder, when it is held. A file that is not a lockbox\n"
	    "lock file (a script, a directory) is locked as flock(1) locks it, unwritten.\n"
	    "\n"
	    "  -w, --wait DUR, --timeout DUR  wait up to DUR (bare: seconds; 10m, inf)\n"
	    "  -n, --nb, --nonblock       do not wait: the default (the last one counts)\n"
	    "  -q, --quiet                no message when the lock is not taken\n"
	    "  -E, --conflict-exit-code CODE  CODE instead of 75 when it is not taken\n"
	    "  -s, --shared               one of any number of shared holders\n"
	    "  -x, -e, --exclusive        the lock alone: the default\n"
	    "  -o, --close                COMMAND in a child that does not inherit it\n"
	    "  -v                         say when it is taken; --verbose: as flock(1) does\n"
	    "  -c, --command CMD          CMD run by $SHELL -c; -u, --unlock: let FD's go\n"
	    "  -F, --no-fork, --mode MODE, --record-args, --json, --path PATH, --reopen,\n"
	    "  --on-loss SIG, --max-hold DUR, -h, --help: see mutex(1)\n"
	    POOLCMD_HELP_VERSION
	    POOLCMD_HELP_EXIT "See mutex(1).\n",
	.fixed_max = 1,
};

int mutex_main(int argc, char **argv)
{
	return poolcmd_main(&mutex, argc, argv);
}

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
	    POOLCMD_HELP_OPTIONS
	    POOLCMD_HELP_TAIL "See mutex(1).\n",
	.fixed_max = 1,
};

int mutex_main(int argc, char **argv)
{
	return poolcmd_main(&mutex, argc, argv);
}

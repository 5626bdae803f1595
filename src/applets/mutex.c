/* mutex: run COMMAND holding an exclusive lock; a pool of one on the slots format. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "applets.h"
#include "slots.h"

#define USAGE \
	"usage: mutex [-noqsvxF] [-w DUR] [-E CODE] [--mode MODE] [--record-args] LOCKFILE [--] COMMAND [ARG...]\n" \
	"       mutex [-noqsvxF] [-w DUR] [-E CODE] [--mode MODE] [--record-args] LOCKFILE -c COMMAND\n" \
	"       mutex [--json] LOCKFILE check|list\n" \
	"       mutex LOCKFILE held\n" \
	"       mutex [--mode MODE] LOCKFILE create\n" \
	"       mutex acquire [-qsv] [-w DUR] [-E CODE] [--record-args] [--path PATH] --fd FD\n" \
	"       mutex release [--path PATH] --fd FD\n" \
	"       mutex [-nqsuvx] [-w DUR] [-E CODE] FD"

static const struct poolcmd mutex = {
	.usage = USAGE,
	.help =
	    "\n"
	    "Run COMMAND in place (exec) holding the exclusive lock on LOCKFILE\n"
	    "(exactly 'slots LOCKFILE 1'). Fail with 75, naming the holder, when\n"
	    "it is held. An existing file that is not a lockbox lock file (a\n"
	    "script, a directory, a file you may only read) is locked as flock(1)\n"
	    "locks it, with nothing written into it. A COMMAND named check, list,\n"
	    "held or create goes after '--'.\n"
	    "\n"
	    "  -w, --wait DUR      wait up to DUR for the lock (bare number: seconds;\n"
	    "                      units ms s m h d, sums like 1m30s; inf: no end)\n"
	    "      --timeout DUR   the same as --wait (flock(1)'s spelling)\n"
	    "  -n, --nb, --nonblock\n"
	    "                      do not wait: the default (the last of -n and -w counts)\n"
	    "  -s, --shared        a shared lock: any number of shared holders together,\n"
	    "                      never with an exclusive one\n"
	    "  -x, -e, --exclusive the lock alone: the default\n"
	    "  -o, --close         run COMMAND in a child that does not inherit the\n"
	    "                      lock, holding it until the child ends\n"
	    "  -F, --no-fork       accepted: COMMAND always runs in place\n"
	    "  -c, --command CMD   after LOCKFILE: run CMD with $SHELL -c\n"
	    "  -u, --unlock        with FD: let go of the lock on FD\n"
	    "  -E, --conflict-exit-code CODE\n"
	    "                      exit with CODE instead of 75 when the lock is not taken\n"
	    "  -q, --quiet         no message when the lock is not taken\n"
	    "  -v, --verbose       say when the lock is taken; on a terminal, a status\n"
	    "                      line while waiting\n"
	    POOLCMD_HELP_OPTIONS
	    "held exits 0 when the lock is held and 1 when it is free, for 'if'.\n"
	    "FD alone is flock(1)'s 'flock FD': the lock of the file FD is open on,\n"
	    "taken or (-u) let go of, and nothing on stdout.\n"
	    "\n"
	    POOLCMD_HELP_TAIL "See mutex(1).\n",
	.fixed_max = 1,
};

int mutex_main(int argc, char **argv)
{
	return poolcmd_main(&mutex, argc, argv);
}

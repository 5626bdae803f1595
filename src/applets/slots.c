/* slots: run COMMAND in one of at most MAX slots of a lock file. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "applets.h"
#include "poolcmd.h"

#define USAGE \
	"usage: slots [-qv] [-w DUR] [-E CODE] [--mode MODE] [--record-args] LOCKFILE MAX [--] COMMAND [ARG...]\n" \
	"       slots [--json] LOCKFILE check|list\n" \
	"       slots [--mode MODE] LOCKFILE create\n" \
	"       slots acquire [-qv] [-w DUR] [-E CODE] [--record-args] [--path PATH] --fd FD MAX\n" \
	"       slots release [--path PATH] --fd FD"

static const struct lb_poolcmd slots = {
	.usage = USAGE,
	.help =
	    "\n"
	    "Run COMMAND in place (exec) holding one of MAX slots of LOCKFILE;\n"
	    "LOCKBOX_SLOT tells it which (1..MAX). Fail with 75 when all are busy.\n"
	    "\n"
	    "  -w, --wait DUR      wait up to DUR for a slot (bare number: seconds;\n"
	    "                      units ms s m h d, sums like 1m30s)\n"
	    "  -E, --conflict-exit-code CODE\n"
	    "                      exit with CODE instead of 75 when no slot is taken\n"
	    "  -q, --quiet         no message when no slot is taken\n"
	    "  -v, --verbose       say which slot was taken\n"
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
	    "check prints how many slots are held; list prints SLOT PID AGE COMMAND.\n"
	    "LOCKFILE may be postgresql://HOST/DB?lock=NAME: a lock on a PostgreSQL\n"
	    "server, shared between hosts; see lockbox-postgresql(7).\n"
	    "Exit: 0 or COMMAND's status, 75 busy, 125 lockbox failed,\n"
	    "126 COMMAND not executable, 127 COMMAND not found. See slots(1).\n",
	.fixed_max = 0,
};

int slots_main(int argc, char **argv)
{
	return lb_poolcmd_main(&slots, argc, argv);
}

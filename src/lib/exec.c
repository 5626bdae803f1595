/* Running COMMAND in place, with timeout(1)'s 126/127 convention on failure. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "err.h"
#include "exec.h"
#include "exitcodes.h"

void lb_exec(char *const argv[])
{
	execvp(argv[0], argv);
	/* a status of its own, so it never passes for the command's */
	lb_die(errno == ENOENT ? LB_EXIT_NOTFOUND : LB_EXIT_NOEXEC,
	    "cannot run '%s'", argv[0]);
}

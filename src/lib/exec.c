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
	lb_exec_report(argv, -1);
}

void lb_exec_report(char *const argv[], int fd)
{
	int err;

	execvp(argv[0], argv);
	err = errno;
	/* should this fail, the parent sees a run that ended 126 or 127 */
	if (fd >= 0)
		(void)!write(fd, &err, sizeof err);
	errno = err;
	/* a status of its own, so it never passes for the command's */
	lb_die(err == ENOENT ? LB_EXIT_NOTFOUND : LB_EXIT_NOEXEC,
	    "cannot run '%s'", argv[0]);
}

/* Running COMMAND in place, with timeout(1)'s 126/127 convention on failure. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "err.h"
#include "exec.h"
#include "exitcodes.h"

static struct sigaction xfsz_entry;
static int xfsz_saved;

void lb_exec_setup(void)
{
	struct sigaction ign;

	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	xfsz_saved = sigaction(SIGXFSZ, &ign, &xfsz_entry) == 0;
}

void lb_exec_restore(void)
{
	/* a handler does not survive exec anyway: what comes back is SIG_DFL or SIG_IGN */
	if (xfsz_saved)
		sigaction(SIGXFSZ, &xfsz_entry, NULL);
}

void lb_exec(char *const argv[])
{
	lb_exec_report(argv, -1);
}

void lb_exec_report(char *const argv[], int fd)
{
	int err;

	lb_exec_restore();
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

int lb_fsize_fits(off_t end)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    (rlim_t)end <= rl.rlim_cur)
		return 1;
	errno = EFBIG;
	return 0;
}

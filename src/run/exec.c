/* Running COMMAND in place, with timeout(1)'s 126/127 convention on failure. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

/* PATH as execvp(3) searches it: glibc's default when it is unset */
static const char *search_path(void)
{
	const char *p = getenv("PATH");

	return p != NULL ? p : "/bin:/usr/bin";
}

static int runnable(const char *file)
{
	struct stat st;

	return stat(file, &st) == 0 && S_ISREG(st.st_mode) && access(file, X_OK) == 0;
}

int lb_exec_found(const char *name)
{
	const char *p, *end;
	char file[PATH_MAX];
	int n;

	if (name[0] == '\0')
		return 0;
	if (strchr(name, '/') != NULL)
		return runnable(name);
	for (p = search_path();; p = end + 1) {
		end = p + strcspn(p, ":");
		n = end == p ? snprintf(file, sizeof file, "%s", name) :
		    snprintf(file, sizeof file, "%.*s/%s", (int)(end - p), p, name);
		if (n > 0 && (size_t)n < sizeof file && runnable(file))
			return 1;
		if (*end == '\0')
			return 0;
	}
}

int lb_exec_path_dir(const char *dir)
{
	const char *p, *end;
	char entry[PATH_MAX];
	struct stat want, st;

	if (stat(dir, &want) != 0)
		return 0;
	for (p = search_path();; p = end + 1) {
		end = p + strcspn(p, ":");
		if ((size_t)(end - p) < sizeof entry && end > p && !(end - p == 1 && *p == '.')) {
			memcpy(entry, p, (size_t)(end - p));
			entry[end - p] = '\0';
			if (stat(entry, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == want.st_dev &&
			    st.st_ino == want.st_ino)
				return 1;
		}
		if (*end == '\0')
			return 0;
	}
}

void lb_exec(char *const argv[])
{
	lb_exec_restore();
	execvp(argv[0], argv);
	/* a status of its own, so it never passes for the command's */
	lb_die(lb_child_exec_status(errno), "cannot run '%s'", argv[0]);
}

int lb_child_exec_status(int exec_errno)
{
	return exec_errno == ENOENT ? LB_EXIT_NOTFOUND : LB_EXIT_NOEXEC;
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

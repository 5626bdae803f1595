/* waitfor as a builtin: COMMAND run again in this shell every INTERVAL until it succeeds or TIMEOUT passes, the sleeps the shell's own. */
/* SPDX-License-Identifier: ISC */
/*
 * lockbox's waitfor(1), but COMMAND runs in this shell, as "$@" would run
 * it: a function that changes the shell keeps its changes (waitfor 3 5
 * mutex acquire keeps the lock), and it sees the caller's variables, this
 * builtin having none of its own. Its options, TIMEOUT and INTERVAL are
 * read by the applet's own parser (src/applets/waitfor.c), with its
 * messages; its sleeps end, with 128+N, when the shell has signal N to
 * act on.
 */
#define _GNU_SOURCE 1	/* as bash's own config.h has it */

#include <sys/types.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builtins.h"
#include "shell.h"
#include "common.h"

#include "clock.h"
#include "exec.h"
#include "exitcodes.h"
#include "parse.h"
#include "waitfor.h"
#include "inshell.h"

/* not in the headers bash installs: findcmd.c's */
extern char *find_user_command(const char *);

/* what the parser read, for the call under way (parse runs inside a host) */
static struct waitfor_opts *parsing;
static char **parsed;

static int parse(int argc, char **argv)
{
	parsed = waitfor_parse(parsing, argc, argv);
	return 0;
}

/*
 * -h or --help among the options: 1, for the library's words on stdout.
 * -1: an h bundled with other letters (-qh), which the library takes as
 * an invalid option, as it always has; the applet's parser would not.
 */
static int help_asked(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return 1;
		if (strcmp(argv[i], "--") == 0 || argv[i][0] != '-' || argv[i][1] == '\0')
			return 0;
		if (argv[i][1] != '-' && strspn(argv[i] + 1, "qv") < strlen(argv[i] + 1))
			return argv[i][1 + strspn(argv[i] + 1, "qv")] == 'h' ? -1 : 0;
		if (strcmp(argv[i], "--retry-on") == 0)
			i++;
	}
	return 0;
}

/* As the applet: a command that cannot run is not retried. 0, or its status. */
static int runnable(const char *name)
{
	struct stat st;
	char *path;

	if (strchr(name, '/') != NULL) {
		if (stat(name, &st) != 0) {
			lb_sh_warn("waitfor", "cannot run '%s': %s", name, strerror(ENOENT));
			return lb_child_exec_status(ENOENT);
		}
		if (S_ISDIR(st.st_mode) || access(name, X_OK) != 0) {
			lb_sh_warn("waitfor", "cannot run '%s': %s", name, strerror(EACCES));
			return lb_child_exec_status(EACCES);
		}
		return 0;
	}
	if (find_function(name) != NULL || find_shell_builtin((char *)name) != NULL)
		return 0;
	path = find_user_command(name);
	if (path != NULL) {
		xfree(path);
		return 0;
	}
	lb_sh_warn("waitfor", "cannot run '%s': %s", name, strerror(ENOENT));
	return lb_child_exec_status(ENOENT);
}

static int attempts(const struct waitfor_opts *o, char **command)
{
	int64_t deadline = lb_deadline_after(o->timeout), left, wake;
	char when[32];
	unsigned n;
	int status, r;

	for (n = 1;; n++) {
		status = lb_sh_run(command);
		if (status == 0) {
			if (o->verbose)
				lb_sh_warn("waitfor", "attempt %u succeeded", n);
			return 0;
		}
		if (!o->retry[status & 255]) {
			if (o->verbose)
				lb_sh_warn("waitfor", "attempt %u exited %d; %s, stopping", n, status,
				    waitfor_not_retried(o));
			return status;
		}
		left = lb_remaining(deadline);
		if (o->timeout == 0 || left <= 0) {
			if (o->verbose)
				lb_sh_warn("waitfor", "attempt %u exited %d; out of time", n, status);
			if (!o->quiet)
				lb_sh_warn("waitfor", "gave up after %s (%u attempt%s); last status %d",
				    lb_format_duration_ms(o->timeout, when), n, n == 1 ? "" : "s", status);
			return status;
		}
		wake = left < o->interval ? left : o->interval;
		if (o->verbose)
			lb_sh_warn("waitfor", "attempt %u exited %d; next in %s", n, status,
			    lb_format_duration(wake, when));
		if (wake > 0 && (r = lb_sh_nap(wake)) != 0)
			return r;
	}
}

int lb_sh_waitfor(int argc, char **argv)
{
	struct waitfor_opts o;
	char **command;
	int status;

	status = help_asked(argc, argv);
	if (status < 0) {
		lb_sh_warn("waitfor", "invalid option '-h'\nTry 'lockbox waitfor --help'.");
		return LB_EXIT_FAIL;
	}
	if (status > 0) {
		printf("%s\n",
		    "usage: waitfor [-qv] [--retry-on LIST] TIMEOUT INTERVAL [--] COMMAND [ARG...]\n"
		    "\n"
		    "Run COMMAND (a shell function too, in this shell) until it succeeds: again\n"
		    "after INTERVAL each time it fails, for at most TIMEOUT. A bare TIMEOUT is\n"
		    "minutes (3 = 3 minutes), a bare INTERVAL seconds (5 = 5 seconds); units\n"
		    "ms, s or sec, m or min, h or hr, d. See lockbox-shell(7).");
		return sh_chkwrite(EXECUTION_SUCCESS);
	}
	parsing = &o;
	parsed = NULL;
	status = lb_sh_hosted("waitfor", parse, argc, argv);
	command = parsed;
	parsing = NULL;
	/* no COMMAND and no error: the applet's help, asked for among bundled letters */
	if (status != 0 || command == NULL)
		return status;
	status = runnable(command[0]);
	if (status != 0)
		return status;
	return attempts(&o, command);
}

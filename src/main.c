/* lockbox: the multicall binary; dispatches to the applet named by argv. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "applets.h"
#include "backends.h"
#include "err.h"
#include "exec.h"
#include "exitcodes.h"
#include "opts.h"
#include "pool.h"
#include "procfs.h"
#include "text.h"
#include "title.h"

#define USAGE \
	"usage: lockbox APPLET [ARG...]\n" \
	"       lockbox --help | --version | --list | --shell-lib"

struct applet {
	const char *name;
	int (*main)(int, char **);
};

/* sorted by name, for bsearch */
static const struct applet applets[] = {
	{ "adaptive", adaptive_main },
	{ "locks", locks_main },
	{ "mutex", mutex_main },
	{ "slots", slots_main },
	{ "waitfor", waitfor_main },
};

#define NAPPLETS (sizeof applets / sizeof applets[0])

/*
 * Whether this is the installed lockbox; else one run from its build tree,
 * which uses the build tree's files that go with it (the shell library,
 * the backends' helpers) where they are there.
 */
static int installed(void)
{
	char *self = lb_procfs_self_exe();
	char *path = realpath(LOCKBOX_BINDIR "/" PACKAGE, NULL);
	int is = self != NULL && path != NULL && strcmp(self, path) == 0;

	free(self);
	free(path);
	return is;
}

static char **main_argv;

/*
 * A backend this program does not link is its helper's (backends.h): the
 * same program with the backend's objects (lockbox-pg: libpq, which the
 * static lockbox never links). Nothing has been locked or opened yet when
 * a target is opened, so running the helper on the very same argv is the
 * same run, only with the backend that can do it: the installed helper,
 * or a build tree's lockbox the one built beside it. The backend's
 * variable (LOCKBOX_PG_HELPER) names another; secure_getenv, so that a
 * setuid, setgid or capability-raised lockbox never runs a program its
 * caller names.
 */
static void handoff(const char *target, const struct lb_backend *b)
{
	const char *helper = secure_getenv(b->helper_env);
	char built[PATH_MAX], shipped[PATH_MAX], scheme[32], why[128] = "", *shown;
	int e;

	if (helper == NULL || *helper == '\0') {
		snprintf(built, sizeof built, "%s/%s", LOCKBOX_BUILD_HELPER_DIR, b->helper);
		snprintf(shipped, sizeof shipped, "%s/%s", LOCKBOX_HELPER_DIR, b->helper);
		helper = !installed() && access(built, X_OK) == 0 ? built : shipped;
	}
	fflush(NULL);
	/* the helper is lockbox too: it must find SIGXFSZ as we were started with it */
	lb_exec_restore();
	execv(helper, main_argv);
	e = errno;
	if (e == ENOENT)
		snprintf(why, sizeof why, " (it comes with the package %s)", b->package);
	/* a message never shows the URL's secrets */
	shown = lb_url_mask(target);
	snprintf(scheme, sizeof scheme, "%s://", b->schemes[0]);
	lb_warnx("%s: cannot run the %s helper %s: %s%s", shown != NULL ? shown : scheme,
	    b->name, helper, strerror(e), why);
	free(shown);
}

static int by_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct applet *)elem)->name);
}

/* "unknown applet: mutx (did you mean mutex?)" */
static int unknown(const char *name)
{
	const char *names[NAPPLETS], *near;
	size_t i;

	for (i = 0; i < NAPPLETS; i++)
		names[i] = applets[i].name;
	near = lb_nearest(name, names, NAPPLETS);
	if (near != NULL)
		lb_warnx("unknown applet: %s (did you mean %s?)", name, near);
	else
		lb_warnx("unknown applet: %s", name);
	return LB_EXIT_NOTFOUND;
}

static int run(const char *name, int argc, char **argv, int linked)
{
	const struct applet *a = bsearch(name, applets, NAPPLETS, sizeof *applets, by_name);

	if (a == NULL)
		return unknown(name);
	lb_prog = a->name;
	lb_prog_linked = linked;
	/* every applet's --version, also waitfor's and adaptive's */
	if (argc > 1 && strcmp(argv[1], "--version") == 0)
		lb_version();
	/*
	 * Every applet's returning path goes through here: what it printed
	 * must have reached stdout, or the run failed (applets that exec a
	 * command never return, and their output is the command's).
	 */
	return lb_stdout_status(a->main(argc, argv));
}

/*
 * The bash library's path: the installed copy for the installed binary, else
 * the build tree's copy, which names this build's binary (or, missing, the
 * source tree's), so '. "$(./lockbox --shell-lib)"' works in a build tree.
 */
static int shell_lib(void)
{
	int is_installed = installed();
	const char *path = NULL;

	if (!is_installed && access(LOCKBOX_BUILD_SHELL_LIB, R_OK) == 0)
		path = LOCKBOX_BUILD_SHELL_LIB;
	else if (!is_installed && access(LOCKBOX_SRC_SHELL_LIB, R_OK) == 0)
		path = LOCKBOX_SRC_SHELL_LIB;
	else if (access(LOCKBOX_SHELL_LIB, R_OK) == 0)
		path = LOCKBOX_SHELL_LIB;
	if (path == NULL) {
		lb_warnx("no shell library at %s", LOCKBOX_SHELL_LIB);
		return LB_EXIT_FAIL;
	}
	printf("%s\n", path);
	lb_close_stdout();
	return LB_EXIT_OK;
}

/*
 * A caller may start us with stdin, stdout or stderr closed: the next
 * open() would then get that number, and a message or the command's
 * output would land in the lock file. /dev/null takes their place first.
 */
static int fill_std_fds(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		/* the lowest free number: this one, the lower ones being open */
		if (open("/dev/null", O_RDWR) != fd)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char outbuf[64 * 1024];
	const char *base;
	size_t i;

	/* before anything reads argv: a waiter writes what it waits for there */
	lb_title_init(argc, argv);
	base = argc > 0 ? strrchr(argv[0], '/') : NULL;
	if (fill_std_fds() != 0)
		return LB_EXIT_FAIL;
	/*
	 * Output that is not for a terminal is written at the end, in one
	 * go, as glibc does by default: musl line-buffers stdout until its
	 * first write, which then fails inside printf, and the final flush
	 * that reports a full disk could no longer say why. (musl's own
	 * buffer is 1 KiB, less than a --help.)
	 */
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	lb_exec_setup();
	/* a target of a backend this program does not link goes to the one that does */
	main_argv = argv;
	lb_pool_set_handoff(handoff);
	base = base != NULL ? base + 1 : argc > 0 ? argv[0] : PACKAGE;
	/* a backend's helper (lockbox-pg) is a multicall name too */
	if (strcmp(base, PACKAGE) != 0 && lb_backend_of_helper(base) == NULL)
		return run(base, argc, argv, 1);
	if (argc < 2) {
		fprintf(stderr, "%s\n", USAGE);
		return LB_EXIT_FAIL;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		printf("%s\n\nApplets:", USAGE);
		for (i = 0; i < NAPPLETS; i++)
			printf(" %s", applets[i].name);
		printf("\nRun 'lockbox APPLET --help' for one; see lockbox(1).\n");
		printf("'lockbox --shell-lib' prints the bash library's path; see lockbox-shell(7).\n");
		lb_close_stdout();
		return LB_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
		lb_version();
	if (strcmp(argv[1], "--shell-lib") == 0)
		return shell_lib();
	if (strcmp(argv[1], "--list") == 0) {
		for (i = 0; i < NAPPLETS; i++)
			printf("%s\n", applets[i].name);
		lb_close_stdout();
		return LB_EXIT_OK;
	}
	/* an applet's name never starts with '-': this is a usage error, as timeout(1) has it */
	if (argv[1][0] == '-') {
		static const char *const own[] = { "--help", "--version", "--list", "--shell-lib" };
		const char *near = lb_nearest(argv[1], own, sizeof own / sizeof own[0]);

		if (near != NULL)
			lb_usage_error("invalid option '%s' (did you mean %s?)", argv[1], near);
		lb_usage_error("invalid option '%s'", argv[1]);
	}
	return run(argv[1], argc - 1, argv + 1, 0);
}

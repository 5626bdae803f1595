/* _lockbox_builtin: the shell library's locks inside bash, a loadable builtin (enable -f) on the binary's own code. */
/* SPDX-License-Identifier: ISC */
/*
 * lockbox.bash loads it with `enable -f PATH _lockbox_builtin` and then
 * takes and drops its locks without starting a process:
 *
 *   _lockbox_builtin [-v VAR] mutex|slots acquire ARG...
 *   _lockbox_builtin [-v VAR] mutex|slots release ARG...
 *   _lockbox_builtin [-v VAR] mutex|slots -- LOCKFILE create
 *   _lockbox_builtin -v VAR exit-trap
 *   _lockbox_builtin sleep DUR
 *
 * The first three run the applet's own front end (src/applets/slots.c),
 * with the words as its argv, in this process: the same options, checks,
 * messages and statuses as `lockbox mutex acquire --fd FD ...`. Only
 * those forms: any other would take a lock for a COMMAND and exec it in
 * place of the shell. What the applet prints on stdout (a slot number)
 * goes into VAR with -v (its last newline dropped), else to stdout.
 * exit-trap puts `trap -p EXIT` into VAR, and sleep sleeps; both without
 * a subshell.
 *
 * What it holds to, inside a shell that lives on (see src/lib/host.h):
 * no exit (a usage error ends the call, with the program's message and
 * status), no fd left open but the lock fd the caller gave (every other
 * one is close-on-exec and closed before the call returns), no thread
 * left running (the wait layer joins its helpers), and the shell's
 * signals: blocked while lockbox works, taken while a wait sleeps, and a
 * wait ends at once, with 128+N and the lock not taken, when the shell
 * has signal N to act on (a trapped signal, SIGINT, or one that ends the
 * shell): bash runs the trap when the builtin returns.
 */
#define _GNU_SOURCE 1	/* as bash's own config.h has it */

#include <sys/types.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* bash's own, for loadable builtins: each includes bash's config.h first */
#include "builtins.h"
#include "shell.h"
#include "builtext.h"
#include "common.h"
#include "version.h"

#include "applets.h"
#include "clock.h"
#include "err.h"
#include "exitcodes.h"
#include "host.h"
#include "parse.h"

#define NAME	"_lockbox_builtin"
#define EXPORT	__attribute__((visibility("default")))

/*
 * Whether bash has a trap to run for a signal: trap.c's, which bash does
 * not install a header for. Looked up when the builtin is loaded, so
 * that a bash without it refuses the builtin (the library then falls back
 * to the binary) instead of failing in the middle of a wait.
 */
static int (*signal_pending)(int);

/*
 * The signal the shell must act on now, or 0: one that ends it (bash
 * runs the EXIT trap, then dies of it), SIGINT as bash takes it without
 * a trap, or any signal with a trap waiting to run. SIGCHLD's trap is
 * left for later: a background job that ends does not end a lock wait.
 */
static int shell_signal(void)
{
	int sig;

	if (terminating_signal)
		return terminating_signal;
	if (interrupt_state)
		return SIGINT;
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGCHLD && signal_pending(sig))
			return sig;
	return 0;
}

/*
 * Every signal blocked but those a fault raises (which must not wait);
 * *SHELL gets the shell's mask, for the sleeps and for afterwards.
 */
static void block_signals(sigset_t *shell)
{
	static const int faults[] = { SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGSYS, SIGTRAP, SIGABRT };
	sigset_t all;
	size_t i;

	sigfillset(&all);
	for (i = 0; i < sizeof faults / sizeof faults[0]; i++)
		sigdelset(&all, faults[i]);
	sigprocmask(SIG_BLOCK, &all, shell);
}

/*
 * A shell may run us with stdin, stdout or stderr closed: a file lockbox
 * opens would then take that number, and a message would land in the
 * lock file. /dev/null stands in for the call; *FILLED says which to close.
 */
static int fill_std_fds(int filled[3])
{
	int fd, got;

	filled[0] = filled[1] = filled[2] = 0;
	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		/* the lowest free number: this one, the lower ones being open */
		got = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (got != fd) {
			if (got >= 0)
				close(got);
			return -1;
		}
		filled[fd] = 1;
	}
	return 0;
}

static void unfill_std_fds(const int filled[3])
{
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (filled[fd])
			close(fd);
}

/* Whether NAME is a variable this builtin may set (else said why). */
static int settable(const char *name)
{
	SHELL_VAR *v;

	if (!legal_identifier((char *)name)) {
		builtin_error("%s: not a valid identifier", name);
		return 0;
	}
	v = find_variable((char *)name);
	if (v != NULL && (readonly_p(v) || noassign_p(v))) {
		builtin_error("%s: cannot set it", name);
		return 0;
	}
	return 1;
}

/* VAR set to TEXT, less one trailing newline. 0, or -1 (bash said why). */
static int set_var(const char *name, char *text, size_t len)
{
	if (len > 0 && text[len - 1] == '\n')
		text[len - 1] = '\0';
	return builtin_bind_variable((char *)name, text, 0) != NULL ? 0 : -1;
}

/*
 * stdout for a call: with VAR a buffer in memory (stdout is a variable
 * in the C library, bash's as well as ours: nothing of bash's runs while
 * we hold it, since its signal handlers only set flags), else bash's own.
 */
struct capture {
	FILE *saved;
	FILE *mem;
	char *text;
	size_t len;
};

static int capture_start(struct capture *c, const char *var)
{
	memset(c, 0, sizeof *c);
	if (var == NULL)
		return 0;
	c->mem = open_memstream(&c->text, &c->len);
	if (c->mem == NULL) {
		builtin_error("%s", strerror(errno));
		return -1;
	}
	c->saved = stdout;
	stdout = c->mem;
	return 0;
}

/* 0, or -1 when what was captured is not all there (out of memory). */
static int capture_end(struct capture *c)
{
	int r = 0;

	if (c->mem == NULL) {
		/* bash's own stdout: a write error is the call's, and was reported */
		clearerr(stdout);
		return 0;
	}
	stdout = c->saved;
	if (fclose(c->mem) != 0)
		r = -1;
	c->mem = NULL;
	return r;
}

static void capture_free(struct capture *c)
{
	free(c->text);
	c->text = NULL;
}

/* Whether ARGV (from its applet on) is one of the forms that never exec. */
static int in_place_form(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "acquire") == 0 || strcmp(argv[1], "release") == 0))
		return 1;
	/* `APPLET -- LOCKFILE create`: after --, LOCKFILE is no option */
	return argc == 4 && strcmp(argv[1], "--") == 0 && strcmp(argv[3], "create") == 0;
}

static int run_applet(const char *var, int argc, char **argv)
{
	int (*fn)(int, char **) = strcmp(argv[0], "mutex") == 0 ? mutex_main : slots_main;
	const char *prog = lb_prog;
	struct capture out;
	sigset_t shell;
	int filled[3], status, sig;

	if (!in_place_form(argc, argv)) {
		builtin_error("%s: only acquire, release and -- LOCKFILE create run in the shell",
		    argv[0]);
		return LB_EXIT_FAIL;
	}
	if (var != NULL && !settable(var))
		return LB_EXIT_FAIL;
	block_signals(&shell);
	if (fill_std_fds(filled) != 0) {
		builtin_error("cannot open /dev/null: %s", strerror(errno));
		unfill_std_fds(filled);
		sigprocmask(SIG_SETMASK, &shell, NULL);
		return LB_EXIT_FAIL;
	}
	if (capture_start(&out, var) != 0) {
		unfill_std_fds(filled);
		sigprocmask(SIG_SETMASK, &shell, NULL);
		return LB_EXIT_FAIL;
	}
	lb_prog = argv[0];
	lb_stdout_reset();
	status = lb_host_run(fn, argc, argv, &shell, shell_signal);
	lb_prog = prog;
	if (capture_end(&out) != 0 && status == LB_EXIT_OK)
		status = LB_EXIT_FAIL;
	unfill_std_fds(filled);
	sig = lb_host_interrupted();
	if (sig != 0)
		status = 128 + sig;
	if (var != NULL && status == LB_EXIT_OK &&
	    set_var(var, out.text != NULL ? out.text : (char *)"", out.len) != 0)
		status = LB_EXIT_FAIL;
	capture_free(&out);
	/* a signal that came meanwhile is taken now: bash acts on it when we return */
	sigprocmask(SIG_SETMASK, &shell, NULL);
	return status;
}

/* `trap -p EXIT` into VAR: bash's own trap builtin, its output captured. */
static int exit_trap(const char *var)
{
	WORD_LIST *args;
	struct capture out;
	int status;

	if (var == NULL) {
		builtin_error("exit-trap needs -v VAR");
		return LB_EXIT_FAIL;
	}
	if (!settable(var) || capture_start(&out, var) != 0)
		return LB_EXIT_FAIL;
	args = make_word_list(make_word("-p"), make_word_list(make_word("EXIT"), NULL));
	status = trap_builtin(args);
	dispose_words(args);
	if (capture_end(&out) != 0)
		status = LB_EXIT_FAIL;
	if (status == EXECUTION_SUCCESS &&
	    set_var(var, out.text != NULL ? out.text : (char *)"", out.len) != 0)
		status = LB_EXIT_FAIL;
	capture_free(&out);
	return status;
}

/*
 * Sleep DUR (lockbox's durations; a bare number is seconds), as sleep(1)
 * would for waitfor, but ended, with 128+N, by a signal N the shell must
 * act on.
 */
static int nap(const char *arg)
{
	int64_t ns, deadline, left;
	struct timespec ts;
	sigset_t shell;
	int sig = 0;

	if (lb_parse_duration(arg, LB_NS_PER_S, &ns) != 0) {
		builtin_error("sleep: invalid duration '%s'", arg);
		return LB_EXIT_FAIL;
	}
	deadline = lb_deadline_after(ns);
	block_signals(&shell);
	while ((sig = shell_signal()) == 0 && (left = lb_remaining(deadline)) > 0) {
		ts.tv_sec = (time_t)(left / LB_NS_PER_S);
		ts.tv_nsec = (long)(left % LB_NS_PER_S);
		/* the shell's signals come in here, and only here */
		ppoll(NULL, 0, &ts, &shell);
	}
	sigprocmask(SIG_SETMASK, &shell, NULL);
	return sig != 0 ? 128 + sig : EXECUTION_SUCCESS;
}

/*
 * The library's key for a lock file's path (lockbox.bash's _lockbox_key,
 * which says why), word for word the same steps: relative to $PWD, the
 * directory's . and .. taken as written while no directory on the way is
 * a symlink, else the directory's physical path (as cd -P finds it, or
 * as written when it cannot be entered), then the base name as given.
 */
static int key(const char *var, const char *arg)
{
	const char *pwd = get_string_value("PWD"), *p, *e;
	size_t plen = pwd != NULL ? strlen(pwd) : 0, n = strlen(arg), dlen;
	char *path, *cur, *real;
	size_t clen = 0;
	struct stat st;
	int r;

	if (var == NULL) {
		builtin_error("key needs -v VAR");
		return LB_EXIT_FAIL;
	}
	if (!settable(var))
		return LB_EXIT_FAIL;
	/* ${PWD%/}/PATH: one slash less at PWD's end */
	if (arg[0] == '/')
		plen = 0;
	else if (plen > 0 && pwd[plen - 1] == '/')
		plen--;
	path = malloc(plen + n + 2);
	cur = malloc(plen + n + 2);
	if (path == NULL || cur == NULL) {
		free(path);
		free(cur);
		builtin_error("%s", strerror(ENOMEM));
		return LB_EXIT_FAIL;
	}
	if (arg[0] == '/') {
		memcpy(path, arg, n + 1);
	} else {
		memcpy(path, pwd, plen);
		path[plen] = '/';
		memcpy(path + plen + 1, arg, n + 1);
	}
	/* the directory (${path%/...}): up to the last slash */
	dlen = (size_t)(strrchr(path, '/') - path);
	cur[0] = '\0';
	for (p = path; p < path + dlen; p = e + 1) {
		e = memchr(p, '/', (size_t)(path + dlen - p));
		if (e == NULL)
			e = path + dlen;
		if (e == p || (e - p == 1 && p[0] == '.'))
			continue;
		if (e - p == 2 && p[0] == '.' && p[1] == '.') {
			/* cur without its last component */
			while (clen > 0 && cur[clen - 1] != '/')
				clen--;
			if (clen > 0)
				clen--;
			cur[clen] = '\0';
			continue;
		}
		cur[clen++] = '/';
		memcpy(cur + clen, p, (size_t)(e - p));
		clen += (size_t)(e - p);
		cur[clen] = '\0';
		if (lstat(cur, &st) == 0 && S_ISLNK(st.st_mode)) {
			path[dlen] = '\0';
			real = realpath(dlen > 0 ? path : "/", NULL);
			path[dlen] = '/';
			free(cur);
			if (real != NULL) {
				clen = strlen(real);
				if (clen > 0 && real[clen - 1] == '/')
					clen--;
				cur = malloc(clen + n + plen + 2);
				if (cur != NULL)
					memcpy(cur, real, clen);
				free(real);
			} else {
				clen = dlen;
				cur = malloc(clen + n + plen + 2);
				if (cur != NULL)
					memcpy(cur, path, clen);
			}
			if (cur == NULL) {
				free(path);
				builtin_error("%s", strerror(ENOMEM));
				return LB_EXIT_FAIL;
			}
			break;
		}
	}
	/* $cur, then the slash and base name */
	memcpy(cur + clen, path + dlen, strlen(path + dlen) + 1);
	r = builtin_bind_variable((char *)var, cur, 0) != NULL ? EXECUTION_SUCCESS : LB_EXIT_FAIL;
	free(cur);
	free(path);
	return r;
}

static int usage(void)
{
	builtin_usage();
	return LB_EXIT_FAIL;
}

static int lockbox_builtin(WORD_LIST *list)
{
	char *argv[64];
	const char *var = NULL, *op;
	int argc = 0;

	if (list != NULL && strcmp(list->word->word, "-v") == 0) {
		if (list->next == NULL)
			return usage();
		var = list->next->word->word;
		list = list->next->next;
	}
	if (list == NULL)
		return usage();
	op = list->word->word;
	if (strcmp(op, "sleep") == 0)
		return list->next != NULL && list->next->next == NULL ? nap(list->next->word->word) :
		    usage();
	if (strcmp(op, "exit-trap") == 0)
		return list->next == NULL ? exit_trap(var) : usage();
	if (strcmp(op, "key") == 0)
		return list->next != NULL && list->next->next == NULL ? key(var, list->next->word->word) :
		    usage();
	if (strcmp(op, "mutex") != 0 && strcmp(op, "slots") != 0)
		return usage();
	for (; list != NULL; list = list->next) {
		if (argc == (int)(sizeof argv / sizeof argv[0]) - 1) {
			builtin_error("%s: too many words", op);
			return LB_EXIT_FAIL;
		}
		argv[argc++] = list->word->word;
	}
	argv[argc] = NULL;
	return run_applet(var, argc, argv);
}

/* Refused by a bash it was not built for: its internals may differ. */
EXPORT int _lockbox_builtin_builtin_load(char *name)
{
	(void)name;
	if (strcmp(dist_version, DISTVERSION) != 0) {
		builtin_error("built for bash %s, not %s", DISTVERSION, dist_version);
		return 0;
	}
	signal_pending = (int (*)(int))dlsym(RTLD_DEFAULT, "signal_is_pending");
	if (signal_pending == NULL) {
		builtin_error("this bash has no signal_is_pending");
		return 0;
	}
	return 1;
}

/* enable -d: the library goes back to the binary, without a word. */
EXPORT void _lockbox_builtin_builtin_unload(char *name)
{
	(void)name;
	bind_variable("_lockbox_inshell", "0", 0);
}

static char *lockbox_builtin_doc[] = {
	"lockbox's locks inside the shell, for lockbox.bash (see lockbox-shell(7)).",
	"",
	"Runs `lockbox mutex|slots acquire|release ...' in this shell, without",
	"a process; -v VAR puts what it prints into VAR.",
	NULL
};

EXPORT struct builtin _lockbox_builtin_struct = {
	NAME,
	lockbox_builtin,
	BUILTIN_ENABLED,
	lockbox_builtin_doc,
	NAME " [-v VAR] mutex|slots acquire|release ARG... | -- LOCKFILE create; "
	    NAME " -v VAR exit-trap; " NAME " sleep DUR",
	0
};

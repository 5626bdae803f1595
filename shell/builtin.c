/* The shell library as bash builtins (enable -f): bash's side of every call, on the binary's own code. */
/* SPDX-License-Identifier: ISC */
/*
 * lockbox.bash, the file scripts source, loads this object with
 *
 *   enable -f PATH _lockbox_builtin acquire_mutex release_mutex mutex \
 *       acquire_slot release_slot waitfor trap
 *
 * and defines nothing else: each of the library's public functions is
 * then one builtin call, which takes or drops its lock without starting
 * a process (locks.c), retries in the shell (retry.c) and keeps the
 * release on EXIT chained with the script's own EXIT trap (traps.c: the
 * trap builtin is replaced by one that knows of it). _lockbox_builtin
 * is the EXIT trap's handler. A bash that cannot load it gets the same
 * functions written in bash (lockbox-fallback.bash), which run the binary.
 *
 * The applet's front end (src/applets/slots.c) takes and drops the
 * locks, with the words of `lockbox mutex acquire --fd FD ...` as its
 * argv, in this process: the same options, checks, messages and
 * statuses as the binary's.
 *
 * What it holds to, inside a shell that lives on (see src/util/host.h):
 * no exit (a usage error ends the call, with the program's message and
 * status), no fd left open but the lock fds it keeps for the shell
 * (every other one is close-on-exec and closed before the call returns),
 * no thread left running (the wait layer joins its helpers), and the
 * shell's signals: blocked while lockbox works, taken while a wait
 * sleeps, and a wait ends at once, with 128+N and the lock not taken,
 * when the shell has signal N to act on (a trapped signal, SIGINT, or
 * one that ends the shell): bash runs the trap when the builtin returns.
 */
#define _GNU_SOURCE 1	/* as bash's own config.h has it */

#include <sys/types.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* bash's own, for loadable builtins: each includes bash's config.h first */
#include "builtins.h"
#include "shell.h"
#include "builtext.h"
#include "common.h"
#include "execute_cmd.h"
#include "version.h"

#include "applets.h"
#include "clock.h"
#include "err.h"
#include "exitcodes.h"
#include "host.h"
#include "inshell.h"
#include "parse.h"

#define EXPORT	__attribute__((visibility("default")))

/*
 * Whether bash has a trap to run for a signal: trap.c's, which bash does
 * not install a header for. Looked up when the builtin is loaded, so
 * that a bash without it refuses the builtin (the library then falls back
 * to the binary) instead of failing in the middle of a wait.
 */
static int (*signal_pending)(int);

/* the binary, as the loader resolved it ($_lockbox_bin when loaded) */
static char *binary;

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

/*
 * stdout for a call: with OUT a buffer in memory (stdout is a variable
 * in the C library, bash's as well as ours: nothing of bash's runs while
 * we hold it, since its signal handlers only set flags), else bash's own.
 */
struct capture {
	FILE *saved;
	FILE *mem;
	char *text;
	size_t len;
};

static int capture_start(struct capture *c, int on)
{
	memset(c, 0, sizeof *c);
	if (!on)
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

/* Whether ARGV (from its applet on) is one of the forms that never exec. */
static int in_place_form(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "acquire") == 0 || strcmp(argv[1], "release") == 0))
		return 1;
	/* `APPLET -- LOCKFILE create`: after --, LOCKFILE is no option */
	return argc == 4 && strcmp(argv[1], "--") == 0 && strcmp(argv[3], "create") == 0;
}

/*
 * FN(ARGC, ARGV) as lockbox's applet PROG, in this process; OUT as
 * lb_sh_applet's. Its status, or 128+N when the shell has signal N to
 * act on.
 */
static int hosted(char **out, const char *prog, int (*fn)(int, char **), int argc, char **argv)
{
	const char *saved = lb_prog;
	struct capture cap;
	sigset_t shell;
	int filled[3], status, sig;

	if (out != NULL)
		*out = NULL;
	block_signals(&shell);
	if (fill_std_fds(filled) != 0) {
		builtin_error("cannot open /dev/null: %s", strerror(errno));
		unfill_std_fds(filled);
		sigprocmask(SIG_SETMASK, &shell, NULL);
		return LB_EXIT_FAIL;
	}
	if (capture_start(&cap, out != NULL) != 0) {
		unfill_std_fds(filled);
		sigprocmask(SIG_SETMASK, &shell, NULL);
		return LB_EXIT_FAIL;
	}
	lb_prog = prog;
	lb_stdout_reset();
	status = lb_host_run(fn, argc, argv, &shell, shell_signal);
	lb_prog = saved;
	if (capture_end(&cap) != 0 && status == LB_EXIT_OK)
		status = LB_EXIT_FAIL;
	unfill_std_fds(filled);
	sig = lb_host_interrupted();
	if (sig != 0)
		status = 128 + sig;
	if (out != NULL) {
		if (cap.text != NULL && cap.len > 0 && cap.text[cap.len - 1] == '\n')
			cap.text[cap.len - 1] = '\0';
		*out = cap.text;
	} else {
		free(cap.text);
	}
	/* a signal that came meanwhile is taken now: bash acts on it when we return */
	sigprocmask(SIG_SETMASK, &shell, NULL);
	return status;
}

int lb_sh_applet(char **out, int argc, char **argv)
{
	if (!in_place_form(argc, argv)) {
		builtin_error("%s: only acquire, release and -- LOCKFILE create run in the shell",
		    argv[0]);
		return LB_EXIT_FAIL;
	}
	return hosted(out, argv[0], strcmp(argv[0], "mutex") == 0 ? mutex_main : slots_main,
	    argc, argv);
}

int lb_sh_hosted(const char *prog, int (*fn)(int, char **), int argc, char **argv)
{
	return hosted(NULL, prog, fn, argc, argv);
}

int lb_sh_builtin(char **out, int (*fn)(WORD_LIST *), char **words)
{
	WORD_LIST *list = NULL;
	struct capture cap;
	int n, status;

	if (out != NULL)
		*out = NULL;
	for (n = 0; words[n] != NULL; n++)
		;
	while (n-- > 0)
		list = make_word_list(make_word(words[n]), list);
	if (capture_start(&cap, out != NULL) != 0) {
		dispose_words(list);
		return LB_EXIT_FAIL;
	}
	status = fn(list);
	dispose_words(list);
	if (capture_end(&cap) != 0 && status == EXECUTION_SUCCESS)
		status = LB_EXIT_FAIL;
	if (out != NULL)
		*out = cap.text;
	else
		free(cap.text);
	return status;
}

int lb_sh_nap(int64_t ns)
{
	int64_t deadline = lb_deadline_after(ns), left;
	struct timespec ts;
	sigset_t shell;
	int sig = 0;

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
 * As bash runs `cmd || ...`: the words taken as they are (no expansion
 * again), the status ignored for set -e, inside a function too. What the
 * command does to the shell (an exit, an interrupt) may leave this call
 * by longjmp: nothing of ours is held across it but the command itself.
 */
int lb_sh_run(char **argv)
{
	COMMAND *c;
	WORD_LIST *words = NULL;
	int n, status;

	for (n = 0; argv[n] != NULL; n++)
		;
	while (n-- > 0)
		words = make_word_list(make_word(argv[n]), words);
	c = make_bare_simple_command();
	c->value.Simple->words = words;
	c->value.Simple->flags |= CMD_INHIBIT_EXPANSION | CMD_IGNORE_RETURN;
	c->flags |= CMD_INHIBIT_EXPANSION | CMD_IGNORE_RETURN;
	status = execute_command(c);
	dispose_command(c);
	return status;
}

const char *lb_sh_binary(void)
{
	return binary != NULL ? binary : "lockbox";
}

void lb_sh_warn(const char *name, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n, m;

	n = snprintf(buf, sizeof buf, "%s: ", name);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m < (int)(sizeof buf - (size_t)n - 1) ? m : (int)(sizeof buf - (size_t)n - 2);
	buf[n++] = '\n';
	/* one write: holders share stderr (a closed stderr: said nowhere) */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		return;
}

/* The words of a call as an argv: NAME, then its arguments; NULL-terminated. */
static char **argv_of(const char *name, WORD_LIST *list, int *argc)
{
	WORD_LIST *w;
	char **argv;
	int n = 1;

	for (w = list; w != NULL; w = w->next)
		n++;
	argv = malloc(((size_t)n + 1) * sizeof *argv);
	if (argv == NULL) {
		builtin_error("%s", strerror(ENOMEM));
		return NULL;
	}
	argv[0] = (char *)name;
	for (n = 1, w = list; w != NULL; w = w->next)
		argv[n++] = w->word->word;
	argv[n] = NULL;
	*argc = n;
	return argv;
}

static int call(const char *name, int (*fn)(int, char **), WORD_LIST *list)
{
	char **argv;
	int argc, status;

	argv = argv_of(name, list, &argc);
	if (argv == NULL)
		return LB_EXIT_FAIL;
	status = fn(argc, argv);
	free(argv);
	return status;
}

static int acquire_mutex_builtin(WORD_LIST *list)
{
	return call("acquire_mutex", lb_sh_acquire_mutex, list);
}

static int release_mutex_builtin(WORD_LIST *list)
{
	return call("release_mutex", lb_sh_release_mutex, list);
}

static int mutex_builtin(WORD_LIST *list)
{
	return call("mutex", lb_sh_mutex, list);
}

static int acquire_slot_builtin(WORD_LIST *list)
{
	return call("acquire_slot", lb_sh_acquire_slot, list);
}

static int release_slot_builtin(WORD_LIST *list)
{
	return call("release_slot", lb_sh_release_slot, list);
}

/*
 * waitfor's COMMAND may leave the call by longjmp (an exit in it): the
 * argv is then lost with the shell's exit, or at worst, in an interactive
 * shell interrupted, a few words' worth of memory.
 */
static int waitfor_builtin(WORD_LIST *list)
{
	return call("waitfor", lb_sh_waitfor, list);
}

static int trap_wrapper_builtin(WORD_LIST *list)
{
	return call("trap", lb_sh_trap, list);
}

/* _lockbox_builtin exit: the EXIT trap's handler (traps.c) */
static int lockbox_builtin(WORD_LIST *list)
{
	if (list != NULL && strcmp(list->word->word, "exit") == 0 && list->next == NULL)
		return lb_sh_on_exit();
	builtin_usage();
	return LB_EXIT_FAIL;
}

/*
 * Loaded once per name; the checks are the same for each. Refused by a
 * bash it was not built for (its internals may differ) or that lacks
 * what a wait needs: then the loader sources the bash functions instead.
 */
static int loaded(void)
{
	const char *bin;

	if (strcmp(dist_version, DISTVERSION) != 0) {
		builtin_error("built for bash %s, not %s", DISTVERSION, dist_version);
		return 0;
	}
	signal_pending = (int (*)(int))dlsym(RTLD_DEFAULT, "signal_is_pending");
	if (signal_pending == NULL) {
		builtin_error("this bash has no signal_is_pending");
		return 0;
	}
	/* resolved once, by the loader: a later change of PATH or LOCKBOX does not matter */
	bin = get_string_value("_lockbox_bin");
	if (binary == NULL && bin != NULL && *bin != '\0')
		binary = strdup(bin);
	return 1;
}

/*
 * enable -d of any of them unloads the library: what this shell holds
 * is let go and its own EXIT trap put back (the handler may be gone
 * next), and sourcing the loader again loads it anew.
 */
static void unloaded(void)
{
	lb_sh_disarm();
	bind_variable("_lockbox_inshell", "0", 0);
	unbind_variable("_lockbox_guard");
}

#define DOC(text) { text, "See lockbox-shell(7).", NULL }

static char *lb__lockbox_builtin_doc[] = DOC("lockbox's EXIT trap handler: releases, then runs the script's own.");
static char *lb_acquire_mutex_doc[] = DOC("Take the exclusive lock on FILE (-s: a shared one); 75 when busy.");
static char *lb_release_mutex_doc[] = DOC("Drop FILE's lock, or with no FILE every mutex this shell holds.");
static char *lb_mutex_doc[] = DOC("mutex acquire|release [FILE]; any other form runs lockbox mutex.");
static char *lb_acquire_slot_doc[] = DOC("Take one of MAX slots on FILE; sets and exports LOCKBOX_SLOT.");
static char *lb_release_slot_doc[] = DOC("Drop FILE's slot, or with no FILE every slot this shell holds.");
static char *lb_waitfor_doc[] = DOC("Run COMMAND in this shell until it succeeds, every INTERVAL for TIMEOUT.");
static char *lb_trap_doc[] = DOC("bash's trap, with lockbox's release on EXIT kept before the script's own.");

#define BUILTIN(name, fn, flags, usage) \
	EXPORT int name##_builtin_load(char *n) \
	{ \
		(void)n; \
		return loaded(); \
	} \
	EXPORT void name##_builtin_unload(char *n) \
	{ \
		(void)n; \
		unloaded(); \
	} \
	EXPORT struct builtin name##_struct = { \
		#name, fn, BUILTIN_ENABLED | (flags), lb_##name##_doc, usage, 0 \
	}

BUILTIN(_lockbox_builtin, lockbox_builtin, 0, "_lockbox_builtin exit");
BUILTIN(acquire_mutex, acquire_mutex_builtin, 0, "acquire_mutex [-nqsvx] [-w DUR] [FILE]");
BUILTIN(release_mutex, release_mutex_builtin, 0, "release_mutex [FILE]");
BUILTIN(mutex, mutex_builtin, 0, "mutex acquire [-nqsvx] [-w DUR] [FILE] | mutex release [FILE]");
BUILTIN(acquire_slot, acquire_slot_builtin, 0, "acquire_slot [-nqv] [-w DUR] FILE MAX");
BUILTIN(release_slot, release_slot_builtin, 0, "release_slot [FILE]");
BUILTIN(waitfor, waitfor_builtin, 0,
    "waitfor [-qv] [--retry-on LIST] TIMEOUT INTERVAL [--] COMMAND [ARG...]");
/* trap stays the special builtin POSIX says it is */
BUILTIN(trap, trap_wrapper_builtin, SPECIAL_BUILTIN,
    "trap [-lp] [[arg] signal_spec ...]");

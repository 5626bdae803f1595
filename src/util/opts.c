/* Option parsing with the house's one-line usage errors, and the signals' names messages use. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "exitcodes.h"
#include "host.h"
#include "opts.h"
#include "parse.h"
#include "text.h"

void lb_getopt_reset(void)
{
	optind = 0;	/* GNU: start afresh, also for a second pass */
	opterr = 0;	/* our own messages */
}

/* The long option LONGOPTS has that WORD ("--wiat=5") is likely a typo of, or NULL. */
static const char *nearest_option(const char *word, const struct option *longopts)
{
	const char *names[64];
	char typed[64];
	size_t n = 0, len = strcspn(word + 2, "=");

	if (longopts == NULL || len >= sizeof typed)
		return NULL;
	memcpy(typed, word + 2, len);
	typed[len] = '\0';
	for (; longopts->name != NULL && n < sizeof names / sizeof names[0]; longopts++)
		names[n++] = longopts->name;
	return lb_nearest(typed, names, n);
}

/* An option getopt_long refused; WORD is the argument it was reading. */
static _Noreturn void bad_option(const char *word, int c, const struct option *longopts)
{
	int n = (int)strcspn(word, "=");
	const char *near;

	if (strncmp(word, "--", 2) != 0)
		lb_usage_error(c == ':' ? "option '-%c' needs an argument" :
		    "invalid option '-%c'", optopt);
	if (c == ':')
		lb_usage_error("option '%.*s' needs an argument", n, word);
	if (optopt != 0)	/* a known long option, given an argument */
		lb_usage_error("option '%.*s' takes no argument", n, word);
	near = nearest_option(word, longopts);
	if (near != NULL)
		lb_usage_error("invalid option '%.*s' (did you mean --%s?)", n, word, near);
	lb_usage_error("invalid option '%s'", word);
}

int lb_getopt(int argc, char **argv, const char *shortopts,
    const struct option *longopts)
{
	/* optind stays on a cluster such as -qz while getopt is inside it */
	int word = optind > 0 ? optind : 1;
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	if (c == '?' || c == ':')
		bad_option(argv[word], c, longopts);
	return c;
}

int lb_opt_exit_code(const char *arg)
{
	uint64_t v;

	if (lb_parse_uint(arg, 0, 255, &v) != 0)
		lb_usage_error("invalid exit code '%s': expected 0 to 255", arg);
	return (int)v;
}

int64_t lb_opt_duration(const char *arg, int64_t bare_unit)
{
	int64_t ns;

	if (lb_parse_duration(arg, bare_unit, &ns) != 0)
		lb_usage_error("invalid duration '%s': expected a number of %s, or with units (ms s sec m min h hr d) such as 90s, 10min or 1h30m",
		    arg, bare_unit == LB_NS_PER_MIN ? "minutes" : "seconds");
	return ns;
}

void lb_say_minutes(const char *what, const char *arg)
{
	/* 0 is 0 in any unit */
	if (lb_duration_is_bare(arg) && strspn(arg, "0.") < strlen(arg))
		lb_warnx("%s %s = %s minutes (a bare number here is minutes; %ss is seconds)",
		    what, arg, arg, arg);
}

unsigned lb_opt_mode(const char *arg)
{
	unsigned m;

	if (lb_parse_mode(arg, &m) != 0)
		lb_usage_error("invalid mode '%s': expected octal permissions such as 0664", arg);
	/* a lock file its owner cannot read and write is no lock file */
	if ((m & 0600) != 0600)
		lb_usage_error("invalid mode '%s': the owner needs read and write (0600)", arg);
	return m;
}

void lb_help(const char *usage, const char *rest)
{
	printf("%s\n%s", usage, rest);
	lb_close_stdout();
	lb_exit(LB_EXIT_OK);
}

void lb_version(void)
{
#ifdef HAVE_OFD_LOCKS
	printf("%s %s (open-file-description locks)\n", PACKAGE, VERSION);
#else
	printf("%s %s (classic POSIX locks)\n", PACKAGE, VERSION);
#endif
	lb_close_stdout();
	lb_exit(LB_EXIT_OK);
}

/* the signals a user may name */
static const struct {
	const char *name;
	int sig;
} names[] = {
	{ "ALRM", SIGALRM }, { "HUP", SIGHUP }, { "INT", SIGINT },
	{ "KILL", SIGKILL }, { "QUIT", SIGQUIT }, { "TERM", SIGTERM },
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
};

const char *lb_signal_name(int sig)
{
	/* a thread's own: the server's watcher names its signal too */
	static _Thread_local char num[16];
	size_t i;

	/* CONT goes before every signal an expiry or a loss sends, and is told */
	if (sig == SIGCONT)
		return "CONT";
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].sig == sig)
			return names[i].name;
	snprintf(num, sizeof num, "%d", sig);
	return num;
}

/* --on-loss: none, a signal's name (TERM, SIGTERM) or number. */
int lb_opt_signal(const char *arg)
{
	const char *n = strncmp(arg, "SIG", 3) == 0 ? arg + 3 : arg;
	uint64_t v;
	size_t i;

	if (strcmp(arg, "none") == 0)
		return 0;
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(n, names[i].name) == 0)
			return names[i].sig;
	if (lb_parse_uint(arg, 1, (uint64_t)SIGRTMAX, &v) != 0)
		lb_usage_error("invalid signal '%s': expected none, a name such as TERM, or a number",
		    arg);
	return (int)v;
}

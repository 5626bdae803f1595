/* waitfor: run COMMAND again every INTERVAL until it succeeds or TIMEOUT passes. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "applets.h"
#include "clock.h"
#include "err.h"
#include "exitcodes.h"
#include "opts.h"
#include "parse.h"
#include "supervise.h"
#include "waitfor.h"

#define USAGE \
	"usage: waitfor [-qvV] [--retry-on LIST] TIMEOUT INTERVAL [--] COMMAND [ARG...]"

#define HELP \
	"\n" \
	"Run COMMAND until it succeeds: again after INTERVAL each time it fails,\n" \
	"for at most TIMEOUT. When it gives up, exit with the last attempt's status.\n" \
	"A bare TIMEOUT is minutes (3 = 3 minutes), a bare INTERVAL seconds\n" \
	"(5 = 5 seconds): 'waitfor 3 5 CMD' tries every 5s for 3 minutes. A unit\n" \
	"says it outright: ms, s or sec, m or min, h or hr, d, and sums like 1m30s\n" \
	"(see Durations in lockbox(1)).\n" \
	"\n" \
	"  -q, --quiet         no message when giving up\n" \
	"      --retry-on LIST retry only on these exit statuses (e.g. 75 or 1,75);\n" \
	"                      stop at once on any other (without it: all but\n" \
	"                      125, 126 and 127)\n" \
	"  -v, --verbose       one line per attempt on stderr, and what a bare\n" \
	"                      TIMEOUT was taken for\n" \
	"  -h, --help          this help\n" \
	"  -V, --version       print lockbox's version and lock kind\n" \
	"\n" \
	"Exit: 0 when COMMAND succeeded, else its last status (75 passed through);\n" \
	"125 waitfor failed, 126 COMMAND not executable, 127 COMMAND not found,\n" \
	"128+n last attempt killed by signal n. Ended by INT or TERM, waitfor\n" \
	"dies of it too (when the attempt did). See waitfor(1).\n"

enum { OPT_RETRY_ON = 256 };

static const struct option longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "retry-on", required_argument, NULL, OPT_RETRY_ON },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/* "1,75": whole numbers 0 to 255, each through the one strict parser */
static void parse_list(struct waitfor_opts *o, const char *list)
{
	const char *p = list, *comma;
	char word[8];
	uint64_t v;
	size_t n;

	for (;;) {
		comma = strchr(p, ',');
		n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (n >= sizeof word)
			goto invalid;
		memcpy(word, p, n);
		word[n] = '\0';
		if (lb_parse_uint(word, 0, 255, &v) != 0)
			goto invalid;
		o->retry[v] = 1;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	o->listed = 1;
	return;
invalid:
	lb_usage_error("invalid --retry-on list '%s': expected statuses 0 to 255, comma-separated",
	    list);
}

static int64_t parse_time(const char *what, const char *s, int64_t bare_unit,
    const char *example)
{
	char max[32];
	int64_t ns;

	if (lb_parse_duration(s, bare_unit, &ns) == 0)
		return ns;
	if (errno == ERANGE)
		lb_usage_error("invalid %s '%s': longer than %s", what, s,
		    lb_format_duration(LB_DURATION_MAX, max));
	lb_usage_error("invalid %s '%s': expected a duration like %s", what, s, example);
}

/* Options stop at the first positional word: COMMAND's own are never read. */
char **waitfor_parse(struct waitfor_opts *o, int argc, char **argv)
{
	int c, i;

	memset(o, 0, sizeof *o);
	lb_getopt_reset();
	while ((c = lb_getopt(argc, argv, "+:Vhqv", longopts)) != -1) {
		switch (c) {
		case 'V':
			lb_version();
		case 'h':
			lb_help(USAGE, HELP);
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case OPT_RETRY_ON:
			parse_list(o, optarg);
			break;
		}
	}
	i = optind;
	if (i >= argc)
		lb_usage_error("missing TIMEOUT");
	o->timeout = parse_time("TIMEOUT", argv[i], LB_NS_PER_MIN, "3 (minutes), 90s or 1h30m");
	/* the seed's minutes are a surprise where seconds are the rule: -v says so */
	if (o->verbose)
		lb_say_minutes("TIMEOUT", argv[i]);
	i++;
	if (i >= argc)
		lb_usage_error("missing INTERVAL");
	o->interval = parse_time("INTERVAL", argv[i++], LB_NS_PER_S, "5 (seconds), 500ms or 1m");
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc)
		lb_usage_error("missing COMMAND");
	/*
	 * Without a list, every failure is retried but those that say the
	 * command cannot succeed: 125 (a usage error, or lockbox's own
	 * failure), 126 and 127 (not executable, not found). A list that
	 * names them retries them.
	 */
	if (!o->listed) {
		memset(o->retry + 1, 1, sizeof o->retry - 1);
		o->retry[LB_EXIT_FAIL] = o->retry[LB_EXIT_NOEXEC] = o->retry[LB_EXIT_NOTFOUND] = 0;
	}
	return argv + i;
}

const char *waitfor_not_retried(const struct waitfor_opts *o)
{
	return o->listed ? "not a --retry-on status" :
	    "125, 126 and 127 are retried only when --retry-on names them";
}

/* "exited 75" or "killed by signal 9 (status 137)" */
static const char *outcome(int wstatus, char buf[64])
{
	int status = lb_child_status(wstatus);

	if (WIFSIGNALED(wstatus))
		snprintf(buf, 64, "killed by signal %d (status %d)", WTERMSIG(wstatus), status);
	else
		snprintf(buf, 64, "exited %d", status);
	return buf;
}

static int give_up(const struct waitfor_opts *o, unsigned attempts, int wstatus)
{
	int status = lb_child_status(wstatus);
	char took[32], why[32] = "";

	if (!o->quiet) {
		if (WIFSIGNALED(wstatus))
			snprintf(why, sizeof why, " (killed by signal %d)", WTERMSIG(wstatus));
		lb_warnx("gave up after %s (%u attempt%s); last status %d%s",
		    lb_format_duration_ms(o->timeout, took), attempts,
		    attempts == 1 ? "" : "s", status, why);
	}
	return status;
}

/*
 * The loop. An attempt starts only while the deadline has not passed; the
 * sleep before it is cut to the time left, so the last one starts at the
 * deadline at the latest. An attempt running at the deadline is not killed.
 */
static int attempts(const struct waitfor_opts *o, char **command)
{
	static const int forwarded[] = { SIGINT, SIGTERM };
	int64_t deadline = lb_deadline_after(o->timeout), now, wake;
	struct lb_super child;
	char what[64], when[32];
	unsigned n;
	int wstatus, status, sig;

	/* the attempt shares our process group: a terminal's ^C reaches it directly */
	if (lb_super_init(&child, forwarded, 2, NULL, 0, LB_SUPER_NOT_KERNEL) != 0)
		lb_die(LB_EXIT_FAIL, "cannot set up signals");
	for (n = 1;; n++) {
		status = lb_super_run(&child, command, &wstatus);
		if (status != 0)
			return status;	/* not executed: no attempt to repeat */
		status = lb_child_status(wstatus);
		if (status == 0) {
			if (o->verbose)
				lb_warnx("attempt %u succeeded", n);
			return LB_EXIT_OK;
		}
		outcome(wstatus, what);
		sig = child.caught;
		if (sig != 0) {
			/* INT or TERM went to the attempt: the caller wants it over */
			if (o->verbose)
				lb_warnx("attempt %u %s; stopping on signal %d", n, what, sig);
			/* the attempt died of it: so do we, for the caller to see */
			if (WIFSIGNALED(wstatus))
				lb_reraise(sig);
			return status;
		}
		if (!o->retry[status]) {
			if (o->verbose)
				lb_warnx("attempt %u %s; %s, stopping", n, what, waitfor_not_retried(o));
			return status;
		}
		if (lb_remaining(deadline) == 0) {
			if (o->verbose)
				lb_warnx("attempt %u %s; out of time", n, what);
			return give_up(o, n, wstatus);
		}
		now = lb_now(CLOCK_MONOTONIC);
		wake = deadline - now < o->interval ? deadline : now + o->interval;
		if (o->verbose)
			lb_warnx("attempt %u %s; next in %s", n, what,
			    lb_format_duration(wake - now, when));
		sig = lb_super_sleep_until(&child, wake);
		if (sig != 0) {
			if (o->verbose)
				lb_warnx("signal %d while waiting; stopping", sig);
			lb_reraise(sig);
			return LB_EXIT_SIGNAL + sig;
		}
	}
}

int waitfor_main(int argc, char **argv)
{
	struct waitfor_opts o;
	char **command;

	command = waitfor_parse(&o, argc, argv);
	return attempts(&o, command);
}

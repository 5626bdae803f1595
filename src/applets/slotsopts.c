/* The command line slots and mutex share: their options, the rules of which go with which form, and MAX. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "opts.h"
#include "parse.h"
#include "pool.h"
#include "slots.h"
#include "slotsopts.h"

#define M(mode)		(1u << (mode))
#define ALL_MODES	(M(RUN) | M(LOOK) | M(HELD) | M(CREATE) | M(ACQUIRE) | M(RELEASE))

enum { OPT_JSON = 256, OPT_FD, OPT_PATH, OPT_ON_LOSS, OPT_MODE, OPT_RECORD_ARGS, OPT_REOPEN,
	OPT_VERBOSE, OPT_MAX_HOLD };

/* The options a mode may refuse or need. */
enum { HAS_WAIT = 1, HAS_JSON = 2, HAS_FD = 4, HAS_PATH = 8, HAS_MODE = 16, HAS_RECORD = 32,
	HAS_SHARED = 64, HAS_CLOSE = 128, HAS_NO_FORK = 256, HAS_UNLOCK = 512, HAS_REOPEN = 1024,
	HAS_MAX_HOLD = 2048 };

/* The applets a rule is for (0: both). */
enum { FOR_SLOTS = 1, FOR_MUTEX = 2 };
#define ONE_OF	2	/* a rule's need: at most one of its options */

/*
 * Which options go with which mode, checked in this order by check_mode;
 * the first rule broken is the usage error (its %s: the mode's word).
 * Options no rule names go with every mode.
 */
static const struct rule {
	unsigned modes;		/* the modes it applies to */
	unsigned opts;		/* the options it is about */
	int need;		/* 1: the mode needs one of them; 0: it takes none; ONE_OF: not two */
	unsigned applets;	/* FOR_: the applets it is for; 0: both */
	const char *msg;
} rules[] = {
	{ ALL_MODES, HAS_SHARED, 0, FOR_SLOTS,
	    "-s goes with mutex: a slot is never shared (see slots(1))" },
	{ M(ACQUIRE) | M(RELEASE), HAS_FD, 1, 0, "%s needs --fd FD" },
	{ M(ACQUIRE) | M(RELEASE), HAS_MODE, 0, 0, "--mode goes with COMMAND: the caller made FD's file" },
	{ M(RELEASE), HAS_RECORD, 0, 0, "--record-args goes with COMMAND or acquire" },
	{ M(RUN) | M(LOOK) | M(HELD) | M(CREATE), HAS_PATH, 0, 0,
	    "--path goes with acquire or release --fd" },
	{ ALL_MODES & ~M(ACQUIRE), HAS_REOPEN, 0, 0, "--reopen goes with acquire --path" },
	{ ALL_MODES & ~M(RELEASE), HAS_UNLOCK, 0, 0, "-u goes with a file descriptor: mutex -u FD" },
	{ ALL_MODES & ~M(RUN), HAS_CLOSE | HAS_NO_FORK, 0, 0, "-o and -F go with COMMAND" },
	/* a hold is a command's: acquire --fd leaves the lock to its caller's shell */
	{ ALL_MODES & ~M(RUN), HAS_MAX_HOLD, 0, 0, "--max-hold goes with COMMAND" },
	/* --fd FD COMMAND: the lock is FD's, which no watcher of ours could give back */
	{ M(RUN), HAS_FD | HAS_MAX_HOLD, ONE_OF, FOR_MUTEX,
	    "--max-hold goes with a LOCKFILE, not with --fd FD COMMAND" },
	/* -o forks to keep the lock from COMMAND; -F says never fork */
	{ M(RUN), HAS_CLOSE | HAS_NO_FORK, ONE_OF, 0, "-o and -F do not go together" },
	{ M(LOOK) | M(HELD) | M(CREATE) | M(RELEASE), HAS_SHARED, 0, 0,
	    "-s goes with COMMAND or acquire" },
	{ M(LOOK) | M(HELD), HAS_MODE, 0, 0, "--mode does not go with check, list or held" },
	{ M(LOOK) | M(HELD), HAS_RECORD, 0, 0, "--record-args goes with COMMAND or acquire" },
	{ M(HELD), HAS_JSON, 0, 0, "--json goes with check or list; held says it with its status" },
	{ M(CREATE), HAS_JSON | HAS_RECORD | HAS_FD | HAS_WAIT, 0, 0, "create takes no option but --mode" },
	{ M(RUN), HAS_JSON, 0, 0, "--json goes with check or list" },
	/* util-linux flock's --fd FD COMMAND is mutex's (fd_command); a pool's slot goes by acquire */
	{ M(RUN), HAS_FD, 0, FOR_SLOTS,
	    "--fd FD with COMMAND is not supported: take a slot on FD with 'slots acquire --fd FD MAX' and run COMMAND after it, or give the file: slots LOCKFILE MAX COMMAND" },
};

static const struct option longopts[] = {
	{ "close", no_argument, NULL, 'o' },
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "exclusive", no_argument, NULL, 'x' },
	{ "fd", required_argument, NULL, OPT_FD },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "max-hold", required_argument, NULL, OPT_MAX_HOLD },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "nb", no_argument, NULL, 'n' },
	{ "no-fork", no_argument, NULL, 'F' },
	{ "nonblock", no_argument, NULL, 'n' },
	{ "nonblocking", no_argument, NULL, 'n' },
	{ "path", required_argument, NULL, OPT_PATH },
	{ "on-loss", required_argument, NULL, OPT_ON_LOSS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "record-args", no_argument, NULL, OPT_RECORD_ARGS },
	{ "reopen", no_argument, NULL, OPT_REOPEN },
	{ "shared", no_argument, NULL, 's' },
	{ "timeout", required_argument, NULL, 'w' },
	{ "unlock", no_argument, NULL, 'u' },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "version", no_argument, NULL, 'V' },
	{ "wait", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 }
};

/*
 * -w DUR, or "inf" (flock(1) and chpst wait for ever by default; lockbox
 * does not wait unless told): a wait with no end a run will see.
 */
static int64_t opt_wait(const char *arg)
{
	if (strcmp(arg, "inf") == 0 || strcmp(arg, "infinity") == 0)
		return LB_DURATION_MAX;
	return lb_opt_duration(arg, LB_NS_PER_S);
}

/* Options stop at the first positional word: COMMAND's own are never read. */
int poolcmd_parse_opts(const struct poolcmd *cmd, struct poolcmd_opts *o, int argc,
    char **argv)
{
	uint64_t v;
	int c;

	lb_getopt_reset();
	for (;;) {
		/* flock(1)'s --fd FD -c COMMAND: -c, where a word of options goes, starts COMMAND */
		c = optind > 0 ? optind : 1;
		if (o->fd >= 0 && cmd->fixed_max == 1 && c < argc &&
		    (strcmp(argv[c], "-c") == 0 || strcmp(argv[c], "--command") == 0)) {
			optind = c;
			break;
		}
		c = lb_getopt(argc, argv, "+:E:FVehnoqsuvw:x", longopts);
		if (c == -1)
			break;
		switch (c) {
		case 'E':
			o->busy_status = lb_opt_exit_code(optarg);
			break;
		case 'F':
			o->no_fork = 1;
			break;
		case 'V':
			lb_version();
		case 'e':
		case 'x':
			o->shared = 0;
			break;
		case 'h':
			lb_help(cmd->usage, cmd->help);
		case 'n':
			o->wait = -1;	/* the last of -n and -w counts, as in flock(1) */
			break;
		case 'o':
			o->close = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 's':
			o->shared = 1;
			break;
		case 'u':
			o->unlock = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'w':
			o->wait = opt_wait(optarg);
			break;
		case OPT_FD:
			if (lb_parse_uint(optarg, 0, INT_MAX, &v) != 0)
				lb_usage_error("invalid file descriptor '%s'", optarg);
			o->fd = (int)v;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_MAX_HOLD:
			o->max_hold = lb_opt_duration(optarg, LB_NS_PER_S);
			if (o->max_hold == 0)
				lb_usage_error("invalid maximum hold '%s': expected more than 0", optarg);
			break;
		case OPT_MODE:
			o->mode = lb_opt_mode(optarg);
			break;
		case OPT_PATH:
			o->path = optarg;
			break;
		case OPT_ON_LOSS:
			o->on_loss = lb_opt_signal(optarg);
			break;
		case OPT_RECORD_ARGS:
			o->record_args = 1;
			break;
		case OPT_REOPEN:
			o->reopen = 1;
			break;
		case OPT_VERBOSE:
			/* flock(1)'s spelling: its lines, where it prints them; slots has -v's */
			if (cmd->fixed_max == 1)
				o->flock_verbose = 1;
			else
				o->verbose = 1;
			break;
		}
	}
	return optind;
}

void poolcmd_check_mode(const struct poolcmd *cmd, const struct poolcmd_opts *o, enum poolcmd_mode mode,
    const char *word)
{
	unsigned given = (o->wait >= 0 ? HAS_WAIT : 0) | (o->json ? HAS_JSON : 0) |
	    (o->fd >= 0 ? HAS_FD : 0) | (o->path != NULL ? HAS_PATH : 0) |
	    (o->mode != 0 ? HAS_MODE : 0) | (o->record_args ? HAS_RECORD : 0) |
	    (o->shared ? HAS_SHARED : 0) | (o->close ? HAS_CLOSE : 0) |
	    (o->no_fork ? HAS_NO_FORK : 0) | (o->unlock ? HAS_UNLOCK : 0) |
	    (o->reopen ? HAS_REOPEN : 0) | (o->max_hold > 0 ? HAS_MAX_HOLD : 0);
	unsigned applet = cmd->fixed_max == 1 ? FOR_MUTEX : FOR_SLOTS;
	size_t i;

	for (i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		unsigned has = given & rules[i].opts;

		if ((rules[i].modes & M(mode)) == 0 ||
		    (rules[i].applets != 0 && (rules[i].applets & applet) == 0))
			continue;
		if (rules[i].need == ONE_OF ? (has & (has - 1)) != 0 : (has != 0) != rules[i].need)
			lb_usage_error(rules[i].msg, word);
	}
}

/*
 * WORD, found after LOCKFILE, is one of the options: parsing stopped at
 * LOCKFILE (so that COMMAND's options stay COMMAND's), and the user meant
 * it for lockbox. Say where it goes rather than run a command named -w.
 */
void poolcmd_misplaced(const char *word)
{
	const struct option *lo;
	size_t n;

	if (word == NULL || word[0] != '-' || word[1] == '\0' || strcmp(word, "--") == 0)
		return;
	if (word[1] != '-') {
		if (strchr("EFVehnoqsuvwx", word[1]) == NULL)
			return;
	} else {
		n = strcspn(word + 2, "=");
		for (lo = longopts; lo->name != NULL; lo++)
			if (strlen(lo->name) == n && strncmp(lo->name, word + 2, n) == 0)
				break;
		if (lo->name == NULL)
			return;
	}
	lb_usage_error("option '%s' after LOCKFILE: options go before LOCKFILE", word);
}

/* The processors this process may run on, as nproc(1) counts them. */
static unsigned processors(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/*
 * MAX relative to the processors, as GNU parallel's sem counts jobs:
 * +N and -N processors more or fewer (at least 1), P% of them (at least
 * 1, rounded down). 0, or -1 when S is none of these forms.
 */
static int relative_max(const char *s, uint64_t *out)
{
	char num[24];
	size_t n = strlen(s);
	uint64_t v, cpus;

	if (n < 2 || n >= sizeof num || (s[0] != '+' && s[0] != '-' && s[n - 1] != '%'))
		return -1;
	if (s[n - 1] == '%')
		snprintf(num, sizeof num, "%.*s", (int)(n - 1), s);
	else
		snprintf(num, sizeof num, "%s", s + 1);
	if (lb_parse_uint(num, 0, 100 * (uint64_t)LB_POOL_MAX_SLOTS, &v) != 0)
		return -1;
	cpus = processors();
	if (s[n - 1] == '%')
		v = cpus * v / 100;
	else if (s[0] == '+')
		v = cpus + v;
	else
		v = cpus > v ? cpus - v : 0;
	*out = v > 0 ? v : 1;
	return 0;
}

unsigned poolcmd_parse_max(const struct poolcmd *cmd, const char *s)
{
	uint64_t v;

	if (cmd->fixed_max)
		return (unsigned)cmd->fixed_max;
	if (s == NULL)
		lb_usage_error("missing MAX");
	poolcmd_misplaced(s);
	if (relative_max(s, &v) == 0) {
		if (v > LB_POOL_MAX_SLOTS)
			lb_usage_error("invalid MAX '%s': %u processors make it %llu, more than %d",
			    s, processors(), (unsigned long long)v, LB_POOL_MAX_SLOTS);
		return (unsigned)v;
	}
	if (lb_parse_uint(s, 1, LB_POOL_MAX_SLOTS, &v) != 0)
		lb_usage_error("invalid MAX '%s': expected a whole number from 1 to %d, or +N, -N or P%% of the processors",
		    s, LB_POOL_MAX_SLOTS);
	return (unsigned)v;
}

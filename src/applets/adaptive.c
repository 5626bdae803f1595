/* adaptive: run COMMAND at most once per IFELAPSED, expiring a run older than EXPIREAFTER; options, usage, the decision flow. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "adaptive.h"
#include "applets.h"
#include "atom.h"
#include "clock.h"
#include "err.h"
#include "exec.h"
#include "exitcodes.h"
#include "expire.h"
#include "holders.h"
#include "joblog.h"
#include "opts.h"
#include "parse.h"
#include "pool.h"
#include "runstate.h"
#include "statedir.h"
#include "supervise.h"

#define USAGE \
	"usage: adaptive [-qv] [-e IFELAPSED] [-x EXPIREAFTER|auto[:BOUND]] [-g GRACE]\n" \
	"                [-d DIR] [--log FILE|--syslog] NAME [--] COMMAND [ARG...]\n" \
	"       adaptive [-d DIR] [--json] status [NAME...]"

#define HELP \
	"\n" \
	"Run COMMAND for the atom NAME unless its last completed run ended less\n" \
	"than IFELAPSED ago (too soon: 75) or a run goes on (busy: 75); a run older\n" \
	"than EXPIREAFTER is expired (CONT, INT, TERM, KILL to its job, GRACE\n" \
	"apart) and this one takes over. 'status' shows the atom's record.\n" \
	"\n" \
	"  -e, --if-elapsed DUR    least time since the last completed run's end\n" \
	"                          (bare number: minutes, 50 = 50 minutes; default 1m)\n" \
	"  -x, --expire-after DUR  age at which a run is expired (bare number:\n" \
	"                          minutes, 90 = 90 minutes; default 2h), or\n" \
	"                          auto[:BOUND]: learned, at most BOUND\n" \
	"  -g, --grace DUR         wait after each signal (default 5s)\n" \
	"  -d, --dir DIR           state directory, or postgresql://HOST/DB\n" \
	"  -q, --quiet             no message when skipping; -v, --verbose: narrate\n" \
	"  -E, --conflict-exit-code CODE  CODE instead of 75 when skipping\n" \
	"      --log FILE          a line per event, appended to FILE; --syslog\n" \
	"      --json, --on-loss SIG, -h, --help: see adaptive(1)\n" \
	"  -V, --version           print lockbox's version and lock kind\n" \
	"Exit: COMMAND's status (128+n: signal n), 75 skipped, 125 lockbox failed,\n" \
	"126/127 COMMAND not executable/found. See adaptive(1).\n"

#define DEFAULT_IFELAPSED	(1 * LB_NS_PER_MIN)
#define DEFAULT_EXPIREAFTER	(120 * LB_NS_PER_MIN)
#define DEFAULT_GRACE		(5 * LB_NS_PER_S)

enum { OPT_JSON = 256, OPT_LOG, OPT_ON_LOSS, OPT_SYSLOG };

static const struct option longopts[] = {
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "dir", required_argument, NULL, 'd' },
	{ "expire-after", required_argument, NULL, 'x' },
	{ "grace", required_argument, NULL, 'g' },
	{ "help", no_argument, NULL, 'h' },
	{ "if-elapsed", required_argument, NULL, 'e' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "on-loss", required_argument, NULL, OPT_ON_LOSS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "syslog", no_argument, NULL, OPT_SYSLOG },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/* -x: a duration, or auto[:BOUND] (learned; bound CFEngine's default unless given) */
static void expire_after(struct lb_run_opts *o, const char *arg)
{
	o->expire_auto = strncmp(arg, "auto", 4) == 0 && (arg[4] == '\0' || arg[4] == ':');
	if (!o->expire_auto) {
		o->expireafter = lb_opt_duration(arg, LB_NS_PER_MIN);
		return;
	}
	o->expireafter = arg[4] == ':' ? lb_opt_duration(arg + 5, LB_NS_PER_MIN) :
	    DEFAULT_EXPIREAFTER;
	if (o->expireafter <= 0)
		lb_usage_error("invalid bound '%s': a learned EXPIREAFTER needs one above 0",
		    arg + 5);
}

/* Options stop at the first positional word: COMMAND's own are never read. */
static int parse_opts(struct lb_run_opts *o, int argc, char **argv)
{
	const char *e = NULL, *x = NULL;
	int c;

	lb_getopt_reset();
	while ((c = lb_getopt(argc, argv, "+:E:Vd:e:g:hqvx:", longopts)) != -1) {
		switch (c) {
		case 'V':
			lb_version();
		case 'E':
			o->busy_status = lb_opt_exit_code(optarg);
			break;
		case 'd':
			if (*optarg == '\0')
				lb_usage_error("invalid directory ''");
			o->dir = optarg;
			break;
		case 'e':
			o->ifelapsed = lb_opt_duration(optarg, LB_NS_PER_MIN);
			e = optarg;
			break;
		case 'g':
			o->grace = lb_opt_duration(optarg, LB_NS_PER_S);
			break;
		case 'h':
			lb_help(USAGE, HELP);
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'x':
			expire_after(o, optarg);
			x = optarg;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_LOG:
			if (*optarg == '\0')
				lb_usage_error("invalid log file ''");
			o->log = optarg;
			break;
		case OPT_ON_LOSS:
			o->on_loss = lb_opt_signal(optarg);
			break;
		case OPT_SYSLOG:
			o->use_syslog = 1;
			break;
		}
	}
	if (o->log != NULL && o->use_syslog)
		lb_usage_error("--log and --syslog do not go together");
	/* minutes, as CFEngine has them, where seconds are the rule elsewhere: -v says so */
	if (o->verbose && e != NULL)
		lb_say_minutes("-e", e);
	if (o->verbose && x != NULL && !o->expire_auto)
		lb_say_minutes("-x", x);
	else if (o->verbose && x != NULL && x[4] == ':')
		lb_say_minutes("-x auto: BOUND", x + 5);
	return optind;
}

/* ---- skipping ---- */

static int too_soon(struct lb_runctx *r)
{
	char buf[32];

	lb_format_duration_up(r->wait_left, buf);
	lb_joblog(LOG_INFO, r->name, "skipped-too-soon next=%s", buf);
	if (!r->o->quiet)
		lb_warnx("%s: too soon; next run allowed in %s", r->name, buf);
	return r->o->busy_status;
}

static int busy(struct lb_runctx *r, const struct lb_holder *h)
{
	char age[32];

	if (h == NULL || !h->known) {
		lb_joblog(LOG_INFO, r->name, "skipped-busy pid=?");
		if (!r->o->quiet)
			poolcmd_report_running(r->name, NULL, NULL);
		return r->o->busy_status;
	}
	lb_format_duration(lb_holder_age(&r->last, &r->last_now, &h->who), age);
	lb_joblog(LOG_INFO, r->name, "skipped-busy pid=%d age=%s", (int)h->who.pid, age);
	if (!r->o->quiet)
		poolcmd_report_running(r->name, h, age);
	return r->o->busy_status;
}

static int foreign(struct lb_runctx *r)
{
	lb_warnx("%s: %s belongs to the atom '%s'; refusing to share it", r->name,
	    r->path, r->foreign_name);
	return LB_EXIT_FAIL;
}

/*
 * The paper's starvation: the run just expired was the LB_STARVING-th or
 * later in a row, so the job may never finish. Told on standard error and
 * in the log at error level whatever -q says: someone has to act.
 */
static void starving(struct lb_runctx *r)
{
	char x[32], y[32], b[32], raised[64] = "";
	int64_t longest = lb_atom_longest_completed(&r->last);

	lb_format_duration(r->expire_in_force, x);
	if (longest >= 0)
		lb_format_duration(longest, y);
	else
		snprintf(y, sizeof y, "none completed");
	if (r->o->expire_auto)
		snprintf(raised, sizeof raised, " (auto: raised, at most %s)",
		    lb_format_duration(r->o->expireafter, b));
	lb_joblog(LOG_ERR, r->name,
	    "starving: the last %u runs were killed before they finished; ExpireAfter %s, longest run %s%s",
	    r->streak, x, y, raised);
	lb_warnx("%s: starving: the last %u runs were killed before they finished; ExpireAfter %s, longest run %s%s",
	    r->name, r->streak, x, y, raised);
}

/* ---- supervision ---- */

static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 };

/*
 * The run's session on the server ended (an expiry elsewhere, an
 * administrator, a restart, a partition): the lock is free for another
 * run, so this one must stop. CONT and the --on-loss signal to the job;
 * the deadline for KILL, or LB_NO_DEADLINE when there is none.
 */
static int64_t lock_lost(struct lb_runctx *r, const struct lb_super *job)
{
	r->lost = 1;
	lb_warnx("%s: the run's session on the server ended; its lock is free%s%s", r->name,
	    r->o->on_loss ? ": sending SIG" : "", r->o->on_loss ? lb_signal_name(r->o->on_loss) : "");
	lb_joblog(LOG_WARNING, r->name, "lock-lost pid=%d signal=%s", (int)job->pid,
	    r->o->on_loss ? lb_signal_name(r->o->on_loss) : "none");
	if (r->o->on_loss == 0)
		return LB_NO_DEADLINE;
	lb_super_signal(job, SIGCONT);
	lb_super_signal(job, r->o->on_loss);
	return r->o->on_loss == SIGKILL ? LB_NO_DEADLINE : lb_deadline_after(r->o->grace);
}


/* A start that ran nothing is not a run: neither IFELAPSED nor the history sees it. */
static void unstart(struct lb_runctx *r)
{
	if (lb_run_unstart(r) < 0)
		lb_warnx("%s: cannot undo the start", r->name);
}
/* Run COMMAND through the one child runner, and record how it ended. */
static int run_command(struct lb_runctx *r, char **command)
{
	/* a server's lock: the pool has the kernel send SIGIO when its session ends */
	static const int own[] = { SIGIO };
	struct lb_super job;
	char cmd[LB_COMMAND_MAX * 4], buf[32];
	int64_t d, kill_at = LB_NO_DEADLINE;
	int ws = 0, ev;
	pid_t pid;

	/* the command leads a group of its own, which gets what we are sent */
	if (lb_super_init(&job, forwarded, sizeof forwarded / sizeof forwarded[0], own,
	    lb_pool_caps(r->pool) & LB_POOL_LOSS ? 1 : 0, LB_SUPER_GROUP) != 0) {
		lb_warn("cannot set up signals");
		return LB_EXIT_FAIL;
	}
	/* the command inherits the lock's descriptor, so the lock outlives us */
	if (lb_pool_keep_on_exec(r->pool, NULL) != 0) {
		unstart(r);
		return LB_EXIT_FAIL;
	}
	if (lb_super_start(&job, command) != 0) {
		if (job.exec_errno == 0) {
			lb_warn("fork");
			unstart(r);
			return LB_EXIT_FAIL;
		}
		lb_warn("cannot run '%s'", command[0]);
		unstart(r);
		r->status = lb_child_exec_status(job.exec_errno);
		lb_joblog(LOG_ERR, r->name, "not-started status=%d error=%s", r->status,
		    strerror(job.exec_errno));
		return r->status;
	}
	pid = r->child = job.pid;
	if (lb_run_started(r) < 0)
		lb_warnx("%s: cannot record the command's PID", r->name);
	lb_joblog_escape(r->who.command, 1, cmd, sizeof cmd);
	lb_joblog(LOG_INFO, r->name, "ran pid=%d command=%s", (int)pid, cmd);
	if (r->o->verbose)
		lb_warnx("%s: running %s (PID %d)", r->name, r->who.command, (int)pid);
	while ((ev = lb_super_wait(&job, kill_at, &ws)) != 0) {
		if (ev < 0 && errno == EAGAIN) {
			/* the job outlived GRACE after the loss: it must not run on unlocked */
			lb_joblog(LOG_WARNING, r->name, "lock-lost pid=%d signal=KILL", (int)pid);
			lb_super_signal(&job, SIGKILL);
			kill_at = LB_NO_DEADLINE;
		} else if (ev < 0) {
			lb_die(LB_EXIT_FAIL, "waiting for '%s'", command[0]);
		} else if (ev == SIGIO && !r->lost) {
			kill_at = lock_lost(r, &job);
		}
	}
	r->signalled = job.caught;
	r->killed = WIFSIGNALED(ws);
	r->status = r->killed ? LB_EXIT_SIGNAL + WTERMSIG(ws) : WEXITSTATUS(ws);
	if (lb_run_end(r) < 0)
		lb_warnx("%s: cannot record the end of the run", r->name);
	d = lb_now(CLOCK_BOOTTIME) - r->local_start;
	lb_joblog(LOG_INFO, r->name, "finished status=%d duration=%lld.%03llds", r->status,
	    (long long)(d / LB_NS_PER_S), (long long)(d % LB_NS_PER_S / LB_NS_PER_MS));
	if (r->o->verbose)
		lb_warnx("%s: finished with status %d after %s", r->name, r->status,
		    lb_format_duration(d, buf));
	return r->status;
}

/* Take the atom's lock: 1 when it is ours, else 0 and *status says why not. */
static int take(struct lb_runctx *r, int *status)
{
	struct lb_holders h = { NULL, 0 };
	struct lb_holder holder;
	unsigned slot;
	int got = lb_pool_acquire(r->pool, 1, LB_NO_WAIT, &r->who, &slot, &h), x;
	int processes = (lb_pool_caps(r->pool) & LB_POOL_PROCESSES) != 0;

	/* a skip's status may be 0 or 1 (-E), so it is never the return value */
	*status = LB_EXIT_FAIL;
	if (got == 0) {
		got = 0;
		/* the paper's order: too soon is told before busy */
		if (lb_run_peek(r) < 0)
			*status = LB_EXIT_FAIL;
		else if (r->foreign)
			*status = foreign(r);
		else if (r->too_soon)
			*status = too_soon(r);
		else if (h.n == 0 || !h.v[0].known)
			*status = busy(r, h.n ? &h.v[0] : NULL);
		else if (holder = h.v[0], r->expire_in_force = lb_run_expireafter(r),
		    (processes && !lb_ident_local(&holder.who)) ||
		    lb_holder_age(&r->last, &r->last_now, &holder.who) < r->expire_in_force)
			*status = busy(r, &holder);
		else if ((x = lb_expire(r, &holder)) == 1)
			got = 1;
		else
			*status = x == 0 ? busy(r, &holder) : x;
	}
	lb_holders_free(&h);
	return got == 1;
}

static int run_atom(struct lb_run_opts *o, const char *name, char **command)
{
	struct lb_pool_opts popts = { .mode = 0 };
	struct lb_runctx r;
	char *dir;
	int status = LB_EXIT_FAIL, dirfd, shared = 0, in_fs;

	memset(&r, 0, sizeof r);
	r.o = o;
	r.name = name;
	dir = lb_state_dir(o->dir);
	in_fs = (lb_pool_target_caps(dir) & LB_POOL_IN_FS) != 0;
	if (in_fs && lb_make_dirs(dir, geteuid() == 0 ? 0755 : 0700) != 0) {
		free(dir);
		return LB_EXIT_FAIL;
	}
	r.path = lb_atom_path(dir, name);
	/* a server keeps its own state: there is no directory to trust */
	dirfd = in_fs ? lb_state_dir_open(dir, &shared) : -1;
	free(dir);
	if (in_fs && dirfd < 0) {
		free((char *)r.path);
		return LB_EXIT_FAIL;
	}
	if (lb_joblog_open(o->log, o->use_syslog) != 0) {
		if (dirfd >= 0)
			close(dirfd);
		free((char *)r.path);
		return LB_EXIT_FAIL;
	}
	/* a server tells this supervisor (SIGIO, see run_command) when the run's session ends */
	popts.on_loss = SIGIO;
	popts.loss_to_caller = 1;
	r.pool = lb_pool_open(r.path, LB_POOL_WRITE, &popts);
	if (r.pool == NULL || (shared && lb_state_file_check(r.pool, r.path, dirfd, 0) != 0)) {
		if (r.pool != NULL)
			lb_pool_close(r.pool);
		lb_joblog_close();
		if (dirfd >= 0)
			close(dirfd);
		free((char *)r.path);
		return LB_EXIT_FAIL;
	}
	if (dirfd >= 0)
		close(dirfd);
	lb_ident_fill(&r.who, getpid(), command, 1);
	/*
	 * Lock first, then decide under the lock: two starts that both saw
	 * "not too soon" cannot both run, because the second finds the
	 * first's start once it holds the lock.
	 */
	if (take(&r, &status)) {
		if (lb_run_begin(&r) < 0) {
			status = LB_EXIT_FAIL;
		} else if (r.foreign || r.too_soon) {
			lb_pool_release(r.pool, getpid());
			status = r.foreign ? foreign(&r) : too_soon(&r);
		} else {
			if (r.expired && r.streak >= LB_STARVING)
				starving(&r);
			status = run_command(&r, command);
		}
	}
	lb_pool_close(r.pool);
	lb_joblog_close();
	free((char *)r.path);
	/* signalled, and the command died of it: so do we, for the caller to see */
	if (r.signalled != 0 && r.killed)
		lb_reraise(r.signalled);
	return status;
}

int adaptive_main(int argc, char **argv)
{
	struct lb_run_opts o = {
		.ifelapsed = DEFAULT_IFELAPSED,
		.expireafter = DEFAULT_EXPIREAFTER,
		.grace = DEFAULT_GRACE,
		.busy_status = LB_EXIT_BUSY,
		.on_loss = SIGTERM,
	};
	int i = parse_opts(&o, argc, argv);
	char **command, *dir;

	if (i >= argc)
		lb_usage_error("missing NAME");
	if (strcmp(argv[i], "status") == 0) {
		/* as everywhere, options come first: "status --json" names no atom */
		if (argv[i + 1] != NULL && strcmp(argv[i + 1], "--") == 0)
			i++;
		else if (argv[i + 1] != NULL && argv[i + 1][0] == '-')
			lb_usage_error("'%s' after status: options go before status",
			    argv[i + 1]);
		dir = lb_state_dir(o.dir);
		if (o.log != NULL || o.use_syslog)
			lb_usage_error("--log and --syslog go with COMMAND");
		return adaptive_status(dir, o.json, argc - i - 1, argv + i + 1);
	}
	if (o.json)
		lb_usage_error("--json goes with status");
	lb_atom_check_name(argv[i]);
	command = argv + i + 1;
	if (command[0] != NULL && strcmp(command[0], "--") == 0)
		command++;
	/* "adaptive -e 50 /usr/bin/job": the job was taken for NAME; say so */
	if (command[0] == NULL)
		lb_usage_error("missing COMMAND: '%s' was taken for NAME, which comes first (adaptive NAME COMMAND)",
		    argv[i]);
	return run_atom(&o, argv[i], command);
}


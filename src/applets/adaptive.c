/* adaptive: run COMMAND at most once per IFELAPSED, expiring a run older than EXPIREAFTER. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "applets.h"
#include "atom.h"
#include "child.h"
#include "clock.h"
#include "err.h"
#include "exec.h"
#include "exitcodes.h"
#include "job.h"
#include "joblog.h"
#include "json.h"
#include "opts.h"
#include "parse.h"
#include "pool.h"
#include "text.h"

#define USAGE \
	"usage: adaptive [-qv] [-e IFELAPSED] [-x EXPIREAFTER] [-g GRACE] [-d DIR] [-E CODE]\n" \
	"                [--on-loss SIG] [--log FILE | --syslog] NAME [--] COMMAND [ARG...]\n" \
	"       adaptive [-d DIR] [--json] status [NAME...]"

#define HELP \
	"\n" \
	"Run COMMAND for the atom NAME unless its last run ended less than\n" \
	"IFELAPSED ago (too soon: 75) or it is running (busy: 75). A run older\n" \
	"than EXPIREAFTER is expired: its whole job gets CONT, INT, TERM, KILL,\n" \
	"GRACE apart, and this run takes over. adaptive stays as a small\n" \
	"supervisor, passes signals on and records how the run ended; 'status'\n" \
	"shows the record.\n" \
	"\n" \
	"  -e, --if-elapsed DUR   least time from a run's end to the next start\n" \
	"                         (bare number: minutes; default 1m)\n" \
	"  -x, --expire-after DUR age at which a run is expired (bare number:\n" \
	"                         minutes; default 2h)\n" \
	"  -g, --grace DUR        wait after each signal (bare number: seconds;\n" \
	"                         default 5s)\n" \
	"  -d, --dir DIR          state directory (default $LOCKBOX_DIR, else\n" \
	"                         /var/lib/lockbox for root, else\n" \
	"                         ${XDG_STATE_HOME:-~/.local/state}/lockbox), or a\n" \
	"                         PostgreSQL database, postgresql://HOST/DB, that\n" \
	"                         keeps the state on the server's clock\n" \
	"  -E, --conflict-exit-code CODE\n" \
	"                         exit with CODE instead of 75 when skipping\n" \
	"      --on-loss SIG      postgresql:// state: signal COMMAND with SIG (default\n" \
	"                         TERM; none: nothing) when the run's session ends\n" \
	"  -q, --quiet            no message when skipping\n" \
	"  -v, --verbose          narrate on standard error\n" \
	"      --log FILE         append one line per event to FILE\n" \
	"      --syslog           log events to syslog(3) instead\n" \
	"      --json             status as JSON\n" \
	"  -h, --help             this help\n" \
	"\n" \
	"Exit: COMMAND's status (128+n when killed by signal n), 75 skipped,\n" \
	"125 lockbox failed, 126 COMMAND not executable, 127 COMMAND not found.\n" \
	"See adaptive(1).\n"

#define DEFAULT_IFELAPSED	(1 * LB_NS_PER_MIN)
#define DEFAULT_EXPIREAFTER	(120 * LB_NS_PER_MIN)
#define DEFAULT_GRACE		(5 * LB_NS_PER_S)
#define SLOT			1

struct opts {
	int64_t ifelapsed, expireafter, grace;
	const char *dir;
	const char *log;
	int busy_status;
	int on_loss;			/* 0: none */
	int quiet, verbose, json, use_syslog;
};

/* One run's context, shared with the atom-area callbacks. */
struct run {
	const struct opts *o;
	const char *name;
	const char *path;		/* the state's lock file, or its server's URL */
	int remote;			/* the state and the lock are a server's */
	struct lb_pool *pool;
	struct lb_ident who;		/* this supervisor, as the lock records it */
	int warned;			/* corrupt state reported once */
	int foreign;			/* the state belongs to another NAME */
	char foreign_name[LB_ATOM_NAME_MAX + 1];
	/* results */
	int too_soon;
	int64_t wait_left;		/* until the next run is allowed */
	struct lb_atom last;		/* the state as last read */
	struct lb_atom_clock last_now;	/* when it was read, on the state's clocks */
	struct lb_atom before;		/* the state before this run's start */
	/* this run */
	int expired;			/* the lock was taken over from an expired run */
	int64_t start_wall;		/* on the state's clock */
	int64_t local_start;		/* on this host's boot clock, for the log */
	pid_t child;
	int status;
	int signalled;			/* the last signal passed on to the command */
	int lost;			/* the server ended the run's session */
	int killed;			/* the command died of a signal */
};

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
	{ NULL, 0, NULL, 0 }
};

/* Options stop at the first positional word: COMMAND's own are never read. */
static int parse_opts(struct opts *o, int argc, char **argv)
{
	int c;

	lb_getopt_reset();
	while ((c = lb_getopt(argc, argv, "+:E:d:e:g:hqvx:", longopts)) != -1) {
		switch (c) {
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
			o->expireafter = lb_opt_duration(optarg, LB_NS_PER_MIN);
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
	return optind;
}

/* ---- where state lives ---- */

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *s = malloc(n);

	if (s == NULL)
		lb_die(LB_EXIT_FAIL, "out of memory");
	snprintf(s, n, "%s%s%s", a, *a && a[strlen(a) - 1] == '/' ? "" : "/", b);
	return s;
}

/* A database's URL as it is: a '/' added would change the database's name. */
static char *dir_or_url(const char *dir)
{
	char *s;

	if (!lb_pool_is_pg(dir))
		return join(dir, "");
	/* NAME is the lock: the URL names only the database */
	if (strstr(dir, "?lock=") != NULL || strstr(dir, "&lock=") != NULL)
		lb_usage_error("invalid state database '%s': lock= comes from NAME", dir);
	s = strdup(dir);
	if (s == NULL)
		lb_die(LB_EXIT_FAIL, "out of memory");
	return s;
}

/* $LOCKBOX_DIR, else /var/lib/lockbox for root, else the XDG state home's. */
static char *state_dir(const struct opts *o)
{
	const char *env = getenv("LOCKBOX_DIR"), *home;
	char *base, *dir;

	if (o->dir != NULL)
		return dir_or_url(o->dir);
	if (env != NULL && *env != '\0')
		return dir_or_url(env);
	if (geteuid() == 0)
		return join("/var/lib/lockbox", "");
	env = getenv("XDG_STATE_HOME");
	if (env != NULL && env[0] == '/')	/* relative values are to be ignored */
		return join(env, "lockbox");
	/* cron sets HOME; the password database is not asked (static builds) */
	home = getenv("HOME");
	if (home == NULL || *home == '\0')
		lb_diex(LB_EXIT_FAIL, "no state directory: set LOCKBOX_DIR or HOME, or use -d");
	base = join(home, ".local/state");
	dir = join(base, "lockbox");
	free(base);
	return dir;
}

/* mkdir -p, each new directory with MODE. 0, or -1 (reported). */
static int make_dirs(char *dir, mode_t mode)
{
	struct stat st;
	char *p = dir;

	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		errno = ENOTDIR;
		lb_warn("%s", dir);
		return -1;
	}
	for (;;) {
		while (*p == '/')
			p++;
		p = strchr(p, '/');
		if (p != NULL)
			*p = '\0';
		if (mkdir(dir, mode) != 0 && errno != EEXIST) {
			lb_warn("%s", dir);
			if (p != NULL)
				*p = '/';
			return -1;
		}
		if (p == NULL)
			return 0;
		*p++ = '/';
	}
}

/*
 * Anyone who can write to the state directory can put a file of theirs,
 * with a forged run in it, where the state file should be. Trusted: a
 * directory of ours or root's that nobody else can write to; or a sticky
 * one (only a file's owner may rename or remove it there), provided the
 * state file itself is ours or root's, which check_state_file tells once
 * it is open. Returns the directory's fd, *shared set for the sticky case,
 * or -1 (refused, reported) before anything is created in it.
 */
static int open_state_dir(const char *dir, int *shared)
{
	uid_t me = geteuid();
	struct stat st;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	*shared = 0;
	if (fd < 0 || fstat(fd, &st) != 0) {
		lb_warn("%s", dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_uid != me && st.st_uid != 0)
		lb_warnx("%s: state directory owned by uid %ld, who could replace its files; refusing it",
		    dir, (long)st.st_uid);
	else if (!(st.st_mode & (S_IWGRP | S_IWOTH)))
		return fd;
	else if (!(st.st_mode & S_ISVTX))
		lb_warnx("%s: state directory writable by others (mode %04o, not sticky); refusing it",
		    dir, (unsigned)(st.st_mode & 07777));
	else {
		*shared = 1;
		return fd;
	}
	close(fd);
	return -1;
}

/* In a shared sticky directory: the file open is the one there, and ours or root's. */
static int check_state_file(const struct run *r, int dirfd)
{
	const char *base = strrchr(r->path, '/') + 1;
	struct lb_lock_site site;
	struct stat st;

	if (lb_pool_lock_site(r->pool, SLOT, &site) != 0 ||
	    fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		lb_warn("%s", r->path);
		return -1;
	}
	if (st.st_dev != site.dev || st.st_ino != site.ino) {
		lb_warnx("%s: replaced while it was opened; refusing it", r->path);
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		lb_warnx("%s: owned by uid %ld in a directory others can write to; refusing it",
		    r->path, (long)st.st_uid);
		return -1;
	}
	return 0;
}

/* An ASCII letter or digit, whatever the locale. */
static int ascii_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* URL with "lock=NAME" added to its query, NAME percent-encoded. */
static char *atom_url(const char *url, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(url);
	char *s = malloc(n + 6 + 3 * strlen(name) + 1), *o;
	const unsigned char *p;

	if (s == NULL)
		lb_die(LB_EXIT_FAIL, "out of memory");
	memcpy(s, url, n);
	o = s + n;
	o += sprintf(o, "%clock=", strchr(url, '?') != NULL ? '&' : '?');
	for (p = (const unsigned char *)name; *p != '\0'; p++) {
		if (ascii_alnum(*p) || strchr("-._~:", *p) != NULL) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return s;
}

/*
 * The target of atom NAME. In a directory: NAME canonified as CFEngine
 * does (every byte but a letter or digit becomes '_'), then a hash of the
 * exact NAME, so "a b" and "a_b" get files of their own:
 * DIR/a_b-1f2e3d4c.lock. In a database: the lock NAME itself
 * (URL?lock=NAME), so mutex on that URL excludes the atom's runs as mutex
 * on a state file does.
 */
static char *atom_path(const char *dir, const char *name)
{
	char file[128 + 32];
	uint64_t h = UINT64_C(14695981039346656037);
	const unsigned char *p;
	size_t n = 0;

	if (lb_pool_is_pg(dir))
		return atom_url(dir, name);
	for (p = (const unsigned char *)name; *p != '\0'; p++) {
		h ^= *p;
		h *= UINT64_C(1099511628211);
		if (n < 128)
			file[n++] = ascii_alnum(*p) ? (char)*p : '_';
	}
	snprintf(file + n, sizeof file - n, "-%08lx.lock",
	    (unsigned long)((h ^ h >> 32) & 0xffffffffu));
	return join(dir, file);
}

static void check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > LB_ATOM_NAME_MAX)
		lb_usage_error("invalid NAME '%s': expected 1 to %d bytes", name,
		    LB_ATOM_NAME_MAX);
}

/* ---- the atom area ---- */

/* A wait rounded up to the second, so "in 5m" right after a 5m run, not "4m59s". */
static const char *fmt_wait(int64_t ns, char buf[32])
{
	if (ns >= LB_NS_PER_S)
		ns = (ns + LB_NS_PER_S - 1) / LB_NS_PER_S * LB_NS_PER_S;
	return lb_format_duration(ns, buf);
}

/* Decode, reporting a corrupt area once; 1 when it must be written afresh. */
static int load_state(struct run *r, const unsigned char *area, size_t len, struct lb_atom *a)
{
	const char *why;
	int d = lb_atom_decode(area, len, a, &why);

	if (d < 0) {
		if (!r->warned)
			lb_warnx("%s: %s: run state unreadable (%s); starting afresh",
			    r->name, r->path, why);
		r->warned = 1;
		return 1;
	}
	if (d == 1 && a->name_len > 0 && strcmp(a->name, r->name) != 0) {
		r->foreign = 1;
		snprintf(r->foreign_name, sizeof r->foreign_name, "%s", a->name);
		/* whoever wrote the file chose these bytes: no escapes to the terminal */
		lb_text_clean(r->foreign_name);
	}
	return d == 0;
}

/* The anti-spam check: sets too_soon and wait_left; 1 when A was changed. */
static int check_elapsed(struct run *r, struct lb_atom *a, const struct lb_atom_clock *now)
{
	int future, changed = 0;
	/* from the last completion, as CFEngine's lastcompleted */
	int64_t since = lb_atom_since_end(a, now, &future);

	r->last_now = *now;
	if (future) {
		/*
		 * The clock went back past the last start or end: count it
		 * as now and store that, so the atom waits one IFELAPSED at
		 * most rather than until the clock catches up.
		 */
		memcpy(a->boot_id, now->boot_id, sizeof a->boot_id);
		a->start_wall = now->wall;
		a->start_boot = now->boot;
		if (a->end_wall != 0) {
			a->end_wall = a->start_wall;
			a->duration = 0;
		}
		changed = 1;
	}
	r->too_soon = since >= 0 && since < r->o->ifelapsed;
	r->wait_left = r->too_soon ? r->o->ifelapsed - since : 0;
	return changed;
}

/* Looking, when the lock is busy: is it also too soon? */
static int peek_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct run *r = arg;
	struct lb_atom *a = &r->last;
	int write = load_state(r, area, len, a);

	if (r->foreign)
		return 0;
	write |= check_elapsed(r, a, now);
	if (write)
		lb_atom_encode(area, len, a);
	return write;
}

/* With the lock held: check again, then record the start. */
static int begin_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct run *r = arg;
	struct lb_atom *a = &r->last;
	int write = load_state(r, area, len, a);

	if (r->foreign)
		return 0;
	write |= check_elapsed(r, a, now);
	if (r->too_soon) {
		if (write)
			lb_atom_encode(area, len, a);
		return write;
	}
	if (a->flags & LB_ATOM_RUNNING) {
		/* the last run's end was never recorded: it was expired, or its supervisor vanished */
		if (r->expired) {
			int future;
			int64_t d = lb_atom_since_start(a, now, &future);

			a->status = LB_STATUS_EXPIRED;
			a->end_wall = now->wall;
			a->duration = d > 0 ? d : 0;
			a->expiries++;
		} else {
			a->status = LB_STATUS_UNKNOWN;
			a->end_wall = 0;
			a->duration = -1;
		}
		lb_atom_push(a, a->start_wall, a->duration, a->status);
	}
	/* what to put back should the command not start at all */
	r->before = *a;
	r->start_wall = now->wall;
	r->local_start = lb_now(CLOCK_BOOTTIME);
	a->flags = LB_ATOM_RUNNING;
	a->super_pid = getpid();
	memcpy(a->boot_id, now->boot_id, sizeof a->boot_id);
	a->start_wall = r->start_wall;
	a->start_boot = now->boot;
	a->cmd_pid = a->cmd_pgid = 0;
	a->cmd_starttime = 0;
	a->runs++;
	a->ifelapsed = r->o->ifelapsed;
	a->expireafter = r->o->expireafter;
	a->name_len = strlen(r->name);
	memcpy(a->name, r->name, a->name_len + 1);
	lb_atom_encode(area, len, a);
	return 1;
}

static int ours(const struct run *r, const struct lb_atom *a)
{
	return (a->flags & LB_ATOM_RUNNING) && a->super_pid == getpid() &&
	    a->start_wall == r->start_wall;
}

static int started_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct run *r = arg;
	struct lb_atom a;
	const char *why;

	(void)now;
	if (lb_atom_decode(area, len, &a, &why) != 1 || !ours(r, &a))
		return 0;
	a.cmd_pid = r->child;
	a.cmd_pgid = r->child;
	a.cmd_starttime = lb_proc_starttime(r->child);
	lb_atom_encode(area, len, &a);
	return 1;
}

static int end_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct run *r = arg;
	struct lb_atom a;
	const char *why;
	int future;

	/* never overwrite a state that moved on (reset, or another run's) */
	if (lb_atom_decode(area, len, &a, &why) != 1 || !ours(r, &a))
		return 0;
	a.end_wall = now->wall;
	/* ours: started at r->start_wall, so never -1 */
	a.duration = lb_atom_since_start(&a, now, &future);
	a.status = r->status;
	/* killed by a later start: an expiry, whoever records it first */
	if (a.flags & LB_ATOM_EXPIRING) {
		a.status = LB_STATUS_EXPIRED;
		a.expiries++;
	}
	a.flags = 0;
	lb_atom_push(&a, r->start_wall, a.duration, a.status);
	lb_atom_encode(area, len, &a);
	return 1;
}

/* The command could not be started: no run happened, the state goes back. */
static int unstart_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	struct run *r = arg;
	struct lb_atom a;
	const char *why;

	(void)now;
	if (lb_atom_decode(area, len, &a, &why) != 1 || !ours(r, &a))
		return 0;
	lb_atom_encode(area, len, &r->before);
	return 1;
}

struct expiring {
	const struct lb_ident *old;	/* the run's supervisor */
	int on;
};

/*
 * Mark the running run as being expired (its end is then an expiry), or
 * take the mark back when the expiry did not happen after all.
 */
static int expiring_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	const struct expiring *e = arg;
	uint32_t need = e->on ? LB_ATOM_RUNNING : LB_ATOM_EXPIRING;
	struct lb_atom a;
	const char *why;

	(void)now;
	if (lb_atom_decode(area, len, &a, &why) != 1 || !(a.flags & need) ||
	    a.super_pid != e->old->pid)
		return 0;
	if (e->on)
		a.flags |= LB_ATOM_EXPIRING;
	else
		a.flags &= ~LB_ATOM_EXPIRING;
	lb_atom_encode(area, len, &a);
	return 1;
}

static void mark_expiring(struct run *r, const struct lb_ident *old, int on)
{
	struct expiring e = { old, on };

	if (lb_pool_atom(r->pool, expiring_fn, &e) < 0 && on)
		lb_warnx("%s: cannot mark the run as expiring", r->name);
}

/* ---- skipping ---- */

static int too_soon(struct run *r)
{
	char buf[32];

	fmt_wait(r->wait_left, buf);
	lb_joblog(LOG_INFO, r->name, "skipped-too-soon next=%s", buf);
	if (!r->o->quiet)
		lb_warnx("%s: too soon; next run allowed in %s", r->name, buf);
	return r->o->busy_status;
}

/*
 * How long the holder's run has lasted: from the run's start in the state
 * A (read at NOW) when the state names the holder (a supervisor that took
 * over after an expiry waited before it started), else from its lock
 * record. A is NULL when no state could be read.
 */
static int64_t holder_age(const struct lb_atom *a, const struct lb_atom_clock *now,
    const struct lb_ident *who)
{
	int future;
	int64_t since;

	if (a != NULL && (a->flags & LB_ATOM_RUNNING) && a->super_pid == who->pid &&
	    (since = lb_atom_since_start(a, now, &future)) >= 0)
		return since;
	return lb_ident_age(who);
}

static int busy(struct run *r, const struct lb_holder *h)
{
	char age[32], host[LB_HOST_MAX + 8] = "";
	char myhost[LB_HOST_MAX];

	if (h == NULL || !h->known) {
		lb_joblog(LOG_INFO, r->name, "skipped-busy pid=?");
		if (!r->o->quiet)
			lb_warnx("%s: already running (PID ?, held without a record)", r->name);
		return r->o->busy_status;
	}
	if (gethostname(myhost, sizeof myhost - 1) == 0 && h->who.host[0] != '\0') {
		myhost[sizeof myhost - 1] = '\0';
		if (strcmp(myhost, h->who.host) != 0)
			snprintf(host, sizeof host, " on %s", h->who.host);
	}
	lb_format_duration(holder_age(&r->last, &r->last_now, &h->who), age);
	lb_joblog(LOG_INFO, r->name, "skipped-busy pid=%d age=%s", (int)h->who.pid, age);
	if (!r->o->quiet)
		lb_warnx("%s: already running (PID %d%s, %s)", r->name, (int)h->who.pid,
		    host, age);
	return r->o->busy_status;
}

static int foreign(struct run *r)
{
	lb_warnx("%s: %s belongs to the atom '%s'; refusing to share it", r->name,
	    r->path, r->foreign_name);
	return LB_EXIT_FAIL;
}

/* ---- expiry ---- */

static const char *sig_name(int sig)
{
	static char num[16];
	const char *name = sig == SIGCONT ? "CONT" : lb_signal_name(sig);

	if (name != NULL)
		return name;
	snprintf(num, sizeof num, "%d", sig);
	return num;
}

static int same_holder(const struct lb_ident *a, const struct lb_ident *b)
{
	return a->pid == b->pid && a->starttime == b->starttime && a->wall_ns == b->wall_ns;
}

static int is_local(const struct lb_ident *who)
{
	uint8_t ours[16];

	return lb_boot_id(ours) == 0 && memcmp(ours, who->boot_id, 16) == 0;
}

static void refuse_signal(struct run *r, int sig, const char *pids)
{
	lb_joblog(LOG_ERR, r->name, "signal-refused sig=%s pids=%s", sig_name(sig), pids);
	lb_warnx("%s: cannot send SIG%s to %s: not permitted", r->name, sig_name(sig), pids);
}

/* The job could not be told for sure: say so, and fail rather than guess. */
static int blind(struct run *r, const struct lb_job *job, int sig)
{
	errno = job->err;
	lb_warn("%s: cannot expire the run: checking its processes for SIG%s", r->name,
	    sig_name(sig));
	lb_joblog(LOG_ERR, r->name, "expire-error sig=%s error=%s", sig_name(sig),
	    strerror(job->err));
	return LB_EXIT_FAIL;
}

/*
 * The paper's garbage collection, made safe: CONT (a stopped job can act
 * on what follows), INT, TERM, KILL, each to every verified process of the
 * holder's job, each followed by up to GRACE of event-driven waiting for
 * the lock. 1: the lock is ours; 0: someone else took it (*h describes
 * them); otherwise an exit status.
 */
static int expire(struct run *r, struct lb_holder *h)
{
	static const int sigs[] = { SIGCONT, SIGINT, SIGTERM, SIGKILL };
	struct lb_holders now = { NULL, 0 };
	struct lb_ident old = h->who;
	struct lb_lock_site site;
	struct lb_job job;
	char age[32], pids[512], refused[512], late[512];
	unsigned slot;
	size_t i, reached;
	int got = -1, n, signalled = 0;

	lb_format_duration(holder_age(&r->last, &r->last_now, &old), age);
	lb_joblog(LOG_NOTICE, r->name, "expire pid=%d age=%s", (int)old.pid, age);
	if (r->o->verbose)
		lb_warnx("%s: PID %d has run for %s; expiring it", r->name, (int)old.pid, age);
	if (lb_pool_lock_site(r->pool, SLOT, &site) != 0) {
		lb_warn("%s", r->path);
		return LB_EXIT_FAIL;
	}
	mark_expiring(r, &old, 1);
	/* the records name old.pid, but only the kernel's locks say who holds it */
	lb_job_init(&job, &site);
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		n = lb_job_scan(&job);
		if (n < 0) {
			/* a member missed must not pass for one that is gone */
			got = blind(r, &job, sigs[i]);
			break;
		}
		if (job.self_holds) {
			lb_warnx("%s: this process holds the lock itself (started from inside the run?)",
			    r->name);
			lb_joblog(LOG_ERR, r->name, "expire-refused pid=%d reason=self", (int)old.pid);
			got = LB_EXIT_BUSY;
			break;
		}
		if (n == 0 && i == 0) {
			/* nothing could be verified: never signal on a record's word */
			lb_warnx("%s: cannot expire PID %d: no process holding the lock can be verified",
			    r->name, (int)old.pid);
			lb_joblog(LOG_ERR, r->name, "expire-refused pid=%d reason=unverified",
			    (int)old.pid);
			got = LB_EXIT_BUSY;
			break;
		}
		if (n > 0) {
			/*
			 * Signal 0 first asks the kernel who may be signalled, so
			 * that the line can be logged before the signal (the log
			 * then reads in causal order) and names only those. A
			 * member that cannot be checked stops the expiry before
			 * anyone gets the signal.
			 */
			reached = lb_job_signal(&job, 0, pids, sizeof pids, refused, sizeof refused);
			if (job.err != 0) {
				got = blind(r, &job, sigs[i]);
				break;
			}
			if (reached > 0) {
				lb_joblog(LOG_NOTICE, r->name, "signal sig=%s pids=%s",
				    sig_name(sigs[i]), pids);
				if (r->o->verbose)
					lb_warnx("%s: sending SIG%s to %s", r->name, sig_name(sigs[i]),
					    pids);
			}
			if (refused[0] != '\0')
				refuse_signal(r, sigs[i], refused);
			/* a refusal only now (a member changed its credentials) is told too */
			lb_job_signal(&job, sigs[i], NULL, 0, late, sizeof late);
			signalled = 1;
			if (late[0] != '\0' && strcmp(late, refused) != 0)
				refuse_signal(r, sigs[i], late);
			if (job.err != 0) {
				got = blind(r, &job, sigs[i]);
				break;
			}
		}
		lb_holders_free(&now);
		got = lb_pool_acquire(r->pool, 1, lb_deadline_after(r->o->grace), &r->who,
		    &slot, &now);
		if (got == 1) {
			lb_joblog(LOG_NOTICE, r->name, "expired pid=%d after=%s", (int)old.pid,
			    sig_name(sigs[i]));
			if (r->o->verbose)
				lb_warnx("%s: lock freed after SIG%s; taking over", r->name,
				    sig_name(sigs[i]));
			r->expired = 1;
			break;
		}
		if (got < 0) {
			got = LB_EXIT_FAIL;
			break;
		}
		if (now.n > 0 && now.v[0].known && !same_holder(&now.v[0].who, &old)) {
			*h = now.v[0];	/* another expirer took over first */
			got = 0;
			break;
		}
		got = -1;
	}
	if (got == -1) {
		lb_job_alive(&job, pids, sizeof pids);
		lb_warnx("%s: PID %s still holds the lock after SIGKILL; giving up", r->name,
		    pids[0] ? pids : "?");
		lb_joblog(LOG_ERR, r->name, "expire-failed pids=%s", pids[0] ? pids : "?");
		got = LB_EXIT_BUSY;
	}
	/* refused before any signal: the run goes on, and its end is its own */
	if (got != 0 && got != 1 && !signalled)
		mark_expiring(r, &old, 0);
	lb_holders_free(&now);
	lb_job_free(&job);
	return got;
}

/* ---- supervision ---- */

/* Whether the exec reported through FD failed, and with which errno. */
static int exec_failed(int fd, int *err)
{
	ssize_t n;

	do
		n = read(fd, err, sizeof *err);
	while (n < 0 && errno == EINTR);
	close(fd);
	return n == (ssize_t)sizeof *err;
}

static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 };

/* To the command's whole group; to it alone if it left the group. */
static void signal_job(pid_t pid, int sig)
{
	if (kill(-pid, sig) != 0)
		kill(pid, sig);
}

/*
 * The run's session on the server ended (an expiry elsewhere, an
 * administrator, a restart, a partition): the lock is free for another
 * run, so this one must stop. CONT and the --on-loss signal to the job;
 * the deadline for KILL, or 0 when there is none.
 */
static int64_t lock_lost(struct run *r, pid_t pid)
{
	r->lost = 1;
	lb_warnx("%s: the run's session on the server ended; its lock is free%s%s", r->name,
	    r->o->on_loss ? ": sending SIG" : "", r->o->on_loss ? sig_name(r->o->on_loss) : "");
	lb_joblog(LOG_WARNING, r->name, "lock-lost pid=%d signal=%s", (int)pid,
	    r->o->on_loss ? sig_name(r->o->on_loss) : "none");
	if (r->o->on_loss == 0)
		return 0;
	signal_job(pid, SIGCONT);
	signal_job(pid, r->o->on_loss);
	return r->o->on_loss == SIGKILL ? 0 : lb_deadline_after(r->o->grace);
}

/* sigwaitinfo, or sigtimedwait until DEADLINE when there is one (EAGAIN then). */
static int wait_signal(const sigset_t *set, siginfo_t *si, int64_t deadline)
{
	int64_t left;
	struct timespec ts;

	if (deadline == 0)
		return sigwaitinfo(set, si);
	left = lb_remaining(deadline);
	ts.tv_sec = (time_t)(left / LB_NS_PER_S);
	ts.tv_nsec = (long)(left % LB_NS_PER_S);
	return sigtimedwait(set, si, &ts);
}

static int supervise(struct run *r, char **command)
{
	struct sigaction dfl, chld_old;
	sigset_t set, old;
	siginfo_t si;
	char cmd[LB_COMMAND_MAX * 4], buf[32];
	int64_t d, kill_at = 0;
	size_t i;
	int ws = 0, err, report[2];
	pid_t pid;

	/*
	 * The signals to pass on stay blocked and are taken with sigwaitinfo:
	 * no handler, no race between a signal and the wait. One that was
	 * ignored on entry stays ignored (the command inherits that too).
	 * SIGCHLD must not be ignored, or the kernel reaps the command for us.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	/* a server's lock: the pool has the kernel send SIGIO when its session ends */
	if (r->remote)
		sigaddset(&set, SIGIO);
	for (i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
		struct sigaction cur;

		if (sigaction(forwarded[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
			sigaddset(&set, forwarded[i]);
	}
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGCHLD, &dfl, &chld_old);
	sigprocmask(SIG_BLOCK, &set, &old);
	/* the command inherits the lock's descriptor, so the lock outlives us */
	if (lb_pool_keep_on_exec(r->pool) != 0)
		return LB_EXIT_FAIL;
	/* closed by a successful exec; an errno on it if the exec failed */
	if (pipe2(report, O_CLOEXEC) != 0) {
		lb_warn("pipe");
		return LB_EXIT_FAIL;
	}
	pid = fork();
	if (pid < 0) {
		lb_warn("fork");
		close(report[0]);
		close(report[1]);
		return LB_EXIT_FAIL;
	}
	if (pid == 0) {
		close(report[0]);
		/* its own process group, as timeout(1) does: the job can be signalled whole */
		setpgid(0, 0);
		sigaction(SIGCHLD, &chld_old, NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		lb_exec_report(command, report[1]);
	}
	close(report[1]);
	/* both sides set the group, so it is in place whoever runs first */
	setpgid(pid, pid);
	r->child = pid;
	if (exec_failed(report[0], &err)) {
		/* not a run: it neither counts for IFELAPSED nor shows in the history */
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
		if (lb_pool_atom(r->pool, unstart_fn, r) < 0)
			lb_warnx("%s: cannot undo the start", r->name);
		r->status = lb_child_exec_status(err);
		lb_joblog(LOG_ERR, r->name, "not-started status=%d error=%s", r->status,
		    strerror(err));
		return r->status;
	}
	if (lb_pool_atom(r->pool, started_fn, r) < 0)
		lb_warnx("%s: cannot record the command's PID", r->name);
	lb_joblog_escape(r->who.command, 1, cmd, sizeof cmd);
	lb_joblog(LOG_INFO, r->name, "ran pid=%d command=%s", (int)pid, cmd);
	if (r->o->verbose)
		lb_warnx("%s: running %s (PID %d)", r->name, r->who.command, (int)pid);
	for (;;) {
		int sig = wait_signal(&set, &si, kill_at);
		pid_t w;

		if (sig < 0 && errno == EAGAIN) {
			/* the job outlived GRACE after the loss: it must not run on unlocked */
			lb_joblog(LOG_WARNING, r->name, "lock-lost pid=%d signal=KILL", (int)pid);
			signal_job(pid, SIGKILL);
			kill_at = 0;
		}
		if (sig < 0)
			continue;	/* EINTR: a stop and continue */
		if (sig == SIGIO) {
			if (!r->lost)
				kill_at = lock_lost(r, pid);
			continue;
		}
		if (sig != SIGCHLD) {
			r->signalled = sig;
			signal_job(pid, sig);
			continue;
		}
		do
			w = waitpid(pid, &ws, WNOHANG);
		while (w < 0 && errno == EINTR);
		if (w == pid || (w < 0 && errno == ECHILD))
			break;
	}
	r->killed = WIFSIGNALED(ws);
	r->status = r->killed ? LB_EXIT_SIGNAL + WTERMSIG(ws) : WEXITSTATUS(ws);
	if (lb_pool_atom(r->pool, end_fn, r) < 0)
		lb_warnx("%s: cannot record the end of the run", r->name);
	d = lb_now(CLOCK_BOOTTIME) - r->local_start;
	lb_joblog(LOG_INFO, r->name, "finished status=%d duration=%lld.%03llds", r->status,
	    (long long)(d / LB_NS_PER_S), (long long)(d % LB_NS_PER_S / LB_NS_PER_MS));
	if (r->o->verbose)
		lb_warnx("%s: finished with status %d after %s", r->name, r->status,
		    lb_format_duration(d, buf));
	return r->status;
}

/*
 * Expiry of a run whose lock is a server's session lock. No process of
 * that run can be shown to be one to signal: it may be on another host,
 * and even on this one nothing proves which process holds the session.
 * So the server ends the holder's session instead (pg_terminate_backend,
 * only of the session that still holds the lock): that frees the lock,
 * and the holder's supervisor, told by its socket, signals its command
 * (--on-loss, then KILL after its GRACE). 1: the lock is ours; 0: someone
 * else has it (*h describes them); otherwise an exit status.
 */
static int expire_session(struct run *r, struct lb_holder *h)
{
	struct lb_holders now = { NULL, 0 };
	struct lb_ident old = h->who;
	char age[32];
	unsigned slot;
	int ended, got;

	lb_format_duration(holder_age(&r->last, &r->last_now, &old), age);
	lb_joblog(LOG_NOTICE, r->name, "expire pid=%d host=%s age=%s", (int)old.pid, old.host, age);
	if (r->o->verbose)
		lb_warnx("%s: PID %d on %s has run for %s; expiring it", r->name, (int)old.pid,
		    old.host, age);
	mark_expiring(r, &old, 1);
	ended = lb_pool_end_session(r->pool, h);
	if (ended < 0 && errno == EPERM) {
		lb_warnx("%s: cannot expire PID %d on %s: the server does not let this role end its session",
		    r->name, (int)old.pid, old.host);
		lb_joblog(LOG_ERR, r->name, "expire-refused pid=%d reason=permission", (int)old.pid);
		mark_expiring(r, &old, 0);
		return LB_EXIT_BUSY;
	}
	if (ended < 0)
		return LB_EXIT_FAIL;
	if (ended == 1) {
		lb_joblog(LOG_NOTICE, r->name, "session-ended pid=%d session=%d", (int)old.pid,
		    h->session.pid);
		if (r->o->verbose)
			lb_warnx("%s: the server ended session %d of PID %d", r->name,
			    h->session.pid, (int)old.pid);
	} else {
		mark_expiring(r, &old, 0);
	}
	/* the server frees the lock as the session's process exits: wait for that, event-driven */
	got = lb_pool_acquire(r->pool, 1, ended == 1 ? lb_deadline_after(r->o->grace) : 0,
	    &r->who, &slot, &now);
	if (got == 1) {
		lb_joblog(LOG_NOTICE, r->name, "expired pid=%d after=session-end", (int)old.pid);
		if (r->o->verbose)
			lb_warnx("%s: lock freed; taking over", r->name);
		r->expired = ended == 1;
	} else if (got == 0 && now.n > 0 && now.v[0].known &&
	    now.v[0].session.pid != h->session.pid) {
		*h = now.v[0];	/* another took the lock first */
	} else if (got == 0) {
		lb_warnx("%s: PID %d still holds the lock after its session was ended; giving up",
		    r->name, (int)old.pid);
		lb_joblog(LOG_ERR, r->name, "expire-failed pids=%d", (int)old.pid);
		got = LB_EXIT_BUSY;
	} else {
		got = LB_EXIT_FAIL;
	}
	lb_holders_free(&now);
	return got;
}

/* Take the atom's lock: 1 when it is ours, else 0 and *status says why not. */
static int take(struct run *r, int *status)
{
	struct lb_holders h = { NULL, 0 };
	struct lb_holder holder;
	unsigned slot;
	int got = lb_pool_acquire(r->pool, 1, 0, &r->who, &slot, &h), x;

	/* a skip's status may be 0 or 1 (-E), so it is never the return value */
	*status = LB_EXIT_FAIL;
	if (got == 0) {
		got = 0;
		/* the paper's order: too soon is told before busy */
		if (lb_pool_atom(r->pool, peek_fn, r) < 0)
			*status = LB_EXIT_FAIL;
		else if (r->foreign)
			*status = foreign(r);
		else if (r->too_soon)
			*status = too_soon(r);
		else if (h.n == 0 || !h.v[0].known)
			*status = busy(r, h.n ? &h.v[0] : NULL);
		else if (holder = h.v[0], (!r->remote && !is_local(&holder.who)) ||
		    holder_age(&r->last, &r->last_now, &holder.who) < r->o->expireafter)
			*status = busy(r, &holder);
		else if ((x = r->remote ? expire_session(r, &holder) : expire(r, &holder)) == 1)
			got = 1;
		else
			*status = x == 0 ? busy(r, &holder) : x;
	}
	lb_holders_free(&h);
	return got == 1;
}

static int run_atom(struct opts *o, const char *name, char **command)
{
	struct lb_pool_opts popts = { 0, 0 };
	struct run r;
	char *dir;
	int status = LB_EXIT_FAIL, dirfd, shared = 0;

	memset(&r, 0, sizeof r);
	r.o = o;
	r.name = name;
	dir = state_dir(o);
	r.remote = lb_pool_is_pg(dir);
	if (!r.remote && make_dirs(dir, geteuid() == 0 ? 0755 : 0700) != 0) {
		free(dir);
		return LB_EXIT_FAIL;
	}
	r.path = atom_path(dir, name);
	/* a server keeps its own state: there is no directory to trust */
	dirfd = r.remote ? -1 : open_state_dir(dir, &shared);
	free(dir);
	if (!r.remote && dirfd < 0) {
		free((char *)r.path);
		return LB_EXIT_FAIL;
	}
	if (lb_joblog_open(o->log, o->use_syslog) != 0) {
		if (dirfd >= 0)
			close(dirfd);
		free((char *)r.path);
		return LB_EXIT_FAIL;
	}
	/* a server tells this supervisor (SIGIO, see supervise) when the run's session ends */
	popts.on_loss = SIGIO;
	r.pool = lb_pool_open(r.path, LB_POOL_WRITE, &popts);
	if (r.pool == NULL || (shared && check_state_file(&r, dirfd) != 0)) {
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
		if (lb_pool_atom(r.pool, begin_fn, &r) < 0) {
			status = LB_EXIT_FAIL;
		} else if (r.foreign || r.too_soon) {
			lb_pool_release(r.pool, getpid());
			status = r.foreign ? foreign(&r) : too_soon(&r);
		} else {
			status = supervise(&r, command);
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

/* ---- status ---- */

struct view {
	char *name;
	char *path;
	char *shown;			/* PATH, any password hidden */
	struct lb_atom a;
	struct lb_atom_clock now;	/* when it was read, on the state's clocks */
	int known;			/* the file holds an atom's state */
	int running;
	struct lb_ident who;		/* the holder, when running and known */
	int who_known;
};

/* What to call PATH when it is shown: "file" or "server". */
static const char *where(const struct view *v)
{
	return lb_pool_is_pg(v->path) ? "server" : "file";
}

static const char *iso(int64_t wall_ns, char buf[32])
{
	time_t t = (time_t)(wall_ns / LB_NS_PER_S);
	struct tm tm;

	if (wall_ns <= 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, 32, "-");
	return buf;
}

/* Fill V from its file; 0, or -1 (reported). A missing file is an idle atom. */
static int look(struct view *v, int want_atom)
{
	unsigned char area[LB_POOL_ATOM_SIZE];
	struct lb_holders h;
	struct lb_pool *pool = lb_pool_open(v->path, LB_POOL_READ, NULL);
	const char *why;
	int r, d;

	if (pool == NULL)
		return -1;
	v->shown = strdup(lb_pool_name(pool));
	if (v->shown == NULL)
		lb_die(LB_EXIT_FAIL, "out of memory");
	r = lb_pool_atom_read(pool, area, sizeof area, &v->now);
	if (r < 0) {
		lb_pool_close(pool);
		return -1;
	}
	d = lb_atom_decode(area, sizeof area, &v->a, &why);
	if (d < 0) {
		lb_warnx("%s: run state unreadable (%s)", v->shown, why);
	} else if (d == 1) {
		v->known = 1;
		if (v->name == NULL)
			v->name = strdup(v->a.name);
	}
	if (want_atom && !v->known) {
		lb_pool_close(pool);
		return 1;	/* not an atom's file: skipped in listings */
	}
	if (lb_pool_holders(pool, &h) == 0) {
		size_t i;

		for (i = 0; i < h.n; i++)
			if (h.v[i].slot == SLOT) {
				v->running = 1;
				v->who_known = h.v[i].known;
				v->who = h.v[i].who;
			}
		lb_holders_free(&h);
	}
	lb_pool_close(pool);
	return 0;
}

/* The holder's age, as a run of the atom would count it. */
static int64_t view_age(const struct view *v)
{
	return holder_age(v->known ? &v->a : NULL, &v->now, &v->who);
}

static const char *state_of(const struct view *v)
{
	if (!v->running)
		return "idle";
	if (v->who_known && v->a.expireafter > 0 && view_age(v) >= v->a.expireafter)
		return "overdue";
	return "running";
}

/* When the next run may start: after IFELAPSED, and after expiry if one runs. */
static int64_t next_run(const struct view *v)
{
	int future;
	int64_t since = v->known ? lb_atom_since_end(&v->a, &v->now, &future) : -1;
	int64_t left = 0;

	if (since >= 0 && since < v->a.ifelapsed)
		left = v->a.ifelapsed - since;
	if (v->running && v->who_known && v->a.expireafter > 0) {
		int64_t x = v->a.expireafter - view_age(v);

		if (x > left)
			left = x;
	}
	return left;
}

static const char *status_word(int32_t s, char buf[32])
{
	if (s == LB_STATUS_EXPIRED)
		return "expired";
	if (s < 0)
		return "unknown";
	snprintf(buf, 32, "%d", (int)s);
	return buf;
}

static void print_text(const struct view *v, int first)
{
	const struct lb_atom *a = &v->a;
	char b1[32], b2[32], b3[32];
	int64_t longest, median, left;
	size_t n;

	if (!first)
		printf("\n");
	printf("%s\n", v->name);
	printf("  %-14s %s\n", "state", state_of(v));
	if (v->running && v->who_known) {
		printf("  %-14s %d\n", "pid", (int)v->who.pid);
		printf("  %-14s %s\n", "age", lb_format_duration(view_age(v), b1));
	} else {
		printf("  %-14s %s\n", "pid", v->running ? "?" : "-");
		printf("  %-14s %s\n", "age", "-");
	}
	if (!v->known) {
		printf("  %-14s %s\n", "last start", "never");
	} else {
		printf("  %-14s %s\n", "last start", iso(a->start_wall, b1));
		if (a->flags & LB_ATOM_RUNNING) {
			printf("  %-14s %s\n", "last end", "-");
			printf("  %-14s %s\n", "last status", "-");
			printf("  %-14s %s\n", "last duration", "-");
		} else {
			printf("  %-14s %s\n", "last end", iso(a->end_wall, b1));
			printf("  %-14s %s\n", "last status", status_word(a->status, b2));
			printf("  %-14s %s\n", "last duration",
			    a->duration >= 0 ? lb_format_duration(a->duration, b3) : "-");
		}
	}
	left = next_run(v);
	if (left > 0)
		printf("  %-14s in %s\n", "next run", fmt_wait(left, b1));
	else
		printf("  %-14s %s\n", "next run", "now");
	if (v->known) {
		printf("  %-14s %s\n", "if elapsed", lb_format_duration(a->ifelapsed, b1));
		printf("  %-14s %s\n", "expire after", lb_format_duration(a->expireafter, b1));
		n = lb_atom_stats(a, &longest, &median);
		if (n > 0)
			printf("  %-14s %u (%u expired); last %zu: median %s, longest %s\n",
			    "runs", (unsigned)a->runs, (unsigned)a->expiries, n,
			    lb_format_duration(median, b1), lb_format_duration(longest, b2));
		else
			printf("  %-14s %u\n", "runs", (unsigned)a->runs);
	}
	printf("  %-14s %s\n", where(v), v->shown);
}

static void json_secs(const char *key, int64_t ns, int valid)
{
	if (valid)
		printf(",\"%s\":%.3f", key, (double)ns / LB_NS_PER_S);
	else
		printf(",\"%s\":null", key);
}

static void json_time(const char *key, int64_t wall_ns)
{
	char b[32];

	if (wall_ns > 0)
		printf(",\"%s\":\"%s\"", key, iso(wall_ns, b));
	else
		printf(",\"%s\":null", key);
}

static void json_status(int32_t s)
{
	if (s >= 0)
		printf(",\"last_status\":%d,\"last_outcome\":\"%s\"", (int)s,
		    s > LB_EXIT_SIGNAL && s < LB_EXIT_SIGNAL + 65 ? "signal" : "exited");
	else
		printf(",\"last_status\":null,\"last_outcome\":\"%s\"",
		    s == LB_STATUS_EXPIRED ? "expired" : "unknown");
}

static void print_json(const struct view *v, int first)
{
	const struct lb_atom *a = &v->a;
	int64_t longest, median;
	unsigned i, k;
	size_t n;
	int ended = v->known && !(a->flags & LB_ATOM_RUNNING);

	printf("%s{\"name\":", first ? "" : ",");
	lb_json_string(stdout, v->name);
	printf(",\"%s\":", where(v));
	lb_json_string(stdout, v->shown);
	printf(",\"state\":\"%s\"", state_of(v));
	if (v->running && v->who_known)
		printf(",\"pid\":%d", (int)v->who.pid);
	else
		printf(",\"pid\":null");
	json_secs("age_seconds", v->running && v->who_known ? view_age(v) : 0,
	    v->running && v->who_known);
	json_time("last_start", v->known ? a->start_wall : 0);
	json_time("last_end", ended ? a->end_wall : 0);
	if (ended)
		json_status(a->status);
	else
		printf(",\"last_status\":null,\"last_outcome\":null");
	json_secs("last_duration_seconds", a->duration, ended && a->duration >= 0);
	json_secs("next_run_seconds", next_run(v), 1);
	json_secs("if_elapsed_seconds", a->ifelapsed, v->known);
	json_secs("expire_after_seconds", a->expireafter, v->known);
	printf(",\"runs\":%u,\"expiries\":%u", (unsigned)a->runs, (unsigned)a->expiries);
	n = lb_atom_stats(a, &longest, &median);
	json_secs("median_duration_seconds", median, n > 0);
	json_secs("longest_duration_seconds", longest, n > 0);
	printf(",\"history\":[");
	/* oldest first */
	for (i = 0; i < a->nring; i++) {
		const struct lb_run *x;
		char b[32];

		k = a->nring < LB_ATOM_RING ? i : (a->ring_next + i) % LB_ATOM_RING;
		x = &a->ring[k];
		printf("%s{\"start\":\"%s\"", i ? "," : "", iso(x->start_wall, b));
		json_secs("duration_seconds", x->duration, x->duration >= 0);
		if (x->status >= 0)
			printf(",\"status\":%d}", (int)x->status);
		else
			printf(",\"status\":\"%s\"}",
			    x->status == LB_STATUS_EXPIRED ? "expired" : "unknown");
	}
	printf("]}");
}

/*
 * Whether a directory entry is named as atom_path names state files:
 * letters, digits and '_', a dash, eight hex digits, ".lock". Nothing
 * else is looked at, so a name made to be printed (escapes, newlines)
 * never reaches the terminal or a message.
 */
static int atom_file_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n < 1 + 1 + 8 + 5 || strcmp(s + n - 5, ".lock") != 0 || s[n - 14] != '-')
		return 0;
	for (i = 0; i < n - 14; i++)
		if (!ascii_alnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	for (i = n - 13; i < n - 5; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int by_path(const void *x, const void *y)
{
	return strcmp(((const struct view *)x)->path, ((const struct view *)y)->path);
}

/*
 * The atoms a server keeps state for, into *V (when ALL). The server is
 * asked first, before any output: a lockbox without libpq runs its helper
 * from here, on the same command line. 0, or -1 (reported).
 */
static int list_server(const char *url, int all, struct view **v, size_t *n)
{
	struct lb_pool *pool = lb_pool_open(url, LB_POOL_LIST, NULL);
	char **names;
	size_t k, i;
	int rc = 0;

	if (pool == NULL)
		return -1;
	if (all && (rc = lb_pool_atom_names(pool, &names, &k)) == 0) {
		*v = calloc(k ? k : 1, sizeof **v);
		if (*v == NULL)
			lb_die(LB_EXIT_FAIL, "out of memory");
		for (i = 0; i < k; i++) {
			(*v)[i].name = names[i];
			(*v)[i].path = atom_path(url, names[i]);
		}
		free(names);
		*n = k;
	}
	lb_pool_close(pool);
	return rc;
}

static int status_cmd(const struct opts *o, int argc, char **argv)
{
	struct view *v = NULL;
	size_t n = 0, i, shown = 0;
	char *dir = state_dir(o);
	int rc = LB_EXIT_OK;

	if (o->log != NULL || o->use_syslog)
		lb_usage_error("--log and --syslog go with COMMAND");
	if (lb_pool_is_pg(dir) && list_server(dir, argc == 0, &v, &n) != 0) {
		free(dir);
		return LB_EXIT_FAIL;
	}
	if (argc > 0) {
		v = calloc((size_t)argc, sizeof *v);
		if (v == NULL)
			lb_die(LB_EXIT_FAIL, "out of memory");
		for (i = 0; i < (size_t)argc; i++) {
			check_name(argv[i]);
			v[n].name = strdup(argv[i]);
			v[n++].path = atom_path(dir, argv[i]);
		}
	} else if (!lb_pool_is_pg(dir)) {
		DIR *d = opendir(dir);
		struct dirent *e;
		size_t cap = 0;

		if (d == NULL && errno != ENOENT) {
			lb_warn("%s", dir);
			free(dir);
			return LB_EXIT_FAIL;
		}
		while (d != NULL && (e = readdir(d)) != NULL) {
			if (!atom_file_name(e->d_name))
				continue;
			if (n == cap) {
				struct view *g;

				cap = cap ? 2 * cap : 16;
				g = realloc(v, cap * sizeof *v);
				if (g == NULL)
					lb_die(LB_EXIT_FAIL, "out of memory");
				v = g;
			}
			memset(&v[n], 0, sizeof v[n]);
			v[n++].path = join(dir, e->d_name);
		}
		if (d != NULL)
			closedir(d);
		if (n > 0)
			qsort(v, n, sizeof *v, by_path);
	}
	if (o->json)
		printf("[");
	for (i = 0; i < n; i++) {
		int r = look(&v[i], argc == 0);

		if (r < 0)
			rc = LB_EXIT_FAIL;
		if (r == 0 && v[i].name != NULL) {
			if (o->json) {
				print_json(&v[i], shown == 0);
			} else {
				/* names from a state file anyone may have written: printable only */
				lb_text_clean(v[i].name);
				lb_text_clean(v[i].shown);
				print_text(&v[i], shown == 0);
			}
			shown++;
		}
		free(v[i].name);
		free(v[i].path);
		free(v[i].shown);
	}
	if (o->json)
		printf("]\n");
	free(v);
	free(dir);
	lb_close_stdout();
	return rc;
}

int adaptive_main(int argc, char **argv)
{
	struct opts o = {
		.ifelapsed = DEFAULT_IFELAPSED,
		.expireafter = DEFAULT_EXPIREAFTER,
		.grace = DEFAULT_GRACE,
		.busy_status = LB_EXIT_BUSY,
		.on_loss = SIGTERM,
	};
	int i = parse_opts(&o, argc, argv);
	char **command;

	if (i >= argc)
		lb_usage_error("missing NAME");
	if (strcmp(argv[i], "status") == 0)
		return status_cmd(&o, argc - i - 1, argv + i + 1);
	if (o.json)
		lb_usage_error("--json goes with status");
	check_name(argv[i]);
	command = argv + i + 1;
	if (command[0] != NULL && strcmp(command[0], "--") == 0)
		command++;
	if (command[0] == NULL)
		lb_usage_error("missing COMMAND");
	return run_atom(&o, argv[i], command);
}

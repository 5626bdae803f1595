/* slots: run COMMAND in one of at most MAX slots of a lock file; the front end mutex shares. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "applets.h"
#include "clock.h"
#include "err.h"
#include "exec.h"
#include "exitcodes.h"
#include "host.h"
#include "holders.h"
#include "json.h"
#include "lockfile.h"
#include "opts.h"
#include "parse.h"
#include "pool.h"
#include "procfs.h"
#include "slots.h"
#include "slotsopts.h"
#include "supervise.h"
#include "title.h"

#define USAGE \
	"usage: slots [-nqv] [-w DUR] [-E CODE] LOCKFILE MAX [--] COMMAND [ARG...]\n" \
	"       slots [--json] LOCKFILE list|check|held|create\n" \
	"       slots acquire|release [OPTION...] --fd FD [MAX]  (the shell library's)"

static const struct poolcmd slots = {
	.usage = USAGE,
	.help =
	    "\n"
	    "Run COMMAND in place holding one of MAX slots of LOCKFILE; LOCKBOX_SLOT\n"
	    "tells it which (1..MAX). 75 at once, naming the holders, when all are busy.\n"
	    "MAX: 1 to 10000, or as sem has it +N, -N or P% of the processors.\n"
	    "'mutex -w inf LOCKFILE true' waits until every slot is free.\n"
	    "\n"
	    "  -w, --wait DUR, --timeout DUR  wait up to DUR (bare: seconds; 10m, inf)\n"
	    "  -n, --nb, --nonblock       do not wait: the default (the last one counts)\n"
	    "  -q, --quiet                no message when no slot is taken\n"
	    "  -E, --conflict-exit-code CODE  CODE instead of 75 when none is taken\n"
	    "  -v, --verbose              say which slot was taken; a status line on a tty\n"
	    "  -o, --close                COMMAND in a child that does not inherit it\n"
	    "      --mode MODE            a new LOCKFILE's mode: 0600, or 0664 for a group\n"
	    "      --record-args          record whole command lines, not only names\n"
	    "  -F, --no-fork, --json, --fd FD, --path PATH, --reopen, --on-loss SIG,\n"
	    "  --max-hold DUR, -h, --help: see slots(1)\n"
	    POOLCMD_HELP_VERSION
	    POOLCMD_HELP_EXIT "See slots(1).\n",
	.fixed_max = 0,
};

static int64_t deadline_of(const struct poolcmd_opts *o)
{
	return o->wait > 0 ? lb_deadline_after(o->wait) : LB_NO_WAIT;
}

/*
 * 1 when the slot is taken; else 0 with the status to exit with. That
 * status is the user's -E when busy and may well be 0, so it never
 * doubles as "taken".
 */
static int take(const struct poolcmd *cmd, const struct poolcmd_opts *o,
    struct lb_pool *pool, const char *name, unsigned max,
    const struct lb_ident *who, unsigned *slot, int *status)
{
	struct lb_holders busy = { NULL, 0 };
	struct poolcmd_status sl = { name, lb_now(CLOCK_MONOTONIC), 0 };
	int64_t took;
	int r;

	/* -v on a terminal: one line, rewritten while we wait; off one, the last line only */
	if (o->verbose && o->wait > 0 && isatty(STDERR_FILENO))
		lb_pool_set_progress(pool, poolcmd_status_line, &sl);
	/* a waiter is named by the job it waits for, not as lockbox: see title.h */
	if (o->wait > 0)
		lb_title_waiting(who->command);
	/* -q: nobody is told who holds it, so nobody is looked up */
	r = lb_pool_acquire(pool, max, deadline_of(o), who, slot, o->quiet ? NULL : &busy);
	lb_title_restore();
	lb_pool_set_progress(pool, NULL, NULL);
	if (sl.shown)
		(void)!write(STDERR_FILENO, "\r\033[K", 4);

	if (r < 0) {
		*status = LB_EXIT_FAIL;
		return 0;
	}
	if (r == 0) {
		/* --reopen: a caller that opens PATH again needs no words for a file replaced there */
		if (!o->quiet && !(o->reopen && !lb_lockfile_at_path(o->fd, o->path)))
			poolcmd_report_busy(name, cmd->fixed_max == 1, o->wait > 0 ? o->wait : 0,
			    max, &busy, pool);
		lb_holders_free(&busy);
		*status = o->busy_status;
		return 0;
	}
	if (o->verbose)
		lb_warnx("%s: took slot %u of %u", name, *slot, max);
	if (o->flock_verbose) {
		took = lb_now(CLOCK_MONOTONIC) - sl.start;
		printf("%s: getting lock took %lld.%06lld seconds\n", lb_prog,
		    (long long)(took / LB_NS_PER_S), (long long)(took % LB_NS_PER_S / 1000));
	}
	*status = LB_EXIT_OK;
	return 1;
}

/* mutex --verbose: flock(1)'s last line before COMMAND runs, out before the exec */
static void say_executing(const struct poolcmd_opts *o, char *const *command)
{
	if (!o->flock_verbose)
		return;
	printf("%s: executing %s\n", lb_prog, command[0]);
	if (lb_flush_stdout() != 0)
		lb_exit(LB_EXIT_FAIL);
}

/*
 * flock(1)'s "LOCKFILE -c COMMAND": one command string, run by $SHELL
 * (else /bin/sh) -c, as flock(1) runs it. COMMAND itself otherwise.
 */
static char **shell_command(char **command)
{
	static char *argv[4];
	const char *shell = getenv("SHELL");

	if (command[0] == NULL ||
	    (strcmp(command[0], "-c") != 0 && strcmp(command[0], "--command") != 0)) {
		poolcmd_misplaced(command[0]);
		return command;
	}
	if (command[1] == NULL || command[2] != NULL)
		lb_usage_error("%s takes exactly one argument, the command for the shell", command[0]);
	argv[0] = shell != NULL && shell[0] == '/' ? (char *)shell : "/bin/sh";
	argv[1] = "-c";
	argv[2] = command[1];
	return argv;
}

/*
 * -o: COMMAND runs in a child that does not inherit the lock, and we
 * hold it until the child ends, passing it the signals a caller sends
 * us (a terminal's reach it directly), as flock -o does. Its status is
 * ours; 128+n when signal n killed it. With --max-hold we are its
 * watcher: past the hold the child gets CONT and the --on-loss signal,
 * and the lock goes back at once, while we wait on for the child.
 */
static int run_closed(const struct poolcmd_opts *o, struct lb_pool *pool, char **command)
{
	static const int passed[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct lb_super child;
	char hold[32];
	int wstatus, r;

	if (lb_super_init(&child, passed, sizeof passed / sizeof passed[0], NULL, 0,
	    LB_SUPER_NOT_KERNEL) != 0)
		lb_die(LB_EXIT_FAIL, "cannot set up signals");
	r = lb_super_run_until(&child, command, o->max_hold > 0 ?
	    lb_deadline_after(o->max_hold) : LB_NO_DEADLINE, &wstatus);
	if (r == -1) {
		lb_format_duration_ms(o->max_hold, hold);
		if (o->on_loss != 0) {
			lb_super_signal(&child, SIGCONT);
			lb_super_signal(&child, o->on_loss);
			lb_warnx("%s: held for its maximum hold, %s; its lock is given back: sent SIG%s to PIDs %d",
			    lb_pool_name(pool), hold, lb_signal_name(o->on_loss), (int)child.pid);
		} else {
			lb_warnx("%s: held for its maximum hold, %s; its lock is given back",
			    lb_pool_name(pool), hold);
		}
		lb_pool_release(pool, getpid());
		if (lb_super_wait(&child, LB_NO_DEADLINE, &wstatus) != 0)
			lb_die(LB_EXIT_FAIL, "waiting for '%s'", command[0]);
		r = 0;
	}
	return r != 0 ? r : lb_child_status(wstatus);
}

/*
 * LOCKFILE where COMMAND was meant: "mutex /usr/bin/rsync -a src dst"
 * (rsync not installed), "mutex sleep 1 F". A lock file is never made in
 * a directory of PATH, nor named after a command on PATH while the
 * COMMAND given is not found: one line that says the order (1: said), with
 * nothing created. Only a file not there yet is looked at: an existing
 * one is locked as it always was.
 */
static int misordered(const struct poolcmd *cmd, const char *path, char *const *command)
{
	const char *form = cmd->fixed_max ? "mutex [OPTION...] LOCKFILE COMMAND" :
	    "slots [OPTION...] LOCKFILE MAX COMMAND";
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if ((lb_pool_target_caps(path) & LB_POOL_IN_FS) == 0 || lstat(path, &st) == 0 ||
	    errno != ENOENT)
		return 0;
	if (slash == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	if (lb_exec_path_dir(dir)) {
		lb_warnx("%s: not creating a lock file in %s, a directory of PATH: LOCKFILE comes first (%s)",
		    path, dir, form);
		return 1;
	}
	if (slash == NULL && lb_exec_found(path) && !lb_exec_found(command[0])) {
		lb_warnx("%s: not creating a lock file named after a command while '%s' is not found: LOCKFILE comes first (%s)",
		    path, command[0], form);
		return 1;
	}
	return 0;
}

/*
 * "slots LOCKFILE 4 list": a word of the forms that take no MAX, where
 * COMMAND goes, and no command of that name: 127 as for any command not
 * found (nothing created), saying the form meant. 1: said.
 */
static int mode_word(const struct poolcmd *cmd, char *const *command)
{
	static const char *const words[] = { "check", "list", "held", "create" };
	size_t i;

	if (cmd->fixed_max || command[0] == NULL || command[1] != NULL || lb_exec_found(command[0]))
		return 0;
	for (i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strcmp(command[0], words[i]) == 0) {
			lb_warnx("cannot run '%s': %s (%s takes no MAX: slots LOCKFILE %s)",
			    command[0], strerror(ENOENT), words[i], words[i]);
			return 1;
		}
	return 0;
}

static int run(const struct poolcmd *cmd, const struct poolcmd_opts *o,
    const char *path, const char *max_arg, char **command)
{
	struct lb_pool_opts popts = {
		.mode = (mode_t)o->mode, .on_loss = o->on_loss, .shared = o->shared,
		/* -o: we stay, and keep the hold ourselves */
		.max_hold = o->close ? 0 : o->max_hold
	};
	struct lb_ident who;
	struct lb_pool *pool;
	unsigned max = poolcmd_parse_max(cmd, max_arg), slot;
	char env[16];
	int status;

	if (command[0] != NULL && strcmp(command[0], "--") == 0)
		command++;
	else if (cmd->fixed_max == 1)
		command = shell_command(command);	/* mutex(1)'s, as flock(1) has it */
	else
		poolcmd_misplaced(command[0]);
	if (command[0] == NULL)
		lb_usage_error("missing COMMAND");
	if (mode_word(cmd, command))
		return LB_EXIT_NOTFOUND;
	if (misordered(cmd, path, command))
		return LB_EXIT_FAIL;
#ifndef HAVE_OFD_LOCKS
	/* a classic POSIX lock is its process's: no watcher could give it back */
	if (o->max_hold > 0 && !o->close && lb_pool_target_in_fs(path)) {
		lb_warnx("%s: --max-hold needs open file description locks, which this build lacks (or -o)",
		    path);
		return LB_EXIT_FAIL;
	}
#endif
	/* a pool of one (mutex) takes any file, as flock(1) does */
	popts.any_file = max == 1;
	pool = lb_pool_open(path, LB_POOL_WRITE, &popts);
	if (pool == NULL)
		return LB_EXIT_FAIL;
	/* a lock that can be lost tells COMMAND so through what COMMAND inherits */
	if (o->close && (lb_pool_caps(pool) & LB_POOL_LOSS) != 0) {
		lb_warnx("%s: -o needs a lock file: a server's lock is watched for COMMAND through its connection",
		    lb_pool_name(pool));
		lb_pool_close(pool);
		return LB_EXIT_FAIL;
	}
	lb_ident_fill(&who, getpid(), command, o->record_args);
	/* the pool's name: a server URL's password is not repeated */
	if (!take(cmd, o, pool, lb_pool_name(pool), max, &who, &slot, &status)) {
		lb_pool_close(pool);
		return status;
	}
	snprintf(env, sizeof env, "%u", slot);
	if (setenv("LOCKBOX_SLOT", env, 1) != 0)
		lb_die(LB_EXIT_FAIL, "setenv");
	say_executing(o, command);
	if (o->close) {
		/* COMMAND has ended: the lock goes with our open file */
		status = run_closed(o, pool, command);
		lb_pool_close(pool);
		return status;
	}
	if (lb_pool_keep_on_exec(pool, &who) != 0)
		return LB_EXIT_FAIL;
	/* the slot's lock lives on in the fd the command inherits */
	lb_exec(command);
}

/*
 * acquire takes an fd open for reading and writing, as the library opens
 * it. A write-only one comes from flock(1)'s habits, 9>>FILE or 9>FILE,
 * and the second truncates the lock file, wiping every holder's record,
 * before lockbox sees it: refusing write-only fds makes that mistake fail
 * the first time a script runs, not quietly on every run. Read-only fds
 * are refused where the pool adopts the fd ("not open for writing").
 */
static int check_access(int fd, const char *name)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0) {
		lb_warn("%s", name);
		return -1;
	}
	if ((fl & O_ACCMODE) == O_WRONLY) {
		lb_warnx("%s: fd %d is not open for reading and writing; open it with %d<>FILE",
		    name, fd, fd);
		return -1;
	}
	return 0;
}

/*
 * The fd holds slot OWN already, above MAX: another slot would make one
 * open file two holders (and the caller's idea of its slot wrong), so
 * refuse, and leave that slot and its record as they are.
 */
static int held_above(const struct poolcmd *cmd, const char *name, int fd,
    unsigned own, unsigned max)
{
	if (cmd->fixed_max == 1)
		lb_warnx("%s: fd %d holds slot %u already, not the mutex's slot 1; release it first",
		    name, fd, own);
	else
		lb_warnx("%s: fd %d holds slot %u already, above MAX %u; release it first",
		    name, fd, own, max);
	return LB_EXIT_FAIL;
}

/*
 * Take (or with RELEASE let go of) MAX's slot on o->fd, the caller's open
 * file: acquire and release --fd, and flock(1)'s "flock FD" and "flock
 * -u FD" (o->flock_fd: any file, through an fd open in any way, and
 * nothing on stdout).
 */
static int fd_op(const struct poolcmd *cmd, struct poolcmd_opts *o, int release, unsigned max)
{
	/*
	 * A mutex takes any file, on an fd as by its path (a lock file cut
	 * short under its holders); acquire --fd adopts an empty one nobody holds.
	 */
	struct lb_pool_opts popts = { .any_file = o->flock_fd || cmd->fixed_max == 1,
	    .adopt_empty = !o->flock_fd, .shared = o->shared };
	struct lb_pool *pool;
	struct lb_ident who;
	unsigned slot;
	char name[PATH_MAX];
	int status, flock;

	/* messages name the file the caller opened, as it knows it */
	if (o->path != NULL)
		snprintf(name, sizeof name, "%s", o->path);
	else if (lb_procfs_fd_link(0, o->fd, name, sizeof name) <= 0 || name[0] != '/')
		snprintf(name, sizeof name, "fd %d", o->fd);
	if (!release && !o->flock_fd && check_access(o->fd, name) != 0)
		return LB_EXIT_FAIL;
	/*
	 * --path: the caller opened PATH and passed the fd, but between its
	 * check and its open a symlink or another file may have been put in
	 * PATH's place. Checked here, after the open, the fd must be the
	 * regular file that PATH names now, PATH itself not a symlink: then
	 * what the caller meant to lock is what gets locked. (PATH changing
	 * after this check is harmless: the lock is on the file the fd is
	 * open on, as for any holder.)
	 */
	pool = lb_pool_from_fd(o->fd, name, o->path, &popts);
	if (pool == NULL)
		return LB_EXIT_FAIL;
	flock = (lb_pool_caps(pool) & LB_POOL_FLOCK) != 0;
	/* flock(1)'s 9>FILE on a lockbox lock file has truncated it: see check_access */
	if (!release && o->flock_fd && !flock && check_access(o->fd, name) != 0) {
		lb_pool_close(pool);
		return LB_EXIT_FAIL;
	}
	/* the lock belongs to the caller's open file: the caller is its holder */
	if (release) {
		status = lb_pool_release(pool, lb_caller()) == 0 ? LB_EXIT_OK : LB_EXIT_FAIL;
	} else {
		/* taking again what the fd holds changes nothing */
		slot = lb_pool_own_slot(pool);
		lb_ident_fill(&who, lb_caller(), NULL, o->record_args);
		/* a shared holder's slot is any of the file's */
		if (slot > max && !o->shared) {
			status = held_above(cmd, name, o->fd, slot, max);
		} else if (slot != 0) {
			if (o->verbose)
				lb_warnx("%s: holds slot %u already", name, slot);
			if (!o->flock_fd)
				printf("%u\n", slot);
			status = LB_EXIT_OK;
		} else if (take(cmd, o, pool, name, max, &who, &slot, &status) && !o->flock_fd) {
			/*
			 * The caller learns its slot only from stdout: a slot
			 * whose number did not get there is given back, not
			 * left held by a caller that cannot know it (main's
			 * exit funnel reports the write error, 125).
			 */
			printf("%u\n", slot);
			if (lb_flush_stdout() != 0) {
				lb_pool_release(pool, lb_caller());
				status = LB_EXIT_FAIL;
			}
		}
	}
	lb_pool_close(pool);
	return status;
}

/*
 * util-linux flock's "--fd FD COMMAND" and "--fd FD -c COMMAND": FD, an
 * open file of the caller's, locked as "mutex FD" locks it (its lock
 * stays with the caller's open file), then COMMAND run in place, which
 * inherits FD, or with -o in a child that does not: FD is closed at its
 * exec, as flock --close closes it.
 */
static int fd_command(const struct poolcmd *cmd, struct poolcmd_opts *o, char **command)
{
	int status;

	if (command[0] != NULL && strcmp(command[0], "--") == 0)
		command++;
	else
		command = shell_command(command);
	if (command[0] == NULL)
		lb_usage_error("missing COMMAND");
	poolcmd_check_mode(cmd, o, RUN, NULL);
	if (o->mode != 0)
		lb_usage_error("--mode goes with a LOCKFILE: the caller made FD's file");
	o->flock_fd = 1;
	status = fd_op(cmd, o, 0, 1);
	if (status != LB_EXIT_OK)
		return status;
	if (setenv("LOCKBOX_SLOT", "1", 1) != 0)
		lb_die(LB_EXIT_FAIL, "setenv");
	say_executing(o, command);
	if (o->close) {
		if (fcntl(o->fd, F_SETFD, FD_CLOEXEC) != 0)
			lb_die(LB_EXIT_FAIL, "fd %d", o->fd);
		return run_closed(o, NULL, command);
	}
	lb_exec(command);
}

static int by_fd(const struct poolcmd *cmd, struct poolcmd_opts *o, int argc, char **argv)
{
	int release = strcmp(argv[0], "release") == 0;
	int i = poolcmd_parse_opts(cmd, o, argc, argv);
	const char *max_arg = i < argc ? argv[i++] : NULL;
	unsigned max = 0;

	poolcmd_check_mode(cmd, o, release ? RELEASE : ACQUIRE, argv[0]);
	/* acquire's stdout is the slot's number: --verbose is -v's there */
	if (o->flock_verbose) {
		o->flock_verbose = 0;
		o->verbose = 1;
	}
	if (o->reopen && o->path == NULL)
		lb_usage_error("--reopen goes with acquire --path");
	if (release || cmd->fixed_max) {
		if (max_arg != NULL)
			lb_usage_error("unexpected argument '%s'", max_arg);
		max = (unsigned)cmd->fixed_max;
	} else {
		max = poolcmd_parse_max(cmd, max_arg);
	}
	if (i < argc)
		lb_usage_error("unexpected argument '%s'", argv[i]);
	return fd_op(cmd, o, release, max);
}

static void print_count(const struct poolcmd_opts *o, const char *path, size_t n)
{
	struct lb_json j;

	if (o->json) {
		lb_json_start(&j, stdout);
		lb_json_begin_object(&j);
		lb_json_key(&j, "file");
		lb_json_string(&j, path);
		lb_json_key(&j, "held");
		lb_json_int(&j, (long long)n);
		lb_json_end_object(&j);
		putchar('\n');
	} else {
		printf("%zu\n", n);
	}
}

/* check, list, held */
enum { LOOK_COUNT, LOOK_LIST, LOOK_HELD };

/* how many holders of a file gone from the path list names */
#define MOVED_MAX	16
/* how long list looks through the host for other programs' locks and their processes */
#define LIST_TIMEOUT	(5 * LB_NS_PER_S)

/*
 * list: who holds a file that was at the path and is gone from it
 * (renamed over, deleted), which a newcomer does not see: on stderr.
 */
static void report_moved(struct lb_pool *pool)
{
	pid_t pids[MOVED_MAX];
	struct lb_ident who;
	size_t n, i;

	if (lb_pool_moved(pool, pids, MOVED_MAX, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		lb_ident_fill(&who, pids[i], NULL, 0);
		lb_warnx("%s: PID %d (%s) holds a lock on a file that was at this path and has been replaced or deleted",
		    lb_pool_name(pool), (int)pids[i], who.command);
	}
}

/*
 * check prints the count of holders, list describes them and those who
 * wait, held says with its status whether anyone holds (0) or not (1).
 * check and held test the locks of the file alone; list, a person's
 * look, also reads the host's lock table once for other programs' locks.
 */
static int look(const struct poolcmd_opts *o, const char *path, int what)
{
	int count_only = what != LOOK_LIST;
	/* any file: one that is not a lockbox lock file shows its flock(2) holders */
	struct lb_pool_opts popts = { .any_file = 1 };
	struct lb_holders h, w;
	struct lb_pool *pool = lb_pool_open(path, LB_POOL_READ, &popts);
	size_t n;
	int r;

	if (pool == NULL)
		return LB_EXIT_FAIL;
	if (count_only) {
		r = lb_pool_count(pool, &n);
	} else {
		lb_pool_look_host(lb_deadline_after(LIST_TIMEOUT));
		r = lb_pool_holders(pool, &h);
		if (r == 0 && lb_pool_waiters(pool, &w) != 0) {
			lb_holders_free(&h);
			r = -1;
		}
		if (r == 0)
			report_moved(pool);
		lb_pool_look_done();
	}
	if (r != 0) {
		lb_pool_close(pool);
		return LB_EXIT_FAIL;
	}
	if (what == LOOK_HELD) {
		lb_pool_close(pool);
		return n > 0 ? LB_EXIT_OK : LB_EXIT_FREE;
	}
	if (count_only) {
		print_count(o, lb_pool_name(pool), n);
	} else {
		poolcmd_print_list(o->json, (lb_pool_caps(pool) & LB_POOL_HOSTS) != 0, &h, &w);
		lb_holders_free(&h);
		lb_holders_free(&w);
	}
	lb_pool_close(pool);
	return LB_EXIT_OK;
}

/* Changes nothing: create only wants the file identified under the header lock. */
static int unchanged(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg)
{
	(void)area;
	(void)len;
	(void)now;
	(void)arg;
	return 0;
}

/*
 * create: make the lock file, or check the one there, as taking a slot
 * would (no symlink, a regular file of a real file system, the sticky
 * directory rule, a header written into a new or safely adopted empty
 * file, the magic otherwise), and take nothing. The shell library runs
 * it so that bash never has to create the file itself.
 */
static int create(const struct poolcmd_opts *o, const char *path)
{
	struct lb_pool_opts popts = { .mode = (mode_t)o->mode };
	struct lb_pool *pool = lb_pool_open(path, LB_POOL_WRITE, &popts);
	size_t n;
	int r;

	if (pool == NULL)
		return LB_EXIT_FAIL;
	/* a server's locks need no file: reaching it is all there is to check */
	r = lb_pool_caps(pool) & LB_POOL_IN_FS ? lb_pool_atom(pool, unchanged, NULL) :
	    lb_pool_count(pool, &n);
	lb_pool_close(pool);
	return r == 0 ? LB_EXIT_OK : LB_EXIT_FAIL;
}

int poolcmd_main(const struct poolcmd *cmd, int argc, char **argv)
{
	struct poolcmd_opts o = {
		.wait = -1, .busy_status = LB_EXIT_BUSY, .fd = -1, .on_loss = SIGTERM
	};
	int i = poolcmd_parse_opts(cmd, &o, argc, argv);
	const char *path, *word;
	enum poolcmd_mode mode = RUN;
	uint64_t fd;

	if (i >= argc)
		lb_usage_error(o.fd >= 0 && cmd->fixed_max == 1 ? "missing COMMAND" : "missing LOCKFILE");
	if (strcmp(argv[i], "acquire") == 0 || strcmp(argv[i], "release") == 0)
		return by_fd(cmd, &o, argc - i, argv + i);
	if (o.fd >= 0 && cmd->fixed_max == 1)
		return fd_command(cmd, &o, argv + i);
	/* flock(1)'s "flock [-s|-x|-u] FD": a number alone is a descriptor */
	if (cmd->fixed_max == 1 && i + 1 == argc && lb_parse_uint(argv[i], 0, INT_MAX, &fd) == 0) {
		o.fd = (int)fd;
		o.flock_fd = 1;
		poolcmd_check_mode(cmd, &o, o.unlock ? RELEASE : ACQUIRE, o.unlock ? "release" : "acquire");
		return fd_op(cmd, &o, o.unlock, 1);
	}
	path = argv[i++];
	word = i < argc ? argv[i] : NULL;
	if (word != NULL && (strcmp(word, "check") == 0 || strcmp(word, "list") == 0))
		mode = LOOK;
	else if (word != NULL && strcmp(word, "held") == 0)
		mode = HELD;
	else if (word != NULL && strcmp(word, "create") == 0)
		mode = CREATE;
	if (mode != RUN && i + 1 < argc) {
		poolcmd_misplaced(argv[i + 1]);
		lb_usage_error("unexpected argument '%s'", argv[i + 1]);
	}
	poolcmd_check_mode(cmd, &o, mode, word);
	if (mode == LOOK)
		return look(&o, path, word[0] == 'c' ? LOOK_COUNT : LOOK_LIST);
	if (mode == HELD)
		return look(&o, path, LOOK_HELD);
	if (mode == CREATE)
		return create(&o, path);
	if (cmd->fixed_max)
		return run(cmd, &o, path, NULL, argv + i);
	return run(cmd, &o, path, word, argv + i + (word != NULL));
}

int slots_main(int argc, char **argv)
{
	return poolcmd_main(&slots, argc, argv);
}

/* The locks a shell holds through the library's builtins: acquire_mutex, release_mutex, acquire_slot, release_slot, mutex. */
/* SPDX-License-Identifier: ISC */
/*
 * The same steps as lockbox-fallback.bash's functions, which say why
 * each is taken, in C: a lock per file, keyed by the file's path with its
 * directory resolved; the fd opened by the shell's process and locked by
 * the applet's own code on it (an open-file-description lock, so the
 * lock lives as long as the fd, in this shell and in the children that
 * inherit it, until it is released); the holder this process.
 *
 * What this file keeps lives in the shell's memory, so a subshell (a fork)
 * gets a copy: an entry is this shell's only while its pid is getpid(),
 * and a subshell neither releases nor reuses its parent's locks.
 */
#define _GNU_SOURCE 1	/* as bash's own config.h has it */

#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>

#include "builtins.h"
#include "shell.h"
#include "common.h"

#include "clock.h"
#include "exitcodes.h"
#include "inshell.h"
#include "lockfile.h"
#include "parse.h"
#include "pool.h"
#include "procfs.h"

/* One lock this shell (or, in a subshell, its parent) holds. */
struct held {
	char *key;		/* the lock file's key (key_of) */
	int fd;			/* the open file that holds it */
	pid_t pid;		/* the process that holds it */
	int slots;		/* taken as a slot (release_slot's), else as a mutex */
	unsigned slot;		/* its number */
	int depth;		/* how many of the script's functions ran when it was taken */
	int nested;		/* taken again (changing nothing) by a deeper function */
};

static struct held *held;
static size_t nheld, room;
/* the key LOCKBOX_SLOT came from, or NULL */
static char *slot_key;
/* the warnings this shell gave, once each */
static int warned_subshell, warned_nested;

static int ours(size_t i)
{
	return held[i].pid == getpid();
}

/*
 * FILE's key: the physical path of its directory and its base name, so
 * that x.lock, ./x.lock and a path through a symlinked directory are one
 * lock. Relative to $PWD, the directory's . and .. taken as written while
 * no directory on the way is a symlink, else the directory's physical
 * path (as cd -P finds it, or as written when it cannot be entered). The
 * base name is kept as it is: a final symlink is refused when it is
 * opened. NULL: out of memory (said). lockbox-fallback.bash's
 * _lockbox_key is the same key in bash, for a shell without the builtin.
 */
static char *key_of(const char *arg)
{
	const char *pwd = get_string_value("PWD"), *p, *e;
	size_t plen = pwd != NULL ? strlen(pwd) : 0, n = strlen(arg), dlen;
	char *path, *cur, *real;
	size_t clen = 0;
	struct stat st;

	/* ${PWD%/}/PATH: one slash less at PWD's end */
	if (arg[0] == '/')
		plen = 0;
	else if (plen > 0 && pwd[plen - 1] == '/')
		plen--;
	path = malloc(plen + n + 2);
	cur = malloc(plen + n + 2);
	if (path == NULL || cur == NULL)
		goto nomem;
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
			if (cur == NULL)
				goto nomem;
			break;
		}
	}
	/* $cur, then the slash and base name */
	memcpy(cur + clen, path + dlen, strlen(path + dlen) + 1);
	free(path);
	return cur;
nomem:
	free(path);
	free(cur);
	builtin_error("%s", strerror(ENOMEM));
	return NULL;
}

/*
 * The entry of the lock this shell holds on FILE, or -1: by FILE's key
 * (*KEY, to free), or a held lock whose fd is open on the file FILE
 * names under another name (a hard link, a bind mount, a renamed
 * directory), so that no spelling of a held file leaves it held. -2:
 * out of memory.
 */
static ssize_t find(const char *file, char **key)
{
	struct stat fs, hs;
	size_t i;

	*key = key_of(file);
	if (*key == NULL)
		return -2;
	for (i = 0; i < nheld; i++)
		if (ours(i) && strcmp(held[i].key, *key) == 0)
			return (ssize_t)i;
	if (nheld == 0 || stat(file, &fs) != 0)
		return -1;
	for (i = 0; i < nheld; i++)
		if (ours(i) && fstat(held[i].fd, &hs) == 0 && hs.st_dev == fs.st_dev &&
		    hs.st_ino == fs.st_ino)
			return (ssize_t)i;
	return -1;
}

/* LOCKBOX_SLOT=SLOT, exported, from KEY's lock */
static void set_slot(const char *key, unsigned slot)
{
	char text[16];
	SHELL_VAR *v;
	char *k;

	snprintf(text, sizeof text, "%u", slot);
	v = bind_variable("LOCKBOX_SLOT", text, 0);
	if (v != NULL)
		set_auto_export(v);
	if (slot_key == NULL || strcmp(slot_key, key) != 0) {
		k = strdup(key);
		if (k != NULL) {
			free(slot_key);
			slot_key = k;
		}
	}
}

/* FD moved to 10 or above, as bash's {var} redirections place theirs */
static int high(int fd, int cloexec)
{
	int moved;

	if (fd < 0 || fd >= 10)
		return fd;
	moved = fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 10);
	close(fd);
	return moved;
}

/*
 * A new read-write fd on FILE, or -1 with *STATUS. The shell never
 * creates the file nor opens it for writing by its name: a missing file
 * (or for a pool an empty one) is made by the applet (O_EXCL, no symlink, the sticky
 * directory rule, the header written); then FILE is opened read-only,
 * which creates nothing, and that very open file reopened read-write
 * through /proc/self/fd without looking FILE up again. What is swapped in
 * between, the applet refuses: it is given --path FILE and checks that
 * the fd is the regular lock file FILE names.
 */
static int open_lock(const char *app, const char *file, int *status)
{
	char *create[] = { (char *)app, "--", (char *)file, "create", NULL };
	struct stat st;
	int ro, fd;

	/* a server's URL (backends.c): a lock the shell could not hold on an fd of its own */
	if (!lb_pool_target_in_fs(file)) {
		lb_sh_warn(app, "the library takes lock files only, not a server's URL; for a lock on a server, run: lockbox %s URL COMMAND",
		    app);
		*status = LB_EXIT_FAIL;
		return -1;
	}
	/* (an empty file is a pool's to adopt; a mutex takes it as it is, as acquire --fd does) */
	if ((lstat(file, &st) == 0 && S_ISLNK(st.st_mode)) || stat(file, &st) != 0 ||
	    (st.st_size == 0 && strcmp(app, "slots") == 0)) {
		*status = lb_sh_applet(NULL, 4, create);
		if (*status != 0)
			return -1;
	}
	*status = LB_EXIT_FAIL;
	if (lstat(file, &st) == 0 && S_ISLNK(st.st_mode)) {
		lb_sh_warn(app, "%s: is a symbolic link; refusing to follow it", file);
		return -1;
	}
	if (stat(file, &st) != 0 || !S_ISREG(st.st_mode)) {
		lb_sh_warn(app, "%s: not a regular file", file);
		return -1;
	}
	/* non-blocking: a FIFO swapped in since the look above does not stall the shell */
	ro = high(open(file, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC), 1);
	if (ro < 0) {
		lb_sh_warn(app, "%s: %s", file, strerror(errno));
		return -1;
	}
	/* not close-on-exec: the shell's children inherit it, as an fd bash opened */
	fd = high(lb_procfs_fd_reopen(ro, O_RDWR | O_NOCTTY), 0);
	if (fd < 0) {
		lb_sh_warn(app, "%s: %s", file, strerror(errno));
		close(ro);
		return -1;
	}
	close(ro);
	*status = 0;
	return fd;
}

/* Whether TEXT is 0*[0-9]{1,9}, and its value */
static int small_number(const char *text, unsigned long *v)
{
	const char *p = text;

	while (*p == '0' && p[1] != '\0')
		p++;
	if (*p == '\0' || strlen(p) > 9 || strspn(p, "0123456789") != strlen(p))
		return 0;
	*v = strtoul(p, NULL, 10);
	return 1;
}

static int add(char *key, int fd, int slots, unsigned slot, int depth)
{
	struct held *more;

	if (nheld == room) {
		more = realloc(held, (room * 2 + 4) * sizeof *held);
		if (more == NULL)
			return -1;
		held = more;
		room = room * 2 + 4;
	}
	held[nheld].key = key;
	held[nheld].fd = fd;
	held[nheld].pid = getpid();
	held[nheld].slots = slots;
	held[nheld].slot = slot;
	held[nheld].depth = depth;
	held[nheld].nested = 0;
	nheld++;
	return 0;
}

/* The acquire_* options, mutex(1)'s spellings where they make sense. */
struct acquire_opts {
	int quiet, shared, verbose;
	const char *wait;	/* NULL: do not wait */
};

/* mutex(1)'s long options that the library takes, as their letters */
static const struct {
	const char *name;
	char letter;
} long_opts[] = {
	{ "exclusive", 'x' }, { "nb", 'n' }, { "nonblock", 'n' }, { "nonblocking", 'n' },
	{ "quiet", 'q' }, { "shared", 's' }, { "timeout", 'w' }, { "verbose", 'v' },
	{ "wait", 'w' },
};

/*
 * -n -q -s -v -x (-e), bundled too, -w DUR (-wDUR, -qw DUR), and their
 * long forms (--wait DUR, --wait=DUR): how many words they took, or -1
 * with *STATUS after a one-line usage error naming USAGE. Nothing else
 * starting with - is a FILE: it is refused, so that no file is made for
 * an option mistyped (-- before a FILE that starts with -).
 */
static int acquire_opts(const char *name, const char *usage, struct acquire_opts *o,
    int argc, char **argv, int *status)
{
	const char *a, *val, *word;
	size_t k, n, nlong = sizeof long_opts / sizeof long_opts[0];
	int i, last;

	memset(o, 0, sizeof *o);
	for (i = 1; i < argc; i++) {
		word = argv[i];
		if (strcmp(word, "--") == 0) {
			i++;
			break;
		}
		if (word[0] != '-' || word[1] == '\0')
			break;
		for (a = word + 1, last = 0; !last && *a != '\0'; a++) {
			val = NULL;
			if (*a == '-') {
				/* a long option as its letter, with --NAME=VALUE's value */
				n = strcspn(a + 1, "=");
				for (k = 0; k < nlong; k++)
					if (strlen(long_opts[k].name) == n &&
					    strncmp(long_opts[k].name, a + 1, n) == 0)
						break;
				if (k == nlong || (a[n + 1] == '=' && long_opts[k].letter != 'w')) {
					lb_sh_warn(name, "invalid option '%s'; usage: %s", word, usage);
					*status = LB_EXIT_FAIL;
					return -1;
				}
				val = a[n + 1] == '=' ? a + n + 2 : NULL;
				a = &long_opts[k].letter;
				last = 1;
			} else if (*a == 'w' && a[1] != '\0') {
				val = a + 1;
			}
			switch (*a) {
			case 'e':
			case 'x':
				o->shared = 0;
				break;
			case 'n':
				o->wait = NULL;	/* the last of -n and -w counts, as in mutex(1) */
				break;
			case 'q':
				o->quiet = 1;
				break;
			case 's':
				o->shared = 1;
				break;
			case 'v':
				o->verbose = 1;
				break;
			case 'w':
				if (val == NULL && i + 1 >= argc) {
					lb_sh_warn(name, "option '%s' needs an argument",
					    word[1] == '-' ? word : "-w");
					*status = LB_EXIT_FAIL;
					return -1;
				}
				o->wait = val != NULL ? val : argv[++i];
				last = 1;	/* its value ends the word */
				break;
			default:
				lb_sh_warn(name, "invalid option '-%c'; usage: %s", *a, usage);
				*status = LB_EXIT_FAIL;
				return -1;
			}
		}
	}
	/* -w '' is no wait, as the library has always read it */
	if (o->wait != NULL && *o->wait == '\0')
		o->wait = NULL;
	return i;
}

/* How often a file replaced at its path is opened again, at least: while a -w lasts */
#define REOPEN_TRIES	16

/*
 * The lock taken in a subshell that $(...) or a pipeline runs (its stdout
 * a pipe, not the script's own) ends with that subshell, at once: the
 * script never holds it. Said once in this shell. A ( ... ) that runs
 * its commands under the lock writes to the script's stdout, and is left
 * alone.
 */
static void warn_subshell(const char *name, const char *file)
{
	struct stat mine, top;

	if (warned_subshell || getpid() == dollar_dollar_pid ||
	    fstat(STDOUT_FILENO, &mine) != 0 || !S_ISFIFO(mine.st_mode))
		return;
	if (lb_procfs_fd_stat(dollar_dollar_pid, STDOUT_FILENO, &top) == 0 &&
	    top.st_dev == mine.st_dev && top.st_ino == mine.st_ino)
		return;
	warned_subshell = 1;
	lb_sh_warn(name, "%s: taken in a subshell of $(...) or a pipeline, which releases it as it ends: the script does not hold it",
	    file);
}

/*
 * One try at the slot on FD, open on FILE, waiting WAIT (NULL: not at
 * all); a FILE replaced at its path is not reported (--reopen), as we
 * open it again. The applet's status; its stdout in *OUT.
 */
static int try_fd(const char *app, const struct acquire_opts *o, const char *file,
    const char *max, int fd, const char *wait, char **out)
{
	char fdtext[16], *args[16];
	int n = 0;

	args[n++] = (char *)app;
	args[n++] = "acquire";
	if (o->quiet)
		args[n++] = "-q";
	if (o->shared)
		args[n++] = "-s";
	if (o->verbose)
		args[n++] = "-v";
	if (wait != NULL) {
		args[n++] = "-w";
		args[n++] = (char *)wait;
	}
	snprintf(fdtext, sizeof fdtext, "%d", fd);
	args[n++] = "--fd";
	args[n++] = fdtext;
	args[n++] = "--path";
	args[n++] = (char *)file;
	args[n++] = "--reopen";
	if (max != NULL)
		args[n++] = (char *)max;
	args[n] = NULL;
	return lb_sh_applet(out, n, args);
}

/*
 * Take a slot of FILE (APP mutex: its one slot, or with -s one shared
 * lock; slots: one of MAX's). A file replaced at its path before the
 * lock was had (the lock taken on it given back) is opened again, and
 * waited for for the rest of -w, as the binary's own runs do: the
 * shell's fd cannot be opened again by the applet.
 */
static int acquire(const char *name, const char *app, const struct acquire_opts *o,
    const char *file, const char *max)
{
	char *out = NULL, *key, *end, left[32];
	const char *wait = o->wait;
	unsigned long slot, limit;
	int64_t ns, deadline = LB_NO_DEADLINE;
	ssize_t i;
	int fd = -1, status, tries;

	i = find(file, &key);
	if (i == -2)
		return LB_EXIT_FAIL;
	if (i >= 0) {
		/* already ours: taking it again changes nothing; but a slot
		 * above MAX is not taken twice (the binary's words) */
		free(key);
		slot = held[i].slot;
		if (strcmp(app, "mutex") == 0 && slot != 1) {
			lb_sh_warn(app, "%s: fd %d holds slot %lu already, not the mutex's slot 1; release it first",
			    file, held[i].fd, slot);
			return LB_EXIT_FAIL;
		}
		if (max != NULL && small_number(max, &limit) && limit < slot) {
			lb_sh_warn(app, "%s: fd %d holds slot %lu already, above MAX %lu; release it first",
			    file, held[i].fd, slot, limit);
			return LB_EXIT_FAIL;
		}
		if (variable_context > held[i].depth)
			held[i].nested = 1;
		if (max != NULL)
			set_slot(held[i].key, (unsigned)slot);
		return 0;
	}
	/* a DUR the applet refuses is refused on the first try, as given */
	if (wait != NULL && strcmp(wait, "inf") != 0 && strcmp(wait, "infinity") != 0 &&
	    lb_parse_duration(wait, LB_NS_PER_S, &ns) == 0)
		deadline = lb_deadline_after(ns);
	/* a waiter arms the EXIT trap before it waits, not in the handoff:
	 * the script's next command starts as soon as the lock is its own */
	if (wait != NULL)
		lb_sh_arm();
	for (tries = 1;; tries++) {
		fd = open_lock(app, file, &status);
		if (fd < 0) {
			free(key);
			return status;
		}
		status = try_fd(app, o, file, max, fd, wait, &out);
		if (status == 0)
			break;
		free(out);
		out = NULL;
		/* replaced at its path: another file is there to lock now */
		if (status != LB_EXIT_BUSY || lb_lockfile_at_path(fd, file)) {
			free(key);
			close(fd);
			return status;
		}
		close(fd);
		/* the rest of -w, to the millisecond up; none left: a few more looks */
		if (deadline != LB_NO_DEADLINE) {
			ns = lb_remaining(deadline);
			snprintf(left, sizeof left, "%lldms", (long long)((ns + LB_NS_PER_MS - 1) / LB_NS_PER_MS));
			wait = ns > 0 ? left : NULL;
		}
		if (tries >= REOPEN_TRIES && wait == NULL) {
			lb_sh_warn(app, "%s: replaced again and again while being locked; giving up", file);
			free(key);
			return LB_EXIT_FAIL;
		}
	}
	end = out;
	slot = out != NULL && *out >= '1' && *out <= '9' ? strtoul(out, &end, 10) : 0;
	if (slot == 0 || *end != '\0' || slot > UINT_MAX ||
	    add(key, fd, max != NULL, (unsigned)slot, variable_context) != 0) {
		char fdtext[16];
		char *release[] = { (char *)app, "release", "--fd", fdtext, NULL };

		if (slot == 0 || *end != '\0' || slot > UINT_MAX)
			lb_sh_warn(app, "%s: no slot number from %s", file, lb_sh_binary());
		else
			builtin_error("%s", strerror(ENOMEM));
		free(out);
		free(key);
		snprintf(fdtext, sizeof fdtext, "%d", fd);
		lb_sh_applet(NULL, 4, release);
		close(fd);
		return LB_EXIT_FAIL;
	}
	free(out);
	if (max != NULL)
		set_slot(key, (unsigned)slot);
	lb_sh_arm();
	warn_subshell(name, file);
	return 0;
}

/*
 * Unlock entry I, then close its fd. The explicit unlock matters: a
 * background child that inherited the fd shares the open file, and
 * closing our copy alone would leave the lock with it. NAME: a release
 * the script called (the EXIT trap's: NULL), which says once when it
 * drops a lock that an outer caller took and a deeper function took
 * again: that caller goes on as if it held it.
 */
static int drop(const char *name, size_t i, const char *file)
{
	char fdtext[16];
	char *args[] = { held[i].slots ? "slots" : "mutex", "release", "--fd", fdtext, NULL };
	int status;

	if (name != NULL && held[i].nested && variable_context > held[i].depth && !warned_nested) {
		warned_nested = 1;
		lb_sh_warn(name, "%s: released in a function that took it again, which changed nothing: the caller that took it first holds it no more",
		    file != NULL ? file : held[i].key);
	}
	snprintf(fdtext, sizeof fdtext, "%d", held[i].fd);
	status = lb_sh_applet(NULL, 4, args);
	close(held[i].fd);
	if (slot_key != NULL && strcmp(slot_key, held[i].key) == 0) {
		free(slot_key);
		slot_key = NULL;
		unbind_variable("LOCKBOX_SLOT");
	}
	free(held[i].key);
	held[i] = held[--nheld];
	return status;
}

/*
 * FILE's lock, by any of its names, or with FILE NULL every lock of the
 * kind (SLOTS) this shell holds. Afterwards this shell holds no lock on
 * FILE: not holding it (released already, or a lock of the parent shell
 * seen from a subshell) changes nothing and returns 0, so a script's own
 * EXIT trap may release what the library's released first.
 */
static int release(const char *name, int slots, const char *file)
{
	char *key;
	ssize_t i;
	size_t j;
	int status = 0, r;

	if (file != NULL) {
		i = find(file, &key);
		free(key);
		if (i == -2)
			return LB_EXIT_FAIL;
		return i >= 0 ? drop(name, (size_t)i, file) : 0;
	}
	for (j = nheld; j-- > 0;)
		if (ours(j) && held[j].slots == slots && (r = drop(name, j, NULL)) != 0)
			status = r;
	return status;
}

int lb_sh_release_all(void)
{
	size_t j;
	int status = 0, r;

	for (j = nheld; j-- > 0;)
		if (ours(j) && (r = drop(NULL, j, NULL)) != 0)
			status = r;
	return status;
}

/* [[ -d DIR && -w DIR ]] */
static int is_writable_dir(const char *dir)
{
	struct stat st;

	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	    faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) == 0;
}

/* The default lock file, from $LOCKBOX_MUTEX_FILE or the script's name; to free. */
static char *default_file(void)
{
	const char *env = get_string_value("LOCKBOX_MUTEX_FILE"), *zero, *dir;
	char *name, *file;
	size_t i, j, n, len;
	mbstate_t mb;

	if (env != NULL && *env != '\0')
		return strdup(env);
	zero = dollar_vars[0] != NULL ? dollar_vars[0] : "";
	if (strrchr(zero, '/') != NULL)
		zero = strrchr(zero, '/') + 1;
	if (*zero == '-')
		zero++;
	len = strlen(zero);
	name = malloc(len + 1);
	if (name == NULL)
		return NULL;
	/* every other character, as the shell counts characters, becomes one _ */
	memset(&mb, 0, sizeof mb);
	for (i = j = 0; i < len; i += n) {
		n = mbrlen(zero + i, len - i, &mb);
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&mb, 0, sizeof mb);
			n = 1;
		}
		if (n == 1 && strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
		    zero[i]) != NULL)
			name[j++] = zero[i];
		else
			name[j++] = '_';
	}
	name[j] = '\0';
	if (j == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		free(name);
		name = strdup("lockbox");
		if (name == NULL)
			return NULL;
	}
	dir = get_string_value("XDG_RUNTIME_DIR");
	if (is_writable_dir("/run/lock"))
		dir = "/run/lock";
	else if (dir == NULL || *dir == '\0' || !is_writable_dir(dir))
		dir = "/tmp";
	file = malloc(strlen(dir) + strlen(name) + 7);
	if (file != NULL)
		sprintf(file, "%s/%s.lock", dir, name);
	free(name);
	return file;
}

#define USAGE_ACQUIRE_MUTEX	"acquire_mutex [-nqsvx] [-w DUR] [FILE]"
#define USAGE_ACQUIRE_SLOT	"acquire_slot [-nqv] [-w DUR] FILE MAX"

/*
 * acquire_mutex [-nqsvx] [-w DUR] [FILE]: the exclusive lock on FILE (-s:
 * a shared one); 75 (and the holder named, unless -q) when it is held;
 * with -w the applet waits up to DUR, blocked in the kernel.
 */
int lb_sh_acquire_mutex(int argc, char **argv)
{
	struct acquire_opts o;
	char *file;
	int i, status;

	i = acquire_opts(argv[0], USAGE_ACQUIRE_MUTEX, &o, argc, argv, &status);
	if (i < 0)
		return status;
	if (argc - i > 1) {
		lb_sh_warn(argv[0], "unexpected argument '%s'", argv[i + 1]);
		return LB_EXIT_FAIL;
	}
	if (i < argc)
		return acquire(argv[0], "mutex", &o, argv[i], NULL);
	file = default_file();
	if (file == NULL) {
		builtin_error("%s", strerror(ENOMEM));
		return LB_EXIT_FAIL;
	}
	status = acquire(argv[0], "mutex", &o, file, NULL);
	free(file);
	return status;
}

/*
 * release_mutex and release_slot take [--] [FILE]: FILE, or NULL for
 * none, in *FILE; -1 after a one-line usage error (an option: none is
 * taken, and none names a file).
 */
static int release_args(int argc, char **argv, const char **file)
{
	int i = argc > 1 && strcmp(argv[1], "--") == 0 ? 2 : 1;

	*file = i < argc ? argv[i] : NULL;
	if (i == 1 && *file != NULL && (*file)[0] == '-' && (*file)[1] != '\0') {
		lb_sh_warn(argv[0], "invalid option '%s'; usage: %s [FILE]", *file, argv[0]);
		return -1;
	}
	if (argc > i + 1) {
		lb_sh_warn(argv[0], "unexpected argument '%s'", argv[i + 1]);
		return -1;
	}
	return 0;
}

/* release_mutex [FILE]: FILE's lock, or with no FILE every mutex this shell holds */
int lb_sh_release_mutex(int argc, char **argv)
{
	const char *file;

	if (release_args(argc, argv, &file) != 0)
		return LB_EXIT_FAIL;
	return release(argv[0], 0, file);
}

/* acquire_slot [-nqv] [-w DUR] FILE MAX: one of MAX slots; LOCKBOX_SLOT set and exported */
int lb_sh_acquire_slot(int argc, char **argv)
{
	struct acquire_opts o;
	int i, status;

	i = acquire_opts(argv[0], USAGE_ACQUIRE_SLOT, &o, argc, argv, &status);
	if (i < 0)
		return status;
	if (o.shared) {
		lb_sh_warn(argv[0], "-s goes with acquire_mutex: a slot is never shared");
		return LB_EXIT_FAIL;
	}
	if (argc - i != 2) {
		lb_sh_warn(argv[0], "usage: %s", USAGE_ACQUIRE_SLOT);
		return LB_EXIT_FAIL;
	}
	return acquire(argv[0], "slots", &o, argv[i], argv[i + 1]);
}

/* release_slot [FILE]: FILE's slot, or with no FILE every slot this shell holds */
int lb_sh_release_slot(int argc, char **argv)
{
	const char *file;

	if (release_args(argc, argv, &file) != 0)
		return LB_EXIT_FAIL;
	return release(argv[0], 1, file);
}

/*
 * mutex acquire [-q] [-w DUR] [FILE] | mutex release [FILE]: the seed's
 * spelling. Every other form is the program's (mutex FILE list|check,
 * mutex [-w DUR] FILE COMMAND..., mutex acquire|release --fd FD), which
 * this builtin would otherwise hide from a script that loads it.
 */
int lb_sh_mutex(int argc, char **argv)
{
	char **words;
	int i, status;

	if (argc >= 2 && (strcmp(argv[1], "acquire") == 0 || strcmp(argv[1], "release") == 0)) {
		/* acquire --fd FD and release --fd FD are the applet's, in this shell */
		for (i = 2; i < argc; i++)
			if (strcmp(argv[i], "--fd") == 0 || strncmp(argv[i], "--fd=", 5) == 0)
				return lb_sh_applet(NULL, argc, argv);
		/* the rest as acquire_mutex's or release_mutex's, which its messages name */
		if (strcmp(argv[1], "acquire") == 0) {
			argv[1] = "acquire_mutex";
			return lb_sh_acquire_mutex(argc - 1, argv + 1);
		}
		argv[1] = "release_mutex";
		return lb_sh_release_mutex(argc - 1, argv + 1);
	}
	words = malloc(((size_t)argc + 2) * sizeof *words);
	if (words == NULL) {
		builtin_error("%s", strerror(ENOMEM));
		return LB_EXIT_FAIL;
	}
	words[0] = (char *)lb_sh_binary();
	for (i = 0; i < argc; i++)
		words[i + 1] = argv[i];
	words[argc + 1] = NULL;
	status = lb_sh_run(words);
	free(words);
	return status;
}

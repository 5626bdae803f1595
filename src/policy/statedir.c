/* Where adaptive's state lives: its directory, trusting it and its files, atom file names and URLs. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atom.h"
#include "err.h"
#include "exitcodes.h"
#include "hash.h"
#include "host.h"
#include "pool.h"
#include "statedir.h"
#include "text.h"

char *lb_path_join(const char *a, const char *b)
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

	/* a misspelt URL would be a directory made */
	if (lb_pool_misspelt(dir))
		lb_exit(LB_EXIT_FAIL);
	if (lb_pool_target_in_fs(dir))
		return lb_path_join(dir, "");
	/* NAME is the lock: the URL names only the database */
	if (strstr(dir, "?lock=") != NULL || strstr(dir, "&lock=") != NULL) {
		s = lb_url_mask(dir);
		lb_usage_error("invalid state database '%s': lock= comes from NAME",
		    s != NULL ? s : "postgresql://");
	}
	s = strdup(dir);
	if (s == NULL)
		lb_die(LB_EXIT_FAIL, "out of memory");
	return s;
}

/*
 * $LOCKBOX_DIR, else /var/lib/lockbox for root, else the XDG state home's.
 * secure_getenv: a setuid, setgid or capability-raised lockbox neither
 * writes where its caller's environment says nor runs the PostgreSQL
 * helper for a postgresql:// LOCKBOX_DIR.
 */
char *lb_state_dir(const char *opt_dir)
{
	const char *env = secure_getenv("LOCKBOX_DIR"), *home;
	char *base, *dir;

	if (opt_dir != NULL)
		return dir_or_url(opt_dir);
	if (env != NULL && *env != '\0')
		return dir_or_url(env);
	if (geteuid() == 0)
		return lb_path_join("/var/lib/lockbox", "");
	env = secure_getenv("XDG_STATE_HOME");
	if (env != NULL && env[0] == '/')	/* relative values are to be ignored */
		return lb_path_join(env, "lockbox");
	/* cron sets HOME; the password database is not asked (static builds) */
	home = secure_getenv("HOME");
	if (home == NULL || *home == '\0')
		lb_diex(LB_EXIT_FAIL, "no state directory: set LOCKBOX_DIR or HOME, or use -d");
	base = lb_path_join(home, ".local/state");
	dir = lb_path_join(base, "lockbox");
	free(base);
	return dir;
}

/* How a message on an unusable state directory ends: what to do about it. */
#define DIR_FIX "use another with -d DIR or LOCKBOX_DIR"

/* mkdir -p, each new directory with MODE. 0, or -1 (reported). */
int lb_make_dirs(char *dir, mode_t mode)
{
	struct stat st;
	char *p = dir;
	int e;

	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		lb_warnx("%s: the state directory is not a directory; " DIR_FIX, dir);
		return -1;
	}
	for (;;) {
		while (*p == '/')
			p++;
		p = strchr(p, '/');
		if (p != NULL)
			*p = '\0';
		if (mkdir(dir, mode) != 0 && errno != EEXIST) {
			e = errno;
			if (p != NULL)
				*p = '/';
			lb_warnx("%s: cannot create the state directory: %s; " DIR_FIX,
			    dir, strerror(e));
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
 * state file itself is ours or root's, which lb_state_file_check tells once
 * it is open. Returns the directory's fd, *shared set for the sticky case,
 * or -1 (refused, reported) before anything is created in it.
 */
int lb_state_dir_open(const char *dir, int *shared)
{
	uid_t me = geteuid();
	struct stat st;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	*shared = 0;
	if (fd < 0 || fstat(fd, &st) != 0) {
		lb_warnx("%s: state directory: %s; " DIR_FIX, dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_uid != me && st.st_uid != 0)
		lb_warnx("%s: state directory owned by uid %ld, who could replace its files; refusing it; " DIR_FIX,
		    dir, (long)st.st_uid);
	else if (!(st.st_mode & (S_IWGRP | S_IWOTH)))
		return fd;
	else if (!(st.st_mode & S_ISVTX))
		lb_warnx("%s: state directory writable by others (mode %04o, not sticky); refusing it; " DIR_FIX,
		    dir, (unsigned)(st.st_mode & 07777));
	else {
		*shared = 1;
		return fd;
	}
	close(fd);
	return -1;
}

/*
 * In a shared sticky directory: the file POOL opened as PATH is the one
 * there, and ours or root's. MISSING_OK (status, which opens nothing
 * that is missing): no file there is no file to refuse. 0, or -1
 * (refused, reported).
 */
int lb_state_file_check(struct lb_pool *pool, const char *path, int dirfd, int missing_ok)
{
	const char *base = strrchr(path, '/') + 1;
	struct lb_lock_site site;
	struct stat st;

	if (lb_pool_lock_site(pool, LB_ATOM_SLOT, &site) != 0) {
		if (missing_ok && fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
		    errno == ENOENT)
			return 0;
		if (missing_ok)
			lb_warnx("%s: replaced while it was opened; refusing it", path);
		else
			lb_warn("%s", path);
		return -1;
	}
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		lb_warn("%s", path);
		return -1;
	}
	if (st.st_dev != site.dev || st.st_ino != site.ino) {
		lb_warnx("%s: replaced while it was opened; refusing it", path);
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		lb_warnx("%s: owned by uid %ld in a directory others can write to; refusing it",
		    path, (long)st.st_uid);
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
char *lb_atom_path(const char *dir, const char *name)
{
	char file[128 + 32];
	uint64_t h = lb_fnv1a64(name, strlen(name));
	const unsigned char *p;
	size_t n = 0;

	if (!lb_pool_target_in_fs(dir))
		return atom_url(dir, name);
	for (p = (const unsigned char *)name; *p != '\0' && n < 128; p++)
		file[n++] = ascii_alnum(*p) ? (char)*p : '_';
	snprintf(file + n, sizeof file - n, "-%08lx.lock",
	    (unsigned long)((h ^ h >> 32) & 0xffffffffu));
	return lb_path_join(dir, file);
}

void lb_atom_check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > LB_ATOM_NAME_MAX)
		lb_usage_error("invalid NAME '%s': expected 1 to %d bytes", name,
		    LB_ATOM_NAME_MAX);
}

/*
 * Whether a directory entry is named as lb_atom_path names state files:
 * letters, digits and '_', a dash, eight hex digits, ".lock". Nothing
 * else is looked at, so a name made to be printed (escapes, newlines)
 * never reaches the terminal or a message.
 */
int lb_atom_file_name(const char *s)
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

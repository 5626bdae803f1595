/* The lock files in use on this host, by path, from the kernel's lock table (lockbox locks). */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lockfile.h"
#include "lockscan.h"
#include "parse.h"
#include "procfs.h"

/* descriptors looked at, at most, to find the paths of locked files */
#define LOCKED_FDS_MAX	(1 << 20)

static int by_id(const void *a, const void *b)
{
	const struct lb_locked_file *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

void lb_locked_files_free(struct lb_locked_file *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

/*
 * The path of descriptor PATH (/proc/PID/fd/N), open on the file ST. A
 * descriptor opened under a name since removed (a lock file lockbox made
 * under a temporary name, then linked under its own) shows that name:
 * the file is then looked for in that directory, by its inode.
 */
static char *fd_path(const char *path, const struct stat *st)
{
	char buf[PATH_MAX], *slash, *found = NULL;
	ssize_t r = readlink(path, buf, sizeof buf - 1);
	struct dirent *e;
	struct stat es;
	size_t len;
	DIR *d;

	if (r <= 0 || buf[0] != '/')
		return NULL;
	buf[r] = '\0';
	len = (size_t)r;
	if (len <= 10 || strcmp(buf + len - 10, " (deleted)") != 0)
		return strdup(buf);
	buf[len - 10] = '\0';
	slash = strrchr(buf, '/');
	*slash = '\0';
	d = opendir(slash == buf ? "/" : buf);
	while (d != NULL && found == NULL && (e = readdir(d)) != NULL)
		if (e->d_ino == st->st_ino && fstatat(dirfd(d), e->d_name, &es, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(es.st_mode) && es.st_dev == st->st_dev && es.st_ino == st->st_ino &&
		    asprintf(&found, "%s/%s", buf, e->d_name) < 0)
			found = NULL;
	if (d != NULL)
		closedir(d);
	return found;
}

int lb_scan_locked_files(struct lb_locked_file **v, size_t *n)
{
	struct lb_locked_file *f = NULL, *grown, key, *hit;
	struct dirent *pe, *fe;
	struct stat st;
	DIR *procs, *fds;
	size_t len, cap = 0, k = 0, i, left, looked = 0;
	char *text, dir[64], path[128];
	const char *line, *end, *stop;
	uint64_t pid, fdn;

	*v = NULL;
	*n = 0;
	text = lb_procfs_slurp("/proc/locks", 0, &len);
	if (text == NULL)
		return -1;
	stop = text + len;
	for (line = text; line < stop; line = end) {
		end = memchr(line, '\n', (size_t)(stop - line));
		end = end != NULL ? end + 1 : stop;
		if (!lb_procfs_lock_id(line, end, &key.dev, &key.ino))
			continue;
		if (k == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(f, cap * sizeof *f);
			if (grown == NULL) {
				free(f);
				free(text);
				return -1;
			}
			f = grown;
		}
		f[k].dev = key.dev;
		f[k].ino = key.ino;
		f[k++].path = NULL;
	}
	free(text);
	if (k > 1)
		qsort(f, k, sizeof *f, by_id);
	for (i = 0, len = 0; i < k; i++)
		if (len == 0 || by_id(&f[len - 1], &f[i]) != 0)
			f[len++] = f[i];
	k = len;
	left = k;
	procs = k > 0 ? opendir("/proc") : NULL;
	while (procs != NULL && left > 0 && looked < LOCKED_FDS_MAX && (pe = readdir(procs)) != NULL) {
		if (lb_parse_uint(pe->d_name, 1, INT_MAX, &pid) != 0)
			continue;
		snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
		fds = opendir(dir);
		if (fds == NULL)
			continue;	/* gone, or another user's */
		while (left > 0 && looked < LOCKED_FDS_MAX && (fe = readdir(fds)) != NULL) {
			if (lb_parse_uint(fe->d_name, 0, INT_MAX, &fdn) != 0)
				continue;
			looked++;
			snprintf(path, sizeof path, "%s/%d", dir, (int)fdn);
			/* stat follows the descriptor's link to the open file itself */
			if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			key.dev = st.st_dev;
			key.ino = st.st_ino;
			hit = bsearch(&key, f, k, sizeof *f, by_id);
			if (hit == NULL || hit->path != NULL)
				continue;
			hit->path = fd_path(path, &st);
			left -= hit->path != NULL;
		}
		closedir(fds);
	}
	if (procs != NULL)
		closedir(procs);
	*v = f;
	*n = k;
	return 0;
}

/*
 * Whether process PID has a descriptor open on DEV/INO under the name
 * DELETED (a path, then " (deleted)").
 */
static int holds_deleted(pid_t pid, dev_t dev, ino_t ino, const char *deleted)
{
	char dir[64], link[64 + 256 + 2], target[PATH_MAX + 16];
	struct dirent *e;
	struct stat st;
	ssize_t r;
	DIR *d;
	int found = 0;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d != NULL && !found && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		r = readlink(link, target, sizeof target - 1);
		if (r <= 0)
			continue;
		target[r] = '\0';
		found = strcmp(target, deleted) == 0 && stat(link, &st) == 0 &&
		    st.st_dev == dev && st.st_ino == ino;
	}
	if (d != NULL)
		closedir(d);
	return found;
}

int lb_scan_moved(const char *path, pid_t *pids, size_t max, size_t *n)
{
	char *abs = NULL, *dir, *deleted = NULL, *text;
	const char *base, *line, *end, *stop;
	struct lb_lockline x;
	struct stat now, ds;
	size_t len, i;
	int seen, have_now;

	*n = 0;
	base = strrchr(path, '/');
	dir = base != NULL ? strndup(path, (size_t)(base - path)) : strdup(".");
	base = base != NULL ? base + 1 : path;
	if (dir == NULL)
		return -1;
	if (dir[0] == '\0') {
		free(dir);
		dir = strdup("/");
	}
	abs = dir != NULL ? realpath(dir, NULL) : NULL;
	/* a directory gone or not ours to look in: nothing to say */
	if (abs == NULL || stat(abs, &ds) != 0 ||
	    asprintf(&deleted, "%s/%s (deleted)", strcmp(abs, "/") == 0 ? "" : abs, base) < 0) {
		free(dir);
		free(abs);
		return 0;
	}
	free(dir);
	free(abs);
	have_now = stat(path, &now) == 0;
	text = lb_procfs_slurp("/proc/locks", 0, &len);
	stop = text != NULL ? text + len : NULL;
	for (line = text; text != NULL && line < stop && *n < max; line = end) {
		dev_t dev;
		ino_t ino;

		end = memchr(line, '\n', (size_t)(stop - line));
		end = end != NULL ? end + 1 : stop;
		/* a lock on this file system, not on the file at the path now, named by its process */
		if (!lb_procfs_lock_id(line, end, &dev, &ino) || dev != ds.st_dev ||
		    (have_now && ino == now.st_ino))
			continue;
		seen = 0;
		/* (a lockbox waiter's mark in the queue holds nothing) */
		if (!lb_procfs_lock_any(line, end, dev, ino, &x, &seen) || x.blocked || x.l.pid <= 0 ||
		    x.l.lo >= (long long)LB_JOIN_OFF)
			continue;
		for (i = 0; i < *n && pids[i] != x.l.pid; i++)
			;
		if (i == *n && holds_deleted(x.l.pid, dev, ino, deleted))
			pids[(*n)++] = x.l.pid;
	}
	free(text);
	free(deleted);
	return 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * interval: a test helper that plays a lock holder and says when it held
 * what. interval LOG KIND PATH MICROSECONDS: find the file that this
 * process or one of its two nearest ancestors has open under PATH (or
 * under PATH marked deleted: replaced at its path), which is the file a
 * lock tool that ran us holds; then write "KIND INODE START END" to LOG,
 * START and END the monotonic clock in microseconds around a sleep of
 * MICROSECONDS, in one write (O_APPEND: the lines of many holders never
 * mix). INODE is 0 when no such descriptor was found (a tool that holds
 * its lock in a helper of its own): that holder's file is not known.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The parent of PID, from /proc/PID/stat, or 0. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ppid = 0;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof buf, f) != NULL && (p = strrchr(buf, ')')) != NULL)
		sscanf(p + 2, "%*c %d", &ppid);
	fclose(f);
	return (pid_t)ppid;
}

/* The inode of a descriptor of PID open on PATH (or PATH deleted), or 0. */
static unsigned long long held_by(pid_t pid, const char *path)
{
	char dir[64], link[PATH_MAX + 16], target[PATH_MAX + 16], deleted[PATH_MAX + 16];
	unsigned long long ino = 0;
	struct dirent *e;
	struct stat st;
	ssize_t n;
	DIR *d;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	snprintf(deleted, sizeof deleted, "%s (deleted)", path);
	d = opendir(dir);
	while (d != NULL && ino == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if ((strcmp(target, path) == 0 || strcmp(target, deleted) == 0) && stat(link, &st) == 0)
			ino = (unsigned long long)st.st_ino;
	}
	if (d != NULL)
		closedir(d);
	return ino;
}

/* The same for the children of this process (a tool's helper that holds the lock: s6-setlock -t). */
static unsigned long long held_by_children(const char *path)
{
	char file[64];
	unsigned long long ino = 0;
	FILE *f;
	int pid;

	snprintf(file, sizeof file, "/proc/self/task/%d/children", (int)getpid());
	f = fopen(file, "r");
	while (f != NULL && ino == 0 && fscanf(f, "%d", &pid) == 1)
		ino = held_by((pid_t)pid, path);
	if (f != NULL)
		fclose(f);
	return ino;
}

int main(int argc, char **argv)
{
	char line[256];
	unsigned long long ino = 0;
	long long start, end, us;
	pid_t pid = getpid();
	int fd, i, len;

	if (argc != 5 || argv[3][0] != '/') {
		fprintf(stderr, "usage: interval LOG KIND /PATH MICROSECONDS\n");
		return 2;
	}
	us = atoll(argv[4]);
	for (i = 0; i < 3 && pid > 1 && ino == 0; i++, pid = parent_of(pid))
		ino = held_by(pid, argv[3]);
	if (ino == 0)
		ino = held_by_children(argv[3]);
	start = now_us();
	if (us > 0)
		usleep((useconds_t)us);
	end = now_us();
	len = snprintf(line, sizeof line, "%s %llu %lld %lld\n", argv[2], ino, start, end);
	fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, line, (size_t)len) != len)
		return 1;
	close(fd);
	return 0;
}

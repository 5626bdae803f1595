/* SPDX-License-Identifier: ISC */
/*
 * What bench/handoff.c and bench/readers.c share: the clock, dying with a
 * message, starting and reaping commands, /proc/locks's view of a
 * waiter, and sorting samples. Included by each (one file a program).
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/*
 * Start ARGV with stdin IN, stdout OUT and, unless ERR is -1, stderr ERR;
 * every other fd is close-on-exec.
 */
static pid_t spawn_err(char **argv, int in, int out, int err)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || (err >= 0 && dup2(err, 2) < 0))
			_exit(125);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", program_invocation_short_name, argv[0],
		    strerror(errno));
		_exit(127);
	}
	return pid;
}

static pid_t spawn(char **argv, int in, int out)
{
	return spawn_err(argv, in, out, -1);
}

/*
 * Is a waiter queued on DEVINO (" MAJ:MIN:INO "), per /proc/locks: a lock
 * request the kernel has blocked, or a lockbox queue ticket (a byte lock at
 * 2^32 or above; a lockbox waiter alone in the queue watches its holder's
 * exit rather than blocking on a lock)?
 */
static int queued(const char *devino)
{
	static char *line;
	static size_t cap;
	FILE *f = fopen("/proc/locks", "re");
	const char *at;
	int found = 0;

	if (f == NULL)
		die("/proc/locks: %s", strerror(errno));
	while (!found && getline(&line, &cap, f) > 0) {
		if ((at = strstr(line, devino)) == NULL)
			continue;
		found = strstr(line, " -> ") != NULL ||
		    strtoull(at + strlen(devino), NULL, 10) >= 4294967296ULL;
	}
	fclose(f);
	return found;
}

static void reap(pid_t pid, const char *what)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("the %s ended with status %d", what,
		    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static char **with_tail(char **prefix, int n, const char *self, const char *mode)
{
	char **v = calloc((size_t)n + 3, sizeof *v);
	int i;

	if (v == NULL)
		die("out of memory");
	for (i = 0; i < n; i++)
		v[i] = prefix[i];
	v[n] = (char *)self;
	v[n + 1] = (char *)mode;
	return v;
}

#endif

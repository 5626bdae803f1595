/* SPDX-License-Identifier: ISC */
/*
 * handoff: how long a waiter blocked on a lock takes to start its command
 * once the holder exits.
 *
 *   handoff measure K LOCKFILE OUT HOLDER... -- WAITER...
 *   handoff measure-poll K LOCKFILE OUT MARKER INTERVAL_US HOLDER... -- WAITER...
 *   handoff wait      (the holder's command)
 *   handoff stamp     (the waiter's command)
 *
 * measure runs K rounds of:
 *   1. start HOLDER... SELF wait; its command writes "R" on stdout once it
 *      runs, that is once the lock is held, then waits for EOF on stdin;
 *   2. start WAITER... SELF stamp and wait until /proc/locks shows it queued
 *      on LOCKFILE's inode: a blocked lock request, or a lockbox queue
 *      ticket (no fixed sleep anywhere);
 *   3. read CLOCK_MONOTONIC (t0) and close the holder's stdin, so it exits;
 *   4. the waiter takes the lock and runs its command, whose first act is to
 *      read CLOCK_MONOTONIC (t1) and print it.
 * The latency t1 - t0 covers the holder's exit, the kernel's wake-up, the
 * waiter's own work and the exec of its command. Every sample goes to OUT
 * (nanoseconds, one a line); stdout gets one line of statistics:
 *   n=K median_ns=.. p99_ns=.. mean_ns=.. min_ns=.. max_ns=..
 *
 * measure-poll is the same for a waiter that polls (tries without blocking,
 * sleeps, tries again) and so never shows in /proc/locks. Step 2 becomes:
 * the harness removes MARKER and starts WAITER... SELF stamp with its
 * stderr in a file of its own (MARKER.err); it waits until MARKER exists
 * (the waiter creates it right before it starts polling) and then until
 * that stderr file is not empty (its first attempt failed and said so: it
 * is polling now, asleep or about to be); then it waits a random time,
 * uniform in [0, INTERVAL_US) microseconds, so that the release lands at a
 * random point of the waiter's sleep instead of always at its start. t0 is
 * read after that delay, as in step 3.
 */
#include "harness.h"

#define BOUND_MS	60000	/* any single step taking this long is a failure (a minute: CI runs benchmarks beside its suites, at loads of 40 on 2 CPUs) */

static int stamp(int64_t t1)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%" PRId64 "\n", t1);

	return write(1, buf, (size_t)n) == n ? 0 : 1;
}

static int hold(void)
{
	char c;
	ssize_t n;

	if (write(1, "R", 1) != 1)
		return 1;
	do
		n = read(0, &c, 1);
	while (n > 0 || (n < 0 && errno == EINTR));
	return 0;
}

/* Read up to SIZE-1 bytes until EOF, or fail after BOUND_MS. */
static size_t read_all(int fd, char *buf, size_t size, const char *what)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	for (;;) {
		ssize_t n;
		int r = poll(&p, 1, BOUND_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("no answer from the %s within %d ms", what, BOUND_MS);
		n = read(fd, buf + got, size - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read: %s", strerror(errno));
		if (n == 0 || (got += (size_t)n) == size - 1)
			break;
	}
	buf[got] = '\0';
	return got;
}

/* The polling waiter's readiness signals (measure-poll); NULL: /proc/locks. */
struct poll_ready {
	const char *marker;	/* the waiter creates it right before polling */
	const char *errfile;	/* the waiter's stderr: not empty once it failed */
	long interval_us;	/* the release comes at random in [0, this) */
};

/* Wait until PR's marker exists and the waiter's stderr file is not empty. */
static void wait_polling(const struct poll_ready *pr, int errfd, pid_t w)
{
	struct stat st;
	int64_t until = mono_ns() + (int64_t)BOUND_MS * 1000000;
	int status, marked = 0;

	for (;;) {
		struct timespec pause = { 0, 50000 };

		if (!marked)
			marked = access(pr->marker, F_OK) == 0;
		if (marked) {
			if (fstat(errfd, &st) != 0)
				die("%s: %s", pr->errfile, strerror(errno));
			if (st.st_size > 0)
				return;
		}
		if (waitpid(w, &status, WNOHANG) == w)
			die("the waiter ended before it polled (status %d)",
			    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		if (mono_ns() > until)
			die("the waiter never %s", marked ? "failed an attempt" : "created its marker");
		nanosleep(&pause, NULL);
	}
}

static void one_round(char **holder, char **waiter, const char *lockfile,
    const struct poll_ready *pr, int64_t *lat)
{
	int rel[2], ready[2], out[2], devnull, errfd = -1;
	char buf[64], devino[64], *end;
	pid_t h, w;
	struct stat st;
	int64_t t0, t1, until;
	int status;

	if (pipe2(rel, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0 ||
	    pipe2(out, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		die("/dev/null: %s", strerror(errno));

	h = spawn(holder, rel[0], ready[1]);
	close(rel[0]);
	close(ready[1]);
	if (read_all(ready[0], buf, 2, "holder") != 1)
		die("the holder did not take the lock");

	if (stat(lockfile, &st) != 0)
		die("%s: %s", lockfile, strerror(errno));
	snprintf(devino, sizeof devino, " %02x:%02x:%ju ", major(st.st_dev),
	    minor(st.st_dev), (uintmax_t)st.st_ino);

	if (pr != NULL) {
		if (unlink(pr->marker) != 0 && errno != ENOENT)
			die("%s: %s", pr->marker, strerror(errno));
		errfd = open(pr->errfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (errfd < 0)
			die("%s: %s", pr->errfile, strerror(errno));
		w = spawn_err(waiter, devnull, out[1], errfd);
		close(out[1]);
		close(devnull);
		wait_polling(pr, errfd, w);
		close(errfd);
		if (pr->interval_us > 0) {
			long us = (long)(drand48() * (double)pr->interval_us);
			struct timespec d = { us / 1000000, us % 1000000 * 1000 };

			while (nanosleep(&d, &d) != 0 && errno == EINTR)
				;
		}
	} else {
		w = spawn(waiter, devnull, out[1]);
		close(out[1]);
		close(devnull);
		until = mono_ns() + (int64_t)BOUND_MS * 1000000;
		while (!queued(devino)) {
			struct timespec pause = { 0, 50000 };

			if (waitpid(w, &status, WNOHANG) == w)
				die("the waiter ended before it queued (status %d)",
				    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
			if (mono_ns() > until)
				die("the waiter never queued on %s", lockfile);
			nanosleep(&pause, NULL);
		}
	}

	t0 = mono_ns();
	close(rel[1]);	/* the holder's read ends: it exits, the lock goes */

	read_all(out[0], buf, sizeof buf, "waiter");
	errno = 0;
	t1 = strtoll(buf, &end, 10);
	if (end == buf || *end != '\n' || errno != 0)
		die("the waiter's command printed '%s', not a time", buf);
	close(out[0]);
	close(ready[0]);
	reap(h, "holder");
	reap(w, "waiter");
	*lat = t1 - t0;
}

/*
 * measure K LOCKFILE OUT HOLDER... -- WAITER..., or with POLLING
 * measure-poll K LOCKFILE OUT MARKER INTERVAL_US HOLDER... -- WAITER...
 */
static int measure(int argc, char **argv, int polling)
{
	char self[PATH_MAX], **holder, **waiter, *errfile = NULL, *end;
	struct poll_ready pr = { NULL, NULL, 0 };
	int64_t *lat, sum = 0;
	long k, i;
	int sep, nh, nw, first = polling ? 7 : 5;
	ssize_t n;
	FILE *f;

	if (argc < first + 2)
		die(polling ? "usage: handoff measure-poll K LOCKFILE OUT MARKER INTERVAL_US HOLDER... -- WAITER..."
		    : "usage: handoff measure K LOCKFILE OUT HOLDER... -- WAITER...");
	k = strtol(argv[2], NULL, 10);
	if (k < 1 || k > 1000000)
		die("bad K '%s'", argv[2]);
	if (polling) {
		size_t len = strlen(argv[5]);

		pr.marker = argv[5];
		errno = 0;
		pr.interval_us = strtol(argv[6], &end, 10);
		if (end == argv[6] || *end != '\0' || errno != 0 ||
		    pr.interval_us < 0 || pr.interval_us > 60000000)
			die("bad INTERVAL_US '%s'", argv[6]);
		errfile = malloc(len + 5);
		if (errfile == NULL)
			die("out of memory");
		memcpy(errfile, argv[5], len);
		memcpy(errfile + len, ".err", 5);
		pr.errfile = errfile;
		srand48((long)mono_ns() ^ (long)getpid());
	}
	for (sep = first; sep < argc && strcmp(argv[sep], "--") != 0; sep++)
		;
	nh = sep - first;
	nw = argc - sep - 1;
	if (nh < 1 || nw < 1)
		die("need a HOLDER and a WAITER command, split by --");
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		die("/proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	holder = with_tail(argv + first, nh, self, "wait");
	waiter = with_tail(argv + sep + 1, nw, self, "stamp");
	signal(SIGPIPE, SIG_IGN);

	lat = calloc((size_t)k, sizeof *lat);
	f = fopen(argv[4], "w");
	if (lat == NULL || f == NULL)
		die("%s: %s", argv[4], strerror(errno));
	for (i = 0; i < k; i++) {
		one_round(holder, waiter, argv[3], polling ? &pr : NULL, &lat[i]);
		fprintf(f, "%" PRId64 "\n", lat[i]);
		sum += lat[i];
	}
	if (fclose(f) != 0)
		die("%s: %s", argv[4], strerror(errno));
	qsort(lat, (size_t)k, sizeof *lat, cmp_i64);
	/* nearest rank: the smallest sample with at least 99% at or below it */
	printf("n=%ld median_ns=%" PRId64 " p99_ns=%" PRId64 " mean_ns=%" PRId64
	    " min_ns=%" PRId64 " max_ns=%" PRId64 "\n", k,
	    k % 2 ? lat[k / 2] : (lat[k / 2 - 1] + lat[k / 2]) / 2,
	    lat[(99 * k + 99) / 100 - 1], sum / k, lat[0], lat[k - 1]);
	free(lat);
	free(holder);
	free(waiter);
	free(errfile);
	return 0;
}

int main(int argc, char **argv)
{
	/* first, before anything else: the stamp marks the command's start */
	int64_t now = mono_ns();

	if (argc == 2 && strcmp(argv[1], "stamp") == 0)
		return stamp(now);
	if (argc == 2 && strcmp(argv[1], "wait") == 0)
		return hold();
	if (argc >= 2 && strcmp(argv[1], "measure") == 0)
		return measure(argc, argv, 0);
	if (argc >= 2 && strcmp(argv[1], "measure-poll") == 0)
		return measure(argc, argv, 1);
	fputs("usage: handoff measure K LOCKFILE OUT HOLDER... -- WAITER...\n"
	    "       handoff measure-poll K LOCKFILE OUT MARKER INTERVAL_US HOLDER... -- WAITER...\n"
	    "       handoff wait | handoff stamp\n", stderr);
	return 2;
}

/* SPDX-License-Identifier: ISC */
/*
 * readers: how soon a writer waiting behind N shared holders runs its
 * command once they all let go.
 *
 *   readers measure K N LOCKFILE OUT READER... -- WRITER...
 *   readers wait      (a reader's command)
 *   readers stamp     (the writer's command)
 *
 * measure runs K rounds of:
 *   1. start N readers, READER... SELF wait, all with one pipe as stdin;
 *      each one's command writes "R" on stdout once it runs (once its
 *      shared lock is held) and waits for EOF on stdin;
 *   2. once the N "R"s are in, start the writer, WRITER... SELF stamp, and
 *      wait until /proc/locks shows it waiting on LOCKFILE's inode (a
 *      blocked lock request, or a lockbox queue ticket): no fixed sleep;
 *   3. read CLOCK_MONOTONIC (t0) and close the pipe: every reader reads
 *      EOF at once and exits, the last of them letting the lock go;
 *   4. the writer takes the lock and runs its command, whose first act is
 *      to read CLOCK_MONOTONIC (t1) and print it.
 * t1 - t0 covers the N readers' exits, the last one's included, the
 * writer's wake-ups and its exec: a bound on the time from the last
 * reader leaving to the writer running. Every sample goes to OUT (ns, one
 * a line); stdout gets: n=K median_ns=.. p99_ns=.. min_ns=.. max_ns=..
 */
#include "harness.h"

#define BOUND_MS	30000	/* any single step taking this long is a failure */

/* Read exactly N bytes, or fail after BOUND_MS without progress. */
static void read_n(int fd, char *buf, size_t n, const char *what)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	while (got < n) {
		ssize_t r;
		int pr = poll(&p, 1, BOUND_MS);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			die("no answer from the %s within %d ms (%zu of %zu bytes)", what, BOUND_MS, got, n);
		r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("the %s went away (%zu of %zu bytes)", what, got, n);
		got += (size_t)r;
	}
}

static int64_t one_round(char **reader, char **writer, long n, const char *lockfile)
{
	int rel[2], ready[2], out[2], devnull;
	char buf[64], devino[64], *end, *rs = malloc((size_t)n);
	pid_t *r = calloc((size_t)n, sizeof *r), w;
	struct stat st;
	int64_t t0, t1, until;
	long i;
	int status;

	if (rs == NULL || r == NULL)
		die("out of memory");
	if (pipe2(rel, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0 ||
	    pipe2(out, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		die("/dev/null: %s", strerror(errno));
	for (i = 0; i < n; i++)
		r[i] = spawn(reader, rel[0], ready[1]);
	close(rel[0]);
	close(ready[1]);
	read_n(ready[0], rs, (size_t)n, "readers");
	if (stat(lockfile, &st) != 0)
		die("%s: %s", lockfile, strerror(errno));
	snprintf(devino, sizeof devino, " %02x:%02x:%ju ", major(st.st_dev),
	    minor(st.st_dev), (uintmax_t)st.st_ino);
	w = spawn(writer, devnull, out[1]);
	close(out[1]);
	close(devnull);
	until = mono_ns() + (int64_t)BOUND_MS * 1000000;
	while (!queued(devino)) {
		struct timespec pause = { 0, 50000 };

		if (waitpid(w, &status, WNOHANG) == w)
			die("the writer ended before it waited (status %d)",
			    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		if (mono_ns() > until)
			die("the writer never waited on %s", lockfile);
		nanosleep(&pause, NULL);
	}
	t0 = mono_ns();
	close(rel[1]);	/* every reader reads EOF and exits */
	memset(buf, 0, sizeof buf);
	read_n(out[0], buf, 1, "writer");
	{
		size_t got = 1;
		ssize_t m;

		while (got < sizeof buf - 1 && buf[got - 1] != '\n' &&
		    (m = read(out[0], buf + got, sizeof buf - 1 - got)) > 0)
			got += (size_t)m;
	}
	errno = 0;
	t1 = strtoll(buf, &end, 10);
	if (end == buf || *end != '\n' || errno != 0)
		die("the writer's command printed '%s', not a time", buf);
	close(out[0]);
	close(ready[0]);
	for (i = 0; i < n; i++)
		reap(r[i], "reader");
	reap(w, "writer");
	free(r);
	free(rs);
	return t1 - t0;
}

static int measure(int argc, char **argv)
{
	char self[PATH_MAX], **reader, **writer;
	int64_t *lat;
	long k, n, i;
	int sep, nr, nw;
	ssize_t len;
	FILE *f;

	if (argc < 8)
		die("usage: readers measure K N LOCKFILE OUT READER... -- WRITER...");
	k = strtol(argv[2], NULL, 10);
	n = strtol(argv[3], NULL, 10);
	if (k < 1 || k > 100000 || n < 1 || n > 10000)
		die("bad K '%s' or N '%s'", argv[2], argv[3]);
	for (sep = 6; sep < argc && strcmp(argv[sep], "--") != 0; sep++)
		;
	nr = sep - 6;
	nw = argc - sep - 1;
	if (nr < 1 || nw < 1)
		die("need a READER and a WRITER command, split by --");
	len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len < 0)
		die("/proc/self/exe: %s", strerror(errno));
	self[len] = '\0';
	reader = with_tail(argv + 6, nr, self, "wait");
	writer = with_tail(argv + sep + 1, nw, self, "stamp");
	signal(SIGPIPE, SIG_IGN);
	lat = calloc((size_t)k, sizeof *lat);
	f = fopen(argv[5], "w");
	if (lat == NULL || f == NULL)
		die("%s: %s", argv[5], strerror(errno));
	for (i = 0; i < k; i++) {
		lat[i] = one_round(reader, writer, n, argv[4]);
		fprintf(f, "%" PRId64 "\n", lat[i]);
	}
	if (fclose(f) != 0)
		die("%s: %s", argv[5], strerror(errno));
	qsort(lat, (size_t)k, sizeof *lat, cmp_i64);
	printf("n=%ld median_ns=%" PRId64 " p99_ns=%" PRId64 " min_ns=%" PRId64
	    " max_ns=%" PRId64 "\n", k,
	    k % 2 ? lat[k / 2] : (lat[k / 2 - 1] + lat[k / 2]) / 2,
	    lat[(99 * k + 99) / 100 - 1], lat[0], lat[k - 1]);
	free(lat);
	free(reader);
	free(writer);
	return 0;
}

int main(int argc, char **argv)
{
	/* first, before anything else: the stamp marks the command's start */
	int64_t now = mono_ns();
	char c;
	ssize_t n;

	if (argc == 2 && strcmp(argv[1], "stamp") == 0) {
		char buf[32];
		int len = snprintf(buf, sizeof buf, "%" PRId64 "\n", now);

		return write(1, buf, (size_t)len) == len ? 0 : 1;
	}
	if (argc == 2 && strcmp(argv[1], "wait") == 0) {
		if (write(1, "R", 1) != 1)
			return 1;
		do
			n = read(0, &c, 1);
		while (n > 0 || (n < 0 && errno == EINTR));
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "measure") == 0)
		return measure(argc, argv);
	fputs("usage: readers measure K N LOCKFILE OUT READER... -- WRITER...\n"
	    "       readers wait | readers stamp\n", stderr);
	return 2;
}

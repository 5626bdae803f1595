/* SPDX-License-Identifier: ISC */
/*
 * flockloop FILE SECONDS: a process that has nothing to do with lockbox,
 * for bench/waiters: it takes and lets go of a flock(2) lock on FILE of
 * its own, again and again, for SECONDS, and prints how many times a
 * second it did. Every flock(2) and fcntl lock call of the host waits
 * while another process reads a page of /proc/locks: what such reads
 * elsewhere cost it shows as a lower rate. Built by bench/waiters.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds, start, end;
	long n = 0;
	int fd;

	if (argc != 3 || (seconds = strtod(argv[2], NULL)) <= 0) {
		fprintf(stderr, "usage: flockloop FILE SECONDS\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	start = now();
	end = start + seconds;
	do {
		/* a batch between looks at the clock */
		for (int i = 0; i < 256; i++, n++)
			if (flock(fd, LOCK_EX) != 0 || flock(fd, LOCK_UN) != 0) {
				perror("flock");
				return 1;
			}
	} while (now() < end);
	printf("%.0f\n", (double)n / (now() - start));
	return 0;
}

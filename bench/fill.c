/* SPDX-License-Identifier: ISC */
/*
 * fill FILE COUNT READY: a program of another kind than lockbox, for
 * bench/locks: it takes COUNT open file description write locks on FILE
 * (one byte every 256, from 4096), creates READY, and holds them until
 * killed: COUNT lines more in /proc/locks. Built by bench/locks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct flock fl;
	long i, count;
	int fd;

	if (argc != 4 || (count = strtol(argv[2], NULL, 10)) < 0) {
		fprintf(stderr, "usage: fill FILE COUNT READY\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	memset(&fl, 0, sizeof fl);
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_len = 1;
	for (i = 0; i < count; i++) {
		fl.l_start = 4096 + 256 * i;
		if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
			perror("fcntl");
			return 1;
		}
	}
	close(open(argv[3], O_WRONLY | O_CREAT, 0600));
	for (;;)
		pause();
}

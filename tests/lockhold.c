/* SPDX-License-Identifier: ISC */
/*
 * lockhold: a test helper that plays a foreign or stuck lock holder.
 * lockhold [-p] [-r] [-n COUNT] FILE START LEN READY: lock [START,
 * START+LEN) of FILE (write lock; -r read; -p classic POSIX instead of an
 * open file description lock; -n: COUNT such ranges, one every 256 bytes,
 * the size of a slot's record), create READY, then wait until killed.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct flock fl;
	int c, fd, cmd = -1;
	long i, count = 1;
	short type = F_WRLCK;

#ifdef HAVE_OFD_LOCKS
	cmd = F_OFD_SETLKW;
#endif
	while ((c = getopt(argc, argv, "n:pr")) != -1) {
		if (c == 'n')
			count = strtol(optarg, NULL, 10);
		else if (c == 'p')
			cmd = F_SETLKW;
		else if (c == 'r')
			type = F_RDLCK;
		else
			return 2;
	}
	if (argc - optind != 4 || cmd == -1 || count < 1) {
		fprintf(stderr, "usage: lockhold [-p] [-r] [-n COUNT] FILE START LEN READY\n");
		return 2;
	}
	fd = open(argv[optind], O_RDWR);
	if (fd < 0) {
		perror(argv[optind]);
		return 1;
	}
	memset(&fl, 0, sizeof fl);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_len = strtoll(argv[optind + 2], NULL, 10);
	for (i = 0; i < count; i++) {
		fl.l_start = strtoll(argv[optind + 1], NULL, 10) + 256 * i;
		if (fcntl(fd, cmd, &fl) != 0) {
			perror("fcntl");
			return 1;
		}
	}
	close(open(argv[optind + 3], O_WRONLY | O_CREAT, 0644));
	for (;;)
		pause();
}

/* SPDX-License-Identifier: ISC */
/*
 * lockhold: a test helper that plays a foreign or stuck lock holder.
 * lockhold [-p] [-r] FILE START LEN READY: lock [START, START+LEN) of FILE
 * (write lock; -r read; -p classic POSIX instead of an open file
 * description lock), create READY, then wait until killed.
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
	short type = F_WRLCK;

#ifdef HAVE_OFD_LOCKS
	cmd = F_OFD_SETLKW;
#endif
	while ((c = getopt(argc, argv, "pr")) != -1) {
		if (c == 'p')
			cmd = F_SETLKW;
		else if (c == 'r')
			type = F_RDLCK;
		else
			return 2;
	}
	if (argc - optind != 4 || cmd == -1) {
		fprintf(stderr, "usage: lockhold [-p] [-r] FILE START LEN READY\n");
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
	fl.l_start = strtoll(argv[optind + 1], NULL, 10);
	fl.l_len = strtoll(argv[optind + 2], NULL, 10);
	if (fcntl(fd, cmd, &fl) != 0) {
		perror("fcntl");
		return 1;
	}
	close(open(argv[optind + 3], O_WRONLY | O_CREAT, 0644));
	for (;;)
		pause();
}

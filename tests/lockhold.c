/* SPDX-License-Identifier: ISC */
/*
 * lockhold: a test helper that plays another program's lock holder, or
 * (stopped) a process that holds a lock file's header as lockbox does.
 * lockhold [-p] [-r] [-t] [-n COUNT] FILE START LEN READY: lock [START,
 * START+LEN) of FILE (write lock; -r read, on FILE opened read-only, as a
 * user who may only read it can; -p classic POSIX instead of an open file
 * description lock; -n: COUNT such ranges, one every 256 bytes,
 * the size of a slot's record; -t: do not wait for a lock that is busy,
 * exit 3), create READY, then wait until killed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct flock fl;
	int c, fd, cmd = -1, try = 0;
	long i, count = 1;
	short type = F_WRLCK;

#ifdef HAVE_OFD_LOCKS
	cmd = F_OFD_SETLKW;
#endif
	while ((c = getopt(argc, argv, "n:prt")) != -1) {
		if (c == 'n')
			count = strtol(optarg, NULL, 10);
		else if (c == 'p')
			cmd = F_SETLKW;
		else if (c == 'r')
			type = F_RDLCK;
		else if (c == 't')
			try = 1;
		else
			return 2;
	}
	if (argc - optind != 4 || cmd == -1 || count < 1) {
		fprintf(stderr, "usage: lockhold [-p] [-r] [-t] [-n COUNT] FILE START LEN READY\n");
		return 2;
	}
#ifdef HAVE_OFD_LOCKS
	if (try && cmd == F_OFD_SETLKW)
		cmd = F_OFD_SETLK;
#endif
	if (try && cmd == F_SETLKW)
		cmd = F_SETLK;
	fd = open(argv[optind], type == F_RDLCK ? O_RDONLY : O_RDWR);
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
			if (try && (errno == EAGAIN || errno == EACCES))
				return 3;
			perror("fcntl");
			return 1;
		}
	}
	close(open(argv[optind + 3], O_WRONLY | O_CREAT, 0644));
	for (;;)
		pause();
}

/* The fcntl byte-range lock primitives: open-file-description locks where the kernel has them. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "lockprim.h"

#ifdef HAVE_OFD_LOCKS
#define LB_SETLK F_OFD_SETLK
#define LB_SETLKW F_OFD_SETLKW
#define LB_GETLK F_OFD_GETLK
#else
#define LB_SETLK F_SETLK
#define LB_SETLKW F_SETLKW
#define LB_GETLK F_GETLK
#endif

static int lock_cmd(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl;

	memset(&fl, 0, sizeof fl);	/* OFD locks require l_pid == 0 */
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	return fcntl(fd, cmd, &fl);
}

/* One try with CMD (LB_SETLK or F_SETLK): 1 locked, 0 busy (errno kept), -1 error. */
static int try_cmd(int fd, int cmd, short type, off_t start, off_t len)
{
	int r;

	do
		r = lock_cmd(fd, cmd, type, start, len);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 1;
	return errno == EAGAIN || errno == EACCES ? 0 : -1;
}

int lb_lock_try(int fd, short type, off_t start, off_t len)
{
	return try_cmd(fd, LB_SETLK, type, start, len);
}

int lb_lock_try_process(int fd, short type, off_t start, off_t len)
{
	return try_cmd(fd, F_SETLK, type, start, len);
}

int lb_lock_block(int fd, short type, off_t start, off_t len)
{
	return lock_cmd(fd, LB_SETLKW, type, start, len);
}

int lb_lock_test(int fd, short type, off_t start, off_t len, struct flock *conflict)
{
	memset(conflict, 0, sizeof *conflict);
	conflict->l_type = type;
	conflict->l_whence = SEEK_SET;
	conflict->l_start = start;
	conflict->l_len = len;
	if (fcntl(fd, LB_GETLK, conflict) != 0)
		return -1;
	return conflict->l_type == F_UNLCK;
}

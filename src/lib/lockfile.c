/* Lock files: the on-disk format, hardened opening, and byte-range locks. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "lockfile.h"
#include "text.h"

#ifdef HAVE_OFD_LOCKS
#define LB_SETLK F_OFD_SETLK
#define LB_SETLKW F_OFD_SETLKW
#define LB_GETLK F_OFD_GETLK
#else
#define LB_SETLK F_SETLK
#define LB_SETLKW F_SETLKW
#define LB_GETLK F_GETLK
#endif

/* record layout, offsets in bytes */
enum {
	REC_STATE = 0, REC_PID = 4, REC_STARTTIME = 8, REC_WALL = 16,
	REC_BOOT = 24, REC_UID = 32, REC_SLOT = 36, REC_BOOTID = 40,
	REC_HOST = 56, REC_COMMAND = REC_HOST + LB_HOST_MAX
};
_Static_assert(REC_COMMAND + LB_COMMAND_MAX == LB_REC_SIZE, "record size");

uint32_t lb_record_state(const unsigned char rec[LB_REC_SIZE])
{
	return lb_get32(rec + REC_STATE);
}

void lb_record_encode(unsigned char rec[LB_REC_SIZE], unsigned slot,
    const struct lb_ident *who)
{
	memset(rec, 0, LB_REC_SIZE);
	lb_put32(rec + REC_STATE, LB_REC_HELD);
	lb_put32(rec + REC_PID, (uint32_t)who->pid);
	lb_put64(rec + REC_STARTTIME, who->starttime);
	lb_put64(rec + REC_WALL, (uint64_t)who->wall_ns);
	lb_put64(rec + REC_BOOT, (uint64_t)who->boot_ns);
	lb_put32(rec + REC_UID, who->uid);
	lb_put32(rec + REC_SLOT, slot);
	memcpy(rec + REC_BOOTID, who->boot_id, 16);
	/* NUL-padded fields; the memset left the last byte of each a NUL */
	memcpy(rec + REC_HOST, who->host, strnlen(who->host, LB_HOST_MAX - 1));
	memcpy(rec + REC_COMMAND, who->command,
	    strnlen(who->command, LB_COMMAND_MAX - 1));
}

/* Decoding never trusts the bytes: strings are cut to their fields. */
pid_t lb_record_pid(const unsigned char rec[LB_REC_SIZE])
{
	return (pid_t)(lb_get32(rec + REC_PID) & 0x7fffffff);
}

void lb_record_decode(const unsigned char rec[LB_REC_SIZE], struct lb_ident *who)
{
	memset(who, 0, sizeof *who);
	who->pid = lb_record_pid(rec);
	who->starttime = lb_get64(rec + REC_STARTTIME);
	who->wall_ns = (int64_t)lb_get64(rec + REC_WALL);
	who->boot_ns = (int64_t)lb_get64(rec + REC_BOOT);
	who->uid = lb_get32(rec + REC_UID);
	memcpy(who->boot_id, rec + REC_BOOTID, 16);
	memcpy(who->host, rec + REC_HOST, LB_HOST_MAX - 1);
	memcpy(who->command, rec + REC_COMMAND, LB_COMMAND_MAX - 1);
	lb_text_clean(who->host);
	lb_text_clean(who->command);
}

void lb_header_init(unsigned char hdr[LB_HDR_SIZE])
{
	memset(hdr, 0, LB_HDR_SIZE);
	memcpy(hdr, LB_MAGIC, LB_MAGIC_LEN);
	lb_put32(hdr + LB_HDR_OFF_HDRSIZE, LB_HDR_SIZE);
	lb_put32(hdr + LB_HDR_OFF_RECSIZE, LB_REC_SIZE);
}

static int check_stat(int fd, const char *name, int writable)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) != 0) {
		lb_warn("%s", name);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		lb_warnx("%s: not a regular file", name);
		return -1;
	}
	if (writable) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
			lb_warnx("%s: not open for writing", name);
			return -1;
		}
	}
	return 0;
}

int lb_lockfile_open(const char *path, int writable)
{
	/*
	 * O_NOFOLLOW: a final symlink (perhaps planted in /tmp) is never
	 * followed, so lockbox never creates or writes through it.
	 * O_NONBLOCK: opening a FIFO must not hang; the fstat below then
	 * refuses it like any other non-regular file.
	 */
	int flags = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
	    (writable ? O_RDWR | O_CREAT : O_RDONLY);
	int fd;

	do
		fd = open(path, flags, 0666);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		if (errno == ENOENT && !writable)
			return LB_OPEN_MISSING;
		if (errno == ELOOP)
			lb_warnx("%s: is a symbolic link; refusing to follow it", path);
		else if (errno == EISDIR)
			lb_warnx("%s: not a regular file", path);
		else
			lb_warn("%s", path);
		return -1;
	}
	if (check_stat(fd, path, 0) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int lb_lockfile_check_fd(int fd, const char *name, int writable)
{
	return check_stat(fd, name, writable);
}

off_t lb_lockfile_identify(int fd, const char *name, int writable)
{
	unsigned char hdr[LB_HDR_SIZE];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) != 0) {
		lb_warn("%s", name);
		return -1;
	}
	if (st.st_size == 0) {
		if (!writable)
			return 0;
		lb_header_init(hdr);
		if (pwrite(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) {
			lb_warn("%s: cannot write header", name);
			return -1;
		}
		return (off_t)sizeof hdr;
	}
	n = pread(fd, hdr, LB_MAGIC_LEN, 0);
	if (n < 0) {
		lb_warn("%s", name);
		return -1;
	}
	if (n != LB_MAGIC_LEN || memcmp(hdr, LB_MAGIC, LB_MAGIC_LEN) != 0) {
		lb_warnx("%s: not a lockbox lock file; refusing to touch it", name);
		return -1;
	}
	return st.st_size;
}

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

int lb_lock_try(int fd, short type, off_t start, off_t len)
{
	int r;

	do
		r = lock_cmd(fd, LB_SETLK, type, start, len);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 1;
	return errno == EAGAIN || errno == EACCES ? 0 : -1;
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

/* SPDX-License-Identifier: ISC */
/*
 * Opening the lock-file backend's pools: by path (lb_lockfile_open's
 * hardened open, and again when the file at the path has changed), and
 * from a caller's fd (acquire --fd, flock(1)'s FD form), where what the
 * file holds decides only how it is locked, never whether it is locked.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "err.h"
#include "filepool.h"
#include "lockfile.h"
#include "lockformat.h"
#include "lockscan.h"
#include "procfs.h"

static struct filepool *fp(struct lb_pool *pool)
{
	return (struct filepool *)pool;
}

struct lb_pool *lb_filepool_open(const char *path, int access, const struct lb_pool_opts *opts)
{
	struct lb_pool *p;
	int fd, idflags, any = 0;

	fd = lb_lockfile_open(path, access == LB_POOL_WRITE, opts->mode, &idflags,
	    opts->any_file ? &any : NULL);
	if (fd == -1)
		return NULL;
	p = fp_pool_new(fd, fd, 1, idflags, path);
	if (p == NULL && fd >= 0)
		close(fd);
	if (p != NULL) {
		fp(p)->any = any;
		fp(p)->any_ok = opts->any_file;
		fp(p)->path = fp(p)->name;
		fp(p)->mode = opts->mode;
		fp(p)->shared = opts->shared;
		fp(p)->max_hold = opts->max_hold;
		fp(p)->on_loss = opts->on_loss;
		p->caps = any ? LB_POOL_FLOCK : 0;
	}
	return p;
}

/*
 * flock(1)'s "flock FD": an fd open in any way (9>FILE, read-only, on a
 * directory) on a file that is not a lockbox lock file is locked with
 * flock(2) through that very fd. 1 when FD is such a file (*ST its
 * stat), 0 when it is a lockbox lock file, -1 (reported).
 */
static int fd_is_any(int fd, const char *name, struct stat *st)
{
	unsigned char magic[LB_MAGIC_LEN];
	ssize_t n;

	if (fstat(fd, st) != 0) {
		lb_warn("%s", name);
		return -1;
	}
	if (S_ISDIR(st->st_mode))
		return 1;
	if (!S_ISREG(st->st_mode)) {
		lb_warnx("%s: not a regular file", name);
		return -1;
	}
	if (st->st_size == 0)
		return 1;
	/* a write-only fd cannot be read: its magic is read through a file of our own */
	n = pread(fd, magic, sizeof magic, 0);
	if (n < 0 && errno == EBADF) {
		int rfd = lb_procfs_fd_reopen(fd, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

		n = rfd < 0 ? -1 : pread(rfd, magic, sizeof magic, 0);
		if (rfd >= 0)
			close(rfd);
	}
	if (n < 0) {
		lb_warn("%s", name);
		return -1;
	}
	return n != LB_MAGIC_LEN || memcmp(magic, LB_MAGIC, LB_MAGIC_LEN) != 0;
}

static int any_lock(const struct lb_lockline *x, void *arg)
{
	(void)x;
	(void)arg;
	return 1;
}

/*
 * Whether anyone holds a lock of any kind on FD's file, by lock tests:
 * FD's own open file, as its fdinfo lists its locks; anyone else's, as
 * an open file of our own is kept out (never FD itself: a flock(2) lock
 * taken through it would change the caller's own).
 */
static int locked(int fd)
{
	struct lb_lockinfo l;
	struct stat st;
	int rfd, r;

	if (fstat(fd, &st) == 0 && lb_procfs_each_fd_lock(0, fd, st.st_dev, st.st_ino, any_lock, NULL) > 0)
		return 1;
	rfd = lb_procfs_fd_reopen(fd, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0)
		return 0;
	r = lb_lock_conflict(rfd, F_WRLCK, 0, 0, &l) == 1 || fp_flock_probe(rfd);
	close(rfd);
	return r;
}

/*
 * The header and queue locks go on an open file of our own, never on the
 * caller's: if this process dies holding one, the kernel drops it with
 * us, instead of leaving it to a shell that lives on.
 */
struct lb_pool *lb_filepool_from_fd(int fd, const char *name, const char *path,
    const struct lb_pool_opts *opts)
{
	struct stat a;
	struct lb_pool *p;
	int any = 0;

	/* a flock(2) lock belongs to the open file in every build */
	if (opts->any_file && (any = fd_is_any(fd, name, &a)) < 0)
		return NULL;
	/*
	 * acquire --fd adopts an empty file, as the library has always had
	 * it, unless someone holds it as it is (a lock file cut short under
	 * its holders, a mutex that found it empty, flock(1)): that one is
	 * locked as they lock it, and waited for, as is any other file that
	 * is not a lock file (as mutex locks it, writing nothing).
	 */
	if (any && opts->adopt_empty && S_ISREG(a.st_mode) && a.st_size == 0 && !locked(fd))
		any = 0;
	if (any) {
		int idflags;

		/*
		 * --path: the file the path names, by the rules of every open
		 * (one replaced since is found again before the lock is taken)
		 */
		if (path != NULL && S_ISREG(a.st_mode) &&
		    lb_lockfile_check_path(&a, path, &idflags) == -1)
			return NULL;
		p = fp_pool_new(fd, fd, 0, 0, name);
		if (p != NULL) {
			fp(p)->any = 1;
			fp(p)->any_ok = 1;
			fp(p)->shared = opts->shared;
			fp(p)->path = path;
			p->caps = LB_POOL_FLOCK;
		}
		return p;
	}
#ifndef HAVE_OFD_LOCKS
	/* a per-process lock taken by this helper would die with it */
	(void)path;
	lb_warnx("%s: --fd needs open file description locks, which this build lacks", name);
	return NULL;
#else
	struct stat b;
	/* where the caller found the file is unknown: an empty one is trusted less */
	int cfd, idflags = LB_ID_SHARED_DIR;

	if (lb_lockfile_check_fd(fd, name, 1, &a) != 0)
		return NULL;
	if (path != NULL && lb_lockfile_check_path(&a, path, &idflags) == -1)
		return NULL;
	cfd = lb_procfs_fd_reopen(fd, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (cfd < 0) {
		lb_warn("%s: cannot open it again", name);
		return NULL;
	}
	if (fstat(cfd, &b) != 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		lb_warnx("%s: cannot open it again: it changed", name);
		close(cfd);
		return NULL;
	}
	p = fp_pool_new(fd, cfd, 0, idflags, name);
	if (p == NULL) {
		close(cfd);
	} else {
		fp(p)->shared = opts->shared;
		fp(p)->any_ok = opts->any_file;
		fp(p)->path = path;
	}
	return p;
#endif
}

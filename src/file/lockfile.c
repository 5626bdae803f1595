/* Lock files opened without trusting the path, created whole, and identified (adopted) under the header lock. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "exec.h"
#include "lockfile.h"
#include "lockformat.h"


/*
 * Kernel file systems whose files only look like files: a zero-size
 * /proc/sys or /sys file is a setting, and writing a header there would
 * change the system (the hostname, a sysctl). Refused by their f_type,
 * whoever made the path point there.
 */
static const struct {
	unsigned long magic;
	const char *name;
} pseudo_fs[] = {
	{ 0x9fa0, "proc" },
	{ 0x62656572, "sysfs" },
	{ 0x27e0eb, "cgroup" },
	{ 0x63677270, "cgroup2" },
	{ 0x64626720, "debugfs" },
	{ 0x74726163, "tracefs" },
	{ 0x73636673, "securityfs" },
	{ 0xf97cff8c, "selinuxfs" },
	{ 0x43415d53, "smackfs" },
	{ 0x62656570, "configfs" },
	{ 0x6165676c, "pstore" },
	{ 0xde5e81e4, "efivarfs" },
	{ 0xcafe4a11, "bpf" },
	{ 0x42494e4d, "binfmt_misc" },
	{ 0x65735543, "fusectl" },
	{ 0x1cd1, "devpts" },
	{ 0x19800202, "mqueue" },
	{ 0x6e736673, "nsfs" },
	{ 0x67596969, "rpc_pipefs" },
	{ 0x6e667364, "nfsd" },
	{ 0x958458f6, "hugetlbfs" },
	{ 0x0187, "autofs" },
	{ 0x9fa2, "usbdevfs" },
	{ 0x7655821, "resctrl" },
	{ 0x6c6f6f70, "binderfs" },
	{ 0xabba1974, "xenfs" },
	{ 0xa647361, "functionfs" },
	{ 0xaee71ee7, "gadgetfs" },
};

/* The name of the kernel file system FD is on, or NULL for a real one. */
static const char *pseudo_fs_name(int fd)
{
	struct statfs sf;
	size_t i;

	if (fstatfs(fd, &sf) != 0)
		return NULL;	/* fstat decides; an unknown file system is not refused */
	for (i = 0; i < sizeof pseudo_fs / sizeof pseudo_fs[0]; i++)
		if ((unsigned long)sf.f_type == pseudo_fs[i].magic)
			return pseudo_fs[i].name;
	return NULL;
}

int lb_fstat_regular(int fd, const char *name, struct stat *st)
{
	if (fstat(fd, st) != 0) {
		lb_warn("%s", name);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		lb_warnx("%s: not a regular file", name);
		return -1;
	}
	return 0;
}

/* A regular file on a real file system (and open for writing if asked); its stat in *ST. */
static int check_stat(int fd, const char *name, int writable, struct stat *st)
{
	const char *fs;
	int fl;

	if (lb_fstat_regular(fd, name, st) != 0)
		return -1;
	fs = pseudo_fs_name(fd);
	if (fs != NULL) {
		lb_warnx("%s: on a kernel file system (%s), not a lock file; refusing to touch it",
		    name, fs);
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

/*
 * The directory part of PATH, opened to look things up in (O_PATH), with
 * its stat in *DIR; *BASE is the rest. -1 with errno set: ENOENT for an
 * empty PATH, EISDIR for one that ends in a slash.
 */
static int open_dir(const char *path, const char **base, struct stat *dir)
{
	const char *slash = strrchr(path, '/');
	char *name;
	int dfd, e;

	*base = slash != NULL ? slash + 1 : path;
	if (*path == '\0' || **base == '\0') {
		errno = *path == '\0' ? ENOENT : EISDIR;
		return -1;
	}
	if (slash == NULL) {
		dfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else if (slash == path) {
		dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else {
		name = strndup(path, (size_t)(slash - path));
		if (name == NULL)
			return -1;
		dfd = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		free(name);
	}
	if (dfd >= 0 && fstat(dfd, dir) != 0) {
		e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
	return dfd;
}

/* Another user may write the directory, but not rename others' files in it. */
static int sticky_shared(const struct stat *dir)
{
	return (dir->st_mode & S_ISVTX) && (dir->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * fs.protected_regular, kept by lockbox itself: the kernel applies it only
 * to opens with O_CREAT, and it may be switched off. In a sticky directory
 * that others may write to (/tmp, /run/lock), a file owned by neither the
 * caller nor the directory's owner may have been put there by anyone, for
 * root to write into, and whatever its mode its owner may delete it and
 * put another in its place under its holders: the next run would lock the
 * new file beside a holder of the old one. So such a file is refused,
 * whatever it holds; a pool shared between users (--mode) lives in a
 * directory of its own. 0 to use it, -1 refused (reported).
 */
static int sticky_rule(const struct stat *st, const struct stat *dir, const char *name)
{
	if (!sticky_shared(dir) || st->st_uid == geteuid() || st->st_uid == dir->st_uid)
		return 0;
	lb_warnx("%s: owned by UID %u in a shared sticky directory, where its owner may replace it under a holder; refusing it (lock a file of your own, or one lockbox makes; a pool shared with --mode belongs in a directory of its own)",
	    name, (unsigned)st->st_uid);
	return -1;
}

/*
 * A fresh header into FD, whole: 0, or -1 with errno (ENOSPC for a write
 * that stopped short without one), what was written of it still there.
 */
static int write_header(int fd)
{
	unsigned char hdr[LB_HDR_SIZE];
	size_t done = 0;
	ssize_t w;

	if (!lb_fsize_fits(LB_HDR_SIZE))
		return -1;
	lb_header_init(hdr);
	/* a write cut short (a disk or quota filling up) goes on to its own errno */
	while (done < sizeof hdr) {
		w = pwrite(fd, hdr + done, sizeof hdr - done, (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = ENOSPC;
			return -1;
		}
		done += (size_t)w;
	}
	return 0;
}

/*
 * Make BASE in DFD with its header already in it, or leave nothing. The
 * file is made and written under a temporary name of our own (O_EXCL),
 * then given its name with link(2), which never replaces an existing
 * name: of two creators racing, one links its file and the other gets
 * EEXIST, drops its own and opens the winner's, so both use one file,
 * and no one ever sees the name on a file with half a header or none (a
 * full disk, a quota, ulimit -f). Only a process killed between the
 * create and the unlink leaves its temporary file behind, never under a
 * lock file's name. A file system without hard links gets the plain
 * O_EXCL create (*fallback), whose header comes later, under the header
 * lock: there a failed header write still leaves an empty file, which
 * cannot be removed safely once others may have opened it.
 * Returns the fd, or -1 with errno; a failed header write is reported
 * here (*reported).
 */
static int create_whole(int dfd, const char *base, int flags, mode_t mode,
    const char *path, int *fallback, int *reported)
{
	static unsigned seq;
	char tmp[64];
	struct stat a, b;
	int fd, e, again, tries = 0;

	*fallback = 0;
	*reported = 0;
	do {
		snprintf(tmp, sizeof tmp, ".lockbox-%ld-%u-%llx", (long)getpid(), seq++,
		    (unsigned long long)lb_now(CLOCK_MONOTONIC));
		fd = openat(dfd, tmp, flags | O_RDWR | O_CREAT | O_EXCL,
		    mode != 0 ? mode : LB_LOCKFILE_MODE);
	} while (fd < 0 && errno == EEXIST && ++tries < 8);
	if (fd < 0)
		return -1;
	/* an explicit mode is the mode, as for mkdir -m: no umask */
	if (mode != 0 && fchmod(fd, mode) != 0)
		goto fail;
	if (write_header(fd) != 0) {
		e = errno;
		lb_warn("%s: cannot write header", path);
		errno = e;
		*reported = 1;
		goto fail;
	}
	if (linkat(dfd, tmp, dfd, base, 0) != 0) {
		e = errno;
		unlinkat(dfd, tmp, 0);
		close(fd);
		/* no hard links here (FAT, some FUSE): BASE is made directly */
		*fallback = e == EPERM || e == EOPNOTSUPP || e == ENOSYS;
		errno = e;
		return -1;
	}
	unlinkat(dfd, tmp, 0);
	/*
	 * Opened again by its own name, so that /proc shows the descriptor
	 * under it (not under the temporary name, gone): lockbox locks and
	 * list name the file by that, and tell a file replaced at its path
	 * by it. The first open stays when the name is someone else's now.
	 */
	if ((again = openat(dfd, base, flags | O_RDWR)) >= 0) {
		if (fstat(fd, &a) == 0 && fstat(again, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino) {
			close(fd);
			fd = again;
		} else {
			close(again);
		}
	}
	return fd;
fail:
	e = errno;
	unlinkat(dfd, tmp, 0);
	close(fd);
	errno = e;
	return -1;
}

/*
 * Make BASE in DFD, read-write: whole (create_whole), or where there are
 * no hard links with a plain O_EXCL create whose header follows under the
 * header lock (lb_lockfile_identify). The fd, or -1 with errno (EEXIST:
 * another creator's file is there now); *REPORTED when a failed header
 * write was reported already.
 */
static int create_new(int dfd, const char *base, int flags, mode_t mode, const char *path,
    int *reported)
{
	int fd, e, fallback;

	fd = create_whole(dfd, base, flags, mode, path, &fallback, reported);
	if (fd >= 0 || !fallback)
		return fd;
	fd = openat(dfd, base, flags | O_RDWR | O_CREAT | O_EXCL,
	    mode != 0 ? mode : LB_LOCKFILE_MODE);
	if (fd >= 0 && mode != 0 && fchmod(fd, mode) != 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Whether this process is in group GID (its own or a supplementary one). */
static int in_group(gid_t gid)
{
	gid_t *groups;
	int n, i, in = getegid() == gid;

	n = in ? 0 : getgroups(0, NULL);
	groups = n > 0 ? calloc((size_t)n, sizeof *groups) : NULL;
	if (groups != NULL) {
		n = getgroups(n, groups);
		for (i = 0; i < n && !in; i++)
			in = groups[i] == gid;
		free(groups);
	}
	return in;
}

/*
 * Why PATH could not be opened, with what to do about it where lockbox
 * knows: a missing directory is named as the directory (lockbox makes
 * the lock file, not its directory), a user denied another user's
 * private lock file learns about --mode, and one outside the group of a
 * file made for a group is told so. DFD is PATH's directory or -1.
 */
static void warn_open(const char *path, int dfd, const char *base, int in_dir)
{
	const char *slash = strrchr(path, '/');
	int e = errno;
	struct stat st;

	if (e == ELOOP) {
		lb_warnx("%s: is a symbolic link; refusing to follow it", path);
	} else if (e == EISDIR) {
		lb_warnx("%s: not a regular file", path);
	} else if (in_dir && e == ENOENT && slash != NULL && slash != path) {
		lb_warnx("%s: no such directory %.*s; lockbox creates the lock file, not its directory",
		    path, (int)(slash - path), path);
	} else if (e == EACCES && geteuid() != 0 &&
	    (dfd >= 0 ? fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) : lstat(path, &st)) == 0 &&
	    S_ISREG(st.st_mode) && st.st_uid != geteuid()) {
		if ((st.st_mode & (S_IRGRP | S_IWGRP)) == (S_IRGRP | S_IWGRP) && !in_group(st.st_gid))
			lb_warnx("%s: %s: the file is UID %u's, mode %04o, for group %u, which this user is not in; join that group, or have the lock made for everyone with --mode 0666",
			    path, strerror(e), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			    (unsigned)st.st_gid);
		else
			lb_warnx("%s: %s: the file is UID %u's, mode %04o; a lock shared between users is created with --mode 0664 (a group) or 0666 (everyone), or chmod it",
			    path, strerror(e), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	} else {
		errno = e;
		lb_warn("%s", path);
	}
}

/*
 * What the directory or regular file open on FD (stat ST) is: a lockbox
 * lock file (*ANY = 0), or a directory, an empty file or one without the
 * magic (*ANY = 1). 0, or -1 (reported under PATH).
 */
static int any_kind(int fd, const struct stat *st, const char *path, int *any)
{
	unsigned char magic[LB_MAGIC_LEN];
	ssize_t n;

	*any = 1;
	if (S_ISDIR(st->st_mode) || st->st_size == 0)
		return 0;
	do
		n = pread(fd, magic, sizeof magic, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		lb_warn("%s", path);
		return -1;
	}
	*any = n != LB_MAGIC_LEN || memcmp(magic, LB_MAGIC, LB_MAGIC_LEN) != 0;
	return 0;
}

/* A directory, or a regular file of a real file system: what a lock may be on. */
static int lockable(int fd, const struct stat *st)
{
	return S_ISDIR(st->st_mode) || (S_ISREG(st->st_mode) && pseudo_fs_name(fd) == NULL);
}

/* A reader's open: it writes nothing, so the directory's rules are for writers. */
static int open_reader(const char *path, int flags, int *any)
{
	struct stat st;
	int fd;

	do
		fd = open(path, flags | O_RDONLY);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		if (errno == ENOENT)
			return LB_OPEN_MISSING;	/* nobody holds a missing file */
		warn_open(path, -1, path, 0);
		return -1;
	}
	if (any != NULL && fstat(fd, &st) == 0 && lockable(fd, &st)) {
		if (any_kind(fd, &st, path, any) != 0) {
			close(fd);
			return -1;
		}
		if (*any)
			return fd;
	}
	if (check_stat(fd, path, 0, &st) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * BASE in DFD open again for reading and writing: the fd, or -1 with
 * errno; -2 when BASE names another file now than ST (moved or replaced
 * since: the caller starts over).
 */
static int reopen_writable(int dfd, const char *base, int flags, const struct stat *st)
{
	struct stat now;
	int fd;

	do
		fd = openat(dfd, base, flags | O_RDWR);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	if (fstat(fd, &now) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return -2;
	}
	return fd;
}

/* How many times a path that keeps changing under an open is looked up again. */
#define OPEN_TRIES	8

/*
 * lb_lockfile_open's open to write, of WHERE (PATH in messages): in its
 * directory, read-only first. FLAGS has O_DIRECTORY for a PATH that ends
 * with a slash, which names a directory or nothing (never a file made).
 */
static int open_in_dir(const char *path, const char *where, int flags, mode_t mode,
    int *idflags, int *any)
{
	const char *base;
	struct stat dir, st;
	int dfd, fd, rw, reported = 0, tries, other;

	dfd = open_dir(where, &base, &dir);
	if (dfd < 0) {
		warn_open(path, -1, base, 1);
		return -1;
	}
	/*
	 * Read-only first, always: a file is opened for writing only when
	 * lockbox writes to it (a lockbox lock file, or an empty one that a
	 * pool adopts). A script that locks itself and then runs itself
	 * must not be open for writing at its exec (ETXTBSY), nor at anyone
	 * else's, nor must a data file someone else may read be.
	 */
	for (tries = 0;; tries++) {
		int *kind = any != NULL ? any : &other;

		reported = 0;
		if (tries == OPEN_TRIES) {
			lb_warnx("%s: replaced again and again while being opened; giving up", path);
			fd = -1;
			reported = 1;
			break;
		}
		do
			fd = openat(dfd, base, flags | O_RDONLY);
		while (fd < 0 && errno == EINTR);
		if (fd < 0 && errno == ENOENT && !(flags & O_DIRECTORY)) {
			fd = create_new(dfd, base, flags, mode, path, &reported);
			if (fd < 0 && errno == EEXIST)
				continue;	/* another creator's file: use it */
			if (fd < 0)
				break;
			/* a file made now is lockbox's own: neither the sticky rule nor any file */
			*idflags = LB_ID_CREATED | (sticky_shared(&dir) ? LB_ID_SHARED_DIR : 0);
			close(dfd);
			return fd;
		}
		if (fd < 0)
			break;
		if (fstat(fd, &st) != 0) {
			lb_warn("%s", path);
			break;
		}
		if (!lockable(fd, &st) || (S_ISDIR(st.st_mode) && any == NULL)) {
			check_stat(fd, path, 0, &st);
			break;
		}
		/* the sticky directory rule for every file, whatever it holds (a planted one) */
		if (any_kind(fd, &st, path, kind) != 0 || sticky_rule(&st, &dir, path) != 0)
			break;
		if (*kind && any != NULL) {
			/*
			 * Any file: locked as flock(1) locks it, and never
			 * written. One that no exec can meet (no x bit) is held
			 * open for writing too where the caller may: its fcntl
			 * half is then a write lock, which keeps every reader
			 * kind out (an emptied lock file is one).
			 */
			if (S_ISREG(st.st_mode) && !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
				rw = reopen_writable(dfd, base, flags, &st);
				if (rw == -2) {
					close(fd);
					continue;	/* moved or replaced since: look again */
				}
				if (rw >= 0) {
					close(fd);
					fd = rw;
				}
			}
			close(dfd);
			return fd;
		}
		if (*kind && st.st_size != 0) {
			lb_warnx("%s: not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)",
			    path);
			break;
		}
		/* a lockbox lock file, or an empty one to adopt: it is written */
		rw = reopen_writable(dfd, base, flags, &st);
		if (rw == -2) {
			close(fd);
			continue;	/* moved or replaced since: look again */
		}
		if (rw < 0) {
			warn_open(path, dfd, base, 0);
			break;
		}
		close(fd);
		*idflags = sticky_shared(&dir) ? LB_ID_SHARED_DIR : 0;
		close(dfd);
		return rw;
	}
	if (fd >= 0)
		close(fd);
	else if (!reported)
		warn_open(path, dfd, base, 1);
	close(dfd);
	return -1;
}

int lb_lockfile_open(const char *path, int writable, mode_t mode, int *idflags, int *any)
{
	/*
	 * O_NOFOLLOW: a final symlink (perhaps planted in /tmp) is never
	 * followed, so lockbox never creates or writes through it.
	 * O_NONBLOCK: opening a FIFO must not hang; the fstat below then
	 * refuses it like any other non-regular file.
	 */
	int flags = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	size_t n = strlen(path);
	char *where;
	int fd;

	*idflags = 0;
	if (any != NULL)
		*any = 0;
	if (!writable)
		return open_reader(path, flags, any);
	if (n == 0 || path[n - 1] != '/')
		return open_in_dir(path, path, flags, mode, idflags, any);
	/* DIR/ and /, as flock(1) takes them: the directory (/ as /.) */
	while (n > 0 && path[n - 1] == '/')
		n--;
	where = n > 0 ? strndup(path, n) : strdup("/.");
	if (where == NULL) {
		lb_warn("%s", path);
		return -1;
	}
	fd = open_in_dir(path, where, flags | O_DIRECTORY, mode, idflags, any);
	free(where);
	return fd;
}

int lb_lockfile_check_path(const struct stat *f, const char *path, int *idflags)
{
	const char *base;
	struct stat l, dir;
	int dfd, e, rc = -1;

	dfd = open_dir(path, &base, &dir);
	if (dfd < 0 || fstatat(dfd, base, &l, AT_SYMLINK_NOFOLLOW) != 0) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		errno = e;
		lb_warn("%s", path);
		return -1;
	}
	close(dfd);
	if (S_ISLNK(l.st_mode))
		lb_warnx("%s: is a symbolic link; refusing to follow it", path);
	else if (!S_ISREG(l.st_mode))
		lb_warnx("%s: not a regular file", path);
	else if (f->st_dev != l.st_dev || f->st_ino != l.st_ino)
		rc = LB_PATH_MOVED;
	else if (sticky_rule(f, &dir, path) == 0)
		rc = 0;
	if (rc == 0)
		*idflags = sticky_shared(&dir) ? LB_ID_SHARED_DIR : 0;
	return rc;
}

int lb_lockfile_at_path(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino;
}

int lb_lockfile_check_fd(int fd, const char *name, int writable, struct stat *st)
{
	return check_stat(fd, name, writable, st);
}

/*
 * Whether an empty file that lockbox did not create may get a header.
 * Writing one is writing into a file that someone else made: only into
 * one that the caller or root owns, that no other name reaches (a hard
 * link to a file elsewhere), and that others could not have planted.
 * Why not is said under NAME (NULL: not said).
 */
static int adoptable(const struct stat *st, const char *name, int flags)
{
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		if (name != NULL)
			lb_warnx("%s: empty, and owned by UID %u, neither the caller nor root; refusing to adopt it",
			    name, (unsigned)st->st_uid);
		return 0;
	}
	if (st->st_nlink != 1) {
		if (name != NULL)
			lb_warnx("%s: empty, with %ju links; refusing to adopt it", name,
			    (uintmax_t)st->st_nlink);
		return 0;
	}
	if ((st->st_mode & S_IWOTH) && (flags & LB_ID_SHARED_DIR)) {
		if (name != NULL)
			lb_warnx("%s: empty, and writable by anyone in a shared directory; refusing to adopt it",
			    name);
		return 0;
	}
	return 1;
}

off_t lb_lockfile_identify(int fd, const char *name, int flags)
{
	unsigned char hdr[LB_HDR_SIZE];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) != 0) {
		lb_warn("%s", name);
		return -1;
	}
	if (st.st_size == 0) {
		if (!(flags & LB_ID_WRITE))
			return 0;
		if ((flags & LB_ID_ANY) && !(flags & LB_ID_CREATED) && !adoptable(&st, NULL, flags))
			return LB_ID_NOT_LOCK;
		if (!(flags & LB_ID_CREATED) && !adoptable(&st, name, flags))
			return -1;
		/*
		 * An empty file may be a lock already: flock(1)'s, or
		 * mutex's on a file it did not make (flock(2), nothing
		 * written: see fileany.c). A header written under such a
		 * holder would make the file one whose holders do not see
		 * it, and two would hold at once. So it is adopted only
		 * while nobody holds it that way, with that lock taken for
		 * the time of the write: a mutex that waited for it looks
		 * again once it has it, and finds a lockbox lock file.
		 */
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			if (errno == EWOULDBLOCK && (flags & LB_ID_ANY))
				return LB_ID_NOT_LOCK;
			if (errno == EWOULDBLOCK)
				lb_warnx("%s: empty, and locked with flock(2) (by flock(1), or by mutex on a file it did not make); refusing to adopt it while it is",
				    name);
			else
				lb_warn("%s", name);
			return -1;
		}
		/* all of it, or the file is left empty as it was */
		if (write_header(fd) != 0) {
			int e = errno;

			(void)!ftruncate(fd, 0);
			flock(fd, LOCK_UN);
			errno = e;
			lb_warn("%s: cannot write header", name);
			return -1;
		}
		flock(fd, LOCK_UN);
		return (off_t)LB_HDR_SIZE;
	}
	n = pread(fd, hdr, LB_MAGIC_LEN, 0);
	if (n < 0) {
		lb_warn("%s", name);
		return -1;
	}
	if (n != LB_MAGIC_LEN || memcmp(hdr, LB_MAGIC, LB_MAGIC_LEN) != 0) {
		if (flags & LB_ID_ANY)
			return LB_ID_NOT_LOCK;
		lb_warnx("%s: not a lockbox lock file; refusing to touch it (give the lock a path of its own: lockbox creates it)",
		    name);
		return -1;
	}
	return st.st_size;
}

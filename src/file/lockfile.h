/* Lock files opened without trusting the path, created whole, and identified under the header lock. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKFILE_H
#define LOCKBOX_LOCKFILE_H

#include <sys/stat.h>
#include <sys/types.h>

/* A lock file lockbox creates, unless told another mode. */
#define LB_LOCKFILE_MODE 0600

/* How lb_lockfile_identify may treat a file. */
enum {
	LB_ID_WRITE = 1,	/* an empty file may get a header (if safe) */
	LB_ID_CREATED = 2,	/* lockbox created it: an empty one is its own */
	LB_ID_SHARED_DIR = 4,	/* its directory is sticky and writable by others,
				 * or unknown (a caller's fd) */
	LB_ID_ANY = 8,		/* a mutex's: a file that is not a lockbox lock file
				 * (and will not be adopted) is locked as any file:
				 * LB_ID_NOT_LOCK, nothing said */
};
#define LB_ID_NOT_LOCK	(-2)

/*
 * Open a lock file without trusting the path: a final symlink is refused,
 * a FIFO never blocks the open, anything but a regular file on a real
 * file system is refused. A file is opened read-only, and read-write only
 * when it will be written: a lockbox lock file, an empty one to adopt, one
 * made now. WRITABLE (a locker's open, not a look): an existing file in a
 * sticky directory that others may write is refused when owned by neither
 * the caller nor the directory's owner, unless it is a lock file that
 * others may write (shared on purpose), whatever else it is; a missing
 * file is created with MODE (exactly; 0: LB_LOCKFILE_MODE less the
 * umask), its header in it. *IDFLAGS gets the LB_ID_ flags the file was
 * opened with. Errors are reported under PATH. Returns the fd
 * (close-on-exec), -1 on error, or LB_OPEN_MISSING for a read-only open
 * of a file that is absent.
 * ANY, when not NULL, takes any file that is not a lockbox lock file, to
 * be locked as flock(1) does and never written (*ANY = 1, opened
 * read-only): an existing directory, an empty file, one without the
 * magic. A lockbox lock file and a file made now are opened as without
 * ANY (*ANY = 0); without ANY, an existing file that is neither empty nor
 * a lockbox lock file is refused untouched.
 */
#define LB_OPEN_MISSING (-2)
int lb_lockfile_open(const char *path, int writable, mode_t mode, int *idflags, int *any);

/* fstat FD into *ST; -1 (reported under NAME) when that fails or it is not a regular file. */
int lb_fstat_regular(int fd, const char *name, struct stat *st);

/* An fd the caller opened must be a regular file too (and writable if asked); its stat in *ST. */
int lb_lockfile_check_fd(int fd, const char *name, int writable, struct stat *st);

/*
 * The caller opened a file (stat ST, as lb_lockfile_check_fd found it) on
 * PATH, but a symlink or another file may have been put in PATH's place
 * between its check and its open: it must be the regular file PATH names
 * now (PATH not a symlink), and pass the sticky directory rule that
 * lb_lockfile_open applies. 0 with *IDFLAGS set from PATH's directory, -1
 * (reported), or LB_PATH_MOVED when PATH names another file than that now
 * (nothing said: replaced since the caller opened it, who may open it
 * again).
 */
#define LB_PATH_MOVED	(-2)
int lb_lockfile_check_path(const struct stat *st, const char *path, int *idflags);

/*
 * Whether PATH (a final symlink not followed) names, now, the file open
 * on FD: 0 once it has been moved, replaced or deleted. Nothing said.
 */
int lb_lockfile_at_path(int fd, const char *path);

/*
 * With the header locked: identify the file. An empty file gets a fresh
 * header with LB_ID_WRITE, if lockbox created it or it is safe to adopt
 * (owned by the caller or root, one link, not writable by anyone in a
 * shared directory); a file that is neither empty nor a lockbox file is
 * refused untouched, or with LB_ID_ANY LB_ID_NOT_LOCK (as an empty one that
 * is not adopted). Returns the file size, or -1 (reported).
 */
off_t lb_lockfile_identify(int fd, const char *name, int flags);

#endif

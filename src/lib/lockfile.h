/* Lock files: the on-disk format, hardened opening, and byte-range locks. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKFILE_H
#define LOCKBOX_LOCKFILE_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "le.h"
#include "pool.h"
#include "proc.h"

/*
 * Format version 1, every integer little-endian and fixed-width, so hosts of
 * any word size and byte order can share a file (over NFS):
 *
 *   header   bytes [0, 4096): magic, sizes and the "high" hint in the first
 *            64; the rest is the atom area (adaptive's run history, zeros
 *            elsewhere). A write lock on the whole header serialises
 *            acquisitions and guards every write to the file.
 *   slot s   bytes [4096 + 256(s-1), 4096 + 256s): its holder record; a
 *            write lock on the record's first byte is the slot itself
 *   queue    lock bytes only, far past any record (the file never grows
 *            there): byte 2^32 + t is waiter t's ticket, and a write lock
 *            on byte 2^32 - 1 serialises taking tickets (see filequeue.c);
 *            bytes 2^32 + 2^48 + 2t and 2t+1 are waiter t's mark (LB_WAITER_OFF)
 */
#define LB_MAGIC	"lockbox lock v1\n"
#define LB_MAGIC_LEN	16
#define LB_HDR_SIZE	4096
#define LB_ATOM_OFF	64
#define LB_ATOM_SIZE	(LB_HDR_SIZE - LB_ATOM_OFF)
_Static_assert(LB_ATOM_SIZE == LB_POOL_ATOM_SIZE, "atom area size");
#define LB_REC_SIZE	256
#define LB_SLOT_LIMIT	LB_POOL_MAX_SLOTS

/* header fields */
#define LB_HDR_OFF_HDRSIZE	16
#define LB_HDR_OFF_RECSIZE	20
#define LB_HDR_OFF_HIGH		24	/* highest slot with a record in use: a hint */
#define LB_HDR_OFF_TICKET	32	/* u64: the next waiter's ticket */
#define LB_HDR_OFF_GEN		40	/* u64: one more at every write-locked visit */
#define LB_HDR_OFF_RELEASES	48	/* u64: one more at every explicit release */
#define LB_HDR_FIELDS		64	/* bytes before the atom area */

#define LB_QUEUE_OFF		((off_t)1 << 32)
#define LB_JOIN_OFF		(LB_QUEUE_OFF - 1)
/* tickets count up to this, and start again at 0 */
#define LB_QUEUE_TICKETS	((uint64_t)1 << 48)
/*
 * Byte LB_WAITER_OFF + 2t (+ 1 for a shared request): waiter t's mark, a
 * classic POSIX read lock, which the kernel's lock table shows with its
 * process (unlike the ticket's open file description lock): how list
 * names those who wait without a look through /proc. A read lock, so
 * that it never keeps anyone from a read lock over the queue's bytes.
 */
#define LB_WAITER_OFF		(LB_QUEUE_OFF + (off_t)LB_QUEUE_TICKETS)

/*
 * The fcntl half of a lock on a file that is not a lockbox lock file
 * (fileany.c): a read lock on bytes [0, LB_PATH_LEN), every byte a lock
 * file's header and slots may use and none of its queue's, so that it
 * conflicts with the write locks of other programs on the whole file and
 * with a lock file's own, whatever the file holds now.
 */
#define LB_PATH_LEN		LB_JOIN_OFF

/* record fields */
#define LB_REC_HELD		UINT32_C(0x444c4f48)	/* "HOLD" */
#define LB_REC_FREE		UINT32_C(0)

static inline off_t lb_slot_offset(unsigned slot)
{
	return (off_t)LB_HDR_SIZE + (off_t)(slot - 1) * LB_REC_SIZE;
}

/*
 * The top bit of a record's slot word: its holder holds a shared lock
 * (mutex -s), one of any number, which only other shared holders share
 * the pool with. A lockbox that does not know the bit counts the holder
 * as any other: a slot held, which keeps its mutex out.
 */
#define LB_REC_SHARED		UINT32_C(0x80000000)

/* A record's state word, its holder, and whether that one holds it shared. */
uint32_t lb_record_state(const unsigned char rec[LB_REC_SIZE]);
void lb_record_encode(unsigned char rec[LB_REC_SIZE], unsigned slot,
    const struct lb_ident *who, int shared);
int lb_record_shared(const unsigned char rec[LB_REC_SIZE]);
/* The PID of a record, alone: cheaper than decoding it all. */
pid_t lb_record_pid(const unsigned char rec[LB_REC_SIZE]);
void lb_record_decode(const unsigned char rec[LB_REC_SIZE], struct lb_ident *who);

/* A fresh header. */
void lb_header_init(unsigned char hdr[LB_HDR_SIZE]);

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
 * The caller opened FD (stat ST, as lb_lockfile_check_fd found it) on
 * PATH, but a symlink or another file may have been put in PATH's place
 * between its check and its open: FD must be the regular file PATH names
 * now (PATH not a symlink), and pass the sticky directory rule that
 * lb_lockfile_open applies. 0 with *IDFLAGS set from PATH's directory, -1
 * (reported), or LB_PATH_MOVED when PATH names another file than FD now
 * (nothing said: replaced since the caller opened it, who may open it
 * again).
 */
#define LB_PATH_MOVED	(-2)
int lb_lockfile_check_path(int fd, const struct stat *st, const char *path, int *idflags);

/*
 * With the header locked: identify the file. An empty file gets a fresh
 * header with LB_ID_WRITE, if lockbox created it or it is safe to adopt
 * (owned by the caller or root, one link, not writable by anyone in a
 * shared directory); a file that is neither empty nor a lockbox file is
 * refused untouched, or with LB_ID_ANY LB_ID_NOT_LOCK (as an empty one that
 * is not adopted). Returns the file size, or -1 (reported).
 */
off_t lb_lockfile_identify(int fd, const char *name, int flags);

/*
 * fcntl byte-range locks: open-file-description locks where the kernel has
 * them, classic per-process POSIX locks otherwise. TYPE is F_RDLCK, F_WRLCK
 * or F_UNLCK; LEN 0 means "to the end of any file". lb_lock_try returns 1
 * (done), 0 (busy; errno kept), -1 (error). lb_lock_block waits in the
 * kernel until the lock is granted (0) or a signal interrupts it (-1,
 * EINTR); waiting with a deadline is wait.h's lb_lock_wait.
 */
int lb_lock_try(int fd, short type, off_t start, off_t len);
int lb_lock_block(int fd, short type, off_t start, off_t len);

/*
 * Who blocks a lock of TYPE on the range: 1 when nobody, 0 when someone
 * does (*conflict describes that lock), -1 on error. Never blocks.
 */
int lb_lock_test(int fd, short type, off_t start, off_t len, struct flock *conflict);

/*
 * lb_lock_try with a classic POSIX lock, in every build: the calling
 * process's, named by the kernel, gone with it or with its first close
 * of any descriptor of the file.
 */
int lb_lock_try_process(int fd, short type, off_t start, off_t len);

#endif

/* The lock-file backend's insides, shared by its files (file*.c: filepool.c and what it stands on); no one else's. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_FILEPOOL_H
#define LOCKBOX_FILEPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "lockfile.h"
#include "lockformat.h"
#include "lockscan.h"
#include "proc.h"
#include "wait.h"

/*
 * What one step of an acquisition came to: every step (arrive, fp_enter,
 * fp_take_slot, the queue's join and turn, the head's wait, fa_acquire)
 * returns one of these. FP_ERROR has been reported.
 */
enum fp_step {
	FP_NOT_LOCK = LB_ID_NOT_LOCK,	/* a mutex's lock file is no lock file now: lock it as any file */
	FP_ERROR = -1,
	FP_BUSY = 0,		/* not taken: busy, or the deadline passed */
	FP_TAKEN = 1,		/* taken (fp_enter: the header held; the queue: our turn) */
	FP_STOPPED = 2,		/* ^Z: the place in the queue given up, to queue again after */
	FP_QUEUED = 3,		/* behind others in the queue, a ticket held */
	FP_BECAME_LOCK = 4,	/* any file became a lock file: its lock given back, take a slot */
	FP_HEAD = 5,		/* every slot busy, and the head of the queue: wait for one */
	FP_STALLED = 6,		/* fp_progress_lock: nobody got through the lock for a while */
};

/* wake-ups remembered between a head's attempts */
#define GONE_MAX	64

struct filepool {
	struct lb_pool base;
	const char *name;	/* base.name */
	int fd;			/* slot locks (the caller's, for --fd); -1: no file, seen read-only */
	int cfd;		/* header and queue locks: always our own open file */
	int owned;		/* we opened fd */
	int idflags;		/* LB_ID_ flags: how far an empty file may be trusted */
	int any;		/* not a lockbox lock file: flock(2) on fd, no records (fileany.c) */
	int any_ok;		/* opened for a mutex, which takes any file (opts.any_file) */
	int any_forced;		/* a lock file locked as any file, as its holders hold it */
	mode_t mode;		/* opts.mode, for opening again */
	const char *path;	/* the path it was opened by (or --path), looked up again after a lock */
	int shared;		/* acquisitions are for a shared lock */
	int64_t max_hold;	/* opts.max_hold: the holder's watcher gives the lock back then */
	int on_loss;		/* opts.on_loss: the signal for its job then */
	/*
	 * flock(2) beside a lock file's slot (LOCK_EX for a pool of one,
	 * LOCK_SH shared, 0 for a pool of more), so that programs that lock
	 * with flock(2) see its holders; path_busy: the last attempt found
	 * a slot but not that lock (filestore.c)
	 */
	int path_op;
	int path_busy;
	int any_kind;		/* any file: the fcntl half taken (F_RDLCK, F_WRLCK), -1: none */
	int any_blocked;	/* any file: what kept the last attempt out (fileany.c) */
	unsigned char head[LB_HDR_FIELDS];	/* the header fields, as last read */
	unsigned char *buf;	/* header and records as last read; zeros past that */
	size_t loaded;		/* bytes of buf read from the file */
	size_t cap;		/* bytes allocated for buf */
	unsigned nrec;		/* whole records in buf */
	struct lb_slotset held;	/* last full scan: locked slots */
	struct lb_lockset met;	/* the locks that scan met, each once */
	int behind;		/* it timed out in the queue, behind another waiter;
				 * 2: a shared request found others queued first */
	pid_t ahead;		/* that waiter (0: not found) */
	int at_head;		/* our ticket's next byte let go: the head of the queue */
	int ahead_stopped;
	struct lb_lockinfo *fgn;	/* another program's locks on the file, one a process */
	size_t nfgn;
	int hdr_foreign;	/* the last refusal: fgn's lock on the header */
	int reader;		/* the last progress_lock: ended by a read lock on queue bytes */
	off_t reader_at;	/* its first byte there */
	pid_t reader_pid;	/* its process as the kernel gave it (0: not given) */
};

/*
 * What woke a head since its last attempt: holders that ended (their
 * records are stale if their slot is free), and the slots they held or
 * that a lock request saw free (pid -1).
 */
struct gone {
	pid_t pid[GONE_MAX];
	unsigned slot[GONE_MAX];
	size_t n;
};

/* filepool.c: a new pool over FD (slot locks) and CFD (header and queue locks), for fileopen.c */
struct lb_pool *fp_pool_new(int fd, int cfd, int owned, int idflags, const char *name);

/* filestore.c: the file's bytes, the header lock, slot choice */
int fp_pread_all(struct filepool *p, void *buf, size_t n, off_t off);
int fp_pwrite_all(struct filepool *p, const void *buf, size_t n, off_t off);
uint64_t fp_header_word(struct filepool *p, size_t off);
int fp_set_header_word(struct filepool *p, size_t off, uint64_t v);
uint64_t fp_read_count(struct filepool *p, off_t off);
int fp_progress_lock(struct filepool *p, short type, off_t start, off_t len,
    off_t progress, int64_t deadline, const char *what, int readers_foreign);
void fp_warn_foreign(struct filepool *p);
/* DEADLINE LB_NO_WAIT: a header held by lockbox is still waited for while it makes progress */
enum fp_step fp_enter(struct filepool *p, int64_t deadline, off_t *size);
void fp_header_unlock(struct filepool *p);
int fp_load(struct filepool *p, off_t size);
unsigned char *fp_record(struct filepool *p, unsigned slot);
uint32_t fp_state(struct filepool *p, unsigned slot);
int fp_scan(struct filepool *p);
enum fp_step fp_take_slot(struct filepool *p, off_t size, unsigned max,
    const struct lb_ident *caller, const struct gone *gone, unsigned *slot);
/* a slot taken without the header, when nobody gets through it (FP_STALLED) */
enum fp_step fp_take_bare(struct filepool *p, unsigned max, const struct lb_ident *caller,
    unsigned *slot);
/* the head's look: fp_enter, fp_take_slot, the header let go; FP_HEAD every slot busy */
enum fp_step fp_try_take(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *caller, const struct gone *gone, unsigned *slot);

/* fileforeign.c: locks lockbox did not take */
/*
 * Whether a flock(2) lock of FD's file is held for exclusive use: a
 * shared one is taken and let go at once, and is refused (a lock test
 * for a lock that has none). An attempt that meets that moment is
 * refused too: lockbox's own try again (try_both, path_lock).
 */
int fp_flock_probe(int fd);
unsigned fp_slot_of(const struct lb_lockinfo *l);
int fp_find_foreign(struct filepool *p, int records);

/*
 * fileany.c: a file that is not a lockbox lock file, locked as flock(1)
 * locks it. fa_acquire: FP_TAKEN, FP_BUSY (or the deadline passed),
 * FP_ERROR, or FP_BECAME_LOCK when the file became a lockbox lock file
 * meanwhile (its lock given back: the caller takes a slot of it instead).
 */
enum fp_step fa_acquire(struct filepool *p, unsigned max, int64_t deadline, unsigned *slot);
int fa_release(struct filepool *p);
int fa_holders(struct filepool *p, int waiting, struct lb_holders *out);

/* filequeue.c: the wait queue */
int fp_queue_busy(struct filepool *p);
enum fp_step fp_queue_join(struct filepool *p, int64_t deadline, uint64_t *ticket);
void fp_queue_leave(struct filepool *p, uint64_t ticket);
/* At the head of the queue now: its next byte let go, and a look behind it. */
void fp_queue_head(struct filepool *p, uint64_t ticket);
enum fp_step fp_queue_turn(struct filepool *p, uint64_t ticket, int64_t deadline);
/*
 * The row list shows for Q, the waiter of PLACE in the queue (1: the
 * next), or another program's lock in the queue's bytes.
 */
void fp_queue_row(struct lb_holder *h, const struct lb_queued *q, unsigned place);

/* filequeue.c: the head of the queue */
enum fp_step fp_head_wait(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot);

#endif

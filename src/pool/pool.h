/* A pool of slots (pool.c; freed by poolbase.c): all that applets know of locks. */
/* SPDX-License-Identifier: ISC */
/*
 * The interface every lock backend implements, and all that applets know
 * of locks. A mutex is a pool of one.
 */
#ifndef LOCKBOX_POOL_H
#define LOCKBOX_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "lockedfiles.h"
#include "lockscan.h"
#include "holder.h"
#include "poolsize.h"
#include "proc.h"

struct lb_pool;

/* How a pool is opened; NULL means every default. */
struct lb_pool_opts {
	mode_t mode;		/* permissions of a file created now; 0: 0600 */
	int on_loss;		/* signal for the command's job when a remote lock is lost; 0: none */
	int loss_to_caller;	/* on_loss goes to this process, which supervises the command */
	/*
	 * A mutex's: an existing file that is not a lockbox lock file (a
	 * directory, an empty file, a data file, one the caller may only
	 * read) is locked as flock(1) locks it, with flock(2), and nothing is
	 * written into it; check and list read its holders from the kernel.
	 */
	int any_file;
	/* with any_file, a caller's fd (acquire --fd): an empty file nobody holds is adopted */
	int adopt_empty;
	int shared;		/* take a shared lock (mutex -s), not the slot alone */
	/*
	 * ns; 0: none. The command's job gets on_loss and the lock is given
	 * back once it has been held this long, by a watcher beside the
	 * command (watcher.h), and for a server's lock by the server too.
	 */
	int64_t max_hold;
};

/*
 * Open a lock target by name: a lock file's path, or another backend's
 * address (postgresql://...). READ only looks and never creates anything;
 * WRITE takes slots; LIST opens a server's database without lock=, only
 * for lb_pool_atom_names. NULL on error, already reported.
 */
enum { LB_POOL_READ, LB_POOL_WRITE, LB_POOL_LIST };
struct lb_pool *lb_pool_open(const char *target, int access, const struct lb_pool_opts *opts);

/*
 * What a pool's locks are like: front ends ask this, never which backend
 * a target names. lb_pool_target_caps tells it from a name, before opening.
 */
enum {
	LB_POOL_IN_FS = 1 << 0,		/* a file: a directory holds it, create makes it */
	LB_POOL_HOSTS = 1 << 1,		/* holders may be on any host: messages name it */
	LB_POOL_LOSS = 1 << 2,		/* a held lock can be lost (opts.on_loss tells) */
	LB_POOL_PROCESSES = 1 << 3,	/* holders are processes, proven and ended on their host */
	/*
	 * a file that is not a lockbox lock file, locked as flock(1) locks
	 * it (opts.any_file): one lock, no records, the kernel's own queue
	 */
	LB_POOL_FLOCK = 1 << 4,
};
unsigned lb_pool_caps(const struct lb_pool *pool);
unsigned lb_pool_target_caps(const char *target);

/*
 * Whether TARGET is a server's URL with its scheme misspelt
 * ("postgersql://db/ops?lock=x", "postgresql:/db", "Postgres://..."):
 * a scheme of letters one or two slips from a backend's (backends.c:
 * postgresql, postgres), or one of those without its "//", where no file
 * or directory of that name is. Then it says so, "did you mean
 * postgresql://?", with nothing of the URL past its scheme (a password
 * may follow), and returns 1.
 * lb_pool_open checks it before taking TARGET for a path.
 */
int lb_pool_misspelt(const char *target);

/* Whether TARGET names a lock in the file system (a directory holds it). */
static inline int lb_pool_target_in_fs(const char *target)
{
	return (lb_pool_target_caps(target) & LB_POOL_IN_FS) != 0;
}

/*
 * Opening a target whose BACKEND this program does not link (postgresql://
 * in the static lockbox) calls FN, set by main, which may hand the whole
 * run to the backend's helper program (backends.h) when this build made
 * it; FN returns only when it could not, having said why, and the open
 * fails. Without FN, or such a program, the open fails with a message.
 */
struct lb_backend;
typedef void lb_pool_handoff_fn(const char *target, const struct lb_backend *backend);
void lb_pool_set_handoff(lb_pool_handoff_fn *fn);

/*
 * Adopt a lock file's fd the caller opened read-write (acquire/release
 * --fd). With PATH (--path), FD must be the file PATH names, checked as
 * lb_lockfile_check_path does; NULL: no such check. OPTS (NULL: the
 * defaults): any_file takes an fd open in any way on a file that is not
 * a lockbox lock file, for flock(2) (flock(1)'s "flock FD").
 */
struct lb_pool *lb_pool_from_fd(int fd, const char *name, const char *path,
    const struct lb_pool_opts *opts);

/*
 * Every lock on this host that the caller may see, of every kind
 * (lockscan.h's view), up to DEADLINE (0: none). Until
 * lb_pool_host_done, every pool opened and looked at (holders, waiters)
 * reads the kernel's lock table and the processes from this view's one
 * read and one walk, not afresh. 0, or -1 (reported).
 */
int lb_pool_host_view(struct lb_host_view *hv, int64_t deadline);
void lb_pool_host_done(struct lb_host_view *hv);

/*
 * A person's look at one pool (list), up to DEADLINE: until
 * lb_pool_look_done, its holders and waiters are looked up as lockbox
 * locks looks at the host (one read of the kernel's lock table, other
 * programs' locks among them, and walks of /proc up to DEADLINE). Every
 * other look and every acquisition reads no lock table, and looks for
 * the processes of other programs' locks for a few milliseconds at most.
 */
void lb_pool_look_host(int64_t deadline);
void lb_pool_look_done(void);

/*
 * The holders and waiters of file FI of the view, a lockbox lock file,
 * as list shows them (lb_host_lockfile: LOCKS, N of them, are its locks'
 * indexes): 0; 1 when it is no lockbox lock file, or cannot be read;
 * -1 (reported).
 */
int lb_pool_host_lockfile(struct lb_host_view *hv, size_t fi, const size_t *locks, size_t n,
    struct lb_holders *h, struct lb_holders *w);

/*
 * Whether the last refusal's holders were looked for past its deadline
 * and a process was left unfound (the busy message says "not found in
 * time").
 */
int lb_pool_lookup_short(void);

/* The name messages use for the pool. */
const char *lb_pool_name(const struct lb_pool *pool);

/*
 * Take one slot among MAX: 1 (taken, *slot set), 0 (all busy until DEADLINE
 * on CLOCK_MONOTONIC, or LB_NO_WAIT; *busy then lists the holders if
 * busy is not NULL), -1 (error, reported). WHO is recorded as the holder.
 */
int lb_pool_acquire(struct lb_pool *pool, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy);

/*
 * After lb_pool_acquire returned 0: what kept the slot when it was not the
 * holders (a waiter ahead in the queue, a lock lockbox did not take), or
 * NULL. *AT_ONCE: it was found at once, not waited on until the deadline.
 */
const char *lb_pool_why(const struct lb_pool *pool, int *at_once);

/*
 * While an acquisition waits, FN(ARG, PROGRESS) is called when the wait
 * begins and about once a second after: PLACE is our place among those
 * who wait (1: the next to be served; 0: not known), HOLDER one that
 * holds the lock now (NULL: not known). For a status line; FN must not
 * use the pool. NULL: none (the default).
 */
struct lb_progress {
	unsigned place;
	const struct lb_holder *holder;
};
typedef void lb_progress_fn(void *arg, const struct lb_progress *progress);
void lb_pool_set_progress(struct lb_pool *pool, lb_progress_fn *fn, void *arg);

/* The slot this pool's own open file holds already (--fd), 0 when none. */
unsigned lb_pool_own_slot(struct lb_pool *pool);

/* Release every slot this pool holds and forget OWNER's records. 0 or -1. */
int lb_pool_release(struct lb_pool *pool, pid_t owner);

/* The current holders, by slot. 0, or -1 on error (reported). */
int lb_pool_holders(struct lb_pool *pool, struct lb_holders *out);

/*
 * Those who wait (-w) for the pool, in the order they will be served
 * (waiting set, queue from 1): 0, or -1 on error (reported). A backend
 * that cannot tell gives none.
 */
int lb_pool_waiters(struct lb_pool *pool, struct lb_holders *out);

/*
 * How many holders lb_pool_holders would list, without describing them:
 * held slots, and one for each process with a foreign lock on the file.
 */
int lb_pool_count(struct lb_pool *pool, size_t *n);

/*
 * The time of an atom transaction, on the clocks of whatever keeps the
 * state: a lock file's are this host's, so that every host that shares
 * a state agrees on how long ago its times were.
 */
struct lb_atom_clock {
	int64_t wall;		/* ns since the epoch */
	int64_t boot;		/* ns on a clock that is never set, of the boot named next */
	uint8_t boot_id[16];
};

/*
 * The pool's atom area (adaptive's run state, LB_POOL_ATOM_SIZE bytes):
 * FN runs on a copy of it while no other process can change it, with the
 * time of that moment, and when FN returns 1 the copy is stored. Returns
 * what FN returned, or -1 on error (reported).
 */
typedef int lb_atom_fn(unsigned char *area, size_t len, const struct lb_atom_clock *now,
    void *arg);
int lb_pool_atom(struct lb_pool *pool, lb_atom_fn *fn, void *arg);

/*
 * Read the atom area without changing anything (read access is enough),
 * and the time of the reading: 1 read, 0 nothing stored yet (AREA
 * zeroed), -1 error (reported).
 */
int lb_pool_atom_read(struct lb_pool *pool, unsigned char *area, size_t len,
    struct lb_atom_clock *now);

/*
 * The names of the targets whose atom state the server of a LIST pool
 * keeps, sorted, in a malloc'd array of malloc'd strings. 0, or -1
 * (reported). Only a server's pool opens for LIST.
 */
int lb_pool_atom_names(struct lb_pool *pool, char ***names, size_t *n);

/*
 * End the server session of H (from lb_pool_holders) when it still holds
 * H's slot: the server then frees the lock, and the holder is told as
 * its session ends (opts.on_loss). 1 ended, 0 that session no longer
 * holds the slot, -1 error (reported), or -1 with errno EPERM and nothing
 * reported when the server does not let us. A lock file's holders are
 * processes: -1 with errno ENOTSUP.
 */
int lb_pool_end_session(struct lb_pool *pool, const struct lb_holder *h);

/*
 * Where the kernel keeps SLOT's lock, for finding the local processes
 * that hold it: 0, or -1 with errno ENOTSUP when the lock lives elsewhere
 * (a server) and no local process can be proven to hold it.
 */
struct lb_lock_site {
	dev_t dev;
	ino_t ino;
	off_t byte;	/* -1: holding a descriptor of it is holding the lock (a server's socket) */
};
int lb_pool_lock_site(struct lb_pool *pool, unsigned slot, struct lb_lock_site *site);

/*
 * Processes that hold a lock on a file that was at the pool's path and
 * has been deleted or replaced since: at most MAX, in *PIDS (*N of them).
 * A backend whose locks live elsewhere has none. 0, or -1 with errno.
 */
int lb_pool_moved(struct lb_pool *pool, pid_t *pids, size_t max, size_t *n);

/*
 * Keep the slot across exec: the lock lives as long as what the command
 * inherits. A server lock also arms the loss signal (opts.on_loss) and
 * exports LOCKBOX_FENCE for the command; a maximum hold (opts.max_hold)
 * starts or arms its watcher, for WHO, the holder (NULL: none is kept).
 */
int lb_pool_keep_on_exec(struct lb_pool *pool, const struct lb_ident *who);

void lb_pool_close(struct lb_pool *pool);
void lb_holders_free(struct lb_holders *h);

#endif

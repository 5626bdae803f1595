/* SPDX-License-Identifier: ISC */
/*
 * The lock-file backend of a pool: acquire, wait, release, holders.
 *
 * The kernel's byte locks are the truth; holder records only describe them
 * and are trusted only for slots that are locked. Every acquisition happens
 * under the header's write lock, and a slot's lock is taken before its
 * record is written, so a record marked free always means an unlocked slot
 * (unless a foreign program locks bytes: that case is caught by the failed
 * claim and the full scan).
 *
 * Waiting (-w) is a queue served in arrival order. A waiter takes a ticket
 * t under the queue's join lock (not the header's) and write-locks queue
 * byte t; then it waits for the waiter ahead of it to go (taken a slot,
 * given up, or died: the kernel drops a dead waiter's bytes), with a lock
 * request on that one's byte, so each departure wakes one waiter (see
 * queue_turn). The one at the head watches the holders (see head_wait)
 * and takes the first slot that frees; nobody else looks. A waiter that
 * finds nobody queued is the head at once: it takes its ticket before it
 * lets the header go, without a second look at the slots, and sets its
 * watches after. Attempts that do not wait never queue: they take a free
 * slot or give up.
 *
 * A waiter that is stopped (SIGSTOP, a background job's SIGTTIN or
 * SIGTTOU, a debugger; ^Z is caught, and gives the place up first) still
 * holds its ticket, and would stall everyone behind it.
 * The rule: running waiters are served in arrival order; a stopped one
 * is passed over for as long as it is stopped. A waiter waits for the
 * nearest one ahead of it that is not stopped, and goes to the head when
 * all of those ahead are (see queue_turn). Why not give a stopped waiter
 * its place back: it has no deadline of its own while stopped, and whoever
 * waits behind it has one. A stopped waiter that is continued keeps its
 * ticket, and is ahead again of those that had not passed it yet; one
 * that had passed it, at the head, competes with it for the next slot.
 *
 * The queue's bytes are locked by lockbox only with write locks (a ticket,
 * the join byte): anyone who can read the file can put a read lock on
 * them, and such a lock, or any other that is not a waiter's, stops an
 * attempt at once (as a busy pool does), naming the process from the
 * kernel's lock table. No loop over lock bytes is unbounded, and each ends
 * at the caller's deadline.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atom.h"
#include "backend.h"
#include "clock.h"
#include "err.h"
#include "exec.h"
#include "lockfile.h"
#include "lockscan.h"
#include "parse.h"
#include "wait.h"

/*
 * A header lock is held for microseconds. A waiter for it that sees no
 * other process get through it for this long calls the holder stuck.
 */
#define HEADER_STUCK	(5 * LB_NS_PER_S)
/* how long check/list wait for a busy header before reading anyway */
#define LOOK_WAIT	(250 * LB_NS_PER_MS)
/* how long a claimed slot may stay blocked by a watcher's transient read lock */
#define CLAIM_WAIT	(100 * LB_NS_PER_MS)
/* holder probes (kill 0) per quick acquisition: cheap with many holders */
#define QUICK_PROBES	64
/* records per read in the quick path */
#define QUICK_CHUNK	64
/* wake-ups remembered between a head's attempts */
#define GONE_MAX	64
/* how often the head looks again when some holders cannot be watched */
#define RECHECK_MS	1000
/* a ticket count past this is not a real queue's: it starts again at 0 */
#define QUEUE_TICKETS	((uint64_t)1 << 48)
/* ticket bytes still held past the count that a joiner passes, at most */
#define QUEUE_SKIP	1024
/* how often a waiter looks whether the one it waits for is stopped */
#define QUEUE_RECHECK_MS	1000
/* stopped waiters a waiter passes at one look, at most */
#define QUEUE_PASS	64


/*
 * HEADER_STUCK, or for the tests a duration in LOCKBOX_TEST_HEADER_STUCK
 * (a wait of 5 s, many times, would be most of a test run): it only
 * shortens how long a process waits before it gives up on its own lock
 * file, so it is read as any environment variable is.
 */
static int64_t header_stuck(void)
{
	static int64_t stuck;
	const char *env;

	if (stuck == 0) {
		env = getenv("LOCKBOX_TEST_HEADER_STUCK");
		if (env == NULL || lb_parse_duration(env, LB_NS_PER_S, &stuck) != 0 || stuck <= 0)
			stuck = HEADER_STUCK;
	}
	return stuck;
}
struct filepool {
	struct lb_pool base;
	const char *name;	/* base.name */
	int fd;			/* slot locks (the caller's, for --fd); -1: no file, seen read-only */
	int cfd;		/* header and queue locks: always our own open file */
	int owned;		/* we opened fd */
	int idflags;		/* LB_ID_ flags: how far an empty file may be trusted */
	unsigned char head[LB_HDR_FIELDS];	/* the header fields, as last read */
	unsigned char *buf;	/* header and records as last read; zeros past that */
	size_t loaded;		/* bytes of buf read from the file */
	size_t cap;		/* bytes allocated for buf */
	unsigned nrec;		/* whole records in buf */
	struct lb_slotset held;	/* last full scan: locked slots */
	int behind;		/* it timed out in the queue, behind another waiter */
	pid_t ahead;		/* that waiter (0: not found) */
	int ahead_stopped;
	struct lb_lockinfo *fgn;	/* another program's locks on the file, one a process */
	size_t nfgn;
	int hdr_foreign;	/* the last refusal: fgn's lock on the header */
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

#define BUF_SIZE ((size_t)LB_HDR_SIZE + (size_t)LB_SLOT_LIMIT * LB_REC_SIZE)

static int look_foreign(struct filepool *p);

static const struct lb_pool_ops file_ops;

static struct filepool *fp(struct lb_pool *pool)
{
	return (struct filepool *)pool;
}

static struct lb_pool *pool_new(int fd, int cfd, int owned, int idflags, const char *name)
{
	struct filepool *p = calloc(1, sizeof *p);

	if (p == NULL) {
		lb_warn("%s", name);
		return NULL;
	}
	if (lb_pool_init(&p->base, &file_ops, name) != 0) {
		free(p);
		return NULL;
	}
	p->name = p->base.name;
	p->fd = fd;
	p->cfd = cfd;
	p->owned = owned;
	p->idflags = idflags;
	return &p->base;
}

struct lb_pool *lb_filepool_open(const char *path, int access, const struct lb_pool_opts *opts)
{
	struct lb_pool *p;
	int fd, idflags;

	fd = lb_lockfile_open(path, access == LB_POOL_WRITE, opts->mode, &idflags);
	if (fd == -1)
		return NULL;
	p = pool_new(fd, fd, 1, idflags, path);
	if (p == NULL && fd >= 0)
		close(fd);
	return p;
}

/*
 * The header and queue locks go on an open file of our own, never on the
 * caller's: if this process dies holding one, the kernel drops it with
 * us, instead of leaving it to a shell that lives on.
 */
struct lb_pool *lb_filepool_from_fd(int fd, const char *name, const char *path)
{
#ifndef HAVE_OFD_LOCKS
	/* a per-process lock taken by this helper would die with it */
	(void)fd;
	(void)path;
	lb_warnx("%s: --fd needs open file description locks, which this build lacks", name);
	return NULL;
#else
	struct stat a, b;
	struct lb_pool *p;
	char self[64];
	/* where the caller found the file is unknown: an empty one is trusted less */
	int cfd, idflags = LB_ID_SHARED_DIR;

	if (lb_lockfile_check_fd(fd, name, 1, &a) != 0)
		return NULL;
	if (path != NULL && lb_lockfile_check_path(fd, &a, path, &idflags) != 0)
		return NULL;
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	cfd = open(self, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
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
	p = pool_new(fd, cfd, 0, idflags, name);
	if (p == NULL)
		close(cfd);
	return p;
#endif
}

static void file_close(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);

	if (p->cfd >= 0 && p->cfd != p->fd)
		close(p->cfd);
	if (p->owned && p->fd >= 0)
		close(p->fd);
	free(p->buf);
	lb_slotset_free(&p->held);
	free(p->fgn);
	free(p);
}

static int file_keep_on_exec(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);

	if (fcntl(p->fd, F_SETFD, 0) != 0) {
		lb_warn("%s", p->name);
		return -1;
	}
	return 0;
}

static int pread_all(struct filepool *p, void *buf, size_t n, off_t off)
{
	ssize_t r;

	do
		r = pread(p->cfd, buf, n, off);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		lb_warn("%s", p->name);
		return -1;
	}
	if ((size_t)r < n)
		memset((char *)buf + r, 0, n - (size_t)r);
	return 0;
}

static int pwrite_all(struct filepool *p, const void *buf, size_t n, off_t off)
{
	const char *b = buf;
	ssize_t w = 0;
	size_t done = 0;

	if (!lb_fsize_fits(off + (off_t)n)) {
		lb_warn("%s: cannot write", p->name);
		return -1;
	}
	/* a write cut short is finished, or fails with its own errno */
	while (done < n) {
		w = pwrite(p->cfd, b + done, n - done, off + (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (done != n) {
		if (w == 0)
			errno = ENOSPC;
		lb_warn("%s: cannot write", p->name);
		return -1;
	}
	return 0;
}

static uint64_t header_word(struct filepool *p, size_t off)
{
	return lb_get64(p->head + off);
}

/* Store a header word, in the file and in p->head. */
static int set_header_word(struct filepool *p, size_t off, uint64_t v)
{
	unsigned char word[8];

	lb_put64(word, v);
	if (pwrite_all(p, word, sizeof word, (off_t)off) != 0)
		return -1;
	memcpy(p->head + off, word, sizeof word);
	return 0;
}

/* A header count, read without the lock: 0 for a file too short to have one. */
static uint64_t read_count(struct filepool *p, off_t off)
{
	unsigned char word[8];
	ssize_t r = pread(p->cfd, word, sizeof word, off);

	return r == (ssize_t)sizeof word ? lb_get64(word) : 0;
}

/* Another program's lock L keeps us out: it alone is the refusal's holder (describe). */
static void set_foreign(struct filepool *p, const struct lb_lockinfo *l)
{
	struct lb_lockinfo *one = malloc(sizeof *one);

	p->nfgn = 0;
	if (one == NULL)
		return;	/* the refusal then blames the header, unnamed */
	*one = *l;
	free(p->fgn);
	p->fgn = one;
	p->nfgn = 1;
	p->hdr_foreign = 1;
}

/*
 * Whether the lock that keeps a TYPE lock on [START, START+LEN) from us is
 * another program's (lb_lock_is_lockbox tells from the lock alone); then
 * p->fgn names it. The kernel tells one conflicting lock, the first; with
 * FULL the lock table is read too, for a foreign lock behind lockbox's.
 */
static int blocked_by_foreign(struct filepool *p, short type, off_t start, off_t len,
    int full)
{
	struct lb_lockinfo l;
	int r = lb_lock_conflict(p->cfd, type, start, len, &l);

	if (r == 1 && lb_lock_is_lockbox(&l))
		r = full ? lb_lock_foreign(p->cfd, start, len, &l) : 0;
	else if (r == 1)
		lb_lock_owners(p->cfd, &l, 1);
	if (r != 1)
		return 0;	/* an error too: the wait goes on, as it always did */
	set_foreign(p, &l);
	return 1;
}

/*
 * A lock that lockbox did not take, of TYPE, on byte AT of the queue's
 * bytes (the join byte, a ticket's): the attempt ends at once, as when
 * a slot is held, and the message names the process that holds it, from
 * the kernel's lock table (HINT: the PID the kernel gave for it, if any).
 */
static void queue_foreign(struct filepool *p, off_t at, short type, pid_t hint)
{
	pid_t pid = lb_scan_locker(p->cfd, at, type);
	struct lb_ident who;

	if (pid <= 0)
		pid = hint;
	if (pid > 0) {
		lb_ident_fill(&who, pid, NULL, 0);
		snprintf(p->base.why, sizeof p->base.why,
		    "the wait queue is blocked by a %s lock lockbox did not take (PID %d, %s)",
		    type == F_RDLCK ? "read" : "write", (int)pid, who.command);
	} else {
		snprintf(p->base.why, sizeof p->base.why,
		    "the wait queue is blocked by a %s lock lockbox did not take (PID ?)",
		    type == F_RDLCK ? "read" : "write");
	}
	p->base.why_at_once = 1;
}

/*
 * Whether [START, START+LEN), bytes lockbox only ever write-locks, is
 * read-locked: anyone who can read the file can do that, and nobody ever
 * lets it go for us (reported, see queue_foreign).
 */
static int foreign_reader(struct filepool *p, off_t start, off_t len)
{
	struct flock c;

	if (lb_lock_test(p->cfd, F_WRLCK, start, len, &c) != 0 || c.l_type != F_RDLCK)
		return 0;
	queue_foreign(p, c.l_start > start ? c.l_start : start, F_RDLCK, c.l_pid);
	return 1;
}

/*
 * Write-lock [START, START+LEN) for a short change, such as the header or
 * the queue's join byte. 1 locked, 0 the caller's DEADLINE passed first
 * or, with no DEADLINE, another program holds it, -1 error (reported).
 * Many processes may queue for it; what tells a busy lock from one held
 * by a stopped process is progress: every holder moves the header count
 * at PROGRESS on, so a waiter gives up only when it stood still for
 * HEADER_STUCK. A lock lockbox could not have taken (another program's,
 * such as lockf(3) on the whole file, or any read lock of the whole
 * header: lockscan.c has the rule) is no stuck lockbox process: it is a
 * holder like any other, so a caller that does not wait is refused at
 * once (busy, p->fgn naming it) and one that waits waits for it up to
 * its own deadline. WHAT names the lock in messages.
 * READERS_FOREIGN: lockbox never read-locks these bytes, so a read lock
 * on them is someone else's, and ends the attempt at once (0), even
 * one that waits: the queue cannot work past it.
 */
static int progress_lock(struct filepool *p, short type, off_t start, off_t len,
    off_t progress, int64_t deadline, const char *what, int readers_foreign)
{
	uint64_t gen, now;
	char stuck[32];
	int r = lb_lock_try(p->cfd, type, start, len);

	/* free, as it nearly always is: no count to read */
	if (r != 0) {
		if (r < 0)
			lb_warn("%s: cannot lock %s", p->name, what);
		else
			p->hdr_foreign = 0;
		return r;
	}
	if (readers_foreign && foreign_reader(p, start, len))
		return 0;
	/* one test of the lock in the way: lockbox's hold it for microseconds */
	if (blocked_by_foreign(p, type, start, len, 0) && deadline == 0)
		return 0;
	gen = read_count(p, progress);
	for (;;) {
		int64_t bound = lb_deadline_after(header_stuck());
		int64_t until = deadline != 0 && deadline < bound ? deadline : bound;
		int r = lb_lock_wait(p->cfd, type, start, len, until);

		if (r == 1) {
			p->hdr_foreign = 0;
			return 1;
		}
		if (r < 0) {
			lb_warn("%s: cannot lock %s", p->name, what);
			return -1;
		}
		if (until == deadline)
			return 0;
		if (readers_foreign && foreign_reader(p, start, len))
			return 0;
		now = read_count(p, progress);
		if (now != gen) {
			gen = now;
			continue;
		}
		/* no progress: a stopped lockbox process, or a foreign lock behind it */
		if (!blocked_by_foreign(p, type, start, len, 1))
			break;
		if (deadline == 0)
			return 0;
	}
	lb_warnx("%s: %s locked for %s by a stuck process (stopped?); giving up",
	    p->name, what, lb_format_duration_ms(header_stuck(), stuck));
	return -1;
}

/* A change that does not wait, refused by another program's lock (progress_lock gave 0). */
static void warn_foreign(struct filepool *p)
{
	struct lb_ident who;

	if (p->nfgn == 0 || p->fgn[0].pid == 0) {
		lb_warnx("%s: locked by another program (its process not found)", p->name);
		return;
	}
	lb_ident_fill(&who, p->fgn[0].pid, NULL, 0);
	lb_warnx("%s: locked by another program: PID %d (%s)", p->name, (int)who.pid, who.command);
}

/* Lock the header (every change to the file but a ticket is made under it). */
static int header_lock(struct filepool *p, short type, int64_t deadline)
{
	return progress_lock(p, type, 0, LB_HDR_SIZE, LB_HDR_OFF_GEN, deadline, "header", 0);
}

static void header_unlock(struct filepool *p)
{
	lb_lock_try(p->cfd, F_UNLCK, 0, LB_HDR_SIZE);
}

/*
 * The start of every change: the header write-locked, the file identified
 * (an empty one gets its header), the header fields read and the progress
 * count moved on. 1 with *size set, 0 the deadline passed first, -1 error
 * (reported; the header is not left locked).
 */
static int enter(struct filepool *p, int64_t deadline, off_t *size)
{
	int r = header_lock(p, F_WRLCK, deadline);

	if (r != 1)
		return r;
	/* an empty file gets its header now: all of it, or nothing */
	if (!lb_fsize_fits(LB_HDR_SIZE)) {
		lb_warn("%s: cannot write", p->name);
		header_unlock(p);
		return -1;
	}
	*size = lb_lockfile_identify(p->cfd, p->name, LB_ID_WRITE | p->idflags);
	if (*size < 0 || pread_all(p, p->head, sizeof p->head, 0) != 0 ||
	    set_header_word(p, LB_HDR_OFF_GEN, header_word(p, LB_HDR_OFF_GEN) + 1) != 0) {
		header_unlock(p);
		return -1;
	}
	return 1;
}

/* Whole records in a file of SIZE bytes: a cut last record does not count. */
static unsigned records_in(off_t size)
{
	off_t n = size <= LB_HDR_SIZE ? 0 : (size - LB_HDR_SIZE) / LB_REC_SIZE;

	return n > LB_SLOT_LIMIT ? LB_SLOT_LIMIT : (unsigned)n;
}

/* Room in buf for BYTES, the new part zeroed. */
static int reserve(struct filepool *p, size_t bytes)
{
	unsigned char *grown;

	if (bytes <= p->cap)
		return 0;
	grown = realloc(p->buf, bytes);
	if (grown == NULL) {
		lb_warn("%s", p->name);
		return -1;
	}
	memset(grown + p->cap, 0, bytes - p->cap);
	p->buf = grown;
	p->cap = bytes;
	return 0;
}

/* Read the header and the whole records. */
static int load(struct filepool *p, off_t size)
{
	size_t want = (size_t)lb_slot_offset(records_in(size) + 1);
	ssize_t n;

	if (reserve(p, want) != 0)
		return -1;
	do
		n = pread(p->cfd, p->buf, want, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		lb_warn("%s", p->name);
		return -1;
	}
	if ((size_t)n < p->loaded)
		memset(p->buf + n, 0, p->loaded - (size_t)n);
	p->loaded = (size_t)n;
	p->nrec = records_in((off_t)n);
	return 0;
}

static unsigned char *record(struct filepool *p, unsigned slot)
{
	return p->buf + lb_slot_offset(slot);
}

static uint32_t state(struct filepool *p, unsigned slot)
{
	return slot > p->nrec ? LB_REC_FREE : lb_record_state(record(p, slot));
}

/*
 * A file whose length is not a header plus whole records (a write cut
 * short by a full disk or a file size limit) is cut back to whole records.
 */
static int repair(struct filepool *p, off_t *size)
{
	off_t whole = lb_slot_offset(records_in(*size) + 1);

	if (*size <= LB_HDR_SIZE || *size == whole || (*size - LB_HDR_SIZE) / LB_REC_SIZE > LB_SLOT_LIMIT)
		return 0;
	if (ftruncate(p->cfd, whole) != 0) {
		lb_warn("%s: cannot cut back a partial record", p->name);
		return -1;
	}
	*size = whole;
	return 0;
}

/*
 * Find the slots whose lock byte is held by anyone else: the truth. With
 * the header LOCKED, the records in buf say which slots can be locked.
 */
static int scan(struct filepool *p, int locked)
{
	struct lb_slotset expect = { NULL, 0, 0 };
	unsigned s;
	int r = 0;

	for (s = 1; locked && r == 0 && s <= p->nrec; s++)
		if (state(p, s) != LB_REC_FREE)
			r = lb_slotset_add(&expect, s);
	if (r == 0)
		r = lb_scan_held(p->cfd, locked ? &expect : NULL, &p->held);
	lb_slotset_free(&expect);
	if (r != 0) {
		lb_warn("%s: cannot find the held slots", p->name);
		return -1;
	}
	return 0;
}

/*
 * Lock a slot found free. A waiter at the head of the queue may hold a
 * read lock on it for a few microseconds while it looks, so a refusal is
 * retried briefly before counting the slot as held.
 */
static int claim(struct filepool *p, unsigned slot)
{
	struct lb_lockinfo l;
	int r = lb_lock_try(p->fd, F_WRLCK, lb_slot_offset(slot), 1);

	/* a lock no watcher takes (another program's) is not waited for */
	if (r == 0 && (lb_lock_conflict(p->fd, F_WRLCK, lb_slot_offset(slot), 1, &l) != 1 ||
	    lb_lock_is_lockbox(&l)))
		r = lb_lock_wait(p->fd, F_WRLCK, lb_slot_offset(slot), 1,
		    lb_deadline_after(CLAIM_WAIT));
	if (r < 0 && errno == EDEADLK)
		r = 0;	/* classic locks: another process's cross wait; busy */
	if (r < 0)
		lb_warn("%s: cannot lock slot %u", p->name, slot);
	return r;
}

static int is_gone(const struct gone *g, pid_t pid)
{
	size_t i;

	for (i = 0; g != NULL && i < g->n; i++)
		if (g->pid[i] == pid)
			return 1;
	return 0;
}

/*
 * The cheap path, when the records alone prove a slot is free under MAX:
 * fewer records in use than MAX means fewer holders than MAX. Records are
 * streamed through a small buffer, so a big pool costs no big read. The
 * lowest free slot is preferred, reusing one whose holder is provably gone
 * (its lock confirmed free) over a never-used one, so slot numbers stay
 * small. A holder GONE names is known to have ended (a woken waiter knows
 * whom it saw go); others are probed, a few. Returns that slot, or 0 when
 * only a full scan can tell; *high is the highest slot with a record in use.
 */
static unsigned quick_pick(struct filepool *p, off_t size, unsigned max,
    const struct gone *gone, unsigned *high)
{
	static unsigned char chunk[QUICK_CHUNK * LB_REC_SIZE];
	unsigned s = 1, used = 0, probes = 0, pick = 0, stale = 0;
	unsigned nrec = records_in(size);
	off_t off = LB_HDR_SIZE;
	struct lb_ident who;
	struct flock c;

	*high = 0;
	while (s <= nrec) {
		size_t want = (size_t)(nrec - s + 1) * LB_REC_SIZE, i;
		ssize_t n;

		if (want > sizeof chunk)
			want = sizeof chunk;
		do
			n = pread(p->cfd, chunk, want, off);
		while (n < 0 && errno == EINTR);
		if (n < LB_REC_SIZE)
			return 0;	/* the full path reads again and reports */
		off += n;
		for (i = 0; i + LB_REC_SIZE <= (size_t)n; i += LB_REC_SIZE, s++) {
			uint32_t st = lb_record_state(chunk + i);
			int dead;

			if (st == LB_REC_FREE) {
				if (pick == 0 && s <= max)
					pick = s;
				continue;
			}
			used++;
			*high = s;
			if (st != LB_REC_HELD)
				continue;
			dead = is_gone(gone, lb_record_pid(chunk + i));
			if (!dead && (pick != 0 || s > max || probes++ >= QUICK_PROBES))
				continue;
			lb_record_decode(chunk + i, &who);
			if ((dead || lb_ident_gone(&who)) &&
			    lb_lock_test(p->cfd, F_RDLCK, lb_slot_offset(s), 1, &c) == 1) {
				stale++;
				if (s <= max && (pick == 0 || dead))
					pick = pick != 0 && pick < s ? pick : s;
			}
		}
	}
	if (pick == 0 && nrec < max)
		pick = nrec + 1;
	return used - stale < max ? pick : 0;
}

/*
 * The cheapest path, for a woken head: a slot that a wake-up named is
 * free, and the file has no more records than MAX. Every holder has a
 * record (written under the header lock, which we hold), so every holder
 * is in those slots, one of which is free: fewer than MAX hold. Nothing
 * is read, so the cost does not grow with the pool. That slot, or 0.
 */
static unsigned hint_pick(struct filepool *p, off_t size, unsigned max,
    const struct gone *gone)
{
	unsigned nrec = records_in(size);
	struct flock c;
	size_t i;

	for (i = 0; gone != NULL && nrec <= max && i < gone->n; i++) {
		unsigned s = gone->slot[i];

		if (s >= 1 && s <= nrec &&
		    lb_lock_test(p->cfd, F_RDLCK, lb_slot_offset(s), 1, &c) == 1)
			return s;
	}
	return 0;
}

static unsigned highest_used(struct filepool *p)
{
	unsigned s;

	for (s = p->nrec; s > 0; s--)
		if (state(p, s) != LB_REC_FREE)
			return s;
	return 0;
}

static int write_high(struct filepool *p, unsigned high)
{
	unsigned char word[4];

	lb_put32(word, high);
	return pwrite_all(p, word, sizeof word, LB_HDR_OFF_HIGH);
}

/* Record the holder of SLOT taken in the quick path; HIGH as quick_pick found it. */
static int commit_quick(struct filepool *p, unsigned slot, const struct lb_ident *who,
    unsigned high)
{
	unsigned char rec[LB_REC_SIZE];

	lb_record_encode(rec, slot, who);
	if (pwrite_all(p, rec, sizeof rec, lb_slot_offset(slot)) != 0)
		return -1;
	return slot > high ? write_high(p, slot) : 0;
}

/* Record the holder of SLOT after a full scan: stale records marked free in
 * buf are written back with it, and the free tail of the file goes. */
static int commit_full(struct filepool *p, unsigned slot, const struct lb_ident *who)
{
	unsigned high;

	if (reserve(p, (size_t)lb_slot_offset(slot + 1)) != 0)
		return -1;
	lb_record_encode(record(p, slot), slot, who);
	if (slot > p->nrec)
		p->nrec = slot;
	high = highest_used(p);
	if (pwrite_all(p, p->buf + LB_HDR_SIZE, (size_t)high * LB_REC_SIZE,
	    LB_HDR_SIZE) != 0)
		return -1;
	if ((off_t)p->loaded > lb_slot_offset(high + 1) &&
	    ftruncate(p->cfd, lb_slot_offset(high + 1)) != 0)
		lb_warn("%s: cannot shrink", p->name);
	return lb_get32(p->head + LB_HDR_OFF_HIGH) != high ? write_high(p, high) : 0;
}

/* Forget the records of slots that nobody holds (in buf; written with the next commit). */
static void forget_stale(struct filepool *p)
{
	unsigned s;

	for (s = 1; s <= p->nrec; s++)
		if (state(p, s) != LB_REC_FREE && !lb_slotset_has(&p->held, s))
			memset(record(p, s), 0, LB_REC_SIZE);
}

/* With the header locked: 1 taken, 0 all busy (p->held lists them), -1 error. */
static int take_slot(struct filepool *p, off_t size, unsigned max,
    const struct lb_ident *caller, const struct gone *gone, unsigned *slot)
{
	struct lb_ident who_now = *caller, *who = &who_now;
	unsigned s, high;
	int r;

	/* the age in list counts from here, not from the start of a wait */
	lb_ident_stamp(who);
	if (repair(p, &size) != 0)
		return -1;
	high = lb_get32(p->head + LB_HDR_OFF_HIGH);
	s = hint_pick(p, size, max, gone);
	if (s == 0)
		s = quick_pick(p, size, max, gone, &high);
	if (s != 0) {
		r = claim(p, s);
		if (r < 0)
			return -1;
		if (r == 1) {
			if (commit_quick(p, s, who, high) != 0)
				goto undo;
			*slot = s;
			return 1;
		}
	}
	if (load(p, size) != 0 || scan(p, 1) != 0)
		return -1;
	forget_stale(p);
	for (;;) {
		if (p->held.n >= max)
			return 0;
		for (s = 1; lb_slotset_has(&p->held, s); s++)
			;
		r = claim(p, s);
		if (r < 0)
			return -1;
		if (r == 1)
			break;
		/* locked by something that left no record: count it */
		if (lb_slotset_add(&p->held, s) != 0) {
			lb_warn("%s", p->name);
			return -1;
		}
		lb_slotset_sort(&p->held);
	}
	if (commit_full(p, s, who) != 0)
		goto undo;
	*slot = s;
	return 1;
undo:
	lb_lock_try(p->fd, F_UNLCK, lb_slot_offset(s), 1);
	return -1;
}

/* The slot whose lock byte alone L locks, or 0. */
static unsigned slot_of(const struct lb_lockinfo *l)
{
	if (l->lo < LB_HDR_SIZE || l->hi != l->lo ||
	    l->lo >= (long long)lb_slot_offset(LB_SLOT_LIMIT + 1) ||
	    (l->lo - LB_HDR_SIZE) % LB_REC_SIZE != 0)
		return 0;
	return (unsigned)((l->lo - LB_HDR_SIZE) / LB_REC_SIZE) + 1;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct lb_lockinfo *)a)->pid, y = ((const struct lb_lockinfo *)b)->pid;

	return (x > y) - (x < y);
}

/*
 * The locks on the file that lockbox did not take, in p->fgn, one for
 * each process that holds some (the union of its ranges), and the slots
 * they lock dropped from p->held: a slot that another program locks is
 * that program's lock, not a lockbox holder, however many slot bytes its
 * one range covers (lockf(3) from offset 0 covers all ten thousand).
 * Foreign is what lb_lock_is_lockbox says cannot be lockbox's, and, of
 * the shapes lockbox takes, on a slot's byte:
 *  - a write lock without a holder record, when RECORDS (buf's records
 *    were read with the header locked): lockbox claims a slot and writes
 *    its record under one header write lock, and clears a record only
 *    once the slot is free, so no lockbox holder is ever seen without one;
 *  - a read lock, unless the program that holds it is this one: lockbox
 *    read-locks a slot only in a waiter's watch, for the moment between
 *    the grant and the waiter letting it go, and the waiter runs lockbox.
 * 0, or -1 (reported).
 */
static int find_foreign(struct filepool *p, int records)
{
	struct lb_lockinfo *v, *m;
	size_t n, i, k;
	unsigned s;
	int r = lb_scan_locks(p->cfd, &v, &n);

	p->nfgn = 0;
	p->hdr_foreign = 0;
	if (r < 0) {
		lb_warn("%s: cannot read the kernel's lock table", p->name);
		return -1;
	}
	for (i = k = 0; i < n; i++) {
		s = slot_of(&v[i]);
		/*
		 * A lock in the queue's bytes alone holds neither the header nor
		 * a slot: it stops waiters, who name it when they meet it
		 * (queue_foreign), not the holders
		 */
		if (v[i].lo >= (long long)LB_JOIN_OFF)
			continue;
		if (!lb_lock_is_lockbox(&v[i]) || (s != 0 && !v[i].write) ||
		    (s != 0 && records && state(p, s) != LB_REC_HELD))
			v[k++] = v[i];
	}
	/*
	 * A held slot without a record is another program's too, though this
	 * read of the table may have missed its line (a lock taken or dropped
	 * anywhere on the host between two reads shifts the lines after it):
	 * the kernel names its lock when asked about that byte alone.
	 */
	for (i = 0; records && i < p->held.n; i++) {
		long long at = (long long)lb_slot_offset(p->held.v[i]);
		struct lb_lockinfo l, *grown;
		size_t j;

		if (state(p, p->held.v[i]) == LB_REC_HELD)
			continue;
		for (j = 0; j < k && !(v[j].lo <= at && (v[j].hi < 0 || at <= v[j].hi)); j++)
			;
		if (j < k || lb_lock_conflict(p->cfd, F_WRLCK, (off_t)at, 1, &l) != 1)
			continue;
		grown = realloc(v, (k + 1) * sizeof *v);
		if (grown == NULL)
			continue;	/* then it counts as a holder of its slot, unnamed */
		v = grown;
		v[k++] = l;
	}
	lb_lock_owners(p->cfd, v, k);
	for (i = n = 0; i < k; i++)
		if (!(lb_lock_is_lockbox(&v[i]) && !v[i].write && v[i].pid != 0 &&
		    lb_proc_runs_self(v[i].pid)))
			v[n++] = v[i];
	/* the slots they lock are theirs */
	for (i = k = 0; i < p->held.n; i++) {
		long long at = (long long)lb_slot_offset(p->held.v[i]);
		size_t j;

		for (j = 0; j < n && !(v[j].lo <= at && (v[j].hi < 0 || at <= v[j].hi)); j++)
			;
		if (j == n)
			p->held.v[k++] = p->held.v[i];
	}
	p->held.n = k;
	/* one for each process; those whose process was not found stay apart */
	if (n > 1)
		qsort(v, n, sizeof *v, by_pid);
	for (i = k = 0; i < n; i++) {
		m = k > 0 ? &v[k - 1] : NULL;
		if (m == NULL || v[i].pid == 0 || m->pid != v[i].pid) {
			v[k++] = v[i];
			continue;
		}
		m->write |= v[i].write;
		m->lo = v[i].lo < m->lo ? v[i].lo : m->lo;
		m->hi = m->hi < 0 || v[i].hi < 0 ? -1 : v[i].hi > m->hi ? v[i].hi : m->hi;
	}
	free(p->fgn);
	p->fgn = v;
	p->nfgn = k;
	return 0;
}

/* The holders: of the slots in p->held, from the records in buf; then another program's locks. */
static int describe(struct filepool *p, struct lb_holders *out)
{
	size_t i, held = p->hdr_foreign ? 0 : p->held.n;

	out->n = 0;
	out->v = calloc(held + p->nfgn ? held + p->nfgn : 1, sizeof *out->v);
	if (out->v == NULL) {
		lb_warn("%s", p->name);
		return -1;
	}
	for (i = 0; i < held; i++) {
		struct lb_holder *h = &out->v[out->n++];

		h->slot = p->held.v[i];
		h->known = state(p, h->slot) == LB_REC_HELD;
		if (h->known)
			lb_record_decode(record(p, h->slot), &h->who);
	}
	for (i = 0; i < p->nfgn; i++) {
		struct lb_holder *h = &out->v[out->n++];
		const struct lb_lockinfo *l = &p->fgn[i];

		h->slot = slot_of(l);
		h->foreign = 1;
		h->foreign_write = l->write;
		h->lock_lo = l->lo;
		h->lock_hi = l->hi;
		/* its name as the kernel gives it (/proc/PID/comm), never its arguments */
		if (l->pid > 0)
			lb_ident_fill(&h->who, l->pid, NULL, 0);
	}
	return 0;
}

/* ---- the queue ---- */

/* Whether some waiter holds a ticket (a queue byte is locked). */
static int queue_busy(struct filepool *p)
{
	struct flock c;

	return lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF, 0, &c) == 0;
}

/*
 * Take the next ticket, in a file known to have a header, under the join
 * byte's lock rather than the header's: a crowd of waiters arriving at
 * once then never keeps the header, which the head needs to take a slot,
 * from the head (a process holding a lock can be descheduled for as long
 * as hundreds of others run). The count is a hint, as every header value
 * is: a count of QUEUE_TICKETS or more (written by someone else: a
 * real queue never gets near it) starts the queue again at 0, and a
 * ticket byte that another waiter still holds (a count that went back)
 * is passed, at most QUEUE_SKIP of them. A ticket byte locked otherwise
 * than by a waiter (a read lock, a range) is a lock lockbox did not
 * take, reported at once. 1 joined, 0 DEADLINE passed or a foreign lock
 * (p->base.why says which), -1 error (reported).
 */
static int queue_join(struct filepool *p, int64_t deadline, uint64_t *ticket)
{
	uint64_t t;
	unsigned skips = 0;
	struct flock c;
	off_t at = 0;
	int r = progress_lock(p, F_WRLCK, LB_JOIN_OFF, 1, LB_HDR_OFF_TICKET, deadline, "queue", 1);

	if (r != 1) {
		/* another program's lock over it is named as a holder (describe) */
		if (r == 0 && p->base.why[0] == '\0' && !p->hdr_foreign)
			snprintf(p->base.why, sizeof p->base.why,
			    "the wait queue's join lock stayed locked (a stopped process?)");
		return r;
	}
	t = read_count(p, LB_HDR_OFF_TICKET);
	if (t >= QUEUE_TICKETS)
		t = 0;
	for (;;) {
		at = LB_QUEUE_OFF + (off_t)t;
		r = lb_lock_try(p->cfd, F_WRLCK, at, 1);
		if (r != 0)
			break;
		r = lb_lock_test(p->cfd, F_WRLCK, at, 1, &c);
		if (r < 0)
			break;
		/*
		 * A waiter write-locks its ticket's byte alone; the kernel
		 * shows it merged with its join byte when it holds ticket 0.
		 */
		if (r == 0 && (c.l_type != F_WRLCK || c.l_len <= 0 || c.l_start + c.l_len <= at ||
		    (c.l_len != 1 && !(c.l_start == LB_JOIN_OFF && c.l_len == 2)))) {
			queue_foreign(p, at, c.l_type, c.l_pid);
			lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
			return 0;
		}
		if (r == 0)
			t = (uint64_t)(c.l_start + c.l_len - LB_QUEUE_OFF);
		if (++skips == QUEUE_SKIP || lb_remaining(deadline) == 0) {
			r = skips == QUEUE_SKIP ? -1 : 0;
			if (r < 0)
				lb_warnx("%s: cannot join the queue: %u tickets past its count are taken",
				    p->name, QUEUE_SKIP);
			lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
			return r;
		}
	}
	if (r < 0 || set_header_word(p, LB_HDR_OFF_TICKET, t + 1) != 0) {
		lb_warn("%s: cannot join the queue", p->name);
		if (r == 1)
			lb_lock_try(p->cfd, F_UNLCK, at, 1);
		lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
		return -1;
	}
	lb_lock_try(p->cfd, F_UNLCK, LB_JOIN_OFF, 1);
	*ticket = t;
	return 1;
}

static void queue_leave(struct filepool *p, uint64_t ticket)
{
	lb_lock_try(p->cfd, F_UNLCK, LB_QUEUE_OFF, (off_t)ticket + 1);
}

/*
 * The highest ticket below TICKET whose byte another waiter holds, in
 * *AHEAD: 1, or 0 when there is none (our turn), or -1 (reported). Most
 * often it is the one just before ours; else (a waiter gave up, or died)
 * a search, each test a walk of the file's lock list.
 */
static int queue_ahead(struct filepool *p, uint64_t ticket, uint64_t *ahead)
{
	uint64_t lo, hi = ticket;
	struct flock c;
	int r;

	if (ticket == 0)
		return 0;
	r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)ticket - 1, 1, &c);
	if (r == 0) {
		*ahead = ticket - 1;
		return 1;
	}
	/* (a length of 0 would mean "to the end": ticket 1 has nobody else ahead) */
	if (r == 1 && ticket == 1)
		return 0;
	if (r == 1)
		r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF, (off_t)ticket - 1, &c);
	if (r == 1)
		return 0;
	/* [lo, hi) holds a locked byte, and lo is one */
	lo = r == 0 && c.l_start > LB_QUEUE_OFF ? (uint64_t)(c.l_start - LB_QUEUE_OFF) : 0;
	if (lo >= hi)
		lo = 0;
	while (r >= 0 && hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		r = lb_lock_test(p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)mid, (off_t)(hi - mid), &c);
		if (r == 0)
			lo = mid;
		else
			hi = mid;
	}
	if (r < 0) {
		lb_warn("%s: cannot look at the queue", p->name);
		return -1;
	}
	*ahead = lo;
	return 1;
}

/*
 * The waiters ahead that a waiter has looked up: which process holds
 * which ticket (found once: a look through /proc costs), and its start
 * time, so that a PID used again is not taken for it.
 */
struct queue_seen {
	uint64_t ticket[QUEUE_PASS];
	pid_t pid[QUEUE_PASS];	/* 0: not found (gone, or hidden from us) */
	uint64_t start[QUEUE_PASS];
	size_t n;
};

/*
 * Whether the waiter holding TICKET is stopped (state T or t: SIGSTOP,
 * a background job's SIGTTIN or SIGTTOU, a debugger). A frozen cgroup's
 * tasks do not show as stopped: they count as running. One not seen
 * before is looked up only with LOOKUP; else it counts as running.
 */
static int queue_stopped(struct filepool *p, struct queue_seen *seen, uint64_t ticket,
    int lookup, pid_t *pid)
{
	struct lb_proc_stat st;
	size_t i;

	for (i = 0; i < seen->n && seen->ticket[i] != ticket; i++)
		;
	if (i == seen->n) {
		*pid = 0;
		if (!lookup)
			return 0;
		if (i == QUEUE_PASS)
			i = seen->n = 0;	/* forget the oldest looks: a rare queue */
		seen->ticket[i] = ticket;
		seen->pid[i] = lb_scan_locker(p->cfd, LB_QUEUE_OFF + (off_t)ticket, F_WRLCK);
		seen->start[i] = seen->pid[i] > 0 ? lb_proc_starttime(seen->pid[i]) : 0;
		seen->n++;
	}
	*pid = seen->pid[i];
	if (*pid <= 0 || lb_proc_stat(*pid, &st) != 0 || st.starttime != seen->start[i])
		return 0;
	return st.state == 'T' || st.state == 't';
}

/*
 * The waiter to wait for: the nearest one ahead of TICKET that is not
 * stopped (see the top of the file), passing at most QUEUE_PASS stopped
 * ones; one not seen before is looked up only with LOOKUP. 1 with
 * *AHEAD (and its PID, 0 if not looked up), 0 none (our turn), -1 error
 * (reported).
 */
static int queue_next(struct filepool *p, uint64_t ticket, struct queue_seen *seen,
    int lookup, uint64_t *ahead, pid_t *pid)
{
	uint64_t below = ticket;
	int r = 0, passes;

	for (passes = 0; passes < QUEUE_PASS; passes++) {
		r = queue_ahead(p, below, ahead);
		if (r <= 0 || !queue_stopped(p, seen, *ahead, lookup, pid))
			return r;
		below = *ahead;
	}
	return r;
}

/*
 * Wait for our turn: every earlier ticket gone, or held by a waiter that
 * is stopped. A waiter waits for the one ahead of it only, with a lock
 * request on that ticket's byte, which is granted as that waiter goes.
 * (One request on all the bytes before ours would do it in one wait, but
 * the kernel keeps overlapping requests in a chain, and a request that
 * has to wait again first wakes every one chained behind it: each
 * departure would wake the whole queue, one after the other.) A stopped
 * process sends no event, so a waiter looks whether the one it waits
 * for is stopped every QUEUE_RECHECK_MS, and at once when the one it
 * waited for went and left an earlier one ahead (which that one passed,
 * or would have been behind): a newcomer behind the last of a moving
 * queue never looks through /proc. 1 our turn, 0 deadline (p->ahead:
 * for whom), 2 stopped by ^Z (the ticket is given back first), -1 error
 * (reported).
 */
static int queue_turn(struct filepool *p, uint64_t ticket, int64_t deadline)
{
	struct queue_seen seen = { { 0 }, { 0 }, { 0 }, 0 };
	struct lb_wait w;
	struct lb_wait_event ev;
	uint64_t ahead, waiting = 0;
	int r, asked = 0;
	pid_t pid;

	r = queue_next(p, ticket, &seen, 0, &ahead, &pid);
	if (r <= 0)
		return r == 0 ? 1 : -1;
	if (lb_wait_init(&w) != 0 || lb_wait_stop(&w) != 0) {
		lb_warn("%s: cannot wait", p->name);
		lb_wait_done(&w);
		return -1;
	}
	for (;;) {
		if (asked && ahead != waiting) {
			lb_wait_clear_locks(&w);
			asked = 0;
		}
		if (!asked && lb_wait_lock(&w, p->cfd, F_RDLCK, LB_QUEUE_OFF + (off_t)ahead, 1, 0, 0) != 0) {
			lb_warn("%s: cannot wait", p->name);
			r = -1;
			break;
		}
		asked = 1;
		waiting = ahead;
		r = lb_wait_run(&w, deadline, QUEUE_RECHECK_MS, &ev);
		if (r == 1 && ev.kind == LB_EV_STOP) {
			r = 2;
			break;
		}
		if (r == 1 && ev.kind == LB_EV_LOCK && ev.err != 0) {
			errno = ev.err;
			lb_warn("%s: cannot wait in the queue", p->name);
			r = -1;
			break;
		}
		if (r != 1) {
			if (r < 0)
				lb_warn("%s: cannot wait", p->name);
			else {
				p->behind = 1;
				p->ahead_stopped = queue_stopped(p, &seen, ahead, 1, &p->ahead);
			}
			break;
		}
		if (ev.kind == LB_EV_LOCK) {
			lb_wait_clear_locks(&w);	/* granted and dropped: that one went */
			asked = 0;
		}
		r = queue_next(p, ticket, &seen, 1, &ahead, &pid);
		if (r <= 0) {
			r = r == 0 ? 1 : -1;
			break;
		}
	}
	lb_wait_done(&w);
	return r;
}

/* ---- the head of the queue ---- */

/*
 * Pin the recorded holder of slot S when its end is the end of the slot's
 * lock: a process of this host that holds the lock itself. One that took
 * the slot on an fd and left it to others (the sem pattern: `slots acquire
 * --fd` in a shell, a job in the background that inherited the fd, the
 * shell closing its own copy and living on) does not: its end says nothing,
 * and the slot frees when the last of the others lets go. Whether it holds
 * is asked of the kernel (its fdinfo) once, when it is first pinned; a
 * holder whose descriptors we may not read is trusted as before. BOOT is
 * this host's boot id, NULL when unknown; ST the lock file's, NULL when
 * unknown. 1 pinned, 0 not (the caller asks for the lock instead).
 */
static int pin_holder(struct filepool *p, struct lb_wait *w, unsigned s,
    const uint8_t *boot, const struct stat *st)
{
	struct lb_ident who;

	if (state(p, s) != LB_REC_HELD)
		return 0;
	lb_record_decode(record(p, s), &who);
	if (boot == NULL || memcmp(who.boot_id, boot, 16) != 0)
		return 0;
	if (!lb_wait_has_pid(w, who.pid) && st != NULL &&
	    lb_proc_holds(who.pid, st->st_dev, st->st_ino, lb_slot_offset(s)) == 0)
		return 0;
	/* 0: the recorded process is gone (a zombie too), its children hold on */
	return lb_wait_pid(w, who.pid, who.starttime, (int)s) == 1;
}

/*
 * After a scan found every slot busy: set up the kernel events that tell
 * when one may be free. It is done with the header unlocked, so that the
 * others are not kept from it while a big pool's holders are looked up,
 * and nothing is missed for that: a holder that ended since the scan is
 * found gone, a slot freed since is granted to its lock request at once,
 * and a release since has moved the count on. An explicit release (the
 * shell library's) changes the header's release count and wakes whoever
 * waits on that word (*WORD, cleared once that watch has failed). A lock
 * request on a slot learns of every way it frees (an unlock, the last
 * close of the open file that holds it, its holders' ends), but a waiter
 * has only a few (LB_WAIT_HELPERS, the word's included); a pidfd scales to
 * any pool but tells only of one process's end. So: a slot whose recorded
 * holder is a process of this host that holds the lock itself is pinned
 * (see pin_holder; it ends: its locks are gone before the pidfd says so);
 * every other slot (another host on a shared file system, a process that
 * left the slot to others, a lock without a record) gets a lock request;
 * and the requests left over go to pinned slots too, so that a small pool
 * (a mutex, sem -j2) is watched exactly even when a pinned holder hands
 * its lock on after this look. Returns 1 when everything is watched, 0
 * when something is not: the head then looks again every RECHECK_MS, and
 * at every last close of an open file of the lock file on this host
 * (inotify), which is how a slot left to a job (the sem pattern, in a pool
 * too big for a lock request each) or to a holder's children comes free.
 */
static int watch(struct filepool *p, struct lb_wait *w, int *word)
{
	uint8_t boot[16];
	int all = 1, have_boot = lb_boot_id(boot) == 0;
	size_t i, npinned = 0, pinned[LB_WAIT_HELPERS];
	struct stat st;
	int have_st = fstat(p->cfd, &st) == 0;

	lb_wait_clear_locks(w);
	/* the count as the scan's header lock saw it: a release since has changed it */
	if (*word && lb_wait_word(w, p->cfd, LB_HDR_OFF_RELEASES, p->head + LB_HDR_OFF_RELEASES, 0) != 0)
		*word = 0;
	if (!*word)
		all = 0;
	for (i = 0; i < p->held.n; i++) {
		unsigned s = p->held.v[i];

		if (pin_holder(p, w, s, have_boot ? boot : NULL, have_st ? &st : NULL)) {
			if (npinned < LB_WAIT_HELPERS)
				pinned[npinned++] = i;
			continue;
		}
		if (lb_wait_locks_free(w) == 0 ||
		    lb_wait_lock(w, p->cfd, F_RDLCK, lb_slot_offset(s), 1, 0, (int)s) != 0)
			all = 0;
	}
	/* a failure here loses nothing: the pin stays */
	for (i = 0; i < npinned && lb_wait_locks_free(w) > 0; i++) {
		unsigned s = p->held.v[pinned[i]];

		lb_wait_lock(w, p->cfd, F_RDLCK, lb_slot_offset(s), 1, 0, (int)s);
	}
	/* a hint (a close is told just before its locks go): the look every RECHECK_MS stays */
	if (!all)
		lb_wait_close(w, p->cfd, 0);
	return all;
}

/*
 * At the head of the queue: wait for a slot. Called with the header
 * locked after a scan found every slot busy; returns with it unlocked.
 * JOIN: the queue was empty, and the ticket is taken here, before the
 * header goes, so that whoever comes next finds a queue to go behind.
 * 1 taken, 0 deadline, 2 stopped by ^Z, -1 error (reported).
 */
static int head_wait(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, uint64_t *join)
{
	struct lb_wait w;
	struct lb_wait_event ev;
	struct gone gone = { { 0 }, { 0 }, 0 };
	off_t size;
	int r, all, word = 1;

	if (lb_wait_init(&w) != 0 || lb_wait_stop(&w) != 0) {
		lb_warn("%s: cannot wait", p->name);
		header_unlock(p);
		lb_wait_done(&w);
		return -1;
	}
	for (;;) {
		if (join != NULL) {
			r = queue_join(p, deadline, join);
			if (r != 1) {
				header_unlock(p);
				break;
			}
			join = NULL;
		}
		header_unlock(p);
		all = watch(p, &w, &word);
		gone.n = 0;
		r = lb_wait_run(&w, deadline, all ? 0 : RECHECK_MS, &ev);
		if (r != 1 || ev.kind == LB_EV_STOP) {
			if (r < 0)
				lb_warn("%s: cannot wait", p->name);
			r = r == 1 ? 2 : r;
			break;
		}
		if ((ev.kind == LB_EV_PID || (ev.kind == LB_EV_LOCK && ev.err == 0)) &&
		    gone.n < GONE_MAX) {
			gone.pid[gone.n] = ev.kind == LB_EV_PID ? ev.pid : -1;
			gone.slot[gone.n++] = (unsigned)ev.tag;
		}
		/* the word cannot be watched after all (the file was cut short?): look every RECHECK_MS */
		if (ev.kind == LB_EV_WORD && ev.err != 0)
			word = 0;
		/*
		 * The watch threads go first: their read locks are ours (same
		 * open file, or same process for classic locks), so a watch
		 * lock granted on the slot we are about to claim would merge
		 * with the claim, and its unlock would drop the claim.
		 */
		lb_wait_clear_locks(&w);
		r = enter(p, deadline, &size);
		if (r != 1)
			break;
		r = take_slot(p, size, max, who, &gone, slot);
		if (r != 0) {
			header_unlock(p);
			break;
		}
	}
	lb_wait_done(&w);
	return r;
}

/*
 * A caller's arrival: a slot taken at once or, for one who waits, a place
 * in the queue: at its back (*TICKET) when others wait, at its head
 * (head_wait) when nobody does. 1 taken, 0 busy (or DEADLINE passed),
 * 2 stopped by ^Z, 3 queued behind others, -1 error (reported).
 */
static int arrive(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, uint64_t *ticket)
{
	off_t size;
	int r;

	/*
	 * One who waits goes behind those waiting, and needs no header lock
	 * for that; the ticket count is written into lockbox files only (a
	 * file without a header yet gets one under the header lock first).
	 */
	if (lb_remaining(deadline) != 0 && queue_busy(p)) {
		size = lb_lockfile_identify(p->cfd, p->name, 0);
		if (size < 0)
			return -1;
		if (size >= LB_HDR_SIZE) {
			r = queue_join(p, deadline, ticket);
			return r == 1 ? 3 : r;
		}
	}
	r = enter(p, deadline, &size);
	if (r != 1)
		return r;
	if (lb_remaining(deadline) == 0 || !queue_busy(p)) {
		r = take_slot(p, size, max, who, NULL, slot);
		if (r != 0 || lb_remaining(deadline) == 0) {
			header_unlock(p);
			return r;
		}
		/* every slot busy and nobody queued: the head already, with the header and the scan in hand */
		return head_wait(p, max, deadline, who, slot, ticket);
	}
	header_unlock(p);
	r = queue_join(p, deadline, ticket);
	return r == 1 ? 3 : r;
}

static int look(struct filepool *p);

/*
 * A wait that ran out in the queue: what kept it is the holders when MAX
 * of them hold (the waiters ahead wait for them too), else the waiter
 * ahead (p->ahead).
 */
static void blame_ahead(struct filepool *p, unsigned max)
{
	struct lb_ident who;

	if (look(p) != 0 || p->held.n >= max)
		return;
	if (p->ahead > 0) {
		lb_ident_fill(&who, p->ahead, NULL, 0);
		snprintf(p->base.why, sizeof p->base.why, "waiting behind PID %d (%s%s) in the queue",
		    (int)p->ahead, who.command, p->ahead_stopped ? ", stopped" : "");
	} else {
		snprintf(p->base.why, sizeof p->base.why, "waiting behind another waiter in the queue");
	}
}

static int file_acquire(struct lb_pool *pool, unsigned max, int64_t deadline,
    const struct lb_ident *who, unsigned *slot, struct lb_holders *busy)
{
	struct filepool *p = fp(pool);
	uint64_t ticket;
	off_t size;
	int r;

	p->behind = 0;
	for (;;) {
		ticket = UINT64_MAX;
		r = arrive(p, max, deadline, who, slot, &ticket);
		if (r == 3) {
			r = queue_turn(p, ticket, deadline);
			if (r == 1)
				r = enter(p, deadline, &size);
			if (r == 1) {
				r = take_slot(p, size, max, who, NULL, slot);
				if (r == 0)
					r = head_wait(p, max, deadline, who, slot, NULL);
				else
					header_unlock(p);
			}
		}
		if (ticket != UINT64_MAX)
			queue_leave(p, ticket);
		if (r != 2)
			break;
		/* ^Z: the place in the queue is given up; stop, and queue again after */
		lb_wait_suspend();
	}
	if (r == 0 && busy != NULL) {
		if (p->behind)
			blame_ahead(p, max);
		/*
		 * Slots were found busy: whose locks are another program's is
		 * told with records read now, under the lookers' lock (a slot
		 * taken since the scan has its record by now).
		 */
		if (!p->hdr_foreign && p->loaded != 0 && look_foreign(p) != 0)
			return -1;
		return describe(p, busy) != 0 ? -1 : 0;
	}
	return r;
}

/* The slot the caller's open file holds already, found in its own lock list. */
static unsigned file_own_slot(struct lb_pool *pool)
{
	struct filepool *p = fp(pool);
	struct lb_slotset own = { NULL, 0, 0 };
	unsigned slot = 0;

	if (lb_scan_own(p->fd, &own) == 0 && own.n > 0)
		slot = own.v[0];
	lb_slotset_free(&own);
	return slot;
}

static int file_release(struct lb_pool *pool, pid_t owner)
{
	struct filepool *p = fp(pool);
	struct lb_slotset own = { NULL, 0, 0 };
	unsigned char magic[LB_MAGIC_LEN];
	off_t size;
	size_t i;
	int r, rc = 0;

	/* a file that is not a lock file keeps whatever locks others put on it */
	if (pread_all(p, magic, sizeof magic, 0) != 0)
		return -1;
	if (memcmp(magic, LB_MAGIC, LB_MAGIC_LEN) != 0) {
		lb_warnx("%s: not a lockbox lock file; refusing to touch it", p->name);
		return -1;
	}
	if (lb_scan_own(p->fd, &own) != 0)
		own.n = 0;
	/* the slot goes even when the header cannot be had: a record left
	 * behind is only stale, and stale records are cleaned up later */
	if (lb_lock_try(p->fd, F_UNLCK, LB_HDR_SIZE, lb_slot_offset(LB_SLOT_LIMIT + 1) - LB_HDR_SIZE) < 0) {
		lb_warn("%s: cannot unlock", p->name);
		rc = -1;
	}
	r = enter(p, LB_NO_WAIT, &size);
	if (r != 1) {
		if (r == 0)
			warn_foreign(p);
		lb_slotset_free(&own);
		return -1;
	}
	if (load(p, size) != 0)
		rc = -1;
	for (i = 0; rc == 0 && i < own.n; i++) {
		unsigned s = own.v[i];
		struct lb_ident who;
		struct flock c;

		if (state(p, s) != LB_REC_HELD)
			continue;
		lb_record_decode(record(p, s), &who);
		if (who.pid != owner || lb_lock_test(p->cfd, F_RDLCK, lb_slot_offset(s), 1, &c) != 1)
			continue;
		/* the whole record: a command line says nothing once its run is over */
		memset(record(p, s), 0, LB_REC_SIZE);
		if (pwrite_all(p, record(p, s), LB_REC_SIZE, lb_slot_offset(s)) != 0)
			rc = -1;
	}
	/* tells a waiter at the head that a slot was freed: the count changes, then a wake-up */
	if (set_header_word(p, LB_HDR_OFF_RELEASES, header_word(p, LB_HDR_OFF_RELEASES) + 1) != 0)
		rc = -1;
	header_unlock(p);
	lb_wake_word(p->cfd, LB_HDR_OFF_RELEASES);
	lb_slotset_free(&own);
	return rc;
}

/*
 * A shared header lock keeps records steady while they are read, and
 * tells which slots can be locked at all (scan); a header held by a
 * stopped process is waited on briefly, never for long, and then the
 * slots are found without that help. 1 locked, 0 not.
 */
static int look_lock(struct filepool *p)
{
	struct lb_lockinfo l;
	int r = lb_lock_try(p->cfd, F_RDLCK, 0, LB_HDR_LOOK_LEN);

	if (r != 0)
		return r == 1;
	/* another program's lock is not let go of in microseconds: read without it */
	if (lb_lock_conflict(p->cfd, F_RDLCK, 0, LB_HDR_LOOK_LEN, &l) == 1 &&
	    !lb_lock_is_lockbox(&l))
		return 0;
	return lb_lock_wait(p->cfd, F_RDLCK, 0, LB_HDR_LOOK_LEN,
	    lb_deadline_after(LOOK_WAIT)) == 1;
}

/* Up to this many held slots, look for another program's locks by lock tests first. */
#define FEW_HELD	64

/*
 * Whether another program may lock some of the file, from a few tests of
 * the file's own lock list: for a few holders that costs less than a line
 * each of the host's lock table, which settles it (find_foreign) when the
 * answer is yes. A test for a write lock finds read locks too. While we
 * look, lockbox keeps nothing on the header but other lookers' locks; on
 * the slot bytes, nothing but the held slots' bytes (each with its record
 * when LOCKED: the records were read with the header locked); and nothing
 * between the last slot and the queue. Anything else is a yes.
 */
static int maybe_foreign(struct filepool *p, int locked)
{
	struct lb_lockinfo l;
	off_t lo = LB_HDR_SIZE, hi, end = lb_slot_offset(LB_SLOT_LIMIT + 1);
	size_t i;

	if (p->held.n > FEW_HELD || lb_lock_conflict(p->cfd, F_WRLCK, 0, LB_HDR_SIZE, &l) != 0)
		return 1;
	for (i = 0; i <= p->held.n; i++) {
		hi = i < p->held.n ? lb_slot_offset(p->held.v[i]) : end;
		if (i < p->held.n && locked && state(p, p->held.v[i]) != LB_REC_HELD)
			return 1;
		if (hi > lo && lb_lock_conflict(p->cfd, F_WRLCK, lo, hi - lo, &l) != 0)
			return 1;
		lo = hi + 1;
	}
	return lb_lock_conflict(p->cfd, F_WRLCK, end, LB_JOIN_OFF - end, &l) != 0;
}

/*
 * Find the held slots (p->held), read the records, and find another
 * program's locks (p->fgn). 0, or -1 (reported).
 */
static int look(struct filepool *p)
{
	int locked = look_lock(p), rc = -1;
	off_t size = lb_lockfile_identify(p->cfd, p->name, 0);

	p->nfgn = 0;
	p->hdr_foreign = 0;
	if (size >= 0 && load(p, size) == 0 && scan(p, locked) == 0 &&
	    (!maybe_foreign(p, locked) || find_foreign(p, locked) == 0))
		rc = 0;
	if (locked)
		header_unlock(p);
	return rc;
}

/* After a refusal: another program's locks (p->fgn), with fresh records. 0, or -1 (reported). */
static int look_foreign(struct filepool *p)
{
	int locked = look_lock(p), rc = -1;
	off_t size = lb_lockfile_identify(p->cfd, p->name, 0);

	if (size >= 0 && load(p, size) == 0 && find_foreign(p, locked) == 0)
		rc = 0;
	if (locked)
		header_unlock(p);
	return rc;
}

static int file_holders(struct lb_pool *pool, struct lb_holders *out)
{
	struct filepool *p = fp(pool);

	if (p->fd < 0)
		return 0;	/* no file: nobody holds it */
	return look(p) != 0 ? -1 : describe(p, out);
}

/* As file_holders, without describing anyone. */
static int file_count(struct lb_pool *pool, size_t *n)
{
	struct filepool *p = fp(pool);

	*n = 0;
	if (p->fd < 0)
		return 0;
	if (look(p) != 0)
		return -1;
	*n = p->held.n + p->nfgn;
	return 0;
}

static int file_atom(struct lb_pool *pool, lb_atom_fn *fn, void *arg)
{
	struct filepool *p = fp(pool);
	unsigned char area[LB_ATOM_SIZE];
	struct lb_atom_clock now;
	off_t size;
	int r = enter(p, LB_NO_WAIT, &size);

	if (r != 1) {
		if (r == 0)
			warn_foreign(p);
		return -1;
	}
	if (pread_all(p, area, sizeof area, LB_ATOM_OFF) != 0) {
		header_unlock(p);
		return -1;
	}
	lb_atom_local_clock(&now);
	r = fn(area, sizeof area, &now, arg);
	if (r == 1 && pwrite_all(p, area, sizeof area, LB_ATOM_OFF) != 0)
		r = -1;
	header_unlock(p);
	return r;
}

static int file_atom_read(struct lb_pool *pool, unsigned char *area, size_t len,
    struct lb_atom_clock *now)
{
	struct filepool *p = fp(pool);
	off_t size;
	int locked, rc = -1;

	lb_atom_local_clock(now);
	if (p->fd < 0)
		return 0;	/* no file: no state */
	locked = look_lock(p);
	size = lb_lockfile_identify(p->cfd, p->name, 0);
	if (size >= 0 && pread_all(p, area, len < LB_ATOM_SIZE ? len : LB_ATOM_SIZE, LB_ATOM_OFF) == 0)
		rc = size > 0;
	if (locked)
		header_unlock(p);
	return rc;
}

static int file_lock_site(struct lb_pool *pool, unsigned slot, struct lb_lock_site *site)
{
	struct filepool *p = fp(pool);
	struct stat st;

	if (p->fd < 0 || fstat(p->fd, &st) != 0)
		return -1;
	site->dev = st.st_dev;
	site->ino = st.st_ino;
	site->byte = lb_slot_offset(slot);
	return 0;
}

static const struct lb_pool_ops file_ops = {
	.acquire = file_acquire,
	.own_slot = file_own_slot,
	.release = file_release,
	.holders = file_holders,
	.count = file_count,
	.atom = file_atom,
	.atom_read = file_atom_read,
	.lock_site = file_lock_site,
	.keep_on_exec = file_keep_on_exec,
	.close = file_close,
};

/* SPDX-License-Identifier: ISC */
/*
 * The lock file's bytes for the lock-file backend: reads and writes, the
 * header's words and its lock (held for microseconds, waited on while its
 * holders make progress), the records as read into a buffer, and the
 * choice and claim of a free slot under the header lock.
 *
 * The kernel's byte locks are the truth; holder records only describe them
 * and are trusted only for slots that are locked. Every acquisition happens
 * under the header's write lock, and a slot's lock is taken before its
 * record is written, so a record marked free always means an unlocked slot
 * (unless a foreign program locks bytes: that case is caught by the failed
 * claim and the full scan).
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "await.h"
#include "clock.h"
#include "err.h"
#include "exec.h"
#include "filepool.h"
#include "lockfile.h"
#include "lockformat.h"
#include "lockprim.h"
#include "lockscan.h"
#include "parse.h"
#include "wait.h"

/*
 * A header lock is held for microseconds. A waiter for it that sees no
 * other process get through it for this long takes a slot without it
 * (fp_take_bare): a holder stopped with it (SIGSTOP between two of its
 * calls) keeps nobody out, and nothing is guessed about its state.
 */
#define HEADER_WAIT	(1 * LB_NS_PER_S)
/* how long a claimed slot may stay blocked by a watcher's transient read lock */
#define CLAIM_WAIT	(100 * LB_NS_PER_MS)
/* holder probes (kill 0) per quick acquisition: cheap with many holders */
#define QUICK_PROBES	64
/* records per read in the quick path */
#define QUICK_CHUNK	64
/* tries of a flock(2) lock that a holder's end is about to free (path_lock) */
#define PATH_TRIES	3

/*
 * HEADER_WAIT, or for the tests a duration in LOCKBOX_TEST_HEADER_WAIT (a
 * case that makes a header stay locked need not wait a second for each
 * look, and a loaded machine's case sets a longer one): it changes only
 * how long this process waits for a header that nobody gets through
 * before it takes a slot without it, and is read with secure_getenv
 * (ignored when run setuid).
 */
static int64_t header_wait(void)
{
	static int64_t wait;
	const char *env;

	if (wait == 0) {
		/* test only: see ARCHITECTURE.md */
		env = secure_getenv("LOCKBOX_TEST_HEADER_WAIT");
		if (env == NULL || lb_parse_duration(env, LB_NS_PER_S, &wait) != 0 || wait <= 0)
			wait = HEADER_WAIT;
	}
	return wait;
}

int fp_pread_all(struct filepool *p, void *buf, size_t n, off_t off)
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

int fp_pwrite_all(struct filepool *p, const void *buf, size_t n, off_t off)
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

uint64_t fp_header_word(struct filepool *p, size_t off)
{
	return lb_get64(p->head + off);
}

/* Store a header word, in the file and in p->head. */
int fp_set_header_word(struct filepool *p, size_t off, uint64_t v)
{
	unsigned char word[8];

	lb_put64(word, v);
	if (fp_pwrite_all(p, word, sizeof word, (off_t)off) != 0)
		return -1;
	memcpy(p->head + off, word, sizeof word);
	return 0;
}

/* A header count, read without the lock: 0 for a file too short to have one. */
uint64_t fp_read_count(struct filepool *p, off_t off)
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
 * another program's (lb_lock_is_lockbox tells from the lock alone, as the
 * kernel names the first in the way); then p->fgn names it.
 */
static int blocked_by_foreign(struct filepool *p, short type, off_t start, off_t len)
{
	struct lb_lockinfo l;

	if (lb_lock_conflict(p->cfd, type, start, len, &l) != 1 || lb_lock_is_lockbox(&l))
		return 0;	/* an error too: the wait goes on, as it always did */
	lb_lock_owners(p->cfd, &l, 1);
	set_foreign(p, &l);
	return 1;
}

/*
 * Whether the foreign lock just found (p->fgn) is a mutex's on this file
 * as any file (the fcntl half of fileany.c): taken when the file was no
 * lock file, which it is again (a header written since). A mutex's pool
 * then locks it as that holder does, and waits as it waits (in the
 * kernel's flock(2) queue) rather than for a header a stream of such
 * holders might never leave free.
 */
static int held_as_any(struct filepool *p)
{
	return p->any_ok && p->nfgn == 1 && lb_path_half(&p->fgn[0]);
}

/*
 * Whether [START, START+LEN), bytes lockbox only ever write-locks, is
 * read-locked: anyone who can read the file can do that, and nobody ever
 * lets it go for us (p->reader: the queue reports it, see fp_queue_join).
 */
static int foreign_reader(struct filepool *p, off_t start, off_t len)
{
	struct flock c;

	if (lb_lock_test(p->cfd, F_WRLCK, start, len, &c) != 0 || c.l_type != F_RDLCK)
		return 0;
	p->reader = 1;
	p->reader_at = c.l_start > start ? c.l_start : start;
	p->reader_pid = c.l_pid;
	return 1;
}

/*
 * Write-lock [START, START+LEN) for a short change, such as the header or
 * the queue's join byte. 1 locked; 0 the caller's DEADLINE passed first
 * or, with LB_NO_WAIT, another program holds it; FP_STALLED nobody got
 * through it for HEADER_WAIT; -1 error (reported).
 * Many processes may queue for it, each holding it for microseconds; a
 * waiter tells a busy lock from one that nobody gets through by progress:
 * every holder moves the header count at PROGRESS on. A lock that nobody
 * gets through (its holder stopped while it held it, or descheduled on a
 * crowded host) is not waited for: the caller goes on without it, as its
 * own caller knows how (fp_take_bare; a ticket taken without the join
 * lock), and nothing is guessed about the holder. A lock lockbox could
 * not have taken (another program's, such as lockf(3) on the whole file,
 * or any read lock of the whole header: lockscan.c has the rule) is a
 * holder like any other, so a caller that does not wait is refused at
 * once (busy, p->fgn naming it) and one that waits waits for it up to
 * its own deadline. WHAT names the lock in messages.
 * READERS_FOREIGN: lockbox never read-locks these bytes, so a read lock
 * on them is someone else's, and ends the attempt at once (0), even
 * one that waits: the queue cannot work past it.
 */
int fp_progress_lock(struct filepool *p, short type, off_t start, off_t len,
    off_t progress, int64_t deadline, const char *what, int readers_foreign)
{
	uint64_t gen, now;
	int64_t stall_at;
	int waits = deadline != LB_NO_WAIT, foreign;
	enum lb_outcome got;
	int r = lb_lock_try(p->cfd, type, start, len);

	p->reader = 0;
	/* free, as it nearly always is: no count to read */
	if (r != 0) {
		if (r < 0)
			lb_warn("%s: cannot lock %s", p->name, what);
		else
			p->hdr_foreign = 0;
		return r;
	}
	gen = fp_read_count(p, progress);
	stall_at = lb_deadline_after(header_wait());
	for (;;) {
		if (readers_foreign && foreign_reader(p, start, len))
			return 0;
		/* one test of the lock in the way: lockbox's hold it for microseconds */
		foreign = blocked_by_foreign(p, type, start, len);
		if (foreign && held_as_any(p))
			return LB_ID_NOT_LOCK;
		if (foreign && !waits)
			return 0;
		/* another program's is waited for as any holder is: to the deadline */
		got = lb_await_lock_one(p->cfd, type, start, len, foreign ? deadline :
		    waits && deadline < stall_at ? deadline : stall_at, 1);
		if (got == LB_GRANTED) {
			p->hdr_foreign = 0;
			return 1;
		}
		if (got != LB_DEADLINE) {
			lb_warn("%s: cannot lock %s", p->name, what);
			return -1;
		}
		if (waits && lb_remaining(deadline) == 0)
			return 0;
		now = fp_read_count(p, progress);
		if (now != gen) {
			gen = now;
			stall_at = lb_deadline_after(header_wait());
			continue;
		}
		if (!foreign && lb_remaining(stall_at) == 0)
			return FP_STALLED;
	}
}

/* A change that does not wait, refused by another program's lock (progress_lock gave 0). */
void fp_warn_foreign(struct filepool *p)
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
	return fp_progress_lock(p, type, 0, LB_HDR_SIZE, LB_HDR_OFF_GEN, deadline, "header", 0);
}

void fp_header_unlock(struct filepool *p)
{
	lb_lock_try(p->cfd, F_UNLCK, 0, LB_HDR_SIZE);
}

/*
 * The start of every change: the header write-locked, the file identified
 * (an empty one gets its header), the header fields read and the progress
 * count moved on. FP_TAKEN with *size set, FP_BUSY the deadline passed
 * first, FP_ERROR (reported; the header is not left locked), or for a
 * mutex's pool FP_NOT_LOCK: the file is no lockbox lock file now (cut
 * short or overwritten since it was opened), and is locked as any file
 * instead.
 */
enum fp_step fp_enter(struct filepool *p, int64_t deadline, off_t *size)
{
	int r = header_lock(p, F_WRLCK, deadline);

	if (r != 1)
		return r;
	/* an empty file gets its header now: all of it, or nothing */
	if (!lb_fsize_fits(LB_HDR_SIZE)) {
		lb_warn("%s: cannot write", p->name);
		fp_header_unlock(p);
		return FP_ERROR;
	}
	*size = lb_lockfile_identify(p->cfd, p->name, LB_ID_WRITE | p->idflags |
	    (p->any_ok ? LB_ID_ANY : 0));
	if (*size == LB_ID_NOT_LOCK) {
		fp_header_unlock(p);
		return FP_NOT_LOCK;
	}
	if (*size < 0 || fp_pread_all(p, p->head, sizeof p->head, 0) != 0 ||
	    fp_set_header_word(p, LB_HDR_OFF_GEN, fp_header_word(p, LB_HDR_OFF_GEN) + 1) != 0) {
		fp_header_unlock(p);
		return FP_ERROR;
	}
	return FP_TAKEN;
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
int fp_load(struct filepool *p, off_t size)
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

unsigned char *fp_record(struct filepool *p, unsigned slot)
{
	return p->buf + lb_slot_offset(slot);
}

uint32_t fp_state(struct filepool *p, unsigned slot)
{
	return slot > p->nrec ? LB_REC_FREE : lb_record_state(fp_record(p, slot));
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
 * Find the slots whose lock byte is held by anyone else, by lock tests:
 * the truth (p->held), and the locks that hold them (p->met).
 */
int fp_scan(struct filepool *p)
{
	if (lb_scan_held(p->cfd, &p->held, &p->met) != 0) {
		lb_warn("%s: cannot find the held slots", p->name);
		return -1;
	}
	return 0;
}

/*
 * Lock a slot found free. A waiter at the head of the queue may hold a
 * read lock on it for a few microseconds while it looks, so a refusal is
 * retried until UNTIL before counting the slot as held. UNTIL is one
 * bound for a whole acquisition (see fp_take_slot): anyone who can read
 * the file can read-lock every slot's byte, and a wait for each in turn
 * would hold the header for MAX times CLAIM_WAIT.
 */
static int claim(struct filepool *p, unsigned slot, int64_t until)
{
	struct lb_lockinfo l;
	enum lb_outcome got;
	int r = lb_lock_try(p->fd, F_WRLCK, lb_slot_offset(slot), 1);

	/* a lock no watcher takes (another program's) is not waited for */
	if (r == 0 && lb_remaining(until) != 0 &&
	    (lb_lock_conflict(p->fd, F_WRLCK, lb_slot_offset(slot), 1, &l) != 1 ||
	    lb_lock_is_lockbox(&l))) {
		got = lb_await_lock_one(p->fd, F_WRLCK, lb_slot_offset(slot), 1, until, 1);
		r = got == LB_GRANTED ? 1 : got == LB_DEADLINE ? 0 : -1;
	}
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
		if (fp_state(p, s) != LB_REC_FREE)
			return s;
	return 0;
}

static int write_high(struct filepool *p, unsigned high)
{
	unsigned char word[4];

	lb_put32(word, high);
	return fp_pwrite_all(p, word, sizeof word, LB_HDR_OFF_HIGH);
}

/* Record the holder of SLOT taken in the quick path; HIGH as quick_pick found it. */
static int commit_quick(struct filepool *p, unsigned slot, const struct lb_ident *who,
    unsigned high)
{
	unsigned char rec[LB_REC_SIZE];

	lb_record_encode(rec, slot, who, p->shared);
	if (fp_pwrite_all(p, rec, sizeof rec, lb_slot_offset(slot)) != 0)
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
	lb_record_encode(fp_record(p, slot), slot, who, p->shared);
	if (slot > p->nrec)
		p->nrec = slot;
	high = highest_used(p);
	if (fp_pwrite_all(p, p->buf + LB_HDR_SIZE, (size_t)high * LB_REC_SIZE,
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
		if (fp_state(p, s) != LB_REC_FREE && !lb_slotset_has(&p->held, s))
			memset(fp_record(p, s), 0, LB_REC_SIZE);
}

/*
 * The flock(2) lock beside a slot just claimed (p->path_op; none for a
 * pool of more than one), which programs that lock with flock(2) see,
 * whatever the file holds: 1 held (or none wanted), 0 held by another
 * (p->path_busy), -1 error (reported). A holder that ends loses its slot
 * a moment before its flock(2) lock (the kernel drops an open file's
 * fcntl locks first, then its flock(2) lock, in one call): a refusal is
 * tried again a few times, the processor given up between, before it
 * counts.
 */
static int path_lock(struct filepool *p)
{
	int r, tries = 0;

	p->path_busy = 0;
	if (p->path_op == 0)
		return 1;
	for (;;) {
		do
			r = flock(p->fd, p->path_op | LOCK_NB);
		while (r != 0 && errno == EINTR);
		if (r == 0)
			return 1;
		if (errno != EWOULDBLOCK) {
			lb_warn("%s: cannot lock", p->name);
			return -1;
		}
		if (tries++ == PATH_TRIES)
			break;
		sched_yield();
	}
	p->path_busy = 1;
	return 0;
}

/* Give back the slot claimed (and its flock(2) lock, when HELD). */
static void unclaim(struct filepool *p, unsigned slot, int held)
{
	if (held && p->path_op != 0)
		flock(p->fd, LOCK_UN);
	lb_lock_try(p->fd, F_UNLCK, lb_slot_offset(slot), 1);
}

/*
 * A shared lock (p->shared), with the header locked and the file read:
 * taken in a slot of its own, with a record that says so, when every
 * slot held is another shared holder's (a holder that is not, or a lock
 * without a record, keeps us out). MAX does not count: a shared holder
 * is one of any number. 1 taken, 0 busy (p->held lists the holders),
 * -1 error.
 */
static int take_shared(struct filepool *p, off_t size, const struct lb_ident *who,
    unsigned *slot)
{
	int64_t until = lb_deadline_after(CLAIM_WAIT);
	unsigned s;
	size_t i;
	int r;

	if (fp_load(p, size) != 0 || fp_scan(p) != 0)
		return -1;
	forget_stale(p);
	for (i = 0; i < p->held.n; i++)
		if (fp_state(p, p->held.v[i]) != LB_REC_HELD ||
		    !lb_record_shared(fp_record(p, p->held.v[i])))
			return 0;
	for (s = 1; s <= LB_SLOT_LIMIT && lb_slotset_has(&p->held, s); s++)
		;
	if (s > LB_SLOT_LIMIT)
		return 0;
	r = claim(p, s, until);
	if (r <= 0) {
		/* locked by something that left no record: it holds, and not shared */
		if (r == 0 && lb_slotset_add(&p->held, s) == 0)
			lb_slotset_sort(&p->held);
		return r;
	}
	r = path_lock(p);
	if (r != 1) {
		unclaim(p, s, 0);
		return r;
	}
	if (commit_full(p, s, who) != 0) {
		unclaim(p, s, 1);
		return -1;
	}
	*slot = s;
	return 1;
}

/* With the header locked: FP_TAKEN, FP_BUSY all busy (p->held lists them), FP_ERROR. */
enum fp_step fp_take_slot(struct filepool *p, off_t size, unsigned max,
    const struct lb_ident *caller, const struct gone *gone, unsigned *slot)
{
	struct lb_ident who_now = *caller, *who = &who_now;
	int64_t until = lb_deadline_after(CLAIM_WAIT);
	unsigned s, high;
	int r;

	/* the age in list counts from here, not from the start of a wait */
	lb_ident_stamp(who);
	if (repair(p, &size) != 0)
		return FP_ERROR;
	if (p->shared)
		return take_shared(p, size, who, slot);
	high = lb_get32(p->head + LB_HDR_OFF_HIGH);
	s = hint_pick(p, size, max, gone);
	if (s == 0)
		s = quick_pick(p, size, max, gone, &high);
	if (s != 0) {
		r = claim(p, s, until);
		if (r < 0)
			return FP_ERROR;
		if (r == 1) {
			r = path_lock(p);
			if (r != 1) {
				unclaim(p, s, 0);
				return r;
			}
			if (commit_quick(p, s, who, high) != 0)
				goto undo;
			*slot = s;
			return FP_TAKEN;
		}
	}
	if (fp_load(p, size) != 0 || fp_scan(p) != 0)
		return FP_ERROR;
	forget_stale(p);
	for (;;) {
		if (p->held.n >= max)
			return FP_BUSY;
		for (s = 1; lb_slotset_has(&p->held, s); s++)
			;
		r = claim(p, s, until);
		if (r < 0)
			return FP_ERROR;
		if (r == 1)
			break;
		/* locked by something that left no record: count it */
		if (lb_slotset_add(&p->held, s) != 0) {
			lb_warn("%s", p->name);
			return FP_ERROR;
		}
		lb_slotset_sort(&p->held);
	}
	r = path_lock(p);
	if (r != 1) {
		unclaim(p, s, 0);
		return r;
	}
	if (commit_full(p, s, who) != 0)
		goto undo;
	*slot = s;
	return FP_TAKEN;
undo:
	unclaim(p, s, 1);
	return FP_ERROR;
}

/*
 * A slot taken without the header, when nobody has got through it for
 * HEADER_WAIT (fp_progress_lock's FP_STALLED: its holder stopped with it,
 * or never given a processor): claim first, count after. The lowest slot
 * a scan finds free is claimed, with its flock(2) lock, then the slots
 * are scanned again, and the claim stands when the others held are fewer
 * than MAX (for a shared request, when each of them is a shared holder's,
 * by its record). Every claim is followed by a count that sees it, so of
 * two who claim at once the later count sees both: two may both give
 * back (busy, as if the other held), never both stay when only one fits.
 * The record is written without the header: it is the slot's own, and
 * the slot is held; a reader may see it half written for a moment. A
 * file that has no header yet cannot be taken so (FP_BUSY).
 * FP_TAKEN, FP_BUSY (p->held lists the holders), FP_NOT_LOCK, FP_ERROR.
 */
enum fp_step fp_take_bare(struct filepool *p, unsigned max, const struct lb_ident *caller,
    unsigned *slot)
{
	struct lb_ident who = *caller;
	unsigned char rec[LB_REC_SIZE];
	off_t size = lb_lockfile_identify(p->cfd, p->name, p->any_ok ? LB_ID_ANY : 0);
	unsigned s;
	size_t i, others;
	int r, fits;

	if (size == LB_ID_NOT_LOCK)
		return FP_NOT_LOCK;
	if (size < 0)
		return FP_ERROR;
	if (size < LB_HDR_SIZE)
		return FP_BUSY;
	lb_ident_stamp(&who);
	if (fp_load(p, size) != 0 || fp_scan(p) != 0)
		return FP_ERROR;
	if (!p->shared && p->held.n >= max)
		return FP_BUSY;
	for (s = 1; s <= LB_SLOT_LIMIT && lb_slotset_has(&p->held, s); s++)
		;
	if (s > LB_SLOT_LIMIT)
		return FP_BUSY;
	r = lb_lock_try(p->fd, F_WRLCK, lb_slot_offset(s), 1);
	if (r <= 0) {
		if (r < 0)
			lb_warn("%s: cannot lock slot %u", p->name, s);
		return r < 0 ? FP_ERROR : FP_BUSY;	/* another took it: it holds */
	}
	r = path_lock(p);
	if (r != 1) {
		unclaim(p, s, 0);
		return r;
	}
	if (fp_load(p, size) != 0 || fp_scan(p) != 0) {
		unclaim(p, s, 1);
		return FP_ERROR;
	}
	/* (a caller's fd is another open file than ours: the scan sees its claim) */
	others = p->held.n - (size_t)lb_slotset_has(&p->held, s);
	fits = p->shared || others < max;
	for (i = 0; p->shared && fits && i < p->held.n; i++)
		fits = p->held.v[i] == s || (fp_state(p, p->held.v[i]) == LB_REC_HELD &&
		    lb_record_shared(fp_record(p, p->held.v[i])));
	if (!fits) {
		unclaim(p, s, 1);
		return FP_BUSY;
	}
	lb_record_encode(rec, s, &who, p->shared);
	if (fp_pwrite_all(p, rec, sizeof rec, lb_slot_offset(s)) != 0 ||
	    (s > lb_get32(p->buf + LB_HDR_OFF_HIGH) && write_high(p, s) != 0)) {
		unclaim(p, s, 1);
		return FP_ERROR;
	}
	*slot = s;
	return FP_TAKEN;
}

/*
 * A look at the head of the queue, with nothing held before or after:
 * the header taken, a free slot taken, the header let go; or, when
 * nobody gets through the header, a slot taken without it. FP_TAKEN,
 * FP_HEAD every slot busy (p->held lists them: the head waits for one),
 * FP_BUSY the header stayed locked past DEADLINE, FP_NOT_LOCK, FP_ERROR.
 */
enum fp_step fp_try_take(struct filepool *p, unsigned max, int64_t deadline,
    const struct lb_ident *caller, const struct gone *gone, unsigned *slot)
{
	off_t size;
	enum fp_step r = fp_enter(p, deadline, &size);

	if (r == FP_STALLED) {
		r = fp_take_bare(p, max, caller, slot);
	} else if (r == FP_TAKEN) {
		r = fp_take_slot(p, size, max, caller, gone, slot);
		fp_header_unlock(p);
	} else {
		return r;
	}
	return r == FP_BUSY ? FP_HEAD : r;
}

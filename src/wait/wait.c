/* The one place lockbox blocks: lock requests, process exits and announced changes, with a deadline. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "futex.h"
#include "host.h"
#include "lockprim.h"
#include "parse.h"
#include "proc.h"
#include "procfs.h"
#include "wait.h"

/* stack of a helper thread: it only sits in one fcntl or futex call */
#define HELPER_STACK	(64 * 1024)
/* fds kept free for everything but pidfds */
#define FD_SPARE	64
/*
 * How long a cancel waits for a helper to end before it signals it again:
 * a thread that was still starting when it was first told misses that
 * signal and enters its call; the next one ends it.
 */
#define CANCEL_RETRY_NS	100000

_Static_assert(LB_WAIT_HELPERS <= 4, "a helper's place fits in two bits of its bell byte");

/* epoll data: the kind of source, and a value (a pid, or nothing) */
enum { SRC_BELL = 1, SRC_PIN, SRC_SIG, SRC_CLOSE };
#define SRC(kind, value)	((uint64_t)(kind) << 32 | (uint32_t)(value))

/*
 * A helper thread: a blocking lock request, or a wait on a word of a file.
 *
 * Its life cycle. helper_start fills in the request, the bell's write end
 * and the byte it rings (its id), then starts the thread; from then on the
 * thread reads that part of the struct only, and writes only the atomics.
 * The thread makes its one call (fcntl or futex, again on a spurious
 * wake-up), then rings at most once: it writes its byte to the bell
 * only after it has moved RING from RUN to RINGING, and it moves it to
 * RUNG once the byte is written. A canceller moves RING from RUN to
 * STOPPED, or, when the thread got there first, waits for RUNG (a write
 * to a pipe that never blocks: microseconds). So when a cancel returns,
 * the thread will never write to the bell: the set may close the pipe,
 * and the next set that gets the same fd numbers (and gives its first
 * helper the same id) never reads a byte rung for this one. A byte rung
 * before the cancel is in this set's pipe, and is dropped there (collect
 * reads only bytes whose id is a live helper's, wait_clear drains).
 *
 * After a cancel returns: a lock helper has been joined, and is freed;
 * its fd, range and struct are the caller's again (a kept lock it got is
 * let go). A word helper is not waited for (an exec ends it anyway): it
 * may still be in its futex call or on its way out, touching only its own
 * struct and the page it maps, never the bell or any fd, and whichever
 * of it and the canceller is done last (LEFT) frees both. Inside a host
 * (host.h) that lives on, it is joined as a lock helper is: no thread
 * outlives the call that started it.
 */
enum { HELP_LOCK, HELP_WORD };
/* RING: who may still touch the bell */
enum { RING_RUN, RING_STOPPED, RING_RINGING, RING_RUNG };
struct lb_wait_helper {
	pthread_t tid;
	int kind, fd, bell, keep, tag;
	unsigned char id;	/* its place in helpers[], and which start of that place */
	short type;
	int flock_op;		/* LOCK: LOCK_SH or LOCK_EX for a flock(2) lock, else 0 */
	off_t start, len;	/* LOCK: the range; WORD: START is the word's offset */
	void *map;		/* WORD: the file's first START + 4 bytes, mapped shared */
	uint32_t expect;	/* WORD: the word as the caller last saw it */
	atomic_int ring;	/* RING_: RUN until stopped or ringing; the
				 * word waits on it (futex), a cancel moves it */
	const char *test_delay;	/* LOCKBOX_TEST_RING_DELAY, or NULL */
	atomic_int granted;	/* LOCK: a kept lock is held */
	atomic_int err;		/* why the request failed */
	atomic_int left;	/* WORD: set by whichever of the thread and a
				 * canceller that does not wait is done with it
				 * first; the second frees it */
	int reported;		/* its event went to the caller */
};

struct lb_wait_pin {
	pid_t pid;
	int fd, tag;
};

/*
 * A helper gives up its request when this signal interrupts it: its
 * handler does nothing, and is installed without SA_RESTART so that
 * F_SETLKW and FUTEX_WAIT return EINTR. Only helpers take it (pthread_kill).
 */
static int wake_sig(void)
{
	return SIGRTMIN + 2;
}

static void on_wake(int sig)
{
	(void)sig;
}

/*
 * The wake signal's action is set once, by the first helper. Inside a
 * host, whose signals these are, the action it had is put back when the
 * last wait set is done (its helpers joined): a shell that unloads the
 * builtin must not keep a handler in code that is gone.
 */
static int wake_installed;
static struct sigaction wake_saved;
static unsigned live_sets;

static void wake_restore(void)
{
	if (wake_installed && lb_hosted()) {
		sigaction(wake_sig(), &wake_saved, NULL);
		wake_installed = 0;
	}
}

/* Let go of what helper H was granted. */
static void help_unlock(struct lb_wait_helper *h)
{
	if (h->flock_op != 0)
		flock(h->fd, LOCK_UN);
	else
		lb_lock_try(h->fd, F_UNLCK, h->start, h->len);
}

/* 0: the request ended (granted, or the word changed); -1 with errno. */
static int help_lock(struct lb_wait_helper *h)
{
	int r;

	for (;;) {
		/* cancelled before it began: no request (its cancel's signal may have come already) */
		if (atomic_load(&h->ring) != RING_RUN) {
			errno = EINTR;
			return -1;
		}
		r = h->flock_op != 0 ? flock(h->fd, h->flock_op) :
		    lb_lock_block(h->fd, h->type, h->start, h->len);
		if (r == 0 || errno != EINTR || atomic_load(&h->ring) != RING_RUN)
			break;
	}
	if (r == 0) {
		if (h->keep)
			atomic_store(&h->granted, 1);
		else
			help_unlock(h);
	}
	return r;
}

/*
 * A shared futex on a file's page is keyed by the file and the offset, so
 * every process that maps that page meets on it: the kernel compares the
 * word with EXPECT and sleeps only while they are equal, so a change made
 * before the wait began is seen at once. A wake-up with the word unchanged
 * (someone else's wake on the same word) only sleeps again. The wait is on
 * the helper's own RING word too (futex_waitv), so that a cancel is never
 * lost, even one made before the wait began; without futex_waitv (before
 * Linux 5.16, or forbidden) the wait is on the file's word alone, ended by
 * the wake signal.
 */
static long wait_word(struct lb_wait_helper *h, uint32_t *word)
{
#ifdef SYS_futex_waitv
	static int plain;
	struct futex_waitv v[2];
	long r;

	if (lb_futex_kind() == LB_FUTEX_PLAIN)
		plain = 1;
	if (!plain) {
		memset(v, 0, sizeof v);
		v[0].uaddr = (uintptr_t)word;
		v[0].val = h->expect;
		v[0].flags = FUTEX_32;
		v[1].uaddr = (uintptr_t)&h->ring;
		v[1].val = RING_RUN;
		v[1].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
		r = syscall(SYS_futex_waitv, v, 2, 0, NULL, 0);
		/* ENOSYS: an older kernel; EPERM: a seccomp filter that forbids it */
		if (r >= 0 || (errno != ENOSYS && errno != EPERM))
			return r < 0 ? -1 : 0;
		plain = 1;
	}
#endif
	return lb_futex(word, FUTEX_WAIT, h->expect);
}

static int help_word(struct lb_wait_helper *h)
{
	uint32_t *word = (uint32_t *)((char *)h->map + h->start);

	for (;;) {
		if (wait_word(h, word) == 0)
			continue;
		if (atomic_load(&h->ring) != RING_RUN) {
			errno = EINTR;
			return -1;
		}
		if (errno == EAGAIN)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

static void helper_free(struct lb_wait_helper *h)
{
	if (h->map != NULL)
		munmap(h->map, (size_t)h->start + 4);
	free(h);
}

/*
 * LOCKBOX_TEST_RING_DELAY=DIR, for the test suite only (tests/mutex.bats):
 * a word helper that is about to ring makes the directory DIR, sleeps
 * 2 s, rings, sleeps 0.5 s more and removes DIR. It widens the window
 * between the thread's decision to ring and its write, where a cancel
 * used to return and let the pipe be closed and its fd numbers reused,
 * and tells the test (without an fd) when the window opens and when the
 * byte has been written and looked at. Lock helpers are joined by their
 * cancel, so only word helpers take it.
 */
static void test_delay(const struct lb_wait_helper *h, int before)
{
	struct timespec ts = { before ? 2 : 0, before ? 0 : 500000000 };

	if (h->test_delay == NULL)
		return;
	if (before)
		mkdir(h->test_delay, 0700);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	if (!before)
		rmdir(h->test_delay);
}

static void *helper_thread(void *arg)
{
	struct lb_wait_helper *h = arg;
	unsigned char byte = h->id;
	int run = RING_RUN;

	if ((h->kind == HELP_LOCK ? help_lock(h) : help_word(h)) != 0)
		atomic_store(&h->err, errno);
	/* rung on failure too: the caller looks again rather than sleeps on */
	if (atomic_compare_exchange_strong(&h->ring, &run, RING_RINGING)) {
		test_delay(h, 1);
		while (write(h->bell, &byte, 1) < 0 && errno == EINTR)
			;
		atomic_store(&h->ring, RING_RUNG);
		lb_futex(&h->ring, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX);
		test_delay(h, 0);
	}
	/* a canceller that did not wait has let go of it: it is ours to free */
	if (h->kind == HELP_WORD && atomic_exchange(&h->left, 1) == 1)
		helper_free(h);
	return NULL;
}

int lb_wait_init(struct lb_wait *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SRC(SRC_BELL, 0) };

	memset(w, 0, sizeof *w);
	w->sig = w->closes = -1;
	w->bell[0] = w->bell[1] = -1;
	w->counted = 1;
	live_sets++;
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	if (w->ep < 0)
		return -1;
	if (pipe2(w->bell, O_CLOEXEC | O_NONBLOCK) != 0 ||
	    epoll_ctl(w->ep, EPOLL_CTL_ADD, w->bell[0], &ev) != 0) {
		lb_wait_done(w);
		return -1;
	}
	return 0;
}

size_t lb_wait_locks_free(const struct lb_wait *w)
{
	size_t i, n = 0;

	for (i = 0; i < LB_WAIT_HELPERS; i++)
		n += w->helpers[i] == NULL;
	return n;
}

/* Start helper H in a free place of W. 0, or -1 with errno (H is freed). */
static int helper_start(struct lb_wait *w, struct lb_wait_helper *h)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int i, e;

	for (i = 0; i < LB_WAIT_HELPERS && w->helpers[i] != NULL; i++)
		;
	if (i == LB_WAIT_HELPERS) {
		helper_free(h);
		errno = EMFILE;
		return -1;
	}
	if (!wake_installed) {
		struct sigaction sa;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_wake;
		sigemptyset(&sa.sa_mask);
		if (sigaction(wake_sig(), &sa, &wake_saved) != 0) {
			helper_free(h);
			return -1;
		}
		wake_installed = 1;
	}
	h->bell = w->bell[1];
	if (h->kind == HELP_WORD)
		/* test only: see ARCHITECTURE.md */
		h->test_delay = secure_getenv("LOCKBOX_TEST_RING_DELAY");
	/*
	 * The byte it rings names the start too: a byte left in the pipe by
	 * a helper cancelled after it rang is not taken for its successor's.
	 */
	h->id = (unsigned char)(i | (++w->starts & 0x3f) << 2);
	/*
	 * The thread takes no signal but the wake signal, whatever mask we
	 * were started with: signals meant for lockbox reach the main thread.
	 */
	sigfillset(&all);
	sigdelset(&all, wake_sig());
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, HELPER_STACK);
	e = pthread_create(&h->tid, &attr, helper_thread, h);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		helper_free(h);
		errno = e;
		return -1;
	}
	w->helpers[i] = h;
	return 0;
}

int lb_wait_on_lock(struct lb_wait *w, int fd, short type, off_t start, off_t len,
    int keep, int tag)
{
	struct lb_wait_helper *h = calloc(1, sizeof *h);

	if (h == NULL)
		return -1;
	h->kind = HELP_LOCK;
	h->fd = fd;
	h->type = type;
	h->start = start;
	h->len = len;
	h->keep = keep;
	h->tag = tag;
	return helper_start(w, h);
}

int lb_wait_on_flock(struct lb_wait *w, int fd, int op, int keep, int tag)
{
	struct lb_wait_helper *h = calloc(1, sizeof *h);

	if (h == NULL)
		return -1;
	h->kind = HELP_LOCK;
	h->fd = fd;
	h->flock_op = op;
	h->keep = keep;
	h->tag = tag;
	return helper_start(w, h);
}

/*
 * Tell helper H to give up, and return once it can no longer ring: it
 * had not decided to (it never will now), or it has rung. 1 when it has
 * not rung (nor will), 0 when it has.
 */
static int helper_stop(struct lb_wait_helper *h)
{
	int ring = RING_RUN;

	if (atomic_compare_exchange_strong(&h->ring, &ring, RING_STOPPED)) {
		/* a word helper may wait on RING: wake it */
		lb_futex(&h->ring, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1);
		return 1;
	}
	while (atomic_load(&h->ring) == RING_RINGING)
		lb_futex(&h->ring, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, RING_RINGING);
	return 0;
}

/* Stop a helper and wait for it; a kept lock it got and never reported is let go. */
static void helper_cancel(struct lb_wait_helper *h)
{
	helper_stop(h);
	for (;;) {
		struct timespec ts;

		/* the signal may land just before the thread enters its call: again */
		pthread_kill(h->tid, wake_sig());
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += CANCEL_RETRY_NS;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(h->tid, NULL, &ts) == 0)
			break;
	}
	if (atomic_load(&h->granted) && !h->reported)
		help_unlock(h);
	helper_free(h);
}

/*
 * Stop a word's helper without waiting for its end: it holds no lock, and
 * a head about to run its command must not spend a thread's exit on it
 * (an exec ends the thread anyway). Only a ring under way is waited for,
 * so that no byte reaches the bell after we return (see the life cycle
 * above). Whichever of us is done last frees it.
 */
static void word_cancel(struct lb_wait_helper *h)
{
	if (lb_hosted()) {
		helper_cancel(h);
		return;
	}
	if (helper_stop(h))
		pthread_kill(h->tid, wake_sig());
	pthread_detach(h->tid);
	if (atomic_exchange(&h->left, 1) == 1)
		helper_free(h);
}

/* The helper watching a word, or NULL. */
static struct lb_wait_helper **word_helper(struct lb_wait *w)
{
	size_t i;

	for (i = 0; i < LB_WAIT_HELPERS; i++)
		if (w->helpers[i] != NULL && w->helpers[i]->kind == HELP_WORD)
			return &w->helpers[i];
	return NULL;
}

int lb_wait_on_word(struct lb_wait *w, int fd, off_t off, const unsigned char expect[4], int tag)
{
	struct lb_wait_helper **had = word_helper(w), *h;
	uint32_t want;

	if (lb_futex_kind() == LB_FUTEX_OFF) {
		errno = ENOSYS;
		return -1;
	}
	memcpy(&want, expect, sizeof want);
	if (had != NULL) {
		if (!(*had)->reported && (*had)->expect == want && (*had)->start == off) {
			(*had)->tag = tag;
			return 0;
		}
		word_cancel(*had);
		*had = NULL;
	}
	h = calloc(1, sizeof *h);
	if (h == NULL)
		return -1;
	h->kind = HELP_WORD;
	h->start = off;
	h->expect = want;
	h->tag = tag;
	h->map = lb_futex_map(fd, off);
	if (h->map == NULL) {
		free(h);
		return -1;
	}
	return helper_start(w, h);
}

static struct lb_wait_pin *pin_find(const struct lb_wait *w, pid_t pid, size_t *at)
{
	size_t lo = 0, hi = w->npins;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->pins[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < w->npins && w->pins[lo].pid == pid ? &w->pins[lo] : NULL;
}

/* Room for one more fd: raise the soft limit toward the hard one if need be. */
static int fd_room(struct lb_wait *w)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	if (rl.rlim_cur == RLIM_INFINITY || w->npins + 3 * FD_SPARE < rl.rlim_cur)
		return 0;
	if (rl.rlim_cur >= rl.rlim_max) {
		errno = EMFILE;
		return -1;
	}
	if (!w->fd_limit_raised) {
		/* the command must see the limit lockbox was given: put back in lb_wait_done */
		w->fd_limit_raised = 1;
		w->saved_fd_limit = rl.rlim_cur;
	}
	rl.rlim_cur = rl.rlim_cur * 2 < rl.rlim_max ? rl.rlim_cur * 2 : rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

int lb_wait_on_pid(struct lb_wait *w, pid_t pid, uint64_t starttime, int tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SRC(SRC_PIN, pid) };
	struct lb_wait_pin *grown;
	size_t at;
	int fd;

	if (pid <= 0)
		return 0;
	if (pin_find(w, pid, &at) != NULL)
		return 1;
	if (fd_room(w) != 0)
		return -1;
	fd = lb_pidfd_open(pid);
	if (fd < 0)
		return errno == ESRCH ? 0 : -1;
	/*
	 * Checked after pinning: if the PID was reused before pidfd_open, the
	 * start time differs, and the process we would watch is a stranger.
	 * One that has ended already (a zombie not yet reaped) is gone too:
	 * its pidfd is readable at once, and would wake the caller for ever.
	 */
	if ((starttime != 0 && lb_proc_starttime(pid) != starttime) ||
	    poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 0) != 0) {
		close(fd);
		return 0;
	}
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 ||
	    epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
		close(fd);
		return -1;
	}
	if (w->npins == w->cappins) {
		size_t cap = w->cappins ? 2 * w->cappins : 16;

		grown = realloc(w->pins, cap * sizeof *grown);
		if (grown == NULL) {
			close(fd);
			return -1;
		}
		w->pins = grown;
		w->cappins = cap;
	}
	memmove(&w->pins[at + 1], &w->pins[at], (w->npins - at) * sizeof *w->pins);
	w->pins[at] = (struct lb_wait_pin){ pid, fd, tag };
	w->npins++;
	return 1;
}

int lb_wait_on_close(struct lb_wait *w, int fd, int tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SRC(SRC_CLOSE, 0) };
	char path[64];
	int e;

	w->close_tag = tag;
	if (w->closes >= 0)
		return 0;
	w->closes = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->closes < 0)
		return -1;
	/* the file itself, wherever it is (or was) linked: the fd's magic link */
	if (inotify_add_watch(w->closes, lb_procfs_fd_name(fd, path, sizeof path),
	    IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0 ||
	    epoll_ctl(w->ep, EPOLL_CTL_ADD, w->closes, &ev) != 0) {
		e = errno;
		close(w->closes);
		w->closes = -1;
		errno = e;
		return -1;
	}
	return 0;
}

int lb_wait_stop(struct lb_wait *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SRC(SRC_SIG, 0) };
	struct sigaction cur;
	sigset_t tstp;

	if (w->sig >= 0)
		return 0;
	/* ignored on entry (cron, nohup): stays ignored, and nothing to do */
	if (sigaction(SIGTSTP, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
		return 0;
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	/* blocked, so that it waits in the signalfd instead of stopping us */
	if (pthread_sigmask(SIG_BLOCK, &tstp, &w->stop_mask) != 0)
		return -1;
	w->sig = signalfd(-1, &tstp, SFD_CLOEXEC | SFD_NONBLOCK);
	if (w->sig < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->sig, &ev) != 0) {
		if (w->sig >= 0)
			close(w->sig);
		w->sig = -1;
		pthread_sigmask(SIG_SETMASK, &w->stop_mask, NULL);
		return -1;
	}
	return 0;
}

void lb_wait_suspend(void)
{
	sigset_t tstp, old;

	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	pthread_sigmask(SIG_UNBLOCK, &tstp, &old);
	raise(SIGTSTP);		/* default action: stop, until SIGCONT */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int push(struct lb_wait *w, const struct lb_wait_event *ev)
{
	if (w->nready == w->capready) {
		size_t cap = w->capready ? 2 * w->capready : 8;
		struct lb_wait_event *grown = realloc(w->ready, cap * sizeof *grown);

		if (grown == NULL)
			return -1;
		w->ready = grown;
		w->capready = cap;
	}
	w->ready[w->nready++] = *ev;
	return 0;
}

static void pin_drop(struct lb_wait *w, size_t at)
{
	epoll_ctl(w->ep, EPOLL_CTL_DEL, w->pins[at].fd, NULL);
	close(w->pins[at].fd);
	memmove(&w->pins[at], &w->pins[at + 1], (w->npins - at - 1) * sizeof *w->pins);
	w->npins--;
}

/* Turn what epoll reported into events. 0, or -1 with errno. */
static int collect(struct lb_wait *w, const struct epoll_event *e)
{
	struct lb_wait_event ev;
	unsigned kind = (unsigned)(e->data.u64 >> 32);
	uint32_t value = (uint32_t)e->data.u64;
	unsigned char bytes[16];
	char buf[4096];
	ssize_t n, i;
	size_t at;

	memset(&ev, 0, sizeof ev);
	switch (kind) {
	case SRC_BELL:
		while ((n = read(w->bell[0], bytes, sizeof bytes)) > 0)
			for (i = 0; i < n; i++) {
				struct lb_wait_helper *h = (bytes[i] & 3) < LB_WAIT_HELPERS ?
				    w->helpers[bytes[i] & 3] : NULL;

				if (h == NULL || h->id != bytes[i] || h->reported)
					continue;
				h->reported = 1;
				ev.kind = h->kind == HELP_LOCK ? LB_EV_LOCK : LB_EV_WORD;
				ev.tag = h->tag;
				ev.err = atomic_load(&h->err);
				ev.kept = h->keep;
				if (push(w, &ev) != 0)
					return -1;
			}
		return 0;
	case SRC_PIN:
		if (pin_find(w, (pid_t)value, &at) == NULL)
			return 0;
		ev.kind = LB_EV_PID;
		ev.tag = w->pins[at].tag;
		ev.pid = (pid_t)value;
		pin_drop(w, at);
		return push(w, &ev);
	case SRC_SIG:
		while (read(w->sig, buf, sizeof buf) > 0)
			;
		ev.kind = LB_EV_STOP;
		return push(w, &ev);
	case SRC_CLOSE:
		/* whose close does not matter: one event for all that are queued */
		while (read(w->closes, buf, sizeof buf) > 0)
			;
		ev.kind = LB_EV_CLOSE;
		ev.tag = w->close_tag;
		return push(w, &ev);
	}
	return 0;
}

/*
 * Inside a host, its signals are blocked but while a wait sleeps, with
 * the host's mask (and SIGTSTP still blocked when the signalfd takes it):
 * a signal that came before the sleep is taken as it starts, and each
 * one is followed by a look whether the host must act on it now.
 */
static int sleep_wait(struct lb_wait *w, struct epoll_event *got, int n, int ms)
{
	const sigset_t *host = lb_host_sleep_mask();
	sigset_t mask;

	if (host == NULL)
		return epoll_wait(w->ep, got, n, ms);
	mask = *host;
	if (w->sig >= 0)
		sigaddset(&mask, SIGTSTP);
	return epoll_pwait(w->ep, got, n, ms, &mask);
}

int lb_wait_run(struct lb_wait *w, int64_t deadline, int max_ms, struct lb_wait_event *ev)
{
	struct epoll_event got[16];
	int i, n, ms, capped;
	int64_t left;

	while (w->nready == 0) {
		if (lb_host_stop()) {
			errno = EINTR;
			return -1;
		}
		left = lb_remaining(deadline);
		if (left == 0)
			return 0;
		/* rounded up: waking before the deadline would only loop */
		ms = left / LB_NS_PER_MS >= INT_MAX ? INT_MAX :
		    (int)((left + LB_NS_PER_MS - 1) / LB_NS_PER_MS);
		capped = max_ms > 0 && max_ms < ms;
		n = sleep_wait(w, got, 16, capped ? max_ms : ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0 && capped) {
			ev->kind = LB_EV_RECHECK;
			ev->tag = 0;
			ev->err = 0;
			ev->pid = 0;
			return 1;
		}
		for (i = 0; i < n; i++)
			if (collect(w, &got[i]) != 0)
				return -1;
	}
	*ev = w->ready[0];
	memmove(&w->ready[0], &w->ready[1], (w->nready - 1) * sizeof *w->ready);
	w->nready--;
	return 1;
}

void lb_wait_clear_locks(struct lb_wait *w)
{
	size_t i, n;

	for (i = 0; i < LB_WAIT_HELPERS; i++)
		if (w->helpers[i] != NULL && w->helpers[i]->kind == HELP_LOCK) {
			helper_cancel(w->helpers[i]);
			w->helpers[i] = NULL;
		}
	/* their events, if any, are gone with them */
	for (i = n = 0; i < w->nready; i++)
		if (w->ready[i].kind != LB_EV_LOCK)
			w->ready[n++] = w->ready[i];
	w->nready = n;
}

/*
 * Withdraw every lock request (a lock granted to one that was not yet
 * reported is released), the word's watch and the closes' watch, and
 * forget the pids.
 */
static void wait_clear(struct lb_wait *w)
{
	struct lb_wait_helper **word = word_helper(w);

	lb_wait_clear_locks(w);
	if (word != NULL) {
		word_cancel(*word);
		*word = NULL;
	}
	while (w->npins > 0)
		pin_drop(w, w->npins - 1);
	if (w->closes >= 0) {
		epoll_ctl(w->ep, EPOLL_CTL_DEL, w->closes, NULL);
		close(w->closes);
		w->closes = -1;
	}
	if (w->sig >= 0) {
		epoll_ctl(w->ep, EPOLL_CTL_DEL, w->sig, NULL);
		close(w->sig);
		w->sig = -1;
		/* a ^Z not yet read is delivered now, and stops us as it should */
		pthread_sigmask(SIG_SETMASK, &w->stop_mask, NULL);
	}
	if (w->bell[0] >= 0) {
		unsigned char drain[16];

		while (read(w->bell[0], drain, sizeof drain) > 0)
			;
	}
	w->nready = 0;
}

void lb_wait_done(struct lb_wait *w)
{
	wait_clear(w);
	if (w->bell[0] >= 0)
		close(w->bell[0]);
	if (w->bell[1] >= 0)
		close(w->bell[1]);
	if (w->ep >= 0)
		close(w->ep);
	w->ep = w->bell[0] = w->bell[1] = -1;
	free(w->pins);
	free(w->ready);
	w->pins = NULL;
	w->ready = NULL;
	w->npins = w->cappins = w->nready = w->capready = 0;
	/* sets nest (a header's wait inside a head's): the last one done restores */
	if (w->counted) {
		w->counted = 0;
		if (--live_sets == 0)
			wake_restore();
	}
	if (w->fd_limit_raised) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			rl.rlim_cur = w->saved_fd_limit;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		w->fd_limit_raised = 0;
	}
}

/* SPDX-License-Identifier: ISC */
/*
 * The one door into waiting. A caller says what it waits for (one lock,
 * or a set: locks and flock(2) locks, a word, a process's end, a last
 * close, ^Z) and gets what ended the wait by name (await.h). The door
 * picks how, and is the only caller of wait.c, where a set blocks:
 *
 *   one lock, kept     tried, and tried again with the processor given up
 *                      between (a header is held for a handful of system
 *                      calls), then a wait set's helper thread;
 *   one lock, watched  in this thread: one lock request, as flock(1) and
 *                      setlock block, ended by a timer's flag or ^Z's;
 *                      inside a host, a wait set's helper thread;
 *   a set              wait.c.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "await.h"
#include "clock.h"
#include "host.h"
#include "lockprim.h"
#include "parse.h"
#include "wait.h"

/* tries of a lock held for a moment, with a yield between, before a wait set */
#define YIELD_TRIES	8
/* once a signal has come: how often the timer rings until the request has seen it */
#define TICK_NS		1000000

/* The outcome of a wait set's event. */
static enum lb_outcome outcome_of(const struct lb_wait_event *ev, struct lb_awaited *out)
{
	out->tag = ev->tag;
	out->pid = ev->pid;
	out->err = ev->err;
	switch (ev->kind) {
	case LB_EV_LOCK:
		return ev->err != 0 ? LB_REFUSED : ev->kept ? LB_GRANTED : LB_FREE;
	case LB_EV_PID:
		return LB_ENDED;
	case LB_EV_WORD:
		return LB_CHANGED;
	case LB_EV_STOP:
		return LB_STOPPED;
	case LB_EV_CLOSE:
		return LB_CLOSED;
	default:
		return LB_LOOK;
	}
}

int lb_await_open(struct lb_await *a)
{
	if (lb_wait_init(&a->w) != 0 || lb_wait_stop(&a->w) != 0) {
		lb_wait_done(&a->w);
		return -1;
	}
	return 0;
}

int lb_await_lock(struct lb_await *a, int fd, short type, off_t start, off_t len, int keep,
    int tag)
{
	return lb_wait_on_lock(&a->w, fd, type, start, len, keep, tag);
}

int lb_await_flock(struct lb_await *a, int fd, int op, int keep, int tag)
{
	return lb_wait_on_flock(&a->w, fd, op, keep, tag);
}

int lb_await_word(struct lb_await *a, int fd, off_t off, const unsigned char expect[4], int tag)
{
	return lb_wait_on_word(&a->w, fd, off, expect, tag);
}

int lb_await_pid(struct lb_await *a, pid_t pid, uint64_t starttime, int tag)
{
	return lb_wait_on_pid(&a->w, pid, starttime, tag);
}

int lb_await_close(struct lb_await *a, int fd, int tag)
{
	return lb_wait_on_close(&a->w, fd, tag);
}

size_t lb_await_room(const struct lb_await *a)
{
	return lb_wait_locks_free(&a->w);
}

enum lb_outcome lb_await_run(struct lb_await *a, int64_t deadline, int look_ms,
    struct lb_awaited *out)
{
	struct lb_wait_event ev;
	int r = lb_wait_run(&a->w, deadline, look_ms, &ev);

	memset(out, 0, sizeof *out);
	if (r < 0) {
		out->err = errno;
		/* (a host with a signal to act on: the call ends, as interrupted) */
		out->what = errno == EINTR && lb_host_interrupted() ? LB_INTERRUPTED : LB_FAILED;
		return out->what;
	}
	out->what = r == 0 ? LB_DEADLINE : outcome_of(&ev, out);
	return out->what;
}

void lb_await_forget_locks(struct lb_await *a)
{
	lb_wait_clear_locks(&a->w);
}

void lb_await_shut(struct lb_await *a)
{
	lb_wait_done(&a->w);
}

void lb_await_suspend(void)
{
	lb_wait_suspend();
}

/* One lock on a wait set's helper thread: KEEP it, or see it free. */
static enum lb_outcome on_set(int fd, short type, off_t start, off_t len, int64_t deadline,
    int keep)
{
	struct lb_await a;
	struct lb_awaited out;
	enum lb_outcome r;

	if (keep && lb_wait_init(&a.w) != 0) {
		lb_wait_done(&a.w);
		return LB_FAILED;
	}
	if (!keep && lb_await_open(&a) != 0)
		return LB_FAILED;
	if (lb_await_lock(&a, fd, type, start, len, keep, 0) != 0) {
		out.err = errno;
		lb_await_shut(&a);
		errno = out.err;
		return LB_FAILED;
	}
	r = lb_await_run(&a, deadline, LB_NO_RECHECK, &out);
	lb_await_shut(&a);
	errno = r == LB_DEADLINE ? EAGAIN : out.err;
	return r == LB_REFUSED ? LB_FAILED : r;
}

/*
 * A watch in this thread. The deadline is a POSIX timer's signal to this
 * thread alone, ^Z SIGTSTP (when it was not ignored, nor caught, on
 * entry); their handlers, installed without SA_RESTART for the call
 * alone, set a flag, and the blocking lock request returns EINTR. A
 * signal that comes between the look at the flags and the request would
 * leave the request blocked: so each handler also sets the timer to ring
 * again every TICK_NS, and the next ring ends the request (the rings stop
 * with the call). Nothing jumps out of a handler. The lock, granted, is
 * let go at once. Not inside a host, whose own signals the call would
 * have to take: there the wait set does it (on_set).
 */
static volatile sig_atomic_t watch_timed, watch_tstp;
static timer_t watch_timer;

static int watch_sig(void)
{
	return SIGRTMIN + 3;
}

static void on_watch(int sig)
{
	struct itimerspec soon = { { 0, TICK_NS }, { 0, TICK_NS } };
	int saved = errno;

	if (sig == SIGTSTP)
		watch_tstp = 1;
	else
		watch_timed = 1;
	timer_settime(watch_timer, 0, &soon, NULL);
	errno = saved;
}

/* glibc names the thread of SIGEV_THREAD_ID only in its union */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* The timer at DEADLINE (CLOCK_MONOTONIC, absolute). */
static int watch_arm(int64_t deadline)
{
	struct itimerspec its;

	memset(&its, 0, sizeof its);
	its.it_value.tv_sec = (time_t)(deadline / LB_NS_PER_S);
	its.it_value.tv_nsec = (long)(deadline % LB_NS_PER_S);
	return timer_settime(watch_timer, TIMER_ABSTIME, &its, NULL);
}

static enum lb_outcome watch(int fd, short type, off_t start, off_t len, int64_t deadline)
{
	struct sigaction sa, old_timer, old_tstp, cur;
	struct sigevent sev;
	sigset_t take, old;
	enum lb_outcome r = LB_FAILED;
	int tstp, e = 0;

	tstp = sigaction(SIGTSTP, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL;
	sigemptyset(&take);
	sigaddset(&take, watch_sig());
	if (tstp)
		sigaddset(&take, SIGTSTP);
	/* blocked while the handlers go in: one that comes sooner waits for them */
	if (sigprocmask(SIG_BLOCK, &take, &old) != 0)
		return LB_FAILED;
	memset(&sev, 0, sizeof sev);
	/* to this thread: no other thread of the process may take it */
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = watch_sig();
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &watch_timer) != 0) {
		e = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		errno = e;
		return LB_FAILED;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_watch;
	sa.sa_mask = take;
	watch_timed = watch_tstp = 0;
	sigaction(watch_sig(), &sa, &old_timer);
	if (tstp)
		sigaction(SIGTSTP, &sa, &old_tstp);
	if (watch_arm(deadline) != 0) {
		e = errno;
		goto out;
	}
	for (;;) {
		if (watch_tstp) {
			r = LB_STOPPED;
			break;
		}
		if (watch_timed) {
			if (lb_remaining(deadline) == 0) {
				r = LB_DEADLINE;
				e = EAGAIN;
				break;
			}
			/* a ring that was not the deadline's: the deadline again */
			watch_timed = 0;
			if (watch_arm(deadline) != 0) {
				e = errno;
				break;
			}
		}
		sigprocmask(SIG_UNBLOCK, &take, NULL);
		e = lb_lock_block(fd, type, start, len) == 0 ? 0 : errno;
		sigprocmask(SIG_BLOCK, &take, NULL);
		if (e == 0) {
			/* granted: it was free; it is not kept */
			lb_lock_try(fd, F_UNLCK, start, len);
			r = LB_FREE;
			break;
		}
		if (e != EINTR)
			break;
	}
out:
	timer_delete(watch_timer);
	sigaction(watch_sig(), &old_timer, NULL);
	if (tstp)
		sigaction(SIGTSTP, &old_tstp, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}

/* A lock held for a moment: tried, the processor given up between. 1 taken, 0 not yet, -1 error. */
static int try_awhile(int fd, short type, off_t start, off_t len)
{
	int i, r = lb_lock_try(fd, type, start, len);

	/*
	 * A lock file's header is held for a handful of system calls: its
	 * holder, running on another CPU or given this one, is most often done
	 * before a helper thread would have started.
	 */
	for (i = 0; r == 0 && i < YIELD_TRIES; i++) {
		sched_yield();
		r = lb_lock_try(fd, type, start, len);
	}
	return r;
}

enum lb_outcome lb_await_lock_one(int fd, short type, off_t start, off_t len, int64_t deadline,
    int keep)
{
	int r;

	if (keep) {
		r = lb_remaining(deadline) != 0 ? try_awhile(fd, type, start, len) :
		    lb_lock_try(fd, type, start, len);
		if (r != 0)
			return r > 0 ? LB_GRANTED : LB_FAILED;
		if (lb_remaining(deadline) == 0) {
			errno = EAGAIN;
			return LB_DEADLINE;
		}
		return on_set(fd, type, start, len, deadline, 1);
	}
	if (lb_remaining(deadline) == 0) {
		errno = EAGAIN;
		return LB_DEADLINE;
	}
	return lb_hosted() ? on_set(fd, type, start, len, deadline, 0) :
	    watch(fd, type, start, len, deadline);
}

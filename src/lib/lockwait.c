/* Waiting for one lock with a deadline (lb_lock_wait): kept, on a wait set; or watched, in the caller's own thread. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "host.h"
#include "lockfile.h"
#include "lockwait.h"
#include "parse.h"
#include "procfs.h"
#include "wait.h"

/* tries of a lock held for a moment, with a yield between, before a wait set */
#define YIELD_TRIES	8

/* LB_LOCK_KEEP */
static int keep(int fd, short type, off_t start, off_t len, int64_t deadline)
{
	struct lb_wait w;
	struct lb_wait_event ev;
	int err, i, r = lb_lock_try(fd, type, start, len);

	if (r != 0)
		return r;
	if (lb_remaining(deadline) == 0) {
		errno = EAGAIN;
		return 0;
	}
	/*
	 * A lock file's header is held for a handful of system calls: its
	 * holder, running on another CPU or given this one, is most often done
	 * before a helper thread would have started.
	 */
	for (i = 0; i < YIELD_TRIES; i++) {
		sched_yield();
		r = lb_lock_try(fd, type, start, len);
		if (r != 0)
			return r;
	}
	if (lb_wait_init(&w) != 0)
		return -1;
	if (lb_wait_on_lock(&w, fd, type, start, len, 1, 0) != 0) {
		lb_wait_done(&w);
		return -1;
	}
	r = lb_wait_run(&w, deadline, LB_NO_RECHECK, &ev);
	if (r == 1 && ev.err != 0) {
		err = ev.err;
		r = -1;
	} else {
		err = r == 0 ? EAGAIN : errno;
	}
	lb_wait_done(&w);
	errno = err;
	return r;
}

/*
 * LB_LOCK_WATCH: one lock request in the caller's own thread, as setlock
 * blocks in flock(2): no helper thread to start, to wake and to join, no
 * epoll, and nothing left running when the caller execs its command or
 * returns. That is the handoff's own time: measured with bench/handoff
 * (bench/README.md, "The binary's handoff"), a head waiting this way
 * took over from its holder in 855 us by the median where the same head
 * on a wait set's helper thread took 1047 us, setlock 895 us. It is why
 * a second way to block stays beside the wait set, for this one case. The deadline is a timer's signal (to this thread alone), ^Z is
 * SIGTSTP caught for the call (when it was not ignored on entry, as
 * lb_wait_stop has it); inside a host (host.h), the host's own signals
 * that have a handler are taken for the call too, handed back to that
 * handler at once, and the host asked whether it must act (lb_host_stop).
 * Each signal ends the request by a jump out of its handler. A jump is
 * safe there: the handlers jump only while ARMED, which is set around
 * the fcntl call alone, and a signal that comes before it is armed is
 * remembered (HITS) and looked at once it is. What the jump leaves
 * behind: nothing but a lock the kernel may have granted just before it,
 * which is let go. The waits are the main thread's and never nest.
 */
/* glibc names the thread of SIGEV_THREAD_ID only in its union */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static int await_sig(void)
{
	return SIGRTMIN + 3;
}

static sigjmp_buf await_env;
static volatile sig_atomic_t await_armed, await_timer, await_hits[NSIG];
static struct sigaction await_saved[NSIG];

static void on_await(int sig, siginfo_t *si, void *ctx)
{
	/* a signal of that number that no timer sent is the host's */
	int timer = sig == await_sig() && si != NULL && si->si_code == SI_TIMER;

	(void)ctx;
	if (timer)
		await_timer = 1;
	else
		await_hits[sig] = 1;
	if (await_armed) {
		await_armed = 0;
		siglongjmp(await_env, 1);
	}
}

/* Signals a fault raises: never taken, never blocked. */
static int is_fault(int sig)
{
	return sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGSEGV ||
	    sig == SIGSYS || sig == SIGTRAP || sig == SIGABRT;
}

/*
 * The signals this process has a handler for (SigCgt in its status: one
 * read, rather than a sigaction for each of the 64). 0, or -1.
 */
static int caught(sigset_t *set)
{
	char buf[4096], *p;
	unsigned long long bits = 0;
	int sig;

	sigemptyset(set);
	if (lb_procfs_pid_read(0, "status", buf, sizeof buf) < 0 ||
	    (p = strstr(buf, "\nSigCgt:")) == NULL)
		return -1;
	for (p += 8; *p == ' ' || *p == '\t'; p++)
		;
	for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		bits = bits << 4 | (unsigned long long)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	for (sig = 1; sig < NSIG && sig <= 64; sig++)
		if (bits >> (sig - 1) & 1)
			sigaddset(set, sig);
	return 0;
}

/*
 * TAKE: the signals the call takes: the timer's, SIGTSTP unless it was
 * ignored (or caught) on entry, and inside a host every signal the host
 * lets in (HOST) and has a handler for, but SIGCHLD: the host's handler
 * takes that one as it comes (it does not end the wait; a shell's restarts
 * the lock request). 0, or -1 when the host's handlers cannot be known.
 */
static int await_take(const sigset_t *host, sigset_t *take)
{
	struct sigaction cur;
	sigset_t handled;
	int sig;

	sigemptyset(take);
	sigaddset(take, await_sig());
	if (sigaction(SIGTSTP, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL)
		sigaddset(take, SIGTSTP);
	if (host == NULL)
		return 0;
	if (caught(&handled) != 0)
		return -1;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&handled, sig) == 1 && sigismember(host, sig) != 1 &&
		    sig != SIGKILL && sig != SIGSTOP && sig != SIGTSTP && sig != SIGCHLD &&
		    sig != await_sig() && !is_fault(sig))
			sigaddset(take, sig);
	return 0;
}

static int watch(int fd, short type, off_t start, off_t len, int64_t deadline)
{
	const sigset_t *host = lb_host_sleep_mask();
	struct sigaction sa;
	struct sigevent sev;
	struct itimerspec its;
	timer_t timer;
	sigset_t take, old, blocked, armed, tmp;
	volatile int r = -1, e = 0;
	int sig, tstp = 0, host_sig;

	if (await_take(host, &take) != 0)
		return -1;
	/* what is taken stays blocked but while armed: one that comes before waits for it */
	if (sigprocmask(SIG_BLOCK, &take, &old) != 0)
		return -1;
	blocked = old;
	armed = host != NULL ? *host : old;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&take, sig) == 1) {
			sigaddset(&blocked, sig);
			sigdelset(&armed, sig);
		}
	memset(&sev, 0, sizeof sev);
	/* to this thread: a helper thread of the process must never take it */
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = await_sig();
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	memset(&its, 0, sizeof its);
	its.it_value.tv_sec = (time_t)(deadline / LB_NS_PER_S);
	its.it_value.tv_nsec = (long)(deadline % LB_NS_PER_S);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
		e = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		errno = e;
		return -1;
	}
	if (timer_settime(timer, TIMER_ABSTIME, &its, NULL) != 0) {
		e = errno;
		timer_delete(timer);
		sigprocmask(SIG_SETMASK, &old, NULL);
		errno = e;
		return -1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_await;
	sa.sa_flags = SA_SIGINFO;
	sa.sa_mask = take;
	for (;;) {
		if (lb_host_stop() != 0) {
			r = -1;
			e = EINTR;
			break;
		}
		await_timer = 0;
		for (sig = 1; sig < NSIG; sig++) {
			await_hits[sig] = 0;
			if (sigismember(&take, sig) == 1)
				sigaction(sig, &sa, &await_saved[sig]);
		}
		r = -1;
		e = 0;
		if (sigsetjmp(await_env, 1) == 0) {
			/* a signal pending since it was blocked is taken here, and noted */
			sigprocmask(SIG_SETMASK, &armed, NULL);
			await_armed = 1;
			for (sig = 1; sig < NSIG && await_hits[sig] == 0; sig++)
				;
			if (sig == NSIG && !await_timer) {
				do
					r = lb_lock_block(fd, type, start, len);
				while (r < 0 && errno == EINTR && await_armed);
				e = errno;
			}
			await_armed = 0;
			sigprocmask(SIG_SETMASK, &blocked, NULL);
		}
		/* the jump restored BLOCKED: nothing is taken from here on */
		for (sig = 1; sig < NSIG; sig++)
			if (sigismember(&take, sig) == 1)
				sigaction(sig, &await_saved[sig], NULL);
		if (r == 0) {
			/* granted: it was free; it is not kept */
			lb_lock_try(fd, F_UNLCK, start, len);
			r = 1;
			break;
		}
		if (r < 0 && e != EINTR && e != 0) {
			r = -1;
			break;
		}
		/* a grant that came just before a jump is not kept either */
		lb_lock_try(fd, F_UNLCK, start, len);
		host_sig = 0;
		for (sig = 1; sig < NSIG; sig++) {
			if (!await_hits[sig])
				continue;
			if (sig == SIGTSTP)
				tstp = 1;
			else if (host != NULL) {
				/* the host's: back to its handler, which runs now */
				raise(sig);
				host_sig = 1;
			}
		}
		if (host_sig) {
			sigprocmask(SIG_SETMASK, host, &tmp);
			sigprocmask(SIG_SETMASK, &tmp, NULL);
		}
		if (tstp) {
			r = 2;
			e = EINTR;
			break;
		}
		if (await_timer && lb_remaining(deadline) == 0) {
			r = 0;
			e = EAGAIN;
			break;
		}
	}
	timer_delete(timer);
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}

int lb_lock_wait(int fd, short type, off_t start, off_t len, int64_t deadline,
    enum lb_lock_how how)
{
	return how == LB_LOCK_WATCH ? watch(fd, type, start, len, deadline) :
	    keep(fd, type, start, len, deadline);
}

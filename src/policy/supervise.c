/* The one child runner: fork and exec a command, pass it signals, wait for it. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "exec.h"
#include "exitcodes.h"
#include "parse.h"
#include "supervise.h"

int lb_super_init(struct lb_super *s, const int *pass, int n, const int *own, int n_own,
    unsigned flags)
{
	struct sigaction dfl, cur;
	int i;

	memset(s, 0, sizeof *s);
	s->pid = -1;
	s->flags = flags;
	sigemptyset(&s->set);
	sigemptyset(&s->pass);
	for (i = 0; i < n; i++) {
		if (sigaction(pass[i], NULL, &cur) != 0)
			return -1;
		if (cur.sa_handler == SIG_IGN)
			continue;
		sigaddset(&s->pass, pass[i]);
		sigaddset(&s->set, pass[i]);
	}
	for (i = 0; i < n_own; i++)
		sigaddset(&s->set, own[i]);
	sigaddset(&s->set, SIGCHLD);
	/* SIGCHLD must not be ignored, or the kernel reaps the child for us */
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	if (sigaction(SIGCHLD, &dfl, &s->entry_chld) != 0)
		return -1;
	/*
	 * Blocked from here on and taken only by sigwaitinfo: a signal can
	 * never slip in between looking at the child and going to sleep, and
	 * a child that ends before the wait leaves its SIGCHLD pending.
	 */
	return sigprocmask(SIG_BLOCK, &s->set, &s->entry_mask);
}

static _Noreturn void child(const struct lb_super *s, int report, char *const argv[])
{
	int err;

	/* its own process group, as timeout(1) does: the job can be signalled whole */
	if (s->flags & LB_SUPER_GROUP)
		setpgid(0, 0);
	sigaction(SIGCHLD, &s->entry_chld, NULL);
	sigprocmask(SIG_SETMASK, &s->entry_mask, NULL);
	lb_exec_restore();
	execvp(argv[0], argv);
	err = errno;
	/* the parent reads this, and tells; the pipe closes unread when exec works */
	while (write(report, &err, sizeof err) < 0 && errno == EINTR)
		;
	/* a copy of lockbox: no exit handlers, no stdio buffers flushed twice */
	_exit(lb_child_exec_status(err));
}

int lb_super_start(struct lb_super *s, char *const argv[])
{
	int fds[2], err = 0, saved;
	ssize_t r;
	pid_t pid;

	s->pid = -1;
	s->exec_errno = 0;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(s, fds[1], argv);
	}
	saved = errno;
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		errno = saved;
		return -1;
	}
	/* both sides set the group, so it is in place whoever runs first */
	if (s->flags & LB_SUPER_GROUP)
		setpgid(pid, pid);
	/*
	 * The exec's outcome comes through the pipe, not the exit status, so
	 * a command that itself exits 127 is never taken for a missing one.
	 */
	do
		r = read(fds[0], &err, sizeof err);
	while (r < 0 && errno == EINTR);
	close(fds[0]);
	if (r != (ssize_t)sizeof err) {
		s->pid = pid;
		return 0;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	s->exec_errno = err;
	errno = err;
	return -1;
}

void lb_super_signal(const struct lb_super *s, int sig)
{
	if (s->pid <= 0)
		return;
	/* to the whole group; to the child alone if it left the group */
	if (!(s->flags & LB_SUPER_GROUP) || kill(-s->pid, sig) != 0)
		kill(s->pid, sig);
}

/* sigwaitinfo, or sigtimedwait until DEADLINE when there is one (EAGAIN then). */
static int wait_signal(const sigset_t *set, siginfo_t *si, int64_t deadline)
{
	int64_t left;
	struct timespec ts;

	if (deadline == LB_NO_DEADLINE)
		return sigwaitinfo(set, si);
	left = lb_remaining(deadline);
	ts.tv_sec = (time_t)(left / LB_NS_PER_S);
	ts.tv_nsec = (long)(left % LB_NS_PER_S);
	return sigtimedwait(set, si, &ts);
}

/* A signal to pass on: noted, and passed on unless the child has it already. */
static void caught(struct lb_super *s, int sig, const siginfo_t *si)
{
	s->caught = sig;
#ifdef SI_KERNEL
	if ((s->flags & LB_SUPER_NOT_KERNEL) && si->si_code == SI_KERNEL)
		return;
#else
	(void)si;
#endif
	lb_super_signal(s, sig);
}

int lb_super_wait(struct lb_super *s, int64_t deadline, int *wstatus)
{
	siginfo_t si;
	pid_t w;
	int sig;

	for (;;) {
		sig = wait_signal(&s->set, &si, deadline);
		if (sig < 0 && errno == EINTR)
			continue;	/* a stop and continue */
		if (sig < 0)
			return -1;
		if (sig != SIGCHLD) {
			if (!sigismember(&s->pass, sig))
				return sig;
			caught(s, sig, &si);
			continue;
		}
		do
			w = waitpid(s->pid, wstatus, WNOHANG);
		while (w < 0 && errno == EINTR);
		if (w == s->pid || (w < 0 && errno == ECHILD)) {
			if (w < 0)
				*wstatus = 0;
			s->pid = -1;
			return 0;
		}
	}
}

int lb_super_sleep_until(struct lb_super *s, int64_t deadline)
{
	struct timespec ts;
	siginfo_t si;
	int64_t left;
	int sig;

	/* the deadline, not the timeout, is the reference: wakeups do not add up */
	while (s->caught == 0 && (left = lb_remaining(deadline)) > 0) {
		ts.tv_sec = (time_t)(left / LB_NS_PER_S);
		ts.tv_nsec = (long)(left % LB_NS_PER_S);
		sig = sigtimedwait(&s->set, &si, &ts);
		/* no child to pass it to: noted only; a late SIGCHLD is dropped */
		if (sig > 0 && sigismember(&s->pass, sig))
			s->caught = sig;
	}
	return s->caught;
}

int lb_child_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return LB_EXIT_SIGNAL + WTERMSIG(wstatus);
	return LB_EXIT_FAIL;
}

void lb_reraise(int sig)
{
	sigset_t one;

	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	/* pending while blocked, so it is delivered by the unblocking itself */
	raise(sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
}

int lb_super_run_until(struct lb_super *s, char *const argv[], int64_t deadline, int *wstatus)
{
	int r;

	if (lb_super_start(s, argv) != 0) {
		if (s->exec_errno != 0) {
			errno = s->exec_errno;
			lb_warn("cannot run '%s'", argv[0]);
			return lb_child_exec_status(s->exec_errno);
		}
		lb_die(LB_EXIT_FAIL, "cannot start '%s'", argv[0]);
	}
	r = lb_super_wait(s, deadline, wstatus);
	if (r != 0 && !(r == -1 && errno == EAGAIN))
		lb_die(LB_EXIT_FAIL, "waiting for '%s'", argv[0]);
	return r;
}

int lb_super_run(struct lb_super *s, char *const argv[], int *wstatus)
{
	return lb_super_run_until(s, argv, LB_NO_DEADLINE, wstatus);
}

/* Running a command as a child: exec failure told apart, signals passed on. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "exec.h"
#include "exitcodes.h"

static volatile sig_atomic_t caught;		/* last signal caught */
static volatile sig_atomic_t pending[NSIG];	/* caught, not yet passed on */
static int catching;
static sigset_t caught_set;	/* the signals we handle */
static sigset_t entry_mask;	/* restored in the child */
static sigset_t waiting_mask;	/* entry_mask with ours unblocked, for pselect */
static struct sigaction entry_chld;

static void on_signal(int sig, siginfo_t *si, void *context)
{
	(void)context;
	if (sig == SIGCHLD)
		return;		/* only there to cut pselect short */
	caught = sig;
#ifdef SI_KERNEL
	/*
	 * A terminal sends ^C to its whole foreground process group, the
	 * child included: passing it on would deliver it twice.
	 */
	if (si != NULL && si->si_code == SI_KERNEL)
		return;
#else
	(void)si;
#endif
	pending[sig] = 1;
}

int lb_child_catch(const int *sigs, int n)
{
	struct sigaction sa, old;
	int i;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	/* no SA_RESTART: a signal must end the pselect it arrives in */
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&caught_set);
	for (i = 0; i < n; i++) {
		if (sigaction(sigs[i], NULL, &old) != 0)
			return -1;
		if (old.sa_handler == SIG_IGN)
			continue;
		sigaddset(&caught_set, sigs[i]);
	}
	/*
	 * Blocked from here on and delivered only inside pselect, which
	 * unblocks them atomically: a signal can never slip in between
	 * checking the flags and going to sleep.
	 */
	sigaddset(&caught_set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &caught_set, &entry_mask) != 0)
		return -1;
	waiting_mask = entry_mask;
	for (i = 1; i < NSIG; i++) {
		if (sigismember(&caught_set, i) != 1)
			continue;
		sigdelset(&waiting_mask, i);
		if (sigaction(i, &sa, i == SIGCHLD ? &entry_chld : NULL) != 0)
			return -1;
	}
	catching = 1;
	return 0;
}

int lb_child_caught(void)
{
	return caught;
}

static _Noreturn void child(int report, char *const argv[])
{
	int i, err;

	if (catching) {
		/*
		 * Default actions before unblocking: a signal arriving now
		 * must hit the command, not our handler in this copy.
		 */
		for (i = 1; i < NSIG; i++)
			if (i != SIGCHLD && sigismember(&caught_set, i) == 1)
				signal(i, SIG_DFL);
		sigaction(SIGCHLD, &entry_chld, NULL);
		sigprocmask(SIG_SETMASK, &entry_mask, NULL);
	}
	lb_exec_restore();
	execvp(argv[0], argv);
	err = errno;
	/* the parent reads this; the pipe closes unread when exec works */
	while (write(report, &err, sizeof err) < 0 && errno == EINTR)
		;
	_exit(LB_EXIT_NOTFOUND);
}

int lb_child_start(struct lb_child *c, char *const argv[])
{
	int fds[2], err = 0, saved;
	ssize_t r;
	pid_t pid;

	c->pid = -1;
	c->exec_errno = 0;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], argv);
	}
	saved = errno;
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		errno = saved;
		return -1;
	}
	/*
	 * The exec's outcome comes through the pipe, not the exit status, so
	 * a command that itself exits 127 is never taken for a missing one.
	 */
	do
		r = read(fds[0], &err, sizeof err);
	while (r < 0 && errno == EINTR);
	close(fds[0]);
	if (r != (ssize_t)sizeof err) {
		c->pid = pid;
		return 0;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	c->exec_errno = err;
	errno = err;
	return -1;
}

static void pass_on(pid_t pid)
{
	int i;

	for (i = 1; i < NSIG; i++) {
		if (!pending[i])
			continue;
		pending[i] = 0;
		if (pid > 0)
			kill(pid, i);
	}
}

int lb_child_wait(struct lb_child *c, int *wstatus)
{
	pid_t r;

	for (;;) {
		pass_on(c->pid);
		r = waitpid(c->pid, wstatus, catching ? WNOHANG : 0);
		if (r == c->pid) {
			c->pid = -1;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		/* SIGCHLD or a caught signal ends it; both are blocked until here */
		if (r == 0)
			pselect(0, NULL, NULL, NULL, NULL, &waiting_mask);
	}
}

int lb_child_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return LB_EXIT_SIGNAL + WTERMSIG(wstatus);
	return LB_EXIT_FAIL;
}

int lb_child_exec_status(int exec_errno)
{
	return exec_errno == ENOENT ? LB_EXIT_NOTFOUND : LB_EXIT_NOEXEC;
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

int lb_child_sleep_until(int64_t deadline)
{
	struct timespec ts;
	int64_t left;

	/* the deadline, not the timeout, is the reference: wakeups do not add up */
	while (caught == 0 && (left = lb_remaining(deadline)) > 0) {
		ts.tv_sec = (time_t)(left / 1000000000);
		ts.tv_nsec = (long)(left % 1000000000);
		if (catching)
			pselect(0, NULL, NULL, NULL, &ts, &waiting_mask);
		else
			nanosleep(&ts, NULL);
		pass_on(0);	/* no child to pass them to: dropped */
	}
	return caught;
}

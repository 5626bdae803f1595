/* The process beside a command run in place holding a lock: started, titled, armed; its death told. */
/* SPDX-License-Identifier: ISC */
/*
 * slots and mutex execute the command in place, so nothing of lockbox is
 * left to act for the lock while the command runs. A watcher does: a
 * small process started beside the command, twice forked (not its child:
 * a command may wait for all its children), in a session of its own (a
 * terminal's ^C, ^Z or hang-up is for the command alone), its command
 * line saying what it is and for whom, "mutex: loss watcher for PID 4242
 * (backup.sh)", so that nobody takes it for the job. A backend says what
 * it watches (struct lb_watch_ops): a server's connection (pgwatch.c), a
 * maximum hold (filewatch.c, pgwatch.c).
 *
 * Started and armed apart: a waiter starts its watcher while it waits and
 * arms it (one message on a socket pair, with the descriptor to watch)
 * once it holds the lock, so that a handoff does not wait for a fork.
 * Unarmed, the watcher only waits: the end of the pair means the waiter
 * left without a lock.
 *
 * Armed, the caller's end of the pair goes to the command across exec,
 * set to raise the --on-loss signal in it (O_ASYNC, F_SETSIG) when
 * anything happens on it. The watcher never writes to it after the arming,
 * so what can happen is its own end closing: the watcher's death. A
 * watcher killed before the command ends (SIGKILL, the OOM killer) is so
 * told to the command by the kernel, which needs nobody alive to do it. A
 * signal that can be caught (kill, pkill) the watcher takes as a request
 * to stop the job: it tells the job, says so, and stays. After telling the
 * job anything it stays until the command ends, its end open: the command
 * is told once. It leaves when the command ends (a pidfd; without pidfds,
 * Linux before 5.3, it looks every quarter of a second).
 * Calls job.c, title.c and what is below them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "job.h"
#include "opts.h"
#include "parse.h"
#include "proc.h"
#include "procfs.h"
#include "title.h"
#include "watcher.h"

/* without pidfds (Linux before 5.3), how often the command's life is looked at */
#define NO_PIDFD_LOOK_MS	250

/* what an event in the watcher's set is, below LB_WATCH_OWN */
enum { EV_GONE = 1, EV_CTL, EV_SIG, EV_HOLD };

/* the signals that ask a process to stop, which the watcher hears and tells */
static const int asked[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };

/* The room for one descriptor passed with the arming (SCM_RIGHTS), aligned. */
union cmsg_fd {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* The arming, one packet. */
struct arm_msg {
	int64_t hold;		/* ns; 0: none */
	int64_t since;		/* CLOCK_BOOTTIME ns */
	uint32_t n;
	unsigned char data[LB_WATCH_DATA];
};

/* The watcher's own state, in the watcher. */
struct watch {
	const struct lb_watch_spec *spec;
	struct lb_watched c;	/* the command */
	int ctl;
	int ep;
	int armed;
	int64_t hold;
};

/* The descriptors kept (KEEP, N of them), and stderr. */
struct kept {
	const int *keep;
	size_t n;
};

static int drop_fd(pid_t self, int fd, void *arg)
{
	const struct kept *k = arg;
	size_t i;
	int kept = fd == 2;

	(void)self;
	for (i = 0; i < k->n; i++)
		kept |= fd == k->keep[i];
	/*
	 * Every other one goes, lockbox's own (close-on-exec) too: the
	 * caller's descriptors are the command's, and one kept here would
	 * keep a lock or a pipe's reader waiting for as long as the watcher
	 * lives.
	 */
	if (!kept)
		close(fd);
	return 0;
}

/* stderr to /dev/null: nobody waits for the watcher's word any more */
static void quiet(void)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, 2);
		close(null);
	}
}

static void drop_fds(const int *keep, size_t n)
{
	struct kept k = { keep, n };
	int fd, null;

	lb_procfs_each_fd(0, drop_fd, &k);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (fd = 0; null >= 0 && fd < 2; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			dup2(null, fd);
	if (null > 2)
		close(null);
}

/* Whether the command has ended (its pidfd readable, or its start time gone). */
static int ended(struct watch *w)
{
	struct pollfd pfd = { .fd = w->c.pidfd, .events = POLLIN };

	if (!w->c.ended)
		w->c.ended = w->c.pidfd >= 0 ? poll(&pfd, 1, 0) > 0 :
		    lb_proc_starttime(w->c.cmd) != w->c.start;
	return w->c.ended;
}

/* Whether the job has ended: its ends of the pair are all closed. */
static int job_ended(const struct watch *w)
{
	struct pollfd pfd = { .fd = w->ctl, .events = POLLRDHUP };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLRDHUP)) != 0;
}

/* SIG to the command itself, through its pidfd where there are pidfds. */
static int to_command(const struct watch *w, int sig)
{
	if (w->c.pidfd >= 0)
		return lb_pidfd_send_signal(w->c.pidfd, sig);
	/* not ended (looked at just before), so its PID is still its own */
	return kill(w->c.cmd, sig);
}

/*
 * Tell the command's job WHY: CONT, then the --on-loss signal, each once.
 * The command first, at once: the others are found by a look through all
 * of /proc (job.c), which on a busy host takes long enough for the lock
 * to go to another holder while the command runs on untold. Then the
 * processes that hold the lock (ops->site), their descendants and the
 * groups they lead. Said on stderr, with what was sent to whom.
 */
static void tell(struct watch *w, const char *why)
{
	const struct lb_watch_spec *s = w->spec;
	struct lb_lock_site site;
	struct lb_job job;
	char pids[512] = "", refused[256] = "";
	size_t i, n;

	if (s->sig != 0 && !ended(w)) {
		to_command(w, SIGCONT);
		if (to_command(w, s->sig) == 0)
			snprintf(pids, sizeof pids, "%d", (int)w->c.cmd);
	}
	if (s->sig != 0 && s->ops->site != NULL && s->ops->site(s->arg, &site) == 0) {
		lb_job_init(&job, &site);
		/* a job not known for sure is told as far as it is known */
		lb_job_scan(&job);
		/* the command was told above: once */
		for (i = 0; i < job.n; i++)
			if (job.v[i].pid == w->c.cmd && job.v[i].starttime == w->c.start) {
				if (job.v[i].pidfd >= 0)
					close(job.v[i].pidfd);
				job.v[i--] = job.v[--job.n];
			}
		n = strlen(pids);
		lb_job_signal(&job, SIGCONT, NULL, 0, NULL, 0);
		lb_job_signal(&job, s->sig, pids + n + (n > 0), sizeof pids - n - (n > 0),
		    refused, sizeof refused);
		if (n > 0 && pids[n + 1] != '\0')
			pids[n] = ',';
		lb_job_free(&job);
	}
	if (pids[0] != '\0')
		lb_warnx("%s: %s: sent SIG%s to PIDs %s", s->name, why, lb_signal_name(s->sig), pids);
	else
		lb_warnx("%s: %s", s->name, why);
	if (refused[0] != '\0')
		lb_warnx("%s: cannot send SIG%s to %s: not permitted", s->name,
		    lb_signal_name(s->sig), refused);
}

/*
 * After the job was told: stay until the command ends (or the job: its
 * ends of the pair closed), so that the end of the pair the command holds
 * does not tell it again.
 */
static _Noreturn void linger(struct watch *w)
{
	struct pollfd pfd[2] = {
		{ .fd = w->ctl, .events = POLLRDHUP }, { .fd = w->c.pidfd, .events = POLLIN }
	};

	while (!ended(w) && !job_ended(w))
		if (poll(pfd, w->c.pidfd >= 0 ? 2 : 1, w->c.pidfd >= 0 ? -1 : NO_PIDFD_LOOK_MS) < 0 &&
		    errno != EINTR)
			break;
	_exit(0);
}

static _Noreturn void tell_and_linger(struct watch *w, const char *why)
{
	tell(w, why);
	linger(w);
}

static int add(int ep, int fd, uint32_t what)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = what };

	return fd < 0 ? 0 : epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* The maximum hold, a timer on the boot clock (a suspended host's sleep counts). */
static int hold_timer(struct watch *w, const struct arm_msg *m)
{
	struct itimerspec its;
	int64_t at = m->since + m->hold;
	int fd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);

	if (fd < 0)
		return -1;
	memset(&its, 0, sizeof its);
	its.it_value.tv_sec = (time_t)(at / LB_NS_PER_S);
	its.it_value.tv_nsec = (long)(at % LB_NS_PER_S);
	/* the moment itself, should it be now or past: not a disarmed timer */
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) != 0 || add(w->ep, fd, EV_HOLD) != 0)
		return -1;
	return 0;
}

/* The arming message on the pair: 1 armed, 0 the caller left, -1 failed. */
static int recv_arm(struct watch *w)
{
	const struct lb_watch_spec *s = w->spec;
	union cmsg_fd u;
	struct arm_msg m;
	struct iovec iov = { &m, sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
		.msg_controllen = sizeof u.buf };
	struct cmsghdr *c;
	struct epoll_event ev;
	ssize_t n = recvmsg(w->ctl, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	int fd = -1;

	if (n == 0)
		return 0;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 2 : -1;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
	if ((size_t)n != sizeof m || m.n > sizeof m.data)
		return -1;
	w->armed = 1;
	w->hold = m.hold;
	/* the caller's end goes to the command: its closing everywhere is all that comes */
	ev.events = EPOLLRDHUP;
	ev.data.u32 = EV_CTL;
	epoll_ctl(w->ep, EPOLL_CTL_MOD, w->ctl, &ev);
	if (s->ops->armed == NULL && fd >= 0)
		close(fd);
	else if (s->ops->armed != NULL && s->ops->armed(s->arg, w->ep, fd, m.data, m.n) != 0)
		return -1;
	if (m.hold > 0 && hold_timer(w, &m) != 0)
		return -1;
	return 1;
}

/* The watcher: never returns. */
static _Noreturn void watch(const struct lb_watch_spec *s, int ctl, pid_t cmd, uint64_t start,
    int pidfd)
{
	struct watch w = { s, { cmd, start, pidfd, 0 }, ctl, -1, 0, 0 };
	char title[256], why[160], hold[32];
	struct signalfd_siginfo si;
	sigset_t set;
	size_t i;
	pid_t self = getpid();
	int sigfd, *keep = calloc(s->nkeep + 4, sizeof *keep);

	if (keep == NULL)
		_exit(1);
	/* no terminal's: a new session; only SIGSTOP stops it */
	setsid();
	if (chdir("/") != 0)
		_exit(1);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTSTP, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	sigemptyset(&set);
	for (i = 0; i < sizeof asked / sizeof asked[0]; i++)
		sigaddset(&set, asked[i]);
	sigprocmask(SIG_SETMASK, &set, NULL);
	prctl(PR_SET_NAME, "lockbox-watch");
	snprintf(title, sizeof title, "%s: %s for PID %d (%s)", lb_prog, s->what, (int)cmd,
	    s->command);
	lb_title_set(title);
	w.ep = epoll_create1(EPOLL_CLOEXEC);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	/* the caller learns who its watcher is */
	if (w.ep < 0 || sigfd < 0 || send(ctl, &self, sizeof self, MSG_NOSIGNAL) != sizeof self)
		_exit(1);
	if (s->nkeep > 0)
		memcpy(keep, s->keep, s->nkeep * sizeof *keep);
	keep[s->nkeep] = ctl;
	keep[s->nkeep + 1] = w.ep;
	keep[s->nkeep + 2] = sigfd;
	keep[s->nkeep + 3] = pidfd;
	drop_fds(keep, s->nkeep + 4);
	free(keep);
	if (add(w.ep, pidfd, EV_GONE) != 0 || add(w.ep, ctl, EV_CTL) != 0 ||
	    add(w.ep, sigfd, EV_SIG) != 0)
		_exit(1);
	for (;;) {
		struct epoll_event got[4];
		int n = epoll_wait(w.ep, got, 4, pidfd >= 0 ? -1 : NO_PIDFD_LOOK_MS), k, r;

		if (n < 0 && errno != EINTR) {
			if (w.armed)
				tell_and_linger(&w, "its watcher failed: epoll_wait");
			_exit(1);
		}
		/* the job's end: nothing of it left to tell (nor to hold the lock) */
		if (w.armed && job_ended(&w))
			_exit(0);
		/*
		 * The command's end, its job's not yet (children keep the lock):
		 * its pidfd stays readable; and the caller's stderr goes, which a
		 * pipe's reader (cron) would wait for as long as the job runs on
		 */
		if (!w.c.ended && ended(&w)) {
			if (pidfd >= 0)
				epoll_ctl(w.ep, EPOLL_CTL_DEL, pidfd, NULL);
			quiet();
		}
		for (k = 0; k < n; k++) {
			const char *reason = NULL;

			switch (got[k].data.u32) {
			case EV_CTL:
				if (w.armed)
					break;
				r = recv_arm(&w);
				if (r == 0 || (r < 0 && !w.armed))
					_exit(r == 0 ? 0 : 1);
				if (r < 0)
					tell_and_linger(&w, "its watcher failed to start watching");
				break;
			case EV_SIG:
				if (read(sigfd, &si, sizeof si) != sizeof si)
					break;
				snprintf(why, sizeof why, "its %s (PID %d) was sent SIG%s by PID %u; the lock is held still",
				    s->what, (int)self, lb_signal_name((int)si.ssi_signo), si.ssi_pid);
				tell_and_linger(&w, why);
			case EV_HOLD:
				/* told first, while the lock still shows who holds it: then given back */
				reason = s->ops->expire != NULL ? s->ops->expire(s->arg, &w.c) : NULL;
				if (reason == NULL) {
					snprintf(why, sizeof why, "held for its maximum hold, %s",
					    lb_format_duration_ms(w.hold, hold));
					reason = why;
				}
				tell(&w, reason);
				if (s->ops->give_back != NULL)
					s->ops->give_back(s->arg, &w.c);
				linger(&w);
			case EV_GONE:
				break;
			default:
				if (w.armed && s->ops->event != NULL)
					reason = s->ops->event(s->arg, got[k].data.u32, got[k].events);
				if (reason != NULL)
					tell_and_linger(&w, reason);
			}
		}
	}
}

int lb_watcher_start(struct lb_watcher *w, const struct lb_watch_spec *spec)
{
	pid_t cmd = getpid(), mid, self = 0;
	uint64_t start = lb_proc_starttime(cmd);
	int sv[2], st, pidfd;
	ssize_t n;

	w->pid = 0;
	w->ctl = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		lb_warn("%s: cannot start the %s", spec->name, spec->what);
		return -1;
	}
	pidfd = lb_pidfd_open(cmd);
	if (pidfd < 0 && errno != ENOSYS) {
		lb_warn("%s: cannot start the %s", spec->name, spec->what);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	/* twice forked: the watcher is nobody's child but init's (or a subreaper's) */
	mid = fork();
	if (mid == 0) {
		close(sv[0]);
		if (fork() != 0)
			_exit(0);
		watch(spec, sv[1], cmd, start, pidfd);
	}
	close(sv[1]);
	if (pidfd >= 0)
		close(pidfd);
	while (mid > 0 && waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	/* the watcher says who it is first; the end of the pair: it did not start */
	do
		n = mid > 0 ? recv(sv[0], &self, sizeof self, 0) : -1;
	while (n < 0 && errno == EINTR);
	if (n != sizeof self || self <= 0) {
		lb_warnx("%s: cannot start the %s%s", spec->name, spec->what, mid < 0 ? ": fork" : "");
		close(sv[0]);
		return -1;
	}
	w->pid = self;
	w->ctl = sv[0];
	return 0;
}

int lb_watcher_arm(struct lb_watcher *w, int sig, int64_t hold, int64_t since, int fd,
    const void *data, size_t n)
{
	union cmsg_fd u;
	struct arm_msg m;
	struct iovec iov = { &m, sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	int fl;

	if (w->ctl < 0 || n > sizeof m.data) {
		errno = EINVAL;
		return -1;
	}
	memset(&m, 0, sizeof m);
	m.hold = hold;
	m.since = since;
	m.n = (uint32_t)n;
	if (n > 0)
		memcpy(m.data, data, n);
	if (fd >= 0) {
		memset(&u, 0, sizeof u);
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	if (sendmsg(w->ctl, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof m)
		return -1;
	/* the end of the pair goes to the command, and to what inherits from it */
	if (fcntl(w->ctl, F_SETFD, 0) != 0)
		return -1;
	if (sig == 0)
		return 0;
	/*
	 * It raises SIG in the command (this process, which becomes the
	 * command) when the watcher's end closes: the watcher writes nothing
	 * more to it.
	 */
	fl = fcntl(w->ctl, F_GETFL);
	if (fl < 0 || fcntl(w->ctl, F_SETOWN, getpid()) != 0 || fcntl(w->ctl, F_SETSIG, sig) != 0 ||
	    fcntl(w->ctl, F_SETFL, fl | O_ASYNC | O_NONBLOCK) != 0)
		return -1;
	return 0;
}

void lb_watcher_stop(struct lb_watcher *w)
{
	if (w->ctl >= 0)
		close(w->ctl);
	w->ctl = -1;
	w->pid = 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * The loss watcher of a command that holds a server's slot.
 *
 * slots and mutex execute the command in place, so nothing of lockbox is
 * left to hear the server. Before the exec, a small process is started
 * beside the command (not as its child: a command may wait for all its
 * children) that watches the connection the command inherits, without
 * holding it: it registers the socket with an epoll set and closes its
 * own descriptor, so the session lives exactly as long as the command's
 * descriptors (and its children's), and ends the moment the last of them
 * closes, as if no watcher were there. After its last answer the server
 * has nothing more to say to a holder: anything arriving (the FATAL
 * message before it ends the session, its FIN) or an error (keepalives
 * gave up) means the session is gone or going. Then it tells the
 * command's job, once: SIGCONT, then the --on-loss signal, to every
 * process that holds the connection, their descendants and the process
 * groups they lead (job.c, as adaptive tells its run's), and to the
 * command itself. It exits when the command does. A waiter starts its
 * watcher while it waits, unarmed, and arms it (a byte on a socket pair)
 * when it holds the slot, so that a handoff does not wait for a fork;
 * until then the watcher ignores the connection, which is the waiter's.
 * Calls only job.c and what is below it.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "job.h"
#include "opts.h"
#include "pgpool.h"
#include "proc.h"
#include "procfs.h"

/* without pidfds (Linux before 5.3), how often the command's life is looked at */
#define NO_PIDFD_LOOK_MS	250

/*
 * The caller's descriptors go (the command has them, and a pipe kept open
 * here would keep its reader waiting), and so does this process's copy
 * of the connection. Kept: stderr, for the one message; the N in KEEP;
 * lockbox's own (close-on-exec) ones. stdin and stdout become /dev/null.
 */
/* The descriptors kept (KEEP, N of them), and stderr. */
struct kept {
	const int *keep;
	size_t n;
};

static int drop_fd(pid_t self, int fd, void *arg)
{
	const struct kept *k = arg;
	size_t i;
	int fl, kept = fd == 2;

	(void)self;
	for (i = 0; i < k->n; i++)
		kept |= fd == k->keep[i];
	fl = kept ? -1 : fcntl(fd, F_GETFD);
	if (fl >= 0 && !(fl & FD_CLOEXEC))
		close(fd);
	return 0;
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
static int command_ended(pid_t cmd, uint64_t start, int pidfd)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	if (pidfd >= 0)
		return poll(&pfd, 1, 0) > 0;
	return lb_proc_starttime(cmd) != start;
}

/*
 * Tell the command's job of the loss (WHY): CONT, then SIG, to each once.
 * The command first, at once: the others are found by a look through all
 * of /proc, which on a busy host takes long enough for the server to hand
 * the slot on (a restart, an ended session) while the command still runs
 * its critical section untold, or for the command to end before it is
 * told at all. Then the holders of the lock, the holders of the
 * connection: the processes with a descriptor of SOCK (its device and
 * inode, taken while this process still had one), with their descendants
 * and the groups they lead.
 */
static void tell(struct pgpool *p, pid_t cmd, uint64_t start, int pidfd,
    const struct stat *sock, const char *why)
{
	struct lb_lock_site site = { sock->st_dev, sock->st_ino, -1 };
	struct lb_job job;
	char pids[512] = "", refused[256] = "";
	size_t i, n;

	/* not ended, so its PID is still its own */
	if (!command_ended(cmd, start, pidfd)) {
		kill(cmd, SIGCONT);
		if (kill(cmd, p->on_loss) == 0)
			snprintf(pids, sizeof pids, "%d", (int)cmd);
	}
	lb_job_init(&job, &site);
	/* a job not known for sure is told as far as it is known */
	lb_job_scan(&job);
	/* the command was told above: once */
	for (i = 0; i < job.n; i++)
		if (job.v[i].pid == cmd && job.v[i].starttime == start) {
			if (job.v[i].pidfd >= 0)
				close(job.v[i].pidfd);
			job.v[i--] = job.v[--job.n];
		}
	n = strlen(pids);
	lb_job_signal(&job, SIGCONT, NULL, 0, NULL, 0);
	lb_job_signal(&job, p->on_loss, pids + n + (n > 0), sizeof pids - n - (n > 0),
	    refused, sizeof refused);
	if (n > 0 && pids[n + 1] != '\0')
		pids[n] = ',';
	lb_job_free(&job);
	if (pids[0] != '\0')
		lb_warnx("%s: %s; its lock is free: sent SIG%s to PIDs %s",
		    p->base.name, why, lb_signal_name(p->on_loss), pids);
	else
		lb_warnx("%s: %s; its lock is free", p->base.name, why);
	if (refused[0] != '\0')
		lb_warnx("%s: cannot send SIG%s to %s: not permitted", p->base.name,
		    lb_signal_name(p->on_loss), refused);
}

/* what an event in the watcher's set is */
enum { EV_CONN, EV_GONE, EV_CTL };

static int watch_fd(int ep, int fd, uint32_t what)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = what };

	return fd < 0 ? 0 : epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * The watcher: SOCK is the connection, CTL the socket pair to the waiter
 * (-1: armed from the start), PIDFD the command's (-1 without pidfds).
 */
static _Noreturn void watch(struct pgpool *p, int sock, int ctl, pid_t cmd, uint64_t start,
    int pidfd)
{
	static const int quiet[] = { SIGHUP, SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.u32 = EV_CONN };
	struct stat st;
	sigset_t none;
	size_t i;
	int conn, ep, armed = ctl < 0, keep[4];

	/* a terminal's ^C or ^Z is for the command: this stays until it ends */
	for (i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
		signal(quiet[i], SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "lockbox-watch");
	/*
	 * Registered in CONN, a set of its own, the socket is watched for as
	 * long as any descriptor of it is open anywhere; this one then goes
	 * (in drop_fds), so that when the command's last one closes, the
	 * session ends at once. EP, the set waited on, has CONN in it only
	 * once armed: before, the connection's traffic is the waiter's.
	 */
	conn = epoll_create1(EPOLL_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (conn < 0 || ep < 0 || fstat(sock, &st) != 0 ||
	    epoll_ctl(conn, EPOLL_CTL_ADD, sock, &ev) != 0 ||
	    watch_fd(ep, pidfd, EV_GONE) != 0 || watch_fd(ep, armed ? conn : ctl, armed ? EV_CONN : EV_CTL) != 0)
		_exit(1);
	keep[0] = conn;
	keep[1] = ep;
	keep[2] = pidfd;
	keep[3] = ctl;
	drop_fds(keep, 4);
	for (;;) {
		struct epoll_event got[3];
		int n = epoll_wait(ep, got, 3, pidfd >= 0 ? -1 : NO_PIDFD_LOOK_MS), k;
		char c;

		if (n < 0 && errno != EINTR)
			_exit(1);
		if (command_ended(cmd, start, pidfd))
			_exit(0);
		for (k = 0; k < n; k++) {
			if (got[k].data.u32 == EV_CONN) {
				tell(p, cmd, start, pidfd, &st, got[k].events & EPOLLERR ?
				    "the connection to the server failed" : "the server ended the session");
				_exit(0);
			}
			if (got[k].data.u32 != EV_CTL)
				continue;
			/* a byte: armed; the end: the waiter left (or executed the command) */
			if (recv(ctl, &c, 1, MSG_DONTWAIT) == 1 && !armed) {
				armed = 1;
				if (watch_fd(ep, conn, EV_CONN) != 0)
					_exit(1);
			} else if (!armed) {
				_exit(0);
			} else {
				epoll_ctl(ep, EPOLL_CTL_DEL, ctl, NULL);
			}
		}
	}
}

/* Start a watcher of p->conn (CTL: as for watch); the caller keeps its end of CTL. */
static int spawn(struct pgpool *p, int ctl)
{
	pid_t cmd = getpid(), w;
	uint64_t start = lb_proc_starttime(cmd);
	int pidfd = lb_pidfd_open(cmd), st, sock = PQsocket(p->conn);

	if (pidfd < 0 && errno != ENOSYS) {
		lb_warn("%s: cannot watch the connection", p->base.name);
		return -1;
	}
	/*
	 * Twice forked: the watcher is nobody's child but init's (or a
	 * subreaper's), and the command never sees it end.
	 */
	w = fork();
	if (w < 0) {
		lb_warn("%s: cannot watch the connection: fork", p->base.name);
		if (pidfd >= 0)
			close(pidfd);
		return -1;
	}
	if (w == 0) {
		pid_t w2 = fork();

		if (w2 != 0)
			_exit(w2 < 0 ? 1 : 0);
		watch(p, sock, ctl, cmd, start, pidfd);
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(w, &st, 0) < 0) {
		if (errno == ECHILD)
			return 0;	/* SIGCHLD ignored: reaped already, by the kernel */
		if (errno != EINTR) {
			lb_warn("%s: cannot watch the connection: waitpid", p->base.name);
			return -1;
		}
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		lb_warnx("%s: cannot watch the connection: the watcher did not start",
		    p->base.name);
		return -1;
	}
	return 0;
}

void lbpg_watch_stop(struct pgpool *p)
{
	if (p->watch_fd >= 0)
		close(p->watch_fd);
	p->watch_fd = -1;
}

int lbpg_watch_start(struct pgpool *p)
{
	int sv[2], rc;

	if (p->on_loss == 0 || p->to_caller ||
	    (p->watch_fd >= 0 && p->watch_gen == p->conn_gen))
		return 0;
	lbpg_watch_stop(p);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		lb_warn("%s: cannot watch the connection", p->base.name);
		return -1;
	}
	rc = spawn(p, sv[1]);
	close(sv[1]);
	if (rc != 0) {
		close(sv[0]);
		return -1;
	}
	p->watch_fd = sv[0];
	p->watch_gen = p->conn_gen;
	return 0;
}

int lbpg_watch_arm(struct pgpool *p)
{
	/* the waiter's watcher, if it still watches this connection; else a new one */
	if (p->watch_fd >= 0 && p->watch_gen == p->conn_gen &&
	    send(p->watch_fd, "1", 1, MSG_NOSIGNAL) == 1)
		return 0;
	lbpg_watch_stop(p);
	return spawn(p, -1);
}

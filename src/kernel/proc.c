/* Process identity: who holds a slot, told apart from a later PID reuse. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"
#include "procfs.h"
#include "text.h"
#include "title.h"

int lb_boot_id(uint8_t id[16])
{
	static uint8_t cached[16];
	static int state;	/* 0 unread, 1 read, -1 unreadable */
	char text[64];
	const char *p;
	int i = 0;

	if (state == 0) {
		state = -1;
		if (lb_procfs_boot_id(text, sizeof text) > 0) {
			for (p = text; *p != '\0' && i < 32; p++) {
				int v = *p >= '0' && *p <= '9' ? *p - '0' :
				    *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

				if (v < 0)
					continue;	/* the dashes */
				cached[i / 2] = (uint8_t)(cached[i / 2] << 4 | v);
				i++;
			}
			if (i == 32)
				state = 1;
		}
	}
	memcpy(id, cached, 16);
	return state == 1 ? 0 : -1;
}

uint64_t lb_proc_starttime(pid_t pid)
{
	struct lb_proc_stat st;

	return lb_proc_stat(pid, &st) == 0 ? st.starttime : 0;
}

static void command_from_argv(char *dst, size_t size, char *const argv[])
{
	size_t n = 0;

	dst[0] = '\0';
	for (; *argv != NULL && n + 1 < size; argv++) {
		int r = snprintf(dst + n, size - n, n ? " %s" : "%s", *argv);

		if (r < 0)
			break;
		n += (size_t)r;
	}
}

static void command_from_proc(char *dst, size_t size, pid_t pid)
{
	ssize_t n, i;

	n = lb_procfs_pid_read(pid, "cmdline", dst, size);
	if (n <= 0) {
		dst[0] = '\0';
		return;
	}
	for (i = 0; i < n - 1; i++)
		if (dst[i] == '\0')
			dst[i] = ' ';
}

void lb_ident_stamp(struct lb_ident *who)
{
	who->wall_ns = lb_now(CLOCK_REALTIME);
	who->boot_ns = lb_now(CLOCK_BOOTTIME);
}

static const char *base_name(const char *path)
{
	const char *name = strrchr(path, '/');

	return name != NULL && name[1] != '\0' ? name + 1 : path;
}

/*
 * The script a shell runs, from its command line (words W[0..N-1]): the
 * first operand after the shell's options, as sh(1) and bash(1) read
 * them, or NULL when the shell runs no script file (-c, -s, interactive).
 * A script started by its path has the shell as W[0] too: the kernel
 * runs "#!/bin/bash -e" as "/bin/bash -e SCRIPT ARG...".
 */
static const char *shell_script(char **w, int n)
{
	static const char *const shells[] = { "ash", "bash", "dash", "ksh", "mksh", "sh", "zsh" };
	const char *name = base_name(w[0]), *p;
	size_t i;
	int k, known = 0;

	if (*name == '-')
		name++;	/* a login shell */
	for (i = 0; i < sizeof shells / sizeof shells[0]; i++)
		if (strcmp(name, shells[i]) == 0)
			known = 1;
	if (!known)
		return NULL;
	for (k = 1; k < n; k++) {
		if (strcmp(w[k], "--") == 0 || strcmp(w[k], "-") == 0)
			return k + 1 < n ? w[k + 1] : NULL;
		if (strcmp(w[k], "--rcfile") == 0 || strcmp(w[k], "--init-file") == 0) {
			k++;	/* bash's long options that take a word */
			continue;
		}
		if (strncmp(w[k], "--", 2) == 0)
			continue;
		if (w[k][0] != '-' && w[k][0] != '+')
			return w[k];
		for (p = w[k] + 1; *p != '\0'; p++) {
			if (*p == 'c' || *p == 's')
				return NULL;	/* a command string, or commands on stdin */
			if (*p == 'o' || *p == 'O')
				k++;		/* -o NAME, -O NAME: the option's name follows */
		}
	}
	return NULL;
}

/*
 * The name of the script process PID runs, when it is a shell running
 * one; else "" (the caller then takes the kernel's name for it).
 */
static void script_name(char *buf, size_t size, pid_t pid)
{
	char line[4096], *w[64];
	const char *script;
	ssize_t len, i;
	int n = 0;

	buf[0] = '\0';
	len = lb_procfs_pid_read(pid, "cmdline", line, sizeof line);
	/* a command line longer than the buffer is cut: its last word is dropped */
	if (len <= 0 || line[len - 1] != '\0')
		while (len > 0 && line[len - 1] != '\0')
			len--;
	for (i = 0; i < len && n < (int)(sizeof w / sizeof w[0]); i += (ssize_t)strlen(line + i) + 1)
		w[n++] = line + i;
	if (n < 2)
		return;
	script = shell_script(w, n);
	if (script != NULL && *base_name(script) != '\0' && strchr(base_name(script), '/') == NULL)
		snprintf(buf, size, "%s", base_name(script));
}

/*
 * Only the command's name, none of its arguments (which may hold
 * passwords): the base name of ARGV[0], or with ARGV NULL the name of
 * process PID: for a shell running a script, the script's base name
 * (the holder of a lock a script's shell took through acquire --fd),
 * else the name the kernel gives it (/proc/PID/comm, as ps -o comm).
 */
static void name_only(char *buf, size_t size, pid_t pid, char *const argv[])
{
	ssize_t n;

	if (argv != NULL) {
		snprintf(buf, size, "%s", base_name(argv[0]));
		return;
	}
	script_name(buf, size, pid);
	if (buf[0] != '\0')
		return;
	n = lb_procfs_pid_read(pid, "comm", buf, size);
	if (n <= 0)
		buf[0] = '\0';
	else if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/*
 * What a record says of this process that does not change while it runs
 * (its start time, host name and command line, read from /proc and
 * uname), kept for its next record: inside a shell that lives on (the
 * bash builtin), every lock it takes would read them again. Kept for the
 * PID that read them, so that a subshell (a fork, another PID) reads its
 * own; only for this process, whose PID cannot be reused while it runs.
 * A host renamed while the shell runs keeps the old name in its records.
 */
static struct {
	pid_t pid;	/* 0: nothing kept */
	int args;
	struct lb_ident who;
} kept;

void lb_ident_fill(struct lb_ident *who, pid_t pid, char *const argv[], int args)
{
	int self = argv == NULL && pid == getpid();

	if (self && kept.pid == pid && kept.args == args) {
		*who = kept.who;
		lb_ident_stamp(who);
		return;
	}
	memset(who, 0, sizeof *who);
	who->pid = pid;
	who->starttime = lb_proc_starttime(pid);
	lb_boot_id(who->boot_id);
	lb_ident_stamp(who);
	who->uid = (uint32_t)getuid();
	if (gethostname(who->host, sizeof who->host - 1) != 0)
		who->host[0] = '\0';
	if (!args)
		name_only(who->command, sizeof who->command, pid, argv);
	else if (argv != NULL)
		command_from_argv(who->command, sizeof who->command, argv);
	else
		command_from_proc(who->command, sizeof who->command, pid);
	lb_text_clean(who->host);
	lb_text_clean(who->command);
	if (self && who->starttime != 0) {
		kept.pid = pid;
		kept.args = args;
		kept.who = *who;
	}
}

/* The clocks of a start STARTTIME (clock ticks after boot) into WHO; 0, or -1. */
static int start_clocks(struct lb_ident *who, uint64_t starttime)
{
	long tck = sysconf(_SC_CLK_TCK);
	int64_t start;

	if (tck <= 0)
		return -1;
	start = (int64_t)(starttime / (uint64_t)tck) * 1000000000 +
	    (int64_t)(starttime % (uint64_t)tck) * (1000000000 / tck);
	lb_ident_stamp(who);
	who->wall_ns -= who->boot_ns - start;
	who->boot_ns = start;
	return 0;
}

void lb_ident_of_process(struct lb_ident *who, pid_t pid)
{
	struct lb_proc_stat st;
	struct stat ps;

	lb_ident_fill(who, pid, NULL, 0);
	/* gone: nothing to say of it but its PID */
	if (lb_proc_stat(pid, &st) != 0 || start_clocks(who, st.starttime) != 0) {
		who->command[0] = '\0';
		return;
	}
	if (lb_procfs_pid_stat(pid, &ps) == 0)
		who->uid = (uint32_t)ps.st_uid;
}

/*
 * What a waiter will hold its slot as: a lockbox waiter writes it into
 * its command line while it waits (title.h); a shell waiting in the
 * library's builtin is named for its script, as its record will be;
 * anyone else by COMM, the kernel's name. Only lockbox's names and the
 * shells' have their command line read.
 */
static void waiter_command(char *buf, size_t size, pid_t pid, const char *comm)
{
	static const char *const ours[] = { "lockbox", "lockbox-pg", "mutex", "slots" };
	static const char *const shells[] = { "ash", "bash", "dash", "ksh", "mksh", "sh", "zsh" };
	char line[4096];
	size_t i, n0;
	ssize_t len;

	snprintf(buf, size, "%s", comm);
	for (i = 0; i < sizeof shells / sizeof shells[0]; i++)
		if (strcmp(comm, shells[i]) == 0) {
			name_only(buf, size, pid, NULL);
			return;
		}
	for (i = 0; i < sizeof ours / sizeof ours[0] && strcmp(comm, ours[i]) != 0; i++)
		;
	if (i == sizeof ours / sizeof ours[0])
		return;
	len = lb_procfs_pid_read(pid, "cmdline", line, sizeof line - 1);
	if (len <= 0)
		return;
	line[len] = '\0';
	/* "ARGV0", "waiting:", "RECORD" */
	n0 = strlen(line) + 1;
	if ((size_t)len > n0 + sizeof LB_TITLE_WAITING &&
	    memcmp(line + n0, LB_TITLE_WAITING, sizeof LB_TITLE_WAITING) == 0 &&
	    line[n0 + sizeof LB_TITLE_WAITING] != '\0')
		snprintf(buf, size, "%s", line + n0 + sizeof LB_TITLE_WAITING);
}

int lb_ident_of_waiter(struct lb_ident *who, pid_t pid, int *stopped)
{
	static char host[LB_HOST_MAX];
	struct lb_proc_stat st;

	memset(who, 0, sizeof *who);
	who->pid = pid;
	*stopped = 0;
	if (lb_proc_stat(pid, &st) != 0)
		return -1;
	if (host[0] == '\0' && gethostname(host, sizeof host - 1) == 0)
		lb_text_clean(host);
	memcpy(who->host, host, sizeof who->host);
	lb_boot_id(who->boot_id);
	who->starttime = st.starttime;
	who->uid = (uint32_t)-1;
	start_clocks(who, st.starttime);
	waiter_command(who->command, sizeof who->command, pid, st.comm);
	lb_text_clean(who->command);
	*stopped = st.state == 'T' || st.state == 't';
	return 0;
}

int lb_same_boot(const uint8_t a[16], const uint8_t b[16])
{
	static const uint8_t none[16];

	return memcmp(a, none, 16) != 0 && memcmp(a, b, 16) == 0;
}

int lb_ident_local(const struct lb_ident *who)
{
	uint8_t ours[16];

	return lb_boot_id(ours) == 0 && lb_same_boot(ours, who->boot_id);
}

int lb_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

int lb_pidfd_send_signal(int pidfd, int sig)
{
#ifdef SYS_pidfd_send_signal
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
	(void)pidfd;
	(void)sig;
	errno = ENOSYS;
	return -1;
#endif
}

int lb_pidfd_getfd(int pidfd, int fd)
{
#ifdef SYS_pidfd_getfd
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
#else
	(void)pidfd;
	(void)fd;
	errno = ENOSYS;
	return -1;
#endif
}

int lb_ident_ended(const struct lb_ident *who)
{
	uint64_t start;

	if (who->pid <= 0 || !lb_ident_local(who))
		return 0;	/* another host or boot: only its lock can tell */
	start = lb_proc_starttime(who->pid);
	/* 0: gone; another start: its PID is another process's now */
	return start == 0 || (who->starttime != 0 && start != who->starttime);
}

int lb_ident_gone(const struct lb_ident *who)
{
	if (who->pid <= 0 || !lb_ident_local(who))
		return 0;	/* another host or boot: only its lock can tell */
	return kill(who->pid, 0) != 0 && errno == ESRCH;
}

int64_t lb_ident_age(const struct lb_ident *who)
{
	int64_t start = lb_ident_local(who) ? who->boot_ns : who->wall_ns;
	int64_t age;

	/* the start comes from a file anyone may have written: no overflow */
	if (__builtin_sub_overflow(lb_now(lb_ident_local(who) ? CLOCK_BOOTTIME : CLOCK_REALTIME),
	    start, &age))
		return start < 0 ? INT64_MAX : 0;
	return age > 0 ? age : 0;	/* a start "in the future" counts as now */
}

int lb_proc_stat(pid_t pid, struct lb_proc_stat *st)
{
	char buf[1024], *p, *end;
	long long f[20];
	ssize_t n;
	int i;

	n = lb_procfs_pid_read(pid, "stat", buf, sizeof buf);
	if (n <= 0)
		return -1;
	/* comm may hold spaces and parentheses: fields start after the last ')' */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == '\0') {
		errno = EINVAL;
		return -1;
	}
	st->state = p[2];
	/* comm: between the first '(' and the last ')' */
	{
		const char *c = strchr(buf, '(');
		size_t len = c != NULL && c < p ? (size_t)(p - c - 1) : 0;

		if (len >= sizeof st->comm)
			len = sizeof st->comm - 1;
		memcpy(st->comm, c != NULL ? c + 1 : "", len);
		st->comm[len] = '\0';
		lb_text_clean(st->comm);
	}
	p += 3;
	/* fields 4 (ppid) to 22 (starttime) */
	for (i = 0; i < 19; i++) {
		f[i] = strtoll(p, &end, 10);
		if (end == p) {
			errno = EINVAL;
			return -1;
		}
		p = end;
	}
	st->ppid = (pid_t)f[0];
	st->pgid = (pid_t)f[1];
	st->starttime = (uint64_t)f[18];
	return 0;
}

/*
 * The "lock:" lines of /proc/PID/fdinfo/FD are the locks held through that
 * descriptor's open file (and, for classic POSIX locks, by that process on
 * it). flock(2) locks and leases do not conflict with ours and do not
 * count: fcntl locks only.
 */
struct holds {
	dev_t dev;
	ino_t ino;
	long long byte;
	int err;	/* a descriptor that could not be read, and why */
	int fd;		/* the first descriptor found holding it */
};

static int holds_fd_lock(pid_t pid, int fd, struct holds *h);

static int holds_byte(const struct lb_lockline *x, void *arg)
{
	long long byte = ((const struct holds *)arg)->byte;

	return x->kind != LB_LOCK_FLOCK && x->l.write && x->l.lo <= byte &&
	    (x->l.hi < 0 || x->l.hi >= byte);
}

static int holds_fd(pid_t pid, int fd, void *arg)
{
	struct holds *h = arg;
	int r = holds_fd_lock(pid, fd, h);

	if (r > 0)
		h->fd = fd;
	return r;
}

static int holds_fd_lock(pid_t pid, int fd, struct holds *h)
{
	struct stat st;
	int r;

	if (lb_procfs_fd_stat(pid, fd, &st) != 0 || st.st_dev != h->dev || st.st_ino != h->ino)
		return 0;
	if (h->byte < 0)
		return 1;
	r = lb_procfs_each_fd_lock(pid, fd, h->dev, h->ino, holds_byte, h);
	/* closed, or the process gone, meanwhile: no lock through it */
	if (r < 0 && (errno == ENOENT || errno == ESRCH))
		return 0;
	if (r < 0) {
		/* unknown is not "does not hold it": the caller must know */
		h->err = errno;
		return -1;
	}
	return r;
}

int lb_proc_holds(pid_t pid, dev_t dev, ino_t ino, off_t byte)
{
	return lb_proc_holding_fd(pid, dev, ino, byte, NULL);
}

int lb_proc_holding_fd(pid_t pid, dev_t dev, ino_t ino, off_t byte, int *fd)
{
	struct holds h = { dev, ino, (long long)byte, 0, -1 };
	int r = lb_procfs_each_fd(pid, holds_fd, &h);

	if (h.err != 0)
		errno = h.err;
	if (fd != NULL)
		*fd = h.fd;
	return r < 0 ? -1 : r;
}

void lb_proc_name(pid_t pid, char *buf, size_t size)
{
	name_only(buf, size, pid, NULL);
}

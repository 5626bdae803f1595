/* adaptive's transaction log: one line per event, to a file or to syslog. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "exec.h"
#include "joblog.h"
#include "lockfile.h"

static int log_fd = -1;
static int log_syslog;
static const char *log_path;
static int log_failed;		/* a write failed: told once */

/* A regular file, then blocking again: a line goes whole, never EAGAIN. */
static int check_log(int fd, const char *path)
{
	struct stat st;
	int fl;

	if (lb_fstat_regular(fd, path, &st) != 0)
		return -1;
	if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		lb_warn("%s", path);
		return -1;
	}
	return 0;
}

int lb_joblog_open(const char *path, int use_syslog)
{
	if (use_syslog) {
		openlog(lb_prog, LOG_PID, LOG_USER);
		log_syslog = 1;
		return 0;
	}
	if (path == NULL)
		return 0;
	/*
	 * As for lock files: a final symlink is never followed (nothing is
	 * created or appended to through it), opening a FIFO never hangs,
	 * and anything but a regular file is refused.
	 */
	do
		log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC | O_NOCTTY, 0666);
	while (log_fd < 0 && errno == EINTR);
	if (log_fd < 0) {
		if (errno == ELOOP)
			lb_warnx("%s: is a symbolic link; refusing to follow it", path);
		else if (errno == EISDIR || errno == ENXIO)	/* ENXIO: a FIFO nobody reads */
			lb_warnx("%s: not a regular file", path);
		else
			lb_warn("%s", path);
		return -1;
	}
	if (check_log(log_fd, path) != 0) {
		close(log_fd);
		log_fd = -1;
		return -1;
	}
	log_path = path;
	log_failed = 0;
	return 0;
}

/* Whether a line of N bytes fits under the file size limit (see lb_fsize_fits). */
static int log_fits(size_t n)
{
	struct stat st;

	return fstat(log_fd, &st) != 0 || lb_fsize_fits(st.st_size + (off_t)n);
}

const char *lb_joblog_escape(const char *s, int keep_spaces, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	for (; *p != '\0' && n + 5 < size; p++) {
		if (*p < ' ' || (*p == ' ' && !keep_spaces) || *p == '\\' || *p >= 0x7f) {
			buf[n++] = '\\';
			buf[n++] = 'x';
			buf[n++] = hex[*p >> 4];
			buf[n++] = hex[*p & 15];
		} else {
			buf[n++] = (char)*p;
		}
	}
	buf[n] = '\0';
	return buf;
}

void lb_joblog(int priority, const char *name, const char *fmt, ...)
{
	char line[4096], ename[1100];
	struct tm tm;
	time_t t;
	va_list ap;
	size_t n;
	int r;

	if (log_fd < 0 && !log_syslog)
		return;
	lb_joblog_escape(name, 0, ename, sizeof ename);
	if (log_syslog) {
		r = snprintf(line, sizeof line, "%s ", ename);
		n = r < 0 ? 0 : (size_t)r;
	} else {
		t = (time_t)(lb_now(CLOCK_REALTIME) / 1000000000);
		gmtime_r(&t, &tm);
		n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ", &tm);
		r = snprintf(line + n, sizeof line - n, " %s[%ld] %s ", lb_prog,
		    (long)getpid(), ename);
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n < sizeof line) {
		va_start(ap, fmt);
		r = vsnprintf(line + n, sizeof line - n, fmt, ap);
		va_end(ap);
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n > sizeof line - 2)
		n = sizeof line - 2;
	if (log_syslog) {
		line[n] = '\0';
		syslog(priority, "%s", line);
		return;
	}
	/* one write(2) on an O_APPEND file: concurrent lines never interleave */
	line[n++] = '\n';
	if (log_fits(n)) {
		do
			r = (int)write(log_fd, line, n);
		while (r < 0 && errno == EINTR);
		if (r >= 0 && (size_t)r != n)
			errno = ENOSPC;
		if (r >= 0 && (size_t)r == n)
			return;
	}
	/* the run goes on without its log: said once, not on every line */
	if (!log_failed)
		lb_warn("%s: cannot write to the log", log_path);
	log_failed = 1;
}

void lb_joblog_close(void)
{
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	if (log_syslog)
		closelog();
	log_syslog = 0;
}

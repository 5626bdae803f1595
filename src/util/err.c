/* Diagnostics: "applet: context: reason", each message one write(2). */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "exitcodes.h"
#include "host.h"
#include "text.h"

const char *lb_prog = "lockbox";
int lb_prog_linked;

/*
 * Holders of one lock often share a stderr (a cron log), so a message is
 * assembled first and written with a single write(2): lines never
 * interleave. It is one line, whatever it quotes: control characters in
 * an argument or a file name are escaped (\n, \x1b), never written raw.
 */
static void emit(int with_errno, int saved, const char *tail, const char *fmt, va_list ap)
{
	char buf[1024], line[1024];
	size_t n;
	int r;

	/* a call its host must end for a signal ends as the program would, killed: silent */
	if (lb_host_interrupted())
		return;
	r = snprintf(buf, sizeof buf, "%s: ", lb_prog);
	n = r < 0 ? 0 : (size_t)r;
	if (n < sizeof buf) {
		r = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
		n += r < 0 ? 0 : (size_t)r;
	}
	if (with_errno && n < sizeof buf) {
		r = snprintf(buf + n, sizeof buf - n, ": %s", strerror(saved));
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n > sizeof buf - 1)
		n = sizeof buf - 1;
	buf[n] = '\0';
	n = lb_text_escape(line, sizeof line - 1, buf, n);
	line[n++] = '\n';
	/* a line of lockbox's own after it, in the same write */
	if (tail != NULL && strlen(tail) < sizeof line - n) {
		memcpy(line + n, tail, strlen(tail));
		n += strlen(tail);
	}
	while (write(STDERR_FILENO, line, n) < 0 && errno == EINTR)
		;
}

void lb_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(1, saved, NULL, fmt, ap);
	va_end(ap);
	errno = saved;
}

void lb_warnx(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(0, saved, NULL, fmt, ap);
	va_end(ap);
	errno = saved;
}

void lb_die(int status, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(1, saved, NULL, fmt, ap);
	va_end(ap);
	lb_exit(status);
}

void lb_diex(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(0, 0, NULL, fmt, ap);
	va_end(ap);
	lb_exit(status);
}

void lb_usage_error(const char *fmt, ...)
{
	char hint[128];
	va_list ap;
	int n;

	/* the name it was run by: a link's own, else lockbox's and the applet's */
	n = strcmp(lb_prog, PACKAGE) == 0 || lb_prog_linked ?
	    snprintf(hint, sizeof hint, "Try '%s --help'.\n", lb_prog) :
	    snprintf(hint, sizeof hint, "Try 'lockbox %s --help'.\n", lb_prog);
	va_start(ap, fmt);
	emit(0, 0, n > 0 && (size_t)n < sizeof hint ? hint : NULL, fmt, ap);
	va_end(ap);
	lb_exit(LB_EXIT_FAIL);
}

/*
 * Whether stdout took what it was given: once it failed, it stays failed
 * with the first errno, so every later look says so too.
 */
static int stdout_closed;
static int stdout_errno;

int lb_flush_stdout(void)
{
	if (stdout_errno == 0 && !stdout_closed) {
		errno = 0;
		if (fflush(stdout) != 0 || ferror(stdout))
			stdout_errno = errno != 0 ? errno : EIO;
	}
	if (stdout_errno != 0) {
		errno = stdout_errno;
		return -1;
	}
	return 0;
}

void lb_stdout_reset(void)
{
	stdout_closed = 0;
	stdout_errno = 0;
}

/*
 * A full disk or closed pipe on stdout must not pass as success. A host's
 * stdout is the host's to close (bash writes on after the call): flushed only.
 */
int lb_stdout_status(int status)
{
	if (!stdout_closed) {
		if (lb_flush_stdout() == 0 && !lb_hosted() && fclose(stdout) != 0)
			stdout_errno = errno;
		stdout_closed = 1;
	}
	if (stdout_errno == 0)
		return status;
	/* a reader that went away needs no message */
	if (stdout_errno != EPIPE) {
		errno = stdout_errno;
		lb_warn("write error");
	}
	return LB_EXIT_FAIL;
}

void lb_close_stdout(void)
{
	if (lb_stdout_status(LB_EXIT_OK) != LB_EXIT_OK)
		lb_exit(LB_EXIT_FAIL);
}

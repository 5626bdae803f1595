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

const char *lb_prog = "lockbox";

/*
 * Holders of one lock often share a stderr (a cron log), so a message is
 * assembled first and written with a single write(2): lines never interleave.
 */
static void emit(int with_errno, int saved, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t n;
	int r;

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
	if (n > sizeof buf - 2)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	while (write(STDERR_FILENO, buf, n) < 0 && errno == EINTR)
		;
}

void lb_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(1, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void lb_warnx(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(0, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void lb_die(int status, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(1, saved, fmt, ap);
	va_end(ap);
	exit(status);
}

void lb_diex(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(0, 0, fmt, ap);
	va_end(ap);
	exit(status);
}

void lb_usage_error(const char *fmt, ...)
{
	char hint[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	emit(0, 0, fmt, ap);
	va_end(ap);
	n = snprintf(hint, sizeof hint, "Try 'lockbox %s --help'.\n", lb_prog);
	if (n > 0 && (size_t)n < sizeof hint)
		while (write(STDERR_FILENO, hint, (size_t)n) < 0 && errno == EINTR)
			;
	exit(LB_EXIT_FAIL);
}

/* A full disk or closed pipe on stdout must not pass as success. */
void lb_close_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		if (errno != EPIPE)
			lb_die(LB_EXIT_FAIL, "write error");
		exit(LB_EXIT_FAIL);
	}
}

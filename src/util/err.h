/* Diagnostics: "applet: context: reason", each message one write(2). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_ERR_H
#define LOCKBOX_ERR_H

extern const char *lb_prog;	/* the applet's name, set by main */
extern int lb_prog_linked;	/* run by a link of the applet's name, not as "lockbox APPLET" */

void lb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void lb_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void lb_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
_Noreturn void lb_diex(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
_Noreturn void lb_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/*
 * stdout's buffer written out: 0, or -1 with errno once any write to it
 * failed (a full disk, a closed pipe); the first failure sticks.
 */
int lb_flush_stdout(void);
/*
 * The exit funnel: stdout flushed and closed, once. STATUS if all of it
 * went out, else 125 (reported, unless the reader went away: EPIPE).
 * Later calls give the first call's answer.
 */
int lb_stdout_status(int status);
/*
 * stdout as new, for the next call inside a host (host.h): not closed,
 * no failure remembered. The program never needs it.
 */
void lb_stdout_reset(void);
/* lb_stdout_status, then exit 125 if stdout failed. */
void lb_close_stdout(void);

#endif

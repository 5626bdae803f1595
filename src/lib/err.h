/* Diagnostics: "applet: context: reason", each message one write(2). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_ERR_H
#define LOCKBOX_ERR_H

extern const char *lb_prog;	/* the applet's name, set by main */

void lb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void lb_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void lb_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
_Noreturn void lb_diex(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
_Noreturn void lb_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
void lb_close_stdout(void);

#endif

/* Option parsing with the house's one-line usage errors, and the signals' names messages use. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_OPTS_H
#define LOCKBOX_OPTS_H

#include <getopt.h>
#include <stdint.h>

/*
 * getopt_long for applets: SHORTOPTS must start with "+:" (stop at the
 * first positional word, so COMMAND's own options are never read; report
 * missing arguments). Returns the next option, or -1; an unknown option,
 * a missing argument or an argument given to a flag is a usage error
 * (one line, status 125). lb_getopt_reset() starts a new parse.
 */
void lb_getopt_reset(void);
int lb_getopt(int argc, char **argv, const char *shortopts,
    const struct option *longopts);

/* Option arguments every applet shares; a bad one is a usage error. */
int lb_opt_exit_code(const char *arg);			/* -E: 0 to 255 */
int64_t lb_opt_duration(const char *arg, int64_t bare_unit);	/* in ns */
int lb_opt_signal(const char *arg);	/* --on-loss: none (0), a name or a number */

/*
 * -v's word on an argument whose bare number is minutes: "WHAT ARG = ARG
 * minutes" on stderr when ARG has no unit and is not 0; nothing otherwise.
 */
void lb_say_minutes(const char *what, const char *arg);

/*
 * A signal as messages name it after "SIG": TERM for one lb_opt_signal
 * knows by name, and CONT; else its number, in a buffer of the thread's
 * own that the next call reuses.
 */
const char *lb_signal_name(int sig);
unsigned lb_opt_mode(const char *arg);	/* --mode: octal, the owner's rw in it */

/* --help: the usage line(s), then the rest, on stdout; exit 0. */
_Noreturn void lb_help(const char *usage, const char *rest);

/* --version: the package, its version and the kind of lock, on stdout; exit 0. */
_Noreturn void lb_version(void);

#endif

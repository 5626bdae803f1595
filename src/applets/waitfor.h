/* waitfor's options, read the one way for the applet and for the shell library's builtin. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_WAITFOR_H
#define LOCKBOX_WAITFOR_H

#include <stdint.h>

struct waitfor_opts {
	int64_t timeout, interval;	/* ns */
	unsigned char retry[256];	/* statuses that get another attempt */
	int listed;			/* --retry-on given */
	int quiet, verbose;
};

/*
 * waitfor's options and TIMEOUT and INTERVAL from ARGV (ARGV[0] the
 * applet's name) into O; COMMAND, the words after them. A usage error,
 * or -h, ends the run (lb_exit: inside a host, the call).
 */
char **waitfor_parse(struct waitfor_opts *o, int argc, char **argv);

/*
 * Why an attempt's STATUS is not retried, for -v: it is not on the
 * --retry-on list, or (no list) it says the command cannot succeed.
 */
const char *waitfor_not_retried(const struct waitfor_opts *o);

#endif

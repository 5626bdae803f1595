/* The exit statuses every lockbox applet shares (the table in lockbox(1)). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_EXITCODES_H
#define LOCKBOX_EXITCODES_H

enum {
	LB_EXIT_OK = 0,		/* success, or the exec'd command's own status */
	LB_EXIT_FREE = 1,	/* held: nobody holds the lock (as test(1) says false) */
	LB_EXIT_BUSY = 75,	/* lock not taken: busy, limit reached, too soon, timed out */
	LB_EXIT_FAIL = 125,	/* lockbox itself failed: usage, lock file, system error */
	LB_EXIT_NOEXEC = 126,	/* COMMAND found but cannot be executed */
	LB_EXIT_NOTFOUND = 127,	/* COMMAND not found, or unknown applet */
	LB_EXIT_SIGNAL = 128	/* plus n: a forked command was killed by signal n */
};

#endif

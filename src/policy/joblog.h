/* adaptive's transaction log: one line per event, to a file or to syslog. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_JOBLOG_H
#define LOCKBOX_JOBLOG_H

#include <stddef.h>

/*
 * Open the log: PATH (appended to, created 0666 minus the umask; a
 * regular file only, never through a final symlink), or syslog(3) when
 * USE_SYSLOG, or nothing when neither. 0, or -1 (reported).
 */
int lb_joblog_open(const char *path, int use_syslog);

/*
 * Log one event about atom NAME. File lines read
 *   2026-11-22T02:31:37Z adaptive[4242] NAME EVENT
 * with NAME's spaces, backslashes and unprintable bytes escaped as \xHH,
 * written with one write(2) to a file opened O_APPEND, so lines of
 * concurrent writers never mix; a line that the file size limit would
 * cut short is dropped, and the first failure said on stderr. PRIORITY
 * is a syslog(3) level.
 */
void lb_joblog(int priority, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Escape S for a log line into BUF (SIZE at least 8): backslashes,
 * unprintable bytes and, unless KEEP_SPACES, spaces become \xHH.
 */
const char *lb_joblog_escape(const char *s, int keep_spaces, char *buf, size_t size);

void lb_joblog_close(void);

#endif

/* Running COMMAND in place, with timeout(1)'s 126/127 convention on failure. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_EXEC_H
#define LOCKBOX_EXEC_H

#include <sys/types.h>

/*
 * Once, at start: SIGXFSZ ignored, so that a file size limit (ulimit -f)
 * makes lockbox's own writes fail with EFBIG, which is reported, rather
 * than kill it; the disposition it was started with is kept.
 */
void lb_exec_setup(void);

/*
 * Whether the file size limit (RLIMIT_FSIZE, ulimit -f) lets bytes up to
 * END be written; else 0 with errno EFBIG. The kernel would cut a write
 * that crosses the limit short, leaving half a record, header or log line,
 * so such a write is never started.
 */
int lb_fsize_fits(off_t end);

/*
 * Before any exec: SIGXFSZ back as lockbox was started with it (the
 * command gets the usual behaviour). lb_exec does it.
 */
void lb_exec_restore(void);

/*
 * Whether NAME is a command execvp(3) would find: a regular file we may
 * execute, at NAME when it has a '/', else in a directory of PATH.
 */
int lb_exec_found(const char *name);

/*
 * Whether DIR is one of PATH's directories (the same directory, however
 * named: /bin and /usr/bin are one where /bin links to usr/bin). "." and
 * empty entries, the current directory whichever it is, are not counted.
 */
int lb_exec_path_dir(const char *dir);

/*
 * The status for a command that cannot run, by the exec's errno: 127
 * not found (ENOENT), 126 found but not runnable; never the command's own.
 */
int lb_child_exec_status(int exec_errno);

/* execvp(argv[0], argv); on failure reports and exits 127 (not found) or 126. */
_Noreturn void lb_exec(char *const argv[]);

#endif

/* Running COMMAND in place, with timeout(1)'s 126/127 convention on failure. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_EXEC_H
#define LOCKBOX_EXEC_H

/* execvp(argv[0], argv); on failure reports and exits 127 (not found) or 126. */
_Noreturn void lb_exec(char *const argv[]);

/* The same, first writing the exec's errno to FD (a close-on-exec pipe). */
_Noreturn void lb_exec_report(char *const argv[], int fd);

#endif

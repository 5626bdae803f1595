/* The fcntl byte-range lock primitives (lockprim.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKPRIM_H
#define LOCKBOX_LOCKPRIM_H

#include <fcntl.h>
#include <sys/types.h>

/*
 * fcntl byte-range locks: open-file-description locks where the kernel has
 * them, classic per-process POSIX locks otherwise. TYPE is F_RDLCK, F_WRLCK
 * or F_UNLCK; LEN 0 means "to the end of any file". lb_lock_try returns 1
 * (done), 0 (busy; errno kept), -1 (error). lb_lock_block waits in the
 * kernel until the lock is granted (0) or a signal interrupts it (-1,
 * EINTR); waiting with a deadline is the door's, await.h.
 */
int lb_lock_try(int fd, short type, off_t start, off_t len);
int lb_lock_block(int fd, short type, off_t start, off_t len);

/*
 * Who blocks a lock of TYPE on the range: 1 when nobody, 0 when someone
 * does (*conflict describes that lock), -1 on error. Never blocks.
 */
int lb_lock_test(int fd, short type, off_t start, off_t len, struct flock *conflict);

/*
 * lb_lock_try with a classic POSIX lock, in every build: the calling
 * process's, named by the kernel, gone with it or with its first close
 * of any descriptor of the file.
 */
int lb_lock_try_process(int fd, short type, off_t start, off_t len);

#endif

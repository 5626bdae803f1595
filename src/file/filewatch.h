/* The maximum hold of a lock file's holder: its watcher, which gives the lock back through the holder's open file (filewatch.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_FILEWATCH_H
#define LOCKBOX_FILEWATCH_H

#include <stdint.h>

#include "pool.h"

/*
 * Start and arm the watcher of POOL's lock, held by this process (the
 * command-to-be, WHO) through descriptor FD, which the command inherits:
 * HOLD ns after the lock was taken it tells the job (SIG; 0: nothing is
 * sent) and releases the lock through that open file. 0, or -1 (reported).
 */
int lb_filewatch_start(struct lb_pool *pool, int fd, const struct lb_ident *who, int sig,
    int64_t hold);

#endif

/* Where adaptive's state lives: its directory, trusting it and its files, atom file names and URLs. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_STATEDIR_H
#define LOCKBOX_STATEDIR_H

#include <sys/types.h>

#include "pool.h"

/* The slot of an atom's lock: one run at a time. */
#define LB_ATOM_SLOT 1

/* A "/" B, with no doubled '/'; dies when out of memory. */
char *lb_path_join(const char *a, const char *b);

/*
 * The state directory, or a PostgreSQL URL: OPT_DIR (-d) when not NULL,
 * else $LOCKBOX_DIR, else /var/lib/lockbox for root, else the XDG state
 * home's. Allocated; dies when there is none.
 */
char *lb_state_dir(const char *opt_dir);

/* mkdir -p, each new directory with MODE. 0, or -1 (reported). */
int lb_make_dirs(char *dir, mode_t mode);

/*
 * Open the state directory DIR if it can be trusted: its fd, with *SHARED
 * set for a sticky directory others may write to (whose files
 * lb_state_file_check must then vouch for), or -1 (refused, reported).
 */
int lb_state_dir_open(const char *dir, int *shared);

/*
 * In a shared sticky directory: the file POOL opened as PATH is the one
 * there, and ours or root's. MISSING_OK: no file there is no file to
 * refuse. 0, or -1 (refused, reported).
 */
int lb_state_file_check(struct lb_pool *pool, const char *path, int dirfd, int missing_ok);

/* The target of atom NAME in DIR: its state file, or its URL with lock=NAME. */
char *lb_atom_path(const char *dir, const char *name);

/* NAME's length, or a usage error. */
void lb_atom_check_name(const char *name);

/* Whether a directory entry is named as lb_atom_path names state files. */
int lb_atom_file_name(const char *s);

#endif

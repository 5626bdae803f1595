/* adaptive's two front ends: a run (adaptive.c) and status (adaptive_status.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_ADAPTIVE_H
#define LOCKBOX_ADAPTIVE_H

/*
 * 'adaptive status': the atoms named in ARGV (all of the state directory
 * or database DIR's when ARGC is 0), as text or JSON, on standard output.
 * DIR is freed. An exit status.
 */
int adaptive_status(char *dir, int json, int argc, char **argv);

#endif

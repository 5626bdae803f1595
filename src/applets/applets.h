/* Every applet's entry point (adaptive.c, locks.c, mutex.c, slots.c, waitfor.c), for the table in main.c. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_APPLETS_H
#define LOCKBOX_APPLETS_H

int adaptive_main(int argc, char **argv);
int locks_main(int argc, char **argv);
int mutex_main(int argc, char **argv);
int slots_main(int argc, char **argv);
int waitfor_main(int argc, char **argv);

#endif

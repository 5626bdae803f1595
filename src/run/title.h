/* What a waiting process or a watcher shows as its own command line, for list and ps to name it by. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_TITLE_H
#define LOCKBOX_TITLE_H

/*
 * A waiter of the queue (slots -w, mutex -w, acquire -w) is a lockbox
 * process whose own name says nothing of the job it waits for. While it
 * waits it writes the record it will hold the slot with (the command's
 * name, or with --record-args its words) into its own command line, as
 * setproctitle(3) does: /proc/PID/cmdline reads "ARGV0", "waiting:",
 * "RECORD", three words, and list shows RECORD (proc.c). The room is that
 * of the arguments the process was started with; a longer record is cut.
 */
#define LB_TITLE_WAITING	"waiting:"

/*
 * At the start of main, before anything reads ARGV: its strings move to
 * memory of our own (ARGV points there after), so that the kernel's
 * argument area can be written. Nothing is done for an area that is not
 * one run of strings.
 */
void lb_title_init(int argc, char **argv);

/* While waiting: the command line reads ARGV0, "waiting:", RECORD. */
void lb_title_waiting(const char *record);

/*
 * A process of lockbox's own that runs beside a command (a watcher, see
 * watcher.h) is named by what it does, not by the command line it was
 * forked with, which names the command's lock as the command's own did:
 * the command line reads TEXT alone, cut to the room there is.
 */
void lb_title_set(const char *text);

/* The command line as it was started. */
void lb_title_restore(void);

#endif

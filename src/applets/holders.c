/* How slots, mutex and locks show holders and waiters: list's table and its JSON. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stdio.h>

#include "clock.h"
#include "json.h"
#include "parse.h"
#include "pool.h"
#include "proc.h"
#include "slots.h"

/* 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st... */
const char *poolcmd_ordinal(unsigned n)
{
	return n % 100 >= 11 && n % 100 <= 13 ? "th" : n % 10 == 1 ? "st" :
	    n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* A command with a newline or escape in it must not break the table. */
static void print_text(const char *s)
{
	for (; *s != '\0'; s++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
	putchar('\n');
}

/*
 * Another program's lock: "-  4242  ?  another program: python3" (the
 * slot when it locks just one; its age is not known).
 */
static void print_foreign(const struct lb_holder *x)
{
	char slot[16] = "-", pid[16] = "?";

	if (x->slot != 0)
		snprintf(slot, sizeof slot, "%u", x->slot);
	if (x->who.pid != 0)
		snprintf(pid, sizeof pid, "%d", (int)x->who.pid);
	printf("%-5s %-8s %-7s another program%s", slot, pid, "?",
	    x->in_queue ? ", in the wait queue" : "");
	if (x->who.pid != 0 && x->who.command[0] != '\0') {
		printf(": ");
		print_text(x->who.command);
	} else {
		putchar('\n');
	}
}

/* Another program's lock after its "slot": {"slot":null,"pid":4242,"foreign":true,"lock":"write","start":0,"end":null,"command":"python3"} */
static void print_foreign_json(struct lb_json *j, const struct lb_holder *x)
{
	lb_json_key(j, "pid");
	if (x->who.pid != 0)
		lb_json_int(j, (int)x->who.pid);
	else
		lb_json_null(j);
	lb_json_key(j, "foreign");
	lb_json_bool(j, 1);
	if (x->in_queue) {
		lb_json_key(j, "in_queue");
		lb_json_bool(j, 1);
	}
	lb_json_key(j, "lock");
	lb_json_string(j, x->foreign_write ? "write" : "read");
	lb_json_key(j, "start");
	lb_json_int(j, x->lock_lo);
	lb_json_key(j, "end");
	if (x->lock_hi < 0)
		lb_json_null(j);
	else
		lb_json_int(j, x->lock_hi);
	lb_json_key(j, "command");
	lb_json_string(j, x->who.pid != 0 ? x->who.command : NULL);
}

/*
 * What the COMMAND column says of a holder or waiter before its command,
 * as it does of another program's lock: "shared", "exited, kept by PID
 * 4250", "waiting 2nd, stopped, shared"; "" for a plain holder.
 */
void poolcmd_annotation(const struct lb_holder *x, char *buf, size_t size)
{
	size_t n = 0;
	int r;

	buf[0] = '\0';
	if (x->waiting) {
		r = snprintf(buf, size, "waiting %u%s%s", x->queue, poolcmd_ordinal(x->queue),
		    x->stopped ? ", stopped" : "");
		n = r > 0 ? (size_t)r : 0;
	} else if (x->gone && x->keeper > 0) {
		r = snprintf(buf, size, "exited, kept by PID %d", (int)x->keeper);
		n = r > 0 ? (size_t)r : 0;
	} else if (x->gone) {
		r = snprintf(buf, size, "exited, kept by its children");
		n = r > 0 ? (size_t)r : 0;
	}
	if (x->shared && n < size)
		snprintf(buf + n, size - n, "%sshared", n ? ", " : "");
}

/* A row's first columns: SLOT ("-" for none), PID, AGE. */
static void print_start(const struct lb_holder *x)
{
	char slot[16] = "-", age[32];

	if (x->slot != 0)
		snprintf(slot, sizeof slot, "%u", x->slot);
	/*
	 * a process gone before we looked, with no record of its own, or a
	 * server's holder whose start the role may not read: its age is not known
	 */
	printf("%-5s %-8d %-7s ", slot, (int)x->who.pid,
	    (x->gone && x->who.starttime == 0) || x->age_unknown ? "?" :
	    lb_format_duration(lb_ident_age(&x->who), age));
}

/* HOSTS: the holders may be on any host (a server's), and a HOST column says which. */
static void print_rows(int hosts, const struct lb_holders *h)
{
	char note[96];
	size_t i;

	for (i = 0; i < h->n; i++) {
		const struct lb_holder *x = &h->v[i];

		if (x->foreign) {
			print_foreign(x);
		} else if (x->known) {
			print_start(x);
			if (hosts)
				printf("%-16s ", x->who.host);
			poolcmd_annotation(x, note, sizeof note);
			if (note[0] != '\0')
				printf("%s: ", note);
			print_text(x->who.command);
		} else if (x->waiting) {
			/* a waiter whose mark the table does not show (an older lockbox's) */
			poolcmd_annotation(x, note, sizeof note);
			if (hosts)
				printf("%-5s %-8s %-7s %-16s %s: ?\n", "-", "?", "?", "?", note);
			else
				printf("%-5s %-8s %-7s %s: ?\n", "-", "?", "?", note);
		} else if (hosts) {
			printf("%-5u %-8s %-7s %-16s %s\n", x->slot, "?", "?", "?", "?");
		} else {
			printf("%-5u %-8s %-7s %s\n", x->slot, "?", "?", "?");
		}
	}
}

/* A waiter's or holder's members after "slot" and "pid", its PID known. */
static void print_known_json(struct lb_json *j, const struct lb_holder *x)
{
	/* gone before we looked, with no record of its own: nothing but its PID */
	int gone = x->gone && x->who.starttime == 0, no_age = gone || x->age_unknown;

	if (x->waiting) {
		lb_json_key(j, "waited_seconds");
		lb_json_seconds(j, lb_ident_age(&x->who));
		lb_json_key(j, "stopped");
		lb_json_bool(j, x->stopped);
	} else {
		lb_json_key(j, "uid");
		if (gone)
			lb_json_null(j);
		else
			lb_json_int(j, x->who.uid);
		lb_json_key(j, "age_seconds");
		if (no_age)
			lb_json_null(j);
		else
			lb_json_seconds(j, lb_ident_age(&x->who));
		lb_json_key(j, "started");
		if (no_age)
			lb_json_null(j);
		else
			lb_json_int(j, (long long)(x->who.wall_ns / LB_NS_PER_S));
		lb_json_key(j, "host");
		lb_json_string(j, x->who.host);
	}
	lb_json_key(j, "command");
	lb_json_string(j, x->who.command);
	lb_json_key(j, "mode");
	lb_json_string(j, x->shared ? "shared" : "exclusive");
	if (!x->waiting && x->gone) {
		lb_json_key(j, "exited");
		lb_json_bool(j, 1);
		lb_json_key(j, "kept_by");
		if (x->keeper > 0)
			lb_json_int(j, (int)x->keeper);
		else
			lb_json_null(j);
	}
}

/* One holder or waiter in JSON. */
static void print_json(struct lb_json *j, const struct lb_holder *x)
{
	lb_json_begin_object(j);
	lb_json_key(j, "slot");
	if (x->slot != 0)
		lb_json_int(j, x->slot);
	else
		lb_json_null(j);
	if (x->foreign) {
		print_foreign_json(j, x);
		lb_json_end_object(j);
		return;
	}
	if (x->waiting) {
		lb_json_key(j, "waiting");
		lb_json_bool(j, 1);
		lb_json_key(j, "queue");
		lb_json_int(j, x->queue);
	}
	lb_json_key(j, "pid");
	if (x->known) {
		lb_json_int(j, (int)x->who.pid);
		print_known_json(j, x);
	} else {
		lb_json_null(j);
	}
	lb_json_end_object(j);
}

/* The holders, then those who wait (W, NULL for none), in their order. */
void poolcmd_print_list(int json, int hosts, const struct lb_holders *h,
    const struct lb_holders *w)
{
	struct lb_json j;
	size_t i;

	if (!json) {
		if (hosts)
			printf("%-5s %-8s %-7s %-16s %s\n", "SLOT", "PID", "AGE", "HOST", "COMMAND");
		else
			printf("%-5s %-8s %-7s %s\n", "SLOT", "PID", "AGE", "COMMAND");
		print_rows(hosts, h);
		if (w != NULL)
			print_rows(hosts, w);
		return;
	}
	lb_json_start(&j, stdout);
	lb_json_begin_array(&j);
	for (i = 0; i < h->n; i++)
		print_json(&j, &h->v[i]);
	for (i = 0; w != NULL && i < w->n; i++)
		print_json(&j, &w->v[i]);
	lb_json_end_array(&j);
	putchar('\n');
}

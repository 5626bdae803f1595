/* Every row and sentence about a holder or waiter, for every applet: list's table and JSON, the busy message, -v's status line, adaptive's "already running". */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "holders.h"
#include "json.h"
#include "parse.h"
#include "pool.h"
#include "proc.h"

/* "st", "nd", "rd" or "th": the suffix of N's ordinal (1st, 12th, 13th, 21st, 23rd) */
static const char *ordinal(unsigned n)
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
	char slot[16] = "-", pid[16] = "?", note[96];

	if (x->slot != 0)
		snprintf(slot, sizeof slot, "%u", x->slot);
	if (x->who.pid != 0)
		snprintf(pid, sizeof pid, "%d", (int)x->who.pid);
	poolcmd_annotation(x, note, sizeof note);
	printf("%-5s %-8s %-7s %s", slot, pid, "?", note);
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
 * or of another program's lock: "shared", "exited, kept by PID 4250",
 * "waiting 2nd, stopped, shared", "another program, in the wait queue";
 * "" for a plain holder.
 */
void poolcmd_annotation(const struct lb_holder *x, char *buf, size_t size)
{
	size_t n = 0;
	int r;

	buf[0] = '\0';
	if (lb_holder_kind(x) == LB_HOLDER_FOREIGN) {
		snprintf(buf, size, "another program%s", x->in_queue ? ", in the wait queue" : "");
		return;
	}
	if (lb_holder_kind(x) == LB_HOLDER_WAITER) {
		r = snprintf(buf, size, "waiting %u%s%s", x->queue, ordinal(x->queue),
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

/*
 * The bytes of a lock nobody was found holding, as a busy message says
 * what it knows of it: "a read lock on bytes 0-4095".
 */
static void unfound_lock(char *buf, size_t size, const struct lb_holder *x)
{
	const char *kind = x->foreign_write ? "write" : "read";

	if (x->lock_hi < 0)
		snprintf(buf, size, "a %s lock on bytes %lld to the end", kind, x->lock_lo);
	else if (x->lock_hi == x->lock_lo)
		snprintf(buf, size, "a %s lock on byte %lld", kind, x->lock_lo);
	else
		snprintf(buf, size, "a %s lock on bytes %lld-%lld", kind, x->lock_lo, x->lock_hi);
}

/*
 * H's processes one after another in MSG, each as ONE says it: "PID 4242
 * (python3), PID 4250", the first eight and "...".
 */
static void list_holders(char *msg, size_t size, const struct lb_holders *h,
    void (*one)(char *, size_t, const struct lb_holder *))
{
	char item[512];
	size_t i, n = 0;
	int r;

	msg[0] = '\0';
	for (i = 0; i < h->n && n < size - 16; i++) {
		if (i == 8) {
			r = snprintf(msg + n, size - n, ", ...");
			n += r > 0 ? (size_t)r : 0;
			break;
		}
		one(item, sizeof item, &h->v[i]);
		r = snprintf(msg + n, size - n, "%s%s", i ? ", " : "", item);
		n += r > 0 ? (size_t)r : 0;
	}
}

/* Another program's process, as the kernel names it; one not found by its lock. */
static void foreign_item(char *buf, size_t size, const struct lb_holder *x)
{
	char lock[96];

	if (x->who.pid == 0) {
		unfound_lock(lock, sizeof lock, x);
		snprintf(buf, size, "PID ? (not found%s: %s)",
		    lb_pool_lookup_short() ? " in time" : "", lock);
	} else if (x->who.command[0] == '\0') {
		snprintf(buf, size, "PID %d", (int)x->who.pid);
	} else {
		snprintf(buf, size, "PID %d (%s)", (int)x->who.pid, x->who.command);
	}
}

/* A holder among others: its PID, "?" when not known, and whose lock it is. */
static void busy_item(char *buf, size_t size, const struct lb_holder *x)
{
	if (x->foreign && x->who.pid != 0)
		snprintf(buf, size, "%d (another program)", (int)x->who.pid);
	else if (x->foreign)
		snprintf(buf, size, "? (another program)");
	else if (x->known)
		snprintf(buf, size, "%d", (int)x->who.pid);
	else
		snprintf(buf, size, "?");
}

/*
 * A holder's command and age, as a sentence names it: "backup.sh, 3m12s",
 * "backup.sh, age unknown".
 */
static void command_age(char *buf, size_t size, const struct lb_holder *x)
{
	char age[32];

	snprintf(buf, size, "%s, %s", x->who.command, x->age_unknown ? "age unknown" :
	    lb_format_duration(lb_ident_age(&x->who), age));
}

/*
 * The one holder of a mutex: "held by PID 4242 (backup.sh, 3m12s)", on a
 * host when HOSTS (a server's holders may be on any), shared or not; and
 * when that process has exited and the lock lives on in the children
 * that inherited it, that it has, and which one holds on.
 */
static void report_holder(const char *name, const char *waited, int hosts,
    const struct lb_holder *x)
{
	struct lb_ident keeper;
	char gone[LB_COMMAND_MAX + 96] = "", what[LB_COMMAND_MAX + 48];

	if (x->who.command[0] != '\0') {
		command_age(what, sizeof what, x);
		if (x->shared)
			snprintf(what + strlen(what), sizeof what - strlen(what), ", shared");
	} else {
		snprintf(what, sizeof what, "%s", x->shared ? "shared" : "?");
	}
	if (x->gone && x->keeper > 0) {
		lb_ident_fill(&keeper, x->keeper, NULL, 0);
		snprintf(gone, sizeof gone, ", which has exited: its children keep the lock (PID %d, %s)",
		    (int)x->keeper, keeper.command);
	} else if (x->gone) {
		snprintf(gone, sizeof gone, ", which has exited: its children keep the lock");
	}
	lb_warnx("%s: %sheld by PID %d%s%s (%s)%s", name, waited, (int)x->who.pid,
	    hosts ? " on " : "", hosts ? x->who.host : "", what, gone);
}

void poolcmd_report_busy(const char *name, int mutex, int64_t wait, unsigned max,
    const struct lb_holders *h, const struct lb_pool *pool)
{
	const char *why;
	int at_once, hosts = (lb_pool_caps(pool) & LB_POOL_HOSTS) != 0;
	char msg[512], age[32], waited[48] = "";
	size_t i, foreign = 0, named = 0;

	if (wait > 0)
		snprintf(waited, sizeof waited, "timed out after %s; ",
		    lb_format_duration_ms(wait, age));
	why = lb_pool_why(pool, &at_once);
	if (why != NULL) {	/* not the holders: the backend says what */
		lb_warnx("%s: %s%s", name, at_once ? "" : waited, why);
		return;
	}
	if (h->n == 0) {	/* the header itself stayed locked */
		lb_warnx("%s: %sthe lock file's header stayed locked", name, waited);
		return;
	}
	for (i = 0; i < h->n; i++) {
		foreign += h->v[i].foreign != 0;
		named += h->v[i].who.pid != 0;
	}
	/* nobody named by the look a refusal makes: the host's view names them, on request */
	if (named == 0) {
		lb_warnx("%s: %s%s by another program; 'lockbox locks %s' shows who", name, waited,
		    foreign == h->n ? "locked" : "held", name);
		return;
	}
	if (foreign == h->n) {
		list_holders(msg, sizeof msg, h, foreign_item);
		lb_warnx("%s: %slocked by another program: %s", name, waited, msg);
		return;
	}
	if (mutex && h->n == 1 && h->v[0].known) {
		report_holder(name, waited, hosts, &h->v[0]);
		return;
	}
	list_holders(msg, sizeof msg, h, busy_item);
	if (max == 1)
		lb_warnx("%s: %sheld (PID%s %s)", name, waited, h->n == 1 ? "" : "s", msg);
	else
		lb_warnx("%s: %sall %u slots busy (PID%s %s)", name, waited, max,
		    h->n == 1 ? "" : "s", msg);
}

/*
 * "mutex: F: waiting 12s, 3rd in the queue, held by PID 4242 (backup, 3m12s)",
 * written over itself: cut to the terminal's width, so that a carriage
 * return brings the cursor back to its start.
 */
void poolcmd_status_line(void *arg, const struct lb_progress *pr)
{
	struct poolcmd_status *sl = arg;
	struct winsize ws;
	char line[512], waited[32], place[48] = "", holder[LB_COMMAND_MAX + 96] = "";
	char what[LB_COMMAND_MAX + 48];
	size_t cols = 80, n;
	int r;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		cols = ws.ws_col;
	if (pr->place == 1)
		snprintf(place, sizeof place, ", next in line");
	else if (pr->place > 1)
		snprintf(place, sizeof place, ", %u%s in the queue", pr->place, ordinal(pr->place));
	if (pr->holder != NULL && pr->holder->who.command[0] != '\0') {
		command_age(what, sizeof what, pr->holder);
		snprintf(holder, sizeof holder, ", held by PID %d (%s)", (int)pr->holder->who.pid,
		    what);
	} else if (pr->holder != NULL)
		snprintf(holder, sizeof holder, ", held by PID %d", (int)pr->holder->who.pid);
	r = snprintf(line, sizeof line, "\r%s: %s: waiting %s%s%s", lb_prog, sl->name,
	    lb_format_duration(lb_now(CLOCK_MONOTONIC) - sl->start, waited), place, holder);
	n = r < 0 ? 0 : (size_t)r < sizeof line ? (size_t)r : sizeof line - 1;
	if (n > cols)
		n = cols;	/* the \r and cols - 1 characters */
	/* the rest of a longer line before it goes */
	if (n + 3 < sizeof line) {
		memcpy(line + n, "\033[K", 3);
		n += 3;
	}
	if (write(STDERR_FILENO, line, n) > 0)
		sl->shown = 1;
}

void poolcmd_report_running(const char *name, const struct lb_holder *x, const char *age)
{
	char host[LB_HOST_MAX + 8] = "", myhost[LB_HOST_MAX];

	if (x == NULL) {
		lb_warnx("%s: already running (PID ?, held without a record)", name);
		return;
	}
	if (gethostname(myhost, sizeof myhost - 1) == 0 && x->who.host[0] != '\0') {
		myhost[sizeof myhost - 1] = '\0';
		if (strcmp(myhost, x->who.host) != 0)
			snprintf(host, sizeof host, " on %s", x->who.host);
	}
	lb_warnx("%s: already running (PID %d%s, %s)", name, (int)x->who.pid, host, age);
}

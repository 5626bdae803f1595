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
#include "table.h"

/* "st", "nd", "rd" or "th": the suffix of N's ordinal (1st, 12th, 13th, 21st, 23rd) */
static const char *ordinal(unsigned n)
{
	return n % 100 >= 11 && n % 100 <= 13 ? "th" : n % 10 == 1 ? "st" :
	    n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/*
 * What the COMMAND column says of a holder or waiter before its command,
 * or of another program's lock: "shared", "exited, kept by PID 4250
 * (sleep)", "waiting 2nd, stopped, shared", "another program, in the wait
 * queue", "watcher PID 4251"; "" for a plain holder.
 */
void poolcmd_annotation(const struct lb_holder *x, char *buf, size_t size)
{
	char keeper[LB_COMMAND_MAX];
	size_t n = 0;
	int r = 0;

	buf[0] = '\0';
	if (lb_holder_kind(x) == LB_HOLDER_FOREIGN) {
		snprintf(buf, size, "another program%s", x->in_queue ? ", in the wait queue" : "");
		return;
	}
	if (lb_holder_kind(x) == LB_HOLDER_WAITER) {
		r = snprintf(buf, size, "waiting %u%s%s", x->queue, ordinal(x->queue),
		    x->stopped ? ", stopped" : "");
	} else if (x->gone && x->keeper > 0) {
		/* a person's look: the keeper's name is read once, here */
		lb_proc_name(x->keeper, keeper, sizeof keeper);
		r = keeper[0] != '\0' ?
		    snprintf(buf, size, "exited, kept by PID %d (%s)", (int)x->keeper, keeper) :
		    snprintf(buf, size, "exited, kept by PID %d", (int)x->keeper);
	} else if (x->gone) {
		r = snprintf(buf, size, "exited, kept by a process not found");
	}
	n = r > 0 && (size_t)r < size ? (size_t)r : n;
	if (x->shared && n < size) {
		r = snprintf(buf + n, size - n, "%sshared", n ? ", " : "");
		n = r > 0 && n + (size_t)r < size ? n + (size_t)r : n;
	}
	if (x->watcher > 0 && n < size)
		snprintf(buf + n, size - n, "%swatcher PID %d", n ? ", " : "", (int)x->watcher);
}

void poolcmd_holder_row(const struct lb_holder *x, struct poolcmd_row *r)
{
	memset(r, 0, sizeof *r);
	r->slot = x->slot;
	poolcmd_annotation(x, r->note, sizeof r->note);
	if (x->foreign) {
		r->pid = x->who.pid;
		r->command = x->who.pid > 0 ? x->who.command : NULL;
		return;
	}
	if (!x->known)
		return;
	r->pid = x->who.pid;
	r->command = x->who.command;
	/*
	 * a process gone before we looked, with no record of its own, or a
	 * server's holder whose start the role may not read: its age is not known
	 */
	r->aged = !((x->gone && x->who.starttime == 0) || x->age_unknown);
	r->age = lb_ident_age(&x->who);
}

/* list's columns: those of its text, then its JSON's members, in their order. */
enum {
	L_SLOT, L_PID, L_AGE, L_HOST, L_COMMAND,
	J_SLOT, J_WAITING, J_QUEUE, J_PID, J_FOREIGN, J_IN_QUEUE, J_LOCK, J_START, J_END,
	J_WAITED, J_STOPPED, J_UID, J_AGE, J_STARTED, J_HOST, J_COMMAND, J_MODE, J_WATCHER,
	J_EXITED, J_KEPT_BY, L_COUNT
};

#define TEXT(name, width)	{ name, LB_COL_TEXT, 0, 0, NULL, NULL, LB_COL_TEXT_ONLY, width }
#define JSON(key, kind)		{ key, kind, 0, 0, NULL, key, LB_COL_JSON_ONLY, 0 }

static const struct lb_table_col list_columns[L_COUNT] = {
	[L_SLOT] = TEXT("SLOT", 5),
	[L_PID] = TEXT("PID", 8),
	[L_AGE] = TEXT("AGE", 7),
	[L_HOST] = TEXT("HOST", 16),
	[L_COMMAND] = TEXT("COMMAND", 0),
	[J_SLOT] = JSON("slot", LB_COL_NUM),
	[J_WAITING] = JSON("waiting", LB_COL_BOOL),
	[J_QUEUE] = JSON("queue", LB_COL_NUM),
	[J_PID] = JSON("pid", LB_COL_NUM),
	[J_FOREIGN] = JSON("foreign", LB_COL_BOOL),
	[J_IN_QUEUE] = JSON("in_queue", LB_COL_BOOL),
	[J_LOCK] = JSON("lock", LB_COL_TEXT),
	[J_START] = JSON("start", LB_COL_NUM),
	[J_END] = JSON("end", LB_COL_NUM),
	[J_WAITED] = JSON("waited_seconds", LB_COL_SECONDS),
	[J_STOPPED] = JSON("stopped", LB_COL_BOOL),
	[J_UID] = JSON("uid", LB_COL_NUM),
	[J_AGE] = JSON("age_seconds", LB_COL_SECONDS),
	[J_STARTED] = JSON("started", LB_COL_NUM),
	[J_HOST] = JSON("host", LB_COL_TEXT),
	[J_COMMAND] = JSON("command", LB_COL_TEXT),
	[J_MODE] = JSON("mode", LB_COL_TEXT),
	[J_WATCHER] = JSON("watcher", LB_COL_NUM),
	[J_EXITED] = JSON("exited", LB_COL_BOOL),
	[J_KEPT_BY] = JSON("kept_by", LB_COL_NUM),
};

/* X's text cells: SLOT ("-": none), PID, AGE, HOST and COMMAND ("NOTE: COMMAND"). */
static int text_cells(struct lb_table_cell *c, const struct lb_holder *x,
    const struct poolcmd_row *r)
{
	char age[32];
	int rc = 0;

	rc |= r->slot != 0 ? lb_table_putf(&c[L_SLOT], "%u", r->slot) : lb_table_put(&c[L_SLOT], "-");
	rc |= r->pid != 0 ? lb_table_putf(&c[L_PID], "%d", (int)r->pid) : lb_table_put(&c[L_PID], "?");
	rc |= lb_table_put(&c[L_AGE], r->aged ? lb_format_duration(r->age, age) : "?");
	rc |= lb_table_put(&c[L_HOST], x->known && !x->foreign ? x->who.host : "?");
	if (!x->known && !x->foreign)	/* no record: a waiter an older lockbox marked, or a slot */
		return rc | (x->waiting ? lb_table_setf(&c[L_COMMAND], "%s: ?", r->note) :
		    lb_table_put(&c[L_COMMAND], "?"));
	if (r->note[0] != '\0' && r->command != NULL && r->command[0] != '\0')
		return rc | lb_table_setf(&c[L_COMMAND], "%s: %s", r->note, r->command);
	return rc | lb_table_put(&c[L_COMMAND], r->note[0] != '\0' ? r->note : r->command);
}

/* X's members in JSON, omitted cells those its kind has not. */
static int json_cells(struct lb_table_cell *c, const struct lb_holder *x,
    const struct poolcmd_row *r)
{
	/* gone before we looked, with no record of its own: nothing but its PID */
	int gone = x->gone && x->who.starttime == 0, rc = 0;

	rc |= x->slot != 0 ? lb_table_putf(&c[J_SLOT], "%u", x->slot) : lb_table_put(&c[J_SLOT], NULL);
	if (x->foreign) {
		rc |= x->who.pid != 0 ? lb_table_putf(&c[J_PID], "%d", (int)x->who.pid) : lb_table_put(&c[J_PID], NULL);
		rc |= lb_table_put(&c[J_FOREIGN], "1");
		if (x->in_queue)
			rc |= lb_table_put(&c[J_IN_QUEUE], "1");
		rc |= lb_table_put(&c[J_LOCK], x->foreign_write ? "write" : "read");
		rc |= lb_table_putf(&c[J_START], "%lld", x->lock_lo);
		rc |= x->lock_hi < 0 ? lb_table_put(&c[J_END], NULL) : lb_table_putf(&c[J_END], "%lld", x->lock_hi);
		return rc | lb_table_put(&c[J_COMMAND], r->command);
	}
	if (x->waiting) {
		rc |= lb_table_put(&c[J_WAITING], "1");
		rc |= lb_table_putf(&c[J_QUEUE], "%u", x->queue);
	}
	if (!x->known)
		return rc | lb_table_put(&c[J_PID], NULL);
	rc |= lb_table_putf(&c[J_PID], "%d", (int)x->who.pid);
	if (x->waiting) {
		rc |= lb_table_put(&c[J_WAITED], "");
		c[J_WAITED].ns = r->age;
		rc |= lb_table_put(&c[J_STOPPED], x->stopped ? "1" : "0");
	} else {
		rc |= gone ? lb_table_put(&c[J_UID], NULL) : lb_table_putf(&c[J_UID], "%d", (int)x->who.uid);
		rc |= lb_table_put(&c[J_AGE], r->aged ? "" : NULL);
		c[J_AGE].ns = r->age;
		rc |= r->aged ? lb_table_putf(&c[J_STARTED], "%lld", (long long)(x->who.wall_ns / LB_NS_PER_S)) :
		    lb_table_put(&c[J_STARTED], NULL);
		rc |= lb_table_put(&c[J_HOST], x->who.host);
	}
	rc |= lb_table_put(&c[J_COMMAND], x->who.command);
	rc |= lb_table_put(&c[J_MODE], x->shared ? "shared" : "exclusive");
	if (x->watcher > 0)
		rc |= lb_table_putf(&c[J_WATCHER], "%d", (int)x->watcher);
	if (!x->waiting && x->gone) {
		rc |= lb_table_put(&c[J_EXITED], "1");
		rc |= x->keeper > 0 ? lb_table_putf(&c[J_KEPT_BY], "%d", (int)x->keeper) :
		    lb_table_put(&c[J_KEPT_BY], NULL);
	}
	return rc;
}

/* X as a row of list's table T. -1 out of memory. */
static int list_row(struct lb_table *t, const struct lb_holder *x)
{
	struct lb_table_cell *c = lb_table_row(t);
	struct poolcmd_row r;
	size_t i;

	if (c == NULL)
		return -1;
	for (i = 0; i < L_COUNT; i++)
		c[i].omit = 1;
	poolcmd_holder_row(x, &r);
	return text_cells(c, x, &r) | json_cells(c, x, &r);
}

/* The holders, then those who wait (W, NULL for none), in their order. */
void poolcmd_print_list(int json, int hosts, const struct lb_holders *h,
    const struct lb_holders *w)
{
	struct lb_table_col cols[L_COUNT];
	struct lb_table t = { .cols = cols, .ncols = L_COUNT, .clean = 1, .compact = 1 };
	struct lb_json j;
	size_t i;
	int rc = 0;

	memcpy(cols, list_columns, sizeof cols);
	if (!hosts)
		cols[L_HOST].only = LB_COL_HIDDEN;
	for (i = 0; rc == 0 && i < h->n; i++)
		rc = list_row(&t, &h->v[i]);
	for (i = 0; rc == 0 && w != NULL && i < w->n; i++)
		rc = list_row(&t, &w->v[i]);
	if (rc != 0)
		lb_warnx("out of memory");
	else if (!json)
		lb_table_print(&t, LB_TABLE_TEXT, 1, 0);
	else {
		lb_json_start(&j, stdout);
		lb_table_json(&t, &j, NULL);
		putchar('\n');
	}
	lb_table_free(&t);
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
 * The one holder of a pool of one: "held by PID 4242 (backup.sh, 3m12s)",
 * on a host when HOSTS (a server's holders may be on any), shared or not;
 * and when that process has exited and the lock lives on in a process
 * that shares its open file (its children, or the shell that opened the
 * descriptor it locked), that it has, and which one holds on.
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
	/* a child that inherited it or the shell that opened it: the lock does not say which */
	if (x->gone && x->keeper > 0) {
		lb_ident_fill(&keeper, x->keeper, NULL, 0);
		snprintf(gone, sizeof gone,
		    ", which has exited: PID %d (%s), which shares its open file, keeps the lock",
		    (int)x->keeper, keeper.command[0] != '\0' ? keeper.command : "?");
	} else if (x->gone) {
		snprintf(gone, sizeof gone,
		    ", which has exited: a process that shares its open file keeps the lock");
	}
	lb_warnx("%s: %sheld by PID %d%s%s (%s)%s", name, waited, (int)x->who.pid,
	    hosts ? " on " : "", hosts ? x->who.host : "", what, gone);
}

/*
 * A holder of a pool's slots, as "all 3 slots busy:" names it: "PID 311
 * (backup.sh, 3m12s)", "PID 4242 on host2 (encode, 5s, shared)", "PID 318
 * (another program: python3)", "PID ?".
 */
static void named_item(char *buf, size_t size, const struct lb_holder *x, int hosts)
{
	char what[LB_COMMAND_MAX + 48] = "", pid[16] = "?";
	int host = hosts && x->known && !x->foreign;

	if (x->who.pid != 0 && (x->known || x->foreign))
		snprintf(pid, sizeof pid, "%d", (int)x->who.pid);
	if (x->foreign && x->who.pid != 0 && x->who.command[0] != '\0') {
		snprintf(what, sizeof what, " (another program: %s)", x->who.command);
	} else if (x->foreign) {
		snprintf(what, sizeof what, " (another program)");
	} else if (x->known && x->who.command[0] != '\0') {
		command_age(what + 2, sizeof what - 3, x);
		what[0] = ' ';
		what[1] = '(';
		snprintf(what + strlen(what), sizeof what - strlen(what), "%s)",
		    x->shared ? ", shared" : "");
	}
	snprintf(buf, size, "PID %s%s%s%s", pid, host ? " on " : "", host ? x->who.host : "", what);
}

/* how many holders "all N slots busy:" names before it counts the rest */
#define BUSY_NAMED	3

/* H's holders, the first BUSY_NAMED named, then "and 5 more", in MSG. */
static void named_holders(char *msg, size_t size, const struct lb_holders *h, int hosts)
{
	char item[LB_COMMAND_MAX + LB_HOST_MAX + 96];
	size_t i, n = 0;
	int r;

	msg[0] = '\0';
	for (i = 0; i < h->n && i < BUSY_NAMED; i++) {
		named_item(item, sizeof item, &h->v[i], hosts);
		r = snprintf(msg + n, size - n, "%s%s", i ? ", " : "", item);
		n += r > 0 && n + (size_t)r < size ? (size_t)r : 0;
	}
	if (h->n > BUSY_NAMED)
		snprintf(msg + n, size - n, " and %zu more", h->n - BUSY_NAMED);
}

void poolcmd_report_busy(const char *name, int mutex, int64_t wait, unsigned max,
    const struct lb_holders *h, const struct lb_pool *pool)
{
	const char *why;
	int at_once, hosts = (lb_pool_caps(pool) & LB_POOL_HOSTS) != 0;
	char msg[3 * LB_COMMAND_MAX + 512], age[32], waited[48] = "";
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
	/* slots F 1 is mutex F: its one holder named as mutex names it */
	if ((mutex || max == 1) && h->n == 1 && h->v[0].known) {
		report_holder(name, waited, hosts, &h->v[0]);
		return;
	}
	if (max == 1) {
		list_holders(msg, sizeof msg, h, busy_item);
		lb_warnx("%s: %sheld (PID%s %s)", name, waited, h->n == 1 ? "" : "s", msg);
		return;
	}
	named_holders(msg, sizeof msg, h, hosts);
	lb_warnx("%s: %sall %u slots busy: %s", name, waited, max, msg);
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

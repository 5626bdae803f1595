/* What slots and mutex say when no slot is taken, and while they wait: the busy message and -v's status line. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "parse.h"
#include "pool.h"
#include "proc.h"
#include "slots.h"

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
 * Another program's locks only: "mutex: F: locked by another program:
 * PID 4242 (python3)", each process as the kernel names it; one not
 * found (another user's, or not found by the deadline) by its lock.
 */
static void report_foreign(const char *name, const char *waited, const struct lb_holders *h)
{
	char msg[512], lock[96];
	size_t i, n = 0;
	int r;

	msg[0] = '\0';
	for (i = 0; i < h->n && n < sizeof msg - 16; i++) {
		const struct lb_ident *w = &h->v[i].who;

		unfound_lock(lock, sizeof lock, &h->v[i]);
		if (i == 8) {
			r = snprintf(msg + n, sizeof msg - n, ", ...");
			n += r > 0 ? (size_t)r : 0;
			break;
		}
		if (w->pid == 0)
			r = snprintf(msg + n, sizeof msg - n, "%sPID ? (not found%s: %s)", i ? ", " : "",
			    lb_pool_lookup_short() ? " in time" : "", lock);
		else if (w->command[0] == '\0')
			r = snprintf(msg + n, sizeof msg - n, "%sPID %d", i ? ", " : "", (int)w->pid);
		else
			r = snprintf(msg + n, sizeof msg - n, "%sPID %d (%s)", i ? ", " : "",
			    (int)w->pid, w->command);
		n += r > 0 ? (size_t)r : 0;
	}
	lb_warnx("%s: %slocked by another program: %s", name, waited, msg);
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
	char age[32], gone[LB_COMMAND_MAX + 96] = "", what[LB_COMMAND_MAX + 48];

	if (x->who.command[0] != '\0')
		snprintf(what, sizeof what, "%s, %s%s", x->who.command, x->age_unknown ?
		    "age unknown" : lb_format_duration(lb_ident_age(&x->who), age),
		    x->shared ? ", shared" : "");
	else
		snprintf(what, sizeof what, "%s", x->shared ? "shared" : "?");
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
	size_t i, n = 0, foreign = 0;
	int r;

	if (wait > 0)
		snprintf(waited, sizeof waited, "timed out after %s; ",
		    lb_format_duration_ms(wait, age));
	why = lb_pool_why(pool, &at_once);
	if (why != NULL) {	/* not the holders: the backend says what */
		lb_warnx("%s: %s%s", name, at_once ? "" : waited, why);
		return;
	}
	if (h->n == 0) {	/* the header itself stayed locked */
		lb_warnx("%s: %sthe lock file's header stayed locked (a stopped process?)",
		    name, waited);
		return;
	}
	for (i = 0; i < h->n; i++)
		foreign += h->v[i].foreign != 0;
	if (foreign == h->n) {
		report_foreign(name, waited, h);
		return;
	}
	if (mutex && h->n == 1 && h->v[0].known) {
		report_holder(name, waited, hosts, &h->v[0]);
		return;
	}
	msg[0] = '\0';
	for (i = 0; i < h->n && n < sizeof msg - 16; i++) {
		if (i == 8) {
			r = snprintf(msg + n, sizeof msg - n, ", ...");
			n += r > 0 ? (size_t)r : 0;
			break;
		}
		if (h->v[i].foreign && h->v[i].who.pid != 0)
			r = snprintf(msg + n, sizeof msg - n, "%s%d (another program)", i ? ", " : "",
			    (int)h->v[i].who.pid);
		else if (h->v[i].foreign)
			r = snprintf(msg + n, sizeof msg - n, "%s? (another program)", i ? ", " : "");
		else if (h->v[i].known)
			r = snprintf(msg + n, sizeof msg - n, "%s%d", i ? ", " : "",
			    (int)h->v[i].who.pid);
		else
			r = snprintf(msg + n, sizeof msg - n, "%s?", i ? ", " : "");
		n += r > 0 ? (size_t)r : 0;
	}
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
	char line[512], waited[32], age[32], place[48] = "", holder[LB_COMMAND_MAX + 96] = "";
	size_t cols = 80, n;
	int r;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		cols = ws.ws_col;
	if (pr->place == 1)
		snprintf(place, sizeof place, ", next in line");
	else if (pr->place > 1)
		snprintf(place, sizeof place, ", %u%s in the queue", pr->place, poolcmd_ordinal(pr->place));
	if (pr->holder != NULL && pr->holder->who.command[0] != '\0')
		snprintf(holder, sizeof holder, ", held by PID %d (%s, %s)", (int)pr->holder->who.pid,
		    pr->holder->who.command, pr->holder->age_unknown ? "age unknown" :
		    lb_format_duration(lb_ident_age(&pr->holder->who), age));
	else if (pr->holder != NULL)
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

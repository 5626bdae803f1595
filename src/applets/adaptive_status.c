/* adaptive status: what the atoms' states say, as text or JSON. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "adaptive.h"
#include "atom.h"
#include "err.h"
#include "exitcodes.h"
#include "json.h"
#include "parse.h"
#include "pool.h"
#include "runstate.h"
#include "statedir.h"
#include "table.h"

struct view {
	char *name;
	char *path;
	char *shown;			/* PATH, any password hidden */
	struct lb_atom a;
	struct lb_atom_clock now;	/* when it was read, on the state's clocks */
	int known;			/* the file holds an atom's state */
	int running;
	struct lb_ident who;		/* the holder, when running and known */
	int who_known;
};

static const char *iso(int64_t wall_ns, char buf[32])
{
	time_t t = (time_t)(wall_ns / LB_NS_PER_S);
	struct tm tm;

	if (wall_ns <= 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, 32, "-");
	return buf;
}

/*
 * Fill V from its file; 0, or -1 (reported). A missing file is an idle
 * atom. SHARED: the state directory DIRFD is a sticky one that others
 * may write to, and the file is trusted as a run trusts it.
 */
static int look(struct view *v, int want_atom, int dirfd, int shared)
{
	unsigned char area[LB_POOL_ATOM_SIZE];
	struct lb_holders h;
	struct lb_pool *pool = lb_pool_open(v->path, LB_POOL_READ, NULL);
	const char *why;
	int r, d;

	if (pool == NULL)
		return -1;
	/* what a run would refuse is not shown as the atom's state either */
	if (shared && lb_state_file_check(pool, v->path, dirfd, 1) != 0) {
		lb_pool_close(pool);
		return -1;
	}
	v->shown = strdup(lb_pool_name(pool));
	if (v->shown == NULL)
		lb_die(LB_EXIT_FAIL, "out of memory");
	r = lb_pool_atom_read(pool, area, sizeof area, &v->now);
	if (r < 0) {
		lb_pool_close(pool);
		return -1;
	}
	d = lb_atom_decode(area, sizeof area, &v->a, &why);
	if (d < 0) {
		lb_warnx("%s: run state unreadable (%s)", v->shown, why);
	} else if (d == 1) {
		v->known = 1;
		if (v->name == NULL)
			v->name = strdup(v->a.name);
	}
	if (want_atom && !v->known) {
		lb_pool_close(pool);
		return 1;	/* not an atom's file: skipped in listings */
	}
	if (lb_pool_holders(pool, &h) == 0) {
		size_t i;

		for (i = 0; i < h.n; i++)
			if (h.v[i].slot == LB_ATOM_SLOT) {
				v->running = 1;
				v->who_known = h.v[i].known;
				v->who = h.v[i].who;
			}
		lb_holders_free(&h);
	}
	lb_pool_close(pool);
	return 0;
}

/* The holder's age, as a run of the atom would count it. */
static int64_t view_age(const struct view *v)
{
	return lb_holder_age(v->known ? &v->a : NULL, &v->now, &v->who);
}

/* The EXPIREAFTER in force, learned (into *L) or fixed, as the last start chose it. */
static int64_t expire_after(const struct view *v, struct lb_learned *l)
{
	/* a bound of 0 (forged, or never written) leaves nothing to learn under */
	if (v->known && v->a.expire_auto && v->a.expireafter > 0)
		return lb_atom_learn(&v->a, v->a.expireafter, l);
	return v->a.expireafter;
}

static int learned(const struct view *v)
{
	return v->known && v->a.expire_auto && v->a.expireafter > 0;
}

static int starving(const struct view *v)
{
	return v->known && lb_atom_expired_streak(&v->a) >= LB_STARVING;
}

static const char *state_of(const struct view *v)
{
	if (!v->running)
		return "idle";
	if (v->who_known && expire_after(v, NULL) > 0 && view_age(v) >= expire_after(v, NULL))
		return "overdue";
	return "running";
}

/* When the next run may start: after IFELAPSED, and after expiry if one runs. */
static int64_t next_run(const struct view *v)
{
	int future;
	int64_t since = v->known ? lb_atom_since_end(&v->a, &v->now, &future) : -1;
	int64_t left = 0;

	if (since >= 0 && since < v->a.ifelapsed)
		left = v->a.ifelapsed - since;
	if (v->running && v->who_known && expire_after(v, NULL) > 0) {
		int64_t x = expire_after(v, NULL) - view_age(v);

		if (x > left)
			left = x;
	}
	return left;
}

static const char *status_word(int32_t s, char buf[32])
{
	if (s == LB_STATUS_EXPIRED)
		return "expired";
	if (s < 0)
		return "unknown";
	snprintf(buf, 32, "%d", (int)s);
	return buf;
}

/* status's columns: its text's lines, then its JSON's members, in their order. */
enum {
	T_NAME, T_STATE, T_PID, T_AGE, T_START, T_END, T_STATUS, T_DURATION, T_NEXT, T_IFELAPSED,
	T_EXPIRE, T_STARVING, T_RUNS, T_FILE, T_SERVER,
	J_NAME, J_FILE, J_SERVER, J_STATE, J_PID, J_AGE, J_START, J_END, J_STATUS, J_OUTCOME,
	J_DURATION, J_NEXT, J_IFELAPSED, J_EXPIRE, J_LEARNED, J_BOUND, J_WHY, J_STARVING,
	J_STREAK, J_RUNS, J_EXPIRIES, J_MEDIAN, J_LONGEST, J_HISTORY, S_COUNT
};

#define TEXT(name)	{ name, LB_COL_TEXT, 0, 0, NULL, NULL, LB_COL_TEXT_ONLY, 0 }
#define JSON(key, kind)	{ key, kind, 0, 0, NULL, key, LB_COL_JSON_ONLY, 0 }

static const struct lb_table_col status_columns[S_COUNT] = {
	[T_NAME] = TEXT("name"), [T_STATE] = TEXT("state"), [T_PID] = TEXT("pid"),
	[T_AGE] = TEXT("age"), [T_START] = TEXT("last start"), [T_END] = TEXT("last end"),
	[T_STATUS] = TEXT("last status"), [T_DURATION] = TEXT("last duration"),
	[T_NEXT] = TEXT("next run"), [T_IFELAPSED] = TEXT("if elapsed"),
	[T_EXPIRE] = TEXT("expire after"), [T_STARVING] = TEXT("starving"),
	[T_RUNS] = TEXT("runs"), [T_FILE] = TEXT("file"), [T_SERVER] = TEXT("server"),
	[J_NAME] = JSON("name", LB_COL_TEXT),
	[J_FILE] = JSON("file", LB_COL_TEXT),
	[J_SERVER] = JSON("server", LB_COL_TEXT),
	[J_STATE] = JSON("state", LB_COL_TEXT),
	[J_PID] = JSON("pid", LB_COL_NUM),
	[J_AGE] = JSON("age_seconds", LB_COL_SECONDS),
	[J_START] = JSON("last_start", LB_COL_TEXT),
	[J_END] = JSON("last_end", LB_COL_TEXT),
	[J_STATUS] = JSON("last_status", LB_COL_NUM),
	[J_OUTCOME] = JSON("last_outcome", LB_COL_TEXT),
	[J_DURATION] = JSON("last_duration_seconds", LB_COL_SECONDS),
	[J_NEXT] = JSON("next_run_seconds", LB_COL_SECONDS),
	[J_IFELAPSED] = JSON("if_elapsed_seconds", LB_COL_SECONDS),
	[J_EXPIRE] = JSON("expire_after_seconds", LB_COL_SECONDS),
	[J_LEARNED] = JSON("expire_after_learned", LB_COL_BOOL),
	[J_BOUND] = JSON("expire_after_bound_seconds", LB_COL_SECONDS),
	[J_WHY] = JSON("expire_after_why", LB_COL_TEXT),
	[J_STARVING] = JSON("starving", LB_COL_BOOL),
	[J_STREAK] = JSON("expired_in_a_row", LB_COL_NUM),
	[J_RUNS] = JSON("runs", LB_COL_NUM),
	[J_EXPIRIES] = JSON("expiries", LB_COL_NUM),
	[J_MEDIAN] = JSON("median_duration_seconds", LB_COL_SECONDS),
	[J_LONGEST] = JSON("longest_duration_seconds", LB_COL_SECONDS),
	[J_HISTORY] = JSON("history", LB_COL_JSON),
};

/* A duration in JSON: NS in seconds, or null when not VALID. */
static int secs(struct lb_table_cell *c, int64_t ns, int valid)
{
	c->ns = ns;
	return lb_table_put(c, valid ? "" : NULL);
}

/* The lines of V's text. */
static int text_cells(struct lb_table_cell *c, const struct view *v)
{
	const struct lb_atom *a = &v->a;
	struct lb_learned l;
	char b1[32], b2[32], why[160];
	int64_t longest, median, left;
	size_t n;
	int rc = 0;

	rc |= lb_table_put(&c[T_NAME], v->name);
	rc |= lb_table_put(&c[T_STATE], state_of(v));
	if (v->running && v->who_known) {
		rc |= lb_table_putf(&c[T_PID], "%d", (int)v->who.pid);
		rc |= lb_table_put(&c[T_AGE], lb_format_duration(view_age(v), b1));
	} else {
		rc |= lb_table_put(&c[T_PID], v->running ? "?" : "-");
		rc |= lb_table_put(&c[T_AGE], "-");
	}
	if (!v->known) {
		rc |= lb_table_put(&c[T_START], "never");
	} else {
		rc |= lb_table_put(&c[T_START], iso(a->start_wall, b1));
		if (a->flags & LB_ATOM_RUNNING) {
			rc |= lb_table_put(&c[T_END], "-");
			rc |= lb_table_put(&c[T_STATUS], "-");
			rc |= lb_table_put(&c[T_DURATION], "-");
		} else {
			rc |= lb_table_put(&c[T_END], iso(lb_atom_last_end(a), b1));
			rc |= lb_table_put(&c[T_STATUS], status_word(a->status, b2));
			rc |= lb_table_put(&c[T_DURATION], a->duration >= 0 ? lb_format_duration(a->duration, b1) : "-");
		}
	}
	left = next_run(v);
	rc |= left > 0 ? lb_table_putf(&c[T_NEXT], "in %s", lb_format_duration_up(left, b1)) :
	    lb_table_put(&c[T_NEXT], "now");
	if (v->known) {
		rc |= lb_table_put(&c[T_IFELAPSED], lb_format_duration(a->ifelapsed, b1));
		if (learned(v)) {
			lb_format_duration(expire_after(v, &l), b1);
			rc |= lb_table_putf(&c[T_EXPIRE], "%s (%s)", b1, lb_learned_text(&l, why, sizeof why));
		} else {
			rc |= lb_table_put(&c[T_EXPIRE], lb_format_duration(a->expireafter, b1));
		}
		if (starving(v))
			rc |= lb_table_putf(&c[T_STARVING], "yes: the last %u runs were killed before they finished",
			    lb_atom_expired_streak(a));
		n = lb_atom_stats(a, &longest, &median);
		if (n > 0)
			rc |= lb_table_putf(&c[T_RUNS], "%u (%u expired); last %zu completed: median %s, longest %s",
			    (unsigned)a->runs, (unsigned)a->expiries, n,
			    lb_format_duration(median, b1), lb_format_duration(longest, b2));
		else
			rc |= lb_table_putf(&c[T_RUNS], "%u", (unsigned)a->runs);
	}
	return rc | lb_table_put(&c[lb_pool_target_in_fs(v->path) ? T_FILE : T_SERVER], v->shown);
}

/* The runs in the ring, oldest first, as a JSON array (malloc'd; NULL out of memory). */
static char *history(const struct lb_atom *a)
{
	struct lb_json j;
	unsigned i, k;
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (f == NULL)
		return NULL;
	lb_json_start(&j, f);
	lb_json_begin_array(&j);
	for (i = 0; i < a->nring; i++) {
		const struct lb_run *x;
		char b[32];

		k = a->nring < LB_ATOM_RING ? i : (a->ring_next + i) % LB_ATOM_RING;
		x = &a->ring[k];
		lb_json_begin_object(&j);
		lb_json_key(&j, "start");
		lb_json_string(&j, iso(x->start_wall, b));
		lb_json_key(&j, "duration_seconds");
		if (x->duration >= 0)
			lb_json_seconds(&j, x->duration);
		else
			lb_json_null(&j);
		lb_json_key(&j, "status");
		if (x->status >= 0)
			lb_json_int(&j, (int)x->status);
		else
			lb_json_string(&j, x->status == LB_STATUS_EXPIRED ? "expired" : "unknown");
		lb_json_end_object(&j);
	}
	lb_json_end_array(&j);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* V's members in JSON. */
static int json_cells(struct lb_table_cell *c, const struct view *v)
{
	const struct lb_atom *a = &v->a;
	struct lb_learned l;
	char b[32], why[160], *h;
	int64_t longest, median;
	size_t n;
	int ended = v->known && !(a->flags & LB_ATOM_RUNNING), held = v->running && v->who_known;
	int rc = 0;

	rc |= lb_table_put(&c[J_NAME], v->name);
	rc |= lb_table_put(&c[lb_pool_target_in_fs(v->path) ? J_FILE : J_SERVER], v->shown);
	rc |= lb_table_put(&c[J_STATE], state_of(v));
	rc |= held ? lb_table_putf(&c[J_PID], "%d", (int)v->who.pid) : lb_table_put(&c[J_PID], NULL);
	rc |= secs(&c[J_AGE], held ? view_age(v) : 0, held);
	rc |= lb_table_put(&c[J_START], v->known && a->start_wall > 0 ? iso(a->start_wall, b) : NULL);
	rc |= lb_table_put(&c[J_END], ended && lb_atom_last_end(a) > 0 ? iso(lb_atom_last_end(a), b) : NULL);
	if (ended && a->status >= 0) {
		rc |= lb_table_putf(&c[J_STATUS], "%d", (int)a->status);
		rc |= lb_table_put(&c[J_OUTCOME], a->status > LB_EXIT_SIGNAL && a->status < LB_EXIT_SIGNAL + 65 ?
		    "signal" : "exited");
	} else {
		rc |= lb_table_put(&c[J_STATUS], NULL);
		rc |= lb_table_put(&c[J_OUTCOME], !ended ? NULL :
		    a->status == LB_STATUS_EXPIRED ? "expired" : "unknown");
	}
	rc |= secs(&c[J_DURATION], a->duration, ended && a->duration >= 0);
	rc |= secs(&c[J_NEXT], next_run(v), 1);
	rc |= secs(&c[J_IFELAPSED], a->ifelapsed, v->known);
	rc |= secs(&c[J_EXPIRE], expire_after(v, &l), v->known);
	if (learned(v)) {
		rc |= lb_table_put(&c[J_LEARNED], l.why != LB_LEARN_FEW ? "1" : "0");
		rc |= secs(&c[J_BOUND], l.bound, 1);
		rc |= lb_table_put(&c[J_WHY], lb_learned_text(&l, why, sizeof why));
	} else {
		rc |= lb_table_put(&c[J_LEARNED], "0");
		rc |= secs(&c[J_BOUND], 0, 0);
		rc |= lb_table_put(&c[J_WHY], v->known ? "fixed" : NULL);
	}
	rc |= lb_table_put(&c[J_STARVING], starving(v) ? "1" : "0");
	rc |= lb_table_putf(&c[J_STREAK], "%u", v->known ? (unsigned)lb_atom_expired_streak(a) : 0);
	rc |= lb_table_putf(&c[J_RUNS], "%lld", (long long)a->runs);
	rc |= lb_table_putf(&c[J_EXPIRIES], "%lld", (long long)a->expiries);
	n = lb_atom_stats(a, &longest, &median);
	rc |= secs(&c[J_MEDIAN], median, n > 0);
	rc |= secs(&c[J_LONGEST], longest, n > 0);
	h = history(a);
	rc |= h != NULL ? lb_table_put(&c[J_HISTORY], h) : -1;
	free(h);
	return rc;
}

/* V as a row of status's table T. -1 out of memory. */
static int status_row(struct lb_table *t, const struct view *v)
{
	struct lb_table_cell *c = lb_table_row(t);
	size_t i;

	if (c == NULL)
		return -1;
	for (i = 0; i < S_COUNT; i++)
		c[i].omit = 1;
	return text_cells(c, v) | json_cells(c, v);
}

static int by_path(const void *x, const void *y)
{
	return strcmp(((const struct view *)x)->path, ((const struct view *)y)->path);
}

/*
 * The atoms a server keeps state for, into *V (when ALL). The server is
 * asked first, before any output: a lockbox without libpq runs its helper
 * from here, on the same command line. 0, or -1 (reported).
 */
static int list_server(const char *url, int all, struct view **v, size_t *n)
{
	struct lb_pool *pool = lb_pool_open(url, LB_POOL_LIST, NULL);
	char **names;
	size_t k, i;
	int rc = 0;

	if (pool == NULL)
		return -1;
	if (all && (rc = lb_pool_atom_names(pool, &names, &k)) == 0) {
		*v = calloc(k ? k : 1, sizeof **v);
		if (*v == NULL)
			lb_die(LB_EXIT_FAIL, "out of memory");
		for (i = 0; i < k; i++) {
			(*v)[i].name = names[i];
			(*v)[i].path = lb_atom_path(url, names[i]);
		}
		free(names);
		*n = k;
	}
	lb_pool_close(pool);
	return rc;
}

int adaptive_status(char *dir, int json, int argc, char **argv)
{
	struct lb_table t = { .cols = status_columns, .ncols = S_COUNT, .clean = 1, .compact = 1 };
	struct lb_json j;
	struct view *v = NULL;
	size_t n = 0, i;
	int rc = LB_EXIT_OK, dirfd = -1, shared = 0;

	if (!lb_pool_target_in_fs(dir) && list_server(dir, argc == 0, &v, &n) != 0) {
		free(dir);
		return LB_EXIT_FAIL;
	}
	/*
	 * The directory is trusted as a run trusts it, so that status never
	 * shows a state that a run refuses. A missing one holds no atom.
	 */
	if (lb_pool_target_in_fs(dir) && (access(dir, F_OK) == 0 || errno != ENOENT) &&
	    (dirfd = lb_state_dir_open(dir, &shared)) < 0) {
		free(dir);
		return LB_EXIT_FAIL;
	}
	if (argc > 0) {
		v = calloc((size_t)argc, sizeof *v);
		if (v == NULL)
			lb_die(LB_EXIT_FAIL, "out of memory");
		for (i = 0; i < (size_t)argc; i++) {
			lb_atom_check_name(argv[i]);
			v[n].name = strdup(argv[i]);
			v[n++].path = lb_atom_path(dir, argv[i]);
		}
	} else if (lb_pool_target_in_fs(dir)) {
		DIR *d = opendir(dir);
		struct dirent *e;
		size_t cap = 0;

		if (d == NULL && errno != ENOENT) {
			lb_warn("%s", dir);
			if (dirfd >= 0)
				close(dirfd);
			free(dir);
			return LB_EXIT_FAIL;
		}
		while (d != NULL && (e = readdir(d)) != NULL) {
			if (!lb_atom_file_name(e->d_name))
				continue;
			if (n == cap) {
				struct view *g;

				cap = cap ? 2 * cap : 16;
				g = realloc(v, cap * sizeof *v);
				if (g == NULL)
					lb_die(LB_EXIT_FAIL, "out of memory");
				v = g;
			}
			memset(&v[n], 0, sizeof v[n]);
			v[n++].path = lb_path_join(dir, e->d_name);
		}
		if (d != NULL)
			closedir(d);
		if (n > 0)
			qsort(v, n, sizeof *v, by_path);
	}
	for (i = 0; i < n; i++) {
		int r = look(&v[i], argc == 0, dirfd, shared);

		if (r < 0)
			rc = LB_EXIT_FAIL;
		/* names from a state file anyone may have written: the table shows them printable only */
		if (r == 0 && v[i].name != NULL && status_row(&t, &v[i]) != 0)
			lb_die(LB_EXIT_FAIL, "out of memory");
		free(v[i].name);
		free(v[i].path);
		free(v[i].shown);
	}
	if (json) {
		lb_json_start(&j, stdout);
		lb_table_json(&t, &j, NULL);
		putchar('\n');
	} else {
		lb_table_print_records(&t, 2, 14);
	}
	lb_table_free(&t);
	if (dirfd >= 0)
		close(dirfd);
	free(v);
	free(dir);
	return rc;
}


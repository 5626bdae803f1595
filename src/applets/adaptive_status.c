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
#include "text.h"

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

/* What to call PATH when it is shown: "file" or "server". */
static const char *where(const struct view *v)
{
	return lb_pool_target_in_fs(v->path) ? "file" : "server";
}

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

static void print_text(const struct view *v, int first)
{
	const struct lb_atom *a = &v->a;
	struct lb_learned l;
	char b1[32], b2[32], b3[32], why[160];
	int64_t longest, median, left;
	size_t n;

	if (!first)
		printf("\n");
	printf("%s\n", v->name);
	printf("  %-14s %s\n", "state", state_of(v));
	if (v->running && v->who_known) {
		printf("  %-14s %d\n", "pid", (int)v->who.pid);
		printf("  %-14s %s\n", "age", lb_format_duration(view_age(v), b1));
	} else {
		printf("  %-14s %s\n", "pid", v->running ? "?" : "-");
		printf("  %-14s %s\n", "age", "-");
	}
	if (!v->known) {
		printf("  %-14s %s\n", "last start", "never");
	} else {
		printf("  %-14s %s\n", "last start", iso(a->start_wall, b1));
		if (a->flags & LB_ATOM_RUNNING) {
			printf("  %-14s %s\n", "last end", "-");
			printf("  %-14s %s\n", "last status", "-");
			printf("  %-14s %s\n", "last duration", "-");
		} else {
			printf("  %-14s %s\n", "last end", iso(lb_atom_last_end(a), b1));
			printf("  %-14s %s\n", "last status", status_word(a->status, b2));
			printf("  %-14s %s\n", "last duration",
			    a->duration >= 0 ? lb_format_duration(a->duration, b3) : "-");
		}
	}
	left = next_run(v);
	if (left > 0)
		printf("  %-14s in %s\n", "next run", lb_format_duration_up(left, b1));
	else
		printf("  %-14s %s\n", "next run", "now");
	if (v->known) {
		printf("  %-14s %s\n", "if elapsed", lb_format_duration(a->ifelapsed, b1));
		if (learned(v)) {
			lb_format_duration(expire_after(v, &l), b1);
			printf("  %-14s %s (%s)\n", "expire after", b1,
			    lb_learned_text(&l, why, sizeof why));
		} else {
			printf("  %-14s %s\n", "expire after", lb_format_duration(a->expireafter, b1));
		}
		if (starving(v))
			printf("  %-14s yes: the last %u runs were killed before they finished\n",
			    "starving", lb_atom_expired_streak(a));
		n = lb_atom_stats(a, &longest, &median);
		if (n > 0)
			printf("  %-14s %u (%u expired); last %zu completed: median %s, longest %s\n",
			    "runs", (unsigned)a->runs, (unsigned)a->expiries, n,
			    lb_format_duration(median, b1), lb_format_duration(longest, b2));
		else
			printf("  %-14s %u\n", "runs", (unsigned)a->runs);
	}
	printf("  %-14s %s\n", where(v), v->shown);
}

/* KEY: NS in seconds, or null when not VALID. */
static void json_secs(struct lb_json *j, const char *key, int64_t ns, int valid)
{
	lb_json_key(j, key);
	if (valid)
		lb_json_seconds(j, ns);
	else
		lb_json_null(j);
}

/* KEY: the wall clock time WALL_NS in ISO 8601, or null for none. */
static void json_time(struct lb_json *j, const char *key, int64_t wall_ns)
{
	char b[32];

	lb_json_key(j, key);
	lb_json_string(j, wall_ns > 0 ? iso(wall_ns, b) : NULL);
}

static void json_status(struct lb_json *j, int32_t s)
{
	lb_json_key(j, "last_status");
	if (s >= 0) {
		lb_json_int(j, (int)s);
		lb_json_key(j, "last_outcome");
		lb_json_string(j, s > LB_EXIT_SIGNAL && s < LB_EXIT_SIGNAL + 65 ? "signal" : "exited");
	} else {
		lb_json_null(j);
		lb_json_key(j, "last_outcome");
		lb_json_string(j, s == LB_STATUS_EXPIRED ? "expired" : "unknown");
	}
}

/* The runs in the ring, oldest first. */
static void json_history(struct lb_json *j, const struct lb_atom *a)
{
	unsigned i, k;

	lb_json_key(j, "history");
	lb_json_begin_array(j);
	for (i = 0; i < a->nring; i++) {
		const struct lb_run *x;
		char b[32];

		k = a->nring < LB_ATOM_RING ? i : (a->ring_next + i) % LB_ATOM_RING;
		x = &a->ring[k];
		lb_json_begin_object(j);
		lb_json_key(j, "start");
		lb_json_string(j, iso(x->start_wall, b));
		json_secs(j, "duration_seconds", x->duration, x->duration >= 0);
		lb_json_key(j, "status");
		if (x->status >= 0)
			lb_json_int(j, (int)x->status);
		else
			lb_json_string(j, x->status == LB_STATUS_EXPIRED ? "expired" : "unknown");
		lb_json_end_object(j);
	}
	lb_json_end_array(j);
}

static void print_json(struct lb_json *j, const struct view *v)
{
	const struct lb_atom *a = &v->a;
	struct lb_learned l;
	char why[160];
	int64_t longest, median;
	size_t n;
	int ended = v->known && !(a->flags & LB_ATOM_RUNNING);

	lb_json_begin_object(j);
	lb_json_key(j, "name");
	lb_json_string(j, v->name);
	lb_json_key(j, where(v));
	lb_json_string(j, v->shown);
	lb_json_key(j, "state");
	lb_json_string(j, state_of(v));
	lb_json_key(j, "pid");
	if (v->running && v->who_known)
		lb_json_int(j, (int)v->who.pid);
	else
		lb_json_null(j);
	json_secs(j, "age_seconds", v->running && v->who_known ? view_age(v) : 0,
	    v->running && v->who_known);
	json_time(j, "last_start", v->known ? a->start_wall : 0);
	json_time(j, "last_end", ended ? lb_atom_last_end(a) : 0);
	if (ended) {
		json_status(j, a->status);
	} else {
		lb_json_key(j, "last_status");
		lb_json_null(j);
		lb_json_key(j, "last_outcome");
		lb_json_null(j);
	}
	json_secs(j, "last_duration_seconds", a->duration, ended && a->duration >= 0);
	json_secs(j, "next_run_seconds", next_run(v), 1);
	json_secs(j, "if_elapsed_seconds", a->ifelapsed, v->known);
	json_secs(j, "expire_after_seconds", expire_after(v, &l), v->known);
	lb_json_key(j, "expire_after_learned");
	if (learned(v)) {
		lb_json_bool(j, l.why != LB_LEARN_FEW);
		json_secs(j, "expire_after_bound_seconds", l.bound, 1);
		lb_json_key(j, "expire_after_why");
		lb_json_string(j, lb_learned_text(&l, why, sizeof why));
	} else {
		lb_json_bool(j, 0);
		json_secs(j, "expire_after_bound_seconds", 0, 0);
		lb_json_key(j, "expire_after_why");
		lb_json_string(j, v->known ? "fixed" : NULL);
	}
	lb_json_key(j, "starving");
	lb_json_bool(j, starving(v));
	lb_json_key(j, "expired_in_a_row");
	lb_json_int(j, v->known ? lb_atom_expired_streak(a) : 0);
	lb_json_key(j, "runs");
	lb_json_int(j, a->runs);
	lb_json_key(j, "expiries");
	lb_json_int(j, a->expiries);
	n = lb_atom_stats(a, &longest, &median);
	json_secs(j, "median_duration_seconds", median, n > 0);
	json_secs(j, "longest_duration_seconds", longest, n > 0);
	json_history(j, a);
	lb_json_end_object(j);
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
	struct lb_json j;
	struct view *v = NULL;
	size_t n = 0, i, shown = 0;
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
	lb_json_start(&j, stdout);
	if (json)
		lb_json_begin_array(&j);
	for (i = 0; i < n; i++) {
		int r = look(&v[i], argc == 0, dirfd, shared);

		if (r < 0)
			rc = LB_EXIT_FAIL;
		if (r == 0 && v[i].name != NULL) {
			if (json) {
				print_json(&j, &v[i]);
			} else {
				/* names from a state file anyone may have written: printable only */
				lb_text_clean(v[i].name);
				lb_text_clean(v[i].shown);
				print_text(&v[i], shown == 0);
			}
			shown++;
		}
		free(v[i].name);
		free(v[i].path);
		free(v[i].shown);
	}
	if (json) {
		lb_json_end_array(&j);
		putchar('\n');
	}
	if (dirfd >= 0)
		close(dirfd);
	free(v);
	free(dir);
	return rc;
}


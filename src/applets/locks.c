/* locks: every lock on this host, of every kind, with lockbox's holders and waiters. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "applets.h"
#include "clock.h"
#include "err.h"
#include "exitcodes.h"
#include "holders.h"
#include "host.h"
#include "json.h"
#include "opts.h"
#include "parse.h"
#include "pool.h"
#include "table.h"

#define USAGE \
	"usage: locks [-Jlnru] [-p PID] [-o COLUMNS] [--output-all] [--timeout DUR]"

#define HELP \
	"\n" \
	"Every lock on this host, held or waited for, of every kind (flock(2), POSIX,\n" \
	"open file description), one a line, with the process that holds it; a\n" \
	"lockbox lock file's as its holders and waiters. root sees every process;\n" \
	"another user, the processes and files of their own.\n" \
	"\n" \
	"  -l, --lockbox       lockbox lock files only\n" \
	"  -p, --pid PID       the locks of process PID only\n" \
	"  -o, --output COLS   the columns, COL,COL,...; +COL,... adds to the default\n" \
	"      --output-all    every column\n" \
	"  -J, --json          the table as JSON\n" \
	"  -r, --raw           one space between cells, none aligned\n" \
	"  -n, --noheadings    no heading line\n" \
	"  -u, --notruncate    never cut COMMAND and PATH to fit the terminal\n" \
	"      --timeout DUR   stop looking after DUR (default 5s), show what was\n" \
	"                      found, and say so\n" \
	"  -H, --list-columns  the columns, and what each holds\n" \
	"  -h, --help          this help\n" \
	"  -V, --version       print lockbox's version and lock kind\n" \
	"\n" \
	"Columns: %s (the default),\n" \
	"and the others -H lists.\n" \
	"Exit: 0, or 125 when the lock table cannot be read. See lockbox(1).\n"

/* how long a look at the host's locks may take, by default */
#define LOCKS_TIMEOUT	(5 * LB_NS_PER_S)

enum {
	C_COMMAND, C_PID, C_TYPE, C_SIZE, C_MODE, C_M, C_START, C_END, C_PATH,
	C_BLOCKER, C_INODE, C_MAJMIN, C_SLOT, C_AGE, C_NOTE, C_COUNT
};

static const struct lb_table_col columns[C_COUNT] = {
	[C_COMMAND] = { .name = "COMMAND", .json = LB_COL_TEXT, .right = 0, .trunc = 1,
	    .help = "command of the process that holds the lock" },
	[C_PID] = { .name = "PID", .json = LB_COL_NUM, .right = 1, .trunc = 0,
	    .help = "its PID (an open file description's: one that has it open)" },
	[C_TYPE] = { .name = "TYPE", .json = LB_COL_TEXT, .right = 0, .trunc = 0,
	    .help = "FLOCK (flock(2)), POSIX (fcntl, lockf) or OFDLCK (fcntl)" },
	[C_SIZE] = { .name = "SIZE", .json = LB_COL_NUM, .right = 1, .trunc = 0,
	    .help = "size of the file, in bytes" },
	[C_MODE] = { .name = "MODE", .json = LB_COL_TEXT, .right = 0, .trunc = 0,
	    .help = "READ or WRITE; * after it: waited for, not held" },
	[C_M] = { .name = "M", .json = LB_COL_BOOL, .right = 1, .trunc = 0,
	    .help = "mandatory: always 0 (Linux has none now)" },
	[C_START] = { .name = "START", .json = LB_COL_NUM, .right = 1, .trunc = 0,
	    .help = "first byte locked" },
	[C_END] = { .name = "END", .json = LB_COL_NUM, .right = 1, .trunc = 0,
	    .help = "last byte locked; EOF: to the end and beyond" },
	[C_PATH] = { .name = "PATH", .json = LB_COL_TEXT, .right = 0, .trunc = 1,
	    .help = "path of the file" },
	[C_BLOCKER] = { .name = "BLOCKER", .json = LB_COL_NUM, .right = 1, .trunc = 0,
	    .help = "the PID of the lock a request waits for" },
	[C_INODE] = { .name = "INODE", .json = LB_COL_NUM, .right = 1, .trunc = 0,
	    .help = "inode number of the file" },
	[C_MAJMIN] = { .name = "MAJ:MIN", .json = LB_COL_TEXT, .right = 0, .trunc = 0,
	    .help = "its device's numbers" },
	[C_SLOT] = { .name = "SLOT", .json = LB_COL_NUM, .right = 1, .trunc = 0,
	    .help = "a lockbox lock file's slot" },
	[C_AGE] = { .name = "AGE", .json = LB_COL_SECONDS, .right = 0, .trunc = 0,
	    .help = "how long a lockbox holder has held, a waiter waited" },
	[C_NOTE] = { .name = "NOTE", .json = LB_COL_TEXT, .right = 0, .trunc = 0,
	    .help = "what else is known: another program, waiting 1st..." },
};

static const int default_columns[] = {
	C_COMMAND, C_PID, C_TYPE, C_MODE, C_START, C_END, C_SLOT, C_AGE, C_NOTE, C_PATH
};

enum { OPT_OUTPUT_ALL = 256, OPT_TIMEOUT, OPT_VERSION };

static const struct option longopts[] = {
	{ "bytes", no_argument, NULL, 'b' },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, 'J' },
	{ "list-columns", no_argument, NULL, 'H' },
	{ "lockbox", no_argument, NULL, 'l' },
	{ "noheadings", no_argument, NULL, 'n' },
	{ "noinaccessible", no_argument, NULL, 'i' },
	{ "notruncate", no_argument, NULL, 'u' },
	{ "output", required_argument, NULL, 'o' },
	{ "output-all", no_argument, NULL, OPT_OUTPUT_ALL },
	{ "pid", required_argument, NULL, 'p' },
	{ "raw", no_argument, NULL, 'r' },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/* What a run was asked for. */
struct opts {
	int cols[C_COUNT * 2];	/* the columns shown (one may be asked for twice) */
	size_t ncols;
	int form, headings, truncate, lockbox_only;
	pid_t pid;		/* 0: every process */
	int64_t timeout;
};

/* One row, before it is a table's: what is known of one lock, or of one holder or waiter. */
struct row {
	const struct lb_host_file *f;
	const char *command;	/* NULL: not known */
	pid_t pid;		/* 0: not known */
	int kind;		/* LB_LOCK_, -1: not known */
	int write, waiting;
	int range;		/* LO and HI say the bytes */
	long long lo, hi;
	unsigned slot;		/* 0: none */
	int aged;		/* AGE says how long */
	int64_t age;
	pid_t blocker;		/* 0: none or not known */
	char note[200];
};

/* The names of processes looked up, by PID: each read once. */
struct names {
	pid_t *pid;
	char **name;
	size_t n, cap;
};

static const char *name_of(struct names *nm, pid_t pid)
{
	char buf[LB_COMMAND_MAX];
	size_t i;

	if (pid <= 0)
		return NULL;
	for (i = 0; i < nm->n; i++)
		if (nm->pid[i] == pid)
			return nm->name[i];
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? 2 * nm->cap : 64;
		pid_t *p = realloc(nm->pid, cap * sizeof *p);
		char **s = p != NULL ? realloc(nm->name, cap * sizeof *s) : NULL;

		if (p != NULL)
			nm->pid = p;
		if (s == NULL)
			return NULL;
		nm->name = s;
		nm->cap = cap;
	}
	lb_proc_name(pid, buf, sizeof buf);
	nm->pid[nm->n] = pid;
	nm->name[nm->n] = buf[0] != '\0' ? strdup(buf) : NULL;
	return nm->name[nm->n++];
}

static void names_free(struct names *nm)
{
	size_t i;

	for (i = 0; i < nm->n; i++)
		free(nm->name[i]);
	free(nm->pid);
	free(nm->name);
}

static const char *kind_name(int kind)
{
	return kind == LB_LOCK_FLOCK ? "FLOCK" : kind == LB_LOCK_OFD ? "OFDLCK" :
	    kind == LB_LOCK_POSIX ? "POSIX" : NULL;
}

/* "; " and more, after what the note says already. */
static void note_add(struct row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note_add(struct row *r, const char *fmt, ...)
{
	size_t n = strlen(r->note);
	va_list ap;

	if (n > 0 && n + 2 < sizeof r->note) {
		memcpy(r->note + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(r->note + n, sizeof r->note - n, fmt, ap);
	va_end(ap);
}

/* The cells of row R in table T; -1 out of memory. */
static int emit(struct lb_table *t, const struct opts *o, const struct row *r)
{
	struct lb_table_cell *cell;
	char age[32];
	size_t i;
	int rc = 0;

	if (o->pid != 0 && r->pid != o->pid)
		return 0;
	cell = lb_table_row(t);
	if (cell == NULL)
		return -1;
	for (i = 0; i < o->ncols; i++) {
		struct lb_table_cell *c = &cell[i];

		switch (o->cols[i]) {
		case C_COMMAND:
			rc |= lb_table_set(c, r->command);
			break;
		case C_PID:
			rc |= r->pid > 0 ? lb_table_setf(c, "%d", (int)r->pid) : lb_table_set(c, "?");
			break;
		case C_TYPE:
			rc |= lb_table_set(c, kind_name(r->kind));
			break;
		case C_SIZE:
			if (r->f->size >= 0)
				rc |= lb_table_setf(c, "%lld", r->f->size);
			break;
		case C_MODE:
			rc |= lb_table_setf(c, "%s%s", r->write ? "WRITE" : "READ", r->waiting ? "*" : "");
			break;
		case C_M:
			rc |= lb_table_set(c, "0");
			break;
		case C_START:
			if (r->range)
				rc |= lb_table_setf(c, "%lld", r->lo);
			break;
		case C_END:
			if (r->range && r->hi >= 0)
				rc |= lb_table_setf(c, "%lld", r->hi);
			else if (r->range)
				rc |= lb_table_set(c, "EOF");
			break;
		case C_PATH:
			rc |= lb_table_set(c, r->f->path);
			break;
		case C_BLOCKER:
			if (r->blocker > 0)
				rc |= lb_table_setf(c, "%d", (int)r->blocker);
			break;
		case C_INODE:
			rc |= lb_table_setf(c, "%llu", (unsigned long long)r->f->ino);
			break;
		case C_MAJMIN:
			rc |= lb_table_setf(c, "%u:%u", major(r->f->dev), minor(r->f->dev));
			break;
		case C_SLOT:
			if (r->slot != 0)
				rc |= lb_table_setf(c, "%u", r->slot);
			break;
		case C_AGE:
			if (r->aged) {
				rc |= lb_table_set(c, lb_format_duration(r->age, age));
				c->ns = r->age;
			}
			break;
		case C_NOTE:
			if (r->note[0] != '\0')
				rc |= lb_table_set(c, r->note);
			break;
		}
	}
	return rc;
}

/* The notes every row of file F carries: what is known of the file itself. */
static void file_notes(struct row *r, const struct lb_host_file *f)
{
	if (f->path == NULL)
		note_add(r, "path not found (no process this user may look at has it open)");
	else if (f->deleted)
		note_add(r, "deleted");
	else if (f->err != 0)
		note_add(r, "cannot read it: %s", strerror(f->err));
}

/*
 * The rows of file FI's locks as the kernel lists them, LOCKS (N of them,
 * in the table's order). A mutex's two locks on a file that is no lock
 * file (flock(2) and a read lock on bytes 0 to 2^32-2, both its holder's)
 * are one row. WHY: a note for all of them (NULL: none).
 */
static int raw_rows(struct lb_table *t, const struct opts *o, struct names *nm,
    struct lb_host_view *hv, size_t fi, const size_t *locks, size_t n, const char *why)
{
	const struct lb_host_file *f = &hv->files[fi];
	size_t i, j, *half = calloc(n ? n : 1, sizeof *half);
	char *folded = calloc(n ? n : 1, 1);
	int rc = 0;

	/* a file taken for a lock file had its holders left to its records */
	if (f->lockbox)
		lb_host_find_holders(hv, fi);
	if (half == NULL || folded == NULL) {
		free(half);
		free(folded);
		return -1;
	}
	for (i = 0; i < n; i++) {
		const struct lb_host_lock *l = &hv->locks[locks[i]];

		if (l->x.blocked || l->x.kind == LB_LOCK_FLOCK || l->pid <= 0 || !lb_path_half(&l->x.l))
			continue;
		for (j = 0; j < n; j++) {
			const struct lb_host_lock *k = &hv->locks[locks[j]];

			if (!k->x.blocked && k->x.kind == LB_LOCK_FLOCK && k->pid == l->pid && half[j] == 0) {
				half[j] = i + 1;
				folded[i] = 1;
				break;
			}
		}
	}
	for (i = 0; rc == 0 && i < n; i++) {
		const struct lb_host_lock *l = &hv->locks[locks[i]];
		struct row r = { .f = f, .pid = l->pid, .kind = l->x.kind, .write = l->x.l.write,
		    .waiting = l->x.blocked, .range = 1, .lo = l->x.l.lo, .hi = l->x.l.hi,
		    .blocker = l->blocker };

		if (folded[i])
			continue;
		r.command = name_of(nm, r.pid);
		if (half[i] != 0)
			note_add(&r, "mutex: and a %s lock on bytes %lld-%lld",
			    hv->locks[locks[half[i] - 1]].x.l.write ? "write" : "read",
			    hv->locks[locks[half[i] - 1]].x.l.lo, hv->locks[locks[half[i] - 1]].x.l.hi);
		if (l->taker_gone)
			note_add(&r, "taken by PID %d, which has exited", (int)l->x.l.pid);
		if (r.pid <= 0 && !l->x.blocked)
			note_add(&r, "its process not found%s", hv->cut ? " in time" : "");
		file_notes(&r, f);
		if (why != NULL)
			note_add(&r, "%s", why);
		rc = emit(t, o, &r);
	}
	free(half);
	free(folded);
	return rc;
}

/* The kind of the first lock held of LOCKS (N) that is a write lock on BYTE alone; -1 none. */
static int slot_kind(const struct lb_host_view *hv, const size_t *locks, size_t n, long long byte)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct lb_host_lock *l = &hv->locks[locks[i]];

		if (!l->x.blocked && l->x.kind != LB_LOCK_FLOCK && l->x.l.write &&
		    l->x.l.lo == byte && l->x.l.hi == byte)
			return (int)i;
	}
	return -1;
}

/* The kind of another program's lock X on this file: of a lock its process holds in its range. */
static int foreign_kind(const struct lb_host_view *hv, const size_t *locks, size_t n,
    const struct lb_holder *x)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct lb_host_lock *l = &hv->locks[locks[i]];

		/* (a lock file's own: their processes were left to the records) */
		if (!l->x.blocked && (l->pid == x->who.pid || l->pid == 0) && l->x.l.lo >= x->lock_lo &&
		    (x->lock_hi < 0 || (l->x.l.hi >= 0 && l->x.l.hi <= x->lock_hi)) &&
		    (x->foreign_write || !l->x.l.write))
			return l->x.kind;
	}
	return -1;
}

/* A holder or waiter X of lockbox lock file FI as a row: holders.c's, with the kernel's lock. */
static int holder_row(struct lb_table *t, const struct opts *o, struct names *nm,
    const struct lb_host_view *hv, size_t fi, const size_t *locks, size_t n,
    const struct lb_holder *x)
{
	struct row r = { .f = &hv->files[fi], .kind = -1, .write = !x->shared };
	struct poolcmd_row h;
	int i;

	poolcmd_holder_row(x, &h);
	r.slot = h.slot;
	r.pid = h.pid;
	r.command = h.command;
	r.aged = h.aged;
	r.age = h.age;
	snprintf(r.note, sizeof r.note, "%s", h.note);
	if (x->foreign) {
		r.kind = foreign_kind(hv, locks, n, x);
		r.write = x->foreign_write;
		r.range = 1;
		r.lo = x->lock_lo;
		r.hi = x->lock_hi;
		if (x->who.pid <= 0)
			note_add(&r, "its process not found%s", hv->cut ? " in time" : "");
		return emit(t, o, &r);
	}
	if (x->waiting) {
		r.waiting = 1;
#ifdef HAVE_OFD_LOCKS
		r.kind = LB_LOCK_OFD;
#else
		r.kind = LB_LOCK_POSIX;
#endif
	} else {
		r.range = 1;
		r.lo = r.hi = lb_slot_byte(x->slot);
		i = slot_kind(hv, locks, n, r.lo);
		r.kind = i >= 0 ? hv->locks[locks[i]].x.kind : -1;
		if (!x->known && i >= 0)
			r.pid = hv->locks[locks[i]].pid;
	}
	if (!x->known) {
		r.command = name_of(nm, r.pid);
		if (!x->waiting)
			note_add(&r, "no record of its holder");
	}
	return emit(t, o, &r);
}

/*
 * The rows of lockbox lock file FI: its holders, then its waiters in
 * queue order, as list shows them (LOCKS, N of them: its locks in the
 * table). 1 when it is no lockbox lock file or cannot be looked at, 0,
 * or -1.
 */
static int lockbox_rows(struct lb_table *t, const struct opts *o, struct names *nm,
    struct lb_host_view *hv, size_t fi, const size_t *locks, size_t n)
{
	struct lb_holders h, w;
	size_t i;
	int rc = lb_pool_host_lockfile(hv, fi, locks, n, &h, &w);

	if (rc != 0)
		return rc;
	for (i = 0; rc == 0 && i < h.n; i++)
		rc = holder_row(t, o, nm, hv, fi, locks, n, &h.v[i]);
	for (i = 0; rc == 0 && i < w.n; i++)
		rc = holder_row(t, o, nm, hv, fi, locks, n, &w.v[i]);
	lb_holders_free(&h);
	lb_holders_free(&w);
	return rc;
}

/* ---- options ---- */

static int column_named(const char *name, size_t len)
{
	int c;

	for (c = 0; c < C_COUNT; c++)
		if (strlen(columns[c].name) == len && strncasecmp(columns[c].name, name, len) == 0)
			return c;
	return -1;
}

/* -o LIST: COL,COL,... or +COL,... after the default ones. */
static void parse_columns(struct opts *o, const char *list)
{
	const char *p = list, *end;
	size_t i;
	int c;

	o->ncols = 0;
	if (*p == '+') {
		for (i = 0; i < sizeof default_columns / sizeof default_columns[0]; i++)
			o->cols[o->ncols++] = default_columns[i];
		p++;
	}
	for (;;) {
		end = p + strcspn(p, ",");
		c = column_named(p, (size_t)(end - p));
		if (c < 0)
			lb_usage_error("unknown column '%.*s' (-H lists the columns)",
			    (int)(end - p), p);
		if (o->ncols == sizeof o->cols / sizeof o->cols[0])
			lb_usage_error("too many columns in '%s'", list);
		o->cols[o->ncols++] = c;
		if (*end == '\0')
			break;
		p = end + 1;
	}
}

/* --help, with the default columns' names. */
static _Noreturn void help(void)
{
	char list[128];
	size_t i, len = 0;

	for (i = 0; i < sizeof default_columns / sizeof default_columns[0]; i++)
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i > 0 ? "," : "",
		    columns[default_columns[i]].name);
	printf("%s\n" HELP, USAGE, list);
	lb_close_stdout();
	lb_exit(LB_EXIT_OK);
}

/* -H, as lslocks(8) has it: every column, and what it holds. */
static _Noreturn void list_columns(void)
{
	int c;

	for (c = 0; c < C_COUNT; c++)
		printf("%-9s %s\n", columns[c].name, columns[c].help);
	lb_close_stdout();
	lb_exit(LB_EXIT_OK);
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	uint64_t pid;
	size_t i;
	int c;

	for (i = 0; i < sizeof default_columns / sizeof default_columns[0]; i++)
		o->cols[o->ncols++] = default_columns[i];
	lb_getopt_reset();
	while ((c = lb_getopt(argc, argv, "+:bHhiJlno:p:ruV", longopts)) != -1) {
		switch (c) {
		case 'b':
			lb_usage_error("-b (--bytes) is lslocks's: SIZE is in bytes here already (-o +SIZE)");
		case 'H':
			list_columns();
		case 'h':
			help();
		case 'i':
			lb_usage_error("-i (--noinaccessible) is lslocks's: -l shows lockbox lock files only, and a file that cannot be read says so");
		case 'J':
			o->form = LB_TABLE_JSON;
			break;
		case 'l':
			o->lockbox_only = 1;
			break;
		case 'n':
			o->headings = 0;
			break;
		case 'o':
			parse_columns(o, optarg);
			break;
		case 'p':
			if (lb_parse_uint(optarg, 1, INT32_MAX, &pid) != 0)
				lb_usage_error("invalid PID '%s': expected a process ID", optarg);
			o->pid = (pid_t)pid;
			break;
		case 'r':
			o->form = o->form == LB_TABLE_JSON ? o->form : LB_TABLE_RAW;
			break;
		case 'u':
			o->truncate = 0;
			break;
		case 'V':
			lb_version();
		case OPT_OUTPUT_ALL:
			for (o->ncols = 0; o->ncols < C_COUNT; o->ncols++)
				o->cols[o->ncols] = (int)o->ncols;
			break;
		case OPT_TIMEOUT:
			o->timeout = lb_opt_duration(optarg, LB_NS_PER_S);
			break;
		}
	}
	if (optind < argc)
		lb_usage_error("unexpected argument '%s'", argv[optind]);
}

/* ---- the run ---- */

/* The view's files, in the order of their paths (those without one last). */
static const struct lb_host_view *sorting;

static int by_path(const void *a, const void *b)
{
	const struct lb_host_file *x = &sorting->files[*(const size_t *)a];
	const struct lb_host_file *y = &sorting->files[*(const size_t *)b];

	if (x->path == NULL || y->path == NULL)
		return (x->path == NULL) - (y->path == NULL);
	return strcmp(x->path, y->path);
}

/* The terminal's width for a table on stdout, 0 when it is none. */
static size_t terminal_width(void)
{
	struct winsize ws;

	return isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ?
	    ws.ws_col : 0;
}

/* {"locks":[...],"stopped_short":false}: the table, and whether it is whole. */
static void print_json(const struct lb_table *t, int stopped_short)
{
	struct lb_json j;

	lb_json_start(&j, stdout);
	lb_json_begin_object(&j);
	lb_table_json(t, &j, "locks");
	lb_json_key(&j, "stopped_short");
	lb_json_bool(&j, stopped_short);
	lb_json_end_object(&j);
	putchar('\n');
}

int locks_main(int argc, char **argv)
{
	struct opts o = { .form = LB_TABLE_TEXT, .headings = 1, .truncate = 1,
	    .timeout = LOCKS_TIMEOUT };
	struct lb_table_col cols[C_COUNT * 2];
	struct lb_table t = { .cols = cols };
	struct lb_host_view hv;
	struct names nm = { NULL, NULL, 0, 0 };
	size_t *order = NULL, *start = NULL, *locks = NULL, i;
	int64_t deadline;
	int rc = 0, r, skipped = 0;
	char took[32];

	parse_opts(&o, argc, argv);
	for (i = 0; i < o.ncols; i++)
		cols[i] = columns[o.cols[i]];
	t.ncols = o.ncols;
	deadline = lb_deadline_after(o.timeout);
	if (lb_pool_host_view(&hv, deadline) != 0)
		return LB_EXIT_FAIL;
	order = calloc(hv.nfiles + 1, sizeof *order);
	start = calloc(hv.nfiles + 1, sizeof *start);
	locks = calloc(hv.nlocks + 1, sizeof *locks);
	if (order == NULL || start == NULL || locks == NULL) {
		lb_warn("cannot list the locks");
		rc = -1;
	}
	/* each file's locks, in the table's order: LOCKS[START[f]] to LOCKS[START[f + 1] - 1] */
	for (i = 0; rc == 0 && i < hv.nlocks; i++)
		start[hv.locks[i].file + 1]++;
	for (i = 0; rc == 0 && i < hv.nfiles; i++) {
		start[i + 1] += start[i];
		order[i] = start[i];	/* where the next lock of the file goes */
	}
	for (i = 0; rc == 0 && i < hv.nlocks; i++)
		locks[order[hv.locks[i].file]++] = i;
	for (i = 0; rc == 0 && i < hv.nfiles; i++)
		order[i] = i;
	sorting = &hv;
	if (rc == 0 && hv.nfiles > 1)
		qsort(order, hv.nfiles, sizeof *order, by_path);
	for (i = 0; rc == 0 && i < hv.nfiles; i++) {
		size_t f = order[i], *fl = locks + start[f], n = start[f + 1] - start[f];

		if (o.lockbox_only && !hv.files[f].lockbox)
			continue;
		r = 1;
		if (hv.files[f].lockbox && lb_remaining(deadline) > 0)
			r = lockbox_rows(&t, &o, &nm, &hv, f, fl, n);
		else if (hv.files[f].lockbox)
			skipped = 1;
		/*
		 * no lock file after all, one that cannot be read, or one not
		 * looked at in time (which -l shows too: it is a lock file)
		 */
		if (r == 1 && (!o.lockbox_only || (hv.files[f].lockbox && lb_remaining(deadline) == 0)))
			r = raw_rows(&t, &o, &nm, &hv, f, fl, n, hv.files[f].lockbox &&
			    lb_remaining(deadline) == 0 ? "not looked at: stopped short" : NULL);
		rc = r == 1 ? 0 : r;
	}
	if (rc == 0) {
		/* a look stopped short may have missed what is held */
		if (t.nrows == 0 && o.form == LB_TABLE_TEXT)
			printf("%s\n", hv.cut || skipped ? "none found before it stopped short" :
			    "nothing is held");
		else if (o.form == LB_TABLE_JSON)
			print_json(&t, hv.cut || skipped);
		else
			lb_table_print(&t, o.form, o.headings, o.truncate ? terminal_width() : 0);
		if (hv.cut || skipped)
			lb_warnx("stopped short after %s: the locks found by then are shown; some of their processes, paths or holders may be missing",
			    lb_format_duration_ms(o.timeout, took));
	}
	lb_table_free(&t);
	names_free(&nm);
	free(order);
	free(start);
	free(locks);
	lb_pool_host_done(&hv);
	return rc == 0 ? LB_EXIT_OK : LB_EXIT_FAIL;
}

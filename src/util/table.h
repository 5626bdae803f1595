/* Tables of named columns, printed as aligned text or raw words, or as the rows of a JSON document: one printer. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_TABLE_H
#define LOCKBOX_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* How a column's cells go into JSON. */
enum { LB_COL_TEXT, LB_COL_NUM, LB_COL_BOOL, LB_COL_SECONDS, LB_COL_JSON };

/* Where a column is shown: in both forms, in one alone, or in neither (left out of this table). */
enum { LB_COL_BOTH, LB_COL_TEXT_ONLY, LB_COL_JSON_ONLY, LB_COL_HIDDEN };

struct lb_table_col {
	const char *name;	/* its heading; in JSON, the member's name in lower case */
	int json;		/* LB_COL_: a string, a number (null when not one), true/false
				 * ("1"/"0"), a duration (the cell's NS, in seconds), a JSON
				 * value written whole (an array) */
	int right;		/* aligned right (numbers) */
	int trunc;		/* cut to fit a terminal's width, if any column must be */
	const char *help;	/* what it shows, for --help */
	const char *key;	/* its JSON member's name; NULL: the heading in lower case */
	int only;		/* LB_COL_: shown in text or in JSON alone */
	size_t width;		/* in text, at least this wide */
};

/*
 * A cell: TEXT as shown (NULL: none, shown empty, null in JSON), malloc'd,
 * the table's once added; in a column of durations, NS is the one TEXT
 * says, for JSON. OMIT: not there at all: no member of its row's JSON
 * object, no line of its record.
 */
struct lb_table_cell {
	char *text;
	int64_t ns;
	int omit;
};

struct lb_table {
	const struct lb_table_col *cols;	/* the columns shown, in their order */
	size_t ncols;
	struct lb_table_cell *cells;	/* row after row, ncols each */
	size_t nrows, cap;
	/*
	 * CLEAN: text shows a control character or a stray byte as '?'
	 * (lb_text_clean), a person's look at what a record says, instead of
	 * escaping it; COMPACT: JSON puts the rows on one line
	 */
	int clean, compact;
};

/* A new row of T, its cells empty: a pointer to them (NCOLS of them), or NULL. */
struct lb_table_cell *lb_table_row(struct lb_table *t);

/* Cell helpers: a copy of S (NULL: none), or printf's. 0, or -1 out of memory. */
int lb_table_set(struct lb_table_cell *c, const char *s);
int lb_table_setf(struct lb_table_cell *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same, and the cell no longer omitted (a row whose cells start omitted). */
int lb_table_put(struct lb_table_cell *c, const char *s);
int lb_table_putf(struct lb_table_cell *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Print T on stdout: LB_TABLE_TEXT, columns aligned under a heading
 * (HEADINGS), every string escaped (control characters, backslashes and
 * bytes that are not UTF-8 as \n, \\, \xHH...), the columns that may be
 * cut cut to WIDTH columns when it is not 0 (a terminal's); LB_TABLE_RAW,
 * the same without alignment, one space between cells, spaces in them
 * escaped too (\x20). LB_TABLE_JSON is lb_table_json's.
 */
enum { LB_TABLE_TEXT, LB_TABLE_RAW, LB_TABLE_JSON };
void lb_table_print(const struct lb_table *t, int form, int headings, size_t width);

/*
 * T as the member KEY of the object J is in: "KEY":[{...},...] (KEY NULL:
 * the array alone), a row a line unless COMPACT, each column a member
 * named by its key, or its heading in lower case.
 */
struct lb_json;
void lb_table_json(const struct lb_table *t, struct lb_json *j, const char *key);

/*
 * T's rows as records, on stdout, a blank line between two: the first
 * column's cell alone on a line, then each other column's as INDENT
 * spaces, its heading in NAMEW columns, a space and the cell; a cell
 * omitted has no line.
 */
void lb_table_print_records(const struct lb_table *t, int indent, int namew);

void lb_table_free(struct lb_table *t);

#endif

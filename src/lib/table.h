/* Tables of named columns, printed as aligned text or raw words, or as the rows of a JSON document: one printer. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_TABLE_H
#define LOCKBOX_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* How a column's cells go into JSON. */
enum { LB_COL_TEXT, LB_COL_NUM, LB_COL_BOOL, LB_COL_SECONDS };

struct lb_table_col {
	const char *name;	/* its heading; in JSON, the member's name in lower case */
	int json;		/* LB_COL_: a string, a number (null when not one), true/false
				 * ("1"/"0"), a duration (the cell's NS, in seconds) */
	int right;		/* aligned right (numbers) */
	int trunc;		/* cut to fit a terminal's width, if any column must be */
	const char *help;	/* what it shows, for --help */
};

/*
 * A cell: TEXT as shown (NULL: none, shown empty, null in JSON), malloc'd,
 * the table's once added; in a column of durations, NS is the one TEXT
 * says, for JSON.
 */
struct lb_table_cell {
	char *text;
	int64_t ns;
};

struct lb_table {
	const struct lb_table_col *cols;	/* the columns shown, in their order */
	size_t ncols;
	struct lb_table_cell *cells;	/* row after row, ncols each */
	size_t nrows, cap;
};

/* A new row of T, its cells empty: a pointer to them (NCOLS of them), or NULL. */
struct lb_table_cell *lb_table_row(struct lb_table *t);

/* Cell helpers: a copy of S (NULL: none), or printf's. 0, or -1 out of memory. */
int lb_table_set(struct lb_table_cell *c, const char *s);
int lb_table_setf(struct lb_table_cell *c, const char *fmt, ...)
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
 * T as the member KEY of the object J is in: "KEY":[{...},...], a row a
 * line, each column a member named by its heading in lower case.
 */
struct lb_json;
void lb_table_json(const struct lb_table *t, struct lb_json *j, const char *key);

void lb_table_free(struct lb_table *t);

#endif

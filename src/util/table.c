/* Tables of named columns, printed as aligned text or raw words, or as the rows of a JSON document: one printer. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "table.h"
#include "text.h"

struct lb_table_cell *lb_table_row(struct lb_table *t)
{
	struct lb_table_cell *grown, *row;

	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;

		grown = realloc(t->cells, cap * t->ncols * sizeof *grown);
		if (grown == NULL)
			return NULL;
		t->cells = grown;
		t->cap = cap;
	}
	row = &t->cells[t->nrows++ * t->ncols];
	memset(row, 0, t->ncols * sizeof *row);
	return row;
}

int lb_table_set(struct lb_table_cell *c, const char *s)
{
	free(c->text);
	c->text = s != NULL ? strdup(s) : NULL;
	return s != NULL && c->text == NULL ? -1 : 0;
}

static int vset(struct lb_table_cell *c, const char *fmt, va_list ap)
{
	free(c->text);
	if (vasprintf(&c->text, fmt, ap) >= 0)
		return 0;
	c->text = NULL;
	return -1;
}

int lb_table_setf(struct lb_table_cell *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vset(c, fmt, ap);
	va_end(ap);
	return r;
}

int lb_table_put(struct lb_table_cell *c, const char *s)
{
	c->omit = 0;
	return lb_table_set(c, s);
}

int lb_table_putf(struct lb_table_cell *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	c->omit = 0;
	va_start(ap, fmt);
	r = vset(c, fmt, ap);
	va_end(ap);
	return r;
}

void lb_table_free(struct lb_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++) {
		free(t->cells[i].text);
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/*
 * S as it may be printed (malloc'd; NULL out of memory): no control
 * character, backslash or stray byte as itself (see lb_text_escape); RAW:
 * no space either, so that a raw row's cells are its words; CLEAN: a
 * control character or stray byte as '?', the rest as it is.
 */
static char *escaped(const char *s, int raw, int clean)
{
	size_t len = strlen(s), n, i, k = 0;
	char *out = malloc(4 * len + 1), *wide;

	if (out == NULL)
		return NULL;
	if (clean) {
		memcpy(out, s, len + 1);
		lb_text_clean(out);
		return out;
	}
	n = lb_text_escape(out, 4 * len + 1, s, len);
	if (!raw || memchr(out, ' ', n) == NULL)
		return out;
	wide = malloc(4 * n + 1);
	if (wide != NULL) {
		for (i = 0; i < n; i++)
			if (out[i] == ' ')
				k += (size_t)sprintf(wide + k, "\\x20");
			else
				wide[k++] = out[i];
		wide[k] = '\0';
	}
	free(out);
	return wide;
}

/* The columns a terminal gives S (UTF-8, escaped: one a character). */
static size_t width_of(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The bytes of S's first COLS characters. */
static size_t bytes_of(const char *s, size_t cols)
{
	size_t i = 0;

	for (; s[i] != '\0'; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && cols-- == 0)
			break;
	return i;
}

/* One cell of a text row, in W columns: aligned, or cut (the last without padding). */
static void print_cell(const struct lb_table_col *col, const char *s, size_t w, int last)
{
	size_t have = width_of(s), pad = have < w ? w - have : 0;

	if (have > w) {
		/* cut: its start and "...", which says so */
		printf("%.*s%s", (int)bytes_of(s, w > 3 ? w - 3 : 0), s, w > 3 ? "..." : "");
		pad = 0;
	} else if (col->right) {
		printf("%*s%s", (int)pad, "", s);
		pad = 0;
	} else {
		fputs(s, stdout);
	}
	if (!last)
		printf("%*s ", (int)pad, "");
}

/* Whether T's column C is shown in text; the first that is. */
static int in_text(const struct lb_table *t, size_t c)
{
	return t->cols[c].only == LB_COL_BOTH || t->cols[c].only == LB_COL_TEXT_ONLY;
}

static size_t first_text(const struct lb_table *t)
{
	size_t c;

	for (c = 0; c < t->ncols && !in_text(t, c); c++)
		;
	return c;
}

static void print_text(const struct lb_table *t, int raw, int headings, size_t width)
{
	size_t nc = t->ncols, r, c, *w = calloc(nc ? nc : 1, sizeof *w), total = 0, over, cut;
	size_t last = 0, shown = 0;
	char **esc = calloc(t->nrows * nc + 1, sizeof *esc);

	if (w == NULL || esc == NULL) {
		free(w);
		free(esc);
		return;
	}
	for (c = 0; c < nc; c++) {
		w[c] = strlen(t->cols[c].name);
		if (w[c] < t->cols[c].width)
			w[c] = t->cols[c].width;
		if (in_text(t, c))
			last = c;
	}
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < nc; c++) {
			const char *s = t->cells[r * nc + c].text;

			if (!in_text(t, c))
				continue;
			esc[r * nc + c] = escaped(s != NULL ? s : "", raw, t->clean);
			if (esc[r * nc + c] != NULL && width_of(esc[r * nc + c]) > w[c])
				w[c] = width_of(esc[r * nc + c]);
		}
	for (c = 0; c < nc; c++)
		if (in_text(t, c))
			total += w[c] + (shown++ > 0);
	/* too wide for the terminal: the columns that may be cut give way */
	for (c = 0; !raw && width > 0 && total > width && c < nc; c++) {
		if (!in_text(t, c) || !t->cols[c].trunc || w[c] <= strlen(t->cols[c].name))
			continue;
		over = total - width;
		cut = w[c] - strlen(t->cols[c].name) < over ? w[c] - strlen(t->cols[c].name) : over;
		w[c] -= cut;
		total -= cut;
	}
	if (headings) {
		for (c = 0; c < nc; c++) {
			if (!in_text(t, c))
				continue;
			if (raw)
				printf("%s%s", c != first_text(t) ? " " : "", t->cols[c].name);
			else
				print_cell(&t->cols[c], t->cols[c].name, w[c], c == last);
		}
		putchar('\n');
	}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < nc; c++) {
			const char *s = esc[r * nc + c] != NULL ? esc[r * nc + c] : "?";

			if (!in_text(t, c))
				continue;
			if (raw)
				printf("%s%s", c != first_text(t) ? " " : "", s);
			else
				print_cell(&t->cols[c], s, w[c], c == last);
		}
		putchar('\n');
	}
	for (r = 0; r < t->nrows * nc; r++)
		free(esc[r]);
	free(esc);
	free(w);
}

/* Whether S is a JSON number as the tables write them: an optional minus, digits, a fraction. */
static int is_number(const char *s)
{
	const char *p = s + (*s == '-');
	size_t digits = strspn(p, "0123456789");

	if (digits == 0 || (digits > 1 && *p == '0'))
		return 0;
	p += digits;
	if (*p == '.') {
		digits = strspn(++p, "0123456789");
		if (digits == 0)
			return 0;
		p += digits;
	}
	return *p == '\0';
}

void lb_table_json(const struct lb_table *t, struct lb_json *j, const char *key)
{
	size_t nc = t->ncols, r, c, k;
	char name[64];

	if (key != NULL)
		lb_json_key(j, key);
	lb_json_begin_array(j);
	for (r = 0; r < t->nrows; r++) {
		if (!t->compact)
			lb_json_newline(j);
		lb_json_begin_object(j);
		for (c = 0; c < nc; c++) {
			const struct lb_table_cell *cell = &t->cells[r * nc + c];
			const char *s = cell->text;

			if ((t->cols[c].only != LB_COL_BOTH && t->cols[c].only != LB_COL_JSON_ONLY) ||
			    cell->omit)
				continue;
			for (k = 0; t->cols[c].name[k] != '\0' && k + 1 < sizeof name; k++)
				name[k] = (char)tolower((unsigned char)t->cols[c].name[k]);
			name[k] = '\0';
			lb_json_key(j, t->cols[c].key != NULL ? t->cols[c].key : name);
			if (s == NULL)
				lb_json_null(j);
			else if (t->cols[c].json == LB_COL_SECONDS)
				lb_json_seconds(j, cell->ns);
			else if (t->cols[c].json == LB_COL_NUM)
				lb_json_raw(j, is_number(s) ? s : "null");
			else if (t->cols[c].json == LB_COL_BOOL)
				lb_json_bool(j, strcmp(s, "1") == 0);
			else if (t->cols[c].json == LB_COL_JSON)
				lb_json_raw(j, s);
			else
				lb_json_string(j, s);
		}
		lb_json_end_object(j);
	}
	if (t->nrows > 0 && !t->compact)
		lb_json_newline(j);
	lb_json_end_array(j);
}

void lb_table_print_records(const struct lb_table *t, int indent, int namew)
{
	size_t nc = t->ncols, r, c, first = first_text(t);
	char *s;

	for (r = 0; r < t->nrows; r++) {
		if (r > 0)
			putchar('\n');
		for (c = first; c < nc; c++) {
			const struct lb_table_cell *cell = &t->cells[r * nc + c];

			if (!in_text(t, c) || cell->omit)
				continue;
			s = escaped(cell->text != NULL ? cell->text : "", 0, t->clean);
			if (c == first)
				printf("%s\n", s != NULL ? s : "?");
			else
				printf("%*s%-*s %s\n", indent, "", namew, t->cols[c].name,
				    s != NULL ? s : "?");
			free(s);
		}
	}
}

void lb_table_print(const struct lb_table *t, int form, int headings, size_t width)
{
	print_text(t, form == LB_TABLE_RAW, headings, width);
}

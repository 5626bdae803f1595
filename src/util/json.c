/* JSON output: one writer that places the commas, strings escaped for any bytes a record may hold. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "parse.h"
#include "json.h"
#include "text.h"

void lb_json_start(struct lb_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->more[0] = 0;
	j->key = 0;
	j->newline = 0;
}

/* What goes before a value or a key: a comma after another, a line break if asked. */
static void before(struct lb_json *j)
{
	if (j->key) {
		j->key = 0;
		return;
	}
	if (j->more[j->depth])
		putc(',', j->f);
	j->more[j->depth] = 1;
	if (j->newline)
		putc('\n', j->f);
	j->newline = 0;
}

static void open_one(struct lb_json *j, int c)
{
	before(j);
	putc(c, j->f);
	/* deeper than any document lockbox writes: commas as at the last level */
	if (j->depth + 1 < LB_JSON_DEPTH)
		j->depth++;
	j->more[j->depth] = 0;
}

static void close_one(struct lb_json *j, int c)
{
	if (j->newline)
		putc('\n', j->f);
	j->newline = 0;
	putc(c, j->f);
	if (j->depth > 0)
		j->depth--;
}

void lb_json_begin_object(struct lb_json *j)
{
	open_one(j, '{');
}

void lb_json_end_object(struct lb_json *j)
{
	close_one(j, '}');
}

void lb_json_begin_array(struct lb_json *j)
{
	open_one(j, '[');
}

void lb_json_end_array(struct lb_json *j)
{
	close_one(j, ']');
}

static void quoted(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	putc('"', f);
	while (*p != '\0') {
		n = lb_utf8_len(p);
		if (n == 0) {
			/* not UTF-8: JSON cannot carry the byte itself */
			fputs("\\ufffd", f);
			n = 1;
		} else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
	putc('"', f);
}

void lb_json_key(struct lb_json *j, const char *key)
{
	before(j);
	quoted(j->f, key);
	putc(':', j->f);
	j->key = 1;
}

void lb_json_string(struct lb_json *j, const char *s)
{
	before(j);
	if (s != NULL)
		quoted(j->f, s);
	else
		fputs("null", j->f);
}

void lb_json_int(struct lb_json *j, long long v)
{
	before(j);
	fprintf(j->f, "%lld", v);
}

void lb_json_bool(struct lb_json *j, int b)
{
	lb_json_raw(j, b ? "true" : "false");
}

void lb_json_null(struct lb_json *j)
{
	lb_json_raw(j, "null");
}

void lb_json_seconds(struct lb_json *j, int64_t ns)
{
	before(j);
	fprintf(j->f, "%.3f", (double)ns / LB_NS_PER_S);
}

void lb_json_raw(struct lb_json *j, const char *text)
{
	before(j);
	fputs(text, j->f);
}

void lb_json_newline(struct lb_json *j)
{
	j->newline = 1;
}

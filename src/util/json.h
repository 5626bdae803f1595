/* JSON output: one writer that places the commas, strings escaped for any bytes a record may hold. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_JSON_H
#define LOCKBOX_JSON_H

#include <stdint.h>
#include <stdio.h>

#define LB_JSON_DEPTH	16

/*
 * A document being written to F, compact: a value after another in the
 * same object or array gets its comma here, a key's value none.
 */
struct lb_json {
	FILE *f;
	unsigned depth;
	unsigned char more[LB_JSON_DEPTH];	/* a value written at that depth already */
	int key;		/* a key written: its value is next */
	int newline;		/* the next value or closing bracket starts a line */
};

void lb_json_start(struct lb_json *j, FILE *f);

void lb_json_begin_object(struct lb_json *j);
void lb_json_end_object(struct lb_json *j);
void lb_json_begin_array(struct lb_json *j);
void lb_json_end_array(struct lb_json *j);

/* A member's name; its value follows. */
void lb_json_key(struct lb_json *j, const char *key);

/* S escaped (NULL: null), an integer, true/false, null. */
void lb_json_string(struct lb_json *j, const char *s);
void lb_json_int(struct lb_json *j, long long v);
void lb_json_bool(struct lb_json *j, int b);
void lb_json_null(struct lb_json *j);

/* NS as seconds with three decimals: 12.345. */
void lb_json_seconds(struct lb_json *j, int64_t ns);

/* TEXT, a JSON value already written out (a number a table's cell holds), as it is. */
void lb_json_raw(struct lb_json *j, const char *text);

/* The next value or closing bracket on a line of its own. */
void lb_json_newline(struct lb_json *j);

#endif

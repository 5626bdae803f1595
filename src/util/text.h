/* Text from records and command lines, made safe to print and to put in JSON. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_TEXT_H
#define LOCKBOX_TEXT_H

#include <stddef.h>

/* The length of the well-formed UTF-8 character at P (1-4), 0 if none is. */
size_t lb_utf8_len(const unsigned char *p);

/*
 * In place: every control character (C0, DEL, C1) and every byte that does
 * not start a well-formed UTF-8 character (a stray byte, a character cut
 * short) becomes '?'. What is left prints as it reads and is valid UTF-8.
 */
void lb_text_clean(char *s);

/*
 * IN's LEN bytes into OUT (CAP bytes, NUL-terminated, cut short to fit),
 * printable on one line: backslash, newline, tab and CR as \\, \n, \t,
 * \r; any other control character (C0, DEL, C1) and every byte that
 * starts no well-formed UTF-8 character as \xHH. Returns OUT's length.
 */
size_t lb_text_escape(char *out, size_t cap, const char *in, size_t len);

/*
 * Of the N words NAMES, the one WORD is a likely typo of (a letter
 * inserted, deleted, changed or two swapped; two such slips in a WORD of
 * 8 letters or more; none under 4), for "did you mean"; NULL when none
 * is that close, or two are.
 */
const char *lb_nearest(const char *word, const char *const *names, size_t n);

/* The value of hexadecimal digit C (0-15), -1 if C is none. */
int lb_hexval(int c);

/*
 * A copy of URL (malloc'd; NULL when out of memory) that gives no secret
 * away: the password of user:password@ and the values of libpq's secret
 * parameters (password=, sslpassword=, ...) become ***.
 */
char *lb_url_mask(const char *url);

#endif

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

#endif

/* Minimal JSON output: strings escaped for any bytes a record may hold. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_JSON_H
#define LOCKBOX_JSON_H

#include <stdio.h>

void lb_json_string(FILE *f, const char *s);

#endif

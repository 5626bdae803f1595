/* Minimal JSON output: strings escaped for any bytes a record may hold. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "json.h"

void lb_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putc('"', f);
	for (; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			putc(*p, f);
	}
	putc('"', f);
}

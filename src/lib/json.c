/* Minimal JSON output: strings escaped for any bytes a record may hold. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "json.h"
#include "text.h"

void lb_json_string(FILE *f, const char *s)
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

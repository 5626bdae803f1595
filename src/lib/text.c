/* Text from records and command lines, made safe to print and to put in JSON. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include "text.h"

static int cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Well-formed per RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF. */
size_t lb_utf8_len(const unsigned char *p)
{
	unsigned char c = p[0];

	if (c < 0x80)
		return c != 0;
	if (c >= 0xc2 && c <= 0xdf)
		return cont(p[1]) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (!cont(p[1]) || !cont(p[2]) || (c == 0xe0 && p[1] < 0xa0) ||
		    (c == 0xed && p[1] > 0x9f))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (!cont(p[1]) || !cont(p[2]) || !cont(p[3]) ||
		    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

void lb_text_clean(char *s)
{
	unsigned char *in = (unsigned char *)s, *out = in;
	size_t n, i;

	while (*in != '\0') {
		n = lb_utf8_len(in);
		/* a control: C0 and DEL are one byte, C1 two (U+0080-U+009F) */
		if (n == 0 || *in < 0x20 || *in == 0x7f || (n == 2 && in[0] == 0xc2 && in[1] < 0xa0)) {
			*out++ = '?';
			in += n == 0 ? 1 : n;
			continue;
		}
		for (i = 0; i < n; i++)
			*out++ = *in++;
	}
	*out = '\0';
}

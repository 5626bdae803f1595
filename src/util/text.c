/* Text from records and command lines, made safe to print and to put in JSON. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/*
 * Messages quote what users typed and what files say: a control byte in
 * an argument would move the cursor, recolour a terminal, or split one
 * line of a log in two. Escaped, it shows what it is.
 */
size_t lb_text_escape(char *out, size_t cap, const char *in, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)in, *end = p + len;
	char tmp[8];
	size_t n = 0, k, i;

	if (cap == 0)
		return 0;
	while (p < end) {
		k = lb_utf8_len(p);
		if (k > (size_t)(end - p))
			k = 0;
		if (k == 1 && *p == '\\') {
			memcpy(tmp, "\\\\", k = 2);
			p++;
		} else if (k == 1 && *p == '\n') {
			memcpy(tmp, "\\n", k = 2);
			p++;
		} else if (k == 1 && *p == '\t') {
			memcpy(tmp, "\\t", k = 2);
			p++;
		} else if (k == 1 && *p == '\r') {
			memcpy(tmp, "\\r", k = 2);
			p++;
		} else if (k == 0 || *p < 0x20 || *p == 0x7f ||
		    (k == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {
			/* a C0 or C1 control, DEL, or a byte that starts no character */
			k = k == 2 ? 2 : 1;
			for (i = 0; i < k; i++) {
				tmp[4 * i] = '\\';
				tmp[4 * i + 1] = 'x';
				tmp[4 * i + 2] = hex[p[i] >> 4];
				tmp[4 * i + 3] = hex[p[i] & 15];
			}
			p += k;
			k *= 4;
		} else {
			memcpy(tmp, p, k);
			p += k;
		}
		if (n + k >= cap)
			break;
		memcpy(out + n, tmp, k);
		n += k;
	}
	out[n] = '\0';
	return n;
}

int lb_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* KEY (LEN bytes, percent-encoded as a URL may spell it) names a secret. */
static int secret_key(const char *key, size_t len)
{
	/* libpq's parameters whose values are secrets */
	static const char *const secrets[] = {
		"password", "sslpassword", "oauth_client_secret",
	};
	char plain[32];
	size_t n = 0, i;
	int hi, lo;

	for (i = 0; i < len; i++) {
		if (n + 1 >= sizeof plain)
			return 0;
		if (key[i] == '%' && len - i >= 3 && (hi = lb_hexval(key[i + 1])) >= 0 &&
		    (lo = lb_hexval(key[i + 2])) >= 0) {
			plain[n++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			plain[n++] = key[i];
		}
	}
	plain[n] = '\0';
	for (i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
		if (strcasecmp(plain, secrets[i]) == 0)
			return 1;
	return 0;
}

char *lb_url_mask(const char *url)
{
	const char *auth = strstr(url, "://"), *end, *at = NULL, *colon = NULL, *q, *s, *amp, *eq;
	size_t len = strlen(url);
	/* every masked part grows by at most 3 ("***" for an empty one) */
	char *out = malloc(len + 3 * (len + 2) + 1), *o;

	if (out == NULL)
		return NULL;
	o = out;
	auth = auth != NULL ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	/* the user information ends at the authority's last '@' */
	for (s = auth; s < end; s++)
		if (*s == '@')
			at = s;
	if (at != NULL)
		colon = memchr(auth, ':', (size_t)(at - auth));
	if (colon != NULL) {
		memcpy(o, url, (size_t)(colon + 1 - url));
		o += colon + 1 - url;
		memcpy(o, "***", 3);
		o += 3;
		s = at;
	} else {
		s = url;
	}
	q = strchr(end, '?');
	if (q == NULL) {
		strcpy(o, s);
		return out;
	}
	memcpy(o, s, (size_t)(q + 1 - s));
	o += q + 1 - s;
	/* the query: KEY=VALUE&..., up to a fragment */
	for (s = q + 1; *s != '\0' && *s != '#'; s = *amp == '&' ? amp + 1 : amp) {
		amp = s + strcspn(s, "&#");
		eq = memchr(s, '=', (size_t)(amp - s));
		if (eq != NULL && secret_key(s, (size_t)(eq - s))) {
			memcpy(o, s, (size_t)(eq + 1 - s));
			o += eq + 1 - s;
			memcpy(o, "***", 3);
			o += 3;
		} else {
			memcpy(o, s, (size_t)(amp - s));
			o += amp - s;
		}
		if (*amp == '&')
			*o++ = '&';
	}
	strcpy(o, s);
	return out;
}

/*
 * The optimal string alignment distance (Damerau-Levenshtein, each
 * substring edited once) between A and B, or LIMIT + 1 once it is
 * surely above LIMIT: three rows of the usual table.
 */
static size_t edit_distance(const char *a, const char *b, size_t limit)
{
	size_t la = strlen(a), lb = strlen(b), i, j, rows[3][64];
	size_t *two = rows[0], *prev = rows[1], *cur = rows[2], *t;

	if (la >= 63 || lb >= 63 || (la > lb ? la - lb : lb - la) > limit)
		return limit + 1;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		size_t best;

		cur[0] = best = i;
		for (j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], v = prev[j - 1] + cost;

			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    two[j - 2] + 1 < v)
				v = two[j - 2] + 1;
			cur[j] = v;
			if (v < best)
				best = v;
		}
		if (best > limit)
			return limit + 1;
		t = two;
		two = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

const char *lb_nearest(const char *word, const char *const *names, size_t n)
{
	/* one slip in a short word, two in a long one: "flock" is not "locks" */
	size_t i, d, best = 3, limit = strlen(word) >= 8 ? 2 : strlen(word) >= 4 ? 1 : 0;
	const char *found = NULL;
	int ties = 0;

	for (i = 0; i < n; i++) {
		d = edit_distance(word, names[i], limit);
		if (d == 0 || d > limit || d > best)
			continue;
		ties = d == best ? ties + 1 : 0;
		best = d;
		found = names[i];
	}
	return ties == 0 ? found : NULL;
}

/* What a waiting process or a watcher shows as its own command line, for list and ps to name it by. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "title.h"

/*
 * The kernel's argument area (what /proc/PID/cmdline reads), and the
 * copy ARGV points into once lb_title_init has run. Only the program
 * (main) sets them: inside a host (the bash builtin), the area is the
 * host's and stays as it is.
 */
static char *area, *copy;
static size_t area_len;

void lb_title_init(int argc, char **argv)
{
	char *end;
	int i;

	if (argc < 1 || argv[0] == NULL)
		return;
	/* one run of NUL-terminated strings, as the kernel lays them out */
	for (i = 0, end = argv[0]; i < argc; i++) {
		if (argv[i] != end)
			return;
		end += strlen(argv[i]) + 1;
	}
	copy = malloc((size_t)(end - argv[0]));
	if (copy == NULL)
		return;
	area = argv[0];
	area_len = (size_t)(end - argv[0]);
	memcpy(copy, area, area_len);
	for (i = 0; i < argc; i++)
		argv[i] = copy + (argv[i] - area);
}

void lb_title_waiting(const char *record)
{
	size_t n0, n;

	if (area == NULL)
		return;
	n0 = strlen(copy) + 1 + sizeof LB_TITLE_WAITING;
	/* room for the record's first byte and its NUL at least */
	if (n0 + 2 > area_len)
		return;
	memset(area + n0, 0, area_len - n0);
	memcpy(area + strlen(copy) + 1, LB_TITLE_WAITING, sizeof LB_TITLE_WAITING);
	n = strlen(record);
	if (n > area_len - n0 - 1)
		n = area_len - n0 - 1;
	memcpy(area + n0, record, n);
}

void lb_title_restore(void)
{
	if (area != NULL)
		memcpy(area, copy, area_len);
}

void lb_title_set(const char *text)
{
	size_t n;

	if (area == NULL || area_len < 2)
		return;
	n = strlen(text);
	if (n > area_len - 1)
		n = area_len - 1;
	/* one string, NUL-padded: the area's last byte stays a NUL */
	memset(area, 0, area_len);
	memcpy(area, text, n);
}

/* locks: the lock files in use on this host, their holders and waiters. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "applets.h"
#include "err.h"
#include "exitcodes.h"
#include "json.h"
#include "opts.h"
#include "pool.h"
#include "slots.h"

#define USAGE \
	"usage: locks [--json]"

#define HELP \
	"\n" \
	"Every lockbox lock file in use on this host (a lock held or waited for),\n" \
	"with its holders and waiters as 'mutex FILE list' shows them. root sees\n" \
	"them all; another user, the files that their own processes have open\n" \
	"and that they may read.\n" \
	"\n" \
	"      --json          the report as JSON\n" \
	"  -h, --help          this help\n" \
	"      --version       print lockbox's version and lock kind\n" \
	"\n" \
	"Exit: 0, or 125 when the lock table cannot be read. See lockbox(1).\n"

enum { OPT_JSON = 256, OPT_VERSION };

static const struct option longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 }
};

/* One file: its path, then list's table; or one JSON object. 0, or -1 when it cannot be read. */
static int report(const char *path, int json, int first)
{
	struct lb_holders h, w;
	struct lb_pool *pool = lb_pool_open(path, LB_POOL_READ, NULL);

	if (pool == NULL)
		return -1;
	if (lb_pool_holders(pool, &h) != 0) {
		lb_pool_close(pool);
		return -1;
	}
	if (lb_pool_waiters(pool, &w) != 0) {
		lb_holders_free(&h);
		lb_pool_close(pool);
		return -1;
	}
	if (json) {
		printf("%s{\"path\":", first ? "" : ",");
		lb_json_string(stdout, path);
		printf(",\"held\":%zu,\"waiting\":%zu,\"holders\":", h.n, w.n);
		poolcmd_print_json(&h);
		printf(",\"waiters\":");
		poolcmd_print_json(&w);
		printf("}");
	} else {
		printf("%s%s\n", first ? "" : "\n", path);
		poolcmd_print_list(0, (lb_pool_caps(pool) & LB_POOL_HOSTS) != 0, &h, &w);
	}
	lb_holders_free(&h);
	lb_holders_free(&w);
	lb_pool_close(pool);
	return 0;
}

int locks_main(int argc, char **argv)
{
	char **paths;
	size_t n, i;
	int c, json = 0, first = 1;

	lb_getopt_reset();
	while ((c = lb_getopt(argc, argv, "+:h", longopts)) != -1) {
		switch (c) {
		case 'h':
			lb_help(USAGE, HELP);
		case OPT_JSON:
			json = 1;
			break;
		case OPT_VERSION:
			lb_version();
		}
	}
	if (optind < argc)
		lb_usage_error("unexpected argument '%s'", argv[optind]);
	if (lb_pool_in_use(&paths, &n) != 0)
		return LB_EXIT_FAIL;
	if (json)
		printf("[");
	/* a file let go of, or replaced, since the table was read is passed over */
	for (i = 0; i < n; i++) {
		if (report(paths[i], json, first) == 0)
			first = 0;
		free(paths[i]);
	}
	free(paths);
	if (json)
		printf("]\n");
	return LB_EXIT_OK;
}

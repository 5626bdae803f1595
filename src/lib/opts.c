/* Option parsing with the house's one-line usage errors. */
#include "config.h"

#include <string.h>

#include "err.h"
#include "opts.h"

void lb_getopt_reset(void)
{
	optind = 0;	/* GNU: start afresh, also for a second pass */
	opterr = 0;	/* our own messages */
}

/* An option getopt_long refused; WORD is the argument it was reading. */
static _Noreturn void bad_option(const char *word, int c)
{
	int n = (int)strcspn(word, "=");

	if (strncmp(word, "--", 2) != 0)
		lb_usage_error(c == ':' ? "option '-%c' needs an argument" :
		    "invalid option '-%c'", optopt);
	if (c == ':')
		lb_usage_error("option '%.*s' needs an argument", n, word);
	if (optopt != 0)	/* a known long option, given an argument */
		lb_usage_error("option '%.*s' takes no argument", n, word);
	lb_usage_error("invalid option '%s'", word);
}

int lb_getopt(int argc, char **argv, const char *shortopts,
    const struct option *longopts)
{
	/* optind stays on a cluster such as -qz while getopt is inside it */
	int word = optind > 0 ? optind : 1;
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	if (c == '?' || c == ':')
		bad_option(argv[word], c);
	return c;
}

/* Option parsing with the house's one-line usage errors. */
#ifndef LOCKBOX_OPTS_H
#define LOCKBOX_OPTS_H

#include <getopt.h>

/*
 * getopt_long for applets: SHORTOPTS must start with "+:" (stop at the
 * first positional word, so COMMAND's own options are never read; report
 * missing arguments). Returns the next option, or -1; an unknown option,
 * a missing argument or an argument given to a flag is a usage error
 * (one line, status 125). lb_getopt_reset() starts a new parse.
 */
void lb_getopt_reset(void);
int lb_getopt(int argc, char **argv, const char *shortopts,
    const struct option *longopts);

#endif

/* The release on EXIT, chained with the script's own EXIT trap: the trap builtin that knows of it, and the handler. */
/* SPDX-License-Identifier: ISC */
/*
 * Once a shell takes a lock, its real EXIT trap is the library's
 * handler (HANDLER): it releases every lock the shell holds, then runs
 * the script's own EXIT command, with $? still the exit status.
 * Releasing first means a script command that calls exit, fails under
 * set -e, or hangs cannot keep the lock held by a background child.
 * The trap builtin is replaced by one that, once the handler is set,
 * sets, resets and prints the script's own command in its place: a
 * script may set its EXIT trap before or after acquiring, see it with
 * trap -p (and save and restore it through $(trap -p EXIT)), and both
 * run. Other signals go straight to bash's trap.
 */
#define _GNU_SOURCE 1	/* as bash's own config.h has it */

#include <sys/types.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtins.h"
#include "shell.h"
#include "builtext.h"
#include "common.h"
#include "execute_cmd.h"

#include "exitcodes.h"
#include "inshell.h"

#define HANDLER "builtin _lockbox_builtin exit"

/*
 * exit_pid is the process whose real EXIT trap is HANDLER; exit_cmd the
 * script's own EXIT command, run after the release (exit_set: it has
 * one). seen_*: an EXIT trap set through the builtin before the first
 * acquire, by process seen_pid (in a subshell, trap -p still shows the
 * parent's, which does not run there).
 */
static pid_t exit_pid;
static char *exit_cmd;
static int exit_set;
static pid_t seen_pid;
static char *seen_cmd;
static int seen_set;

static void keep(char **slot, const char *text)
{
	char *copy = strdup(text != NULL ? text : "");

	if (copy == NULL)
		return;
	free(*slot);
	*slot = copy;
}

/* bash's own trap, given WORDS (NULL-terminated); stdout into *OUT with OUT */
static int bash_trap(char **out, char **words)
{
	return lb_sh_builtin(out, trap_builtin, words);
}

/* Whether a signal spec names EXIT (bash takes exit in any case, and 0). */
static int is_exit(const char *s)
{
	if (strcasecmp(s, "EXIT") == 0)
		return 1;
	if (*s == '\0' || strspn(s, "0123456789") != strlen(s))
		return 0;
	while (*s == '0')
		s++;
	return *s == '\0';
}

/*
 * The command of the real EXIT trap (to free), from `trap -p EXIT`:
 * "trap -- 'CMD' EXIT", in bash's own quoting. NULL: none, which POSIX
 * mode prints as "trap -- - EXIT" (the default action, as "-" sets it).
 */
static char *exit_trap_now(void)
{
	char *words[] = { "-p", "EXIT", NULL }, *out = NULL, *cmd, *p, *q;

	if (bash_trap(&out, words) != 0 || out == NULL || strncmp(out, "trap -- ", 8) != 0) {
		free(out);
		return NULL;
	}
	cmd = malloc(strlen(out) + 1);
	if (cmd == NULL) {
		free(out);
		return NULL;
	}
	/* 'text', and \' between quoted parts */
	for (p = out + 8, q = cmd; *p != '\0' && *p != ' ';) {
		if (*p == '\'') {
			for (p++; *p != '\0' && *p != '\''; p++)
				*q++ = *p;
			if (*p == '\'')
				p++;
		} else if (p[0] == '\\' && p[1] != '\0') {
			*q++ = p[1];
			p += 2;
		} else {
			*q++ = *p++;
		}
	}
	*q = '\0';
	free(out);
	if (strcmp(cmd, "-") == 0) {
		free(cmd);
		return NULL;
	}
	return cmd;
}

void lb_sh_arm(void)
{
	char *words[] = { "--", HANDLER, "EXIT", NULL }, *now;

	if (exit_pid == getpid())
		return;
	free(exit_cmd);
	exit_cmd = NULL;
	exit_set = 0;
	if (seen_pid == getpid()) {
		keep(&exit_cmd, seen_cmd);
		exit_set = seen_set;
	} else if (getpid() == dollar_dollar_pid && (now = exit_trap_now()) != NULL) {
		/* at the top level bash shows the real one; in a subshell the parent's */
		exit_cmd = now;
		exit_set = 1;
	}
	if (bash_trap(NULL, words) == 0)
		exit_pid = getpid();
}

int lb_sh_on_exit(void)
{
	int status = last_command_exit_value;

	lb_sh_release_all();
	if (exit_set && exit_cmd != NULL && *exit_cmd != '\0') {
		/* the script's command sees the status the shell exits with */
		last_command_exit_value = status;
		return evalstring(savestring(exit_cmd), "trap", SEVAL_NOHIST);
	}
	return status;
}

void lb_sh_disarm(void)
{
	char *restore[] = { "--", exit_cmd, "EXIT", NULL };
	char *reset[] = { "-", "EXIT", NULL };

	lb_sh_release_all();
	if (exit_pid != getpid())
		return;
	bash_trap(NULL, exit_set && exit_cmd != NULL ? restore : reset);
	exit_pid = 0;
}

/*
 * trap -p [SIG...], with the script's own EXIT command in place of the
 * handler. In a subshell bash still shows the parent's traps until one
 * is set, and so does this: $(trap -p) works.
 */
static int print(char **sigs)
{
	static const char mine[] = "trap -- '" HANDLER "' EXIT";
	char **words, *out = NULL, *at, *view = NULL;
	size_t n, len;
	int status;

	for (n = 0; sigs[n] != NULL; n++)
		;
	words = malloc((n + 2) * sizeof *words);
	if (words == NULL)
		return LB_EXIT_FAIL;
	words[0] = "-p";
	memcpy(words + 1, sigs, (n + 1) * sizeof *words);
	status = bash_trap(&out, words);
	free(words);
	if (out == NULL)
		return status;
	at = strstr(out, mine);
	if (at != NULL && exit_set) {
		view = sh_single_quote(exit_cmd != NULL ? exit_cmd : "");
		printf("%.*strap -- %s EXIT%s", (int)(at - out), out, view, at + sizeof mine - 1);
		xfree(view);
	} else if (at != NULL) {
		/* the line, and the newline that ends it */
		len = sizeof mine - 1;
		if (at[len] == '\n')
			len++;
		memmove(at, at + len, strlen(at + len) + 1);
		printf("%s", out);
	} else {
		printf("%s", out);
	}
	free(out);
	if (sh_chkwrite(0) != 0 && status == 0)
		status = EXECUTION_FAILURE;
	return status;
}

int lb_sh_trap(int argc, char **argv)
{
	char **sigs, **words, *action;
	int i = 1, n, reset, exit_hit = 0, others = 0, status = 0, j;

	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (strcmp(argv[i], "-p") == 0)
			return print(argv + i + 1);
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			/* -l, and what bash says of other options */
			return bash_trap(NULL, argv + i);
		break;
	}
	if (i == argc)
		return print(argv + i);
	if (argc - i == 1) {
		if (!is_exit(argv[i]))
			return bash_trap(NULL, argv + i);
		/* trap EXIT: reset, as bash takes one word */
		action = "-";
		sigs = argv + i;
	} else {
		action = argv[i];
		sigs = argv + i + 1;
	}
	reset = strcmp(action, "-") == 0;
	for (n = 0; sigs[n] != NULL; n++) {
		if (is_exit(sigs[n]))
			exit_hit = 1;
		else
			others++;
	}
	words = malloc(((size_t)n + 3) * sizeof *words);
	if (words == NULL)
		return LB_EXIT_FAIL;
	words[0] = "--";
	words[1] = action;
	if (exit_pid != getpid()) {
		/* not armed here: bash's trap does it all; an EXIT trap is
		 * remembered for lb_sh_arm, since trap -p in a subshell
		 * shows the parent's */
		memcpy(words + 2, sigs, ((size_t)n + 1) * sizeof *words);
		status = bash_trap(NULL, words);
		free(words);
		if (status == 0 && exit_hit) {
			seen_pid = getpid();
			keep(&seen_cmd, reset ? "" : action);
			seen_set = !reset;
		}
		return status;
	}
	for (n = 2, j = 0; sigs[j] != NULL; j++)
		if (!is_exit(sigs[j]))
			words[n++] = sigs[j];
	words[n] = NULL;
	if (others > 0)
		status = bash_trap(NULL, words);
	free(words);
	if (exit_hit) {
		keep(&exit_cmd, reset ? "" : action);
		exit_set = !reset;
	}
	return status;
}

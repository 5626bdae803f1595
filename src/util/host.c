/* Where lockbox runs: as its own program, or inside a process that lives on after it (the bash builtin). */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "host.h"

/* the call under way inside a host; NULL when lockbox is the program */
static struct {
	jmp_buf *back;
	int status;		/* what lb_exit was given */
	const sigset_t *sleep_mask;
	int (*stop)(void);
	int signal;		/* the one the host must act on, once seen */
} call;

void lb_exit(int status)
{
	if (call.back != NULL) {
		call.status = status;
		longjmp(*call.back, 1);
	}
	exit(status);
}

int lb_hosted(void)
{
	return call.back != NULL;
}

pid_t lb_caller(void)
{
	return call.back != NULL ? getpid() : getppid();
}

int lb_host_run(int (*fn)(int, char **), int argc, char **argv,
    const sigset_t *sleep_mask, int (*stop)(void))
{
	jmp_buf back;
	/* volatile: read after longjmp */
	volatile int status;

	call.sleep_mask = sleep_mask;
	call.stop = stop;
	call.signal = 0;
	call.status = 0;
	call.back = &back;
	if (setjmp(back) == 0)
		status = fn(argc, argv);
	else
		status = call.status;
	call.back = NULL;
	call.sleep_mask = NULL;
	call.stop = NULL;
	return status;
}

const sigset_t *lb_host_sleep_mask(void)
{
	return call.back != NULL ? call.sleep_mask : NULL;
}

int lb_host_stop(void)
{
	if (call.back != NULL && call.signal == 0 && call.stop != NULL)
		call.signal = call.stop();
	return call.signal;
}

int lb_host_interrupted(void)
{
	return call.signal;
}

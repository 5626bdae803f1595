/* The futex calls, and the word of a lock file that releases announce (lb_wake_word). */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "futex.h"
#include "wait.h"

long lb_futex(void *word, int op, uint32_t val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

/*
 * For the test suite only, LOCKBOX_TEST_FUTEX takes the paths this kernel
 * does not: "plain", futex_waitv missing (before Linux 5.16, or forbidden
 * by a seccomp filter); "off", no futex watch at all (lb_wait_on_word fails,
 * as where the word cannot be mapped). Anything else, or unset: neither.
 */
int lb_futex_kind(void)
{
	static int kind;
	const char *env;

	if (kind == 0) {
		/* test only: see ARCHITECTURE.md */
		env = secure_getenv("LOCKBOX_TEST_FUTEX");
		kind = env == NULL ? LB_FUTEX_FULL : strcmp(env, "plain") == 0 ? LB_FUTEX_PLAIN :
		    strcmp(env, "off") == 0 ? LB_FUTEX_OFF : LB_FUTEX_FULL;
	}
	return kind;
}

/*
 * The file's first OFF + 4 bytes, mapped shared, for a futex on the word
 * at OFF: aligned, in the first page. NULL with errno when it cannot be.
 */
void *lb_futex_map(int fd, off_t off)
{
	void *map;

	if (off < 0 || off % 4 != 0 || off + 4 > sysconf(_SC_PAGESIZE)) {
		errno = EINVAL;
		return NULL;
	}
	map = mmap(NULL, (size_t)off + 4, PROT_READ, MAP_SHARED, fd, 0);
	return map == MAP_FAILED ? NULL : map;
}

void lb_wake_word(int fd, off_t off)
{
	char *map = lb_futex_map(fd, off);

	if (map == NULL)
		return;
	lb_futex(map + off, FUTEX_WAKE, INT_MAX);
	munmap(map, (size_t)off + 4);
}

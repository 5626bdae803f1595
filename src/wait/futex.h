/* The futex ABI wait.c uses: from <linux/futex.h>, or written out where the C library ships no kernel headers (musl-gcc). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_FUTEX_H
#define LOCKBOX_FUTEX_H

#include <stdint.h>
#include <sys/syscall.h>

#ifdef HAVE_LINUX_FUTEX_H
#include <linux/futex.h>
#else
/*
 * The values are the kernel's ABI (include/uapi/linux/futex.h): fixed
 * forever, the same on every architecture.
 */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_32 2
struct futex_waitv {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t __reserved;
};
#endif

/*
 * futex_waitv (Linux 5.16) is 449 in the table shared by every
 * architecture but alpha, mips and x32; a C library older than the call (musl 1.2.3)
 * does not name it. An older kernel answers ENOSYS, and wait.c falls back
 * to FUTEX_WAIT.
 */
#if !defined(SYS_futex_waitv) && ((defined(__x86_64__) && !defined(__ILP32__)) || defined(__i386__) || \
	defined(__aarch64__) || defined(__arm__) || defined(__riscv) || \
	defined(__powerpc__) || defined(__s390__) || defined(__loongarch__))
#define SYS_futex_waitv 449
#endif

#include <sys/types.h>

/* futex(2) on WORD with OP and VAL, no timeout */
long lb_futex(void *word, int op, uint32_t val);

/*
 * Which futex paths to take: all (LB_FUTEX_FULL), none of futex_waitv
 * (LB_FUTEX_PLAIN), or no futex watch at all (LB_FUTEX_OFF); the last
 * two only when the test suite asks (LOCKBOX_TEST_FUTEX).
 */
enum { LB_FUTEX_FULL = 1, LB_FUTEX_PLAIN, LB_FUTEX_OFF };
int lb_futex_kind(void);

/*
 * FD's file's first OFF + 4 bytes, mapped shared, for a futex on the word
 * at OFF (aligned, in the first page): munmap OFF + 4 bytes. NULL with
 * errno when it cannot be.
 */
void *lb_futex_map(int fd, off_t off);

/*
 * After changing the word at OFF of the file open on FD: wake whoever
 * waits on it (on this host; the wait set's word, wait.h). Best effort: a
 * file that cannot be mapped wakes nobody.
 */
void lb_wake_word(int fd, off_t off);

#endif

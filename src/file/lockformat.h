/* The lock file's format: its header and its holder records (lockformat.c). */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_LOCKFORMAT_H
#define LOCKBOX_LOCKFORMAT_H

#include <stdint.h>
#include <sys/types.h>

#include "le.h"
#include "poolsize.h"
#include "proc.h"

/*
 * Format version 1, every integer little-endian and fixed-width, so hosts of
 * any word size and byte order can share a file (over NFS):
 *
 *   header   bytes [0, 4096): magic, sizes and the "high" hint in the first
 *            64; the rest is the atom area (adaptive's run history, zeros
 *            elsewhere). A write lock on the whole header serialises
 *            acquisitions and guards every write to the file.
 *   slot s   bytes [4096 + 256(s-1), 4096 + 256s): its holder record; a
 *            write lock on the record's first byte is the slot itself
 *   queue    lock bytes only, far past any record (the file never grows
 *            there): byte 2^32 + t is waiter t's ticket, and a write lock
 *            on byte 2^32 - 1 serialises taking tickets (see filequeue.c);
 *            bytes 2^32 + 2^48 + 2t and 2t+1 are waiter t's mark (LB_WAITER_OFF);
 *            byte 2^32 + 3 * 2^48 + t is held by waiter t until it is at
 *            the queue's head (LB_NEXT_OFF)
 */
#define LB_MAGIC	"lockbox lock v1\n"
#define LB_MAGIC_LEN	16
#define LB_HDR_SIZE	4096
#define LB_ATOM_OFF	64
#define LB_ATOM_SIZE	(LB_HDR_SIZE - LB_ATOM_OFF)
_Static_assert(LB_ATOM_SIZE == LB_POOL_ATOM_SIZE, "atom area size");
#define LB_REC_SIZE	256
#define LB_SLOT_LIMIT	LB_POOL_MAX_SLOTS

/* header fields */
#define LB_HDR_OFF_HDRSIZE	16
#define LB_HDR_OFF_RECSIZE	20
#define LB_HDR_OFF_HIGH		24	/* highest slot with a record in use: a hint */
#define LB_HDR_OFF_TICKET	32	/* u64: the next waiter's ticket */
#define LB_HDR_OFF_GEN		40	/* u64: one more at every write-locked visit */
#define LB_HDR_OFF_RELEASES	48	/* u64: one more at every explicit release */
#define LB_HDR_OFF_PASSES	56	/* u64: one more when a stopped waiter is to be passed */
#define LB_HDR_FIELDS		64	/* bytes before the atom area */

#define LB_QUEUE_OFF		((off_t)1 << 32)
#define LB_JOIN_OFF		(LB_QUEUE_OFF - 1)
/* tickets count up to this, and start again at 0 */
#define LB_QUEUE_TICKETS	((uint64_t)1 << 48)
/*
 * Byte LB_WAITER_OFF + 2t (+ 1 for a shared request): waiter t's mark, a
 * classic POSIX read lock, which the kernel's lock table shows with its
 * process (unlike the ticket's open file description lock): how list
 * names those who wait without a look through /proc. A read lock, so
 * that it never keeps anyone from a read lock over the queue's bytes.
 */
#define LB_WAITER_OFF		(LB_QUEUE_OFF + (off_t)LB_QUEUE_TICKETS)

/*
 * Byte LB_NEXT_OFF + t: write-locked by waiter t from the moment it takes
 * its ticket until it is the head of the queue (or leaves it), so that
 * the waiter behind it learns, from a lock request on it, that it is now
 * the one behind the head (filequeue.c). An older lockbox's waiter holds
 * none: it is taken for the head, and watched as one.
 */
#define LB_NEXT_OFF		(LB_WAITER_OFF + 2 * (off_t)LB_QUEUE_TICKETS)

/*
 * The fcntl half of a lock on a file that is not a lockbox lock file
 * (fileany.c): a read lock on bytes [0, LB_PATH_LEN), every byte a lock
 * file's header and slots may use and none of its queue's, so that it
 * conflicts with the write locks of other programs on the whole file and
 * with a lock file's own, whatever the file holds now.
 */
#define LB_PATH_LEN		LB_JOIN_OFF

/* record fields */
#define LB_REC_HELD		UINT32_C(0x444c4f48)	/* "HOLD" */
#define LB_REC_FREE		UINT32_C(0)

static inline off_t lb_slot_offset(unsigned slot)
{
	return (off_t)LB_HDR_SIZE + (off_t)(slot - 1) * LB_REC_SIZE;
}

/*
 * The top bit of a record's slot word: its holder holds a shared lock
 * (mutex -s), one of any number, which only other shared holders share
 * the pool with. A lockbox that does not know the bit counts the holder
 * as any other: a slot held, which keeps its mutex out.
 */
#define LB_REC_SHARED		UINT32_C(0x80000000)

/* A record's state word, its holder, and whether that one holds it shared. */
uint32_t lb_record_state(const unsigned char rec[LB_REC_SIZE]);
void lb_record_encode(unsigned char rec[LB_REC_SIZE], unsigned slot,
    const struct lb_ident *who, int shared);
int lb_record_shared(const unsigned char rec[LB_REC_SIZE]);
/* The PID of a record, alone: cheaper than decoding it all. */
pid_t lb_record_pid(const unsigned char rec[LB_REC_SIZE]);
void lb_record_decode(const unsigned char rec[LB_REC_SIZE], struct lb_ident *who);

/* A fresh header. */
void lb_header_init(unsigned char hdr[LB_HDR_SIZE]);

#endif

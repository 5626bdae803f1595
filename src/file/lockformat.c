/* The lock file's format: its header and its holder records, encoded and decoded. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "le.h"
#include "lockformat.h"
#include "text.h"

/* record layout, offsets in bytes */
enum {
	REC_STATE = 0, REC_PID = 4, REC_STARTTIME = 8, REC_WALL = 16,
	REC_BOOT = 24, REC_UID = 32, REC_SLOT = 36, REC_BOOTID = 40,
	REC_HOST = 56, REC_COMMAND = REC_HOST + LB_HOST_MAX
};
_Static_assert(REC_COMMAND + LB_COMMAND_MAX == LB_REC_SIZE, "record size");

uint32_t lb_record_state(const unsigned char rec[LB_REC_SIZE])
{
	return lb_get32(rec + REC_STATE);
}

void lb_record_encode(unsigned char rec[LB_REC_SIZE], unsigned slot,
    const struct lb_ident *who, int shared)
{
	memset(rec, 0, LB_REC_SIZE);
	lb_put32(rec + REC_STATE, LB_REC_HELD);
	lb_put32(rec + REC_PID, (uint32_t)who->pid);
	lb_put64(rec + REC_STARTTIME, who->starttime);
	lb_put64(rec + REC_WALL, (uint64_t)who->wall_ns);
	lb_put64(rec + REC_BOOT, (uint64_t)who->boot_ns);
	lb_put32(rec + REC_UID, who->uid);
	lb_put32(rec + REC_SLOT, slot | (shared ? LB_REC_SHARED : 0));
	memcpy(rec + REC_BOOTID, who->boot_id, 16);
	/* NUL-padded fields; the memset left the last byte of each a NUL */
	memcpy(rec + REC_HOST, who->host, strnlen(who->host, LB_HOST_MAX - 1));
	memcpy(rec + REC_COMMAND, who->command,
	    strnlen(who->command, LB_COMMAND_MAX - 1));
}

int lb_record_shared(const unsigned char rec[LB_REC_SIZE])
{
	return (lb_get32(rec + REC_SLOT) & LB_REC_SHARED) != 0;
}

pid_t lb_record_pid(const unsigned char rec[LB_REC_SIZE])
{
	return (pid_t)(lb_get32(rec + REC_PID) & 0x7fffffff);
}

/* Decoding never trusts the bytes: strings are cut to their fields. */
void lb_record_decode(const unsigned char rec[LB_REC_SIZE], struct lb_ident *who)
{
	memset(who, 0, sizeof *who);
	who->pid = lb_record_pid(rec);
	who->starttime = lb_get64(rec + REC_STARTTIME);
	who->wall_ns = (int64_t)lb_get64(rec + REC_WALL);
	who->boot_ns = (int64_t)lb_get64(rec + REC_BOOT);
	who->uid = lb_get32(rec + REC_UID);
	memcpy(who->boot_id, rec + REC_BOOTID, 16);
	memcpy(who->host, rec + REC_HOST, LB_HOST_MAX - 1);
	memcpy(who->command, rec + REC_COMMAND, LB_COMMAND_MAX - 1);
	lb_text_clean(who->host);
	lb_text_clean(who->command);
}

void lb_header_init(unsigned char hdr[LB_HDR_SIZE])
{
	memset(hdr, 0, LB_HDR_SIZE);
	memcpy(hdr, LB_MAGIC, LB_MAGIC_LEN);
	lb_put32(hdr + LB_HDR_OFF_HDRSIZE, LB_HDR_SIZE);
	lb_put32(hdr + LB_HDR_OFF_RECSIZE, LB_REC_SIZE);
}

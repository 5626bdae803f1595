/* Process identity: who holds a slot, told apart from a later PID reuse. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"

static ssize_t read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

int lb_boot_id(uint8_t id[16])
{
	static uint8_t cached[16];
	static int state;	/* 0 unread, 1 read, -1 unreadable */
	char text[64];
	const char *p;
	int i = 0;

	if (state == 0) {
		state = -1;
		if (read_small("/proc/sys/kernel/random/boot_id", text, sizeof text) > 0) {
			for (p = text; *p != '\0' && i < 32; p++) {
				int v = *p >= '0' && *p <= '9' ? *p - '0' :
				    *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

				if (v < 0)
					continue;	/* the dashes */
				cached[i / 2] = (uint8_t)(cached[i / 2] << 4 | v);
				i++;
			}
			if (i == 32)
				state = 1;
		}
	}
	memcpy(id, cached, 16);
	return state == 1 ? 0 : -1;
}

uint64_t lb_proc_starttime(pid_t pid)
{
	char path[64], buf[1024];
	const char *p;
	int field;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof buf) <= 0)
		return 0;
	/* comm may hold spaces and parentheses: count fields after the last ')' */
	p = strrchr(buf, ')');
	if (p == NULL)
		return 0;
	for (field = 2; field < 22 && *p != '\0'; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

static void command_from_argv(char *dst, size_t size, char *const argv[])
{
	size_t n = 0;

	dst[0] = '\0';
	for (; *argv != NULL && n + 1 < size; argv++) {
		int r = snprintf(dst + n, size - n, n ? " %s" : "%s", *argv);

		if (r < 0)
			break;
		n += (size_t)r;
	}
}

static void command_from_proc(char *dst, size_t size, pid_t pid)
{
	char path[64];
	ssize_t n, i;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	n = read_small(path, dst, size);
	if (n <= 0) {
		dst[0] = '\0';
		return;
	}
	for (i = 0; i < n - 1; i++)
		if (dst[i] == '\0')
			dst[i] = ' ';
}

void lb_ident_fill(struct lb_ident *who, pid_t pid, char *const argv[])
{
	memset(who, 0, sizeof *who);
	who->pid = pid;
	who->starttime = lb_proc_starttime(pid);
	lb_boot_id(who->boot_id);
	who->wall_ns = lb_now(CLOCK_REALTIME);
	who->boot_ns = lb_now(CLOCK_BOOTTIME);
	who->uid = (uint32_t)getuid();
	if (gethostname(who->host, sizeof who->host - 1) != 0)
		who->host[0] = '\0';
	if (argv != NULL)
		command_from_argv(who->command, sizeof who->command, argv);
	else
		command_from_proc(who->command, sizeof who->command, pid);
}

static int same_boot(const struct lb_ident *who)
{
	uint8_t ours[16];

	return lb_boot_id(ours) == 0 && memcmp(ours, who->boot_id, 16) == 0;
}

int lb_ident_gone(const struct lb_ident *who)
{
	if (who->pid <= 0 || !same_boot(who))
		return 0;	/* another host or boot: only its lock can tell */
	return kill(who->pid, 0) != 0 && errno == ESRCH;
}

int64_t lb_ident_age(const struct lb_ident *who)
{
	int64_t age = same_boot(who) ? lb_now(CLOCK_BOOTTIME) - who->boot_ns
	    : lb_now(CLOCK_REALTIME) - who->wall_ns;

	return age > 0 ? age : 0;	/* a start "in the future" counts as now */
}

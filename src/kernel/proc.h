/* Process identity: who holds a slot, told apart from a later PID reuse. */
/* SPDX-License-Identifier: ISC */
#ifndef LOCKBOX_PROC_H
#define LOCKBOX_PROC_H

#include <stdint.h>
#include <sys/types.h>

#define LB_HOST_MAX 64
#define LB_COMMAND_MAX 136

struct lb_ident {
	pid_t pid;
	uint64_t starttime;		/* clock ticks after boot (/proc stat field 22) */
	uint8_t boot_id[16];		/* this boot of this host */
	int64_t wall_ns;		/* CLOCK_REALTIME when the slot was taken */
	int64_t boot_ns;		/* CLOCK_BOOTTIME when the slot was taken */
	uint32_t uid;
	char host[LB_HOST_MAX];		/* NUL-terminated, possibly truncated */
	char command[LB_COMMAND_MAX];	/* NUL-terminated, possibly truncated */
};

/* The running kernel's boot id; 0, or -1 when it cannot be read. */
int lb_boot_id(uint8_t id[16]);

/* Whether boot ids A and B are both known (not all zero) and the same boot. */
int lb_same_boot(const uint8_t a[16], const uint8_t b[16]);

/* Whether WHO runs (or ran) on this boot of this host: its PID and clocks are ours. */
int lb_ident_local(const struct lb_ident *who);

/*
 * pidfd_open(2) (Linux 5.3), through syscall(2): older C libraries lack
 * the wrapper. A descriptor for process PID, or -1 with errno (ENOSYS
 * where the kernel or the headers have no pidfds).
 */
int lb_pidfd_open(pid_t pid);

/*
 * pidfd_send_signal(2) (Linux 5.3): SIG to the process of PIDFD, which a
 * later process reusing its PID never is, so the process checked is the
 * process signalled. 0, or -1 with errno (ENOSYS as above).
 */
int lb_pidfd_send_signal(int pidfd, int sig);

/*
 * pidfd_getfd(2) (Linux 5.6): a descriptor of this process on the open
 * file that descriptor FD of the process of PIDFD is on, as if it had
 * been passed here; a process that may trace that one may. -1 with errno
 * (EPERM: it may not; EBADF: no such descriptor; ENOSYS as above).
 */
int lb_pidfd_getfd(int pidfd, int fd);

/* Start time of a live process, 0 when it is gone or unreadable. */
uint64_t lb_proc_starttime(pid_t pid);

/*
 * Fill in who holds a lock taken now: pid, its start time, this boot and
 * host, the clocks, the uid. The command, from ARGV or with ARGV NULL from
 * /proc: with ARGS its whole line, else only its name, none of its
 * arguments (which may hold passwords): the base name of ARGV[0], or for
 * a shell running a script the script's base name (from /proc/PID/cmdline),
 * else the name the kernel gives process PID (/proc/PID/comm, as ps -o comm).
 */
void lb_ident_fill(struct lb_ident *who, pid_t pid, char *const argv[], int args);

/*
 * WHO as the kernel shows process PID, for a lock that has no record (a
 * flock(2) lock): its name as lb_ident_fill gives it, its owner's uid,
 * and the clocks of its start (the lock was taken after it). A process
 * that is gone keeps only its PID.
 */
void lb_ident_of_process(struct lb_ident *who, pid_t pid);

/*
 * WHO as one read of /proc/PID/stat shows a process that waits for a lock:
 * its PID, start (on the clocks, so that its age is how long it has run)
 * and this host, and as its command what it will hold the slot as: a
 * lockbox waiter's job as its command line says it (title.h), a shell's
 * script, else the kernel's name; *STOPPED whether it is stopped (T or
 * t). 0, or -1 when it is gone (WHO then has only its PID).
 */
int lb_ident_of_waiter(struct lb_ident *who, pid_t pid, int *stopped);

/* Set the clocks of WHO to now: the moment its slot is taken, after any wait. */
void lb_ident_stamp(struct lb_ident *who);


/* Whether a record names a process that is provably gone on this host. */
int lb_ident_gone(const struct lb_ident *who);

/*
 * Whether WHO, a record's process of this host, has ended, or its PID
 * is another process's now (its start time differs): 0 for another host
 * or boot, whose lock alone can tell.
 */
int lb_ident_ended(const struct lb_ident *who);

/* Age of a holder: boot clock when it is of this boot, else wall clock. */
int64_t lb_ident_age(const struct lb_ident *who);

/* What /proc/PID/stat says about a live process. */
struct lb_proc_stat {
	pid_t ppid;
	pid_t pgid;
	uint64_t starttime;	/* clock ticks after boot */
	char state;		/* R, S, D, T, Z, ... */
	char comm[16];		/* its name as the kernel gives it, cleaned for printing */
};

/*
 * 0, or -1 when the process is gone (errno ENOENT or ESRCH) or its stat
 * cannot be read (errno says why: EACCES where /proc hides it, EMFILE...).
 */
int lb_proc_stat(pid_t pid, struct lb_proc_stat *st);

/*
 * Whether process PID holds a write lock on byte BYTE of the file DEV/INO
 * through one of its descriptors (an open file description lock held
 * through the descriptor, or the process's own POSIX lock:
 * /proc/PID/fdinfo lists both): 1 or 0; -1 when its descriptors cannot be
 * read (errno ENOENT or ESRCH: it is gone; EACCES or EPERM: another
 * user's; anything else, such as EMFILE: a failure, and the answer is
 * unknown). Having the file open without the lock is 0; with BYTE -1 the
 * descriptor is all there is to hold (a socket whose session holds a lock).
 */
int lb_proc_holds(pid_t pid, dev_t dev, ino_t ino, off_t byte);

/* The same, and with 1 the number of a descriptor it holds it through in *FD. */
int lb_proc_holding_fd(pid_t pid, dev_t dev, ino_t ino, off_t byte, int *fd);

/*
 * The name of process PID, as lb_ident_fill gives it without ARGV (a
 * shell's script, else the kernel's name), as it is: not cleaned for
 * printing. "" when it is gone.
 */
void lb_proc_name(pid_t pid, char *buf, size_t size);

#endif

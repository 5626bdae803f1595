/* The processes of a lock holder's job, verified, and signals sent only to them. */
/* SPDX-License-Identifier: ISC */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "proc.h"
#include "procfs.h"

struct proc {
	pid_t pid;
	struct lb_proc_stat st;
	int holds;	/* lb_proc_holds: 1, 0, -1 */
	int in;
};

struct table {
	struct proc *v;
	size_t n, cap;
};

void lb_job_init(struct lb_job *job, const struct lb_lock_site *site)
{
	memset(job, 0, sizeof *job);
	job->dev = site->dev;
	job->ino = site->ino;
	job->byte = site->byte;
}

static int table_add(struct table *t, const struct proc *p)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct proc *v = realloc(t->v, cap * sizeof *v);

		if (v == NULL)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = *p;
	return 0;
}

/*
 * Whether a failed read of /proc leaves us blind: not a process that is
 * gone (ENOENT, ESRCH) or one /proc does not show us (EACCES, EPERM: it
 * is another user's, and not ours to signal), but a failure such as
 * EMFILE, after which a holder could be missed without a word.
 */
static int blind(int err)
{
	return err != ENOENT && err != ESRCH && err != EACCES && err != EPERM;
}

/* Note the first failure: the job is not known, and the scan says so. */
static void fail(struct lb_job *job, int err)
{
	if (job->err == 0)
		job->err = err;
}

/* A snapshot being taken: the job, the table, and why it stopped (-1 when blind). */
struct snap {
	struct lb_job *job;
	struct table *t;
	pid_t self;
};

static int snap_process(pid_t pid, void *arg)
{
	struct snap *s = arg;
	struct proc p;

	if (pid <= 1)
		return 0;
	memset(&p, 0, sizeof p);
	p.pid = pid;
	if (lb_proc_stat(p.pid, &p.st) != 0)
		return blind(errno) ? -1 : 0;
	if (p.st.state == 'Z' || p.st.ppid == 2 || p.pid == 2)
		return 0;
	p.holds = lb_proc_holds(p.pid, s->job->dev, s->job->ino, s->job->byte);
	if (p.holds < 0 && blind(errno))
		return -1;
	if (p.pid == s->self) {
		/* run from inside the holder's job: it can never free the lock */
		s->job->self_holds = p.holds == 1;
		return 0;
	}
	return table_add(s->t, &p) != 0 ? -1 : 0;
}

/* Every process but kernel threads and zombies, with its use of the file. */
static int snapshot(struct lb_job *job, struct table *t)
{
	struct snap s = { job, t, getpid() };

	/* a process that cannot be read, or a listing that fails, leaves us blind */
	if (lb_procfs_each_process(0, snap_process, &s) != 0)
		fail(job, errno != 0 ? errno : EIO);
	return job->err != 0 ? -1 : 0;
}

static struct proc *find(struct table *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].pid == pid)
			return &t->v[i];
	return NULL;
}

/* Holders, then descendants and led groups until nothing changes. */
static void select_job(struct table *t)
{
	pid_t own = getpgrp();
	size_t i;
	int more = 1;

	/*
	 * Only the kernel's word makes a process a holder. Having the file
	 * open proves nothing (anyone may open it, e.g. `exec 9<FILE`), and
	 * a PID and start time in a record are whatever the last writer of
	 * the file put there: a forged record naming a process that opened
	 * the file must not get it signalled.
	 */
	for (i = 0; i < t->n; i++)
		t->v[i].in = t->v[i].holds == 1;
	while (more) {
		more = 0;
		for (i = 0; i < t->n; i++) {
			struct proc *p = &t->v[i], *parent, *leader;

			if (p->in)
				continue;
			parent = find(t, p->st.ppid);
			leader = p->st.pgid > 1 && p->st.pgid != own ?
			    find(t, p->st.pgid) : NULL;
			/*
			 * A group joins through its leader only (the command
			 * adaptive started leads its own), never because a
			 * record names it: a forged group id must not reach
			 * strangers.
			 */
			if ((parent != NULL && parent->in) ||
			    (leader != NULL && leader->in && leader != p)) {
				p->in = 1;
				more = 1;
			}
		}
	}
}

static int member_of(const struct lb_job *job, const struct proc *p)
{
	size_t i;

	for (i = 0; i < job->n; i++)
		if (job->v[i].pid == p->pid && job->v[i].starttime == p->st.starttime)
			return 1;
	return 0;
}

static int pin(struct lb_job *job, const struct proc *p)
{
	struct lb_job_member *m;
	struct lb_proc_stat now;
	int fd = lb_pidfd_open(p->pid), r;

	if (fd < 0 && errno == ESRCH)
		return 0;	/* gone already */
	if (fd < 0 && errno != ENOSYS) {
		fail(job, errno);	/* EMFILE: a member we could not pin */
		return -1;
	}
	/*
	 * Checked after pinning: if the PID was reused between the scan and
	 * pidfd_open, the start time differs and the stranger is dropped.
	 */
	r = lb_proc_stat(p->pid, &now);
	if (r != 0 && blind(errno))
		fail(job, errno);
	if (r != 0 || now.starttime != p->st.starttime) {
		if (fd >= 0)
			close(fd);
		return job->err != 0 ? -1 : 0;
	}
	if (job->n == job->cap) {
		size_t cap = job->cap ? 2 * job->cap : 16;
		struct lb_job_member *v = realloc(job->v, cap * sizeof *v);

		if (v == NULL) {
			fail(job, errno);
			if (fd >= 0)
				close(fd);
			return -1;
		}
		job->v = v;
		job->cap = cap;
	}
	m = &job->v[job->n++];
	m->pid = p->pid;
	m->starttime = p->st.starttime;
	m->pidfd = fd;
	m->gone = 0;
	return 0;
}

int lb_job_scan(struct lb_job *job)
{
	struct table t = { NULL, 0, 0 };
	size_t i;
	int rc = 0;

	if (snapshot(job, &t) != 0) {
		free(t.v);
		errno = job->err;
		return -1;
	}
	select_job(&t);
	for (i = 0; i < t.n && rc == 0; i++)
		if (t.v[i].in && !member_of(job, &t.v[i]))
			rc = pin(job, &t.v[i]);
	free(t.v);
	rc = rc == 0 ? (int)lb_job_alive(job, NULL, 0) : -1;
	if (job->err != 0) {
		errno = job->err;
		return -1;
	}
	return rc;
}

static void append_pid(char *buf, size_t size, size_t *len, pid_t pid)
{
	int r;

	if (buf == NULL || *len >= size)
		return;
	r = snprintf(buf + *len, size - *len, "%s%d", *len ? "," : "", (int)pid);
	if (r > 0)
		*len += (size_t)r;
	if (*len >= size)
		*len = size - 1;
}

/* A member that cannot be checked is not signalled, and job->err tells. */
static int alive(struct lb_job *job, struct lb_job_member *m)
{
	struct lb_proc_stat st;

	if (m->gone)
		return 0;
	if (lb_proc_stat(m->pid, &st) != 0) {
		if (!blind(errno)) {
			m->gone = 1;
			return 0;
		}
		fail(job, errno);
		return 0;
	}
	if (st.starttime != m->starttime || st.state == 'Z')
		m->gone = 1;
	return !m->gone;
}

size_t lb_job_signal(struct lb_job *job, int sig, char *pids, size_t size,
    char *refused, size_t rsize)
{
	size_t i, n = 0, len = 0, rlen = 0;

	if (pids != NULL && size > 0)
		pids[0] = '\0';
	if (refused != NULL && rsize > 0)
		refused[0] = '\0';
	for (i = 0; i < job->n; i++) {
		struct lb_job_member *m = &job->v[i];
		int r;

		if (!alive(job, m))
			continue;
		if (m->pidfd >= 0)
			r = lb_pidfd_send_signal(m->pidfd, sig);
		else
			r = kill(m->pid, sig);	/* start time checked just above */
		if (r != 0) {
			if (errno == ESRCH)
				m->gone = 1;
			else
				append_pid(refused, rsize, &rlen, m->pid);
			continue;
		}
		append_pid(pids, size, &len, m->pid);
		n++;
	}
	return n;
}

size_t lb_job_alive(struct lb_job *job, char *pids, size_t size)
{
	size_t i, n = 0, len = 0;

	if (pids != NULL && size > 0)
		pids[0] = '\0';
	for (i = 0; i < job->n; i++)
		if (alive(job, &job->v[i])) {
			append_pid(pids, size, &len, job->v[i].pid);
			n++;
		}
	return n;
}

void lb_job_free(struct lb_job *job)
{
	size_t i;

	for (i = 0; i < job->n; i++)
		if (job->v[i].pidfd >= 0)
			close(job->v[i].pidfd);
	free(job->v);
	job->v = NULL;
	job->n = job->cap = 0;
}

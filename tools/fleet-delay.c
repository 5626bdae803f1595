// SPDX-License-Identifier: ISC
/* tools/fleet-delay QUEUE MS READY: one-way delay for tools/fleet where the
 * kernel has no netem. Reads the packets that iptables sends to NFQUEUE
 * queue QUEUE (their metadata only) and gives each back, in order, MS
 * milliseconds after it came. Creates the file READY once it is bound.
 * On SIGTERM or SIGINT it gives back every packet it holds and exits:
 * a queue whose reader has gone drops what it held. Raw netlink, no library;
 * linux/netfilter/nfnetlink_queue.h says what the messages are. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXHELD 65536 /* the kernel's queue holds 1024 by default */

static volatile sig_atomic_t stop;
static int nl;
static uint16_t queue;

struct held {
	uint32_t id;
	int64_t due; /* CLOCK_MONOTONIC, ns */
};
static struct held held[MAXHELD];
static size_t head, count;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* msg: the start of a message of the queue subsystem, TYPE, for our queue */
static size_t msg_start(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nfgenmsg *g = NLMSG_DATA(h);
	memset(buf, 0, NLMSG_SPACE(sizeof *g));
	h->nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	g->nfgen_family = AF_UNSPEC;
	g->version = NFNETLINK_V0;
	g->res_id = htons(queue);
	h->nlmsg_len = NLMSG_LENGTH(sizeof *g);
	return h->nlmsg_len;
}

static void attr_put(char *buf, uint16_t type, const void *data, size_t len)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nlattr *a = (struct nlattr *)(buf + NLMSG_ALIGN(h->nlmsg_len));
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	/* the padding to the next attribute goes out too: zero, not garbage */
	memset((char *)a + a->nla_len, 0, NLA_ALIGN(a->nla_len) - a->nla_len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static int send_msg(char *buf)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};
	for (;;) {
		if (sendto(nl, buf, h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof to) >= 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* configure: one config message with one attribute, acknowledged */
static int configure(uint16_t attr, const void *data, size_t len)
{
	char buf[256] __attribute__((aligned(4)));
	msg_start(buf, NFQNL_MSG_CONFIG, NLM_F_ACK);
	attr_put(buf, attr, data, len);
	if (send_msg(buf) < 0)
		return -1;
	for (;;) {
		ssize_t n = recv(nl, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_type != NLMSG_ERROR)
			continue;
		struct nlmsgerr *e = NLMSG_DATA(h);
		if (e->error == 0)
			return 0;
		errno = -e->error;
		return -1;
	}
}

static int accept_packet(uint32_t id)
{
	char buf[128] __attribute__((aligned(4)));
	struct nfqnl_msg_verdict_hdr v = {.verdict = htonl(NF_ACCEPT), .id = htonl(id)};
	msg_start(buf, NFQNL_MSG_VERDICT, 0);
	attr_put(buf, NFQA_VERDICT_HDR, &v, sizeof v);
	return send_msg(buf);
}

/* take: the packets of one datagram from the kernel into the held queue */
static void take(char *buf, size_t n, int64_t due)
{
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type != ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET))
			continue;
		char *p = (char *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
		char *end = (char *)h + h->nlmsg_len;
		while (p + NLA_HDRLEN <= end) {
			struct nlattr *a = (struct nlattr *)p;
			if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
				break;
			if ((a->nla_type & NLA_TYPE_MASK) == NFQA_PACKET_HDR &&
			    a->nla_len >= NLA_HDRLEN + sizeof(struct nfqnl_msg_packet_hdr)) {
				struct nfqnl_msg_packet_hdr ph;
				memcpy(&ph, p + NLA_HDRLEN, sizeof ph);
				uint32_t id = ntohl(ph.packet_id);
				if (count == MAXHELD) /* cannot hold it: at once */
					accept_packet(id);
				else {
					held[(head + count) % MAXHELD] = (struct held){id, due};
					count++;
				}
				break;
			}
			p += NLA_ALIGN(a->nla_len);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fputs("usage: fleet-delay QUEUE MS READY\n", stderr);
		return 2;
	}
	char *e1, *e2;
	unsigned long q = strtoul(argv[1], &e1, 10), ms = strtoul(argv[2], &e2, 10);
	if (*e1 || *e2 || !*argv[1] || !*argv[2] || q > 65535 || ms > 60000) {
		fputs("fleet-delay: QUEUE 0..65535, MS 0..60000\n", stderr);
		return 2;
	}
	queue = (uint16_t)q;
	int64_t delay = (int64_t)ms * 1000000;

	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: poll returns */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	if (nl < 0) {
		perror("fleet-delay: netlink socket");
		return 1;
	}
	int rcv = 4 << 20;
	setsockopt(nl, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
	struct sockaddr_nl me = {.nl_family = AF_NETLINK};
	if (bind(nl, (struct sockaddr *)&me, sizeof me) < 0) {
		perror("fleet-delay: bind");
		return 1;
	}
	struct nfqnl_msg_config_cmd bindq = {.command = NFQNL_CFG_CMD_BIND};
	struct nfqnl_msg_config_params params = {.copy_range = htonl(0), .copy_mode = NFQNL_COPY_META};
	uint32_t maxlen = htonl(MAXHELD);
	if (configure(NFQA_CFG_CMD, &bindq, sizeof bindq) < 0 ||
	    configure(NFQA_CFG_PARAMS, &params, sizeof params) < 0 ||
	    configure(NFQA_CFG_QUEUE_MAXLEN, &maxlen, sizeof maxlen) < 0) {
		fprintf(stderr, "fleet-delay: queue %u: %s\n", queue, strerror(errno));
		return 1;
	}
	int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(argv[3]);
		return 1;
	}
	close(fd);

	static char buf[1 << 16] __attribute__((aligned(4)));
	unsigned long lost = 0;
	while (!stop) {
		int64_t now = now_ns();
		while (count && held[head].due <= now) {
			accept_packet(held[head].id);
			head = (head + 1) % MAXHELD;
			count--;
		}
		int timeout = -1;
		if (count)
			timeout = (int)((held[head].due - now + 999999) / 1000000);
		struct pollfd p = {.fd = nl, .events = POLLIN};
		if (poll(&p, 1, timeout) <= 0)
			continue;
		for (;;) {
			ssize_t n = recv(nl, buf, sizeof buf, MSG_DONTWAIT);
			if (n < 0) {
				if (errno == ENOBUFS) { /* the kernel dropped some: loss */
					lost++;
					continue;
				}
				break;
			}
			take(buf, (size_t)n, now_ns() + delay);
		}
	}
	/* what is still held goes now, in order */
	while (count) {
		accept_packet(held[head].id);
		head = (head + 1) % MAXHELD;
		count--;
	}
	if (lost)
		fprintf(stderr, "fleet-delay: queue %u: the kernel dropped packets %lu times\n", queue, lost);
	return 0;
}

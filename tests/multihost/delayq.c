// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/multihost/delayq.c: a fixed one-way delay for the multihost harness,
 * where the kernel has no netem qdisc. An iptables rule of the host namespace
 * sends the packets it receives to NFQUEUE queue N; this program holds each one
 * for the given milliseconds and then accepts it. The delay is the same for
 * every packet, so a FIFO of (packet id, due time) keeps the order; only the
 * packet metadata crosses to user space (COPY_META), and GSO packets come
 * whole, so the cost per byte stays small. A full FIFO accepts at once rather
 * than drop. SIGTERM or SIGINT accept whatever is held and exit 0.
 *
 *	delayq -q QUEUE -d MS
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#define FIFO_SIZE (1u << 17)	/* packets held at once */

struct held {
	uint32_t id;
	uint64_t due_ns;
};

struct delayq {
	struct nfq_q_handle *qh;
	uint64_t delay_ns;
	struct held *fifo;
	uint32_t head, tail;	/* free-running; tail - head held */
	unsigned long overflow;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void accept_pkt(struct delayq *d, uint32_t id)
{
	if (nfq_set_verdict(d->qh, id, NF_ACCEPT, 0, NULL) < 0)
		fprintf(stderr, "delayq: verdict for %u: %s\n", id, strerror(errno));
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg,
		     struct nfq_data *nfa, void *arg)
{
	struct delayq *d = arg;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	uint32_t id;

	(void)qh;
	(void)msg;
	if (!ph)
		return 0;
	id = ntohl(ph->packet_id);
	if (d->tail - d->head == FIFO_SIZE) {
		d->overflow++;
		accept_pkt(d, id);
		return 0;
	}
	d->fifo[d->tail % FIFO_SIZE] = (struct held){ id, now_ns() + d->delay_ns };
	d->tail++;
	return 0;
}

/* Accept every held packet that is due (all of them when all is set). */
static void release(struct delayq *d, int all)
{
	uint64_t now = now_ns();

	while (d->head != d->tail) {
		struct held *h = &d->fifo[d->head % FIFO_SIZE];

		if (!all && h->due_ns > now)
			break;
		accept_pkt(d, h->id);
		d->head++;
	}
}

/* How long to sleep: until the oldest held packet is due, or 1 s. */
static struct timespec next_wait(const struct delayq *d)
{
	uint64_t ns = 1000000000u, now;

	if (d->head != d->tail) {
		now = now_ns();
		ns = d->fifo[d->head % FIFO_SIZE].due_ns > now ?
			d->fifo[d->head % FIFO_SIZE].due_ns - now : 0;
	}
	return (struct timespec){ (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
}

static int parse_args(int argc, char **argv, unsigned *queue, unsigned *ms)
{
	int c;
	char *end;
	unsigned long v;

	*queue = UINT_MAX;
	*ms = UINT_MAX;
	while ((c = getopt(argc, argv, "q:d:")) != -1) {
		if (c != 'q' && c != 'd')
			return -EINVAL;
		errno = 0;
		v = strtoul(optarg, &end, 10);
		if (errno || *end || end == optarg || v > 65535)
			return -EINVAL;
		if (c == 'q')
			*queue = (unsigned)v;
		else
			*ms = (unsigned)v;
	}
	return *queue == UINT_MAX || *ms == UINT_MAX || optind != argc ? -EINVAL : 0;
}

static int run(struct nfq_handle *h, struct delayq *d)
{
	static char buf[1 << 16];
	struct pollfd pfd = { .fd = nfq_fd(h), .events = POLLIN };
	unsigned long nobufs = 0;

	while (!stop) {
		struct timespec ts = next_wait(d);
		ssize_t n;

		if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR) {
			perror("delayq: ppoll");
			return 1;
		}
		while ((n = recv(pfd.fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0)
			nfq_handle_packet(h, buf, (int)n);
		if (errno == ENOBUFS)	/* the kernel dropped some: say so once */
			if (nobufs++ == 0)
				fprintf(stderr, "delayq: receive buffer overrun\n");
		release(d, 0);
	}
	release(d, 1);
	if (d->overflow || nobufs)
		fprintf(stderr, "delayq: %lu accepted undelayed (fifo full), %lu overruns\n",
			d->overflow, nobufs);
	return 0;
}

int main(int argc, char **argv)
{
	struct delayq d = { 0 };
	struct nfq_handle *h;
	unsigned queue, ms;
	int rc = 1;

	if (parse_args(argc, argv, &queue, &ms) < 0) {
		fprintf(stderr, "usage: delayq -q QUEUE -d MS\n");
		return 2;
	}
	d.delay_ns = (uint64_t)ms * 1000000u;
	d.fifo = calloc(FIFO_SIZE, sizeof(*d.fifo));
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	h = nfq_open();
	if (!d.fifo || !h) {
		perror("delayq: nfq_open");
		goto out_free;
	}
	d.qh = nfq_create_queue(h, (uint16_t)queue, on_packet, &d);
	if (!d.qh) {
		perror("delayq: nfq_create_queue");
		goto out_close;
	}
	if (nfq_set_mode(d.qh, NFQNL_COPY_META, 0) < 0 ||
	    nfq_set_queue_maxlen(d.qh, FIFO_SIZE) < 0) {
		perror("delayq: queue setup");
		goto out_destroy;
	}
	/* whole GSO packets; older kernels without the flag still work */
	nfq_set_queue_flags(d.qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
	nfnl_rcvbufsiz(nfq_nfnlh(h), 64u << 20);
	fprintf(stderr, "delayq: bound queue %u, delay %u ms\n", queue, ms);
	rc = run(h, &d);
out_destroy:
	nfq_destroy_queue(d.qh);
out_close:
	nfq_close(h);
out_free:
	free(d.fifo);
	return rc;
}

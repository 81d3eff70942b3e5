/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/tcp_pipe.c: the tcp data path's pipelined sockets. A stream (a
 * handle reading ahead or writing behind, dp/tcp_ra.c and dp/tcp_wb.c)
 * holds one socket of its own while it has frames outstanding: it sends
 * READ or WRITE frames without waiting and reads their replies in order
 * later (marud runs one connection's frames in order), so that a transfer
 * costs a round trip per window instead of one per frame. Such a socket is
 * made like a control socket (connect, AUTH, HELLO reclaiming the session
 * by token), but here, from the session's facts (c->env), so that nothing
 * here names transport.c or session.c; a HELLO that does not reclaim the
 * session the handle knows closes it again (-ESTALE) and the caller falls
 * back to the control path, which learns what happened. Idle sockets are
 * pooled per client (c->tcp, made by the path's open, dropped by its
 * close, both under dp_lock held for writing); a stream takes and returns
 * them under dp_lock held for reading. It also keeps the client's budget
 * (opts.stream_bytes) of what the streams hold, counted in c->st.tcp,
 * and the round-trip estimate that says whether streaming pays at all
 * (pipe_rtt_worth, tcp_pipe.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "frame.h"
#include "sockio.h"
#include "tcp_pipe.h"
#include "tlsdial.h"

#define PIPE_IDLE	8
/* frame buffers kept for the next stream: at most this many, and a
 * quarter of the budget (a stream's first frames then fault no memory) */
#define PIPE_BUFS	16

struct tcp_dp {
	pthread_mutex_t lock;
	struct pipe idle[PIPE_IDLE];
	unsigned int n;
	uint8_t *bufs[PIPE_BUFS];
	unsigned int nbufs;
	/* smoothed time of an in-line READ of at most TCP_RTT_PROBE bytes,
	 * when it was last sampled (mono_ns), the bar to stream above */
	atomic_uint_fast64_t rtt_ns, rtt_at_ns, rtt_min_ns;
};

int pipe_pool_open(struct maru_client *c)
{
	struct tcp_dp *t;

	if (c->tcp)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	atomic_store(&t->rtt_min_ns, TCP_STREAM_RTT_NS);
	c->tcp = t;
	return 0;
}

void pipe_pool_close(struct maru_client *c)
{
	struct tcp_dp *t = c->tcp;
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		close(t->idle[i].fd);
	for (i = 0; i < t->nbufs; i++) {
		free(t->bufs[i]);
		pipe_budget_give(c, TCP_STREAM_FRAME);
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
	c->tcp = NULL;
}

static int pipe_hello(struct maru_client *c, int fd, const struct dp_facts *s)
{
	struct proto_hello_req hq;
	struct proto_hello_rep *rep;
	struct proto_hdr h;
	struct req r = { .op = OP_HELLO, .p1 = &hq, .n1 = sizeof(hq) };
	int rc;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	memset(&hq, 0, sizeof(hq));
	hq.flags = HELLO_F_RECLAIM;
	hq.proto_version = PROTO_VERSION;
	memcpy(hq.token, s->token, sizeof(hq.token));
	hq.pid = (uint64_t)getpid();
	memcpy(hq.client_name, c->name, sizeof(hq.client_name));
	r.rbuf = rep;
	r.rcap = sizeof(*rep);
	proto_hdr_init(&h, OP_HELLO, sizeof(hq), 0, 0, 0);
	rc = frame_call(fd, PROTO_MAX_FRAME + sizeof(*rep), &h, &r);
	if (!rc && r.status)
		rc = r.status;
	if (!rc && r.rlen != sizeof(*rep))
		rc = -EPROTO;
	/* only the session the handles know: anything else is the control
	 * path's to find out (and to record) */
	if (!rc && (!rep->reclaimed || rep->generation != s->generation ||
		    memcmp(rep->token, s->token, sizeof(s->token))))
		rc = -ESTALE;
	free(rep);
	return rc;
}

static int pipe_dial(struct maru_client *c, struct pipe *p)
{
	struct dp_facts s;
	int fd, rc;

	c->env.facts(c, &s);
	fd = addr_connect(&c->addr, c->opts.timeout_ms);
	/* the data path's sockets speak TLS too when the control's do */
	if (fd >= 0)
		fd = tlsdial_wrap(c, fd, mono_ms() + c->opts.timeout_ms);
	if (fd < 0)
		return fd;
	rc = frame_set_timeout(fd, c->opts.timeout_ms);
	if (!rc && c->has_key)
		rc = auth_exchange(c, fd);
	if (!rc)
		rc = pipe_hello(c, fd, &s);
	rc = tlsdial_ended(c, rc);
	if (rc) {
		close(fd);
		atomic_fetch_add(&c->st.tcp.pipe_errors, 1);
		return rc;
	}
	atomic_fetch_add(&c->st.tcp.dials, 1);
	p->fd = fd;
	p->out = 0;
	p->epoch = s.epoch;
	p->generation = s.generation;
	p->max_reply = s.send_max > PROTO_MAX_IO ? s.send_max : PROTO_MAX_IO;
	return 0;
}

int pipe_get(struct maru_client *c, struct pipe *p)
{
	struct tcp_dp *t;
	uint64_t epoch = __atomic_load_n(&c->s.epoch, __ATOMIC_ACQUIRE);
	int got = 0;

	if (p->fd >= 0 && p->epoch == epoch)
		return 0;
	pipe_drop(p);
	pthread_rwlock_rdlock(&c->dp_lock);
	t = c->tcp;
	if (t) {
		pthread_mutex_lock(&t->lock);
		while (t->n && !got) {
			*p = t->idle[--t->n];
			got = p->epoch == epoch;
			if (!got)
				close(p->fd);
		}
		pthread_mutex_unlock(&t->lock);
	}
	pthread_rwlock_unlock(&c->dp_lock);
	if (got)
		return 0;
	p->fd = -1;
	return pipe_dial(c, p);
}

void pipe_put(struct maru_client *c, struct pipe *p)
{
	struct tcp_dp *t;
	int kept = 0;

	if (p->fd < 0)
		return;
	if (!p->out && p->epoch == __atomic_load_n(&c->s.epoch, __ATOMIC_ACQUIRE)) {
		pthread_rwlock_rdlock(&c->dp_lock);
		t = c->tcp;
		if (t) {
			pthread_mutex_lock(&t->lock);
			if (t->n < PIPE_IDLE) {
				t->idle[t->n++] = *p;
				kept = 1;
			}
			pthread_mutex_unlock(&t->lock);
		}
		pthread_rwlock_unlock(&c->dp_lock);
	}
	if (!kept)
		close(p->fd);
	p->fd = -1;
	p->out = 0;
}

void pipe_drop(struct pipe *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->out = 0;
}

int pipe_send(struct maru_client *c, struct pipe *p, uint16_t op, const void *p1,
	      size_t n1, const void *p2, size_t n2, uint64_t *reqid)
{
	struct proto_hdr h;
	int rc;

	*reqid = atomic_fetch_add(&c->next_reqid, 1);
	proto_hdr_init(&h, op, (uint32_t)(n1 + n2), *reqid, p->generation, 0);
	rc = proto_send(p->fd, &h, p1, n1, p2, n2);
	if (rc)
		return rc;
	if (!p->out)
		atomic_fetch_add(op == OP_READ ? &c->st.tcp.rd_trips : &c->st.tcp.wr_trips, 1);
	p->out++;
	/* maru_client_requests_total counts the control path's calls (tests
	 * number them to lose one reply): stream frames are the tcp path's */
	atomic_fetch_add(op == OP_READ ? &c->st.tcp.rd_frames : &c->st.tcp.wr_frames, 1);
	return 0;
}

int pipe_reply(struct pipe *p, uint16_t op, uint64_t reqid, struct req *r)
{
	struct proto_hdr h = { .op = op, .reqid = reqid };
	int rc;

	r->rep = NULL;
	r->rlen = 0;
	rc = frame_reply(p->fd, p->max_reply, &h, r);
	if (!rc)
		p->out--;
	/* SO_RCVTIMEO ran out: marud did not answer within timeout_ms */
	return rc == -EAGAIN ? -ETIMEDOUT : rc;
}

size_t pipe_budget_limit(const struct maru_client *c)
{
	return c->opts.stream_bytes ? c->opts.stream_bytes : TCP_STREAM_DEFAULT;
}

int pipe_budget_take(struct maru_client *c, size_t n)
{
	int_fast64_t held = atomic_load(&c->st.tcp.held);

	do {
		if ((uint64_t)held + n > pipe_budget_limit(c)) {
			atomic_fetch_add(&c->st.tcp.refused, 1);
			return 0;
		}
	} while (!atomic_compare_exchange_weak(&c->st.tcp.held, &held, held + (int_fast64_t)n));
	return 1;
}

void pipe_budget_give(struct maru_client *c, size_t n)
{
	atomic_fetch_sub(&c->st.tcp.held, (int_fast64_t)n);
}

uint8_t *pipe_buf_get(struct maru_client *c)
{
	struct tcp_dp *t;
	uint8_t *b = NULL;

	pthread_rwlock_rdlock(&c->dp_lock);
	t = c->tcp;
	if (t) {
		pthread_mutex_lock(&t->lock);
		if (t->nbufs)
			b = t->bufs[--t->nbufs];
		pthread_mutex_unlock(&t->lock);
	}
	pthread_rwlock_unlock(&c->dp_lock);
	if (b || !pipe_budget_take(c, TCP_STREAM_FRAME))
		return b;
	b = malloc(TCP_STREAM_FRAME);
	if (!b)
		pipe_budget_give(c, TCP_STREAM_FRAME);
	return b;
}

void pipe_buf_put(struct maru_client *c, uint8_t *b)
{
	struct tcp_dp *t;
	int kept = 0;

	pthread_rwlock_rdlock(&c->dp_lock);
	t = c->tcp;
	if (t) {
		pthread_mutex_lock(&t->lock);
		if (t->nbufs < PIPE_BUFS &&
		    (t->nbufs + 1) * (size_t)TCP_STREAM_FRAME <= pipe_budget_limit(c) / 4) {
			t->bufs[t->nbufs++] = b;
			kept = 1;
		}
		pthread_mutex_unlock(&t->lock);
	}
	pthread_rwlock_unlock(&c->dp_lock);
	if (!kept) {
		free(b);
		pipe_budget_give(c, TCP_STREAM_FRAME);
	}
}

void pipe_rtt_sample(struct maru_client *c, uint64_t ns)
{
	uint64_t now = mono_ns(), old;
	struct tcp_dp *t;

	pthread_rwlock_rdlock(&c->dp_lock);
	t = c->tcp;
	if (t) {
		old = atomic_load(&t->rtt_ns);
		/*
		 * The estimate falls to a faster sample at once and rises an
		 * eighth of the way to a slower one: the network's delay is a
		 * floor, a slow sample may be this host's load (a thread not
		 * scheduled); a stale one too, as one probe may be slow (a
		 * delay that really grew is crossed by the first sample: from
		 * 250 us, a 10 ms round trip makes 1.5 ms). A stall (a lost
		 * segment, TCP_RTT_STALL_NS) is taken whole.
		 */
		if (old && ns > old && ns < TCP_RTT_STALL_NS)
			ns = old - old / 8 + ns / 8;
		atomic_store(&t->rtt_ns, ns ? ns : 1);
		atomic_store(&t->rtt_at_ns, now);
	}
	pthread_rwlock_unlock(&c->dp_lock);
}

int pipe_rtt_worth(struct maru_client *c)
{
	struct tcp_dp *t;
	uint64_t min, rtt;
	int worth = 1;

	pthread_rwlock_rdlock(&c->dp_lock);
	t = c->tcp;
	if (t) {
		min = atomic_load(&t->rtt_min_ns);
		rtt = atomic_load(&t->rtt_ns);
		if (min && (!rtt || mono_ns() - atomic_load(&t->rtt_at_ns) >= TCP_RTT_STALE_NS))
			worth = -1;
		else
			worth = rtt >= min;
	}
	pthread_rwlock_unlock(&c->dp_lock);
	return worth;
}

void pipe_rtt_bar(struct maru_client *c, uint64_t ns)
{
	pthread_rwlock_rdlock(&c->dp_lock);
	if (c->tcp)
		atomic_store(&c->tcp->rtt_min_ns, ns);
	pthread_rwlock_unlock(&c->dp_lock);
}

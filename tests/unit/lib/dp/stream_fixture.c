/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/stream_fixture.c: the fixture of stream_fixture.h.
 * The handler answers READ and WRITE from the virtual version (and breaks
 * the armed frames), everything else from the fake store.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <syslog.h>
#include <time.h>

#include <cmocka.h>

#include "stream_fixture.h"

static uint8_t *pat, *back;

static void sleep_ms_(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The fault for this frame of op (its number n), or VF_NONE. v->mu held. */
static enum vf_fault fault_of(struct vf *v, uint16_t op, unsigned int n)
{
	if (v->fault == VF_NONE || op != v->fault_op || n < v->fault_at ||
	    n > v->fault_at + v->fault_n)
		return VF_NONE;
	return v->fault;
}

static int vf_answer(struct fake_req *q, struct vf *v, enum vf_fault fault,
		     const void *p, size_t n)
{
	int32_t status = v->status;
	int delay = v->delay_ms;

	switch (fault) {
	case VF_CLOSE:
		return -1;
	case VF_STATUS:
		return fake_reply(q, status, NULL, 0, NULL, 0) ? -1 : 0;
	case VF_REQID:
		q->h.reqid += 1000;
		break;
	case VF_DELAY:
		/* other sockets go on meanwhile */
		pthread_mutex_unlock(&v->mu);
		sleep_ms_(delay);
		pthread_mutex_lock(&v->mu);
		break;
	default:
		break;
	}
	return fake_reply(q, 0, p, n, NULL, 0) ? -1 : 0;
}

static int vf_read(struct fake_req *q, struct vf *v)
{
	const size_t frame = sizeof(struct proto_hdr) + sizeof(struct proto_io_req);
	struct proto_io_req io;
	enum vf_fault fault;
	uint64_t n = 0;
	int queued = 0;

	memcpy(&io, q->body, sizeof(io));
	if (ioctl(q->fd, FIONREAD, &queued) == 0 && 1 + queued / frame > v->most_queued)
		v->most_queued = 1 + (unsigned int)(queued / frame);
	fault = fault_of(v, OP_READ, ++v->reads);
	if (io.off < v->size)
		n = v->size - io.off < io.len ? v->size - io.off : io.len;
	if (fault == VF_SHORT)
		n /= 2;
	return vf_answer(q, v, fault, v->data + io.off, n);
}

static int vf_write(struct fake_req *q, struct vf *v)
{
	struct proto_io_req io;
	struct proto_io_rep rep;
	enum vf_fault fault;

	memcpy(&io, q->body, sizeof(io));
	if (io.off + io.len > VF_MAX || q->h.len != sizeof(io) + io.len)
		return fake_reply(q, -EINVAL, NULL, 0, NULL, 0) ? -1 : 0;
	fault = fault_of(v, OP_WRITE, ++v->writes);
	if (fault == VF_CLOSE)
		return -1;
	memcpy(v->data + io.off, q->body + sizeof(io), io.len);
	if (io.off != v->wr_next)
		v->wr_unordered = 1;
	v->wr_next = io.off + io.len;
	rep.done = fault == VF_SHORT ? io.len - 1 : io.len;
	rep.size = v->wr_next;
	return vf_answer(q, v, fault, &rep, sizeof(rep));
}

static int sfx_handler(struct fake_req *q)
{
	struct sfx *x = (struct sfx *)((char *)q->f - offsetof(struct sfx, f));
	struct vf *v = &x->v;
	int rc;

	if (q->h.op != OP_READ && q->h.op != OP_WRITE)
		return store_handler(q);
	pthread_mutex_lock(&v->mu);
	if (!v->client_gone && held(x) > v->held_max)
		v->held_max = held(x);
	rc = q->h.op == OP_READ ? vf_read(q, v) : vf_write(q, v);
	pthread_mutex_unlock(&v->mu);
	return rc;
}

struct sfx *sfx_new(unsigned int timeout_ms, size_t stream_bytes)
{
	struct sfx *x = calloc(1, sizeof(*x));
	size_t i;

	assert_non_null(x);
	store_init(&x->s);
	logbook_init(&x->b);
	pthread_mutex_init(&x->v.mu, NULL);
	x->v.data = calloc(1, VF_MAX);
	assert_non_null(x->v.data);
	/* the pattern and the read-back buffer live as long as the process */
	if (!pat) {
		pat = malloc(VF_MAX);
		back = malloc(VF_MAX);
		assert_non_null(pat);
		assert_non_null(back);
		for (i = 0; i < VF_MAX; i++)
			pat[i] = store_byte(i);
	}
	x->pat = pat;
	x->back = back;
	fake_start(&x->f, sfx_handler, &x->s);
	x->c = fake_client(&x->f, timeout_ms, 2, &x->b, LOG_DEBUG);
	x->c->opts.stream_bytes = stream_bytes;
	assert_non_null(x->c->tcp);
	x->st = stream_new();
	return x;
}

void sfx_free(struct sfx *x)
{
	stream_free(x->c, x->st);
	if (x->h)
		maru_file_close(x->h);
	/* frames may still arrive (a socket's last ones): not the client's now */
	pthread_mutex_lock(&x->v.mu);
	x->v.client_gone = 1;
	pthread_mutex_unlock(&x->v.mu);
	maru_client_free(x->c);
	fake_stop(&x->f);
	store_free(&x->s);
	pthread_mutex_destroy(&x->v.mu);
	free(x->v.data);
	free(x);
}

void sfx_open_published(struct sfx *x, uint64_t size)
{
	assert_true(size <= VF_MAX);
	pthread_mutex_lock(&x->v.mu);
	memcpy(x->v.data, x->pat, size);
	x->v.size = size;
	pthread_mutex_unlock(&x->v.mu);
	pthread_mutex_lock(&x->s.mu);
	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = size;
	pthread_mutex_unlock(&x->s.mu);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &x->h), 0);
	assert_int_equal(x->h->size, size);
}

void sfx_create(struct sfx *x)
{
	assert_int_equal(maru_file_create(x->c, 1, "w", 0644, 0, 0, 0, 0, &x->h), 0);
	assert_true(atomic_load(&x->h->pending));
}

void sfx_fault(struct sfx *x, uint16_t op, enum vf_fault fault, unsigned int at,
	       unsigned int n)
{
	pthread_mutex_lock(&x->v.mu);
	x->v.fault = fault;
	x->v.fault_op = op;
	x->v.fault_at = (op == OP_READ ? x->v.reads : x->v.writes) + at;
	x->v.fault_n = n;
	pthread_mutex_unlock(&x->v.mu);
}

struct tcp_stream *stream_new(void)
{
	struct tcp_stream *st = calloc(1, sizeof(*st));

	assert_non_null(st);
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cond, NULL);
	st->p.fd = -1;
	return st;
}

void stream_free(struct maru_client *c, struct tcp_stream *st)
{
	pthread_mutex_lock(&st->lock);
	ra_reset(c, st);
	ra_release(c, st);
	wb_reset(c, st);
	pipe_put(c, &st->p);
	pthread_mutex_unlock(&st->lock);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->cond);
	free(st);
}

int64_t held(const struct sfx *x)
{
	return atomic_load(&x->c->st.tcp.held);
}

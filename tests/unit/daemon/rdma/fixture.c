// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/rdma/fixture.c: the shared fixture of daemon/rdma/'s
 * tests (fixture.h): a started server with an rdma:// listener on the
 * software verbs device, its control connection, and a client QP.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

static uint16_t next_port = 7900;

struct rfx *rfx_new(void)
{
	return rfx_new_rights(RDMA_CFG_AUTO);
}

struct rfx *rfx_new_rights(int cfg_rights)
{
	struct rfx *f = calloc(1, sizeof(*f));
	struct config *cfg;

	assert_non_null(f);
	f->r = malloc(sizeof(*f->r));
	f->buf = aligned_alloc(4096, RFX_BUF);
	assert_non_null(f->r);
	assert_non_null(f->buf);
	th_config(&f->t);
	cfg = &f->t.cfg;
	cfg->rdma_rights = cfg_rights;
	f->port = next_port++;
	snprintf(cfg->listen[cfg->nlisten++], sizeof(cfg->listen[0]), "rdma://127.0.0.1:%u",
		 f->port);
	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_non_null(f->t.srv->rdma);
	assert_int_equal(server_start(f->t.srv), 0);
	tc_open(&f->t, &f->tc);
	return f;
}

struct rdma_srv *rfx_rdma(struct rfx *f)
{
	return f->t.srv->rdma;
}

void rfx_free(struct rfx *f)
{
	if (f->mr)
		ibv_dereg_mr(f->mr);
	if (f->ep_up) {
		rdma_disconnect(f->ep.id);
		svt_ep_fini(&f->ep);
	}
	tc_close(&f->tc);
	assert_int_equal(th_free(&f->t), 0);
	free(f->buf);
	free(f->r);
	free(f);
}

void rfx_hello(struct rfx *f)
{
	struct proto_hello_req req = { .flags = HELLO_F_RDMA, .proto_version = PROTO_VERSION,
				       .pid = 1 };

	snprintf(req.client_name, sizeof(req.client_name), "rdma-unit");
	assert_int_equal(tc_call(&f->tc, OP_HELLO, ++f->reqid, &req, sizeof(req), f->r, NULL), 0);
	memcpy(&f->hello, f->r->p, sizeof(f->hello));
	memcpy(f->token, f->hello.token, sizeof(f->token));
}

int rfx_connect_pd(struct rfx *f, const void *pd, uint8_t len)
{
	struct rdma_cm_event *ev;
	int rc;

	if (f->ep_up) {
		if (f->mr)
			ibv_dereg_mr(f->mr);
		f->mr = NULL;
		svt_ep_fini(&f->ep);
		f->ep_up = 0;
	}
	assert_int_equal(svt_ep_init(&f->ep, "127.0.0.1", f->port), 0);
	f->ep_up = 1;
	f->mr = ibv_reg_mr(f->ep.pd, f->buf, RFX_BUF, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(f->mr);
	rc = svt_ep_connect(&f->ep, pd, len, &ev);
	if (rc)
		return rc;
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		rc = 0;
	else if (ev->event == RDMA_CM_EVENT_REJECTED)
		rc = -ECONNREFUSED;
	else
		rc = -EPROTO;
	rdma_ack_cm_event(ev);
	return rc;
}

int rfx_connect(struct rfx *f)
{
	struct proto_rdma_cm pd = { .magic = RDMA_CM_MAGIC, .generation = TH_GENERATION };

	memcpy(pd.token, f->token, sizeof(pd.token));
	return rfx_connect_pd(f, &pd, sizeof(pd));
}

uint64_t rfx_create(struct rfx *f, const char *name, uint64_t size_hint,
		    struct proto_extent *ext, uint32_t *next)
{
	struct proto_create_req q = { .parent = DIR_ROOT_ID, .mode = 0100644,
				      .size_hint = size_hint };
	uint8_t buf[sizeof(q) + 64];
	struct proto_attr a;

	q.namelen = (uint16_t)strlen(name);
	memcpy(buf, &q, sizeof(q));
	memcpy(buf + sizeof(q), name, q.namelen);
	assert_int_equal(tc_call(&f->tc, OP_CREATE, ++f->reqid, buf, sizeof(q) + q.namelen, f->r,
				 NULL), 0);
	memcpy(&a, f->r->p, sizeof(a));
	assert_true(a.nextents <= 8);
	memcpy(ext, f->r->p + sizeof(a), a.nextents * sizeof(*ext));
	*next = a.nextents;
	return a.ino;
}

int rfx_rkey(struct rfx *f, uint64_t ino, uint32_t flags, struct proto_rkey *keys,
	     uint32_t *nkeys, uint32_t *rflags)
{
	struct proto_rkey_req q = { .ino = ino, .flags = flags };
	struct proto_rkey_rep h;
	int rc = tc_call(&f->tc, OP_RKEY, ++f->reqid, &q, sizeof(q), f->r, NULL);

	if (rc)
		return rc;
	memcpy(&h, f->r->p, sizeof(h));
	assert_true(h.count <= 8);
	memcpy(keys, f->r->p + sizeof(h), h.count * sizeof(*keys));
	*nkeys = h.count;
	*rflags = h.flags;
	return 0;
}

int rfx_ino_op(struct rfx *f, uint16_t op, uint64_t ino)
{
	struct proto_ino_req q = { .ino = ino };

	return tc_call(&f->tc, op, ++f->reqid, &q, sizeof(q), f->r, NULL);
}

int rfx_rdma_op(struct rfx *f, enum ibv_wr_opcode op, size_t loff, size_t len,
		uint64_t raddr, uint32_t rkey)
{
	struct ibv_wc wc;

	assert_int_equal(svt_post_rdma(f->ep.id->qp, op, 77, f->mr, loff, len, raddr, rkey,
				       IBV_SEND_SIGNALED), 0);
	assert_int_equal(svt_wait_wc(f->ep.cq, 5000, &wc), 0);
	return wc.status;
}

int rfx_wait_eq(atomic_int_fast64_t *v, long long want)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int i;

	for (i = 0; i < 2500; i++) {
		if (atomic_load(v) == want)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

int rfx_wait_u64(atomic_uint_fast64_t *v, unsigned long long want)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int i;

	for (i = 0; i < 2500; i++) {
		if (atomic_load(v) == want)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

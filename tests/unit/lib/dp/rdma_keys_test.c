/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/rdma_keys_test.c: the rkeys of lib/dp/rdma_keys.c,
 * with marud played by the client's control callback (c->env.call, the
 * only way the file reaches above it) and no RDMA device: RKEY is asked
 * once per (QP, rights) and cached on the handle, asked again for a new QP,
 * for the other rights or when the handle's extents grew; a refusal, a
 * reply of the wrong length or with other extents than the handle's is an
 * error; a lease may get a shorter last key, as long as the keys cover the
 * size; forget frees the keys; the test hook reads them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp/rdma_priv.h"

/* marud's side: what it answers to RKEY */
static struct {
	int calls;
	uint32_t last_flags;
	int32_t status;		/* != 0: refuse */
	int n;			/* keys to answer */
	int bad_len;		/* answer one byte short */
	uint64_t last_len;	/* the last key's length (a lease's may be shorter) */
	uint64_t shift;		/* move every key's off by this */
} m;

static const struct proto_extent ext[3] = {
	{ .off = 4096, .len = 8192 }, { .off = 65536, .len = 4096 }, { .off = 16384, .len = 4096 },
};

static int fake_call(struct maru_client *c, struct req *r)
{
	const struct proto_rkey_req *q = r->p1;
	struct proto_rkey_rep *h;
	struct proto_rkey *k;
	size_t len = sizeof(*h) + (size_t)m.n * sizeof(*k);

	assert_int_equal(r->op, OP_RKEY);
	assert_int_equal(q->ino, 42);
	m.calls++;
	m.last_flags = q->flags;
	if (m.status)
		return m.status;
	h = calloc(1, len);
	assert_non_null(h);
	h->count = (uint32_t)m.n;
	k = (struct proto_rkey *)(h + 1);
	for (int i = 0; i < m.n; i++) {
		k[i].off = ext[i].off + m.shift;
		k[i].len = i + 1 == m.n && m.last_len ? m.last_len : ext[i].len;
		k[i].addr = 0x100000 * (uint64_t)(i + 1);
		k[i].rkey = 0xa0 + (uint32_t)i;
	}
	r->rep = h;
	r->rlen = (uint32_t)(len - (m.bad_len ? 1 : 0));
	return 0;
}

struct fx {
	struct maru_client c;
	struct maru_file f;
	struct proto_extent ext[3];
	struct rdma_dp d;
};

static void fx_setup(struct fx *x, int next, uint64_t size, int pending)
{
	memset(x, 0, sizeof(*x));
	memset(&m, 0, sizeof(m));
	memcpy(x->ext, ext, sizeof(ext));
	x->c.env.call = fake_call;
	x->f.c = &x->c;
	x->f.ino = 42;
	x->f.ext = x->ext;
	x->f.next = (uint32_t)next;
	x->f.size = size;
	x->f.pending = pending;
	x->d.qp_gen = 1;
	m.n = next;
}

static void test_cached_per_qp_and_rights(void **state)
{
	uint64_t addr, len;
	uint32_t rkey;
	struct fx x;

	(void)state;
	fx_setup(&x, 3, 16384, 1);
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), 0);
	assert_int_equal(m.calls, 1);
	assert_int_equal(m.last_flags, RKEY_F_WRITE);
	assert_int_equal(atomic_load(&x.c.st.rdma.rkey_calls), 1);
	/* cached: no second RKEY */
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), 0);
	assert_int_equal(m.calls, 1);
	assert_int_equal(dp_rdma_test_key(&x.f, 1, &addr, &rkey, &len), 0);
	assert_true(addr == 0x200000 && rkey == 0xa1 && len == 4096);
	assert_int_equal(dp_rdma_test_key(&x.f, 3, &addr, &rkey, &len), -ENOENT);
	/* a new QP: asked again */
	x.d.qp_gen = 2;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), 0);
	assert_int_equal(m.calls, 2);
	/* other rights (the version was published): asked again, read-only */
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 0), 0);
	assert_int_equal(m.calls, 3);
	assert_int_equal(m.last_flags, 0);
	dp_rdma_forget(&x.f);
	assert_null(x.f.rk);
	assert_int_equal(dp_rdma_test_key(&x.f, 0, &addr, &rkey, &len), -ENOENT);
}

/* A pending version's extents grew (reserve): its keys no longer cover them. */
static void test_grown_extents(void **state)
{
	struct fx x;

	(void)state;
	fx_setup(&x, 2, 12288, 1);
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), 0);
	x.f.next = 3;
	m.n = 3;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), 0);
	assert_int_equal(m.calls, 2);
	assert_int_equal(x.f.rk->n, 3);
	dp_rdma_forget(&x.f);
}

/* A lease: a prefix of the extents, the last key shorter, covering the size. */
static void test_lease_prefix(void **state)
{
	struct fx x;

	(void)state;
	fx_setup(&x, 3, 8192 + 1000, 0);
	m.n = 2;
	m.last_len = 1000;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 0), 0);
	dp_rdma_forget(&x.f);
	/* keys that stop short of the size: refused */
	fx_setup(&x, 3, 8192 + 1001, 0);
	m.n = 2;
	m.last_len = 1000;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 0), -EIO);
	dp_rdma_forget(&x.f);
	/* a pending version must get every extent, whole */
	fx_setup(&x, 3, 100, 1);
	m.n = 2;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), -EIO);
	dp_rdma_forget(&x.f);
}

static void test_bad_replies(void **state)
{
	struct fx x;

	(void)state;
	fx_setup(&x, 3, 100, 1);
	m.status = -EPERM;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), -EPERM);
	assert_null(x.f.rk);
	m.status = 0;
	m.bad_len = 1;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), -EIO);
	m.bad_len = 0;
	m.shift = 4096;		/* other extents than the handle's */
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), -EIO);
	/* and such keys are never taken as cached */
	m.shift = 0;
	assert_int_equal(dp_rdma_keys_ready(&x.c, &x.d, &x.f, 1), 0);
	assert_int_equal(m.calls, 4);
	dp_rdma_forget(&x.f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cached_per_qp_and_rights),
		cmocka_unit_test(test_grown_extents),
		cmocka_unit_test(test_lease_prefix),
		cmocka_unit_test(test_bad_replies),
	};

	return cmocka_run_group_tests_name("dp/rdma_keys", tests, NULL, NULL);
}

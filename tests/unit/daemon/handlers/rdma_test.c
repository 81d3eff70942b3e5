// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/rdma_test.c: RKEY (daemon/handlers/rdma.c) on a
 * real server: flag bits other than RKEY_F_WRITE are refused before the rdma
 * side sees the request, and a server without an rdma listener refuses
 * RKEY as not supported. Built with RKEY_RDMA (the software verbs device
 * linked ahead of libibverbs), also with an rdma:// listener: HELLO offers
 * its port, and RKEY from a session that has no QP connected is refused
 * (-ENOTCONN), with the flag check still first.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hreq.h"

static int rkey(struct hfx *f, uint64_t ino, uint32_t flags)
{
	struct proto_rkey_req q = { .ino = ino, .flags = flags };

	return tc_call(&f->a, OP_RKEY, hr_id(), &q, sizeof(q), &f->r, NULL);
}

static void test_rkey_no_listener(void **state)
{
	struct hfx *f = *state;
	uint64_t ino;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "k", 4096), 0);
	ino = hr_attr(f).ino;
	assert_int_equal(rkey(f, ino, 2), -EINVAL);
	assert_int_equal(rkey(f, ino, RKEY_F_WRITE | 0x80), -EINVAL);
	assert_int_equal(rkey(f, ino, RKEY_F_WRITE), -EOPNOTSUPP);
	assert_int_equal(rkey(f, ino, 0), -EOPNOTSUPP);
	assert_int_equal(f->r.len, 0);
}

#if RKEY_RDMA
#include "softverbs.h"

static int setup_rdma(void **state)
{
	struct hfx *f = calloc(1, sizeof(*f));
	struct proto_hello_req q = { .flags = HELLO_F_RDMA, .proto_version = PROTO_VERSION };
	struct proto_hello_rep rep;

	if (!f || softverbs_active() != 1)
		return -1;
	th_config(&f->t);
	snprintf(f->t.cfg.listen[f->t.cfg.nlisten++], sizeof(f->t.cfg.listen[0]),
		 "rdma://127.0.0.1:%u", 21000u + (unsigned int)getpid() % 20000u);
	if (th_new(&f->t, NULL))
		return -1;
	tc_open(&f->t, &f->a);
	tc_open(&f->t, &f->b);
	assert_int_equal(tc_call(&f->a, OP_HELLO, hr_id(), &q, sizeof(q), &f->r, NULL), 0);
	memcpy(&rep, f->r.p, sizeof(rep));
	assert_true(rep.rdma_port != 0);
	assert_true(rep.rdma_flags & (RDMA_F_WINDOWS | RDMA_F_WHOLE_POOL));
	*state = f;
	return 0;
}

static void test_rkey_no_qp(void **state)
{
	struct hfx *f = *state;
	uint64_t ino;

	assert_int_equal(hr_create(f, &f->a, HR_ROOT, "k", 4096), 0);
	ino = hr_attr(f).ino;
	assert_int_equal(rkey(f, ino, 4), -EINVAL);
	assert_int_equal(rkey(f, ino, RKEY_F_WRITE), -ENOTCONN);
	assert_int_equal(hr_metric(f, &f->a, "marud_rdma_binds_total"), 0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rkey_no_listener, hfx_setup, hfx_teardown),
#if RKEY_RDMA
		cmocka_unit_test_setup_teardown(test_rkey_no_qp, setup_rdma, hfx_teardown),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/rdma_test.c: the rdma data path's transfers and table
 * (lib/dp/rdma.c) on the software verbs device, against the in-process
 * peer of rdma_peer.c, through file.c's public calls as a client uses them:
 * a write lands in the peer's pool at the handle's extents (RDMA WRITE,
 * across extents), the hole before it is zero-filled through the table's
 * zero, the size moves, the bytes are counted under rdma, and a read gets
 * them back; a write from byte 0 feeds the publish digest; the keys are
 * asked once and the handle names the path that keeps them (so close
 * forgets them through the table); a transfer with keys marud did not bind
 * fails with -EIO, counts a remote access error and a QP error, connects
 * again, and poisons the handle (sync fails); the stats hook reports it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hash.h"
#include "prom.h"
#include "rdma_peer.h"

static void test_write_hole_read(void **state)
{
	const struct dp_counters *dc;
	uint8_t buf[9000], back[12000];
	struct rdma_fx x;
	uint64_t i;

	(void)state;
	assert_int_equal(rdma_fx_setup(&x), 0);
	dc = &x.c.st.dp[MARU_DATA_RDMA];
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 11 + 7);
	/* at 3000 of an empty version: [0, 3000) is a hole */
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 3000), sizeof(buf));
	assert_int_equal(maru_file_size(&x.f), 12000);
	for (i = 0; i < 3000; i++)
		assert_int_equal(x.p.pool[rdma_fx_where(i)], 0);
	for (i = 0; i < sizeof(buf); i++)
		assert_int_equal(x.p.pool[rdma_fx_where(3000 + i)], buf[i]);
	/* the bytes around the extents are untouched */
	assert_int_equal(x.p.pool[8191], peer_pattern(8191));
	assert_int_equal(x.p.pool[rdma_fx_where(12000)], peer_pattern(rdma_fx_where(12000)));
	assert_int_equal(atomic_load(&dc->wr_bytes), sizeof(buf));
	assert_int_equal(atomic_load(&dc->wr_ops), 1);
	assert_true(atomic_load(&x.c.st.rdma.wrs_write) >= 2);
	assert_int_equal(x.rkey_calls, 1);
	assert_ptr_equal(x.f.held, &dp_rdma_ops);
	assert_int_equal(maru_file_pread(&x.f, back, sizeof(back), 0), sizeof(back));
	for (i = 0; i < 3000; i++)
		assert_int_equal(back[i], 0);
	assert_memory_equal(back + 3000, buf, sizeof(buf));
	assert_int_equal(atomic_load(&dc->rd_bytes), sizeof(back));
	assert_int_equal(x.rkey_calls, 1);	/* the keys were cached */
	assert_int_equal(atomic_load(&x.c.st.rdma.in_flight), 0);
	assert_int_equal(maru_file_sync(&x.f), 0);
	rdma_fx_teardown(&x);
}

/* Written in order from byte 0: the staging copies feed the digest. */
static void test_digest(void **state)
{
	uint8_t buf[20000];
	struct rdma_fx x;

	(void)state;
	assert_int_equal(rdma_fx_setup(&x), 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 3);
	x.f.hs = hash_stream_new();
	assert_non_null(x.f.hs);
	assert_int_equal(dp_rdma_ops.write(&x.f, buf, sizeof(buf), 0), sizeof(buf));
	assert_true(hash_stream_digest(x.f.hs) == hash_xxh3(buf, sizeof(buf)));
	hash_stream_free(x.f.hs);
	x.f.hs = NULL;
	rdma_fx_teardown(&x);
}

static void test_bad_keys(void **state)
{
	struct prom text = PROM_INIT;
	uint8_t buf[100] = { 1 };
	struct rdma_fx x;

	(void)state;
	assert_int_equal(rdma_fx_setup(&x), 0);
	x.rkey_xor = 0x5a5a00;
	assert_int_equal(maru_file_pwrite(&x.f, buf, sizeof(buf), 0), -EIO);
	assert_int_equal(maru_file_size(&x.f), 0);
	assert_int_equal(atomic_load(&x.c.st.dp[MARU_DATA_RDMA].wr_ops), 0);
	assert_int_equal(atomic_load(&x.c.st.rdma.err[RDMA_ERR_REMOTE_ACCESS]), 1);
	assert_true(atomic_load(&x.c.st.rdma.qp_errors) >= 1);
	/* connected again before the call returned */
	assert_int_equal(peer_connects(&x.p), 2);
	assert_non_null(x.c.rdma->id);
	/* the handle may hold half a write: never publish it */
	assert_int_equal(maru_file_sync(&x.f), -EIO);
	dp_rdma_ops.stats(&x.c, &text);
	assert_int_equal(text.err, 0);
	assert_non_null(strstr(text.buf,
			       "maru_client_rdma_errors_total{kind=\"remote_access\"} 1\n"));
	assert_non_null(strstr(text.buf, "maru_client_rdma_qp_connects_total 2\n"));
	assert_non_null(strstr(text.buf, "maru_client_rdma_rkey_requests_total 1\n"));
	prom_fini(&text);
	rdma_fx_teardown(&x);
}

/* No path state (the path was closed): -ENODEV, nothing asked. */
static void test_closed(void **state)
{
	uint8_t buf[16];
	struct rdma_fx x;

	(void)state;
	assert_int_equal(rdma_fx_setup(&x), 0);
	dp_rdma_ops.close(&x.c);
	assert_null(x.c.rdma);
	assert_int_equal(dp_rdma_ops.read(&x.f, buf, sizeof(buf), 0), -ENODEV);
	assert_int_equal(x.rkey_calls, 0);
	rdma_fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_hole_read),
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_bad_keys),
		cmocka_unit_test(test_closed),
	};

	return cmocka_run_group_tests_name("dp/rdma", tests, NULL, NULL);
}

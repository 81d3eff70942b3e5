/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/stats_test.c: what a client reports (lib/stats.c) against
 * the fake marud: every statfs field from marud's reply, and the stats text:
 * marud's STATS text (a newline added when it lacks one) followed by the
 * client's own counters and gauges, which follow what the client did; a
 * short buffer gets a NUL-terminated prefix and the full length back. Each
 * data path's own lines come from its dp_ops stats hook (into the same prom
 * writer), verbatim, between the data path gauges and the connected gauge,
 * whatever path is in use; the whole text is pinned byte for byte.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client_priv.h"
#include "dp/datapath.h"
#include "fake_store.h"
#include "prom.h"

#define MARUD_TEXT	"# TYPE marud_up gauge\nmarud_up 1"

static int stats_handler(struct fake_req *q)
{
	struct proto_statfs st = { .capacity = 1, .free = 2, .evictable = 3, .used = 4,
				   .pending = 5, .orphaned = 6, .names = 7, .dirs = 8,
				   .versions = 9, .block = 10 };

	if (q->h.op == OP_STATFS)
		return fake_reply(q, 0, &st, sizeof(st), NULL, 0) ? -1 : 0;
	if (q->h.op == OP_STATS)
		return fake_reply(q, 0, MARUD_TEXT, strlen(MARUD_TEXT), NULL, 0) ? -1 : 0;
	return store_handler(q);
}

static void test_statfs_fields(void **state)
{
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	struct store s;

	(void)state;
	store_init(&s);
	fake_start(&f, stats_handler, &s);
	c = fake_client(&f, 2000, 2, NULL, 0);
	memset(&st, 0xff, sizeof(st));
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(st.capacity, 1);
	assert_int_equal(st.free, 2);
	assert_int_equal(st.evictable, 3);
	assert_int_equal(st.used, 4);
	assert_int_equal(st.pending, 5);
	assert_int_equal(st.orphaned, 6);
	assert_int_equal(st.names, 7);
	assert_int_equal(st.dirs, 8);
	assert_int_equal(st.block, 10);
	assert_int_equal(maru_statfs(c, NULL), -EINVAL);
	assert_int_equal(maru_statfs(NULL, &st), -EINVAL);
	maru_client_free(c);
	fake_stop(&f);
	store_free(&s);
}

static char *stats(struct maru_client *c)
{
	ssize_t n = maru_stats_text(c, NULL, 0), m;
	char *buf;

	assert_true(n > 0);
	/* room for more: the first call's own latency adds its STATS histogram */
	buf = malloc((size_t)n + 65536);
	assert_non_null(buf);
	m = maru_stats_text(c, buf, (size_t)n + 65536);
	/* not m >= n: a histogram's _sum is a float, and a later one can
	 * print shorter (0.000123 -> 0.00024) */
	assert_true(m > 0 && m < n + 65536);
	assert_int_equal(strlen(buf), m);
	return buf;
}

static void test_stats_text(void **state)
{
	uint8_t data[3000], back[3000];
	struct maru_client *c;
	struct maru_file *h;
	struct fake_marud f;
	struct store s;
	char *t, small[16];

	(void)state;
	store_init(&s);
	fake_start(&f, stats_handler, &s);
	c = fake_client(&f, 2000, 2, NULL, 0);
	memset(data, 1, sizeof(data));
	assert_int_equal(maru_file_create(c, 1, "x", 0644, 0, 0, 0, 0, &h), 0);
	assert_int_equal(maru_file_pwrite(h, data, sizeof(data), 0), (ssize_t)sizeof(data));
	assert_int_equal(maru_file_pwrite(h, data, 1000, 0), 1000);
	assert_int_equal(maru_file_pread(h, back, sizeof(back), 0), (ssize_t)sizeof(back));
	t = stats(c);
	/* marud's text first, with the newline it lacked */
	assert_memory_equal(t, MARUD_TEXT "\n", strlen(MARUD_TEXT) + 1);
	assert_non_null(strstr(t, "maru_client_bytes_total{path=\"tcp\",dir=\"write\"} 4000\n"));
	assert_non_null(strstr(t, "maru_client_bytes_total{path=\"tcp\",dir=\"read\"} 3000\n"));
	assert_non_null(strstr(t, "maru_client_ops_total{path=\"tcp\",dir=\"write\"} 2\n"));
	assert_non_null(strstr(t, "maru_client_ops_total{path=\"tcp\",dir=\"read\"} 1\n"));
	assert_non_null(strstr(t, "maru_client_bytes_total{path=\"shm\",dir=\"read\"} 0\n"));
	assert_non_null(strstr(t, "maru_client_data_path{path=\"tcp\"} 1\n"));
	assert_non_null(strstr(t, "maru_client_data_path{path=\"shm\"} 0\n"));
	assert_non_null(strstr(t, "maru_client_connected 1\n"));
	assert_non_null(strstr(t, "maru_client_generation 99\n"));
	assert_non_null(strstr(t, "maru_client_sessions_total 0\n"));
	assert_non_null(strstr(t, "maru_client_timeouts_total 0\n"));
	/* the rdma path's own lines are there, idle, on a tcp client */
	assert_non_null(strstr(t, "# TYPE maru_client_rdma_wrs_in_flight gauge\n"
				 "maru_client_rdma_wrs_in_flight 0\n"));
	assert_non_null(strstr(t, "maru_client_rdma_wrs_total{op=\"write\"} 0\n"));
	assert_non_null(strstr(t, "maru_client_rdma_errors_total{kind=\"remote_access\"} 0\n"));
	assert_non_null(strstr(t, "maru_client_rdma_errors_total{kind=\"timeout\"} 0\n"));
	assert_non_null(strstr(t, "maru_client_rdma_qp_connects_total 0\n"));
	/* create, reserve, read, STATS twice so far: the 2 writes went on
	 * the handle's stream, counted as the tcp path's frames */
	assert_non_null(strstr(t, "maru_client_requests_total 5\n"));
	assert_non_null(strstr(t, "maru_client_tcp_frames_total{dir=\"write\"} 2\n"));
	assert_non_null(strstr(t, "maru_client_tcp_frames_total{dir=\"read\"} 1\n"));
	assert_non_null(strstr(t, "\nmaru_client_spin_replies_total "));
	assert_non_null(strstr(t, "\nmaru_client_spin_misses_total "));
	free(t);
	/* a short buffer: a prefix, NUL-terminated, and the full length */
	memset(small, 'Z', sizeof(small));
	assert_true(maru_stats_text(c, small, sizeof(small)) > (ssize_t)sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, MARUD_TEXT, sizeof(small) - 1);
	assert_int_equal(maru_stats_text(c, NULL, 5), -EINVAL);
	/* an outage shows in the counters and the gauge */
	maru_file_close(h);
	fake_forget(&f);
	fake_drop(&f);
	t = stats(c);
	assert_non_null(strstr(t, "maru_client_sessions_total 1\n"));
	assert_non_null(strstr(t, "maru_client_reconnects_total 1\n"));
	free(t);
	maru_client_free(c);
	fake_stop(&f);
	store_free(&s);
}

/* The path lines are the table's stats hooks' text, in place, as it changes. */
static void test_path_lines_from_table(void **state)
{
	struct prom own = PROM_INIT;
	struct maru_client *c;
	struct fake_marud f;
	struct store s;
	char *t, *at;
	int k;

	(void)state;
	store_init(&s);
	fake_start(&f, stats_handler, &s);
	c = fake_client(&f, 2000, 2, NULL, 0);
	atomic_store(&c->st.rdma.qp_connects, 3);
	atomic_store(&c->st.rdma.err[RDMA_ERR_TIMEOUT], 2);
	for (k = MARU_DATA_SHM; k <= MARU_DATA_TCP; k++)
		if (dp_of(k)->stats)
			dp_of(k)->stats(c, &own);
	assert_int_equal(own.err, 0);
	assert_true(own.len > 0);
	assert_non_null(strstr(own.buf, "maru_client_rdma_qp_connects_total 3\n"));
	assert_non_null(strstr(own.buf, "maru_client_rdma_errors_total{kind=\"timeout\"} 2\n"));
	t = stats(c);
	at = strstr(t, own.buf);
	assert_non_null(at);
	/* after the gauges of the path in use, right before the connected one */
	assert_true(strstr(t, "maru_client_data_path{path=\"tcp\"} 1\n") < at);
	assert_memory_equal(at + own.len, "# HELP maru_client_connected ", 29);
	prom_fini(&own);
	free(t);
	maru_client_free(c);
	fake_stop(&f);
	store_free(&s);
}

/*
 * The whole client text, byte for byte, with every counter distinct: the
 * text the hand-made writers printed before stats.c and the rdma path moved
 * onto lib/common/prom (names, types, label sets, values, order).
 */
static const char pinned[] =
	MARUD_TEXT "\n"
	"# HELP maru_client_bytes_total Bytes moved by this client per data path and direction.\n"
	"# TYPE maru_client_bytes_total counter\n"
	"maru_client_bytes_total{path=\"shm\",dir=\"read\"} 11\n"
	"maru_client_bytes_total{path=\"shm\",dir=\"write\"} 13\n"
	"maru_client_bytes_total{path=\"rdma\",dir=\"read\"} 21\n"
	"maru_client_bytes_total{path=\"rdma\",dir=\"write\"} 23\n"
	"maru_client_bytes_total{path=\"tcp\",dir=\"read\"} 31\n"
	"maru_client_bytes_total{path=\"tcp\",dir=\"write\"} 33\n"
	"# HELP maru_client_ops_total Transfers moved by this client per data path and direction.\n"
	"# TYPE maru_client_ops_total counter\n"
	"maru_client_ops_total{path=\"shm\",dir=\"read\"} 12\n"
	"maru_client_ops_total{path=\"shm\",dir=\"write\"} 14\n"
	"maru_client_ops_total{path=\"rdma\",dir=\"read\"} 22\n"
	"maru_client_ops_total{path=\"rdma\",dir=\"write\"} 24\n"
	"maru_client_ops_total{path=\"tcp\",dir=\"read\"} 32\n"
	"maru_client_ops_total{path=\"tcp\",dir=\"write\"} 34\n"
	"# HELP maru_client_requests_total Requests sent to marud.\n"
	"# TYPE maru_client_requests_total counter\n"
	"maru_client_requests_total 41\n"
	"# HELP maru_client_spin_replies_total Replies that came while the caller polled for them (opts.spin_us).\n"
	"# TYPE maru_client_spin_replies_total counter\n"
	"maru_client_spin_replies_total 45\n"
	"# HELP maru_client_spin_misses_total Polls for a reply that ran out of time (opts.spin_us).\n"
	"# TYPE maru_client_spin_misses_total counter\n"
	"maru_client_spin_misses_total 46\n"
	"# HELP maru_client_reconnects_total Sockets reopened after an outage.\n"
	"# TYPE maru_client_reconnects_total counter\n"
	"maru_client_reconnects_total 42\n"
	"# HELP maru_client_timeouts_total Calls that gave up with ETIMEDOUT.\n"
	"# TYPE maru_client_timeouts_total counter\n"
	"maru_client_timeouts_total 43\n"
	"# HELP maru_client_abandoned_total Pending versions abandoned at publish because a write to them failed.\n"
	"# TYPE maru_client_abandoned_total counter\n"
	"maru_client_abandoned_total 47\n"
	"# HELP maru_client_sessions_total New sessions after the first (restart or expiry).\n"
	"# TYPE maru_client_sessions_total counter\n"
	"maru_client_sessions_total 44\n"
	"# HELP maru_client_data_path Data path in use (1 for the active one).\n"
	"# TYPE maru_client_data_path gauge\n"
	"maru_client_data_path{path=\"shm\"} 0\n"
	"maru_client_data_path{path=\"rdma\"} 0\n"
	"maru_client_data_path{path=\"tcp\"} 1\n"
	"# HELP maru_client_rdma_wrs_in_flight RDMA work requests posted, not yet completed.\n"
	"# TYPE maru_client_rdma_wrs_in_flight gauge\n"
	"maru_client_rdma_wrs_in_flight -3\n"
	"# HELP maru_client_rdma_wrs_total RDMA READ/WRITE work requests posted.\n"
	"# TYPE maru_client_rdma_wrs_total counter\n"
	"maru_client_rdma_wrs_total{op=\"read\"} 51\n"
	"maru_client_rdma_wrs_total{op=\"write\"} 52\n"
	"# HELP maru_client_rdma_errors_total Failed RDMA transfers by kind (error completions and timeouts).\n"
	"# TYPE maru_client_rdma_errors_total counter\n"
	"maru_client_rdma_errors_total{kind=\"remote_access\"} 60\n"
	"maru_client_rdma_errors_total{kind=\"retry_exceeded\"} 61\n"
	"maru_client_rdma_errors_total{kind=\"flush\"} 62\n"
	"maru_client_rdma_errors_total{kind=\"local\"} 63\n"
	"maru_client_rdma_errors_total{kind=\"timeout\"} 64\n"
	"maru_client_rdma_errors_total{kind=\"other\"} 65\n"
	"# HELP maru_client_rdma_qp_connects_total QPs connected to marud.\n"
	"# TYPE maru_client_rdma_qp_connects_total counter\n"
	"maru_client_rdma_qp_connects_total 53\n"
	"# HELP maru_client_rdma_qp_errors_total QPs moved to the error state and dropped after a failed transfer.\n"
	"# TYPE maru_client_rdma_qp_errors_total counter\n"
	"maru_client_rdma_qp_errors_total 54\n"
	"# HELP maru_client_rdma_rkey_requests_total RKEY calls (rights asked of marud).\n"
	"# TYPE maru_client_rdma_rkey_requests_total counter\n"
	"maru_client_rdma_rkey_requests_total 55\n"
	"# HELP maru_client_tcp_frames_total READ and WRITE frames sent by the tcp data path (its round trips).\n"
	"# TYPE maru_client_tcp_frames_total counter\n"
	"maru_client_tcp_frames_total{dir=\"read\"} 70\n"
	"maru_client_tcp_frames_total{dir=\"write\"} 71\n"
	"# HELP maru_client_tcp_round_trips_total READ and WRITE frames sent with none outstanding before them: each waited a whole round trip.\n"
	"# TYPE maru_client_tcp_round_trips_total counter\n"
	"maru_client_tcp_round_trips_total{dir=\"read\"} 77\n"
	"maru_client_tcp_round_trips_total{dir=\"write\"} 78\n"
	"# HELP maru_client_tcp_stream_bytes Bytes read ahead or written behind and not yet used or answered.\n"
	"# TYPE maru_client_tcp_stream_bytes gauge\n"
	"maru_client_tcp_stream_bytes 72\n"
	"# HELP maru_client_tcp_stream_limit_bytes What the streams may hold at once (opts.stream_bytes).\n"
	"# TYPE maru_client_tcp_stream_limit_bytes gauge\n"
	"maru_client_tcp_stream_limit_bytes 67108864\n"
	"# HELP maru_client_tcp_stream_refused_total Frames not streamed because the budget was full.\n"
	"# TYPE maru_client_tcp_stream_refused_total counter\n"
	"maru_client_tcp_stream_refused_total 73\n"
	"# HELP maru_client_tcp_stream_dials_total Pipelined sockets opened by the tcp data path.\n"
	"# TYPE maru_client_tcp_stream_dials_total counter\n"
	"maru_client_tcp_stream_dials_total 74\n"
	"# HELP maru_client_tcp_stream_errors_total Streams that broke (socket, reply or refusal) or could not start.\n"
	"# TYPE maru_client_tcp_stream_errors_total counter\n"
	"maru_client_tcp_stream_errors_total 75\n"
	"# HELP maru_client_tcp_stream_resent_total Write streams that broke and were sent again in line.\n"
	"# TYPE maru_client_tcp_stream_resent_total counter\n"
	"maru_client_tcp_stream_resent_total 76\n"
	"# HELP maru_client_connected 1 while marud answers, 0 during an outage.\n"
	"# TYPE maru_client_connected gauge\n"
	"maru_client_connected 1\n"
	"# HELP maru_client_generation Pool generation of the current session.\n"
	"# TYPE maru_client_generation gauge\n"
	"maru_client_generation 99\n";

static void set_counters(struct maru_client *c)
{
	struct client_stats *st = &c->st;
	int k, i;

	for (k = MARU_DATA_SHM; k <= MARU_DATA_TCP; k++) {
		atomic_store(&st->dp[k].rd_bytes, 10 * (uint64_t)k + 1);
		atomic_store(&st->dp[k].rd_ops, 10 * (uint64_t)k + 2);
		atomic_store(&st->dp[k].wr_bytes, 10 * (uint64_t)k + 3);
		atomic_store(&st->dp[k].wr_ops, 10 * (uint64_t)k + 4);
	}
	atomic_store(&st->requests, 40);	/* + the STATS call itself */
	atomic_store(&st->reconnects, 42);
	atomic_store(&st->timeouts, 43);
	atomic_store(&st->new_sessions, 44);
	atomic_store(&st->spin_replies, 45);
	atomic_store(&st->spin_misses, 46);
	atomic_store(&st->poisoned, 47);
	atomic_store(&st->tcp.rd_frames, 70);
	atomic_store(&st->tcp.wr_frames, 71);
	atomic_store(&st->tcp.held, 72);
	atomic_store(&st->tcp.refused, 73);
	atomic_store(&st->tcp.dials, 74);
	atomic_store(&st->tcp.pipe_errors, 75);
	atomic_store(&st->tcp.recovered, 76);
	atomic_store(&st->tcp.rd_trips, 77);
	atomic_store(&st->tcp.wr_trips, 78);
	atomic_store(&st->rdma.wrs_read, 51);
	atomic_store(&st->rdma.wrs_write, 52);
	atomic_store(&st->rdma.qp_connects, 53);
	atomic_store(&st->rdma.qp_errors, 54);
	atomic_store(&st->rdma.rkey_calls, 55);
	atomic_store(&st->rdma.in_flight, -3);
	for (i = 0; i < RDMA_ERR_KINDS; i++)
		atomic_store(&st->rdma.err[i], 60 + (uint64_t)i);
}

static void test_text_pinned(void **state)
{
	struct maru_client *c;
	struct fake_marud f;
	struct store s;
	char buf[8192];

	(void)state;
	store_init(&s);
	fake_start(&f, stats_handler, &s);
	c = fake_client(&f, 2000, 2, NULL, 0);
	c->opts.spin_us = 0;	/* the STATS call moves neither spin counter */
	set_counters(c);
	/* the counters and gauges as pinned, then the latency histograms */
	assert_true(maru_stats_text(c, buf, sizeof(buf)) > (ssize_t)strlen(pinned));
	assert_memory_equal(buf, pinned, strlen(pinned));
	assert_memory_equal(buf + strlen(pinned),
			    "# HELP maru_client_request_duration_seconds ", 44);
	maru_client_free(c);
	fake_stop(&f);
	store_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statfs_fields),
		cmocka_unit_test(test_stats_text),
		cmocka_unit_test(test_path_lines_from_table),
		cmocka_unit_test(test_text_pinned),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}

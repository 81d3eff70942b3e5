// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/stats_test.c: the pool-wide reports of
 * daemon/handlers/stats.c on a real server: the Prometheus text of STATS
 * (every metric a HELP, a TYPE and one sample, in that order; values as the
 * directory and the server count them; one request counter per served op
 * and none for the rest) and STATFS, both called directly and over the wire;
 * built with STATS_RDMA, also the rdma lines (see test_rdma_lines).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dir.h"
#include "handlers/handlers.h"
#include "server_harness.h"
#include "server_priv.h"

/* marud's metrics before the op counters, without an rdma listener */
#define BASE_METRICS	46

struct fx {
	struct th t;
	struct tconn a;
	struct treply r;
	char text[1 << 16];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	th_config(&f->t);
	if (th_new(&f->t, NULL))
		return -1;
	tc_open(&f->t, &f->a);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc;

	tc_close(&f->a);
	rc = th_free(&f->t);
	free(f);
	return rc;
}

/* The sample value of metric `name` (exact name, optional {labels}). */
static int sample(const char *text, const char *name, uint64_t *v)
{
	const char *l = text;
	size_t n = strlen(name);

	while (l && *l) {
		if (!strncmp(l, name, n) && l[n] == ' ')
			return sscanf(l + n + 1, "%" SCNu64, v) == 1 ? 0 : -EINVAL;
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return -ENOENT;
}

static uint64_t value(const char *text, const char *name)
{
	uint64_t v = 0;

	assert_int_equal(sample(text, name, &v), 0);
	return v;
}

/* Every metric: "# HELP n ...", "# TYPE n gauge|counter", then "n <u64>". */
static unsigned int check_exposition(const char *text)
{
	char name[128], want[160], type[16];
	const char *l = text;
	unsigned int metrics = 0;

	while (*l && strncmp(l, "# HELP marud_ops_total", 22)) {
		assert_int_equal(sscanf(l, "# HELP %127s", name), 1);
		l = strchr(l, '\n') + 1;
		snprintf(want, sizeof(want), "# TYPE %s ", name);
		assert_int_equal(strncmp(l, want, strlen(want)), 0);
		assert_int_equal(sscanf(l + strlen(want), "%15s", type), 1);
		assert_true(!strcmp(type, "gauge") || !strcmp(type, "counter"));
		l = strchr(l, '\n') + 1;
		snprintf(want, sizeof(want), "%s ", name);
		assert_int_equal(strncmp(l, want, strlen(want)), 0);
		l = strchr(l, '\n') + 1;
		metrics++;
	}
	return metrics;
}

static void stats_of(struct fx *f, const unsigned char *served)
{
	struct pbuf out = { 0 };

	assert_int_equal(hdl_stats_text(f->t.srv, served, &out), 0);
	assert_true(out.len < sizeof(f->text));
	memcpy(f->text, out.data, out.len);
	f->text[out.len] = '\0';
	proto_buf_free(&out);
}

static void test_text_matches_the_directory(void **state)
{
	struct fx *f = *state;
	unsigned char served[OP_MAX] = { 0 };
	struct dir_stats st;

	served[OP_PING] = served[OP_STATS] = 1;
	dir_stats(f->t.srv->dir, &st);
	stats_of(f, served);
	/* 33 pool and server metrics, 4 of journal checkpoints, 2 of the event
	 * loops, 7 of hints and the region extension */
	assert_int_equal(check_exposition(f->text), BASE_METRICS);
	assert_int_equal(value(f->text, "marud_region_in_use"), 1);
	assert_int_equal(value(f->text, "marud_connection_handoffs_total"), 0);
	assert_int_equal(value(f->text, "marud_loop_sends_total"), 0);
	/* no journal in the harness: no checkpoint of either kind */
	assert_int_equal(value(f->text, "marud_journal_checkpoints_total"), st.ckpt_sync);
	assert_int_equal(value(f->text, "marud_journal_background_checkpoints_total"), 0);
	assert_int_equal(value(f->text, "marud_hints_refused_total"), 0);
	assert_int_equal(value(f->text, "marud_pool_capacity_bytes"), st.capacity);
	assert_int_equal(value(f->text, "marud_pool_free_bytes"), st.free);
	assert_int_equal(value(f->text, "marud_dirs"), st.dirs);
	assert_int_equal(value(f->text, "marud_generation"), TH_GENERATION);
	assert_int_equal(value(f->text, "marud_accounting_ok"), 1);
	assert_int_equal(value(f->text, "marud_connections"), 0);
	/* the op counters: the served ones, nothing else */
	assert_non_null(strstr(f->text, "# HELP marud_ops_total Requests handled, by op.\n"
				"# TYPE marud_ops_total counter\n"
				"marud_ops_total{op=\"PING\"} 0\n"
				"marud_ops_total{op=\"STATS\"} 0\n"));
	assert_null(strstr(f->text, "op=\"HELLO\""));
}

static void test_counters_over_the_wire(void **state)
{
	struct fx *f = *state;
	uint8_t req[64];
	size_t n = name_req(req, DIR_ROOT_ID, "d", 0755);
	struct dir_stats st;
	uint64_t dirs0;
	int i;

	dir_stats(f->t.srv->dir, &st);
	dirs0 = st.dirs;

	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(tc_call(&f->a, OP_PING, 0, NULL, 0, &f->r, NULL), 0);
	assert_int_equal(tc_call(&f->a, OP_MKDIR, 1, req, n, &f->r, NULL), 0);
	assert_int_equal(tc_call(&f->a, OP_STATS, 0, NULL, 0, &f->r, NULL), 0);
	assert_true(f->r.len < sizeof(f->text));
	memcpy(f->text, f->r.p, f->r.len);
	f->text[f->r.len] = '\0';
	check_exposition(f->text);
	assert_int_equal(value(f->text, "marud_dirs"), dirs0 + 1);
	assert_int_equal(value(f->text, "marud_ops_total{op=\"PING\"}"), 3);
	assert_int_equal(value(f->text, "marud_ops_total{op=\"HELLO\"}"), 1);
	assert_int_equal(value(f->text, "marud_ops_total{op=\"MKDIR\"}"), 1);
	/* counted before it ran */
	assert_int_equal(value(f->text, "marud_ops_total{op=\"STATS\"}"), 1);
	assert_int_equal(value(f->text, "marud_ops_total{op=\"WRITE\"}"), 0);
	assert_int_equal(value(f->text, "marud_sessions"), 1);
	dir_stats(f->t.srv->dir, &st);
	assert_int_equal(value(f->text, "marud_dirs"), st.dirs);
	assert_int_equal(value(f->text, "marud_creates_total"), st.creates);
	/* pushed or subscriber-only ops have no handler of their own */
	assert_null(strstr(f->text, "op=\"EVENT\""));
	assert_null(strstr(f->text, "op=\"EVENT_ACK\""));
	assert_non_null(strstr(f->text, "op=\"SUBSCRIBE\""));
}

static void test_statfs(void **state)
{
	struct fx *f = *state;
	struct proto_statfs sf;
	struct dir_stats st;
	uint8_t req[64];
	size_t n = name_req(req, DIR_ROOT_ID, "e", 0755);
	uint64_t dirs0;

	dir_stats(f->t.srv->dir, &st);
	dirs0 = st.dirs;
	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	assert_int_equal(tc_call(&f->a, OP_MKDIR, 1, req, n, &f->r, NULL), 0);
	assert_int_equal(tc_call(&f->a, OP_STATFS, 0, NULL, 0, &f->r, NULL), 0);
	assert_int_equal(f->r.len, sizeof(sf));
	memcpy(&sf, f->r.p, sizeof(sf));
	dir_stats(f->t.srv->dir, &st);
	assert_int_equal(sf.capacity, st.capacity);
	assert_int_equal(sf.free, st.free);
	assert_int_equal(sf.block, st.block);
	assert_int_equal(sf.dirs, dirs0 + 1);
	assert_int_equal(sf.free + sf.used + sf.pending + sf.orphaned, sf.capacity);
}

#if STATS_RDMA
#include "softverbs.h"

/*
 * Built a second time with STATS_RDMA and the software verbs device linked
 * ahead of libibverbs (tests/softverbs: an emulated NIC in this process; no
 * RNIC): with an rdma:// listener, STATS carries marud's rdma lines, each a
 * HELP, a TYPE and one sample, all zero before any client connected.
 */
static int setup_rdma(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || softverbs_active() != 1)	/* the emulated NIC, not a real one */
		return -1;
	th_config(&f->t);
	snprintf(f->t.cfg.listen[f->t.cfg.nlisten++], sizeof(f->t.cfg.listen[0]),
		 "rdma://127.0.0.1:%u", 20000u + (unsigned int)getpid() % 20000u);
	if (th_new(&f->t, NULL))
		return -1;
	tc_open(&f->t, &f->a);
	*state = f;
	return 0;
}

static void test_rdma_lines(void **state)
{
	static const char *const names[] = {
		"marud_rdma_pool_exposed", "marud_rdma_qps", "marud_rdma_windows",
		"marud_rdma_quarantined_bytes", "marud_rdma_quarantined_bytes_total",
		"marud_rdma_fences_total", "marud_rdma_binds_total", "marud_rdma_revokes_total",
		"marud_rdma_accepted_total", "marud_rdma_rejected_total",
		"marud_rdma_rkey_refused_total", "marud_rdma_bind_errors_total",
		"marud_rdma_extent_mrs_total", "marud_rdma_extent_mr_us_total",
	};
	unsigned char served[OP_MAX] = { 0 };
	struct fx *f = *state;
	char help[96];
	size_t i;

	assert_non_null(f->t.srv->rdma);
	stats_of(f, served);
	/* + marud_rdma_rights, marud_rdma_window_bounds_enforced (not 0) and
	 * marud_rdma_pool_registration_us_total (the event thread's, at start) */
	assert_int_equal(check_exposition(f->text),
			 BASE_METRICS + sizeof(names) / sizeof(names[0]) + 3);
	/* softverbs by default enforces a window's bounds: rights by windows */
	assert_int_equal(value(f->text, "marud_rdma_rights"), 1);
	assert_int_equal(value(f->text, "marud_rdma_window_bounds_enforced"), 1);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(help, sizeof(help), "# HELP %s ", names[i]);
		assert_non_null(strstr(f->text, help));
		assert_int_equal(value(f->text, names[i]), 0);
	}
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_text_matches_the_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counters_over_the_wire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_statfs, setup, teardown),
#if STATS_RDMA
		cmocka_unit_test_setup_teardown(test_rdma_lines, setup_rdma, teardown),
#endif
	};

	return cmocka_run_group_tests_name("handlers/stats", tests, NULL, NULL);
}

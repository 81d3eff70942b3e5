/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/rdma/selftest_test.c: the RDMA rights self-test
 * (daemon/rdma/selftest.c) called directly, on the software verbs device
 * linked ahead of libibverbs (tests/softverbs: an emulated NIC, a thread
 * of this process; the probes' loopback QPs connect through it on
 * 127.0.0.1). Real: selftest.c, rdma_cm and verbs as softverbs gives them.
 * Faked: the device's behaviour, through softverbs' switches and fault
 * knobs. Cases: a device that enforces everything (every probe refused);
 * rdma_rxe's window bounds (a READ past a window's end allowed, and so
 * windows' bounds not trusted); no windows asked (MR probes only); a
 * probe that cannot be set up (a failed registration) says nothing of its
 * own right and the others still run; a control READ that fails makes
 * the probe say nothing (-EPROTO); completions that never come stop the
 * test after the first probe (-ETIMEDOUT); the log line says each answer.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "rdma_priv.h"
#include "softverbs.h"

static const struct sockaddr *lo(void)
{
	static struct sockaddr_in in = { .sin_family = AF_INET };

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return (const struct sockaddr *)&in;
}

static int setup(void **state)
{
	(void)state;
	if (softverbs_active() != 1)
		fail_msg("not linked with the software verbs device");
	softverbs_set_mw_support(1);
	softverbs_set_mw_bounds(1);
	softverbs_fault_set("");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	softverbs_set_mw_support(1);
	softverbs_set_mw_bounds(1);
	softverbs_fault_set("");
	return 0;
}

/* rdma_selftest with stderr read back into log. */
static int run(int windows, struct rdma_check *chk, char *log, size_t cap)
{
	int p[2], saved, rc;
	ssize_t n;

	fflush(stderr);
	assert_int_equal(pipe(p), 0);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	memset(chk, 0x7f, sizeof(*chk));
	rc = rdma_selftest(lo(), windows, "softverbs0", chk);
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = read(p[0], log, cap - 1);
	close(p[0]);
	log[n > 0 ? n : 0] = '\0';
	fputs(log, stderr);
	return rc;
}

static void test_all_enforced(void **state)
{
	struct rdma_check c;
	char log[8192];

	(void)state;
	assert_int_equal(run(1, &c, log, sizeof(log)), 0);
	assert_int_equal(c.win_rights, 1);
	assert_int_equal(c.win_bounds, 1);
	assert_int_equal(c.mr_rights, 1);
	assert_int_equal(c.mr_bounds, 1);
	assert_non_null(strstr(log, "self-test of softverbs0"));
	assert_non_null(strstr(log, "a WRITE through a read-only window refused, a READ "
			       "outside a window's extent refused; a WRITE through a "
			       "read-only MR refused, a READ outside an MR refused"));
}

/* rdma_rxe: a READ past the window's end but inside its MR goes through. */
static void test_rxe_window_bounds(void **state)
{
	struct rdma_check c;
	char log[8192];

	(void)state;
	softverbs_set_mw_bounds(0);
	assert_int_equal(run(1, &c, log, sizeof(log)), 0);
	assert_int_equal(c.win_rights, 1);
	assert_int_equal(c.win_bounds, 0);
	assert_int_equal(c.mr_rights, 1);
	assert_int_equal(c.mr_bounds, 1);
	assert_non_null(strstr(log, "a READ outside a window's extent ALLOWED"));
}

/* No windows on the device: only the MR probes run. */
static void test_no_windows(void **state)
{
	struct rdma_check c;
	char log[8192];

	(void)state;
	assert_int_equal(run(0, &c, log, sizeof(log)), 0);
	assert_int_equal(c.win_rights, -1);
	assert_int_equal(c.win_bounds, -1);
	assert_int_equal(c.mr_rights, 1);
	assert_int_equal(c.mr_bounds, 1);
	assert_non_null(strstr(log, "a WRITE through a read-only window not tested"));
}

/* A probe that cannot be set up answers nothing; the next ones still run. */
static void test_setup_fails(void **state)
{
	struct rdma_check c;
	char log[8192];

	(void)state;
	softverbs_fault_set("fail_reg=1");	/* the first probe's first MR */
	assert_int_equal(run(1, &c, log, sizeof(log)), 0);
	assert_int_equal(c.win_rights, -ENOMEM);
	assert_int_equal(c.win_bounds, 1);
	assert_int_equal(c.mr_rights, 1);
	assert_int_equal(c.mr_bounds, 1);
	/* every probe failing: the first one's error is the result */
	softverbs_fault_set("fail_reg=1");
	assert_int_equal(run(0, &c, log, sizeof(log)), -ENOMEM);
	assert_int_equal(c.mr_rights, -ENOMEM);
	assert_int_equal(c.win_rights, -1);
}

/* The control READ inside the right fails: the probe says nothing. */
static void test_control_fails(void **state)
{
	struct rdma_check c;
	char log[8192];

	(void)state;
	/* window probe: the bind is the first WR posted, the control READ the next */
	softverbs_fault_set("err_qp_after=1");
	assert_int_equal(run(1, &c, log, sizeof(log)), 0);
	assert_int_equal(c.win_rights, -EPROTO);
	assert_int_equal(c.win_bounds, 1);
	assert_int_equal(c.mr_rights, 1);
	assert_int_equal(c.mr_bounds, 1);
	assert_non_null(strstr(log, "a WRITE through a read-only window not tested"));
}

/* Completions that never come: one probe times out and no more are made. */
static void test_timeout_stops(void **state)
{
	struct rdma_check c;
	char log[8192];

	(void)state;
	softverbs_fault_set("delay_cqe_ms=8000");
	assert_int_equal(run(1, &c, log, sizeof(log)), -ETIMEDOUT);
	assert_int_equal(c.win_rights, -ETIMEDOUT);
	assert_int_equal(c.win_bounds, -1);
	assert_int_equal(c.mr_rights, -1);
	assert_int_equal(c.mr_bounds, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_all_enforced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rxe_window_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_windows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_setup_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_stops, setup, teardown),
	};

	return cmocka_run_group_tests_name("rdma_selftest", tests, NULL, NULL);
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/tenant_stats_test.c: a tenant's usage as
 * marud reports it (daemon/handlers/tenant_stats.c) on a real server:
 * NS_USAGE of a tenant's root answers its name, quota and the bytes its
 * files reserve, of any other directory ENODATA; STATS carries the same
 * figures labelled tenant="NAME"; a CREATE past the quota is ENOSPC on the
 * wire and counted. The tenant is given to the server's directory as the
 * key file would (dir_set_tenants), the sessions are the administrator's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dir.h"
#include "hreq.h"
#include "server_priv.h"

#define QUOTA	(4 * 4096ull)

static uint64_t alpha_root(struct hfx *f)
{
	uint64_t root;
	struct dir_tenant t = { "alpha", 0, QUOTA };

	assert_int_equal(hr_name(f, &f->a, OP_MKDIR, HR_ROOT, "alpha", S_IFDIR | 0755), 0);
	root = hr_attr(f).ino;
	t.root = root;
	assert_int_equal(dir_set_tenants(f->t.srv->dir, &t, 1), 0);
	return root;
}

static struct proto_ns_usage usage(struct hfx *f, uint64_t root)
{
	struct proto_ns_usage u;

	assert_int_equal(hr_ino(f, &f->a, OP_NS_USAGE, root), 0);
	assert_int_equal(f->r.len, sizeof(u));
	memcpy(&u, f->r.p, sizeof(u));
	return u;
}

static void test_ns_usage(void **state)
{
	struct hfx *f = *state;
	uint64_t root = alpha_root(f), ino;
	struct proto_ns_usage u;

	u = usage(f, root);
	assert_string_equal(u.tenant, "alpha");
	assert_int_equal(u.quota, QUOTA);
	assert_int_equal(u.used, 0);
	assert_int_equal(hr_create(f, &f->a, root, "x", 4096), 0);
	ino = hr_attr(f).ino;
	assert_int_equal(usage(f, root).pending, 4096);
	assert_int_equal(hr_write(f, &f->a, ino, 0, "hello", 5), 0);
	assert_int_equal(hr_publish(f, &f->a, ino, 5), 0);
	u = usage(f, root);
	assert_int_equal(u.used, 4096);
	assert_int_equal(u.pending, 0);
	/* not a tenant's root */
	assert_int_equal(hr_ino(f, &f->a, OP_NS_USAGE, HR_ROOT), -ENODATA);
	assert_int_equal(hr_ino(f, &f->a, OP_NS_USAGE, ino), -ENODATA);
}

static void test_stats_and_enospc(void **state)
{
	struct hfx *f = *state;
	uint64_t root = alpha_root(f);

	assert_int_equal(hr_create(f, &f->a, root, "a", 3 * 4096), 0);
	assert_int_equal(hr_metric(f, &f->b, "marud_tenant_pending_bytes{tenant=\"alpha\"}"),
			 3 * 4096);
	assert_int_equal(hr_metric(f, &f->b, "marud_tenant_quota_bytes{tenant=\"alpha\"}"),
			 QUOTA);
	/* 3 blocks pending, nothing of its own evictable: 2 more is over */
	assert_int_equal(hr_create(f, &f->b, root, "b", 2 * 4096), -ENOSPC);
	assert_int_equal(hr_metric(f, &f->b, "marud_tenant_enospc_total{tenant=\"alpha\"}"), 1);
	assert_int_equal(usage(f, root).enospc, 1);
	/* under no tenant root the quota does not apply */
	assert_int_equal(hr_create(f, &f->b, HR_ROOT, "c", 2 * 4096), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ns_usage, hfx_setup, hfx_teardown),
		cmocka_unit_test_setup_teardown(test_stats_and_enospc, hfx_setup, hfx_teardown),
	};

	return cmocka_run_group_tests_name("handlers_tenant_stats", tests, NULL, NULL);
}

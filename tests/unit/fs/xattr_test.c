/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/xattr_test.c: fs/xattr.c, the user.maru.* attributes:
 * names outside the namespace, unknown and read-only names, values of a
 * published version (id, state, extents), hints set, read and removed,
 * user.maru.size parsed into a reservation of this mount's pending only,
 * listing, ERANGE for short buffers, and a tenant's usage as
 * user.maru.ns.* on its root only (maru_ns_usage faked).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"
#include "inode.h"
#include "pending.h"
#include "xattr.h"

static struct mfs m;
static uint64_t ino;

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	ino = fake_publish(1, "f", "bytes");
	itab_remember(m.tab, ino, 1, "f");
	return 0;
}

static int teardown(void **state)
{
	fake_unmount(&m);
	assert_int_equal(fk.files_open, 0);
	return 0;
}

static int get(const char *name, size_t size)
{
	fk.last_err = -1;
	fk.last_buf[0] = '\0';
	xattr_get(fake_req(&m), ino, name, size);
	return fk.last_err;
}

static int set(const char *name, const char *value)
{
	fk.last_err = -1;
	xattr_set(fake_req(&m), ino, name, value, strlen(value), 0);
	return fk.last_err;
}

/* Setting a read-only ns attribute on directory at. */
static int xattr_set_rc(uint64_t at)
{
	fk.last_err = -1;
	xattr_set(fake_req(&m), at, "user.maru.ns.quota", "1", 1, 0);
	return fk.last_err;
}

static void test_namespace(void **state)
{
	assert_int_equal(get("security.capability", 0), ENODATA);
	assert_int_equal(get("user.maru.nonesuch", 64), ENODATA);
	assert_int_equal(set("trusted.x", "1"), ENOTSUP);
	assert_int_equal(set("user.maru.nonesuch", "1"), EINVAL);
	assert_int_equal(set("user.maru.version", "1"), EPERM);
	fk.last_err = -1;
	xattr_remove(fake_req(&m), ino, "user.maru.state");
	assert_int_equal(fk.last_err, EPERM);
}

static void test_values(void **state)
{
	char want[32];

	snprintf(want, sizeof(want), "%llu", (unsigned long long)ino);
	assert_int_equal(get("user.maru.version", 64), 0);
	assert_string_equal(fk.last_buf, want);
	assert_int_equal(get("user.maru.version", 0), 0);	/* size query */
	assert_int_equal(fk.last_xattr, strlen(want));
	assert_int_equal(get("user.maru.version", 1), ERANGE);
	assert_int_equal(get("user.maru.state", 64), 0);
	assert_string_equal(fk.last_buf, "published");
	assert_int_equal(get("user.maru.extent", 64), 0);
	assert_string_equal(fk.last_buf, "4096+8192,65536+4096");
	assert_int_equal(get("user.maru.hint", 64), ENODATA);	/* none set */
}

static void test_hint(void **state)
{
	assert_int_equal(set("user.maru.hint", "bogus"), EINVAL);
	assert_int_equal(set("user.maru.hint", "read_end\n"), 0);
	assert_int_equal(m.cnt.hints[HINT_READ_END], 1);
	assert_int_equal(get("user.maru.hint", 64), 0);
	assert_string_equal(fk.last_buf, "read_end");
	xattr_remove(fake_req(&m), ino, "user.maru.hint");
	assert_int_equal(fk.last_err, 0);
	xattr_remove(fake_req(&m), ino, "user.maru.hint");
	assert_int_equal(fk.last_err, ENODATA);
}

/* user.maru.pin: parsed here, the pin itself is marud's (maru_pin_set) */
static void test_pin(void **state)
{
	struct maru_file *f;
	struct pending *p;
	int act = 0;

	assert_int_equal(get("user.maru.pin", 64), 0);
	assert_string_equal(fk.last_buf, "0");		/* unpinned: 0, not ENODATA */
	assert_int_equal(set("user.maru.pin", "600\n"), 0);
	assert_true(fk.last_pin_ino == ino && fk.last_pin_seconds == 600);
	assert_int_equal(get("user.maru.pin", 64), 0);
	assert_string_equal(fk.last_buf, "600");
	assert_int_equal(set("user.maru.pin", "4294967295"), 0);
	assert_int_equal(fk.pin_sets, 2);
	/* not a count of seconds: refused before marud is asked */
	assert_int_equal(set("user.maru.pin", "4294967296"), EINVAL);
	assert_int_equal(set("user.maru.pin", "-1"), EINVAL);
	assert_int_equal(set("user.maru.pin", "1h"), EINVAL);
	assert_int_equal(set("user.maru.pin", ""), EINVAL);
	assert_int_equal(fk.pin_sets, 2);
	/* marud's refusal is the caller's */
	fk.pin_rc = -ENOSPC;
	assert_int_equal(set("user.maru.pin", "30"), ENOSPC);
	/* removing it unpins; removing it again: ENODATA */
	fk.last_err = -1;
	xattr_remove(fake_req(&m), ino, "user.maru.pin");
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_pin_seconds, 0);
	xattr_remove(fake_req(&m), ino, "user.maru.pin");
	assert_int_equal(fk.last_err, ENODATA);
	/* this mount's pending version: not published yet */
	assert_int_equal(maru_file_create(NULL, 1, "f", 0100644, 0, 0, 0, 0, &f), 0);
	p = pend_adopt(&m, f, 1, "f", ino, 1);
	assert_int_equal(pend_attach_writer(p, 0, &act), 0);
	pend_link_ino(&m, ino, p);
	assert_int_equal(set("user.maru.pin", "30"), EBUSY);
	pend_release(p, 1, 0, &act, 1);
	pend_put(p);
	/* a directory has no pin */
	fk.last_err = -1;
	xattr_set(fake_req(&m), FUSE_ROOT_ID, "user.maru.pin", "5", 1, 0);
	assert_true(fk.last_err != 0);
}

static void test_size(void **state)
{
	struct maru_file *f;
	struct pending *p;
	int act = 0;

	assert_int_equal(set("user.maru.size", "2M"), EPERM);	/* published: immutable */
	assert_int_equal(maru_file_create(NULL, 1, "f", 0100644, 0, 0, 0, 0, &f), 0);
	p = pend_adopt(&m, f, 1, "f", ino, 1);
	assert_int_equal(pend_attach_writer(p, 0, &act), 0);
	pend_link_ino(&m, ino, p);
	assert_int_equal(set("user.maru.size", "2M\n"), 0);
	assert_int_equal(fake_ver(pend_ino(p))->reserved, 2 << 20);
	assert_int_equal(set("user.maru.size", "2Q"), EINVAL);
	assert_int_equal(set("user.maru.size", ""), EINVAL);
	assert_int_equal(get("user.maru.state", 64), 0);
	assert_string_equal(fk.last_buf, "pending");	/* this mount's version */
	pend_release(p, 1, 0, &act, 1);	/* failed: nothing published */
	pend_put(p);
}

static void test_list(void **state)
{
	static const char want[] = "user.maru.version\0user.maru.extent\0user.maru.xxh3\0"
				   "user.maru.leases\0user.maru.state\0"
				   "user.maru.generation\0user.maru.size";

	fk.last_err = -1;
	xattr_list(fake_req(&m), ino, 0);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_xattr, sizeof(want));
	xattr_list(fake_req(&m), ino, 512);
	assert_int_equal(fk.last_len, sizeof(want));
	assert_memory_equal(fk.last_buf, want, sizeof(want));
	xattr_list(fake_req(&m), ino, 4);
	assert_int_equal(fk.last_err, ERANGE);
}

static int get_on(uint64_t at, const char *name)
{
	fk.last_err = -1;
	fk.last_buf[0] = '\0';
	xattr_get(fake_req(&m), at, name, sizeof(fk.last_buf));
	return fk.last_err;
}

static void test_tenant_root(void **state)
{
	uint64_t root = FUSE_ROOT_ID;

	assert_int_equal(get_on(root, "user.maru.ns.quota"), ENODATA);	/* no tenant */
	fk.ns_root = root;
	snprintf(fk.ns.tenant, sizeof(fk.ns.tenant), "alpha");
	fk.ns.quota = 4 << 20;
	fk.ns.used = 3 << 20;
	fk.ns.pending = 4096;
	fk.ns.enospc = 2;
	assert_int_equal(get_on(root, "user.maru.ns.tenant"), 0);
	assert_string_equal(fk.last_buf, "alpha");
	assert_int_equal(get_on(root, "user.maru.ns.quota"), 0);
	assert_string_equal(fk.last_buf, "4194304");
	assert_int_equal(get_on(root, "user.maru.ns.used"), 0);
	assert_string_equal(fk.last_buf, "3145728");
	assert_int_equal(get_on(root, "user.maru.ns.pending"), 0);
	assert_string_equal(fk.last_buf, "4096");
	assert_int_equal(get_on(root, "user.maru.ns.enospc"), 0);
	assert_string_equal(fk.last_buf, "2");
	assert_int_equal(get_on(ino, "user.maru.ns.used"), ENODATA);	/* a file */
	assert_int_equal(xattr_set_rc(root), EPERM);
	xattr_list(fake_req(&m), root, sizeof(fk.last_buf));
	assert_non_null(memmem(fk.last_buf, fk.last_len, "user.maru.ns.quota", 19));
	fk.ns_root = 0;
	xattr_list(fake_req(&m), root, sizeof(fk.last_buf));
	assert_null(memmem(fk.last_buf, fk.last_len, "user.maru.ns.quota", 19));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_namespace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenant_root, setup, teardown),
	};

	return cmocka_run_group_tests_name("fs/xattr", tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/tenant_test.c: the tenant table (daemon/tenant.c) and
 * dir_within() (daemon/dir/within.c) over a real directory (the dir tests'
 * fixture): roots made at load, records kept across a reload that does not
 * change a key (counters hung on them survive), revoked when removed or
 * when the secret or root changed, rights changed in place, a bad root
 * changing nothing, and which tenant holds an id.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "dir/fixture.h"
#include "keyfile.h"
#include "tenant.h"

static void parse(const char *text, struct keyfile *kf)
{
	char err[256];

	if (keyfile_parse("t", text, strlen(text), kf, err, sizeof(err)))
		fail_msg("parse: %s", err);
}

#define AB "marud-keys 1\n" \
	"key a root=/t/a rights=rw quota=1M secret=aaaaaaaaaaaaaaaa\n" \
	"key b root=/t/b rights=rw secret=bbbbbbbbbbbbbbbb\n"

static void test_apply_and_reload(void **state)
{
	struct tenant *a, *b, *a2;
	struct tenants t;
	struct keyfile kf;
	struct dir_attr at;
	unsigned int rev;
	uint64_t tdir, f1;
	struct fx f;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(tenants_init(&t), 0);
	parse(AB, &kf);
	assert_int_equal(tenants_apply(&t, f.d, &kf, &rev, NULL), 0);
	keyfile_free(&kf);
	assert_int_equal(rev, 0);
	assert_int_equal(tenants_count(&t), 2);
	a = tenants_find(&t, "a");
	b = tenants_find(&t, "b");
	assert_non_null(a);
	assert_non_null(b);
	assert_null(tenants_find(&t, "c"));
	/* the roots were made */
	assert_int_equal(lookup(&f, NULL, DIR_ROOT_ID, "t", &at), 0);
	tdir = at.ino;
	assert_int_equal(lookup(&f, NULL, tdir, "a", &at), 0);
	assert_int_equal(at.ino, a->root);
	assert_int_equal(atomic_load(&a->quota), 1 << 20);
	/* which tenant holds what */
	f1 = put_file(&f, f.s1, a->root, "f", "x");
	assert_ptr_equal(tenants_of_id(&t, f.d, f1), a);
	assert_ptr_equal(tenants_of_id(&t, f.d, a->root), a);
	assert_null(tenants_of_id(&t, f.d, tdir));
	assert_int_equal(dir_within(f.d, f1, a->root), DIR_WITHIN_YES);
	assert_int_equal(dir_within(f.d, f1, b->root), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, tdir, a->root), DIR_WITHIN_NO);
	assert_int_equal(dir_within(f.d, 999999, a->root), -ENOENT);
	/* a reload: a unchanged but ro (same record), b's secret changed */
	parse("marud-keys 1\n"
	      "key a root=/t/a rights=ro secret=aaaaaaaaaaaaaaaa\n"
	      "key b root=/t/b rights=rw secret=BBBBBBBBBBBBBBBB\n", &kf);
	assert_int_equal(tenants_apply(&t, f.d, &kf, &rev, NULL), 0);
	keyfile_free(&kf);
	assert_int_equal(rev, 1);
	a2 = tenants_find(&t, "a");
	assert_ptr_equal(a2, a);
	assert_true(tenant_ro(a));
	assert_int_equal(atomic_load(&a->quota), 0);
	assert_int_equal(atomic_load(&b->revoked), 1);	/* old record: closed */
	assert_ptr_not_equal(tenants_find(&t, "b"), b);
	assert_int_equal(atomic_load(&tenants_find(&t, "b")->revoked), 0);
	/* a root that is a file: an error, and nothing changes */
	put_file(&f, f.s1, tdir, "file", "y");
	parse("marud-keys 1\nkey c root=/t/file rights=rw secret=cccccccccccccccc\n", &kf);
	assert_int_equal(tenants_apply(&t, f.d, &kf, &rev, NULL), -ENOTDIR);
	keyfile_free(&kf);
	assert_ptr_equal(tenants_find(&t, "a"), a);
	assert_null(tenants_find(&t, "c"));
	/* a removed: revoked */
	parse("marud-keys 1\nadmin secret=dddddddddddddddd\n", &kf);
	assert_int_equal(tenants_apply(&t, f.d, &kf, &rev, NULL), 0);
	keyfile_free(&kf);
	assert_int_equal(rev, 2);
	assert_int_equal(atomic_load(&a->revoked), 1);
	assert_int_equal(tenants_count(&t), 0);
	assert_int_equal(t.have_admin, 1);
	tenants_fini(&t);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_and_reload),
	};

	return cmocka_run_group_tests_name("tenant", tests, NULL, NULL);
}

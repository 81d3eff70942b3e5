/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/keyfile_test.c: the key file parser
 * (lib/common/keyfile.c): a good file, and for each rule the refusal with
 * the file and line it names.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "keyfile.h"

static void test_good(void **state)
{
	const char *text = "marud-keys 1\n# comment\n\n"
			   "admin secret=admin-secret-0123\n"
			   "key llama root=/models/llama rights=rw quota=64G secret=s-0123456789abcdef\n"
			   "key v.iew-er_1 root=/models/shared rights=ro secret=t-0123456789abcdef # x\n";
	struct keyfile kf;
	char err[256];

	(void)state;
	assert_int_equal(keyfile_parse("k", text, strlen(text), &kf, err, sizeof(err)), 0);
	assert_true(kf.have_admin);
	assert_string_equal(kf.admin.secret, "admin-secret-0123");
	assert_int_equal(kf.nkeys, 2);
	assert_string_equal(kf.keys[0].name, "llama");
	assert_string_equal(kf.keys[0].root, "/models/llama");
	assert_int_equal(kf.keys[0].rights, KEYFILE_RW);
	assert_int_equal(kf.keys[0].quota, 64ULL << 30);
	assert_int_equal(kf.keys[0].line, 5);
	assert_int_equal(kf.keys[1].rights, KEYFILE_RO);
	assert_int_equal(kf.keys[1].quota, 0);
	assert_ptr_equal(keyfile_find(&kf, "v.iew-er_1"), &kf.keys[1]);
	assert_null(keyfile_find(&kf, "nope"));
	keyfile_free(&kf);
	assert_true(keyfile_root_holds("/a", "/a/b"));
	assert_false(keyfile_root_holds("/a", "/ab"));
	assert_true(keyfile_root_holds("/", "/x"));
}

static void refused(const char *text, const char *want)
{
	struct keyfile kf;
	char err[256];

	assert_int_equal(keyfile_parse("keys", text, strlen(text), &kf, err, sizeof(err)),
			 -EINVAL);
	if (!strstr(err, want))
		fail_msg("error \"%s\" does not say \"%s\"", err, want);
	assert_int_equal(kf.nkeys, 0);
	assert_null(kf.keys);
}

#define K "marud-keys 1\n"
#define S " secret=0123456789abcdef"

static void test_refusals(void **state)
{
	(void)state;
	refused("some legacy bytes", "keys:1: first line is not");
	refused(K, "keys:1: no admin and no key");
	refused(K "admin secret=short\n", "keys:2: secret must be 16 to 256");
	refused(K "admin secret=0123456789abcdef\nadmin" S "\n", "keys:3: admin is defined again");
	refused(K "user x root=/x rights=rw" S "\n", "keys:2: unknown line \"user\"");
	refused(K "key .x root=/x rights=rw" S "\n", "keys:2: key needs a NAME");
	refused(K "key a/b root=/x rights=rw" S "\n", "keys:2: key needs a NAME");
	refused(K "key x root=x rights=rw" S "\n", "root \"x\" is not absolute");
	refused(K "key x root=/a/../b rights=rw" S "\n", "\"..\" component");
	refused(K "key x root=/a//b rights=rw" S "\n", "empty component");
	refused(K "key x root=/a/ rights=rw" S "\n", "empty component");
	refused(K "key x root=/a rights=rwx" S "\n", "rights must be rw or ro");
	refused(K "key x root=/a rights=rw quota=12Q" S "\n", "quota \"12Q\" is not a size");
	refused(K "key x root=/a rights=rw root=/b" S "\n", "root given twice");
	refused(K "key x root=/a rights=rw color=red" S "\n", "unknown word \"color\"");
	refused(K "admin root=/a" S "\n", "unknown word \"root\" for admin");
	refused(K "key x root=/a" S "\n", "key x needs root= and rights=");
	refused(K "key x root=/a rights=rw\n", "x has no secret=");
	refused(K "key x root=/a rights=rw" S "\nkey x root=/b rights=rw" S "\n",
		"keys:3: key x is defined again (first on line 2)");
	refused(K "key x root=/a rights=rw" S "\nkey y root=/a/b rights=ro" S "\n",
		"keys:3: root /a/b of key y overlaps root /a of key x");
	refused(K "key x root=/a rights=rw secret=0123456789abcde\x01\n", "not printable");
	refused(K "key x root=/a rights=rw bare" S "\n", "expected WORD=VALUE");
}

static void test_nul_and_long_lines(void **state)
{
	char text[4096];
	struct keyfile kf;
	char err[256];
	size_t n;

	(void)state;
	memcpy(text, K "admin secret=0123456789abcdef\0x\n", sizeof(K) - 1 + 33);
	n = sizeof(K) - 1 + 33;
	assert_int_equal(keyfile_parse("keys", text, n, &kf, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "keys:2: NUL byte"));
	n = (size_t)snprintf(text, sizeof(text), K "admin secret=%s\n", "0123456789abcdef");
	memset(text + n, 'a', 3000);
	assert_int_equal(keyfile_parse("keys", text, n + 3000, &kf, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "keys:3: line longer than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_nul_and_long_lines),
	};

	return cmocka_run_group_tests_name("keyfile", tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/auth_test.c: the shared-key exchange (lib/auth.c) against
 * the fake marud, which runs marud's side of the HMAC challenge: the right
 * key connects (and every fresh socket proves it again), a wrong key is
 * -EACCES because marud's proof fails, a marud that refuses our proof is
 * -EACCES too, a client without a key at a keyed marud is -EACCES; and the
 * key file rules: private regular file of 1..64 KiB.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <sodium.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth.h"
#include "client_priv.h"
#include "fake_marud.h"

struct keys {
	char good[64], bad[64];
	uint8_t good_k[32], bad_k[32];
};

static void write_key(char *path, size_t cap, const char *tag, const char *text,
		      mode_t mode, uint8_t k[32])
{
	int fd;

	snprintf(path, cap, "/tmp/maru-auth-test-%ld-%s.key", (long)getpid(), tag);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	/* what both sides use: the file's bytes hashed to 32 */
	if (k)
		crypto_generichash(k, 32, (const uint8_t *)text, strlen(text), NULL, 0);
}

static int setup(void **state)
{
	static struct keys k;

	assert_true(sodium_init() >= 0);
	write_key(k.good, sizeof(k.good), "good", "correct horse battery staple\n", 0600, k.good_k);
	write_key(k.bad, sizeof(k.bad), "bad", "something else\n", 0600, k.bad_k);
	*state = &k;
	return 0;
}

static int teardown(void **state)
{
	struct keys *k = *state;

	unlink(k->good);
	unlink(k->bad);
	return 0;
}

static int client_new(struct fake_marud *f, const char *key, struct logbook *b,
		      struct maru_client **c)
{
	struct maru_client_opts o;
	char uri[160];

	fake_uri(f, uri, sizeof(uri));
	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.key_file = key;
	o.data_path = MARU_DATA_TCP;
	o.timeout_ms = 2000;
	o.log_fn = log_cb;
	o.log_arg = b;
	return maru_client_new(&o, c);
}

static void test_right_key(void **state)
{
	struct keys *k = *state;
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	struct logbook b;

	logbook_init(&b);
	fake_start(&f, NULL, NULL);
	fake_set_key(&f, k->good_k, k->good_k);
	assert_int_equal(client_new(&f, k->good, &b, &c), 0);
	assert_int_equal(c->has_key, 1);
	assert_null(c->opts.key_file);		/* the path is not kept */
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(st.capacity, FAKE_CAPACITY);
	/* a fresh socket authenticates again before its HELLO */
	fake_drop(&f);
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(fake_nhellos(&f), 2);
	maru_client_free(c);
	fake_stop(&f);
}

/*
 * A fake marud that proves itself with `proves` and checks the client's proof
 * against `checks`; a client holding key_file (NULL: none) must be refused
 * with -EACCES before any HELLO, logging `line` when it is not NULL.
 */
static void expect_refused(const uint8_t *proves, const uint8_t *checks,
			   const char *key_file, const char *line)
{
	struct maru_client *c;
	struct fake_marud f;
	struct logbook b;

	logbook_init(&b);
	fake_start(&f, NULL, NULL);
	fake_set_key(&f, proves, checks);
	assert_int_equal(client_new(&f, key_file, &b, &c), -EACCES);
	if (line)
		assert_true(logged(&b, line, LOG_WARNING));
	assert_int_equal(fake_nhellos(&f), 0);
	fake_stop(&f);
}

static void test_wrong_key(void **state)
{
	struct keys *k = *state;

	/* marud's proof does not check with our key: we refuse it */
	expect_refused(k->good_k, k->good_k, k->bad, "wrong key: marud failed to prove");
}

static void test_marud_refuses(void **state)
{
	struct keys *k = *state;

	/* marud proves the key we hold but checks ours against another */
	expect_refused(k->good_k, k->bad_k, k->good, "wrong key: marud refused our key");
}

static void test_no_key_at_keyed_marud(void **state)
{
	struct keys *k = *state;

	expect_refused(k->good_k, k->good_k, NULL, "no key: marud requires one");
}

static void test_key_file_rules(void **state)
{
	struct keys *k = *state;
	struct maru_client *c = calloc(1, sizeof(*c));
	char path[64], *big, name[64];
	uint8_t key[32], want[32];
	size_t i;

	assert_non_null(c);
	c->opts.log_priority = LOG_INFO;
	assert_int_equal(auth_load_key(c, k->good, key, name), 0);
	assert_memory_equal(key, k->good_k, 32);
	write_key(path, sizeof(path), "open", "shared\n", 0644, NULL);
	assert_int_equal(auth_load_key(c, path, key, name), -EACCES);	/* not private */
	unlink(path);
	write_key(path, sizeof(path), "empty", "", 0600, NULL);
	assert_int_equal(auth_load_key(c, path, key, name), -EINVAL);
	unlink(path);
	assert_int_equal(auth_load_key(c, "/nonexistent/maru.key", key, name), -ENOENT);
	assert_int_equal(auth_load_key(c, "/tmp", key, name), -EINVAL);	/* not a file */
	/* 64 KiB is the most; one byte more is refused */
	big = malloc(64 * 1024 + 2);
	assert_non_null(big);
	for (i = 0; i < 64 * 1024; i++)
		big[i] = (char)('a' + i % 26);
	big[64 * 1024] = '\0';
	write_key(path, sizeof(path), "big", big, 0600, want);
	assert_int_equal(auth_load_key(c, path, key, name), 0);
	assert_memory_equal(key, want, 32);
	unlink(path);
	big[64 * 1024] = 'z';
	big[64 * 1024 + 1] = '\0';
	write_key(path, sizeof(path), "big", big, 0600, NULL);
	assert_int_equal(auth_load_key(c, path, key, name), -EINVAL);
	unlink(path);
	free(big);
	free(c);
}

/* A key file in the key file format (keyfile.h) holds one key, maybe named. */
static void test_scoped_key_file(void **state)
{
	struct maru_client *c = calloc(1, sizeof(*c));
	const char *secret = "alice-secret-0123456789";
	uint8_t key[32], want[32];
	char path[64], name[64];

	(void)state;
	assert_non_null(c);
	c->opts.log_priority = LOG_INFO;
	crypto_generichash(want, 32, (const uint8_t *)secret, strlen(secret), NULL, 0);
	write_key(path, sizeof(path), "scoped", "marud-keys 1\n"
		  "key alice root=/alice rights=ro secret=alice-secret-0123456789\n",
		  0600, NULL);
	assert_int_equal(auth_load_key(c, path, key, name), 0);
	assert_string_equal(name, "alice");
	assert_memory_equal(key, want, 32);
	unlink(path);
	write_key(path, sizeof(path), "admin1", "marud-keys 1\n"
		  "admin secret=alice-secret-0123456789\n", 0600, NULL);
	assert_int_equal(auth_load_key(c, path, key, name), 0);
	assert_string_equal(name, "");
	assert_memory_equal(key, want, 32);
	unlink(path);
	/* two keys: the client would not know which to prove */
	write_key(path, sizeof(path), "two", "marud-keys 1\n"
		  "admin secret=alice-secret-0123456789\n"
		  "key bob root=/bob rights=rw secret=bob-secret-0123456789\n", 0600, NULL);
	assert_int_equal(auth_load_key(c, path, key, name), -EINVAL);
	unlink(path);
	/* a parse error: refused, not taken as a legacy secret */
	write_key(path, sizeof(path), "badfmt", "marud-keys 1\nkey x root=rel rights=rw "
		  "secret=alice-secret-0123456789\n", 0600, NULL);
	assert_int_equal(auth_load_key(c, path, key, name), -EINVAL);
	unlink(path);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_right_key),
		cmocka_unit_test(test_scoped_key_file),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_marud_refuses),
		cmocka_unit_test(test_no_key_at_keyed_marud),
		cmocka_unit_test(test_key_file_rules),
	};

	return cmocka_run_group_tests_name("auth", tests, setup, teardown);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/cluster/join_test.c: the membership record made from
 * marud's configuration (daemon/cluster/join.c). Real: join.c, the config
 * (config_defaults, config_set), a password file in /tmp. Faked:
 * member_start(), wrapped at link time (-Wl,--wrap) to keep what it was
 * handed and answer a chosen result: no etcd, no thread. Cases: the
 * record's fields and the etcd options; the URIs from the tcp:// and
 * rdma:// listens (unix skipped) or from cluster-advertise alone; a
 * wildcard, nothing to advertise, too many or too long URIs refused before
 * etcd is asked; the etcd password's first line; member_start's error.
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
#include <cmocka.h>

#include "conf.h"
#include "config_priv.h"
#include "join.h"
#include "member.h"

static const uint8_t uuid[16] = { 0x01, 0x23, 0xab, 0xcd, 0x00, 0x00, 0x40, 0x00,
				  0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0xff };

/* ---- member_start, faked ---- */

static struct {
	int calls, rc;
	struct member_info mi;
	struct etcd_opts eo;
	char endpoints[256], user[64], password[256];
	int has_user, has_password;
} ms;

int __wrap_member_start(const struct etcd_opts *eo, const struct member_info *mi,
			struct member **out);
int __wrap_member_start(const struct etcd_opts *eo, const struct member_info *mi,
			struct member **out)
{
	ms.calls++;
	ms.mi = *mi;
	ms.eo = *eo;
	/* the strings may live on cluster_join's stack: copied now */
	snprintf(ms.endpoints, sizeof(ms.endpoints), "%s", eo->endpoints);
	ms.has_user = eo->user != NULL;
	ms.has_password = eo->password != NULL;
	snprintf(ms.user, sizeof(ms.user), "%s", eo->user ? eo->user : "");
	snprintf(ms.password, sizeof(ms.password), "%s", eo->password ? eo->password : "");
	*out = ms.rc ? NULL : (struct member *)&ms;
	return ms.rc;
}

static void base(struct config *c)
{
	memset(&ms, 0, sizeof(ms));
	config_defaults(c);
	assert_int_equal(config_set(c, "cluster", "etcd://10.0.0.9:2379,10.0.0.8:2379/kv", 2), 0);
}

static int join(const struct config *c)
{
	struct member *m = NULL;
	int rc = cluster_join(c, uuid, 1ull << 30, 0xa5969dda4c565002ull, &m);

	if (rc)
		assert_null(m);
	else
		assert_ptr_equal(m, &ms);
	return rc;
}

/* Everything the record says comes from the config and the pool. */
static void test_record_fields(void **state)
{
	struct config c;

	(void)state;
	base(&c);
	assert_int_equal(config_set(&c, "listen", "unix:/tmp/j.sock", 2), 0);
	assert_int_equal(config_set(&c, "listen", "tcp://10.0.0.1:7450", 2), 0);
	assert_int_equal(config_set(&c, "listen", "rdma://10.1.0.1:7451", 2), 0);
	assert_int_equal(config_set(&c, "cluster-weight", "3", 2), 0);
	assert_int_equal(config_set(&c, "cluster-zone", "rack/1", 2), 0);
	assert_int_equal(config_set(&c, "cluster-ttl", "7", 2), 0);
	assert_int_equal(config_set(&c, "drain", "yes", 2), 0);
	assert_int_equal(join(&c), 0);
	assert_int_equal(ms.calls, 1);
	assert_string_equal(ms.mi.cluster, "kv");
	assert_string_equal(ms.mi.uuid, "0123abcd-0000-4000-8000-00000000feff");
	assert_int_equal(ms.mi.ntcp, 1);
	assert_string_equal(ms.mi.tcp[0], "tcp://10.0.0.1:7450");
	assert_int_equal(ms.mi.nrdma, 1);
	assert_string_equal(ms.mi.rdma[0], "rdma://10.1.0.1:7451");
	assert_int_equal(ms.mi.capacity, 1ull << 30);
	assert_int_equal(ms.mi.weight, 3);
	assert_string_equal(ms.mi.zone, "rack/1");
	assert_int_equal(ms.mi.generation, 0xa5969dda4c565002ull);
	assert_int_equal(ms.mi.draining, 1);
	assert_int_equal(ms.mi.ttl_s, 7);
	assert_string_equal(ms.endpoints, "10.0.0.9:2379,10.0.0.8:2379");
	assert_int_equal(ms.eo.timeout_ms, 2000);
	assert_false(ms.has_user);	/* no etcd authentication */
}

/* cluster-advertise: only those, the listens not even looked at. */
static void test_advertise(void **state)
{
	struct config c;

	(void)state;
	base(&c);
	assert_int_equal(config_set(&c, "listen", "tcp://0.0.0.0:7450", 2), 0);
	assert_int_equal(config_set(&c, "cluster-advertise", "tcp://192.0.2.1:7450", 2), 0);
	assert_int_equal(config_set(&c, "cluster-advertise", "tcp://192.0.2.2:7450", 2), 0);
	assert_int_equal(join(&c), 0);
	assert_int_equal(ms.mi.ntcp, 2);
	assert_string_equal(ms.mi.tcp[0], "tcp://192.0.2.1:7450");
	assert_string_equal(ms.mi.tcp[1], "tcp://192.0.2.2:7450");
	assert_int_equal(ms.mi.nrdma, 0);
}

/* Refused before etcd is asked. */
static void test_refusals(void **state)
{
	static const char *const wild[] = { "tcp://0.0.0.0:7450", "tcp://[::]:7450",
					    "rdma://0.0.0.0:7451", "tcp://*:7450" };
	char uri[300];
	struct config c;
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
		base(&c);
		snprintf(c.listen[0], sizeof(c.listen[0]), "%s", wild[i]);
		c.nlisten = 1;
		assert_int_equal(join(&c), -EINVAL);
		assert_int_equal(ms.calls, 0);
	}
	/* only a unix socket: nothing a client elsewhere can reach */
	base(&c);
	snprintf(c.listen[0], sizeof(c.listen[0]), "unix:/tmp/j.sock");
	c.nlisten = 1;
	assert_int_equal(join(&c), -EINVAL);
	/* more tcp listens than a record holds */
	base(&c);
	for (i = 0; i <= MEMBER_MAX_URIS; i++)
		snprintf(c.listen[i], sizeof(c.listen[i]), "tcp://10.0.0.1:%u", 7000 + i);
	c.nlisten = MEMBER_MAX_URIS + 1;
	assert_int_equal(join(&c), -E2BIG);
	c.nlisten = MEMBER_MAX_URIS;
	assert_int_equal(join(&c), 0);
	assert_int_equal(ms.mi.ntcp, MEMBER_MAX_URIS);
	/* a URI longer than a record's field */
	base(&c);
	memset(uri, 'h', sizeof(uri));
	memcpy(uri, "tcp://", 6);
	snprintf(uri + 280, sizeof(uri) - 280, ":7450");
	snprintf(c.listen[0], sizeof(c.listen[0]), "%s", uri);
	c.nlisten = 1;
	assert_int_equal(join(&c), -E2BIG);
	assert_int_equal(ms.calls, 0);
}

/* The etcd user's password: the file's first line, without its end. */
static void test_password(void **state)
{
	char path[] = "/tmp/join-pw-XXXXXX";
	struct config c;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("s3cret\r\nsecond line\n", f);
	fclose(f);
	base(&c);
	assert_int_equal(config_set(&c, "listen", "tcp://10.0.0.1:7450", 2), 0);
	snprintf(c.cluster_etcd_user, sizeof(c.cluster_etcd_user), "marud");
	snprintf(c.cluster_etcd_password_file, sizeof(c.cluster_etcd_password_file), "%s", path);
	assert_int_equal(join(&c), 0);
	assert_string_equal(ms.user, "marud");
	assert_string_equal(ms.password, "s3cret");
	/* a user with no password file: an empty password */
	c.cluster_etcd_password_file[0] = '\0';
	assert_int_equal(join(&c), 0);
	assert_true(ms.has_password);
	assert_string_equal(ms.password, "");
	/* a password file that cannot be read: marud does not start */
	unlink(path);
	snprintf(c.cluster_etcd_password_file, sizeof(c.cluster_etcd_password_file), "%s", path);
	ms.calls = 0;
	assert_int_equal(join(&c), -ENOENT);
	assert_int_equal(ms.calls, 0);
}

/* member_start's failure is cluster_join's. */
static void test_start_fails(void **state)
{
	struct config c;

	(void)state;
	base(&c);
	assert_int_equal(config_set(&c, "listen", "tcp://10.0.0.1:7450", 2), 0);
	ms.rc = -ENOMEM;
	assert_int_equal(join(&c), -ENOMEM);
	assert_int_equal(ms.calls, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_fields),
		cmocka_unit_test(test_advertise),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_password),
		cmocka_unit_test(test_start_fails),
	};

	return cmocka_run_group_tests_name("cluster_join", tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/cluster/member_test.c: what marud puts in etcd and the
 * keys that say where: the cluster keys of the config (etcd://HOST:PORT
 * [,...]/NAME and its neighbours, bad values refused and the old value
 * kept), the record's key and JSON (parsed back with json-c), and
 * cluster_join() refusing to advertise a wildcard listen address. The
 * etcd side runs against a real etcd cluster in tests/cluster/.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "conf.h"
#include "config_priv.h"
#include "join.h"
#include "member.h"

static void test_cluster_keys(void **state)
{
	struct config c;

	config_defaults(&c);
	assert_int_equal(c.cluster_ttl_s, 10);
	assert_int_equal(c.cluster_weight, 1);
	assert_string_equal(c.cluster_etcd, "");
	assert_int_equal(config_set(&c, "cluster", "etcd://10.0.0.1:2379,10.0.0.2:2379/kv-a", 2), 0);
	assert_string_equal(c.cluster_etcd, "10.0.0.1:2379,10.0.0.2:2379");
	assert_string_equal(c.cluster_name, "kv-a");
	/* refused, and what was there stays */
	assert_int_equal(config_set(&c, "cluster", "http://10.0.0.1:2379/x", 2), -EINVAL);
	assert_int_equal(config_set(&c, "cluster", "etcd://10.0.0.1:2379/", 2), -EINVAL);
	assert_int_equal(config_set(&c, "cluster", "etcd:///name", 2), -EINVAL);
	assert_int_equal(config_set(&c, "cluster", "etcd://h:1/a/b", 2), -EINVAL);
	assert_int_equal(config_set(&c, "cluster", "etcd://h;rm:1/a", 2), -EINVAL);
	assert_string_equal(c.cluster_name, "kv-a");
	assert_int_equal(config_set(&c, "cluster", "", 2), 0);
	assert_string_equal(c.cluster_etcd, "");
	assert_int_equal(config_set(&c, "cluster-ttl", "1", 2), -ERANGE);
	assert_int_equal(config_set(&c, "cluster_ttl", "5", 2), 0);
	assert_int_equal(c.cluster_ttl_s, 5);
	assert_int_equal(config_set(&c, "cluster-weight", "0", 2), -ERANGE);
	assert_int_equal(config_set(&c, "cluster-advertise", "unix:/x", 2), -EINVAL);
	assert_int_equal(config_set(&c, "cluster-advertise", "tcp://10.0.0.9:7450", 2), 0);
	assert_int_equal(c.ncluster_advertise, 1);
	assert_int_equal(config_set(&c, "drain", "yes", 2), 0);
	assert_int_equal(c.drain, 1);
}

static void test_record(void **state)
{
	struct member_info mi;
	json_object *o, *v;
	char key[256], *rec;

	memset(&mi, 0, sizeof(mi));
	strcpy(mi.cluster, "kv-a");
	strcpy(mi.uuid, "0123abcd-0000-4000-8000-000000000001");
	strcpy(mi.tcp[0], "tcp://10.0.0.1:7450");
	mi.ntcp = 1;
	mi.capacity = 1ull << 34;
	mi.weight = 3;
	strcpy(mi.zone, "rack/1");
	mi.generation = 0xa5969dda4c565002ull;
	assert_int_equal(member_key(&mi, key, sizeof(key)), 0);
	assert_string_equal(key, "/marufs/kv-a/pools/0123abcd-0000-4000-8000-000000000001");
	assert_int_equal(member_key(&mi, key, 20), -ENAMETOOLONG);

	rec = member_record(&mi, 1);
	assert_non_null(rec);
	assert_null(strstr(rec, "\\/"));	/* URIs readable as written */
	o = json_tokener_parse(rec);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "state", &v));
	assert_string_equal(json_object_get_string(v), "draining");
	assert_true(json_object_object_get_ex(o, "capacity", &v));
	assert_true(json_object_get_int64(v) == (int64_t)(1ull << 34));
	assert_true(json_object_object_get_ex(o, "tcp", &v));
	assert_int_equal(json_object_array_length(v), 1);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
			    "tcp://10.0.0.1:7450");
	assert_true(json_object_object_get_ex(o, "rdma", &v));
	assert_int_equal(json_object_array_length(v), 0);
	assert_true(json_object_object_get_ex(o, "weight", &v));
	assert_int_equal(json_object_get_int(v), 3);
	assert_true(json_object_object_get_ex(o, "zone", &v));
	assert_string_equal(json_object_get_string(v), "rack/1");
	assert_true(json_object_object_get_ex(o, "generation", &v));
	assert_string_equal(json_object_get_string(v), "a5969dda4c565002");
	json_object_put(o);
	free(rec);
	rec = member_record(&mi, 0);
	assert_non_null(strstr(rec, "\"state\":\"active\""));
	free(rec);
}

/* a wildcard listen address tells a client nothing: marud does not start */
static void test_join_wildcard(void **state)
{
	struct config c;
	struct member *m = NULL;
	uint8_t uuid[16] = { 1 };

	config_defaults(&c);
	assert_int_equal(config_set(&c, "cluster", "etcd://127.0.0.1:1/kv", 2), 0);
	assert_int_equal(config_set(&c, "listen", "tcp://0.0.0.0:7450", 2), 0);
	assert_int_equal(cluster_join(&c, uuid, 1 << 20, 1, &m), -EINVAL);
	assert_null(m);
	/* a unix socket only: nothing to advertise either */
	assert_int_equal(config_set(&c, "listen", "unix:/tmp/x.sock", 2), 0);
	assert_int_equal(cluster_join(&c, uuid, 1 << 20, 1, &m), -EINVAL);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster_keys),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_join_wildcard),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

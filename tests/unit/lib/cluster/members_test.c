/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/members_test.c: lib/cluster/members.c, libmaru's
 * view of a cluster (maru_cluster_*). Open refuses a malformed
 * maru+etcd:// URI and fails when etcd cannot be read; the records under
 * /marufs/NAME/pools/ become pools in UUID order (uri from the first tcp
 * address, weight 1 unless said, draining, zone, since), records that are
 * not a pool's (malformed JSON, no tcp address, another cluster's) are
 * left out; the thread reads the membership again each refresh_ms; when
 * etcd cannot be read (gone, malformed answer) the last membership holds
 * (said once on stderr, and again when it is readable), and the next
 * readable one replaces it. Owners: the same membership gives
 * the same owner to every client, a draining pool owns no name but is
 * still where names were (previous), a pool that joined less than
 * settle_s ago is not where names were, pools that formed the cluster
 * together are never new, unless the client saw one come back after it
 * was gone (names were placed without it meanwhile); no active pool is
 * -ENOENT.
 * Real: libcurl, json-c, loopback TCP, the placement of place.c.
 * Emulated: etcd, by the small gateway of fake_etcd.c in the test process.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "maru/libmaru.h"
#include "clock.h"
#include "fake_etcd.h"

#define PFX	"/marufs/kv/pools/"

static void sleep_ms_(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A record as marud writes it (daemon/cluster/member.c). */
static void put_pool(struct fake_etcd *f, const char *uuid, const char *host, uint64_t cap,
		     int weight, const char *state, int64_t since)
{
	char key[128], val[512];

	snprintf(key, sizeof(key), PFX "%s", uuid);
	snprintf(val, sizeof(val), "{\"uuid\":\"%s\",\"name\":\"kv\",\"tcp\":[\"tcp://%s\","
		 "\"tcp://10.9.9.9:1\"],\"rdma\":[],\"capacity\":%llu,\"weight\":%d,"
		 "\"zone\":\"z-%s\",\"state\":\"%s\",\"generation\":\"0000000000000001\","
		 "\"since\":%lld}", uuid, host, (unsigned long long)cap, weight, uuid, state,
		 (long long)since);
	fe_put(f, key, val, 0);
}

static struct maru_cluster *open_on(struct fake_etcd *f, unsigned int refresh_ms,
				    unsigned int settle_s)
{
	struct maru_cluster_opts o;
	struct maru_cluster *c = NULL;
	char uri[128], ep[64];

	fe_endpoint(f, ep, sizeof(ep));
	snprintf(uri, sizeof(uri), "maru+etcd://%s/kv", ep);
	maru_cluster_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.refresh_ms = refresh_ms;
	o.timeout_ms = 500;
	o.settle_s = settle_s;
	assert_int_equal(maru_cluster_open(&o, &c), 0);
	return c;
}

/* Wait until the view has n pools (or 3 s pass); the count. */
static int wait_pools(struct maru_cluster *c, int n)
{
	uint64_t t0 = mono_ms();
	int k;

	while ((k = maru_cluster_pools(c, NULL, 0)) != n && mono_ms() - t0 < 3000)
		sleep_ms_(10);
	return k;
}

static void test_open_refused(void **state)
{
	struct maru_cluster_opts o;
	struct maru_cluster *c = NULL;
	static const char *bad[] = {
		NULL, "", "maru://127.0.0.1:1/kv", "maru+etcd://127.0.0.1:1", "maru+etcd://127.0.0.1:1/",
		"maru+etcd:///kv", "maru+etcd://127.0.0.1:1/a/b", "maru+etcd://127.0.0.1:1/k v",
		"maru+etcd://127.0.0.1:1/k;rm",
	};
	size_t i;

	(void)state;
	maru_cluster_opts_init(&o, sizeof(o));
	assert_int_equal(o.refresh_ms, 1000);
	assert_int_equal(o.timeout_ms, 2000);
	assert_int_equal(o.settle_s, 600);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.uri = bad[i];
		assert_int_equal(maru_cluster_open(&o, &c), -EINVAL);
	}
	assert_int_equal(maru_cluster_open(NULL, &c), -EINVAL);
	o.uri = "maru+etcd://127.0.0.1:1/kv";
	assert_int_equal(maru_cluster_open(&o, NULL), -EINVAL);
	o.opts_size = 1;
	assert_int_equal(maru_cluster_open(&o, &c), -EINVAL);
	assert_null(c);
	maru_cluster_close(NULL);
}

/* Nobody at the endpoint: open says etcd cannot be read. */
static void test_open_unreachable(void **state)
{
	struct maru_cluster_opts o;
	struct maru_cluster *c = NULL;
	struct fake_etcd f;
	char uri[128], ep[64];

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	fe_stop(&f);	/* the port is free again: nobody listens */
	snprintf(uri, sizeof(uri), "maru+etcd://%s/kv", ep);
	maru_cluster_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.timeout_ms = 300;
	assert_int_equal(maru_cluster_open(&o, &c), -EHOSTUNREACH);
	assert_null(c);
}

static void test_records(void **state)
{
	struct maru_cluster_pool p[8];
	struct maru_cluster *c;
	struct fake_etcd f;

	(void)state;
	fe_start(&f);
	put_pool(&f, "c3", "h3:7450", 3ull << 30, 1, "active", 100);
	put_pool(&f, "a1", "h1:7450", 1ull << 30, 2, "active", 100);
	put_pool(&f, "b2", "h2:7450", 2ull << 30, 1, "draining", 100);
	/* not a pool's: left out */
	fe_put(&f, PFX "bad-json", "{\"uuid\": \"x\", ", 0);
	fe_put(&f, PFX "no-tcp", "{\"uuid\":\"n1\",\"tcp\":[]}", 0);
	fe_put(&f, PFX "unix", "{\"uuid\":\"u1\",\"tcp\":[\"unix:/run/m\"]}", 0);
	fe_put(&f, PFX "empty", "", 0);
	fe_put(&f, "/marufs/other/pools/z9", "{\"uuid\":\"z9\",\"tcp\":[\"tcp://o:1\"]}", 0);
	/* a record with only what it must have: weight 1, no zone */
	fe_put(&f, PFX "d4", "{\"uuid\":\"d4\",\"tcp\":[\"tcp://h4:1\"]}", 0);
	c = open_on(&f, 1000, 600);
	assert_int_equal(maru_cluster_pools(c, NULL, 0), 4);
	assert_int_equal(maru_cluster_pools(c, p, 8), 4);
	assert_string_equal(p[0].uuid, "a1");
	assert_string_equal(p[1].uuid, "b2");
	assert_string_equal(p[2].uuid, "c3");
	assert_string_equal(p[3].uuid, "d4");
	assert_int_equal(p[0].pool_size, sizeof(p[0]));
	assert_string_equal(p[0].uri, "maru://h1:7450");
	assert_int_equal(p[0].capacity, 1ull << 30);
	assert_int_equal(p[0].weight, 2);
	assert_string_equal(p[0].zone, "z-a1");
	assert_int_equal(p[0].since, 100);
	assert_int_equal(p[0].draining, 0);
	assert_int_equal(p[1].draining, 1);
	assert_int_equal(p[3].weight, 1);
	assert_string_equal(p[3].zone, "");
	assert_int_equal(p[3].capacity, 0);
	/* fewer asked for: fewer copied, the count all the same */
	memset(p, 0, sizeof(p));
	assert_int_equal(maru_cluster_pools(c, p, 1), 4);
	assert_string_equal(p[0].uuid, "a1");
	assert_string_equal(p[1].uuid, "");
	maru_cluster_close(c);
	fe_stop(&f);
}

/* stderr into a fresh file at path; the descriptor to put back. */
static int stderr_to(const char *path)
{
	int saved = dup(2), fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);

	assert_true(saved >= 0 && fd >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
	return saved;
}

/* stderr back as it was. */
static void stderr_back(int saved)
{
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
}

/* Lines of the file at path that hold needle. */
static int lines_with(const char *path, const char *needle)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* The thread reads again; etcd unreachable: the last membership holds. */
static void test_refresh_and_outage(void **state)
{
	struct maru_cluster_pool p[4];
	struct maru_cluster *c;
	struct fake_etcd f;
	unsigned int n;
	char log[64];
	int saved;

	(void)state;
	fe_start(&f);
	snprintf(log, sizeof(log), "/tmp/maru-members-test.%d", (int)getpid());
	saved = stderr_to(log);
	put_pool(&f, "a1", "h1:1", 1ull << 30, 1, "active", 100);
	c = open_on(&f, 50, 600);
	assert_int_equal(maru_cluster_pools(c, NULL, 0), 1);
	put_pool(&f, "b2", "h2:1", 1ull << 30, 1, "active", 100);
	assert_int_equal(wait_pools(c, 2), 2);
	/* etcd closes on every call: the view stays */
	fe_set(&f, &f.close_early, 1);
	n = fe_requests(&f);
	while (fe_requests(&f) < n + 3)
		sleep_ms_(10);
	assert_int_equal(maru_cluster_pools(c, NULL, 0), 2);
	/* a malformed answer: the same */
	fe_set(&f, &f.close_early, 0);
	pthread_mutex_lock(&f.mu);
	f.raw = "{\"kvs\":";
	pthread_mutex_unlock(&f.mu);
	n = fe_requests(&f);
	while (fe_requests(&f) < n + 3)
		sleep_ms_(10);
	assert_int_equal(maru_cluster_pools(c, NULL, 0), 2);
	/* readable again: the new membership replaces it */
	fe_del(&f, PFX "a1");
	pthread_mutex_lock(&f.mu);
	f.raw = NULL;
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(wait_pools(c, 1), 1);
	assert_int_equal(maru_cluster_pools(c, p, 4), 1);
	assert_string_equal(p[0].uuid, "b2");
	/* no pool at all is a membership too */
	fe_del(&f, PFX "b2");
	assert_int_equal(wait_pools(c, 0), 0);
	assert_int_equal(maru_cluster_owner(c, "/a/b", NULL, NULL), -ENOENT);
	maru_cluster_close(c);
	fe_stop(&f);
	/* the outage said once (not per refresh), and its end */
	stderr_back(saved);
	assert_int_equal(lines_with(log, "cannot read the membership"), 1);
	assert_int_equal(lines_with(log, "keeping the last one"), 1);
	assert_int_equal(lines_with(log, "membership readable again"), 1);
	unlink(log);
}

static const char *paths[] = { "/a/x", "/a/y", "/b/x", "/model/layer-0/kv-17", "/z",
			       "/a/b/c/d", "/q/1", "/q/2", "/q/3", "/q/4", "/q/5", "/q/6" };
#define NPATHS	(sizeof(paths) / sizeof(paths[0]))

/* Two clients of one membership: the same owner of every path. */
static void test_same_owner(void **state)
{
	struct maru_cluster_pool o1, o2, prev;
	struct maru_cluster *c1, *c2;
	struct fake_etcd f;
	size_t i;

	(void)state;
	fe_start(&f);
	put_pool(&f, "a1", "h1:1", 1ull << 30, 1, "active", 100);
	put_pool(&f, "b2", "h2:1", 1ull << 30, 1, "active", 110);
	put_pool(&f, "c3", "h3:1", 1ull << 30, 1, "active", 120);
	c1 = open_on(&f, 1000, 600);
	c2 = open_on(&f, 1000, 600);
	for (i = 0; i < NPATHS; i++) {
		assert_int_equal(maru_cluster_owner(c1, paths[i], &o1, &prev), 0);
		assert_int_equal(maru_cluster_owner(c2, paths[i], &o2, NULL), 0);
		assert_string_equal(o1.uuid, o2.uuid);
		/* they formed the cluster together: nothing moved */
		assert_string_equal(prev.uuid, o1.uuid);
	}
	/* slashes around the path do not change it */
	assert_int_equal(maru_cluster_owner(c1, "a/x/", &o2, NULL), 0);
	assert_int_equal(maru_cluster_owner(c1, "/a/x", &o1, NULL), 0);
	assert_string_equal(o1.uuid, o2.uuid);
	maru_cluster_close(c1);
	maru_cluster_close(c2);
	fe_stop(&f);
}

/* A draining pool owns nothing new; names it had are still found there. */
static void test_draining(void **state)
{
	struct maru_cluster_pool o, prev;
	struct maru_cluster *c;
	struct fake_etcd f;
	size_t i, moved = 0;

	(void)state;
	fe_start(&f);
	put_pool(&f, "a1", "h1:1", 1ull << 30, 1, "active", 100);
	put_pool(&f, "b2", "h2:1", 1ull << 30, 1, "draining", 100);
	c = open_on(&f, 1000, 600);
	for (i = 0; i < NPATHS; i++) {
		assert_int_equal(maru_cluster_owner(c, paths[i], &o, &prev), 0);
		assert_string_equal(o.uuid, "a1");
		moved += !strcmp(prev.uuid, "b2");
	}
	/* about half were b2's: some must be */
	assert_true(moved > 0);
	maru_cluster_close(c);
	/* every pool draining: no owner */
	put_pool(&f, "a1", "h1:1", 1ull << 30, 1, "draining", 100);
	c = open_on(&f, 1000, 600);
	assert_int_equal(maru_cluster_owner(c, "/a/x", &o, &prev), -ENOENT);
	maru_cluster_close(c);
	fe_stop(&f);
}

/* A pool that joined lately is not where names were, until settle_s. */
static void test_new_pool(void **state)
{
	struct maru_cluster_pool o, prev;
	struct maru_cluster *c;
	struct fake_etcd f;
	int64_t now = (int64_t)time(NULL);
	size_t i, owned = 0;

	(void)state;
	fe_start(&f);
	put_pool(&f, "a1", "h1:1", 1ull << 30, 1, "active", now - 5000);
	put_pool(&f, "b2", "h2:1", 1ull << 30, 1, "active", now - 10);
	c = open_on(&f, 1000, 600);
	for (i = 0; i < NPATHS; i++) {
		assert_int_equal(maru_cluster_owner(c, paths[i], &o, &prev), 0);
		assert_string_equal(prev.uuid, "a1");
		owned += !strcmp(o.uuid, "b2");
	}
	assert_true(owned > 0);
	maru_cluster_close(c);
	/* settled (settle_s 5 < 10 s ago): previous is the owner */
	c = open_on(&f, 1000, 5);
	for (i = 0; i < NPATHS; i++) {
		assert_int_equal(maru_cluster_owner(c, paths[i], &o, &prev), 0);
		assert_string_equal(prev.uuid, o.uuid);
	}
	maru_cluster_close(c);
	fe_stop(&f);
}

/*
 * A founder that left and came back (a marud killed and restarted within
 * FORM_S of the first): names placed while it was away are looked for
 * where they went, by the client that saw it gone; one opened after it
 * came back cannot tell (its record says founder).
 */
static void test_founder_back(void **state)
{
	struct maru_cluster_pool o, prev;
	struct maru_cluster *c, *late;
	struct fake_etcd f;
	size_t i, owned = 0;

	(void)state;
	fe_start(&f);
	put_pool(&f, "a1", "h1:1", 1ull << 30, 1, "active", 100);
	put_pool(&f, "b2", "h2:1", 1ull << 30, 1, "active", 110);
	c = open_on(&f, 20, 600);
	fe_del(&f, PFX "b2");
	assert_int_equal(wait_pools(c, 1), 1);
	put_pool(&f, "b2", "h2:1", 1ull << 30, 1, "active", 115);
	assert_int_equal(wait_pools(c, 2), 2);
	late = open_on(&f, 1000, 600);
	for (i = 0; i < NPATHS; i++) {
		assert_int_equal(maru_cluster_owner(c, paths[i], &o, &prev), 0);
		assert_string_equal(prev.uuid, "a1");
		owned += !strcmp(o.uuid, "b2");
		assert_int_equal(maru_cluster_owner(late, paths[i], &o, &prev), 0);
		assert_string_equal(prev.uuid, o.uuid);
	}
	assert_true(owned > 0);
	maru_cluster_close(c);
	maru_cluster_close(late);
	fe_stop(&f);
}

/* Weight: a pool of twice the weight x capacity owns about twice as much. */
static void test_weight(void **state)
{
	struct maru_cluster_pool o;
	struct maru_cluster *c;
	struct fake_etcd f;
	char path[32];
	int i, heavy = 0;

	(void)state;
	fe_start(&f);
	put_pool(&f, "a1", "h1:1", 1ull << 30, 3, "active", 100);
	put_pool(&f, "b2", "h2:1", 3ull << 30, 1, "active", 100);
	put_pool(&f, "c3", "h3:1", 1ull << 30, 1, "active", 100);
	c = open_on(&f, 1000, 600);
	for (i = 0; i < 2000; i++) {
		snprintf(path, sizeof(path), "/w/%d", i);
		assert_int_equal(maru_cluster_owner(c, path, &o, NULL), 0);
		heavy += strcmp(o.uuid, "c3") != 0;
	}
	/* a1 and b2 weigh 3 each, c3 1: 6/7 of the names (1714) */
	assert_true(heavy > 1550 && heavy < 1850);
	maru_cluster_close(c);
	fe_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_refused),
		cmocka_unit_test(test_open_unreachable),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_refresh_and_outage),
		cmocka_unit_test(test_same_owner),
		cmocka_unit_test(test_draining),
		cmocka_unit_test(test_new_pool),
		cmocka_unit_test(test_founder_back),
		cmocka_unit_test(test_weight),
	};

	return cmocka_run_group_tests_name("cluster/members", tests, NULL, NULL);
}

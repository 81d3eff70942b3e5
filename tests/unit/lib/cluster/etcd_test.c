/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/etcd_test.c: lib/cluster/etcd.c, the etcd v3
 * calls over the JSON gateway. Endpoints are "host:port" lists of 1 to 8;
 * put and get round-trip a key (base64 on the wire, an empty value left
 * out by the gateway is ""), a missing key is -ENOENT; a list is every key
 * under the prefix in key order with the store's revision (range_end the
 * prefix with its last byte one higher); leases are granted, kept alive
 * and revoked, a gone one is -ENOENT. A call tries the endpoint that
 * answered last, then the others: nobody answering is -EHOSTUNREACH, a
 * member without a leader or answering too late is -EAGAIN, a refusal is
 * -ENOENT / -EACCES / -EIO by its gRPC code, an HTTP 4xx outside JSON is
 * -EACCES, malformed JSON or an oversized reply is no answer; etcd_error
 * says what was met, "" after a success; the stop flag ends a call with
 * -ECANCELED; with a user it authenticates once, sends the token, and
 * authenticates again once when the token expired; with a CA file it
 * speaks https, checks etcd's certificate and gives its own when asked.
 * Real: libcurl, json-c, loopback TCP, TLS (lib/common/tls.c on the
 * server side, certificates of ../certs.c). Emulated: etcd, by a small gateway
 * in the test process (fake_etcd.c), not Debian's etcd binary: it can
 * misbehave on demand, and starts in no time.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cmocka.h>

#include "../certs.h"
#include "clock.h"
#include "etcd.h"
#include "fake_etcd.h"
#include "tls.h"

/* A loopback port nobody listens on (bound, then closed). */
static void dead_endpoint(char *buf, size_t cap)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	snprintf(buf, cap, "127.0.0.1:%u", (unsigned int)ntohs(a.sin_port));
}

static struct etcd *client(const char *endpoints, unsigned int timeout_ms)
{
	struct etcd_opts o = { .endpoints = endpoints, .timeout_ms = timeout_ms };
	struct etcd *e = NULL;

	assert_int_equal(etcd_new(&o, &e), 0);
	return e;
}

static void test_endpoints(void **state)
{
	struct etcd_opts o = { 0 };
	struct etcd *e = NULL;

	(void)state;
	assert_int_equal(etcd_new(&o, &e), -EINVAL);
	o.endpoints = "";
	assert_int_equal(etcd_new(&o, &e), -EINVAL);
	o.endpoints = "a:1,,b:2";
	assert_int_equal(etcd_new(&o, &e), -EINVAL);
	o.endpoints = ",a:1";
	assert_int_equal(etcd_new(&o, &e), -EINVAL);
	o.endpoints = "a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9";
	assert_int_equal(etcd_new(&o, &e), -EINVAL);
	assert_null(e);
	o.endpoints = "a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8";
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_string_equal(etcd_error(e), "");
	etcd_free(e);
	etcd_free(NULL);
}

static void test_put_get(void **state)
{
	struct fake_etcd f;
	char ep[64], *v = NULL;
	struct etcd *e;
	int64_t lease = -1;

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	e = client(ep, 2000);
	assert_int_equal(etcd_put(e, "/marufs/a/pools/x", "{\"uuid\":\"x\",\"n\":[1,2]}", 0), 0);
	assert_string_equal(f.key[0], "/marufs/a/pools/x");
	assert_string_equal(f.val[0], "{\"uuid\":\"x\",\"n\":[1,2]}");
	assert_int_equal(etcd_get(e, "/marufs/a/pools/x", &v, &lease), 0);
	assert_string_equal(v, "{\"uuid\":\"x\",\"n\":[1,2]}");
	assert_int_equal(lease, 0);
	free(v);
	/* a key under a lease says which */
	assert_int_equal(etcd_put(e, "k", "v", 7001), 0);
	assert_int_equal(etcd_get(e, "k", &v, &lease), 0);
	assert_int_equal(lease, 7001);
	free(v);
	assert_int_equal(etcd_get(e, "k", &v, NULL), 0);
	free(v);
	/* an empty value is left out of the reply: "" */
	assert_int_equal(etcd_put(e, "empty", "", 0), 0);
	assert_int_equal(etcd_get(e, "empty", &v, NULL), 0);
	assert_string_equal(v, "");
	free(v);
	assert_int_equal(etcd_get(e, "missing", &v, NULL), -ENOENT);
	assert_string_equal(etcd_error(e), "");
	assert_string_equal(f.last_path, "/v3/kv/range");
	etcd_free(e);
	fe_stop(&f);
}

static void test_list(void **state)
{
	struct fake_etcd f;
	struct etcd_kv *kvs;
	struct etcd *e;
	int64_t rev = 0;
	char ep[64];
	size_t n;

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	fe_put(&f, "/p/b", "2", 9);
	fe_put(&f, "/p/a", "1", 0);
	fe_put(&f, "/p/c", "", 0);
	fe_put(&f, "/p0", "no", 0);		/* '0' = '/' + 1: not under /p/ */
	fe_put(&f, "/o/a", "no", 0);
	e = client(ep, 2000);
	assert_int_equal(etcd_list(e, "/p/", &kvs, &n, &rev), 0);
	assert_string_equal(f.last_range_end, "/p0");
	assert_int_equal(rev, f.revision);
	assert_int_equal(n, 3);
	assert_string_equal(kvs[0].key, "/p/a");
	assert_string_equal(kvs[0].value, "1");
	assert_int_equal(kvs[0].lease, 0);
	assert_string_equal(kvs[1].key, "/p/b");
	assert_int_equal(kvs[1].lease, 9);
	assert_string_equal(kvs[2].value, "");
	etcd_kvs_free(kvs, n);
	/* nothing there: none, no array */
	assert_int_equal(etcd_list(e, "/q/", &kvs, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_null(kvs);
	/* no prefix, or one whose last byte cannot grow */
	assert_int_equal(etcd_list(e, "", &kvs, &n, NULL), -EINVAL);
	assert_int_equal(etcd_list(e, "/p\xff", &kvs, &n, NULL), -EINVAL);
	etcd_kvs_free(NULL, 0);
	etcd_free(e);
	fe_stop(&f);
}

static void test_leases(void **state)
{
	struct fake_etcd f;
	struct etcd *e;
	int64_t id = 0, ttl = 0;
	char ep[64];

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	e = client(ep, 2000);
	assert_int_equal(etcd_lease_grant(e, 10, &id), 0);
	assert_int_equal(id, 7001);
	assert_int_equal(etcd_lease_keepalive(e, id, &ttl), 0);
	assert_int_equal(ttl, 10);
	assert_int_equal(etcd_lease_revoke(e, id), 0);
	/* gone: keepalive says so, a second revoke is etcd's NotFound */
	assert_int_equal(etcd_lease_keepalive(e, id, &ttl), -ENOENT);
	assert_int_equal(ttl, 0);
	assert_non_null(strstr(etcd_error(e), "expired"));
	assert_int_equal(etcd_lease_revoke(e, id), -ENOENT);
	assert_non_null(strstr(etcd_error(e), "lease not found"));
	/* a grant answered without an id is no lease */
	fe_set(&f, &f.no_lease_id, 1);
	assert_int_equal(etcd_lease_grant(e, 10, &id), -EIO);
	assert_non_null(strstr(etcd_error(e), "without a lease id"));
	etcd_free(e);
	fe_stop(&f);
}

/* The endpoint that answered last is asked first; the others in turn. */
static void test_failover(void **state)
{
	struct fake_etcd a, b;
	char eps[200], ea[64], eb[64], dead[64];
	struct etcd *e;

	(void)state;
	fe_start(&a);
	fe_start(&b);
	fe_endpoint(&a, ea, sizeof(ea));
	fe_endpoint(&b, eb, sizeof(eb));
	dead_endpoint(dead, sizeof(dead));
	snprintf(eps, sizeof(eps), "%s,%s,%s", dead, ea, eb);
	e = client(eps, 1000);
	/* the first is dead: the second answers */
	assert_int_equal(etcd_put(e, "k", "1", 0), 0);
	assert_int_equal(fe_requests(&a), 1);
	assert_string_equal(etcd_error(e), "");
	/* a has no leader: b answers, and is asked first from now on */
	fe_set(&a, &a.code, 14);
	assert_int_equal(etcd_put(e, "k", "2", 0), 0);
	assert_int_equal(fe_requests(&a), 2);
	assert_int_equal(fe_requests(&b), 1);
	fe_set(&a, &a.code, 0);
	assert_int_equal(etcd_put(e, "k", "3", 0), 0);
	assert_int_equal(fe_requests(&a), 2);
	assert_int_equal(fe_requests(&b), 2);
	assert_string_equal(b.val[0], "3");
	etcd_free(e);
	fe_stop(&a);
	fe_stop(&b);
}

static void test_nobody_answers(void **state)
{
	char eps[200], d1[64], d2[64];
	struct etcd *e;
	char *v;

	(void)state;
	dead_endpoint(d1, sizeof(d1));
	dead_endpoint(d2, sizeof(d2));
	snprintf(eps, sizeof(eps), "%s,%s", d1, d2);
	e = client(eps, 500);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EHOSTUNREACH);
	assert_non_null(strstr(etcd_error(e), "127.0.0.1:"));
	etcd_free(e);
}

/* No leader anywhere, or connected and no answer in time: -EAGAIN. */
static void test_busy(void **state)
{
	struct fake_etcd f;
	struct etcd *e;
	uint64_t t0, ms;
	char ep[64], *v;

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	e = client(ep, 300);
	fe_set(&f, &f.code, 14);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EAGAIN);
	assert_non_null(strstr(etcd_error(e), "no leader"));
	fe_set(&f, &f.code, 4);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EAGAIN);
	fe_set(&f, &f.code, 0);
	fe_set(&f, &f.delay_ms, 2500);
	t0 = mono_ms();
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EAGAIN);
	ms = mono_ms() - t0;
	assert_true(ms >= 250 && ms < 2000);
	assert_non_null(strstr(etcd_error(e), "connected, no answer in time"));
	etcd_free(e);
	fe_stop(&f);
}

static void test_refusals(void **state)
{
	struct fake_etcd f;
	struct etcd *e;
	char ep[64], *v;

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	e = client(ep, 1000);
	fe_set(&f, &f.code, 7);
	assert_int_equal(etcd_put(e, "k", "v", 0), -EACCES);
	assert_non_null(strstr(etcd_error(e), "refused"));
	fe_set(&f, &f.code, 5);
	assert_int_equal(etcd_put(e, "k", "v", 0), -ENOENT);
	fe_set(&f, &f.code, 3);
	assert_int_equal(etcd_put(e, "k", "v", 0), -EIO);
	fe_set(&f, &f.code, 0);
	/* outside JSON: a 4xx is a refusal, one line of it kept */
	pthread_mutex_lock(&f.mu);
	f.raw = "client certificate has a CommonName\nsecond line";
	f.http_status = 403;
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EACCES);
	assert_non_null(strstr(etcd_error(e), "HTTP 403: client certificate has a CommonName"));
	assert_null(strstr(etcd_error(e), "second line"));
	/* malformed JSON with 200 (or a 5xx): no answer */
	pthread_mutex_lock(&f.mu);
	f.raw = "{\"kvs\": [ {\"key\": ";
	f.http_status = 200;
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EHOSTUNREACH);
	assert_non_null(strstr(etcd_error(e), "HTTP 200"));
	pthread_mutex_lock(&f.mu);
	f.raw = "";
	f.http_status = 503;
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EHOSTUNREACH);
	pthread_mutex_lock(&f.mu);
	f.raw = NULL;
	pthread_mutex_unlock(&f.mu);
	/* closed without a word: no answer */
	fe_set(&f, &f.close_early, 1);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EHOSTUNREACH);
	fe_set(&f, &f.close_early, 0);
	/* well again: the error is gone */
	assert_int_equal(etcd_put(e, "k", "v", 0), 0);
	assert_string_equal(etcd_error(e), "");
	etcd_free(e);
	fe_stop(&f);
}

/* A reply beyond 1 MiB is not read whole: no answer. */
static void test_oversized(void **state)
{
	struct fake_etcd f;
	struct etcd_kv *kvs;
	struct etcd *e;
	char ep[64];
	size_t n;

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	fe_put(&f, "/p/a", "1", 0);
	e = client(ep, 2000);
	pthread_mutex_lock(&f.mu);
	f.big = 2u << 20;
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(etcd_list(e, "/p/", &kvs, &n, NULL), -EHOSTUNREACH);
	assert_int_equal(n, 0);
	pthread_mutex_lock(&f.mu);
	f.big = 1000;	/* trailing blanks are still JSON */
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(etcd_list(e, "/p/", &kvs, &n, NULL), 0);
	assert_int_equal(n, 1);
	etcd_kvs_free(kvs, n);
	etcd_free(e);
	fe_stop(&f);
}

static void test_stop(void **state)
{
	static volatile int stop;
	struct etcd_opts o = { .timeout_ms = 5000, .stop = &stop };
	struct fake_etcd f;
	struct etcd *e;
	uint64_t t0;
	char ep[64], *v;

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	o.endpoints = ep;
	assert_int_equal(etcd_new(&o, &e), 0);
	fe_set(&f, &f.delay_ms, 3000);
	stop = 1;
	t0 = mono_ms();
	assert_int_equal(etcd_get(e, "k", &v, NULL), -ECANCELED);
	assert_true(mono_ms() - t0 < 2500);
	stop = 0;
	etcd_free(e);
	fe_stop(&f);
}

static void test_auth(void **state)
{
	struct etcd_opts o = { .timeout_ms = 2000, .user = "maru", .password = "pw" };
	struct fake_etcd f;
	struct etcd *e;
	char ep[64], *v;

	(void)state;
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	pthread_mutex_lock(&f.mu);
	f.user = "maru";
	f.password = "pw";
	f.token_no = 1;
	pthread_mutex_unlock(&f.mu);
	o.endpoints = ep;
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_int_equal(etcd_put(e, "k", "v", 0), 0);
	assert_int_equal(etcd_get(e, "k", &v, NULL), 0);
	free(v);
	/* once, then the token on every call */
	assert_int_equal(f.auths, 1);
	assert_string_equal(f.last_auth, "tok1");
	/* the token expired: authenticated again, once */
	fe_set(&f, &f.token_no, 2);
	assert_int_equal(etcd_get(e, "k", &v, NULL), 0);
	free(v);
	assert_int_equal(f.auths, 2);
	assert_string_equal(f.last_auth, "tok2");
	etcd_free(e);
	/* a wrong password: -EACCES, nothing else asked */
	o.password = "wrong";
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EACCES);
	assert_non_null(strstr(etcd_error(e), "authentication failed"));
	assert_string_equal(f.last_path, "/v3/auth/authenticate");
	etcd_free(e);
	fe_stop(&f);
}

/* https: etcd's certificate checked against ca, ours given when asked. */
static void test_tls(void **state)
{
	struct etcd_opts o = { .timeout_ms = 2000 };
	char dir[64], ca[96], ca2[96], crt[96], key[96], cli[96], clikey[96], ep[64], err[256];
	struct tls_creds *plain, *mutual;
	struct fake_etcd f;
	struct etcd *e;
	char *v;

	(void)state;
	certs_make(dir, sizeof(dir), "etcd-test");
	certs_path(dir, ca, sizeof(ca), "ca.pem");
	certs_path(dir, ca2, sizeof(ca2), "ca2.pem");
	certs_path(dir, crt, sizeof(crt), "srv.pem");
	certs_path(dir, key, sizeof(key), "srv.key");
	certs_path(dir, cli, sizeof(cli), "cli.pem");
	certs_path(dir, clikey, sizeof(clikey), "cli.key");
	assert_int_equal(tls_creds_server(crt, key, NULL, &plain, err, sizeof(err)), 0);
	assert_int_equal(tls_creds_server(crt, key, ca, &mutual, err, sizeof(err)), 0);
	fe_start(&f);
	fe_endpoint(&f, ep, sizeof(ep));
	o.endpoints = ep;
	pthread_mutex_lock(&f.mu);
	f.tls = plain;
	pthread_mutex_unlock(&f.mu);
	/* the right CA: https, a call like any other */
	o.ca = ca;
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_int_equal(etcd_put(e, "k", "over tls", 0), 0);
	assert_int_equal(etcd_get(e, "k", &v, NULL), 0);
	assert_string_equal(v, "over tls");
	free(v);
	etcd_free(e);
	/* a CA that signed nothing of etcd's: no answer */
	o.ca = ca2;
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EHOSTUNREACH);
	etcd_free(e);
	/* clear text to an https endpoint: no answer */
	o.ca = NULL;
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_int_equal(etcd_get(e, "k", &v, NULL), -EHOSTUNREACH);
	etcd_free(e);
	/* etcd --client-cert-auth: ours is given and taken */
	pthread_mutex_lock(&f.mu);
	f.tls = mutual;
	pthread_mutex_unlock(&f.mu);
	o.ca = ca;
	o.cert = cli;
	o.key = clikey;
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_int_equal(etcd_get(e, "k", &v, NULL), 0);
	free(v);
	etcd_free(e);
	/* and without one, refused */
	o.cert = o.key = NULL;
	assert_int_equal(etcd_new(&o, &e), 0);
	assert_true(etcd_get(e, "k", &v, NULL) < 0);
	etcd_free(e);
	fe_stop(&f);
	tls_creds_put(plain);
	tls_creds_put(mutual);
	certs_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_leases),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_nobody_answers),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_tls),
	};

	return cmocka_run_group_tests_name("cluster/etcd", tests, NULL, NULL);
}

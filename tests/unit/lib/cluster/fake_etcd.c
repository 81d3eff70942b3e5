/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/cluster/fake_etcd.c: the fake gateway of fake_etcd.h. Its
 * thread accepts one connection at a time (its TLS session's clear end
 * with https), reads one HTTP request (headers and a Content-Length
 * body), answers it from an in-memory key table kept in key order, and
 * closes the connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <sodium.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "fake_etcd.h"
#include "tls.h"

#define REQ_MAX	65536

static char *unb64(const char *s)
{
	size_t n = strlen(s), len;
	char *out = malloc(n + 1);

	assert_non_null(out);
	if (sodium_base642bin((unsigned char *)out, n, s, n, NULL, &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL)) {
		free(out);
		return NULL;
	}
	out[len] = '\0';
	return out;
}

static json_object *b64(const char *s)
{
	size_t n = strlen(s), cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
	char *out = malloc(cap);
	json_object *j;

	assert_non_null(out);
	sodium_bin2base64(out, cap, (const unsigned char *)s, n, sodium_base64_VARIANT_ORIGINAL);
	j = json_object_new_string(out);
	free(out);
	return j;
}

static json_object *num(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%lld", (long long)v);
	return json_object_new_string(s);
}

static int64_t jnum(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static char *jb64(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? unb64(json_object_get_string(v)) : NULL;
}

/* Index of key, or where it would go (*found 0). e->mu held. */
static int find(struct fake_etcd *e, const char *key, int *found)
{
	int i;

	for (i = 0; i < e->nkeys; i++) {
		int c = strcmp(e->key[i], key);

		if (c >= 0) {
			*found = c == 0;
			return i;
		}
	}
	*found = 0;
	return i;
}

static void put_locked(struct fake_etcd *e, const char *key, const char *value, int64_t lease)
{
	int found, i = find(e, key, &found);

	if (!found) {
		assert_true(e->nkeys < FE_KEYS);
		memmove(&e->key[i + 1], &e->key[i], (size_t)(e->nkeys - i) * sizeof(char *));
		memmove(&e->val[i + 1], &e->val[i], (size_t)(e->nkeys - i) * sizeof(char *));
		memmove(&e->lease_of[i + 1], &e->lease_of[i],
			(size_t)(e->nkeys - i) * sizeof(int64_t));
		e->key[i] = strdup(key);
		e->nkeys++;
	} else {
		free(e->val[i]);
	}
	e->val[i] = strdup(value);
	e->lease_of[i] = lease;
	e->revision++;
}

static json_object *header(struct fake_etcd *e)
{
	json_object *r = json_object_new_object(), *h = json_object_new_object();

	json_object_object_add(h, "revision", num(e->revision));
	json_object_object_add(r, "header", h);
	return r;
}

static json_object *do_range(struct fake_etcd *e, json_object *q)
{
	char *key = jb64(q, "key"), *end = jb64(q, "range_end");
	json_object *r = header(e), *arr = json_object_new_array(), *kv;
	int i, n = 0;

	snprintf(e->last_range_end, sizeof(e->last_range_end), "%s", end ? end : "");
	for (i = 0; key && i < e->nkeys; i++) {
		if (end ? strcmp(e->key[i], key) < 0 || strcmp(e->key[i], end) >= 0 :
			  strcmp(e->key[i], key))
			continue;
		kv = json_object_new_object();
		json_object_object_add(kv, "key", b64(e->key[i]));
		if (e->val[i][0])	/* the gateway leaves an empty value out */
			json_object_object_add(kv, "value", b64(e->val[i]));
		if (e->lease_of[i])
			json_object_object_add(kv, "lease", num(e->lease_of[i]));
		json_object_array_add(arr, kv);
		n++;
	}
	if (n)
		json_object_object_add(r, "kvs", arr);
	else
		json_object_put(arr);
	json_object_object_add(r, "count", num(n));
	free(key);
	free(end);
	return r;
}

static int lease_slot(struct fake_etcd *e, int64_t id)
{
	int i;

	for (i = 0; i < 16; i++)
		if (e->leases[i] == id)
			return i;
	return -1;
}

static json_object *refuse(int code, const char *msg)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "error", json_object_new_string(msg));
	json_object_object_add(r, "code", json_object_new_int(code));
	json_object_object_add(r, "message", json_object_new_string(msg));
	return r;
}

static json_object *do_lease(struct fake_etcd *e, const char *what, json_object *q)
{
	json_object *r, *res;
	int64_t id = jnum(q, "ID");
	int i = lease_slot(e, id ? id : -1);

	if (!strcmp(what, "grant")) {
		r = header(e);
		i = lease_slot(e, 0);
		assert_true(i >= 0);
		e->leases[i] = ++e->next_lease + 7000;
		if (!e->no_lease_id)
			json_object_object_add(r, "ID", num(e->leases[i]));
		json_object_object_add(r, "TTL", num(jnum(q, "TTL")));
		return r;
	}
	if (!strcmp(what, "keepalive")) {
		/* a stream: its message under "result", TTL absent once gone */
		res = header(e);
		json_object_object_add(res, "ID", num(id));
		if (i >= 0)
			json_object_object_add(res, "TTL", num(10));
		r = json_object_new_object();
		json_object_object_add(r, "result", res);
		return r;
	}
	if (i < 0)
		return refuse(5, "etcdserver: requested lease not found");
	e->leases[i] = 0;
	return header(e);
}

static json_object *do_auth(struct fake_etcd *e, json_object *q)
{
	json_object *r, *n = NULL, *p = NULL;
	char tok[32];

	e->auths++;
	json_object_object_get_ex(q, "name", &n);
	json_object_object_get_ex(q, "password", &p);
	if (!e->user || !n || !p || strcmp(json_object_get_string(n), e->user) ||
	    strcmp(json_object_get_string(p), e->password))
		return refuse(3, "etcdserver: authentication failed, invalid user ID or password");
	r = header(e);
	snprintf(tok, sizeof(tok), "tok%d", e->token_no);
	json_object_object_add(r, "token", json_object_new_string(tok));
	return r;
}

/* The answer to path with body q. e->mu held. */
static json_object *answer(struct fake_etcd *e, const char *path, json_object *q)
{
	char tok[32];
	char *k, *v;

	if (e->code)
		return refuse(e->code, e->code == 14 ? "etcdserver: no leader" : "refused");
	if (!strcmp(path, "/v3/auth/authenticate"))
		return do_auth(e, q);
	snprintf(tok, sizeof(tok), "tok%d", e->token_no);
	if (e->user && strcmp(e->last_auth, tok))
		return refuse(16, "etcdserver: invalid auth token");
	if (!strcmp(path, "/v3/kv/range"))
		return do_range(e, q);
	if (!strcmp(path, "/v3/kv/put")) {
		k = jb64(q, "key");
		v = jb64(q, "value");
		assert_non_null(k);
		put_locked(e, k, v ? v : "", jnum(q, "lease"));
		free(k);
		free(v);
		return header(e);
	}
	if (!strncmp(path, "/v3/lease/", 10))
		return do_lease(e, path + 10, q);
	return refuse(12, "unknown method");
}

/* Read one request: headers and body. 0, or -1 (the peer went). */
static int read_req(int fd, char *buf, char **body, size_t *blen)
{
	size_t got = 0, need = 0;
	char *end = NULL, *cl;
	ssize_t n;

	for (;;) {
		n = recv(fd, buf + got, REQ_MAX - 1 - got, 0);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			cl = strcasestr(buf, "Content-Length:");
			need = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		}
		if (end && got >= need)
			break;
		if (got + 1 >= REQ_MAX)
			return -1;
	}
	*body = end + 4;
	*blen = got - (size_t)(end + 4 - buf);
	return 0;
}

static void send_all(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n && (k = send(fd, p, n, MSG_NOSIGNAL)) > 0) {
		p += k;
		n -= (size_t)k;
	}
}

static void reply(int fd, int status, const char *text, size_t big)
{
	char head[256];
	size_t n = strlen(text);
	char *pad;

	snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, n + big);
	send_all(fd, head, strlen(head));
	send_all(fd, text, n);
	if (big) {
		pad = malloc(big);
		assert_non_null(pad);
		memset(pad, ' ', big);
		send_all(fd, pad, big);
		free(pad);
	}
}

static void serve_one(struct fake_etcd *e, int fd)
{
	static char buf[REQ_MAX];
	char path[64] = "", *body, *a;
	size_t blen;
	json_object *q, *r;
	struct timespec ts;

	if (read_req(fd, buf, &body, &blen))
		return;
	sscanf(buf, "POST %63s", path);
	pthread_mutex_lock(&e->mu);
	e->requests++;
	snprintf(e->last_path, sizeof(e->last_path), "%s", path);
	a = strcasestr(buf, "\r\nAuthorization: ");
	snprintf(e->last_auth, sizeof(e->last_auth), "%.*s",
		 a ? (int)strcspn(a + 17, "\r\n") : 0, a ? a + 17 : "");
	if (e->close_early) {
		pthread_mutex_unlock(&e->mu);
		return;
	}
	if (e->delay_ms) {
		ts.tv_sec = e->delay_ms / 1000;
		ts.tv_nsec = (e->delay_ms % 1000) * 1000000L;
		pthread_mutex_unlock(&e->mu);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&e->mu);
	}
	if (e->raw) {
		reply(fd, e->http_status ? e->http_status : 200, e->raw, 0);
		pthread_mutex_unlock(&e->mu);
		return;
	}
	body[blen] = '\0';
	q = json_tokener_parse(body);
	r = answer(e, path, q);
	reply(fd, 200, json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN),
	      strcmp(path, "/v3/kv/range") ? 0 : e->big);
	json_object_put(r);
	json_object_put(q);
	pthread_mutex_unlock(&e->mu);
}

static void *fe_main(void *arg)
{
	struct fake_etcd *e = arg;
	struct pollfd p[2] = { { .fd = e->lfd, .events = POLLIN },
			       { .fd = e->stop_pipe[0], .events = POLLIN } };
	struct tls_creds *tls;
	int fd, app;

	while (poll(p, 2, -1) >= 0 && !p[1].revents) {
		if (!p[0].revents)
			continue;
		fd = accept4(e->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&e->mu);
		tls = e->tls;
		pthread_mutex_unlock(&e->mu);
		/* https: the session's clear end is served (a failed handshake
		 * closes it: the read finds the end) */
		if (tls && tls_server(tls, fd, 5000, "fake etcd", NULL, &app))
			continue;
		serve_one(e, tls ? app : fd);
		close(tls ? app : fd);
	}
	return NULL;
}

void fe_start(struct fake_etcd *e)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	memset(e, 0, sizeof(*e));
	assert_int_equal(sodium_init() < 0, 0);
	pthread_mutex_init(&e->mu, NULL);
	e->revision = 1;
	e->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(e->lfd >= 0);
	assert_int_equal(bind(e->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(e->lfd, 16), 0);
	assert_int_equal(getsockname(e->lfd, (struct sockaddr *)&a, &len), 0);
	e->port = ntohs(a.sin_port);
	assert_int_equal(pipe(e->stop_pipe), 0);
	assert_int_equal(pthread_create(&e->th, NULL, fe_main, e), 0);
}

void fe_stop(struct fake_etcd *e)
{
	int i;

	assert_int_equal(write(e->stop_pipe[1], "x", 1), 1);
	pthread_join(e->th, NULL);
	close(e->lfd);
	close(e->stop_pipe[0]);
	close(e->stop_pipe[1]);
	for (i = 0; i < e->nkeys; i++) {
		free(e->key[i]);
		free(e->val[i]);
	}
	pthread_mutex_destroy(&e->mu);
}

void fe_put(struct fake_etcd *e, const char *key, const char *value, int64_t lease)
{
	pthread_mutex_lock(&e->mu);
	put_locked(e, key, value, lease);
	pthread_mutex_unlock(&e->mu);
}

void fe_del(struct fake_etcd *e, const char *key)
{
	int found, i;

	pthread_mutex_lock(&e->mu);
	i = find(e, key, &found);
	if (found) {
		free(e->key[i]);
		free(e->val[i]);
		memmove(&e->key[i], &e->key[i + 1], (size_t)(e->nkeys - i - 1) * sizeof(char *));
		memmove(&e->val[i], &e->val[i + 1], (size_t)(e->nkeys - i - 1) * sizeof(char *));
		memmove(&e->lease_of[i], &e->lease_of[i + 1],
			(size_t)(e->nkeys - i - 1) * sizeof(int64_t));
		e->nkeys--;
		e->revision++;
	}
	pthread_mutex_unlock(&e->mu);
}

void fe_endpoint(const struct fake_etcd *e, char *buf, size_t cap)
{
	snprintf(buf, cap, "127.0.0.1:%u", (unsigned int)e->port);
}

unsigned int fe_requests(struct fake_etcd *e)
{
	unsigned int n;

	pthread_mutex_lock(&e->mu);
	n = e->requests;
	pthread_mutex_unlock(&e->mu);
	return n;
}

void fe_set(struct fake_etcd *e, int *field, int v)
{
	pthread_mutex_lock(&e->mu);
	*field = v;
	pthread_mutex_unlock(&e->mu);
}

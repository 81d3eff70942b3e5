// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/cluster/etcd.c: etcd v3 through its JSON gateway (etcd.h). Every
 * call is one POST of a JSON body to /v3/<service>/<method>; keys and
 * values travel base64-encoded and 64-bit integers as strings, as the
 * gateway's JSON mapping of etcd's protobuf messages wants. An answer with
 * an "error" or a gRPC "code" is etcd's refusal; a connection that fails
 * or times out is no answer, and the next endpoint is tried.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <sodium.h>

#include "etcd.h"

#define ETCD_REPLY_MAX	(1u << 20)	/* a membership record is far smaller */

/* gRPC status codes etcd answers with (google.golang.org/grpc/codes) */
enum { GRPC_DEADLINE = 4, GRPC_NOT_FOUND = 5, GRPC_DENIED = 7, GRPC_UNAVAILABLE = 14,
       GRPC_UNAUTHENTICATED = 16 };

struct etcd {
	CURL *curl;
	char *ep[ETCD_MAX_ENDPOINTS];
	unsigned int nep, cur;
	struct etcd_opts o;
	char token[512];	/* etcd auth token, "" none yet */
	char err[512];
	char *buf;		/* the reply being read */
	size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct etcd *e = arg;
	size_t add = size * n;
	char *nb;

	if (e->len + add + 1 > ETCD_REPLY_MAX)
		return 0;	/* curl fails the transfer: CURLE_WRITE_ERROR */
	nb = realloc(e->buf, e->len + add + 1);
	if (!nb)
		return 0;
	e->buf = nb;
	memcpy(e->buf + e->len, p, add);
	e->len += add;
	e->buf[e->len] = '\0';
	return add;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const struct etcd *e = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return e->o.stop && *e->o.stop;	/* non-zero aborts the transfer */
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

int etcd_new(const struct etcd_opts *o, struct etcd **out)
{
	struct etcd *e;
	const char *p = o->endpoints, *c;
	static int inited;

	if (!p || !*p)
		return -EINVAL;
	if (!inited) {	/* marud calls this once, before its threads */
		if (curl_global_init(CURL_GLOBAL_DEFAULT))
			return -ENOMEM;
		inited = 1;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->o = *o;
	e->o.ca = dup_or_null(o->ca);
	e->o.cert = dup_or_null(o->cert);
	e->o.key = dup_or_null(o->key);
	e->o.user = dup_or_null(o->user);
	e->o.password = dup_or_null(o->password);
	e->o.endpoints = NULL;
	if (!e->o.timeout_ms)
		e->o.timeout_ms = 2000;
	while (*p) {
		size_t n;

		c = strchr(p, ',');
		n = c ? (size_t)(c - p) : strlen(p);
		if (n == 0 || e->nep == ETCD_MAX_ENDPOINTS) {
			etcd_free(e);
			return -EINVAL;
		}
		e->ep[e->nep] = strndup(p, n);
		if (!e->ep[e->nep++]) {
			etcd_free(e);
			return -ENOMEM;
		}
		p += n + (c ? 1 : 0);
	}
	e->curl = curl_easy_init();
	if (!e->curl) {
		etcd_free(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

void etcd_free(struct etcd *e)
{
	unsigned int i;

	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	for (i = 0; i < e->nep; i++)
		free(e->ep[i]);
	free((char *)e->o.ca);
	free((char *)e->o.cert);
	free((char *)e->o.key);
	free((char *)e->o.user);
	if (e->o.password)
		sodium_memzero((char *)e->o.password, strlen(e->o.password));
	free((char *)e->o.password);
	free(e->buf);
	free(e);
}

const char *etcd_error(const struct etcd *e)
{
	return e->err;
}

/*
 * POST body to one endpoint. Returns 0 with the reply parsed into *reply,
 * 1 when the endpoint did not answer (e->err says why), 2 when it took the
 * connection but did not answer in time (a member without quorum holds a
 * request until its own deadline), 3 when it refused the request outside
 * etcd's JSON (an HTTP 4xx), or -ECANCELED.
 */
static int post_one(struct etcd *e, unsigned int i, const char *path, const char *body,
		    json_object **reply)
{
	struct curl_slist *h = NULL;
	char url[512], auth[600];
	CURLcode rc;
	long code = 0;

	snprintf(url, sizeof(url), "%s://%s%s", e->o.ca ? "https" : "http", e->ep[i], path);
	e->len = 0;
	curl_easy_reset(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->o.timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)e->o.timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, e);
	curl_easy_setopt(e->curl, CURLOPT_PROXY, "");	/* never through a proxy */
	if (e->o.ca)
		curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->o.ca);
	if (e->o.cert)
		curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->o.cert);
	if (e->o.key)
		curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->o.key);
	h = curl_slist_append(h, "Content-Type: application/json");
	if (e->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, h);
	rc = curl_easy_perform(e->curl);
	curl_slist_free_all(h);
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return -ECANCELED;
	if (rc != CURLE_OK) {
		curl_off_t connected = 0;

		curl_easy_getinfo(e->curl, CURLINFO_CONNECT_TIME_T, &connected);
		snprintf(e->err, sizeof(e->err), "%s: %s", e->ep[i],
			 rc == CURLE_OPERATION_TIMEDOUT && connected ?
			 "connected, no answer in time" : curl_easy_strerror(rc));
		return rc == CURLE_OPERATION_TIMEDOUT && connected ? 2 : 1;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
	*reply = e->len ? json_tokener_parse(e->buf) : NULL;
	if (!*reply) {
		/* etcd's own words, one line (e.g. its gateway refusing a client
		 * certificate with a CommonName while auth is on) */
		snprintf(e->err, sizeof(e->err), "%s: HTTP %ld: %.*s", e->ep[i], code,
			 e->len ? (int)strcspn(e->buf, "\r\n") : 8, e->len ? e->buf : "no reply");
		return code >= 400 && code < 500 ? 3 : 1;
	}
	return 0;
}

/* etcd's refusal in a reply: 0 none, else its gRPC code (-1 unknown) */
static int refusal(struct etcd *e, unsigned int i, json_object *r)
{
	json_object *c, *m;
	int code = 0;

	if (json_object_object_get_ex(r, "code", &c))
		code = json_object_get_int(c);
	if (!code && !json_object_object_get_ex(r, "error", &m))
		return 0;
	if (!json_object_object_get_ex(r, "message", &m) &&
	    !json_object_object_get_ex(r, "error", &m))
		m = NULL;
	snprintf(e->err, sizeof(e->err), "%s: %s", e->ep[i],
		 m ? json_object_get_string(m) : "refused");
	return code ? code : -1;
}

static int authenticate(struct etcd *e, unsigned int i);

/*
 * POST to the endpoint that answered last, then to the others. Returns 0
 * with *reply (json_object_put it), or -errno (e->err says what).
 */
static int post(struct etcd *e, const char *path, json_object *req, json_object **reply)
{
	const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	unsigned int k, i;
	int rc, code, busy = 0, reauth = 0;

	for (k = 0; k < e->nep; k++) {
		i = (e->cur + k) % e->nep;
		if (e->o.user && !e->token[0] && (rc = authenticate(e, i))) {
			if (rc == -ECANCELED || rc == -EACCES)
				return rc;
			busy |= rc == -EAGAIN;
			continue;
		}
		rc = post_one(e, i, path, body, reply);
		if (rc < 0)
			return rc;
		if (rc == 3)
			return -EACCES;
		if (rc > 0) {
			busy |= rc == 2;
			continue;
		}
		code = refusal(e, i, *reply);
		if (!code) {
			e->cur = i;
			e->err[0] = '\0';
			return 0;
		}
		json_object_put(*reply);
		*reply = NULL;
		if (code == GRPC_UNAUTHENTICATED && e->o.user && !reauth++) {
			e->token[0] = '\0';	/* expired token: once more */
			k--;
			continue;
		}
		if (code == GRPC_UNAVAILABLE || code == GRPC_DEADLINE) {
			busy = 1;	/* no leader or no quorum: another may */
			continue;
		}
		e->cur = i;
		return code == GRPC_NOT_FOUND ? -ENOENT : code == GRPC_DENIED ? -EACCES : -EIO;
	}
	return busy ? -EAGAIN : -EHOSTUNREACH;
}

static int authenticate(struct etcd *e, unsigned int i)
{
	json_object *req = json_object_new_object(), *r = NULL, *t;
	int rc, code;

	json_object_object_add(req, "name", json_object_new_string(e->o.user));
	json_object_object_add(req, "password",
			       json_object_new_string(e->o.password ? e->o.password : ""));
	rc = post_one(e, i, "/v3/auth/authenticate",
		      json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), &r);
	json_object_put(req);
	if (rc)
		return rc < 0 ? rc : rc == 2 ? -EAGAIN : rc == 3 ? -EACCES : -EHOSTUNREACH;
	code = refusal(e, i, r);
	if (!code && json_object_object_get_ex(r, "token", &t) &&
	    strlen(json_object_get_string(t)) < sizeof(e->token))
		snprintf(e->token, sizeof(e->token), "%s", json_object_get_string(t));
	else if (!code)
		snprintf(e->err, sizeof(e->err), "%s: no token in the reply", e->ep[i]);
	json_object_put(r);
	if (e->token[0])
		return 0;
	return code == GRPC_UNAVAILABLE || code == GRPC_DEADLINE ? -EAGAIN : -EACCES;
}

static json_object *b64(const char *s)
{
	size_t n = strlen(s), cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
	char *out = malloc(cap);
	json_object *j;

	if (!out)
		return NULL;
	sodium_bin2base64(out, cap, (const unsigned char *)s, n, sodium_base64_VARIANT_ORIGINAL);
	j = json_object_new_string(out);
	free(out);
	return j;
}

static char *unb64(const char *s)
{
	size_t n = strlen(s), len;
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	if (sodium_base642bin((unsigned char *)out, n, s, n, NULL, &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL)) {
		free(out);
		return NULL;
	}
	out[len] = '\0';
	return out;
}

static json_object *id_json(int64_t id)
{
	char s[24];

	snprintf(s, sizeof(s), "%lld", (long long)id);
	return json_object_new_string(s);
}

/* a member of obj, looking into a stream reply's "result" too */
static json_object *field(json_object *r, const char *name)
{
	json_object *v, *res;

	if (json_object_object_get_ex(r, name, &v))
		return v;
	if (json_object_object_get_ex(r, "result", &res) &&
	    json_object_object_get_ex(res, name, &v))
		return v;
	return NULL;
}

static int call(struct etcd *e, const char *path, json_object *req, json_object **reply)
{
	int rc;

	if (!req)
		return -ENOMEM;
	rc = post(e, path, req, reply);
	json_object_put(req);
	return rc;
}

int etcd_lease_grant(struct etcd *e, unsigned int ttl_s, int64_t *id)
{
	json_object *req = json_object_new_object(), *r, *v;
	int rc;

	json_object_object_add(req, "TTL", json_object_new_int64(ttl_s));
	rc = call(e, "/v3/lease/grant", req, &r);
	if (rc)
		return rc;
	v = field(r, "ID");
	*id = v ? json_object_get_int64(v) : 0;
	json_object_put(r);
	if (!*id) {
		snprintf(e->err, sizeof(e->err), "lease grant answered without a lease id");
		return -EIO;
	}
	return 0;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s)
{
	json_object *req = json_object_new_object(), *r, *v;
	int rc;

	json_object_object_add(req, "ID", id_json(id));
	rc = call(e, "/v3/lease/keepalive", req, &r);
	if (rc)
		return rc;
	v = field(r, "TTL");	/* absent (0): the lease is gone */
	*ttl_s = v ? json_object_get_int64(v) : 0;
	json_object_put(r);
	if (*ttl_s <= 0) {
		snprintf(e->err, sizeof(e->err), "lease %llx expired", (unsigned long long)id);
		return -ENOENT;
	}
	return 0;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	json_object *req = json_object_new_object(), *r;
	int rc;

	json_object_object_add(req, "ID", id_json(id));
	rc = call(e, "/v3/lease/revoke", req, &r);
	if (!rc)
		json_object_put(r);
	return rc;
}

int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease)
{
	json_object *req = json_object_new_object(), *r;
	int rc;

	json_object_object_add(req, "key", b64(key));
	json_object_object_add(req, "value", b64(value));
	if (lease)
		json_object_object_add(req, "lease", id_json(lease));
	rc = call(e, "/v3/kv/put", req, &r);
	if (!rc)
		json_object_put(r);
	return rc;
}

int etcd_get(struct etcd *e, const char *key, char **value, int64_t *lease)
{
	json_object *req = json_object_new_object(), *r, *kvs, *kv, *v;
	int rc;

	json_object_object_add(req, "key", b64(key));
	rc = call(e, "/v3/kv/range", req, &r);
	if (rc)
		return rc;
	rc = -ENOENT;
	kvs = field(r, "kvs");
	if (kvs && json_object_is_type(kvs, json_type_array) && json_object_array_length(kvs) &&
	    (kv = json_object_array_get_idx(kvs, 0))) {
		/* an empty value is omitted from the reply */
		if (!json_object_object_get_ex(kv, "value", &v))
			*value = strdup("");
		else
			*value = unb64(json_object_get_string(v));
		rc = *value ? 0 : -EIO;
		if (lease)
			*lease = json_object_object_get_ex(kv, "lease", &v) ?
				 json_object_get_int64(v) : 0;
	}
	json_object_put(r);
	return rc;
}

void etcd_kvs_free(struct etcd_kv *kvs, size_t n)
{
	size_t i;

	for (i = 0; kvs && i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].value);
	}
	free(kvs);
}

int etcd_list(struct etcd *e, const char *prefix, struct etcd_kv **kvs, size_t *n,
	      int64_t *revision)
{
	json_object *req, *r, *arr, *kv, *v, *hdr;
	size_t len = strlen(prefix), i, cnt;
	char *end;
	int rc;

	*kvs = NULL;
	*n = 0;
	if (!len)
		return -EINVAL;
	/* range_end: the prefix with its last byte one higher */
	end = strdup(prefix);
	if (!end || (unsigned char)end[len - 1] == 0xff) {
		free(end);
		return end ? -EINVAL : -ENOMEM;
	}
	end[len - 1]++;
	/* made once the prefix is known good: nothing to drop before */
	req = json_object_new_object();
	json_object_object_add(req, "key", b64(prefix));
	json_object_object_add(req, "range_end", b64(end));
	free(end);
	rc = call(e, "/v3/kv/range", req, &r);
	if (rc)
		return rc;
	if (revision)
		*revision = json_object_object_get_ex(r, "header", &hdr) &&
			    json_object_object_get_ex(hdr, "revision", &v) ?
			    json_object_get_int64(v) : 0;
	arr = field(r, "kvs");
	cnt = arr && json_object_is_type(arr, json_type_array) ?
	      json_object_array_length(arr) : 0;
	if (cnt && !(*kvs = calloc(cnt, sizeof(**kvs)))) {
		json_object_put(r);
		return -ENOMEM;
	}
	for (i = 0; i < cnt; i++) {
		struct etcd_kv *o = &(*kvs)[*n];

		kv = json_object_array_get_idx(arr, i);
		if (!json_object_object_get_ex(kv, "key", &v) ||
		    !(o->key = unb64(json_object_get_string(v))))
			continue;
		o->value = json_object_object_get_ex(kv, "value", &v) ?
			   unb64(json_object_get_string(v)) : strdup("");
		if (!o->value) {
			free(o->key);
			o->key = NULL;
			continue;
		}
		o->lease = json_object_object_get_ex(kv, "lease", &v) ? json_object_get_int64(v) : 0;
		(*n)++;
	}
	json_object_put(r);
	return 0;
}

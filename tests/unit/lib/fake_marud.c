/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/fake_marud.c: the fake marud of fake_marud.h. The accept
 * thread starts one thread per socket; each reads whole frames, runs the
 * AUTH and HELLO handshake itself, applies marud's generation gate and
 * passes the rest to the test's handler. Sessions are a counter: the token
 * names the counter's value, so forgetting a session is a bump.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <sodium.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_marud.h"
#include "maru/libmaru.h"
#include "sockio.h"

#define FAKE_BODY_MAX	(16u << 20)

struct conn_arg {
	struct fake_marud *f;
	int slot;
};

/* Per socket: where the AUTH exchange stands. */
struct conn_state {
	int authed;
	int auth_stage;
	uint8_t nc[32], ns[32];
};

static void set_token(struct fake_marud *f, uint64_t session_no)
{
	memset(f->token, 0, sizeof(f->token));
	memcpy(f->token, &session_no, sizeof(session_no));
	f->token[15] = 0x5a;
}

static uint64_t token_no(const struct fake_marud *f)
{
	uint64_t n;

	memcpy(&n, f->token, sizeof(n));
	return n;
}

int fake_reply(struct fake_req *q, int32_t status, const void *p1, size_t n1,
	       const void *p2, size_t n2)
{
	struct proto_hdr rh;
	uint64_t gen;

	pthread_mutex_lock(&q->f->mu);
	gen = q->f->generation;
	pthread_mutex_unlock(&q->f->mu);
	proto_hdr_init(&rh, q->h.op, (uint32_t)(n1 + n2), q->h.reqid, gen, status);
	return proto_send(q->fd, &rh, p1, n1, p2, n2);
}

static void auth_mac(uint8_t mac[32], const uint8_t key[32], const char *label,
		     const uint8_t a[32], const uint8_t b[32])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, 32);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, a, 32);
	crypto_auth_hmacsha256_update(&st, b, 32);
	crypto_auth_hmacsha256_final(&st, mac);
}

/* marud's side of the two AUTH rounds. -1: close the socket. */
static int do_auth(struct fake_req *q, struct conn_state *cs)
{
	struct proto_auth a, rep;
	uint8_t want[32];

	if (q->h.len != sizeof(a))
		return -1;
	memcpy(&a, q->body, sizeof(a));
	if (cs->auth_stage == 0) {
		memcpy(cs->nc, a.nonce, 32);
		randombytes_buf(cs->ns, 32);
		memcpy(rep.nonce, cs->ns, 32);
		auth_mac(rep.mac, q->f->prove_key, "marud", cs->nc, cs->ns);
		cs->auth_stage = 1;
		return fake_reply(q, 0, &rep, sizeof(rep), NULL, 0) ? -1 : 0;
	}
	auth_mac(want, q->f->check_key, "maruc", cs->ns, cs->nc);
	if (memcmp(want, a.mac, 32)) {
		fake_reply(q, -EACCES, NULL, 0, NULL, 0);
		return -1;
	}
	cs->authed = 1;
	return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
}

static void hello_fill(struct fake_marud *f, const struct proto_hello_req *hq,
		       struct proto_hello_rep *rep)
{
	memset(rep->uuid, 0x42, sizeof(rep->uuid));
	rep->generation = f->generation;
	rep->pool_size = f->pool_size;
	rep->pool_align = 4096;
	rep->data_off = 4096;
	rep->max_frame = f->max_frame;
	rep->backend = 1;
	rep->hint_actions = f->hint_actions;
	snprintf(rep->pool_path, sizeof(rep->pool_path), "/nonexistent/fake-marud-pool");
	if ((hq->flags & HELLO_F_RECLAIM) && !memcmp(hq->token, f->token, 16)) {
		rep->reclaimed = 1;
	} else if (hq->flags & HELLO_F_EVENTS) {
		/* an event socket's session of its own */
		memset(rep->token, 0xee, sizeof(rep->token));
		return;
	} else {
		set_token(f, token_no(f) + 1);
	}
	memcpy(rep->token, f->token, sizeof(rep->token));
}

static int do_hello(struct fake_req *q)
{
	struct fake_marud *f = q->f;
	struct proto_hello_req hq;
	struct proto_hello_rep *rep;
	int32_t status;
	int rc, delay;

	if (q->h.len != sizeof(hq))
		return -1;
	memcpy(&hq, q->body, sizeof(hq));
	rep = calloc(1, sizeof(*rep));
	assert_non_null(rep);
	pthread_mutex_lock(&f->mu);
	if (f->nhellos < 64) {
		f->hellos[f->nhellos].flags = hq.flags;
		memcpy(f->hellos[f->nhellos].token, hq.token, 16);
	}
	f->nhellos++;
	status = f->hello_status;
	delay = f->hello_delay_ms;
	hello_fill(f, &hq, rep);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	if (delay) {
		/* a hung marud; over early when the client gives up the socket */
		struct pollfd pfd = { .fd = q->fd, .events = POLLIN };

		poll(&pfd, 1, delay);
	}
	if (status) {
		/* marud says why and closes */
		fake_reply(q, status, NULL, 0, NULL, 0);
		rc = -1;
	} else {
		rc = fake_reply(q, 0, rep, sizeof(*rep), NULL, 0) ? -1 : 0;
	}
	free(rep);
	return rc;
}

static int default_handler(struct fake_req *q)
{
	struct proto_statfs st;

	if (q->h.op == OP_STATFS) {
		memset(&st, 0, sizeof(st));
		st.capacity = FAKE_CAPACITY;
		return fake_reply(q, 0, &st, sizeof(st), NULL, 0) ? -1 : 0;
	}
	if (q->h.op == OP_EVENT_ACK)
		return 0;	/* never answered */
	if (q->h.op == OP_PING)
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	return fake_reply(q, -ENOSYS, NULL, 0, NULL, 0) ? -1 : 0;
}

/* Gates like marud's, then the handler. -1: close. */
static int dispatch(struct fake_req *q, struct conn_state *cs)
{
	struct fake_marud *f = q->f;
	uint16_t op = q->h.op;
	uint64_t gen;
	int has_key;

	pthread_mutex_lock(&f->mu);
	has_key = f->has_key;
	gen = f->generation;
	pthread_mutex_unlock(&f->mu);
	if (has_key && !cs->authed && op != OP_AUTH) {
		fake_reply(q, -EACCES, NULL, 0, NULL, 0);
		return -1;
	}
	if (op == OP_AUTH)
		return do_auth(q, cs);
	if (op == OP_HELLO)
		return do_hello(q);
	pthread_mutex_lock(&f->mu);
	f->ops[op]++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	if (op != OP_PING && op != OP_EVENT_ACK && q->h.generation != gen)
		return fake_reply(q, -ESTALE, NULL, 0, NULL, 0) ? -1 : 0;
	return (f->handler ? f->handler : default_handler)(q);
}

/* A request body bigger than cut_at while cut_bodies lasts: read part, close. */
static int cut_body(struct fake_marud *f, int fd, const struct proto_hdr *h, uint8_t *body)
{
	int cut;

	pthread_mutex_lock(&f->mu);
	cut = f->cut_bodies > 0 && h->len > f->cut_at;
	if (cut)
		f->cut_bodies--;
	pthread_mutex_unlock(&f->mu);
	if (cut)
		sock_read_full(fd, body, f->cut_at);
	return cut;
}

static void serve(struct fake_marud *f, int fd)
{
	struct conn_state cs = { 0 };
	struct fake_req q = { .f = f, .fd = fd };

	while (sock_read_full(fd, &q.h, sizeof(q.h)) == 0) {
		if (q.h.magic != PROTO_MAGIC || q.h.op >= OP_MAX || q.h.len > FAKE_BODY_MAX)
			break;
		q.body = malloc(q.h.len ? q.h.len : 1);
		assert_non_null(q.body);
		if (cut_body(f, fd, &q.h, q.body) ||
		    sock_read_full(fd, q.body, q.h.len) || dispatch(&q, &cs)) {
			free(q.body);
			break;
		}
		free(q.body);
	}
}

static void *conn_main(void *arg)
{
	struct conn_arg *ca = arg;
	struct fake_marud *f = ca->f;
	int slot = ca->slot, fd;

	free(ca);
	pthread_mutex_lock(&f->mu);
	fd = f->fds[slot];
	pthread_mutex_unlock(&f->mu);
	serve(f, fd);
	pthread_mutex_lock(&f->mu);
	f->fds[slot] = -1;
	f->live--;
	pthread_mutex_unlock(&f->mu);
	close(fd);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct fake_marud *f = arg;
	struct conn_arg *ca;
	int fd;

	while ((fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		pthread_mutex_lock(&f->mu);
		if (f->nthreads == FAKE_MAX_CONNS) {
			pthread_mutex_unlock(&f->mu);
			close(fd);
			continue;
		}
		ca = malloc(sizeof(*ca));
		assert_non_null(ca);
		ca->f = f;
		ca->slot = f->nthreads;
		f->fds[ca->slot] = fd;
		f->accepted++;
		f->live++;
		assert_int_equal(pthread_create(&f->threads[f->nthreads++], NULL, conn_main, ca), 0);
		pthread_mutex_unlock(&f->mu);
	}
	return NULL;
}

void fake_start(struct fake_marud *f, fake_handler handler, void *arg)
{
	static int seq;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	pthread_condattr_t ca;

	memset(f, 0, sizeof(*f));
	assert_true(sodium_init() >= 0);
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &ca);
	pthread_condattr_destroy(&ca);
	f->generation = FAKE_GEN;
	f->pool_size = 1u << 20;
	f->handler = handler;
	f->arg = arg;
	set_token(f, 0);
	snprintf(f->path, sizeof(f->path), "/tmp/maru-fake-%ld-%d.sock", (long)getpid(), seq++);
	unlink(f->path);
	memcpy(a.sun_path, f->path, strlen(f->path) + 1);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->lfd, 64), 0);
	assert_int_equal(pthread_create(&f->accept_thread, NULL, accept_main, f), 0);
}

void fake_drop(struct fake_marud *f)
{
	int i;

	pthread_mutex_lock(&f->mu);
	for (i = 0; i < f->nthreads; i++)
		if (f->fds[i] >= 0)
			shutdown(f->fds[i], SHUT_RDWR);
	pthread_mutex_unlock(&f->mu);
}

void fake_forget(struct fake_marud *f)
{
	pthread_mutex_lock(&f->mu);
	set_token(f, token_no(f) + 1000);
	pthread_mutex_unlock(&f->mu);
}

void fake_restart(struct fake_marud *f)
{
	pthread_mutex_lock(&f->mu);
	f->generation++;
	pthread_mutex_unlock(&f->mu);
	fake_forget(f);
	fake_drop(f);
}

void fake_stop(struct fake_marud *f)
{
	int i, n;

	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->accept_thread, NULL);
	close(f->lfd);
	unlink(f->path);
	fake_drop(f);
	pthread_mutex_lock(&f->mu);
	n = f->nthreads;
	pthread_mutex_unlock(&f->mu);
	for (i = 0; i < n; i++)
		pthread_join(f->threads[i], NULL);
}

void fake_set_key(struct fake_marud *f, const uint8_t prove[32], const uint8_t check[32])
{
	pthread_mutex_lock(&f->mu);
	f->has_key = 1;
	memcpy(f->prove_key, prove, 32);
	memcpy(f->check_key, check, 32);
	pthread_mutex_unlock(&f->mu);
}

unsigned int fake_ops(struct fake_marud *f, uint16_t op)
{
	unsigned int n;

	pthread_mutex_lock(&f->mu);
	n = f->ops[op];
	pthread_mutex_unlock(&f->mu);
	return n;
}

int fake_nhellos(struct fake_marud *f)
{
	int n;

	pthread_mutex_lock(&f->mu);
	n = f->nhellos;
	pthread_mutex_unlock(&f->mu);
	return n;
}

unsigned int fake_wait_ops(struct fake_marud *f, uint16_t op, unsigned int n, int ms)
{
	struct timespec ts;
	unsigned int got;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&f->mu);
	while (f->ops[op] < n && pthread_cond_timedwait(&f->cond, &f->mu, &ts) == 0)
		;
	got = f->ops[op];
	pthread_mutex_unlock(&f->mu);
	return got;
}

void fake_uri(const struct fake_marud *f, char *buf, size_t cap)
{
	snprintf(buf, cap, "maru+unix://%s", f->path);
}

struct maru_client *fake_client(struct fake_marud *f, unsigned int timeout_ms,
				unsigned int max_conns, struct logbook *b, int prio)
{
	struct maru_client_opts o;
	struct maru_client *c = NULL;
	char uri[160];

	fake_uri(f, uri, sizeof(uri));
	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.data_path = MARU_DATA_TCP;
	o.timeout_ms = timeout_ms;
	o.max_conns = max_conns;
	if (b) {
		o.log_fn = log_cb;
		o.log_arg = b;
		o.log_priority = prio;
	}
	assert_int_equal(maru_client_new(&o, &c), 0);
	return c;
}

/* ---- the log callback ---- */

void logbook_init(struct logbook *b)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->mu, NULL);
}

void log_cb(void *arg, int priority, const char *msg)
{
	struct logbook *b = arg;

	pthread_mutex_lock(&b->mu);
	if (b->n < 64) {
		snprintf(b->lines[b->n], sizeof(b->lines[0]), "%s", msg);
		b->prio[b->n] = priority;
	}
	b->n++;
	pthread_mutex_unlock(&b->mu);
}

int logged(struct logbook *b, const char *needle, int prio)
{
	int i, found = 0;

	pthread_mutex_lock(&b->mu);
	for (i = 0; i < b->n && i < 64; i++)
		if (strstr(b->lines[i], needle) && (prio < 0 || b->prio[i] == prio))
			found = 1;
	pthread_mutex_unlock(&b->mu);
	return found;
}

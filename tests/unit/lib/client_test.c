/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/client_test.c: a client's life against a fake marud (a
 * thread speaking HELLO, STATFS and PING on a real Unix socket): options
 * and defaults, connect, pool facts, and the per-client log. Every libmaru
 * line reaches opts.log_fn, including "marud at ... unreachable" once the
 * fake marud is gone, and log_priority keeps debug lines out unless asked.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "maru/libmaru.h"
#include "proto.h"
#include "sockio.h"

#define FAKE_GEN	99

/* ---- the fake marud ---- */

struct fake {
	char path[108];
	int lfd;
	pthread_t t;
	int cur;		/* the socket being served, -1 none */
};

static int answer(int fd, const struct proto_hdr *h)
{
	struct proto_hello_rep rep;
	struct proto_statfs st;
	struct proto_hdr rh;
	const void *p = NULL;
	uint32_t n = 0;

	memset(&rep, 0, sizeof(rep));
	memset(&st, 0, sizeof(st));
	if (h->op == OP_HELLO) {
		memset(rep.token, 0x11, sizeof(rep.token));
		rep.generation = FAKE_GEN;
		rep.pool_size = 1u << 20;
		rep.max_frame = PROTO_MAX_FRAME;
		p = &rep;
		n = sizeof(rep);
	} else if (h->op == OP_STATFS) {
		st.capacity = 12345;
		p = &st;
		n = sizeof(st);
	}
	proto_hdr_init(&rh, h->op, n, h->reqid, FAKE_GEN, 0);
	return proto_send(fd, &rh, p, n, NULL, 0);
}

static void serve(int fd)
{
	uint8_t body[4096];
	struct proto_hdr h;

	while (sock_read_full(fd, &h, sizeof(h)) == 0) {
		if (h.len > sizeof(body) || sock_read_full(fd, body, h.len) || answer(fd, &h))
			break;
	}
	close(fd);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int fd;

	while ((fd = accept(f->lfd, NULL, NULL)) >= 0) {
		__atomic_store_n(&f->cur, fd, __ATOMIC_SEQ_CST);
		serve(fd);
		__atomic_store_n(&f->cur, -1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void fake_start(struct fake *f)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	f->cur = -1;
	snprintf(f->path, sizeof(f->path), "/tmp/maru-client-test-%ld.sock", (long)getpid());
	unlink(f->path);
	memcpy(a.sun_path, f->path, strlen(f->path) + 1);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->lfd, 8), 0);
	assert_int_equal(pthread_create(&f->t, NULL, fake_main, f), 0);
}

/* Stop listening and drop every socket: marud is gone. */
static void fake_stop(struct fake *f)
{
	int fd = __atomic_load_n(&f->cur, __ATOMIC_SEQ_CST);

	shutdown(f->lfd, SHUT_RDWR);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	unlink(f->path);
}

/* ---- the log callback ---- */

struct logbook {
	pthread_mutex_t mu;
	char lines[32][256];
	int prio[32];
	int n;
};

static void log_cb(void *arg, int priority, const char *msg)
{
	struct logbook *b = arg;

	pthread_mutex_lock(&b->mu);
	if (b->n < 32) {
		snprintf(b->lines[b->n], sizeof(b->lines[0]), "%s", msg);
		b->prio[b->n] = priority;
	}
	b->n++;
	pthread_mutex_unlock(&b->mu);
}

static int logged(struct logbook *b, const char *needle, int prio)
{
	int i, found = 0;

	pthread_mutex_lock(&b->mu);
	for (i = 0; i < b->n && i < 32; i++)
		if (strstr(b->lines[i], needle) && b->prio[i] == prio)
			found = 1;
	pthread_mutex_unlock(&b->mu);
	return found;
}

static struct maru_client *connect_fake(struct fake *f, struct logbook *b, int prio)
{
	struct maru_client_opts o;
	struct maru_client *c = NULL;
	char uri[160];

	snprintf(uri, sizeof(uri), "maru+unix://%s", f->path);
	maru_client_opts_init(&o, sizeof(o));
	assert_int_equal(o.log_priority, LOG_INFO);
	assert_null(o.log_fn);
	o.uri = uri;
	o.data_path = MARU_DATA_TCP;
	o.timeout_ms = 300;
	o.log_fn = log_cb;
	o.log_arg = b;
	o.log_priority = prio;
	assert_int_equal(maru_client_new(&o, &c), 0);
	return c;
}

static void test_connect_facts(void **state)
{
	struct logbook b = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct maru_pool_info pi;
	struct maru_statfs st;
	struct maru_client *c;
	struct fake f;

	(void)state;
	fake_start(&f);
	c = connect_fake(&f, &b, LOG_INFO);
	assert_int_equal(maru_client_pool_info(c, &pi), 0);
	assert_int_equal(pi.generation, FAKE_GEN);
	assert_int_equal(pi.size, 1u << 20);
	assert_int_equal(pi.data_path, MARU_DATA_TCP);
	assert_int_equal(maru_statfs(c, &st), 0);
	assert_int_equal(st.capacity, 12345);
	/* LOG_INFO: the debug line about the connection is not delivered */
	assert_false(logged(&b, "connected, generation", LOG_DEBUG));
	maru_client_free(c);
	fake_stop(&f);
	pthread_join(f.t, NULL);
	close(f.lfd);
}

static void test_log_fn_unreachable(void **state)
{
	struct logbook b = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct maru_statfs st;
	struct maru_client *c;
	struct fake f;

	(void)state;
	fake_start(&f);
	c = connect_fake(&f, &b, LOG_DEBUG);
	/* LOG_DEBUG: libmaru's debug lines arrive too */
	assert_true(logged(&b, "connected, generation 99, data path tcp", LOG_DEBUG));
	fake_stop(&f);
	pthread_join(f.t, NULL);
	close(f.lfd);
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	assert_true(logged(&b, "unreachable", LOG_WARNING));
	maru_client_free(c);
}

static void test_opts_errors(void **state)
{
	struct maru_client_opts o;
	struct maru_client *c;

	(void)state;
	maru_client_opts_init(&o, sizeof(o));
	assert_int_equal(maru_client_new(&o, &c), -EINVAL);	/* no uri */
	o.uri = "maru+unix:///nonexistent/maru-client-test.sock";
	o.timeout_ms = 50;
	assert_int_equal(maru_client_new(&o, &c), -ECONNREFUSED);
	o.uri = "bogus://x";
	assert_int_equal(maru_client_new(&o, &c), -EINVAL);
	assert_int_equal(maru_client_new(NULL, &c), -EINVAL);
	assert_string_equal(maru_strerror(-ESTALE),
			    "Stale handle: marud restarted (new pool generation)");
	assert_non_null(maru_version());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_facts),
		cmocka_unit_test(test_log_fn_unreachable),
		cmocka_unit_test(test_opts_errors),
	};

	return cmocka_run_group_tests_name("client", tests, NULL, NULL);
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/handlers/version_test.c: how the version handlers
 * (daemon/handlers/version.c, io.c, ns.c) use the directory lock, on a real
 * server through the fuzzing seam. A CREATE_COPY whose copy is held inside
 * the copy callback (hdl_io_copy, wrapped at link time) does not stop other
 * sessions: their LOOKUP, EXISTS, GETATTR and a whole create-write-publish
 * complete while the copy waits, and the copy is right once let go. And
 * each request takes the directory mutex once (pthread_mutex_lock, wrapped,
 * counted on the test's thread), or once before and once after the bytes
 * it moves outside it (a copy, a zero-fill, a WRITE's payload, PUBLISH's
 * hash).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "dir_priv.h"
#include "server_harness.h"
#include "server_priv.h"

#define ROOT		DIR_ROOT_ID
#define SRC_BYTES	(16U << 20)	/* the CREATE_COPY source */
#define CHUNK		(512U << 10)	/* WRITE payload per frame */
#define WAIT_MS		10000

/* ---- the wrapped copy callback: held until released ---- */

void __real_hdl_io_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
			const struct extent_list *src, uint64_t src_off, uint64_t len);
void __wrap_hdl_io_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
			const struct extent_list *src, uint64_t src_off, uint64_t len);

static struct {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int armed, started, release, others_done;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };

void __wrap_hdl_io_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
			const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	pthread_mutex_lock(&gate.m);
	if (gate.armed && src) {
		gate.started = 1;
		pthread_cond_broadcast(&gate.cv);
		while (!gate.release)
			pthread_cond_wait(&gate.cv, &gate.m);
	}
	pthread_mutex_unlock(&gate.m);
	__real_hdl_io_copy(arg, dst, dst_off, src, src_off, len);
}

/* Wait until *flag (under gate.m) is set, at most WAIT_MS; its value. */
static int gate_wait(int *flag)
{
	struct timespec ts;
	int v;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&gate.m);
	while (!*flag && pthread_cond_timedwait(&gate.cv, &gate.m, &ts) == 0)
		;
	v = *flag;
	pthread_mutex_unlock(&gate.m);
	return v;
}

static void gate_set(int *flag)
{
	pthread_mutex_lock(&gate.m);
	*flag = 1;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.m);
}

/* ---- the wrapped mutex: acquisitions of the dir lock on one thread ---- */

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);

static pthread_mutex_t *counted;
static pthread_t counter_thread;
static unsigned int locks;

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	if (counted && m == counted && pthread_equal(pthread_self(), counter_thread))
		locks++;
	return __real_pthread_mutex_lock(m);
}

/* ---- fixture and request helpers ---- */

struct fx {
	struct th t;
	struct tconn a, b;
	struct treply r;
	uint8_t buf[CHUNK + 256];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	th_config(&f->t);
	f->t.cfg.size = (2ULL << 20) + 3ULL * SRC_BYTES;
	if (th_new(&f->t, NULL))
		return -1;
	tc_open(&f->t, &f->a);
	tc_open(&f->t, &f->b);
	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	assert_int_equal(tc_hello(&f->b, NULL, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	int rc;

	counted = NULL;
	tc_close(&f->a);
	tc_close(&f->b);
	rc = th_free(&f->t);
	free(f);
	return rc;
}

static uint64_t reqid(void)
{
	static uint64_t id = 100;

	return id++;
}

static size_t create_req(uint8_t *buf, const char *name, uint32_t flags, uint64_t hint)
{
	struct proto_create_req q = { .parent = ROOT, .size_hint = hint, .flags = flags,
				      .mode = 0644 };

	q.namelen = (uint16_t)strlen(name);
	memcpy(buf, &q, sizeof(q));
	memcpy(buf + sizeof(q), name, q.namelen);
	return sizeof(q) + q.namelen;
}

/* CREATE on tc; the new version's attributes. */
static struct proto_attr do_create(struct fx *f, struct tconn *tc, const char *name,
				   uint32_t flags, uint64_t hint)
{
	size_t n = create_req(f->buf, name, flags, hint);
	struct proto_attr a;

	assert_int_equal(tc_call(tc, OP_CREATE, reqid(), f->buf, n, &f->r, NULL), 0);
	memcpy(&a, f->r.p, sizeof(a));
	return a;
}

static int do_write(struct fx *f, struct tconn *tc, uint64_t ino, uint64_t off,
		    const void *data, uint32_t len)
{
	struct proto_io_req q = { .ino = ino, .off = off, .len = len };

	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), data, len);
	return tc_call(tc, OP_WRITE, reqid(), f->buf, sizeof(q) + len, &f->r, NULL);
}

static int do_publish(struct fx *f, struct tconn *tc, uint64_t ino, uint64_t size,
		      uint64_t hash)
{
	struct proto_publish_req q = { .ino = ino, .size = size, .xxh3 = hash };

	return tc_call(tc, OP_PUBLISH, reqid(), &q, sizeof(q), &f->r, NULL);
}

static int by_ino(struct fx *f, struct tconn *tc, uint16_t op, uint64_t ino)
{
	struct proto_ino_req q = { .ino = ino };

	return tc_call(tc, op, reqid(), &q, sizeof(q), &f->r, NULL);
}

static int do_open(struct fx *f, struct tconn *tc, const char *name)
{
	struct proto_open_req q = { .parent = ROOT, .namelen = (uint16_t)strlen(name) };

	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), name, q.namelen);
	return tc_call(tc, OP_OPEN, reqid(), f->buf, sizeof(q) + q.namelen, &f->r, NULL);
}

static int do_lookup(struct fx *f, struct tconn *tc, const char *name)
{
	size_t n = name_req(f->buf, ROOT, name, 0);

	return tc_call(tc, OP_LOOKUP, reqid(), f->buf, n, &f->r, NULL);
}

/* EXISTS of two names: the reply's two bytes. */
static void do_exists(struct fx *f, struct tconn *tc, const char *n1, const char *n2,
		      uint8_t yes[2])
{
	struct proto_exists_req q = { .parent = ROOT, .count = 2 };
	const char *names[2] = { n1, n2 };
	size_t off = sizeof(q);
	int i;

	memcpy(f->buf, &q, sizeof(q));
	for (i = 0; i < 2; i++) {
		uint16_t l = (uint16_t)strlen(names[i]);

		memcpy(f->buf + off, &l, sizeof(l));
		memcpy(f->buf + off + sizeof(l), names[i], l);
		off += sizeof(l) + l;
	}
	assert_int_equal(tc_call(tc, OP_EXISTS, reqid(), f->buf, off, &f->r, NULL), 0);
	assert_int_equal(f->r.len, 2);
	memcpy(yes, f->r.p, 2);
}

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 12));
}

/* Publish `name` of SRC_BYTES of pattern() through session a. */
static uint64_t put_source(struct fx *f, const char *name)
{
	static uint8_t chunk[CHUNK];
	struct proto_attr a = do_create(f, &f->a, name, 0, SRC_BYTES);
	uint64_t off, i;

	for (off = 0; off < SRC_BYTES; off += CHUNK) {
		for (i = 0; i < CHUNK; i++)
			chunk[i] = pattern(off + i);
		assert_int_equal(do_write(f, &f->a, a.ino, off, chunk, CHUNK), 0);
	}
	assert_int_equal(do_publish(f, &f->a, a.ino, SRC_BYTES, 0), 0);
	assert_int_equal(by_ino(f, &f->a, OP_RELEASE, a.ino), 0);
	return a.ino;
}

/* ---- CREATE_COPY runs its copy outside the directory lock ---- */

struct copier {
	struct fx *f;
	int step;
};

static void *copier_main(void *arg)
{
	struct copier *cp = arg;

	cp->step = tc_step(&cp->f->a);
	return NULL;
}

/*
 * What session b does while a's copy is held, on its own thread: all of it
 * needs the directory lock, so with the copy under the lock it would hang.
 */
static void *others_main(void *arg)
{
	struct fx *f = arg;
	static const char data[] = "written while the copy waits";
	struct proto_attr a;
	uint8_t yes[2];

	assert_int_equal(do_lookup(f, &f->b, "src"), 0);
	do_exists(f, &f->b, "src", "nope", yes);
	assert_int_equal(yes[0], 1);
	assert_int_equal(yes[1], 0);
	a = do_create(f, &f->b, "other", 0, 0);
	assert_int_equal(do_write(f, &f->b, a.ino, 0, data, sizeof(data)), 0);
	assert_int_equal(do_publish(f, &f->b, a.ino, sizeof(data), 0), 0);
	assert_int_equal(by_ino(f, &f->b, OP_GETATTR, a.ino), 0);
	assert_int_equal(by_ino(f, &f->b, OP_RELEASE, a.ino), 0);
	gate_set(&gate.others_done);
	return NULL;
}

/* The reply of the copy: its version has the source's bytes. */
static void expect_copy(struct fx *f, uint64_t src)
{
	struct proto_io_req q = { .off = 0, .len = CHUNK };
	struct proto_attr a;
	uint64_t off, i;

	assert_int_equal(tc_reply(f->a.fd, &f->r, WAIT_MS), 0);
	assert_int_equal(f->r.h.op, OP_CREATE);
	assert_int_equal(f->r.h.status, 0);
	memcpy(&a, f->r.p, sizeof(a));
	assert_int_not_equal(a.ino, src);
	assert_int_equal(a.size, SRC_BYTES);
	assert_true(a.reserved >= SRC_BYTES);
	assert_true(a.nextents >= 1);
	assert_int_equal(f->r.len, sizeof(a) + a.nextents * sizeof(struct proto_extent));
	q.ino = a.ino;
	for (off = 0; off < SRC_BYTES; off += CHUNK * 7) {
		q.off = off;
		assert_int_equal(tc_call(&f->a, OP_READ, reqid(), &q, sizeof(q), &f->r,
					 NULL), 0);
		assert_int_equal(f->r.len, CHUNK);
		for (i = 0; i < CHUNK; i++)
			if (f->r.p[i] != pattern(off + i))
				fail_msg("byte %llu of the copy is wrong",
					 (unsigned long long)(off + i));
	}
	assert_int_equal(do_publish(f, &f->a, a.ino, SRC_BYTES, 0), 0);
	assert_int_equal(by_ino(f, &f->a, OP_RELEASE, a.ino), 0);
}

static void test_copy_outside_lock(void **state)
{
	struct fx *f = *state;
	struct copier cp = { f, -1 };
	uint64_t src = put_source(f, "src");
	pthread_t th, other;
	int went_on;
	size_t n;

	gate.armed = 1;
	n = create_req(f->buf, "src", CREATE_COPY, 0);
	tc_send(f->a.fd, OP_CREATE, reqid(), TH_GENERATION, f->buf, n);
	assert_int_equal(pthread_create(&th, NULL, copier_main, &cp), 0);
	assert_true(gate_wait(&gate.started));
	/* The copy is held in the callback: everything else must still run. */
	assert_int_equal(pthread_create(&other, NULL, others_main, f), 0);
	went_on = gate_wait(&gate.others_done);
	if (went_on)	/* the create is still copying: no reply yet */
		assert_int_equal(tc_reply(f->a.fd, &f->r, 0), -EAGAIN);
	gate_set(&gate.release);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(pthread_join(other, NULL), 0);
	gate.armed = 0;
	if (!went_on)
		fail_msg("other sessions' requests waited for the held copy");
	assert_int_equal(cp.step, 0);
	expect_copy(f, src);
	assert_int_equal(dir_check(f->t.srv->dir), 0);
}

/* ---- lock acquisitions per request ---- */

static void count_start(struct fx *f)
{
	counter_thread = pthread_self();
	counted = &f->t.srv->dir->lock;
	locks = 0;
}

static unsigned int count_take(void)
{
	unsigned int n = locks;

	locks = 0;
	return n;
}

static void test_lock_once(void **state)
{
	static const char data[] = "0123456789";
	struct fx *f = *state;
	struct proto_size_req sz;
	struct proto_io_req io;
	struct proto_attr a, c;
	uint8_t yes[2];

	put_source(f, "src");
	count_start(f);
	assert_int_equal(do_lookup(f, &f->b, "src"), 0);
	assert_int_equal(count_take(), 1);
	do_exists(f, &f->b, "src", "nope", yes);
	assert_int_equal(count_take(), 1);
	a = do_create(f, &f->b, "f", 0, 0);
	assert_int_equal(count_take(), 1);
	assert_int_equal(do_write(f, &f->b, a.ino, 0, data, sizeof(data)), 0);
	assert_int_equal(count_take(), 2);		/* reserve; wrote */
	assert_int_equal(do_write(f, &f->b, a.ino, 3 * 4096, data, sizeof(data)), 0);
	assert_int_equal(count_take(), 3);		/* reserve; wrote, hole zeroed, done */
	sz = (struct proto_size_req){ .ino = a.ino, .size = 8 * 4096 };
	assert_int_equal(tc_call(&f->b, OP_RESERVE, reqid(), &sz, sizeof(sz), &f->r, NULL), 0);
	assert_int_equal(count_take(), 1);
	sz.size = 6 * 4096;
	assert_int_equal(tc_call(&f->b, OP_TRUNCATE, reqid(), &sz, sizeof(sz), &f->r, NULL), 0);
	assert_int_equal(count_take(), 2);		/* begin; zero-filled, done */
	sz.size = 4096;
	assert_int_equal(tc_call(&f->b, OP_TRUNCATE, reqid(), &sz, sizeof(sz), &f->r, NULL), 0);
	assert_int_equal(count_take(), 1);		/* shrinking: nothing to fill */
	assert_int_equal(by_ino(f, &f->b, OP_EXTENTS, a.ino), 0);
	assert_int_equal(count_take(), 1);
	assert_int_equal(do_publish(f, &f->b, a.ino, 4096, 0), 0);
	assert_int_equal(count_take(), 2);		/* extents; hashed, publish */
	io = (struct proto_io_req){ .ino = a.ino, .off = 0, .len = 64 };
	assert_int_equal(tc_call(&f->b, OP_READ, reqid(), &io, sizeof(io), &f->r, NULL), 0);
	assert_int_equal(count_take(), 1);
	assert_int_equal(by_ino(f, &f->b, OP_RELEASE, a.ino), 0);
	assert_int_equal(count_take(), 1);
	assert_int_equal(do_open(f, &f->b, "src"), 0);
	assert_int_equal(count_take(), 1);
	c = do_create(f, &f->b, "src", CREATE_COPY, 0);
	assert_int_equal(count_take(), 2);		/* begin; copied, done */
	assert_int_equal(c.size, SRC_BYTES);
	assert_int_equal(by_ino(f, &f->b, OP_ABANDON, c.ino), 0);
	assert_int_equal(count_take(), 1);
	counted = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_copy_outside_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_once, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

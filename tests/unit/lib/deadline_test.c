/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/deadline_test.c: the bounds of a call (lib/transport.c,
 * lib/cancel.c) against the fake marud, which here stops answering: a
 * request marud takes and never answers, a HELLO it never answers. Nine
 * calls at once on four sockets, and twelve kinds of call at once (lookup,
 * getattr, mkdir, rmdir, unlink, rename, readdir, exists, statfs, create,
 * open, symlink), each end within timeout_ms of their own start (before, the ones queued behind the others waited one timeout
 * after another); a call whose thread's cancel token fires ends at once
 * with EINTR, whether it waits for a reply, for a reconnect or for a
 * socket; fire_after ends it then. Once an outage lasted a whole bound,
 * calls queued one behind the other fail at once, and a call after a quiet
 * moment tries again and finds marud back. And the outcome of a state change
 * whose reply is lost: a PUBLISH marud executed but whose reply never came
 * on that socket is asked again on a fresh one within the budget and
 * answered (0), and one whose reply was lost to a marud restart is asked
 * again in the new session: 0 when marud has it published, -ESTALE when
 * not. Real: the sockets, the threads, the clocks; the marud is the fake.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_priv.h"
#include "fake_marud.h"
#include "frame.h"
#include "transport.h"

#define TMO	600	/* timeout_ms of the clients here */
#define SLACK	250	/* scheduling on a busy 2-CPU machine */

static long now_ms_(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* ---- a marud that takes requests and never answers them ---- */

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int release;
} hang = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };

static void hang_until_released(void)
{
	pthread_mutex_lock(&hang.mu);
	while (!hang.release)
		pthread_cond_wait(&hang.cond, &hang.mu);
	pthread_mutex_unlock(&hang.mu);
}

static void hang_reset(int release)
{
	pthread_mutex_lock(&hang.mu);
	hang.release = release;
	pthread_cond_broadcast(&hang.cond);
	pthread_mutex_unlock(&hang.mu);
}

static int silent(struct fake_req *q)
{
	if (q->h.op != OP_STATFS)
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	hang_until_released();
	return -1;
}

struct timed {
	struct maru_client *c;
	struct maru_cancel *tok;
	int rc;
	long took;
};

static void *timed_statfs(void *arg)
{
	struct timed *t = arg;
	struct maru_statfs st;
	long t0 = now_ms_();

	maru_cancel_bind(t->tok);
	t->rc = maru_statfs(t->c, &st);
	t->took = now_ms_() - t0;
	maru_cancel_bind(NULL);
	return NULL;
}

static void nine_at_once(struct maru_client *c)
{
	struct timed t[9];
	pthread_t th[9];
	int i;

	for (i = 0; i < 9; i++) {
		t[i] = (struct timed){ .c = c };
		assert_int_equal(pthread_create(&th[i], NULL, timed_statfs, &t[i]), 0);
	}
	for (i = 0; i < 9; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].rc, -ETIMEDOUT);
		assert_true(t[i].took >= TMO - 50);
		if (t[i].took >= TMO + SLACK)
			fail_msg("call %d took %ld ms, timeout_ms %d", i, t[i].took, TMO);
	}
}

/* Replies never come: each of nine calls on four sockets ends by its deadline. */
static void test_nine_calls_hung_replies(void **state)
{
	struct maru_client *c;
	struct fake_marud f;

	(void)state;
	hang_reset(0);
	fake_start(&f, silent, NULL);
	c = fake_client(&f, TMO, 4, NULL, 0);
	nine_at_once(c);
	hang_reset(1);
	maru_client_free(c);
	fake_stop(&f);
}

/* ---- every call kind at once, none answered ---- */

static int hang_all(struct fake_req *q)
{
	if (q->h.op == OP_PING)
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	hang_until_released();
	return -1;
}

static int no_entry(void *arg, const struct maru_dirent *d)
{
	return 0;
}

struct kind {
	struct maru_client *c;
	int which, rc;
	long took;
};

static void *one_kind(void *arg)
{
	struct kind *k = arg;
	struct maru_attr a;
	struct maru_file *f = NULL;
	struct maru_statfs st;
	uint8_t ex;
	const char *names[1] = { "x" };
	long t0 = now_ms_();

	switch (k->which) {
	case 0: k->rc = maru_lookup(k->c, MARU_ROOT_ID, "x", &a); break;
	case 1: k->rc = maru_getattr(k->c, MARU_ROOT_ID, &a); break;
	case 2: k->rc = maru_mkdir(k->c, MARU_ROOT_ID, "d", 0755, 0, 0, &a); break;
	case 3: k->rc = maru_rmdir(k->c, MARU_ROOT_ID, "d"); break;
	case 4: k->rc = maru_unlink(k->c, MARU_ROOT_ID, "x"); break;
	case 5: k->rc = maru_rename(k->c, MARU_ROOT_ID, "x", MARU_ROOT_ID, "y", 0); break;
	case 6: k->rc = maru_readdir(k->c, MARU_ROOT_ID, 0, no_entry, NULL); break;
	case 7: k->rc = maru_exists(k->c, MARU_ROOT_ID, names, 1, &ex); break;
	case 8: k->rc = maru_statfs(k->c, &st); break;
	case 9: k->rc = maru_file_create(k->c, MARU_ROOT_ID, "n", 0644, 0, 0, 0, 0, &f); break;
	case 10: k->rc = maru_file_open(k->c, MARU_ROOT_ID, "x", &f); break;
	case 11: k->rc = maru_symlink(k->c, MARU_ROOT_ID, "s", "t", 0, 0, &a); break;
	}
	k->took = now_ms_() - t0;
	return NULL;
}

#define KINDS	12

/* Twelve kinds of call at once, on four sockets, none answered: each by its deadline. */
static void test_every_kind_bounded(void **state)
{
	struct kind k[KINDS];
	pthread_t th[KINDS];
	struct maru_client *c;
	struct fake_marud f;
	int i;

	(void)state;
	hang_reset(0);
	fake_start(&f, hang_all, NULL);
	c = fake_client(&f, TMO, 4, NULL, 0);
	for (i = 0; i < KINDS; i++) {
		k[i] = (struct kind){ .c = c, .which = i };
		assert_int_equal(pthread_create(&th[i], NULL, one_kind, &k[i]), 0);
	}
	for (i = 0; i < KINDS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(k[i].rc, -ETIMEDOUT);
		if (k[i].took >= TMO + SLACK || k[i].took < TMO - 50)
			fail_msg("call kind %d took %ld ms, timeout_ms %d", i, k[i].took, TMO);
	}
	hang_reset(1);
	maru_client_free(c);
	fake_stop(&f);
}

/* HELLO never answered: eight wait for hello_lock, and end by their deadline. */
static void test_nine_calls_hung_hello(void **state)
{
	struct maru_client *c;
	struct fake_marud f;

	(void)state;
	fake_start(&f, NULL, NULL);
	c = fake_client(&f, TMO, 4, NULL, 0);
	pthread_mutex_lock(&f.mu);
	f.hello_delay_ms = 1500;
	pthread_mutex_unlock(&f.mu);
	fake_drop(&f);
	nine_at_once(c);
	maru_client_free(c);
	fake_stop(&f);
}

/*
 * An outage that lasted a whole timeout_ms: calls queued one behind the
 * other (as the kernel queues the lookups of one directory) fail at once;
 * one after a quiet moment tries marud again and ends the outage.
 */
static void test_outage_fails_fast(void **state)
{
	struct maru_statfs st;
	struct maru_client *c;
	struct fake_marud f;
	long t0, took;
	int i, rc;

	(void)state;
	fake_start(&f, NULL, NULL);
	c = fake_client(&f, TMO, 2, NULL, 0);
	pthread_mutex_lock(&f.mu);
	f.hello_status = -EAGAIN;	/* marud refuses: an outage */
	pthread_mutex_unlock(&f.mu);
	fake_drop(&f);
	t0 = now_ms_();
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	assert_true(now_ms_() - t0 >= TMO - 50);
	t0 = now_ms_();
	for (i = 0; i < 9; i++)
		assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	assert_true(now_ms_() - t0 < 100);
	/* after a quiet moment a call tries marud again, its whole budget */
	usleep(50000);
	t0 = now_ms_();
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	assert_true(now_ms_() - t0 >= TMO - 50);
	/* marud back: the first call after a quiet moment finds it */
	pthread_mutex_lock(&f.mu);
	f.hello_status = 0;
	pthread_mutex_unlock(&f.mu);
	usleep(50000);
	t0 = now_ms_();
	rc = maru_statfs(c, &st);
	took = now_ms_() - t0;
	assert_int_equal(rc, 0);
	assert_true(took < SLACK);
	assert_int_equal(maru_statfs(c, &st), 0);
	maru_client_free(c);
	fake_stop(&f);
}

/* ---- cancel ---- */

static void cancelled_at_once(struct maru_client *c, int after_ms)
{
	struct timed t = { .c = c };
	pthread_t th;

	assert_int_equal(maru_cancel_new(&t.tok), 0);
	assert_int_equal(pthread_create(&th, NULL, timed_statfs, &t), 0);
	if (after_ms) {
		maru_cancel_fire_after(t.tok, (unsigned int)after_ms);
	} else {
		usleep(150000);
		maru_cancel_fire(t.tok);
	}
	pthread_join(th, NULL);
	assert_int_equal(t.rc, -EINTR);
	assert_true(t.took >= 140);
	assert_true(t.took < 150 + SLACK);
	assert_true(maru_cancel_fired(t.tok));
	maru_cancel_reset(t.tok);
	assert_false(maru_cancel_fired(t.tok));
	maru_cancel_free(t.tok);
}

static void test_cancel(void **state)
{
	struct maru_client *c;
	struct fake_marud f;
	struct maru_statfs st;

	(void)state;
	hang_reset(0);
	fake_start(&f, silent, NULL);
	c = fake_client(&f, 1500, 1, NULL, 0);
	cancelled_at_once(c, 0);	/* waiting for the reply */
	cancelled_at_once(c, 150);	/* the same, fired by time */
	hang_reset(1);
	fake_stop(&f);
	/* marud gone: waiting between retries */
	cancelled_at_once(c, 0);
	assert_true(atomic_load(&c->st.cancels) >= 3);
	/* a thread with no token, or a token not fired, is not concerned */
	assert_int_equal(maru_statfs(c, &st), -ETIMEDOUT);
	maru_client_free(c);
}

static void test_cancel_in_hello(void **state)
{
	struct maru_client *c;
	struct fake_marud f;

	(void)state;
	fake_start(&f, NULL, NULL);
	c = fake_client(&f, 1500, 1, NULL, 0);
	pthread_mutex_lock(&f.mu);
	f.hello_delay_ms = 1500;
	pthread_mutex_unlock(&f.mu);
	fake_drop(&f);
	cancelled_at_once(c, 0);
	pthread_mutex_lock(&f.mu);
	f.hello_delay_ms = 0;
	pthread_mutex_unlock(&f.mu);
	maru_client_free(c);
	fake_stop(&f);
}

/* ---- a lost PUBLISH reply ---- */

struct pubs {
	pthread_mutex_t mu;
	int seen, restart;
	uint64_t reqid[4];
	int32_t asked_again_status;	/* the answer in a new generation */
};

static int publish_reply(struct fake_req *q, uint64_t ino)
{
	struct proto_attr a = { .ino = ino, .size = 10, .mode = 0100644, .nlink = 1 };

	return fake_reply(q, 0, &a, sizeof(a), NULL, 0) ? -1 : 0;
}

static int lose_publish(struct fake_req *q)
{
	struct pubs *p = q->f->arg;
	struct proto_publish_req r;
	int n;

	if (q->h.op != OP_PUBLISH)
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	memcpy(&r, q->body, sizeof(r));
	pthread_mutex_lock(&p->mu);
	n = p->seen++;
	if (n < 4)
		p->reqid[n] = q->h.reqid;
	pthread_mutex_unlock(&p->mu);
	if (n == 0 && p->restart) {
		/* executed, then marud dies before it answers */
		fake_restart(q->f);
		return -1;
	}
	if (n == 0) {
		/* executed; the reply never comes on this socket (a cut link) */
		hang_until_released();
		return -1;
	}
	if (p->restart && p->asked_again_status)
		return fake_reply(q, p->asked_again_status, NULL, 0, NULL, 0) ? -1 : 0;
	return publish_reply(q, r.ino);
}

static int publish(struct maru_client *c, uint64_t ino, long *took)
{
	struct proto_publish_req q = { .ino = ino, .size = 10 };
	struct req r = { .op = OP_PUBLISH, .p1 = &q, .n1 = sizeof(q) };
	long t0 = now_ms_();
	int rc;

	rc = transport_call(c, &r);
	*took = now_ms_() - t0;
	if (rc == 0) {
		assert_int_equal(r.rlen, sizeof(struct proto_attr));
		assert_int_equal(((struct proto_attr *)r.rep)->ino, ino);
	}
	frame_req_done(&r);
	return rc;
}

static void test_publish_reply_lost(void **state)
{
	struct pubs p = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct maru_client *c;
	struct fake_marud f;
	long took;

	(void)state;
	hang_reset(0);
	fake_start(&f, lose_publish, &p);
	c = fake_client(&f, 1000, 2, NULL, 0);
	/* the resend, same id, on a fresh socket, within the budget */
	assert_int_equal(publish(c, 77, &took), 0);
	assert_int_equal(p.seen, 2);
	assert_int_equal(p.reqid[0], p.reqid[1]);
	assert_true(took >= 700 && took < 1000);
	hang_reset(1);
	maru_client_free(c);
	fake_stop(&f);
}

static void test_publish_reply_lost_to_restart(void **state)
{
	struct pubs p = { .mu = PTHREAD_MUTEX_INITIALIZER, .restart = 1 };
	struct maru_client *c;
	struct fake_marud f;
	long took;

	(void)state;
	fake_start(&f, lose_publish, &p);
	c = fake_client(&f, 2000, 2, NULL, 0);
	/* marud has it published: 0, though the handle's generation is gone */
	assert_int_equal(publish(c, 78, &took), 0);
	assert_int_equal(p.seen, 2);	/* the resend of the old id got ESTALE */
	assert_int_not_equal(p.reqid[1], p.reqid[0]);
	assert_true(took < 2000);
	assert_int_equal(c->s.generation, FAKE_GEN + 1);
	/* marud does not have it: the caller learns the restart */
	pthread_mutex_lock(&p.mu);
	p.seen = 0;
	p.asked_again_status = -EPERM;
	pthread_mutex_unlock(&p.mu);
	assert_int_equal(publish(c, 79, &took), -ESTALE);
	assert_int_equal(p.seen, 2);
	maru_client_free(c);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nine_calls_hung_replies),
		cmocka_unit_test(test_nine_calls_hung_hello),
		cmocka_unit_test(test_every_kind_bounded),
		cmocka_unit_test(test_outage_fails_fast),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_cancel_in_hello),
		cmocka_unit_test(test_publish_reply_lost),
		cmocka_unit_test(test_publish_reply_lost_to_restart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

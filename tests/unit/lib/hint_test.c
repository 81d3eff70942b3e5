// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/hint_test.c: maru_hint() and maru_hint_actions()
 * (lib/hint.c) against the fake marud, whose HELLO advertises the actions
 * the test sets and whose handler decodes every HINTV: the actions are
 * HELLO's (none without a client); a bad action, a missing or too long
 * request id, ranges where none belong or none where some do are refused
 * before anything is sent; an action the extension does not take is
 * -EOPNOTSUPP, unsent; a hint goes as one HINTV with the request id
 * zero-padded to 8 bytes and the ranges as given; more than
 * MARU_HINT_MAX_RANGES ranges go as several messages in order; marud's
 * refusal is the caller's answer and stops the rest.
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

#include <cmocka.h>

#include "fake_marud.h"
#include "maru/libmaru.h"

#define MSGS 8

/* What the fake marud saw of each HINTV. */
struct seen {
	uint32_t action, count;
	char req[MARU_HINT_REQUEST_MAX + 1];
	int pad_zero;
	struct proto_hint_range first, last;
};

static struct {
	struct seen m[MSGS];
	int n;
	int32_t status;	/* the answer to every HINTV */
} rec;

static int hint_handler(struct fake_req *q)
{
	struct proto_hintv_req h;
	struct seen *s;
	size_t padded, i;

	if (q->h.op != OP_HINTV)
		return fake_reply(q, -ENOSYS, NULL, 0, NULL, 0) ? -1 : 0;
	memcpy(&h, q->body, sizeof(h));
	padded = (h.reqlen + 7u) & ~7u;
	pthread_mutex_lock(&q->f->mu);
	if (rec.n < MSGS && q->h.len == sizeof(h) + padded + h.count * sizeof(s->first)) {
		s = &rec.m[rec.n++];
		s->action = h.action;
		s->count = h.count;
		memcpy(s->req, q->body + sizeof(h), h.reqlen);
		s->req[h.reqlen] = '\0';
		s->pad_zero = 1;
		for (i = h.reqlen; i < padded; i++)
			s->pad_zero &= q->body[sizeof(h) + i] == 0;
		if (h.count) {
			memcpy(&s->first, q->body + sizeof(h) + padded, sizeof(s->first));
			memcpy(&s->last, q->body + q->h.len - sizeof(s->last), sizeof(s->last));
		}
	}
	pthread_mutex_unlock(&q->f->mu);
	return fake_reply(q, rec.status, NULL, 0, NULL, 0) ? -1 : 0;
}

static struct fake_marud f;
static struct maru_client *c;

static int setup(void **state)
{
	memset(&rec, 0, sizeof(rec));
	fake_start(&f, hint_handler, NULL);
	f.hint_actions = 1u << MARU_HINT_READ | 1u << MARU_HINT_READ_END |
			 1u << MARU_HINT_WRITE;
	c = fake_client(&f, 2000, 1, NULL, 0);
	return c ? 0 : -1;
}

static int teardown(void **state)
{
	maru_client_free(c);
	fake_stop(&f);
	return 0;
}

static void test_refused_before_sending(void **state)
{
	static char long_id[MARU_HINT_REQUEST_MAX + 2];
	struct maru_hint_range r = { 7, 0, 0 };

	memset(long_id, 'x', sizeof(long_id) - 1);
	assert_int_equal(maru_hint_actions(NULL), 0);
	assert_int_equal(maru_hint(NULL, MARU_HINT_READ, "r", &r, 1), -EINVAL);
	assert_int_equal(maru_hint(c, 0, "r", &r, 1), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_WRITE + 1, "r", &r, 1), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_READ, NULL, &r, 1), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_READ, "", &r, 1), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_READ, long_id, &r, 1), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_READ, "r", &r, 0), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_READ, "r", NULL, 1), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_READ_END, "r", &r, 1), -EINVAL);
	assert_int_equal(maru_hint(c, MARU_HINT_PROMOTE, "r", &r, 1), -EINVAL);
	/* a well-formed hint of an action marud's extension does not take */
	assert_int_equal(maru_hint(c, MARU_HINT_PROMOTE, "r", NULL, 0), -EOPNOTSUPP);
	assert_int_equal(fake_ops(&f, OP_HINTV), 0);
}

static void test_one_message(void **state)
{
	struct maru_hint_range r[2] = { { 11, 4096, 100 }, { 12, 0, 0 } };
	char id[MARU_HINT_REQUEST_MAX + 1];

	assert_int_equal(maru_hint_actions(c), f.hint_actions);
	assert_int_equal(maru_hint(c, MARU_HINT_READ, "r17", r, 2), 0);
	assert_int_equal(rec.n, 1);
	assert_int_equal(rec.m[0].action, MARU_HINT_READ);
	assert_int_equal(rec.m[0].count, 2);
	assert_string_equal(rec.m[0].req, "r17");
	assert_true(rec.m[0].pad_zero);
	assert_int_equal(rec.m[0].first.ino, 11);
	assert_int_equal(rec.m[0].first.off, 4096);
	assert_int_equal(rec.m[0].first.len, 100);
	assert_int_equal(rec.m[0].last.ino, 12);
	/* read_end: no ranges; write: no request id needed; 63 bytes: fine */
	assert_int_equal(maru_hint(c, MARU_HINT_READ_END, "r17", NULL, 0), 0);
	assert_int_equal(maru_hint(c, MARU_HINT_WRITE, NULL, r, 1), 0);
	memset(id, 'i', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	assert_int_equal(maru_hint(c, MARU_HINT_READ, id, r, 1), 0);
	assert_int_equal(rec.n, 4);
	assert_int_equal(rec.m[1].action, MARU_HINT_READ_END);
	assert_int_equal(rec.m[1].count, 0);
	assert_string_equal(rec.m[2].req, "");
	assert_int_equal(rec.m[2].count, 1);
	assert_string_equal(rec.m[3].req, id);
}

static void test_split_and_refusal(void **state)
{
	size_t n = MARU_HINT_MAX_RANGES + 5, i;
	struct maru_hint_range *r = calloc(n, sizeof(*r));

	assert_non_null(r);
	for (i = 0; i < n; i++)
		r[i].ino = 1000 + i;
	assert_int_equal(maru_hint(c, MARU_HINT_READ, "big", r, n), 0);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.m[0].count, MARU_HINT_MAX_RANGES);
	assert_int_equal(rec.m[0].first.ino, 1000);
	assert_int_equal(rec.m[0].last.ino, 1000 + MARU_HINT_MAX_RANGES - 1);
	assert_int_equal(rec.m[1].count, 5);
	assert_int_equal(rec.m[1].first.ino, 1000 + MARU_HINT_MAX_RANGES);
	assert_string_equal(rec.m[1].req, "big");
	/* marud refuses: the caller hears it, and nothing more is sent */
	rec.status = -EPERM;
	assert_int_equal(maru_hint(c, MARU_HINT_READ, "big", r, n), -EPERM);
	assert_int_equal(rec.n, 3);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refused_before_sending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_and_refusal, setup, teardown),
	};

	return cmocka_run_group_tests_name("lib/hint", tests, NULL, NULL);
}

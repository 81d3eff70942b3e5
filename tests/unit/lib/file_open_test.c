/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/file_open_test.c: lib/file_open.c, the four calls that
 * open a handle. Each refuses bad arguments (no client, no out, unknown
 * flags, no id, a bad name) with nothing sent; each sends one request
 * whose fields are the caller's (create: parent, name, S_IFREG and the
 * permission bits of mode only, uid, gid, flags as the wire's, size_hint;
 * rewrite: the version's id, mode/uid/gid 0 so marud keeps them; open: by
 * parent and name, or by id); a refusal comes back as is with *out left
 * alone; an answer is a handle of that version (pending after create and
 * rewrite). Real: the client, a Unix socket, the wire. Emulated: marud
 * (the fake store, with a handler that keeps each request's body).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "client_priv.h"
#include "fake_store.h"

struct fx {
	struct fake_marud f;
	struct store s;
	struct maru_client *c;
	pthread_mutex_t mu;
	uint16_t op;		/* the last CREATE or OPEN */
	uint8_t body[512];
	uint32_t len;
	int32_t refuse;		/* != 0: answer CREATE/OPEN with it */
};

static int handler(struct fake_req *q)
{
	struct fx *x = (struct fx *)((char *)q->f - offsetof(struct fx, f));
	int32_t refuse;

	if (q->h.op == OP_CREATE || q->h.op == OP_OPEN) {
		pthread_mutex_lock(&x->mu);
		x->op = q->h.op;
		x->len = q->h.len < sizeof(x->body) ? q->h.len : sizeof(x->body);
		memcpy(x->body, q->body, x->len);
		refuse = x->refuse;
		pthread_mutex_unlock(&x->mu);
		if (refuse)
			return fake_reply(q, refuse, NULL, 0, NULL, 0) ? -1 : 0;
	}
	return store_handler(q);
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	pthread_mutex_init(&x->mu, NULL);
	store_init(&x->s);
	fake_start(&x->f, handler, &x->s);
	x->c = fake_client(&x->f, 2000, 2, NULL, 0);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	maru_client_free(x->c);
	fake_stop(&x->f);
	store_free(&x->s);
	pthread_mutex_destroy(&x->mu);
	free(x);
	return 0;
}

static unsigned int sent(struct fx *x)
{
	return fake_ops(&x->f, OP_CREATE) + fake_ops(&x->f, OP_OPEN);
}

static void test_bad_arguments(void **state)
{
	struct fx *x = *state;
	struct maru_file *h = NULL;
	char longname[PROTO_NAME_MAX + 2];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(maru_file_create(NULL, 1, "n", 0644, 0, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, "n", 0644, 0, 0, 0, 0, NULL), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, "n", 0644, 0, 0, 4, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, NULL, 0644, 0, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, "", 0644, 0, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, ".", 0644, 0, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, "a/b", 0644, 0, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, longname, 0644, 0, 0, 0, 0, &h),
			 -ENAMETOOLONG);
	assert_int_equal(maru_file_rewrite(NULL, 5, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_rewrite(x->c, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_rewrite(x->c, 5, 0, 0, NULL), -EINVAL);
	assert_int_equal(maru_file_rewrite(x->c, 5, 0x80, 0, &h), -EINVAL);
	assert_int_equal(maru_file_open(NULL, 1, "n", &h), -EINVAL);
	assert_int_equal(maru_file_open(x->c, 1, "n", NULL), -EINVAL);
	assert_int_equal(maru_file_open(x->c, 1, "..", &h), -EINVAL);
	assert_int_equal(maru_file_open(x->c, 1, longname, &h), -ENAMETOOLONG);
	assert_int_equal(maru_file_open_ino(NULL, 5, &h), -EINVAL);
	assert_int_equal(maru_file_open_ino(x->c, 0, &h), -EINVAL);
	assert_int_equal(maru_file_open_ino(x->c, 5, NULL), -EINVAL);
	assert_null(h);
	assert_int_equal(sent(x), 0);
}

static void test_create_request(void **state)
{
	struct fx *x = *state;
	struct proto_create_req q;
	struct maru_file *h = NULL;
	char name[PROTO_NAME_MAX + 1];

	/* type bits of mode are not the caller's: a regular file always */
	assert_int_equal(maru_file_create(x->c, 7, "chunk-0", S_IFDIR | 04755, 11, 22,
					  MARU_CREATE_EXCL | MARU_CREATE_COPY, 1u << 20, &h), 0);
	assert_non_null(h);
	assert_int_equal(x->op, OP_CREATE);
	assert_int_equal(x->len, sizeof(q) + 7);
	memcpy(&q, x->body, sizeof(q));
	assert_int_equal(q.parent, 7);
	assert_int_equal(q.from_ino, 0);
	assert_int_equal(q.size_hint, 1u << 20);
	assert_int_equal(q.flags, CREATE_EXCL | CREATE_COPY);
	assert_int_equal(q.mode, S_IFREG | 04755);
	assert_int_equal(q.uid, 11);
	assert_int_equal(q.gid, 22);
	assert_int_equal(q.namelen, 7);
	assert_memory_equal(x->body + sizeof(q), "chunk-0", 7);
	assert_int_equal(maru_file_ino(h), STORE_INO);
	assert_int_equal(maru_file_is_pending(h), 1);
	maru_file_close(h);
	/* no flags: none on the wire; the longest name is whole */
	memset(name, 'n', PROTO_NAME_MAX);
	name[PROTO_NAME_MAX] = '\0';
	assert_int_equal(maru_file_create(x->c, 1, name, 0600, 0, 0, 0, 0, &h), 0);
	memcpy(&q, x->body, sizeof(q));
	assert_int_equal(q.flags, 0);
	assert_int_equal(q.namelen, PROTO_NAME_MAX);
	assert_int_equal(q.mode, S_IFREG | 0600);
	maru_file_close(h);
}

static void test_rewrite_request(void **state)
{
	struct fx *x = *state;
	struct proto_create_req q;
	struct maru_file *h = NULL;

	assert_int_equal(maru_file_rewrite(x->c, STORE_INO, MARU_CREATE_COPY, 4096, &h), 0);
	assert_int_equal(x->op, OP_CREATE);
	assert_int_equal(x->len, sizeof(q));
	memcpy(&q, x->body, sizeof(q));
	assert_int_equal(q.from_ino, STORE_INO);
	assert_int_equal(q.parent, 0);
	assert_int_equal(q.flags, CREATE_COPY);
	assert_int_equal(q.size_hint, 4096);
	/* marud keeps the rewritten version's mode and owner */
	assert_int_equal(q.mode, 0);
	assert_int_equal(q.uid, 0);
	assert_int_equal(q.gid, 0);
	assert_int_equal(q.namelen, 0);
	assert_int_equal(maru_file_is_pending(h), 1);
	maru_file_close(h);
}

static void test_open_requests(void **state)
{
	struct fx *x = *state;
	struct proto_open_req q;
	struct maru_file *h = NULL;

	pthread_mutex_lock(&x->s.mu);
	x->s.state = MARU_STATE_PUBLISHED;
	pthread_mutex_unlock(&x->s.mu);
	assert_int_equal(maru_file_open(x->c, 9, "by-name", &h), 0);
	assert_int_equal(x->op, OP_OPEN);
	assert_int_equal(x->len, sizeof(q) + 7);
	memcpy(&q, x->body, sizeof(q));
	assert_int_equal(q.ino, 0);
	assert_int_equal(q.parent, 9);
	assert_int_equal(q.namelen, 7);
	assert_memory_equal(x->body + sizeof(q), "by-name", 7);
	assert_int_equal(maru_file_ino(h), STORE_INO);
	assert_int_equal(maru_file_is_pending(h), 0);
	maru_file_close(h);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	assert_int_equal(x->len, sizeof(q));
	memcpy(&q, x->body, sizeof(q));
	assert_int_equal(q.ino, STORE_INO);
	assert_int_equal(q.parent, 0);
	assert_int_equal(q.namelen, 0);
	maru_file_close(h);
}

static void refuse(struct fx *x, int32_t status)
{
	pthread_mutex_lock(&x->mu);
	x->refuse = status;
	pthread_mutex_unlock(&x->mu);
}

/* marud's refusal is the caller's answer; no handle. */
static void test_refused(void **state)
{
	struct fx *x = *state;
	struct maru_file *h = NULL;

	refuse(x, -ENOENT);
	assert_int_equal(maru_file_open(x->c, 1, "none", &h), -ENOENT);
	assert_int_equal(maru_file_open_ino(x->c, 77, &h), -ENOENT);
	refuse(x, -EEXIST);
	assert_int_equal(maru_file_create(x->c, 1, "n", 0644, 0, 0, MARU_CREATE_EXCL, 0, &h),
			 -EEXIST);
	refuse(x, -ENOSPC);
	assert_int_equal(maru_file_rewrite(x->c, STORE_INO, 0, 1ull << 40, &h), -ENOSPC);
	assert_null(h);
	refuse(x, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	};

	return cmocka_run_group_tests_name("file_open", tests, NULL, NULL);
}

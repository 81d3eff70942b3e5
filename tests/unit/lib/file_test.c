/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/file_test.c: struct maru_file (lib/file.c) over tcp
 * against the fake marud's one-file store: room is reserved before any byte
 * moves and grows geometrically, -ENOSPC leaves nothing written (after one
 * smaller retry), publish makes the handle read-only and close then
 * releases rather than abandons, a complete file never reads short even
 * when marud answers in pieces, a new generation makes every handle
 * -ESTALE without a request, a reply with extents outside the pool is
 * refused, and what a data path keeps on a handle is dropped through its
 * forget when the handle publishes (marud ends the rights then), once.
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
#include "dp/datapath.h"
#include "fake_store.h"

#define GROW_MIN	(64u * 1024)

struct fx {
	struct fake_marud f;
	struct store s;
	struct maru_client *c;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	store_init(&x->s);
	fake_start(&x->f, store_handler, &x->s);
	x->c = fake_client(&x->f, 2000, 2, NULL, 0);
	/* the in-line path: each call's requests in the order the calls
	 * make them (streams send them later: dp/tcp_stream_test.c) */
	x->c->opts.stream_bytes = 1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	maru_client_free(x->c);
	fake_stop(&x->f);
	store_free(&x->s);
	free(x);
	return 0;
}

static void fill(uint8_t *b, size_t n, uint64_t off)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = store_byte(off + i);
}

static void assert_calls(struct fx *x, const char *want)
{
	char got[512];

	store_calls(&x->s, got, sizeof(got));
	assert_string_equal(got, want);
}

static struct maru_file *create(struct fx *x)
{
	struct maru_file *h = NULL;

	assert_int_equal(maru_file_create(x->c, 1, "chunk", 0644, 0, 0, 0, 0, &h), 0);
	assert_true(maru_file_is_pending(h));
	assert_int_equal(maru_file_ino(h), STORE_INO);
	return h;
}

static void test_reserve_before_write(void **state)
{
	struct fx *x = *state;
	static uint8_t buf[70000];
	struct maru_file *h = create(x);

	fill(buf, sizeof(buf), 0);
	assert_int_equal(maru_file_pwrite(h, buf, 100, 0), 100);
	assert_calls(x, "CRW");
	assert_int_equal(x->s.reserves[0], GROW_MIN);
	/* inside the reservation: no round trip for room */
	assert_int_equal(maru_file_pwrite(h, buf + 100, 1000, 100), 1000);
	assert_calls(x, "CRWW");
	/* past it: a bigger reservation, since that covers the need */
	assert_int_equal(maru_file_pwrite(h, buf, 70000, 60000), 70000);
	assert_calls(x, "CRWWRW");
	/* eightfold over tcp: each RESERVE is a round trip over the network */
	assert_int_equal(x->s.reserves[1], 8 * GROW_MIN);
	assert_int_equal(maru_file_size(h), 130000);
	assert_false(x->s.write_beyond);
	/* an explicit reserve only asks for more */
	assert_int_equal(maru_file_reserve(h, 1000), 0);
	assert_calls(x, "CRWWRW");
	assert_int_equal(maru_file_reserve(h, 600000), 0);
	assert_calls(x, "CRWWRWR");
	maru_file_close(h);
	assert_calls(x, "CRWWRWRA");	/* never published: abandoned */
}

static void test_enospc_writes_nothing(void **state)
{
	struct fx *x = *state;
	static uint8_t buf[200000];
	struct maru_file *h = create(x);

	x->s.enospc_above = 100000;
	assert_int_equal(maru_file_pwrite(h, buf, sizeof(buf), 0), -ENOSPC);
	assert_calls(x, "CR");			/* refused: no WRITE at all */
	assert_int_equal(maru_file_size(h), 0);
	assert_int_equal(maru_file_pwrite(h, buf, 90000, 0), 90000);
	assert_calls(x, "CRRW");
	/* growing is refused: the exact need is asked for next */
	assert_int_equal(maru_file_pwrite(h, buf, 5000, 90000), 5000);
	assert_calls(x, "CRRWRRW");
	assert_int_equal(x->s.reserves[2], 8 * 90000);
	assert_int_equal(x->s.reserves[3], 95000);
	assert_int_equal(maru_file_pwrite(h, buf, 10000, 95000), -ENOSPC);
	assert_calls(x, "CRRWRRWRR");
	assert_int_equal(maru_file_size(h), 95000);
	assert_false(x->s.write_beyond);
	maru_file_close(h);
}

static void test_publish_then_read_only(void **state)
{
	struct fx *x = *state;
	uint8_t buf[5000], back[5000];
	struct maru_attr a;
	struct maru_file *h = create(x);

	fill(buf, sizeof(buf), 0);
	assert_int_equal(maru_file_pwrite(h, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(maru_file_publish(h), 0);
	assert_false(maru_file_is_pending(h));
	assert_int_equal(maru_file_pwrite(h, buf, 1, 0), -EBADF);
	assert_int_equal(maru_file_publish(h), -EBADF);
	assert_int_equal(maru_file_truncate(h, 0), -EBADF);
	assert_int_equal(maru_file_reserve(h, 1 << 20), -EBADF);
	assert_int_equal(maru_file_sync(h), -EBADF);
	assert_int_equal(maru_file_pread(h, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(maru_file_attr(h, &a), 0);	/* a lease: asks marud */
	assert_int_equal(a.size, sizeof(buf));
	assert_int_equal(a.state, MARU_STATE_PUBLISHED);
	assert_calls(x, "CRWPrG");
	maru_file_close(h);
	assert_calls(x, "CRWPrGL");	/* a lease is released, not abandoned */
}

static int forgets;

static void count_forget(struct maru_file *f)
{
	forgets++;
}

static const struct dp_ops keeper = { .kind = MARU_DATA_RDMA, .name = "keeper",
				      .forget = count_forget };

/* A path's state on the handle goes at publish, through that path's forget. */
static void test_forget_on_publish(void **state)
{
	struct fx *x = *state;
	struct maru_file *h = create(x);
	uint8_t buf[100];

	fill(buf, sizeof(buf), 0);
	forgets = 0;
	assert_int_equal(maru_file_pwrite(h, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	h->held = &keeper;
	assert_int_equal(maru_file_publish(h), 0);
	assert_int_equal(forgets, 1);
	assert_null(h->held);
	maru_file_close(h);
	assert_int_equal(forgets, 1);	/* nothing held any more */
	/* a pending handle closed: forgotten too */
	h = create(x);
	h->held = &keeper;
	maru_file_close(h);
	assert_int_equal(forgets, 2);
}

/* The directory's attributes ride on the reply when marud sends them. */
static void test_publish_dir(void **state)
{
	struct fx *x = *state;
	struct maru_attr a, d;
	struct maru_file *h = create(x);
	uint8_t buf[100];

	fill(buf, sizeof(buf), 0);
	assert_int_equal(maru_file_pwrite(h, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	memset(&d, 0xff, sizeof(d));
	assert_int_equal(maru_file_publish_dir(h, &d), 0);	/* an older marud: none */
	assert_int_equal(d.ino, 0);
	maru_file_close(h);
	pthread_mutex_lock(&x->s.mu);
	x->s.dir_attr = 1;
	x->s.state = MARU_STATE_PENDING;
	pthread_mutex_unlock(&x->s.mu);
	h = create(x);
	assert_int_equal(maru_file_pwrite(h, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	assert_int_equal(maru_file_publish_dir(h, &d), 0);
	assert_int_equal(d.ino, 1);
	assert_int_equal(d.state, MARU_STATE_DIR);
	assert_int_equal(d.size, 1);
	assert_int_equal(d.mtime.tv_sec, 5);
	assert_int_equal(d.mtime.tv_nsec, 7);
	assert_false(maru_file_is_pending(h));
	assert_int_equal(maru_file_size(h), sizeof(buf));	/* the version's attr, not the dir's */
	assert_int_equal(maru_file_attr(h, &a), 0);
	assert_int_equal(a.ino, STORE_INO);
	maru_file_close(h);
	assert_int_equal(maru_file_publish_dir(NULL, &d), -EINVAL);
}

static void test_no_short_read(void **state)
{
	struct fx *x = *state;
	static uint8_t back[300000];
	struct maru_file *h = NULL;

	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = sizeof(back);
	fill(x->s.data, sizeof(back), 0);
	x->s.read_max = 7000;		/* marud answers in pieces */
	assert_int_equal(maru_file_open(x->c, 1, "chunk", &h), 0);
	assert_false(maru_file_is_pending(h));
	assert_int_equal(maru_file_size(h), sizeof(back));
	assert_int_equal(maru_file_pread(h, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, x->s.data, sizeof(back));
	/* clamped at the end of the version; nothing past it */
	assert_int_equal(maru_file_pread(h, back, 1000, sizeof(back) - 500), 500);
	assert_memory_equal(back, x->s.data + sizeof(back) - 500, 500);
	assert_int_equal(maru_file_pread(h, back, 1000, sizeof(back)), 0);
	assert_int_equal(maru_file_pread(h, back, 1000, sizeof(back) * 2), 0);
	assert_int_equal(maru_file_pread(h, back, 0, 0), 0);
	maru_file_close(h);
}

static void test_estale_after_restart(void **state)
{
	struct fx *x = *state;
	struct maru_file *lease = NULL, *w;
	uint8_t b[16] = { 0 };
	struct maru_attr a;
	char before[512], after[512];

	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = sizeof(b);
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &lease), 0);
	w = create(x);
	fake_restart(&x->f);
	assert_int_equal(maru_file_pread(lease, b, sizeof(b), 0), -ESTALE);
	store_calls(&x->s, before, sizeof(before));
	assert_int_equal(maru_file_pwrite(w, b, sizeof(b), 0), -ESTALE);
	assert_int_equal(maru_file_publish(w), -ESTALE);
	assert_int_equal(maru_file_attr(lease, &a), -ESTALE);
	assert_int_equal(maru_file_extents(lease, NULL, 0), -ESTALE);
	maru_file_close(w);
	maru_file_close(lease);
	/* nothing of the old generation was asked of the new marud */
	store_calls(&x->s, after, sizeof(after));
	assert_string_equal(before, after);
	assert_null(strchr(after, 'W'));
}

static void test_extents(void **state)
{
	struct fx *x = *state;
	struct maru_extent e[4];
	struct maru_file *h = NULL;

	x->s.state = MARU_STATE_PUBLISHED;
	x->s.size = x->s.reserved = 8192;
	x->s.ext[0] = (struct proto_extent){ .off = 4096, .len = 4096 };
	x->s.ext[1] = (struct proto_extent){ .off = 65536, .len = 4096 };
	x->s.next = 2;
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), 0);
	assert_int_equal(maru_file_extents(h, NULL, 0), 2);
	assert_int_equal(maru_file_extents(h, e, 1), 2);	/* count, one copied */
	assert_int_equal(e[0].off, 4096);
	assert_int_equal(maru_file_extents(h, e, 4), 2);
	assert_int_equal(e[1].off, 65536);
	assert_int_equal(e[1].len, 4096);
	maru_file_close(h);
	/* past the end of the pool (1 MiB): the handle is refused */
	x->s.ext[1].off = (1u << 20) - 100;
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), -EIO);
	x->s.ext[1].off = UINT64_MAX - 10;	/* wraps */
	assert_int_equal(maru_file_open_ino(x->c, STORE_INO, &h), -EIO);
}

static void test_truncate_tcp(void **state)
{
	struct fx *x = *state;
	uint8_t buf[100], back[200];
	struct maru_file *h = create(x);
	size_t i;

	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(maru_file_pwrite(h, buf, sizeof(buf), 0), 100);
	assert_int_equal(maru_file_truncate(h, 200), 0);
	assert_int_equal(maru_file_size(h), 200);
	assert_int_equal(maru_file_truncate(h, 50), 0);
	assert_int_equal(maru_file_size(h), 50);
	assert_int_equal(maru_file_truncate(h, 150), 0);
	assert_int_equal(maru_file_pread(h, back, sizeof(back), 0), 150);
	for (i = 0; i < 150; i++)
		assert_int_equal(back[i], i < 50 ? 0xab : 0);
	assert_calls(x, "CRWTTTr");
	maru_file_close(h);
}

static void test_invalid(void **state)
{
	struct fx *x = *state;
	struct maru_file *h = NULL;
	uint8_t b[4];

	assert_int_equal(maru_file_create(x->c, 1, "a/b", 0644, 0, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, "..", 0644, 0, 0, 0, 0, &h), -EINVAL);
	assert_int_equal(maru_file_create(x->c, 1, "ok", 0644, 0, 0, 0x100, 0, &h), -EINVAL);
	assert_int_equal(maru_file_open(x->c, 1, "", &h), -EINVAL);
	assert_int_equal(maru_file_open_ino(x->c, 0, &h), -EINVAL);
	assert_int_equal(maru_file_rewrite(x->c, 0, 0, 0, &h), -EINVAL);
	assert_calls(x, "");		/* none of these reached marud */
	h = create(x);
	assert_int_equal(maru_file_pwrite(h, NULL, 4, 0), -EINVAL);
	assert_int_equal(maru_file_pread(h, NULL, 4, 0), -EINVAL);
	assert_int_equal(maru_file_pwrite(h, b, 4, UINT64_MAX - 1), -EFBIG);
	assert_int_equal(maru_file_pwrite(h, b, 0, 0), 0);
	assert_calls(x, "C");
	maru_file_close(h);
	assert_int_equal(maru_file_publish(NULL), -EINVAL);
	assert_int_equal(maru_file_size(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reserve_before_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enospc_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_publish_then_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_publish_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget_on_publish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_short_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_estale_after_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncate_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
	};

	return cmocka_run_group_tests_name("file", tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/tcp_poison_test.c: a transfer error on a frame written
 * behind (lib/dp/tcp_wb.c), injected with the fail point
 * libmaru.write.reply (lib/common/failpoint.c, armed for its 3rd hit in
 * main before any hit: the table is read once per process, hence a file
 * of its own), poisons the handle: the error it failed with (EREMOTEIO
 * here) comes back from the next write, sync and publish, the version is
 * abandoned and never published, and a line names the version. A second
 * version written on the same client afterwards publishes (the poison is
 * the handle's, not the client's). Emulated: marud (the fake store).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cmocka.h>

#include "client_priv.h"
#include "config.h"
#include "../fake_store.h"

#define PIECE	(128u * 1024)

static void test_injected_error_poisons(void **state)
{
	struct fake_marud f;
	struct store s;
	struct logbook b;
	struct maru_client *c;
	struct maru_file *h;
	static uint8_t buf[2u << 20];
	char calls[512];
	size_t off;
	ssize_t rc = 0;

	(void)state;
	store_init(&s);
	logbook_init(&b);
	fake_start(&f, store_handler, &s);
	c = fake_client(&f, 2000, 2, &b, LOG_INFO);
	assert_int_equal(maru_file_create(c, 1, "w", 0644, 0, 0, 0, 0, &h), 0);
	for (off = 0; off < sizeof(buf) && rc >= 0; off += PIECE)
		rc = maru_file_pwrite(h, buf + off, PIECE, off);
	assert_true(rc == PIECE || rc == -EREMOTEIO);
	assert_int_equal(maru_file_sync(h), -EREMOTEIO);
	assert_int_equal(maru_file_pwrite(h, buf, PIECE, 0), -EREMOTEIO);
	assert_int_equal(maru_file_publish(h), -EREMOTEIO);
	store_calls(&s, calls, sizeof(calls));
	assert_null(strchr(calls, 'P'));
	assert_non_null(strchr(calls, 'A'));
	assert_int_equal(s.state, MARU_STATE_PENDING);
	assert_true(logged(&b, "pending version 100 will not be published", LOG_WARNING));
	assert_true(logged(&b, "pending version 100 abandoned, not published", LOG_WARNING));
	maru_file_close(h);

	/* the next version of the same client is not affected */
	assert_int_equal(maru_file_create(c, 1, "w2", 0644, 0, 0, 0, 0, &h), 0);
	for (off = 0; off < sizeof(buf); off += PIECE)
		assert_int_equal(maru_file_pwrite(h, buf + off, PIECE, off), PIECE);
	assert_int_equal(maru_file_publish(h), 0);
	assert_int_equal(s.state, MARU_STATE_PUBLISHED);
	maru_file_close(h);
	maru_client_free(c);
	fake_stop(&f);
	store_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_injected_error_poisons),
	};

	if (!HAVE_FAILPOINTS) {
		printf("fail points are compiled out (-Dfailpoints=false)\n");
		return 77;
	}
	setenv("MARU_FAILPOINT", "libmaru.write.reply=3*error:121", 1);
	return cmocka_run_group_tests_name("dp/tcp_poison", tests, NULL, NULL);
}

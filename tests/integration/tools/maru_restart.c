/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_restart.c: a libmaru client across a marud
 * restart. Before: store a chunk, hold a lease on it and a pending version
 * with bytes in it, subscribe to events, then create READYFILE and wait for
 * GOFILE (the case restarts marud in between). After: the old handles fail
 * with -ESTALE (never their old bytes), the generation callback ran once
 * with the old and new generations, the event stream starts with
 * MARU_EV_GENERATION, the old name is gone (the new marud starts empty),
 * and new chunks store and read back byte-exact, also over the same memory
 * the old lease pointed at.
 *
 *   usage: maru_restart URI READYFILE GOFILE
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "maru_tool.h"

#define CHUNK (1u << 20)

static atomic_int cb_calls;
static atomic_uint_fast64_t cb_old, cb_new;

static void on_gen(void *arg, uint64_t old_gen, uint64_t new_gen)
{
	cb_old = old_gen;
	cb_new = new_gen;
	atomic_fetch_add(&cb_calls, 1);
}

static void wait_file(const char *path)
{
	struct stat st;
	uint64_t end = tool_mono_ms() + 60000;

	while (stat(path, &st) != 0) {
		CHECK(tool_mono_ms() < end);
		usleep(20000);
	}
}

int main(int argc, char **argv)
{
	struct maru_file *lease, *pend;
	struct maru_pool_info before, after;
	struct maru_events *ev;
	struct maru_event e;
	struct maru_attr a;
	uint8_t *buf = malloc(CHUNK), *back = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, i;
	struct maru_client *c;

	if (argc != 4) {
		fprintf(stderr, "usage: maru_restart URI READYFILE GOFILE\n");
		return 2;
	}
	c = tool_client(argv[1]);
	maru_client_on_generation(c, on_gen, NULL);
	OK(maru_client_pool_info(c, &before));
	tool_fill(buf, CHUNK, 1, 0);
	OK(tool_store(c, MARU_ROOT_ID, "before.bin", buf, CHUNK));
	OK(maru_file_open(c, MARU_ROOT_ID, "before.bin", &lease));
	OK(maru_file_create(c, MARU_ROOT_ID, "pend.bin", 0644, 0, 0, 0, 0, &pend));
	CHECK(OK(maru_file_pwrite(pend, buf, 4096, 0)) == 4096);
	OK(maru_events_open(c, 0, &ev));

	fd = open(argv[2], O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	close(fd);
	wait_file(argv[3]);

	/* the first call after the restart may need to reconnect */
	n = maru_file_pread(lease, buf, CHUNK, 0);
	CHECK(n == -ESTALE);
	FAILS(maru_file_pread(lease, buf, CHUNK, 0), ESTALE);
	FAILS(maru_file_pwrite(pend, buf, 10, 0), ESTALE);
	FAILS(maru_file_publish(pend), ESTALE);
	FAILS(maru_file_attr(lease, &a), ESTALE);
	for (i = 0; i < 200 && atomic_load(&cb_calls) == 0; i++)
		usleep(10000);
	CHECK(atomic_load(&cb_calls) == 1);
	OK(maru_client_pool_info(c, &after));
	CHECK(after.generation != before.generation);
	CHECK(cb_old == before.generation && cb_new == after.generation);
	/* warm restart: the published name is back, whole; the pending one is not */
	OK(tool_load(c, MARU_ROOT_ID, "before.bin", &back, &len));
	CHECK(len == CHUNK && tool_check_fill(back, len, 1, 0));
	free(back);
	back = NULL;
	FAILS(maru_lookup(c, MARU_ROOT_ID, "pend.bin", &a), ENOENT);

	/* new bytes, likely at the old lease's offsets: must read back exactly */
	tool_fill(buf, CHUNK, 2, 0);
	OK(tool_store(c, MARU_ROOT_ID, "before.bin", buf, CHUNK));
	OK(tool_load(c, MARU_ROOT_ID, "before.bin", &back, &len));
	CHECK(len == CHUNK && tool_check_fill(back, len, 2, 0));
	free(back);
	FAILS(maru_file_pread(lease, buf, CHUNK, 0), ESTALE);
	maru_file_close(lease);
	maru_file_close(pend);

	CHECK(OK(maru_events_next(ev, &e, 5000)) == 1);
	CHECK(e.type == MARU_EV_GENERATION);
	CHECK(tool_store(c, MARU_ROOT_ID, "evt.bin", "x", 1) == 0);
	for (i = 0; i < 20; i++) {
		CHECK(OK(maru_events_next(ev, &e, 1000)) == 1);
		/* a replace when an earlier run left evt.bin (warm restart) */
		if ((e.type == MARU_EV_PUBLISH || e.type == MARU_EV_REPLACE) &&
		    !strcmp(e.name, "evt.bin"))
			break;
	}
	CHECK(i < 20);
	maru_events_close(ev);
	CHECK(atomic_load(&cb_calls) == 1);
	maru_client_free(c);
	free(buf);
	printf("maru_restart: ok (generation %llx -> %llx)\n",
	       (unsigned long long)before.generation, (unsigned long long)after.generation);
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/fault_grace.c: a libmaru client whose network to
 * marud is cut (tests/integration/lib/cutproxy.py) while it holds a lease
 * (g-lease.bin, seed 1) and a pending version half written (g-pend.bin,
 * seed 2). Steps are handed over with files in DIR: the tool creates
 * DIR/ready and waits for DIR/go (the case has cut the network by then).
 *
 * within: the case restores the network inside the grace period, while
 *   the tool is already making calls: a write that must grow the pending
 *   version, its publish and reads of the lease all succeed (they wait out
 *   the outage), marud reports the session reclaimed, both chunks verify.
 * beyond: the case keeps the network cut past the grace period and lets
 *   another client reuse the memory; then it creates DIR/go. The tool,
 *   still cut off, reads its lease and writes its pending version: neither
 *   may touch pool memory its session no longer holds (no stale bytes read,
 *   nobody else's bytes overwritten), so both must fail. It creates
 *   DIR/tried, the case restores the network and creates DIR/go2: the old
 *   handles fail with EIO for good, g-pend.bin was never published, and
 *   new chunks work.
 *
 *   usage: fault_grace URI within|beyond DIR
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "chunk.h"
#include "maru_tool.h"

#define SIZE	(4u << 20)

static char dir[4096];

static void step_file(const char *name, int create)
{
	char path[4200];
	struct stat st;
	uint64_t end = tool_mono_ms() + 60000;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (create) {
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		CHECK(fd >= 0);
		close(fd);
		return;
	}
	while (stat(path, &st) != 0) {
		CHECK(tool_mono_ms() < end);
		usleep(10000);
	}
}

/* What a read of the lease returned: 0 if it is the chunk of seed 1. */
static int lease_read(struct maru_file *f, uint8_t *buf, const char *when)
{
	const char *why = "";
	uint64_t seed = 0;
	ssize_t n = maru_file_pread(f, buf, SIZE, 0);

	if (n < 0) {
		printf("%s: lease read: %s\n", when, maru_strerror((int)n));
		return (int)n;
	}
	if (chunk_check(buf, (size_t)n, &seed, &why)) {
		printf("%s: lease read returned a partial version: %s\n", when, why);
		exit(1);
	}
	if (seed != 1) {
		printf("%s: lease read returned STALE bytes of another chunk (seed %llu)\n",
		       when, (unsigned long long)seed);
		exit(1);
	}
	printf("%s: lease read ok\n", when);
	return 0;
}

static void check_chunk(struct maru_client *c, const char *name, uint64_t want)
{
	uint8_t *buf = NULL;
	const char *why = "";
	uint64_t seed = 0;
	size_t len = 0;

	OK(tool_load(c, MARU_ROOT_ID, name, &buf, &len));
	if (chunk_check(buf, len, &seed, &why) || seed != want) {
		printf("%s: not the chunk of seed %llu: %s\n", name,
		       (unsigned long long)want, why);
		exit(1);
	}
	free(buf);
}

static int run_within(struct maru_client *c, struct maru_file *lease,
		      struct maru_file *pend, uint8_t *buf, uint8_t *mine)
{
	/* the pending version holds half: the rest must grow it (a round trip) */
	CHECK(OK(maru_file_pwrite(pend, mine + SIZE / 2, SIZE / 2, SIZE / 2)) == SIZE / 2);
	OK(maru_file_publish(pend));
	maru_file_close(pend);
	CHECK(lease_read(lease, buf, "within") == 0);
	maru_file_close(lease);
	check_chunk(c, "g-pend.bin", 2);
	check_chunk(c, "g-lease.bin", 1);
	printf("within: ok\n");
	return 0;
}

static int run_beyond(struct maru_client *c, struct maru_file *lease,
		      struct maru_file *pend, uint8_t *buf, uint8_t *mine)
{
	struct maru_attr a;
	ssize_t n;

	/* still cut off, session gone: nothing may touch pool memory */
	lease_read(lease, buf, "beyond, cut");
	n = maru_file_pwrite(pend, mine + 4096, 4096, 4096);
	printf("beyond, cut: pending write: %s\n", n < 0 ? maru_strerror((int)n) : "ok");
	CHECK(n < 0);
	fflush(stdout);
	step_file("tried", 1);
	step_file("go2", 0);
	/* reconnected to a new session: the old handles are dead for good */
	FAILS(maru_file_pread(lease, buf, SIZE, 0), EIO);
	FAILS(maru_file_pwrite(pend, mine, 4096, 0), EIO);
	FAILS(maru_file_publish(pend), EIO);
	maru_file_close(pend);
	maru_file_close(lease);
	FAILS(maru_lookup(c, MARU_ROOT_ID, "g-pend.bin", &a), ENOENT);
	OK(tool_store(c, MARU_ROOT_ID, "g-new.bin", mine, SIZE));
	check_chunk(c, "g-new.bin", 2);
	printf("beyond: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	uint8_t *buf = malloc(SIZE), *mine = malloc(SIZE);
	struct maru_file *lease, *pend;
	struct maru_client_opts o;
	struct maru_client *c;

	if (argc != 4 || (strcmp(argv[2], "within") && strcmp(argv[2], "beyond"))) {
		fprintf(stderr, "usage: fault_grace URI within|beyond DIR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(dir, sizeof(dir), "%s", argv[3]);
	CHECK(buf && mine);
	maru_client_opts_init(&o, sizeof(o));
	o.uri = argv[1];
	o.data_path = tool_data_path();
	/* calls made while cut off give up sooner than the default 5 s */
	o.timeout_ms = 3000;
	OK(maru_client_new(&o, &c));
	chunk_make(buf, SIZE, 1);
	OK(tool_store(c, MARU_ROOT_ID, "g-lease.bin", buf, SIZE));
	OK(maru_file_open(c, MARU_ROOT_ID, "g-lease.bin", &lease));
	CHECK(lease_read(lease, buf, "before") == 0);
	chunk_make(mine, SIZE, 2);
	OK(maru_file_create(c, MARU_ROOT_ID, "g-pend.bin", 0644, 0, 0, 0, 0, &pend));
	CHECK(OK(maru_file_pwrite(pend, mine, SIZE / 2, 0)) == SIZE / 2);
	step_file("ready", 1);
	step_file("go", 0);
	if (!strcmp(argv[2], "within"))
		run_within(c, lease, pend, buf, mine);
	else
		run_beyond(c, lease, pend, buf, mine);
	maru_client_free(c);
	free(buf);
	free(mine);
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/fault_race.c: races on one name between clients
 * of one pool (each thread has its own client, so its own session), started
 * together at a barrier every round, with a reader thread checking the name
 * all along. Chunks are self-checking (chunk.h); seeds say who wrote them.
 *
 * writers: two writers replace w.bin at once (create, write in pieces,
 *   publish). Both publishes succeed (a publish rebinds atomically); the
 *   reader only ever sees one whole version of a writer of this or an
 *   earlier round, and afterwards the name holds one of the two, whole.
 * rename: x.bin is published; one client renames it to y.bin while another
 *   unlinks x.bin. Exactly one of them succeeds, the other gets ENOENT;
 *   y.bin exists (whole, with x's bytes) exactly when the rename won, and
 *   x.bin is gone either way.
 * target: x.bin and y.bin are published; one client renames x.bin over
 *   y.bin while another unlinks y.bin. Both succeed, in either order; y.bin
 *   is then missing or holds x's bytes, never y's old ones.
 * Afterwards every name is unlinked and, with every handle closed, the pool
 * is all free again.
 *
 *   usage: fault_race URI writers|rename|target ROUNDS
 */
#include <pthread.h>

#include "chunk.h"
#include "maru_tool.h"

static const char *uri;
static pthread_barrier_t start, done;
static int rounds, mode;
static volatile int stop_reader;
static uint64_t rnd_state = 88172645463325252ULL;

enum { M_WRITERS, M_RENAME, M_TARGET };

struct actor {
	int id;
	struct maru_client *c;
	int result[4096];	/* per round: 0 or -errno */
};

static uint64_t rnd(void)
{
	uint64_t x = __atomic_load_n(&rnd_state, __ATOMIC_RELAXED);

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	__atomic_store_n(&rnd_state, x, __ATOMIC_RELAXED);
	return x;
}

static uint64_t seed_of(int round, int id)
{
	return (uint64_t)round * 10 + (uint64_t)id + 1;
}

/* Publish parent/name as the chunk of seed, written in a few pieces. */
static int put(struct maru_client *c, const char *name, uint64_t seed, size_t size)
{
	uint8_t *buf = malloc(size);
	struct maru_file *f = NULL;
	size_t off = 0;
	int rc;

	CHECK(buf);
	chunk_make(buf, size, seed);
	rc = maru_file_create(c, MARU_ROOT_ID, name, 0644, 0, 0, 0, 0, &f);
	if (rc)
		f = NULL;
	while (!rc && off < size) {
		size_t n = size - off < 65536 ? size - off : 65536;
		ssize_t w = maru_file_pwrite(f, buf + off, n, off);

		rc = w < 0 ? (int)w : 0;
		off += n;
	}
	if (!rc)
		rc = maru_file_publish(f);
	maru_file_close(f);
	free(buf);
	return rc;
}

/* Seed of the whole chunk bound to name, 0 if none; exits on a partial one. */
static uint64_t seed_at(struct maru_client *c, const char *name)
{
	uint8_t *buf = NULL;
	const char *why = "";
	uint64_t seed = 0;
	size_t len = 0;
	int rc;

	rc = tool_load(c, MARU_ROOT_ID, name, &buf, &len);
	if (rc == -ENOENT)
		return 0;
	OK(rc);
	if (chunk_check(buf, len, &seed, &why)) {
		fprintf(stderr, "fault_race: %s: %s (%zu bytes)\n", name, why, len);
		exit(1);
	}
	free(buf);
	return seed;
}

static void *actor_main(void *arg)
{
	struct actor *a = arg;
	int r;

	for (r = 0; r < rounds; r++) {
		pthread_barrier_wait(&start);
		if (rnd() & 1)
			usleep(rnd() % 300);
		if (mode == M_WRITERS)
			a->result[r] = put(a->c, "w.bin", seed_of(r, a->id),
					   CHUNK_HDR + rnd() % (3u << 20));
		else if (a->id == 0)
			a->result[r] = maru_rename(a->c, MARU_ROOT_ID, "x.bin", MARU_ROOT_ID,
						   "y.bin", 0);
		else
			a->result[r] = maru_unlink(a->c, MARU_ROOT_ID,
						   mode == M_RENAME ? "x.bin" : "y.bin");
		pthread_barrier_wait(&done);
	}
	return NULL;
}

/* Watches the contested name: never anything but a whole chunk. */
static void *reader_main(void *arg)
{
	struct maru_client *c = arg;
	const char *name = mode == M_WRITERS ? "w.bin" : "y.bin";
	uint64_t reads = 0;

	while (!__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE)) {
		seed_at(c, name);
		reads++;
	}
	printf("reader: %llu whole reads\n", (unsigned long long)reads);
	return NULL;
}

/* Main thread, between rounds: set up the next one, judge the last. */
static void judge(struct maru_client *c, struct actor *act, int r)
{
	uint64_t y = seed_at(c, "y.bin"), x = seed_at(c, "x.bin");
	uint64_t w;

	switch (mode) {
	case M_WRITERS:
		w = seed_at(c, "w.bin");
		OK(act[0].result[r]);
		OK(act[1].result[r]);
		if (w != seed_of(r, 0) && w != seed_of(r, 1)) {
			fprintf(stderr, "round %d: w.bin holds seed %llu\n", r,
				(unsigned long long)w);
			exit(1);
		}
		break;
	case M_RENAME:
		CHECK(x == 0);
		if (act[0].result[r] == 0) {
			CHECK(act[1].result[r] == -ENOENT);
			CHECK(y == seed_of(r, 9));
		} else {
			CHECK(act[0].result[r] == -ENOENT && act[1].result[r] == 0);
			CHECK(y == 0);
		}
		break;
	case M_TARGET:
		OK(act[0].result[r]);
		OK(act[1].result[r]);
		CHECK(x == 0);
		CHECK(y == 0 || y == seed_of(r, 9));
		break;
	}
}

static void setup(struct maru_client *c, int r)
{
	if (mode == M_WRITERS)
		return;
	maru_unlink(c, MARU_ROOT_ID, "y.bin");
	OK(put(c, "x.bin", seed_of(r, 9), 100000));
	if (mode == M_TARGET)
		OK(put(c, "y.bin", seed_of(r, 8), 50000));
}

int main(int argc, char **argv)
{
	struct actor act[2] = { { .id = 0 }, { .id = 1 } };
	struct maru_client *c, *rc_;
	struct maru_statfs st;
	pthread_t th[2], rd;
	int i, r, won[2] = { 0, 0 };

	if (argc == 4)
		rounds = (int)strtol(argv[3], NULL, 10);
	if (argc != 4 || rounds <= 0 || rounds > 4096) {
		fprintf(stderr, "usage: fault_race URI writers|rename|target ROUNDS\n");
		return 2;
	}
	uri = argv[1];
	mode = !strcmp(argv[2], "writers") ? M_WRITERS : !strcmp(argv[2], "rename") ?
	       M_RENAME : !strcmp(argv[2], "target") ? M_TARGET : -1;
	CHECK(mode >= 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	c = tool_client(uri);
	rc_ = tool_client(uri);
	for (i = 0; i < 2; i++)
		act[i].c = tool_client(uri);
	pthread_barrier_init(&start, NULL, 3);
	pthread_barrier_init(&done, NULL, 3);
	for (i = 0; i < 2; i++)
		CHECK(pthread_create(&th[i], NULL, actor_main, &act[i]) == 0);
	CHECK(pthread_create(&rd, NULL, reader_main, rc_) == 0);
	for (r = 0; r < rounds; r++) {
		setup(c, r);
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&done);
		judge(c, act, r);
		won[act[0].result[r] == 0]++;
	}
	__atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
	pthread_join(rd, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	maru_unlink(c, MARU_ROOT_ID, "w.bin");
	maru_unlink(c, MARU_ROOT_ID, "x.bin");
	maru_unlink(c, MARU_ROOT_ID, "y.bin");
	maru_client_free(rc_);
	for (i = 0; i < 2; i++)
		maru_client_free(act[i].c);
	OK(maru_statfs(c, &st));
	if (st.free != st.capacity || st.pending || st.orphaned || st.used) {
		fprintf(stderr, "fault_race: pool not all free: free %llu of %llu, pending %llu, "
			"orphaned %llu\n", (unsigned long long)st.free,
			(unsigned long long)st.capacity, (unsigned long long)st.pending,
			(unsigned long long)st.orphaned);
		return 1;
	}
	maru_client_free(c);
	printf("fault_race %s: %d rounds ok (first actor won %d)\n", argv[2], rounds, won[1]);
	return 0;
}

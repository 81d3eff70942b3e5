/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/fault_pool.c: a pool filling up while readers
 * hold leases (marufs-design(7) §2, §7), through libmaru with two clients: a writer
 * and a reader that leases chunks. Chunks are self-checking (chunk.h), one
 * eighth of the pool each.
 *
 * lru: with every chunk stored once the pool is full, the reader leases
 *   every other one; new chunks then succeed by evicting unleased ones
 *   (LRU first), the leased ones stay bound and read back whole, and a
 *   chunk twice as large as any free run still fits (evicting two chunks
 *   that need not be adjacent: no false ENOSPC). Then the reader leases
 *   everything as it is stored until a store fails: that must be ENOSPC at
 *   write time, only when free + evictable cannot hold it, with nothing of
 *   the failed chunk visible and every leased chunk still whole. Released,
 *   the same store succeeds.
 * none: stores succeed until the pool cannot hold the next one, which gets
 *   ENOSPC at write time (free < its size: no false ENOSPC) and leaves
 *   nothing behind; every stored chunk is still whole. An unlinked chunk
 *   that the reader still leases frees nothing (ENOSPC again); released,
 *   its bytes let the store succeed.
 * Both end with every handle closed and the books balanced: nothing pending
 * or orphaned, free + used == capacity.
 *
 *   usage: fault_pool URI lru|none
 */
#include "chunk.h"
#include "maru_tool.h"

#define MAXC	64

static struct maru_client *wc, *rc_;	/* writer, reader */
static uint64_t S;			/* chunk size */
static uint8_t *buf;

static void name_of(char *out, int i)
{
	snprintf(out, 32, "c%02d.bin", i);
}

/* Create + write + publish chunk i; -errno of the step that failed. */
static int store(int i)
{
	char name[32];
	struct maru_file *f;
	ssize_t n;
	int rc;

	name_of(name, i);
	chunk_make(buf, S, 1000 + (uint64_t)i);
	rc = maru_file_create(wc, MARU_ROOT_ID, name, 0644, 0, 0, 0, 0, &f);
	if (rc)
		return rc;
	n = maru_file_pwrite(f, buf, S, 0);
	rc = n < 0 ? (int)n : (uint64_t)n != S ? -EIO : maru_file_publish(f);
	maru_file_close(f);
	return rc;
}

/* 1 if chunk i is bound and whole, 0 if gone; exits on wrong bytes. */
static int intact(int i)
{
	const char *why = "";
	uint64_t seed = 0;
	uint8_t *got = NULL;
	size_t len = 0;
	char name[32];
	int rc;

	name_of(name, i);
	rc = tool_load(rc_, MARU_ROOT_ID, name, &got, &len);
	if (rc == -ENOENT)
		return 0;
	OK(rc);
	if (chunk_check(got, len, &seed, &why) || seed != 1000 + (uint64_t)i) {
		fprintf(stderr, "fault_pool: %s is not whole: %s\n", name, why);
		exit(1);
	}
	free(got);
	return 1;
}

/* Read a lease whole: the pinned bytes never change. */
static void lease_intact(struct maru_file *f, int i)
{
	const char *why = "";
	struct maru_attr a;
	uint64_t seed = 0;
	uint8_t *got;
	ssize_t n;

	OK(maru_file_attr(f, &a));
	got = malloc(a.size + 1);
	CHECK(got);
	n = OK(maru_file_pread(f, got, a.size + 1, 0));
	if (chunk_check(got, (size_t)n, &seed, &why) || seed != 1000 + (uint64_t)i) {
		fprintf(stderr, "fault_pool: lease on chunk %d lost its bytes: %s\n", i, why);
		exit(1);
	}
	free(got);
}

static struct maru_file *lease(int i)
{
	struct maru_file *f;
	char name[32];

	name_of(name, i);
	OK(maru_file_open(rc_, MARU_ROOT_ID, name, &f));
	return f;
}

static void balanced(void)
{
	struct maru_statfs st;

	OK(maru_statfs(wc, &st));
	if (st.pending || st.orphaned || st.free + st.used != st.capacity) {
		fprintf(stderr, "fault_pool: books off: free %llu used %llu pending %llu "
			"orphaned %llu capacity %llu\n", (unsigned long long)st.free,
			(unsigned long long)st.used, (unsigned long long)st.pending,
			(unsigned long long)st.orphaned, (unsigned long long)st.capacity);
		exit(1);
	}
}

/* The store that failed must have been refused at write time, for real. */
static void check_enospc(int rc, int i, int lru)
{
	struct maru_statfs st;
	struct maru_attr a;
	char name[32];

	if (rc != -ENOSPC) {
		fprintf(stderr, "fault_pool: store %d: %s, expected ENOSPC\n", i,
			rc ? maru_strerror(rc) : "succeeded");
		exit(1);
	}
	OK(maru_statfs(wc, &st));
	if (st.free + (lru ? st.evictable : 0) >= S) {
		fprintf(stderr, "fault_pool: false ENOSPC: free %llu evictable %llu >= %llu\n",
			(unsigned long long)st.free, (unsigned long long)st.evictable,
			(unsigned long long)S);
		exit(1);
	}
	CHECK(st.pending == 0);
	name_of(name, i);
	FAILS(maru_lookup(rc_, MARU_ROOT_ID, name, &a), ENOENT);
}

static void run_lru(void)
{
	struct maru_file *held[MAXC] = { 0 };
	struct maru_statfs st;
	int i, n, evicted = 0, rc;

	for (i = 0; i < 8; i++)
		OK(store(i));
	for (i = 0; i < 8; i += 2)
		held[i] = lease(i);
	/* four more chunks: only the unleased 1, 3, 5, 7 may make room */
	for (i = 8; i < 12; i++)
		OK(store(i));
	for (i = 0; i < 8; i++) {
		if (held[i]) {
			CHECK(intact(i));
			lease_intact(held[i], i);
		} else {
			evicted += !intact(i);
		}
	}
	CHECK(evicted >= 3);
	/* twice the size: room only by evicting two non-adjacent chunks */
	S *= 2;
	OK(store(12));
	CHECK(intact(12));
	S /= 2;
	for (i = 0; i < 8; i += 2)
		lease_intact(held[i], i);
	/* now pin everything that is stored, then fill up to ENOSPC */
	for (i = 8; i < 13; i++)
		if (intact(i))
			held[i] = lease(i);
	for (n = 13; n < MAXC; n++) {
		rc = store(n);
		if (rc)
			break;
		held[n] = lease(n);
	}
	CHECK(n < MAXC);
	check_enospc(rc, n, 1);
	OK(maru_statfs(wc, &st));
	CHECK(st.evictable < S);
	for (i = 0; i < n; i++)
		if (held[i])
			lease_intact(held[i], i);
	/* released, the same store gets its room by eviction */
	for (i = 0; i < n; i++)
		maru_file_close(held[i]);
	OK(store(n));
	CHECK(intact(n));
	printf("lru: %d evicted for the first four, ENOSPC after %d pinned chunks\n",
	       evicted, n);
}

static void run_none(void)
{
	struct maru_file *held;
	int i, n, rc;

	for (n = 0; n < MAXC; n++) {
		rc = store(n);
		if (rc)
			break;
	}
	CHECK(n >= 7 && n < MAXC);
	check_enospc(rc, n, 0);
	for (i = 0; i < n; i++)
		CHECK(intact(i));
	/* an unlinked chunk still leased frees nothing */
	held = lease(0);
	OK(maru_unlink(wc, MARU_ROOT_ID, "c00.bin"));
	check_enospc(store(n), n, 0);
	lease_intact(held, 0);
	maru_file_close(held);
	OK(store(n));
	for (i = 1; i <= n; i++)
		CHECK(intact(i));
	printf("none: ENOSPC after %d chunks, room again after the last lease\n", n);
}

int main(int argc, char **argv)
{
	struct maru_statfs st;

	if (argc != 3 || (strcmp(argv[2], "lru") && strcmp(argv[2], "none"))) {
		fprintf(stderr, "usage: fault_pool URI lru|none\n");
		return 2;
	}
	wc = tool_client(argv[1]);
	rc_ = tool_client(argv[1]);
	OK(maru_statfs(wc, &st));
	S = st.capacity / 8 / st.block * st.block;
	buf = malloc(2 * S);
	CHECK(buf && S >= CHUNK_HDR);
	if (!strcmp(argv[2], "lru"))
		run_lru();
	else
		run_none();
	maru_client_free(rc_);
	balanced();
	maru_client_free(wc);
	free(buf);
	return 0;
}

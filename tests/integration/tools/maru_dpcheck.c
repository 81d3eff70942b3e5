/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_dpcheck.c: the shm and tcp data paths agree
 * byte for byte. For sizes around page and frame boundaries, a chunk
 * written over one path (out of order, leaving a hole that is filled last)
 * reads back identically over the other, and marud's publish checksum of
 * the same content is the same whichever path wrote it, and whether marud
 * computed it (out of order) or the shm client hashed while it copied (in
 * order, in uneven pieces). Exits 77 when the
 * pool cannot be mapped here (no shm path to compare).
 *
 *   usage: maru_dpcheck URI
 */
#include "maru_tool.h"

static const size_t sizes[] = { 1, 100, 4095, 4096, 4097, 65537, (1u << 20) + 3,
				(4u << 20) + 1, (9u << 20) + 7 };

/* Write the second half first, then the first: exercises holes and growth. */
static void put(struct maru_client *c, const char *name, const uint8_t *p, size_t len,
		uint64_t *xxh)
{
	struct maru_file *f;
	struct maru_attr a;
	size_t half = len / 2;

	OK(maru_file_create(c, MARU_ROOT_ID, name, 0644, 0, 0, 0, 0, &f));
	CHECK((size_t)OK(maru_file_pwrite(f, p + half, len - half, half)) == len - half);
	if (half)
		CHECK((size_t)OK(maru_file_pwrite(f, p, half, 0)) == half);
	OK(maru_file_publish(f));
	OK(maru_file_attr(f, &a));
	CHECK(a.size == len);
	*xxh = a.xxh3;
	maru_file_close(f);
}

/* In order from byte 0, in uneven pieces: the client hashes as it copies. */
static uint64_t put_in_order(struct maru_client *c, const char *name, const uint8_t *p,
			     size_t len)
{
	struct maru_file *f;
	struct maru_attr a;
	size_t off, k;

	OK(maru_file_create(c, MARU_ROOT_ID, name, 0644, 0, 0, 0, 0, &f));
	for (off = 0; off < len; off += k) {
		k = len - off < 65536 + 7 ? len - off : 65536 + 7;
		CHECK((size_t)OK(maru_file_pwrite(f, p + off, k, off)) == k);
	}
	OK(maru_file_publish(f));
	OK(maru_file_attr(f, &a));
	maru_file_close(f);
	return a.xxh3;
}

static void get(struct maru_client *c, const char *name, const uint8_t *p, size_t len)
{
	uint8_t *back = NULL;
	size_t n = 0;

	OK(tool_load(c, MARU_ROOT_ID, name, &back, &n));
	CHECK(n == len);
	if (memcmp(back, p, len)) {
		fprintf(stderr, "maru_dpcheck: %s differs\n", name);
		exit(1);
	}
	free(back);
}

int main(int argc, char **argv)
{
	struct maru_client_opts o;
	struct maru_client *shm, *tcp;
	uint64_t x1, x2;
	char name[64];
	size_t i;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: maru_dpcheck URI\n");
		return 2;
	}
	maru_client_opts_init(&o, sizeof(o));
	o.uri = argv[1];
	o.data_path = MARU_DATA_SHM;
	rc = maru_client_new(&o, &shm);
	if (rc == -ENODEV) {
		fprintf(stderr, "maru_dpcheck: no shm path here\n");
		return 77;
	}
	OK(rc);
	tcp = tool_client_dp(argv[1], MARU_DATA_TCP);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *p = malloc(sizes[i]);

		CHECK(p);
		tool_fill(p, sizes[i], i + 100, 0);
		snprintf(name, sizeof(name), "shm%zu", i);
		put(shm, name, p, sizes[i], &x1);
		get(tcp, name, p, sizes[i]);
		snprintf(name, sizeof(name), "tcp%zu", i);
		put(tcp, name, p, sizes[i], &x2);
		get(shm, name, p, sizes[i]);
		CHECK(x1 == x2 && x1 != 0);
		snprintf(name, sizeof(name), "inorder%zu", i);
		CHECK(put_in_order(shm, name, p, sizes[i]) == x1);
		get(tcp, name, p, sizes[i]);
		free(p);
	}
	maru_client_free(tcp);
	maru_client_free(shm);
	printf("maru_dpcheck: ok (%zu sizes)\n", sizeof(sizes) / sizeof(sizes[0]));
	return 0;
}

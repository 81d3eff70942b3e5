/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/rdma_rights.c: the rights of the rdma data path,
 * checked against a real marud on the software verbs device (tests/softverbs:
 * the NIC is emulated per process and checks rkey, rights, bounds and the
 * window's QP as a real responder would; no RNIC here). Linked with
 * libmaru's internals for two test hooks of dp/rdma.c: the rkeys cached on
 * a handle, and one raw READ/WRITE on the client's QP. Each refusal must be
 * IBV_WC_REM_ACCESS_ERR and must leave the bytes as they were; a valid key
 * is used first each time, so a refusal is never the raw path's own fault.
 * Usage: rdma_rights URI
 */
#include <infiniband/verbs.h>

#include "client_priv.h"
#include "dp/datapath.h"
#include "maru_tool.h"

#define LEN (256u << 10)

static uint8_t pat[LEN], buf[LEN];

struct key {
	uint64_t addr, len;
	uint32_t rkey;
};

static struct maru_file *lease(struct maru_client *c, struct key *k)
{
	struct maru_file *f;

	OK(maru_file_open(c, 1, "a", &f));
	OK(maru_file_pread(f, buf, 16, 0));	/* binds the read-only window */
	OK(dp_rdma_test_key(f, 0, &k->addr, &k->rkey, &k->len));
	return f;
}

static void bytes_intact(struct maru_client *c)
{
	struct maru_file *f;

	OK(maru_file_open(c, 1, "a", &f));
	CHECK(maru_file_pread(f, buf, LEN, 0) == LEN);
	CHECK(!memcmp(buf, pat, LEN));
	maru_file_close(f);
}

int main(int argc, char **argv)
{
	struct maru_client *c;
	struct maru_file *f, *w;
	struct key k, kw;
	uint32_t i;

	CHECK(argc == 2);
	for (i = 0; i < LEN; i++)
		pat[i] = (uint8_t)(i * 7 + 3);
	c = tool_client_dp(argv[1], MARU_DATA_RDMA);
	OK(maru_file_create(c, 1, "a", 0644, 0, 0, 0, LEN, &w));
	CHECK(maru_file_pwrite(w, pat, LEN, 0) == LEN);
	OK(maru_file_publish(w));
	maru_file_close(w);

	/* a lease's key reads; the same key WRITE is refused */
	f = lease(c, &k);
	CHECK(dp_rdma_test_post(c, 0, k.addr, k.rkey, 4096, buf) == 0);
	CHECK(!memcmp(buf, pat, 4096));
	memset(buf, 0xee, 4096);
	CHECK(dp_rdma_test_post(c, 1, k.addr, k.rkey, 4096, buf) == IBV_WC_REM_ACCESS_ERR);
	maru_file_close(f);
	bytes_intact(c);
	printf("ok: read-only rkey of a lease refused for WRITE\n");

	/* a forged key, and an offset past the window */
	f = lease(c, &k);
	CHECK(dp_rdma_test_post(c, 0, k.addr, k.rkey ^ 0x5a5a00u, 4096, buf) ==
	      IBV_WC_REM_ACCESS_ERR);
	maru_file_close(f);
	f = lease(c, &k);
	CHECK(dp_rdma_test_post(c, 0, k.addr + k.len - 2048, k.rkey, 4096, buf) ==
	      IBV_WC_REM_ACCESS_ERR);
	maru_file_close(f);
	f = lease(c, &k);
	CHECK(dp_rdma_test_post(c, 0, k.addr - 4096, k.rkey, 4096, buf) ==
	      IBV_WC_REM_ACCESS_ERR);
	maru_file_close(f);
	printf("ok: forged rkey and offsets outside the extent refused\n");

	/* the key after its release (same QP: nothing failed since the bind) */
	f = lease(c, &k);
	CHECK(dp_rdma_test_post(c, 0, k.addr, k.rkey, 4096, buf) == 0);
	maru_file_close(f);
	CHECK(dp_rdma_test_post(c, 0, k.addr, k.rkey, 4096, buf) == IBV_WC_REM_ACCESS_ERR);
	printf("ok: rkey used after its release refused\n");

	/* a pending version's read-write key writes; after publish it is refused */
	OK(maru_file_create(c, 1, "b", 0644, 0, 0, 0, 3 * LEN, &w));
	CHECK(maru_file_pwrite(w, pat, LEN, 0) == LEN);
	OK(dp_rdma_test_key(w, 0, &kw.addr, &kw.rkey, &kw.len));
	CHECK(dp_rdma_test_post(c, 1, kw.addr, kw.rkey, 4096, pat) == 0);
	OK(maru_file_publish(w));
	memset(buf, 0xee, 4096);
	CHECK(dp_rdma_test_post(c, 1, kw.addr, kw.rkey, 4096, buf) == IBV_WC_REM_ACCESS_ERR);
	/* the publishing handle reads on as a lease: PUBLISH trimmed the
	 * reserved tail, so its read-only keys cover a prefix of its extents */
	memset(buf, 0, LEN);
	CHECK(maru_file_pread(w, buf, LEN, 0) == LEN);
	CHECK(!memcmp(buf, pat, LEN));
	maru_file_close(w);
	OK(maru_file_open(c, 1, "b", &w));
	CHECK(maru_file_pread(w, buf, LEN, 0) == LEN);
	CHECK(!memcmp(buf, pat, LEN));
	maru_file_close(w);
	printf("ok: pending rkey refused after publish, the trimmed version reads\n");

	/*
	 * A PUBLISH refused (the name was removed meanwhile) ended the rights
	 * of the pending version all the same (marud ends them before it
	 * hashes); the version stays its owner's, and its next read and write
	 * must ask for new keys, not use the revoked ones (fs_stress met this
	 * as a remote access error on the read of a copy-on-write).
	 */
	OK(maru_file_create(c, 1, "c", 0644, 0, 0, 0, LEN, &w));
	CHECK(maru_file_pwrite(w, pat, LEN, 0) == LEN);
	OK(dp_rdma_test_key(w, 0, &kw.addr, &kw.rkey, &kw.len));
	OK(maru_unlink(c, 1, "c"));
	CHECK(maru_file_publish(w) == -ENOENT);
	memset(buf, 0, LEN);
	CHECK(maru_file_pread(w, buf, LEN, 0) == LEN);
	CHECK(!memcmp(buf, pat, LEN));
	CHECK(maru_file_pwrite(w, pat + 4096, 4096, 0) == 4096);
	CHECK(maru_file_pread(w, buf, 4096, 0) == 4096);
	CHECK(!memcmp(buf, pat + 4096, 4096));
	CHECK(dp_rdma_test_post(c, 1, kw.addr, kw.rkey, 4096, buf) == IBV_WC_REM_ACCESS_ERR);
	maru_file_close(w);
	printf("ok: a refused publish revoked the pending rkeys, new ones serve the version\n");
	bytes_intact(c);
	maru_client_free(c);
	return 0;
}

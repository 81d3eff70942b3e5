/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_retry.c: resending a request whose reply was
 * lost is harmless. Run with MARU_FAILPOINT=libmaru.reply=N*error:ECONNRESET
 * the client drops its socket right after sending its N-th request, and
 * must reconnect (reclaiming its session by token) and resend the same
 * request id; marud answers from its reply cache. Every step below must then
 * succeed exactly once: a mkdir that does not come back EEXIST, an exclusive
 * create that does not come back EEXIST, a publish and a rename and an
 * unlink that do not come back ENOENT, and afterwards nothing pending,
 * orphaned or leased. Checks the failpoint really fired (a reconnect).
 *
 *   usage: maru_retry URI PREFIX
 */
#include "maru_tool.h"

#define LEN ((6u << 20) + 5)

/* N of MARU_FAILPOINT=libmaru.reply=N*..., or 0. */
static uint64_t armed_at(void)
{
	const char *s = getenv("MARU_FAILPOINT");
	const char *p = s ? strstr(s, "libmaru.reply=") : NULL;

	return p ? strtoull(p + strlen("libmaru.reply="), NULL, 10) : 0;
}

int main(int argc, char **argv)
{
	uint8_t *buf = malloc(LEN), *back = NULL;
	uint64_t requests, reconnects;
	struct maru_client *c;
	struct maru_statfs sf;
	struct maru_file *f;
	struct maru_attr d, a;
	size_t len = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: maru_retry URI PREFIX\n");
		return 2;
	}
	CHECK(buf);
	tool_fill(buf, LEN, 42, 0);
	c = tool_client(argv[1]);
	OK(maru_mkdir(c, MARU_ROOT_ID, argv[2], 0755, 0, 0, &d));
	OK(maru_file_create(c, d.ino, "f", 0644, 0, 0, MARU_CREATE_EXCL, 0, &f));
	CHECK((size_t)OK(maru_file_pwrite(f, buf, LEN, 0)) == LEN);
	OK(maru_file_truncate(f, LEN + 10));
	OK(maru_file_truncate(f, LEN));
	OK(maru_file_publish(f));
	maru_file_close(f);
	OK(maru_rename(c, d.ino, "f", d.ino, "g", MARU_RENAME_NOREPLACE));
	OK(tool_load(c, d.ino, "g", &back, &len));
	CHECK(len == LEN && !memcmp(back, buf, LEN));
	OK(maru_file_open(c, d.ino, "g", &f));
	OK(maru_unlink(c, d.ino, "g"));
	CHECK(OK(maru_file_pread(f, back, 16, LEN - 16)) == 16);
	CHECK(!memcmp(back, buf + LEN - 16, 16));
	maru_file_close(f);
	FAILS(maru_lookup(c, d.ino, "g", &a), ENOENT);
	OK(maru_rmdir(c, MARU_ROOT_ID, argv[2]));
	OK(maru_statfs(c, &sf));
	CHECK(sf.pending == 0 && sf.orphaned == 0);
	CHECK(sf.free + sf.used + sf.pending + sf.orphaned == sf.capacity);
	CHECK(tool_metric(c, "marud_leases") == 0);
	requests = tool_metric(c, "maru_client_requests_total");
	reconnects = tool_metric(c, "maru_client_reconnects_total");
	if (armed_at() && armed_at() < requests)
		CHECK(reconnects >= 1);
	printf("maru_retry: ok (%llu requests, %llu reconnects)\n",
	       (unsigned long long)requests, (unsigned long long)reconnects);
	maru_client_free(c);
	free(back);
	free(buf);
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/rdma_faults.c: failures of the rdma data path,
 * against a real marud on the software verbs device (tests/softverbs: one
 * emulated NIC per process, one-sided READ/WRITE carried over unix sockets
 * and checked by the responder's NIC thread; faults injected by its knobs;
 * no RNIC here). Linked with libmaru's internals for the extents of a
 * handle and the test hooks of dp/rdma.c. One mode per run:
 *
 *   kill-writer URI NAME  write NAME's pending version, print its extents
 *                         ("ext OFF LEN"), then a 4 MiB write whose posting
 *                         MARU_FAILPOINT=libmaru.rdma.write.posted=2*abort
 *                         turns into a SIGKILL with the WRs in flight
 *   after-kill URI NAME EXTFILE  with the killed writer's session gone: a
 *                         new version fills and is published (on its pages,
 *                         if the allocator gives them back), stays exact
 *                         after a pause for late WRITEs; NAME never existed
 *   timeout URI           a lost completion (lose_cqe) times a READ and a
 *                         WRITE out: EIO, the QP errored and reconnected,
 *                         the written handle refuses to publish
 *   restart URI           reads in flight (delay_cqe_ms) while the shell
 *                         restarts marud: the old handle fails from then on,
 *                         its old rkey is refused, a new open reads
 */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <pthread.h>

#include "client_priv.h"
#include "dp/datapath.h"
#include "maru_tool.h"

#define LEN (4u << 20)

static uint8_t buf[LEN], pat[LEN];

static struct maru_client *client(const char *uri, unsigned int timeout_ms)
{
	struct maru_client_opts o;
	struct maru_client *c;

	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.data_path = MARU_DATA_RDMA;
	o.client_name = "rdma-faults";
	o.timeout_ms = timeout_ms;
	OK(maru_client_new(&o, &c));
	return c;
}

/* The software device's fault knobs, set now (counters restart). */
static void faults(const char *spec)
{
	int (*set)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT,
							      "softverbs_fault_set");

	CHECK(set != NULL);	/* run under LD_PRELOAD=libsoftverbs.so */
	OK(set(spec));
}

/* Value of the first sample of metric m in the client's stats text. */
static long long stat(struct maru_client *c, const char *m)
{
	static char text[1 << 18];
	size_t n = strlen(m);
	ssize_t len = OK(maru_stats_text(c, text, sizeof(text) - 1));
	char *p;

	text[len] = '\0';
	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, m, n) && (p[n] == ' ' || p[n] == '{'))
			return strtoll(strchr(p + n, ' ') + 1, NULL, 10);
	fprintf(stderr, "metric %s missing\n", m);
	exit(1);
}

static void publish_new(struct maru_client *c, const char *name, uint64_t seed)
{
	struct maru_file *w;

	tool_fill(pat, LEN, seed, 0);
	OK(maru_file_create(c, 1, name, 0644, 0, 0, 0, LEN, &w));
	CHECK(maru_file_pwrite(w, pat, LEN, 0) == LEN);
	OK(maru_file_publish(w));
	maru_file_close(w);
}

static int kill_writer(const char *uri, const char *name)
{
	struct maru_client *c = client(uri, 5000);
	struct maru_file *w;
	uint32_t i;

	OK(maru_file_create(c, 1, name, 0644, 0, 0, 0, LEN, &w));
	tool_fill(pat, LEN, 1, 0);
	CHECK(maru_file_pwrite(w, pat, 4096, 0) == 4096);	/* one WR: hit 1 */
	for (i = 0; i < w->next; i++)
		printf("ext %llu %llu\n", (unsigned long long)w->ext[i].off,
		       (unsigned long long)w->ext[i].len);
	fflush(stdout);
	tool_fill(pat, LEN, 2, 0);
	maru_file_pwrite(w, pat, LEN, 0);	/* hit 2: SIGKILL, WRs posted */
	fprintf(stderr, "kill-writer: still alive: the fail point was not armed\n");
	return 3;
}

static int overlaps(const struct maru_file *f, const char *extfile)
{
	unsigned long long off, len;
	FILE *in = fopen(extfile, "r");
	int hit = 0;
	uint32_t i;

	CHECK(in != NULL);
	while (fscanf(in, "ext %llu %llu\n", &off, &len) == 2)
		for (i = 0; i < f->next; i++)
			hit |= f->ext[i].off < off + len && off < f->ext[i].off + f->ext[i].len;
	fclose(in);
	return hit;
}

static int after_kill(const char *uri, const char *name, const char *extfile)
{
	struct maru_client *c = client(uri, 5000);
	struct maru_file *w, *f;
	int reused;

	FAILS(maru_file_open(c, 1, name, &f), ENOENT);
	OK(maru_file_create(c, 1, "after", 0644, 0, 0, 0, LEN, &w));
	reused = overlaps(w, extfile);
	tool_fill(pat, LEN, 3, 0);
	CHECK(maru_file_pwrite(w, pat, LEN, 0) == LEN);
	OK(maru_file_publish(w));
	maru_file_close(w);
	usleep(500 * 1000);	/* a late WRITE of the dead client would land now */
	OK(maru_file_open(c, 1, "after", &f));
	CHECK(maru_file_pread(f, buf, LEN, 0) == LEN);
	CHECK(tool_check_fill(buf, LEN, 3, 0));
	maru_file_close(f);
	printf("ok: the version published after the kill is exact (%s the dead "
	       "writer's pages)\n", reused ? "on" : "not on");
	printf("reused %d\n", reused);
	maru_client_free(c);
	return 0;
}

static int timeout_case(const char *uri)
{
	struct maru_client *c = client(uri, 1000);
	struct maru_file *f, *w;
	long long conns;

	publish_new(c, "t", 5);
	OK(maru_file_open(c, 1, "t", &f));
	conns = stat(c, "maru_client_rdma_qp_connects_total");
	faults("lose_cqe=1");
	FAILS(maru_file_pread(f, buf, 4096, 0), EIO);
	faults("");
	CHECK(maru_file_pread(f, buf, LEN, 0) == LEN);	/* a new QP */
	CHECK(tool_check_fill(buf, LEN, 5, 0));
	CHECK(stat(c, "maru_client_rdma_qp_connects_total") == conns + 1);
	maru_file_close(f);
	printf("ok: a READ that timed out is EIO, the QP reconnects, the next read is exact\n");

	OK(maru_file_create(c, 1, "t2", 0644, 0, 0, 0, LEN, &w));
	faults("lose_cqe=1");
	FAILS(maru_file_pwrite(w, pat, 4096, 0), EIO);
	faults("");
	FAILS(maru_file_publish(w), EIO);	/* the write may or may not have landed */
	maru_file_close(w);
	FAILS(maru_file_open(c, 1, "t2", &w), ENOENT);
	OK(maru_file_open(c, 1, "t", &f));	/* reconnects: marud fences the old QP */
	CHECK(maru_file_pread(f, buf, LEN, 0) == LEN);
	CHECK(tool_check_fill(buf, LEN, 5, 0));
	maru_file_close(f);
	CHECK(stat(c, "maru_client_rdma_errors_total{kind=\"timeout\"}") == 2);
	CHECK(stat(c, "maru_client_rdma_qp_errors_total") >= 2);
	CHECK(stat(c, "maru_client_rdma_wrs_in_flight") == 0);
	CHECK(stat(c, "marud_rdma_quarantined_bytes_total") >= 4096);
	CHECK(stat(c, "marud_rdma_quarantined_bytes") == 0);
	printf("ok: a WRITE that timed out is EIO, never published, its pages "
	       "quarantined until marud fenced the QP\n");
	maru_client_free(c);
	return 0;
}

struct key {
	uint64_t addr, len;
	uint32_t rkey;
};

/* Reads of the old handle until they fail; none may succeed after that. */
static int restart_reads(struct maru_file *f)
{
	uint64_t end = tool_mono_ms() + 30000;
	ssize_t rc;
	int failed = 0, ok = 0;

	while (tool_mono_ms() < end) {
		rc = maru_file_pread(f, buf, LEN, 0);
		if (rc == LEN && !failed) {
			CHECK(tool_check_fill(buf, LEN, 7, 0));
			ok++;
			continue;
		}
		if (rc >= 0) {
			fprintf(stderr, "old handle read %zd bytes after it failed\n", rc);
			exit(1);
		}
		if (!failed)
			printf("old handle: first failure after %d reads: %s\n", ok,
			       maru_strerror((int)rc));
		failed++;
		if (rc == -ESTALE || (rc == -EIO && failed > 3))
			break;
		usleep(100 * 1000);
	}
	CHECK(failed && ok);
	return 0;
}

static int restart_case(const char *uri)
{
	struct maru_client *c = client(uri, 5000);
	struct maru_file *f, *g;
	struct key k;
	uint64_t end;
	ssize_t rc;

	publish_new(c, "r", 7);
	OK(maru_file_open(c, 1, "r", &f));
	CHECK(maru_file_pread(f, buf, LEN, 0) == LEN);
	OK(dp_rdma_test_key(f, 0, &k.addr, &k.rkey, &k.len));
	faults("delay_cqe_ms=100");	/* a transfer is in flight most of the time */
	printf("ready\n");
	fflush(stdout);
	restart_reads(f);
	faults("");
	for (end = tool_mono_ms() + 20000;; usleep(100 * 1000)) {
		CHECK(tool_mono_ms() < end);
		if (maru_file_open(c, 1, "r", &g) == 0)
			break;
	}
	rc = maru_file_pread(g, buf, LEN, 0);
	CHECK(rc == LEN);
	CHECK(tool_check_fill(buf, LEN, 7, 0));
	rc = maru_file_pread(f, buf, 4096, 0);
	CHECK(rc == -ESTALE || rc == -EIO);
	printf("ok: the old handle fails after the restart (%s), a new open reads exact\n",
	       maru_strerror((int)rc));
	CHECK(dp_rdma_test_post(c, 0, k.addr, k.rkey, 4096, buf) == IBV_WC_REM_ACCESS_ERR);
	CHECK(maru_file_pread(g, buf, LEN, 0) == LEN);	/* and reconnects after it */
	CHECK(tool_check_fill(buf, LEN, 7, 0));
	maru_file_close(g);
	maru_file_close(f);
	printf("ok: the old generation's rkey is refused by the new one\n");
	maru_client_free(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "kill-writer"))
		return kill_writer(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "after-kill"))
		return after_kill(argv[2], argv[3], argv[4]);
	if (argc == 3 && !strcmp(argv[1], "timeout"))
		return timeout_case(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "restart"))
		return restart_case(argv[2]);
	fprintf(stderr, "usage: rdma_faults kill-writer|after-kill|timeout|restart URI ...\n");
	return 2;
}

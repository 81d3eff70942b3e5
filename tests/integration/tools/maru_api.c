/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_api.c: walks the libmaru API against a real
 * marud, on the data path MARU_DATA selects: names, directories, pending
 * versions (holes, truncate, copy, exclusive), publish and replace with an
 * old lease still reading its bytes, rename, unlink, readdir and exists in
 * more than one batch, setattr, statfs accounting, the stats text, events
 * and the error contract. Prints "maru_api: ok (PATH)" and exits 0.
 *
 *   usage: maru_api URI
 */
#include <sys/stat.h>

#include "maru_tool.h"

static struct maru_client *c, *c2;

static void test_connect_errors(const char *uri)
{
	struct maru_client_opts o;
	struct maru_client *x;

	maru_client_opts_init(&o, sizeof(o));
	o.uri = "bogus://nowhere";
	FAILS(maru_client_new(&o, &x), EINVAL);
	o.uri = "maru+unix:///nonexistent/marud.sock";
	o.timeout_ms = 200;
	FAILS(maru_client_new(&o, &x), ECONNREFUSED);
	CHECK(strcmp(maru_version(), "") != 0);
	CHECK(strstr(maru_strerror(-ESTALE), "restarted") != NULL);
	CHECK(strcmp(maru_strerror(-ENOENT), "No such file or directory") == 0);
	(void)uri;
}

static void test_pool_info(void)
{
	struct maru_pool_info pi;

	OK(maru_client_pool_info(c, &pi));
	CHECK(pi.size > 0 && pi.generation != 0 && pi.path[0]);
	CHECK(pi.data_path == MARU_DATA_SHM || pi.data_path == MARU_DATA_TCP);
	if (tool_data_path() != MARU_DATA_AUTO)
		CHECK(pi.data_path == tool_data_path());
}

static uint64_t test_names(void)
{
	struct maru_attr a, b;
	char longname[300];

	OK(maru_mkdir(c, MARU_ROOT_ID, "d1", 0755, 0, 0, &a));
	CHECK(a.state == MARU_STATE_DIR && S_ISDIR(a.mode) && a.ino != MARU_ROOT_ID);
	FAILS(maru_mkdir(c, MARU_ROOT_ID, "d1", 0755, 0, 0, NULL), EEXIST);
	OK(maru_lookup(c2, MARU_ROOT_ID, "d1", &b));
	CHECK(b.ino == a.ino);
	FAILS(maru_lookup(c, MARU_ROOT_ID, "nope", &b), ENOENT);
	FAILS(maru_mkdir(c, MARU_ROOT_ID, "", 0755, 0, 0, NULL), EINVAL);
	FAILS(maru_mkdir(c, MARU_ROOT_ID, "..", 0755, 0, 0, NULL), EINVAL);
	FAILS(maru_lookup(c, MARU_ROOT_ID, "a/b", &b), EINVAL);
	memset(longname, 'x', 256);
	longname[256] = '\0';
	FAILS(maru_lookup(c, MARU_ROOT_ID, longname, &b), ENAMETOOLONG);
	OK(maru_getattr(c, a.ino, &b));
	CHECK(b.ino == a.ino && b.state == MARU_STATE_DIR);
	return a.ino;
}

/* A pending file with a hole; published; then read through a second client. */
static uint64_t test_write_publish(uint64_t d1)
{
	uint8_t buf[100003];
	struct maru_file *f, *g;
	struct maru_attr a;
	size_t i;

	OK(maru_file_create(c, d1, "f1", 0640, 0, 0, MARU_CREATE_EXCL, 0, &f));
	CHECK(maru_file_is_pending(f));
	OK(maru_lookup(c, d1, "f1", &a));
	CHECK(a.state == MARU_STATE_PENDING && a.ino == maru_file_ino(f));
	FAILS(maru_lookup(c2, d1, "f1", &a), ENOENT);
	CHECK(OK(maru_file_pwrite(f, "abc", 3, 100000)) == 3);
	OK(maru_file_attr(f, &a));
	CHECK(a.size == 100003);
	CHECK(OK(maru_file_pread(f, buf, sizeof(buf) + 0, 0)) == 100003);
	for (i = 0; i < 100000; i++)
		CHECK(buf[i] == 0);
	CHECK(!memcmp(buf + 100000, "abc", 3));
	OK(maru_file_sync(f));
	OK(maru_file_publish(f));
	CHECK(!maru_file_is_pending(f));
	FAILS(maru_file_pwrite(f, "x", 1, 0), EBADF);
	OK(maru_file_attr(f, &a));
	CHECK(a.size == 100003 && a.state == MARU_STATE_PUBLISHED && a.xxh3 != 0);
	OK(maru_file_open(c2, d1, "f1", &g));
	memset(buf, 1, sizeof(buf));
	CHECK(OK(maru_file_pread(g, buf, sizeof(buf), 99990)) == 13);
	CHECK(!memcmp(buf + 10, "abc", 3) && buf[0] == 0);
	CHECK(OK(maru_file_pread(g, buf, 10, 100003)) == 0);
	maru_file_close(g);
	maru_file_close(f);
	OK(maru_lookup(c2, d1, "f1", &a));
	return a.ino;
}

/* Replace while a lease is held; excl; copy; truncate both ways. */
static void test_replace(uint64_t d1, uint64_t old_ino)
{
	struct maru_file *old, *f, *x;
	struct maru_attr a;
	uint8_t buf[16];

	OK(maru_file_open(c, d1, "f1", &old));
	FAILS(maru_file_create(c2, d1, "f1", 0644, 0, 0, MARU_CREATE_EXCL, 0, &x), EEXIST);
	CHECK(tool_store(c2, d1, "f1", "new", 3) == 0);
	CHECK(OK(maru_file_pread(old, buf, 3, 100000)) == 3 && !memcmp(buf, "abc", 3));
	/* replaced but still leased: open by id reaches it (a kernel that
	 * looked the name up before the replace does this) */
	OK(maru_file_open_ino(c2, old_ino, &x));
	CHECK(OK(maru_file_pread(x, buf, 3, 100000)) == 3 && !memcmp(buf, "abc", 3));
	maru_file_close(x);
	OK(maru_lookup(c, d1, "f1", &a));
	CHECK(a.ino != old_ino && a.size == 3);
	OK(maru_file_rewrite(c, a.ino, MARU_CREATE_COPY, 0, &f));
	CHECK(OK(maru_file_pread(f, buf, sizeof(buf), 0)) == 3 && !memcmp(buf, "new", 3));
	OK(maru_file_truncate(f, 10));
	CHECK(OK(maru_file_pread(f, buf, sizeof(buf), 0)) == 10);
	CHECK(!memcmp(buf, "new\0\0\0\0\0\0\0", 10));
	OK(maru_file_truncate(f, 2));
	OK(maru_file_reserve(f, 1 << 20));
	OK(maru_file_attr(f, &a));
	CHECK(a.size == 2 && a.reserved >= (1 << 20));
	OK(maru_file_publish(f));
	maru_file_close(f);
	maru_file_close(old);
	/* its last lease gone, so is the old version */
	FAILS(maru_file_open_ino(c, old_ino, &x), ESTALE);
	OK(maru_lookup(c2, d1, "f1", &a));
	CHECK(a.size == 2);
}

/* 10 MiB: several TCP frames, several reservation steps. */
static void test_big(uint64_t d1)
{
	size_t len = 10u << 20, i;
	uint8_t *buf = malloc(len), *back = NULL;
	struct maru_extent ext[64];
	struct maru_file *f;
	uint64_t total = 0;
	ssize_t n;

	CHECK(buf);
	tool_fill(buf, len, 7, 0);
	OK(maru_file_create(c, d1, "big", 0644, 0, 0, 0, 0, &f));
	for (i = 0; i < len; i += 1u << 20)
		CHECK(OK(maru_file_pwrite(f, buf + i, 1u << 20, i)) == 1 << 20);
	OK(maru_file_publish(f));
	n = OK(maru_file_extents(f, ext, 64));
	for (i = 0; i < (size_t)n && i < 64; i++)
		total += ext[i].len;
	CHECK(total >= len);
	maru_file_close(f);
	CHECK(tool_load(c2, d1, "big", &back, &i) == 0 && i == len);
	CHECK(!memcmp(back, buf, len));
	free(back);
	free(buf);
}

struct rd {
	int count, stop_at;
	uint64_t last_cookie;
	int bad;
};

static int rd_cb(void *arg, const struct maru_dirent *de)
{
	struct rd *r = arg;

	if (de->cookie <= r->last_cookie || de->namelen < 2)
		r->bad = 1;
	r->last_cookie = de->cookie;
	r->count++;
	return r->stop_at && r->count >= r->stop_at;
}

static void test_readdir_exists(void)
{
	static const int n = 2500;
	const char **names = calloc(5000, sizeof(*names));
	uint8_t *out = calloc(5000, 1);
	struct rd r = { 0 };
	struct maru_attr d;
	char name[32];
	int i;

	CHECK(names && out);
	OK(maru_mkdir(c, MARU_ROOT_ID, "many", 0755, 0, 0, &d));
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "k%05d.bin", i);
		CHECK(tool_store(c, d.ino, name, name, 4) == 0);
	}
	OK(maru_readdir(c2, d.ino, 0, rd_cb, &r));
	CHECK(r.count == n && !r.bad);
	memset(&r, 0, sizeof(r));
	r.stop_at = 10;
	OK(maru_readdir(c2, d.ino, 0, rd_cb, &r));
	CHECK(r.count == 10);
	r.stop_at = 0;
	OK(maru_readdir(c2, d.ino, r.last_cookie, rd_cb, &r));
	CHECK(r.count == n && !r.bad);
	for (i = 0; i < 5000; i++) {
		char *s = malloc(32);

		snprintf(s, 32, "k%05d.bin", i * 2);
		names[i] = s;
	}
	OK(maru_exists(c2, d.ino, names, 5000, out));
	for (i = 0; i < 5000; i++)
		CHECK(out[i] == (i * 2 < n));
	for (i = 0; i < 5000; i++)
		free((void *)names[i]);
	free(names);
	free(out);
}

static void test_rename_unlink(uint64_t d1)
{
	struct maru_attr a, d2;
	struct maru_file *f;
	uint8_t buf[4];

	OK(maru_mkdir(c, MARU_ROOT_ID, "d2", 0755, 0, 0, &d2));
	OK(maru_rename(c, d1, "f1", d2.ino, "g1", 0));
	FAILS(maru_lookup(c2, d1, "f1", &a), ENOENT);
	OK(maru_lookup(c2, d2.ino, "g1", &a));
	CHECK(tool_store(c, d2.ino, "g2", "zz", 2) == 0);
	FAILS(maru_rename(c, d2.ino, "g2", d2.ino, "g1", MARU_RENAME_NOREPLACE), EEXIST);
	FAILS(maru_rmdir(c, MARU_ROOT_ID, "d2"), ENOTEMPTY);
	OK(maru_file_open(c, d2.ino, "g1", &f));
	OK(maru_unlink(c2, d2.ino, "g1"));
	FAILS(maru_unlink(c2, d2.ino, "g1"), ENOENT);
	CHECK(OK(maru_file_pread(f, buf, 4, 0)) == 2 && !memcmp(buf, "ne", 2));
	OK(maru_getattr(c, maru_file_ino(f), &a));
	CHECK(a.state == MARU_STATE_ORPHANED);
	maru_file_close(f);
	OK(maru_unlink(c, d2.ino, "g2"));
	OK(maru_rmdir(c, MARU_ROOT_ID, "d2"));
	FAILS(maru_rmdir(c, MARU_ROOT_ID, "d2"), ENOENT);
}

static void test_setattr(uint64_t d1)
{
	struct maru_setattr sa = { .mask = MARU_SET_MODE | MARU_SET_MTIME,
				   .mode = 0600, .mtime = { .tv_sec = 1234567 } };
	struct maru_attr a;

	OK(maru_lookup(c, d1, "big", &a));
	OK(maru_setattr(c, a.ino, &sa, &a));
	CHECK((a.mode & 07777) == 0600 && a.mtime.tv_sec == 1234567);
	OK(maru_lookup(c2, d1, "big", &a));
	CHECK((a.mode & 07777) == 0600 && a.mtime.tv_sec == 1234567);
}

static void test_statfs_stats(void)
{
	struct maru_statfs s;
	char small[16], *big;
	ssize_t n;

	OK(maru_statfs(c, &s));
	CHECK(s.capacity > 0 && s.names >= 2500 && s.block > 0);
	CHECK(s.free + s.used + s.pending + s.orphaned == s.capacity);
	n = OK(maru_stats_text(c, small, sizeof(small)));
	CHECK(n > (ssize_t)sizeof(small) && strlen(small) == sizeof(small) - 1);
	big = malloc((size_t)n + 1);
	CHECK(OK(maru_stats_text(c, big, (size_t)n + 1)) >= n - 64);
	CHECK(strstr(big, "maru_client_requests_total ") != NULL);
	CHECK(strstr(big, "maru_client_connected 1") != NULL);
	CHECK(strstr(big, "# TYPE maru_client_bytes_total counter") != NULL);
	CHECK(strstr(big, "marud_") != NULL);
	free(big);
}

static void test_events(void)
{
	struct maru_events *ev;
	struct maru_event e;
	int got_pub = 0, got_unl = 0, i;

	OK(maru_events_open(c2, 0, &ev));
	CHECK(tool_store(c, MARU_ROOT_ID, "evfile", "e", 1) == 0);
	OK(maru_unlink(c, MARU_ROOT_ID, "evfile"));
	for (i = 0; i < 50 && !(got_pub && got_unl); i++) {
		if (OK(maru_events_next(ev, &e, 200)) == 0)
			continue;
		if (strcmp(e.name, "evfile"))
			continue;
		CHECK(e.seq > 0 && e.parent == MARU_ROOT_ID);
		CHECK(strcmp(e.path, "/evfile") == 0);
		got_pub |= e.type == MARU_EV_PUBLISH;
		got_unl |= e.type == MARU_EV_UNLINK && got_pub;
	}
	CHECK(got_pub && got_unl);
	CHECK(OK(maru_events_next(ev, &e, 50)) == 0);
	maru_events_close(ev);
}

static void test_abandon(uint64_t d1)
{
	struct maru_statfs before, after;
	struct maru_file *f;
	struct maru_attr a;

	OK(maru_statfs(c, &before));
	OK(maru_file_create(c, d1, "gone", 0644, 0, 0, 0, 1 << 20, &f));
	CHECK(OK(maru_file_pwrite(f, "x", 1, 0)) == 1);
	maru_file_close(f);
	FAILS(maru_lookup(c, d1, "gone", &a), ENOENT);
	OK(maru_statfs(c, &after));
	CHECK(after.pending == before.pending && after.free == before.free);
}

int main(int argc, char **argv)
{
	struct maru_pool_info pi;
	uint64_t d1, ino;

	if (argc != 2) {
		fprintf(stderr, "usage: maru_api URI\n");
		return 2;
	}
	test_connect_errors(argv[1]);
	c = tool_client(argv[1]);
	c2 = tool_client(argv[1]);
	test_pool_info();
	d1 = test_names();
	ino = test_write_publish(d1);
	test_replace(d1, ino);
	test_big(d1);
	test_readdir_exists();
	test_rename_unlink(d1);
	test_setattr(d1);
	test_abandon(d1);
	test_statfs_stats();
	test_events();
	OK(maru_client_pool_info(c, &pi));
	maru_client_free(c2);
	maru_client_free(c);
	printf("maru_api: ok (%s)\n", pi.data_path == MARU_DATA_SHM ? "shm" : "tcp");
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/journal_test.c: warm restart below the server:
 * journal records (daemon/persist/journal.c) and the directory written to and
 * rebuilt from them (daemon/persist/, daemon/dir/record.c, replay.c) over a fake pool (a
 * malloc'd buffer: metadata area, then data). Each restore goes into a new
 * allocator and directory over the same bytes, as a restarted marud would,
 * and is compared with the directory it came from, name by name.
 *
 * Background checkpoints (daemon/persist/ckpt.c) need a pool that a forked
 * child writes for its parent: those cases run over a MAP_SHARED mapping
 * (wnew_shared), a real fork and a real pipe; "bg-slow" and "bg-fail"
 * (argv[1]) run with MARU_FAILPOINT making the child sleep or fail.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "alloc.h"
#include "dir.h"
#include "journal.h"
#include "journal_fixture.h"

#define ROOT	DIR_ROOT_ID

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Restart: a new directory over the same bytes, restored from the journal. */
static void wrestart(struct wfx *f, struct journal_scan *sc, struct persist_restore_stats *st)
{
	struct journal_scan sc0;
	struct persist_restore_stats st0;

	wclose(f);
	wopen(f, 1);
	assert_int_equal(persist_restore(f->p, f->pool, sc ? sc : &sc0, st ? st : &st0), 0);
	assert_int_equal(dir_check(f->d), 0);
	dir_set_persist(f->d, f->p);
	assert_int_equal(persist_checkpoint(f->p), 0);
}

static int wput(struct wfx *f, uint64_t parent, const char *name, const char *content)
{
	uint64_t len = strlen(content);
	struct extent_list l = { 0 };
	struct dir_attr at;
	int rc;

	rc = dir_create_ext(f->d, f->s, parent, name, strlen(name), 0, 0, 0644, 1, 2, len,
			    &at, &l);
	if (rc)
		return rc;
	if (len)
		memcpy(f->pool + l.v[0].off, content, len);	/* one extent: small */
	alloc_extent_list_free(&l);
	rc = dir_publish(f->d, f->s, at.ino, len, XXH3_64bits(content, len), &at, NULL);
	if (rc) {
		dir_abandon(f->d, f->s, at.ino);
		return rc;
	}
	assert_int_equal(dir_release(f->d, f->s, at.ino), 0);
	return 0;
}

static uint64_t wmkdir(struct wfx *f, uint64_t parent, const char *name)
{
	struct dir_attr at;

	assert_int_equal(dir_mkdir(f->d, parent, name, strlen(name), 0755, 0, 0, &at), 0);
	return at.ino;
}

/* ---- a listing of the whole namespace, to compare directories ---- */

struct lst {
	char *buf;
	size_t len, cap;
	uint64_t dirs[4096];
	unsigned int ndirs;
};

static int lst_cb(void *arg, const struct dir_dirent *de)
{
	struct lst *l = arg;
	char line[512];
	int n = snprintf(line, sizeof(line), "%llu %.*s %u\n", (unsigned long long)de->ino,
			 (int)de->nlen, de->name, de->mode);

	if (l->len + (size_t)n + 1 > l->cap) {
		l->cap = (l->cap + (size_t)n + 1) * 2;
		l->buf = realloc(l->buf, l->cap);
		assert_non_null(l->buf);
	}
	memcpy(l->buf + l->len, line, (size_t)n + 1);
	l->len += (size_t)n;
	if (de->state == DIR_ST_DIR && l->ndirs < 4096)
		l->dirs[l->ndirs++] = de->ino;
	return 0;
}

/* "ino name mode" per entry, plus size and hash of each file, dir by dir. */
static char *listing(struct dir *d)
{
	struct lst *l = calloc(1, sizeof(*l));
	struct dir_attr at;
	unsigned int i;
	char *out;
	int eof;

	assert_non_null(l);
	l->dirs[l->ndirs++] = ROOT;
	for (i = 0; i < l->ndirs; i++) {
		char head[64];
		int n = snprintf(head, sizeof(head), "[%llu]\n", (unsigned long long)l->dirs[i]);
		struct dir_dirent de = { .name = head, .nlen = (size_t)n - 1, .state = 0 };

		lst_cb(l, &de);
		assert_true(dir_readdir(d, NULL, l->dirs[i], 0, UINT32_MAX, lst_cb, l, &eof) >= 0);
		assert_true(eof);
	}
	for (i = 0; i < l->ndirs; i++)
		assert_int_equal(dir_getattr(d, NULL, l->dirs[i], &at), 0);
	out = l->buf ? l->buf : strdup("");
	free(l);
	return out;
}

/* ---- records ---- */

static void test_record_roundtrip(void **state)
{
	uint8_t buf[256], body[40];
	const void *b;
	uint32_t type, blen;
	size_t i;

	for (i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 7);
	persist_jrec_encode(buf, JR_RENAME, 5, 99, body, 37);
	assert_int_equal(jrec_size(37), 64);
	assert_int_equal(persist_jrec_decode(buf, sizeof(buf), 99, 5, &type, &b, &blen), 0);
	assert_int_equal(type, JR_RENAME);
	assert_int_equal(blen, 40);	/* padded */
	assert_memory_equal(b, body, 37);
	assert_int_equal(persist_jrec_decode(buf, sizeof(buf), 99, UINT64_MAX, &type, &b, &blen), 0);
	assert_int_equal(persist_jrec_decode(buf, sizeof(buf), 98, 5, &type, &b, &blen), -EBADMSG);
	assert_int_equal(persist_jrec_decode(buf, sizeof(buf), 99, 6, &type, &b, &blen), -EBADMSG);
	assert_int_equal(persist_jrec_decode(buf, 63, 99, 5, &type, &b, &blen), -EBADMSG);
	/* every single-bit flip anywhere in the record is caught */
	for (i = 0; i < 64 * 8; i++) {
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		assert_int_equal(persist_jrec_decode(buf, sizeof(buf), 99, 5, &type, &b, &blen), -EBADMSG);
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
}

/* A namespace with a bit of everything, recovered exactly, ids above all. */
static void test_restore_equivalence(void **state)
{
	struct persist_restore_stats st;
	struct journal_scan sc;
	struct dir_setattr sa = { .mask = 1u, .mode = 0600 };
	struct dir_attr at;
	struct wfx f;
	char *before, *after, name[32];
	uint64_t a, b;
	int i;

	(void)sa;
	/* a small area, so appends fill halves and checkpoint many times */
	wnew(&f, 128 * 1024, 4096 * BLK, 1);
	a = wmkdir(&f, ROOT, "model");
	b = wmkdir(&f, a, "layer0");
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "chunk-%d.bin", i);
		assert_int_equal(wput(&f, i % 2 ? a : b, name, name), 0);
		if (i % 7 == 0)
			assert_int_equal(dir_unlink(f.d, f.s, i % 2 ? a : b, name, strlen(name)), 0);
		if (i % 11 == 0)
			assert_int_equal(wput(&f, i % 2 ? a : b, name, "replaced"), 0);
	}
	assert_int_equal(dir_rename(f.d, f.s, a, "chunk-1.bin", 11, b, "moved-a-long-name.bin",
				    21, 0), 0);
	assert_int_equal(dir_rename(f.d, f.s, ROOT, "model", 5, ROOT, "model2", 6, 0), 0);
	assert_int_equal(dir_lookup(f.d, NULL, b, "chunk-2.bin", 11, &at), 0);
	sa.mask = 1u;	/* SETATTR_MODE */
	assert_int_equal(dir_setattr(f.d, NULL, at.ino, &sa, &at), 0);
	wmkdir(&f, ROOT, "empty");
	assert_int_equal(dir_rmdir(f.d, ROOT, "empty", 5), 0);
	before = listing(f.d);
	wrestart(&f, &sc, &st);
	assert_true(sc.found);
	assert_int_equal(st.bad_sum, 0);
	assert_int_equal(st.skipped, 0);
	after = listing(f.d);
	assert_string_equal(before, after);
	assert_int_equal(dir_lookup(f.d, NULL, b, "chunk-2.bin", 11, &at), 0);
	assert_int_equal(at.mode & 07777, 0600);
	/* a second restart from the checkpoint the first one wrote: the same */
	wrestart(&f, &sc, &st);
	free(after);
	after = listing(f.d);
	assert_string_equal(before, after);
	/* ids resume above everything handed out */
	assert_int_equal(wput(&f, ROOT, "new", "x"), 0);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "new", 3, &at), 0);
	assert_true(at.ino > st.next_id - 1);
	free(before);
	free(after);
	wclose(&f);
	free(f.pool);
}

static int all_zero(const uint8_t *p, uint64_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* The last record torn at every byte: recovery is the state before it. */
static void test_torn_every_offset(void **state)
{
	struct journal_stats js0, js1;
	struct journal_scan sc;
	struct persist_restore_stats st;
	struct wfx f;
	uint8_t *keep;
	uint64_t total = BLK + 256 * 1024 + 256 * BLK, off, len, k;
	char *before, *after, *got;
	int fill, whole;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	assert_int_equal(wput(&f, ROOT, "a", "alpha"), 0);
	wmkdir(&f, ROOT, "d");
	before = listing(f.d);
	persist_journal_stats(f.j, &js0);
	assert_int_equal(wput(&f, ROOT, "last-one-with-a-name", "omega"), 0);
	persist_journal_stats(f.j, &js1);
	after = listing(f.d);
	keep = malloc(total);
	assert_non_null(keep);
	memcpy(keep, f.pool, total);
	/* After the checkpoint wnew wrote (epoch 1: half 0), appends go there. */
	assert_int_equal(js0.epoch, 1);
	len = js1.used - js0.used;
	off = BLK + 4096 + js0.used;
	assert_true(len > 0);
	for (fill = 0; fill < 2; fill++) {
		for (k = 0; k <= len; k++) {
			memcpy(f.pool, keep, total);
			wclose(&f);
			wopen(&f, 1);
			/* torn: bytes [k, len) of the last record never made it */
			memset(f.pool + off + k, fill ? 0xa5 : 0, len - k);
			assert_int_equal(persist_restore(f.p, f.pool, &sc, &st), 0);
			assert_int_equal(dir_check(f.d), 0);
			got = listing(f.d);
			/* tearing off only the zero padding leaves the record whole */
			whole = k == len || (!fill && all_zero(keep + off + k, len - k));
			assert_string_equal(got, whole ? after : before);
			/*
			 * A scan calls it torn when the header slot where the
			 * log stops is not all zero. The header opens with a
			 * checksum seeded by the half's random salt, so when
			 * only its first bytes survive and they happen to be
			 * zero, the tear looks like a clean end: same listing,
			 * nothing reported. Judge by the torn image itself.
			 */
			assert_int_equal(sc.torn, !whole &&
					 !all_zero(f.pool + off, sizeof(struct jrec_hdr)));
			free(got);
		}
	}
	free(before);
	free(after);
	free(keep);
	wclose(&f);
	free(f.pool);
}

/* Bytes that changed after publish: the version is dropped, never served. */
static void test_checksum_mismatch(void **state)
{
	struct persist_restore_stats st;
	struct dir_attr at;
	struct extent_list l = { 0 };
	struct wfx f;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	assert_int_equal(wput(&f, ROOT, "good", "good bytes"), 0);
	assert_int_equal(wput(&f, ROOT, "bad", "bad bytes"), 0);
	assert_int_equal(dir_open_ext(f.d, f.s, ROOT, "bad", 3, 0, &at, &l), 0);
	f.pool[l.v[0].off + 2] ^= 0x40;
	alloc_extent_list_free(&l);
	assert_int_equal(dir_release(f.d, f.s, at.ino), 0);
	wrestart(&f, NULL, &st);
	assert_int_equal(st.bad_sum, 1);
	assert_int_equal(st.files, 1);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "bad", 3, &at), -ENOENT);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "good", 4, &at), 0);
	wclose(&f);
	free(f.pool);
}

/* A record damaged in the middle: recovery stops there and says what is lost. */
static void test_damaged_middle(void **state)
{
	struct journal_stats js;
	struct journal_scan sc;
	struct persist_restore_stats st;
	struct dir_attr at;
	struct wfx f;
	uint64_t base;
	char name[16];
	int i;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	persist_journal_stats(f.j, &js);
	base = BLK + 4096 + js.used + (js.epoch % 2 == 0 ? persist_journal_half_len(f.j) : 0);
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(wput(&f, ROOT, name, name), 0);
	}
	/* the first publish after the checkpoint: an ids mark, then its record */
	persist_journal_stats(f.j, &js);
	f.pool[base + 200] ^= 1;
	wrestart(&f, &sc, &st);
	assert_true(sc.torn);
	assert_true(sc.lost_records >= 8);
	assert_true(st.files < 10);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "n9", 2, &at), -ENOENT);
	wclose(&f);
	free(f.pool);
}

/* A full metadata area: checkpoints, then ENOSPC at publish; nothing lost. */
static void test_full_enospc(void **state)
{
	struct persist_restore_stats st;
	struct wfx f;
	char name[64], *before, *after;
	int i, rc = 0, n = 0;

	wnew(&f, 32 * 1024, 4096 * BLK, 1);
	for (i = 0; i < 4000 && !rc; i++) {
		snprintf(name, sizeof(name), "name-%06d-padding-padding", i);
		rc = wput(&f, ROOT, name, "");
		n += !rc;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 50);
	/* removals make room again */
	for (i = 0; i < n; i += 2) {
		snprintf(name, sizeof(name), "name-%06d-padding-padding", i);
		assert_int_equal(dir_unlink(f.d, f.s, ROOT, name, strlen(name)), 0);
	}
	assert_int_equal(wput(&f, ROOT, "after-room", "x"), 0);
	before = listing(f.d);
	wrestart(&f, NULL, &st);
	after = listing(f.d);
	assert_string_equal(before, after);
	free(before);
	free(after);
	wclose(&f);
	free(f.pool);
}

/* ---- scale and cost ---- */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 10) : def;
}

static double publish_rate(int journal, uint64_t n)
{
	struct wfx f;
	uint64_t i, d = ROOT;
	char name[32];
	double t0, t;

	wnew(&f, 64ull << 20, 64 * BLK, journal);
	t0 = now_s();
	for (i = 0; i < n; i++) {
		if (i % 1000 == 0) {
			snprintf(name, sizeof(name), "d%llu", (unsigned long long)i / 1000);
			d = wmkdir(&f, ROOT, name);
		}
		snprintf(name, sizeof(name), "%016llx.bin", (unsigned long long)i);
		assert_int_equal(wput(&f, d, name, ""), 0);
	}
	t = now_s() - t0;
	wclose(&f);
	free(f.pool);
	return (double)n / t;
}

/* Create + publish with the journal and without, side by side. */
static void test_publish_cost(void **state)
{
	uint64_t n = env_u64("WARM_BENCH_PUBLISHES", 100000);
	double off1 = publish_rate(0, n), on1 = publish_rate(1, n);
	double off2 = publish_rate(0, n), on2 = publish_rate(1, n);
	double off = off1 > off2 ? off1 : off2, on = on1 > on2 ? on1 : on2;

	printf("warm: publish (create+publish+release, %llu names): %.0f/s without journal, %.0f/s with: ratio %.2f\n",
	       (unsigned long long)n, off, on, on / off);
	assert_true(on > 0 && off > 0);
}

static void test_million_names(void **state)
{
	uint64_t n = env_u64("WARM_NAMES", 1000000), i, d = ROOT;
	struct persist_restore_stats st;
	struct journal_scan sc;
	struct wfx f;
	char name[32];
	double t0, tr, tc;

	wnew(&f, 512ull << 20, 64 * BLK, 1);
	for (i = 0; i < n; i++) {
		if (i % 1000 == 0) {
			snprintf(name, sizeof(name), "d%llu", (unsigned long long)i / 1000);
			d = wmkdir(&f, ROOT, name);
		}
		snprintf(name, sizeof(name), "%016llx.bin", (unsigned long long)i);
		assert_int_equal(wput(&f, d, name, ""), 0);
	}
	wclose(&f);
	wopen(&f, 1);
	t0 = now_s();
	assert_int_equal(persist_restore(f.p, f.pool, &sc, &st), 0);
	tr = now_s() - t0;
	dir_set_persist(f.d, f.p);
	assert_int_equal(persist_checkpoint(f.p), 0);
	tc = now_s() - t0;
	assert_int_equal(st.files, n);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(dir_check(f.d), 0);
	printf("warm: %llu names recovered in %.3f s (%.0f names/s); ready to serve (restore + checkpoint) after %.3f s\n",
	       (unsigned long long)n, tr, (double)n / tr, tc);
	wclose(&f);
	free(f.pool);
}

/* ---- background checkpoints (persist/ckpt.c) ---- */

static struct dir_stats stats(struct wfx *f)
{
	struct dir_stats st;

	dir_stats(f->d, &st);
	return st;
}

/* Until no background checkpoint is under way (10 s at most). */
static void wait_idle(struct wfx *f)
{
	int i;

	for (i = 0; i < 10000 && stats(f).ckpt_running; i++)
		usleep(1000);
	assert_int_equal(stats(f).ckpt_running, 0);
}

/* One more record, no more state: a replace of one of 100 names. */
static void churn(struct wfx *f, unsigned int i)
{
	char name[32];

	snprintf(name, sizeof(name), "churn-%03u.bin", i % 100);
	assert_int_equal(wput(f, ROOT, name, "replaced, again and again"), 0);
}

static void keep(struct wfx *f, int n)
{
	char name[32];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "keep-%02d.bin", i);
		assert_int_equal(wput(f, ROOT, name, name), 0);
	}
}

/* Every child a checkpoint forked has been reaped. */
static void no_child(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * listing() with each directory's entries sorted: a replace keeps its
 * name's readdir position in marud, while a restore appends the name where
 * its last record put it, so only the order may differ.
 */
static char *slisting(struct dir *d)
{
	char *l = listing(d), *out = malloc(strlen(l) + 1), *p, **lines;
	size_t n = 0, i, start = 0, o = 0;

	assert_non_null(out);
	for (p = l; *p; p++)
		n += *p == '\n';
	lines = calloc(n + 1, sizeof(*lines));
	assert_non_null(lines);
	for (n = 0, p = strtok(l, "\n"); p; p = strtok(NULL, "\n"))
		lines[n++] = p;
	for (i = 0; i <= n; i++) {
		if (i < n && lines[i][0] != '[')
			continue;
		if (i > start + 1)	/* entries of the section from start */
			qsort(lines + start + 1, i - start - 1, sizeof(*lines), line_cmp);
		start = i;
	}
	for (i = 0; i < n; i++)
		o += (size_t)sprintf(out + o, "%s\n", lines[i]);
	out[o] = '\0';
	free(lines);
	free(l);
	return out;
}

/* Two listings the same; else print where they part, and fail. */
static void same_listing(const char *want, const char *got)
{
	size_t i = 0, line = 0;

	while (want[i] && want[i] == got[i])
		if (want[i++] == '\n')
			line = i;
	if (!want[i] && !got[i])
		return;
	print_error("listings part at byte %zu: want \"%.60s\", got \"%.60s\"\n", i,
		    want + line, got + line);
	fail();
}

/* Restart f and compare with the listing it had. */
static void restart_same(struct wfx *f)
{
	char *want = slisting(f->d), *got;

	wrestart(f, NULL, NULL);
	got = slisting(f->d);
	same_listing(want, got);
	free(want);
	free(got);
}

#define BG_META	(256ull << 10)
#define BG_DATA	(16ull << 20)

/* Half the room used starts one; it commits without the lock walk. */
static void test_bg_checkpoint(void **state)
{
	struct wfx f;
	unsigned int i;

	wnew_shared(&f, BG_META, BG_DATA);
	keep(&f, 40);
	for (i = 0; i < 20000 && stats(&f).ckpt_bg < 3; i++) {
		churn(&f, i);
		wait_idle(&f);
	}
	assert_true(stats(&f).ckpt_bg >= 3);
	assert_int_equal(stats(&f).ckpt_sync, 1);	/* wnew's */
	assert_int_equal(stats(&f).ckpt_failed, 0);
	no_child();
	restart_same(&f);
	wclose(&f);
	wfree_pool(&f);
	no_child();
}

/* Churn until a background checkpoint is under way (its child sleeps). */
static void start_bg(struct wfx *f)
{
	unsigned int i;

	for (i = 0; i < 20000 && !stats(f).ckpt_running; i++)
		churn(f, i);
	assert_int_equal(stats(f).ckpt_running, 1);
}

/* bg-slow: the child sleeps 1 s before it walks. */
static void test_bg_changes_during_child(void **state)
{
	size_t size = BLK + BG_META + BG_DATA;
	struct wfx f, g;
	struct journal_scan sc;
	struct persist_restore_stats st;
	struct dir_attr at;
	char *now, *crash, name[32];
	uint64_t sub;
	int i;

	wnew_shared(&f, BG_META, BG_DATA);
	keep(&f, 40);
	start_bg(&f);
	/* after the fork: new names, removals, a directory, renames */
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "new-%02d.bin", i);
		assert_int_equal(wput(&f, ROOT, name, "after the fork"), 0);
	}
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "keep-%02d.bin", i);
		assert_int_equal(dir_unlink(f.d, f.s, ROOT, name, strlen(name)), 0);
	}
	sub = wmkdir(&f, ROOT, "sub");
	assert_int_equal(wput(&f, sub, "x.bin", "in sub"), 0);
	assert_int_equal(dir_rename(f.d, f.s, ROOT, "keep-10.bin", 11, sub, "moved.bin", 9, 0), 0);
	assert_int_equal(dir_rename(f.d, f.s, ROOT, "sub", 3, ROOT, "sub2", 4, 0), 0);
	assert_int_equal(dir_lookup(f.d, f.s, ROOT, "sub2", 4, &at), 0);
	/* a crash now: the pool's bytes as they are, restored elsewhere */
	assert_int_equal(stats(&f).ckpt_running, 1);
	now = slisting(f.d);
	memset(&g, 0, sizeof(g));
	g.meta_len = BG_META;
	g.data_len = BG_DATA;
	g.pool = malloc(size);
	assert_non_null(g.pool);
	memcpy(g.pool, f.pool, size);
	wopen(&g, 1);
	assert_int_equal(persist_restore(g.p, g.pool, &sc, &st), 0);
	crash = slisting(g.d);
	same_listing(now, crash);
	wclose(&g);
	wfree_pool(&g);
	free(crash);
	/* the child wakes, walks the state at the fork; the copy adds the rest */
	wait_idle(&f);
	assert_int_equal(stats(&f).ckpt_bg, 1);
	assert_int_equal(stats(&f).ckpt_sync, 1);
	no_child();
	wrestart(&f, NULL, NULL);
	crash = slisting(f.d);
	same_listing(now, crash);
	free(crash);
	free(now);
	wclose(&f);
	wfree_pool(&f);
}

/* bg-slow: the half fills before the child is done: walk under the lock. */
static void test_bg_full_during_child(void **state)
{
	struct wfx f;
	unsigned int i;

	wnew_shared(&f, BG_META, BG_DATA);
	keep(&f, 40);
	start_bg(&f);
	for (i = 0; i < 20000 && stats(&f).ckpt_sync < 2; i++)
		churn(&f, i);
	assert_int_equal(stats(&f).ckpt_sync, 2);
	assert_int_equal(stats(&f).ckpt_bg, 0);
	assert_int_equal(stats(&f).ckpt_failed, 0);	/* dropped, not failed */
	restart_same(&f);
	wclose(&f);
	wfree_pool(&f);
	no_child();
}

/* bg-fail: the child reports EIO; checkpoints go on under the lock. */
static void test_bg_child_fails(void **state)
{
	struct wfx f;
	unsigned int i;

	wnew_shared(&f, BG_META, BG_DATA);
	keep(&f, 40);
	for (i = 0; i < 20000 && !stats(&f).ckpt_failed; i++) {
		churn(&f, i);
		wait_idle(&f);
	}
	assert_int_equal(stats(&f).ckpt_failed, 1);
	for (; i < 40000 && stats(&f).ckpt_sync < 2; i++)
		churn(&f, i);
	assert_int_equal(stats(&f).ckpt_sync, 2);
	assert_int_equal(stats(&f).ckpt_bg, 0);
	no_child();
	restart_same(&f);
	wclose(&f);
	wfree_pool(&f);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest slow[] = {
		cmocka_unit_test(test_bg_changes_during_child),
		cmocka_unit_test(test_bg_full_during_child),
	};
	const struct CMUnitTest fail[] = {
		cmocka_unit_test(test_bg_child_fails),
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_roundtrip),
		cmocka_unit_test(test_restore_equivalence),
		cmocka_unit_test(test_torn_every_offset),
		cmocka_unit_test(test_checksum_mismatch),
		cmocka_unit_test(test_damaged_middle),
		cmocka_unit_test(test_full_enospc),
		cmocka_unit_test(test_publish_cost),
		cmocka_unit_test(test_million_names),
		cmocka_unit_test(test_bg_checkpoint),
	};

	if (argc == 2 && !strcmp(argv[1], "bg-slow"))
		return cmocka_run_group_tests(slow, NULL, NULL);
	if (argc == 2 && !strcmp(argv[1], "bg-fail"))
		return cmocka_run_group_tests(fail, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

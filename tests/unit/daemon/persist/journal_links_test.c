/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/journal_links_test.c: warm restart of the POSIX
 * entries: hard links, symlinks and special files written to the journal
 * (daemon/dir/record.c, daemon/persist/: JR_LINK, JR_UNNAME, JR_SPECIAL) and rebuilt from
 * it (daemon/persist/restore.c, daemon/dir/replay.c) over a fake pool, as journal_test.c does for
 * files and directories. Each restart is compared attribute by attribute
 * (ino, nlink, mode, rdev, owner, times, symlink target, file bytes); a
 * torn record of each new type recovers to the state before it; a journal
 * written before these record types existed still recovers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <xxhash.h>

#include "alloc.h"
#include "dir.h"
#include "journal.h"
#include "journal_fixture.h"

#define ROOT	DIR_ROOT_ID

static void wfree(struct wfx *f)
{
	wclose(f);
	free(f->pool);
}

/* A new directory over the same bytes, restored, without the journal yet. */
static void wreopen(struct wfx *f, struct persist_restore_stats *st)
{
	struct journal_scan sc;

	wclose(f);
	wopen(f, 1);
	assert_int_equal(persist_restore(f->p, f->pool, &sc, st), 0);
	assert_int_equal(dir_check(f->d), 0);
}

static void wrestart(struct wfx *f, struct persist_restore_stats *st)
{
	wreopen(f, st);
	assert_int_equal(st->skipped, 0);
	dir_set_persist(f->d, f->p);
	assert_int_equal(persist_checkpoint(f->p), 0);
}

/* Publish content (len bytes; several blocks are fine: extents are filled). */
static uint64_t wput_n(struct wfx *f, uint64_t parent, const char *name, const char *c,
		       uint64_t len)
{
	struct extent_list l = { 0 };
	struct dir_attr at;
	uint64_t off = 0;
	uint32_t i;

	assert_int_equal(dir_create_ext(f->d, f->s, parent, name, strlen(name), 0, 0, 0644,
					1, 2, len, &at, &l), 0);
	for (i = 0; i < l.n && off < len; i++) {
		uint64_t n = l.v[i].len < len - off ? l.v[i].len : len - off;

		memcpy(f->pool + l.v[i].off, c + off, n);
		off += n;
	}
	alloc_extent_list_free(&l);
	assert_int_equal(dir_publish(f->d, f->s, at.ino, len, XXH3_64bits(c, len), &at, NULL), 0);
	assert_int_equal(dir_release(f->d, f->s, at.ino), 0);
	return at.ino;
}

static uint64_t wput(struct wfx *f, uint64_t parent, const char *name, const char *c)
{
	return wput_n(f, parent, name, c, strlen(c));
}

static uint64_t wmkdir(struct wfx *f, uint64_t parent, const char *name, uint32_t mode,
		       uint32_t gid)
{
	struct dir_attr at;

	assert_int_equal(dir_mkdir(f->d, parent, name, strlen(name), mode, 0, gid, &at), 0);
	return at.ino;
}

static void wlink(struct wfx *f, uint64_t ino, uint64_t parent, const char *name)
{
	struct dir_attr at;

	assert_int_equal(dir_link(f->d, f->s, ino, parent, name, strlen(name), &at), 0);
}

static void wsymlink(struct wfx *f, uint64_t parent, const char *name, const char *target)
{
	struct dir_attr at;

	assert_int_equal(dir_symlink(f->d, f->s, parent, name, strlen(name), target,
				     strlen(target), 7, 8, &at), 0);
}

static void wmknod(struct wfx *f, uint64_t parent, const char *name, uint32_t mode,
		   uint32_t rdev)
{
	struct dir_attr at;

	assert_int_equal(dir_mknod(f->d, f->s, parent, name, strlen(name), mode, rdev, 5, 6,
				   &at), 0);
}

/* ---- a listing with every attribute, to compare directories ---- */

struct lst {
	struct dir *d;
	const uint8_t *pool;
	int ctime;		/* 0: leave ctime out */
	char *buf;
	size_t len, cap;
	uint64_t dirs[256];
	unsigned int ndirs;
};

static void lst_add(struct lst *l, const char *s, size_t n)
{
	if (l->len + n + 1 > l->cap) {
		l->cap = (l->cap + n + 1) * 2;
		l->buf = realloc(l->buf, l->cap);
		assert_non_null(l->buf);
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	l->buf[l->len] = '\0';
}

/* XXH3 of a file's first size bytes, across its extents. */
static uint64_t bytes_hash(const uint8_t *pool, const struct extent_list *ext, uint64_t size)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t pos = 0, at, n, h;

	assert_non_null(st);
	XXH3_64bits_reset(st);
	while (pos < size) {
		n = alloc_extent_list_at(ext, pos, &at);
		assert_true(n > 0);
		n = n < size - pos ? n : size - pos;
		XXH3_64bits_update(st, pool + at, n);
		pos += n;
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

/* What a name shows: attributes, and the target or a hash of the bytes. */
static void lst_what(struct lst *l, uint64_t parent, const struct dir_dirent *de,
		     char *out, size_t cap)
{
	char target[4096];
	struct extent_list ext = { 0 };
	struct dir_attr at;
	uint64_t h = 0;
	int n = 0;

	assert_int_equal(dir_getattr(l->d, NULL, de->ino, &at), 0);
	if (S_ISLNK(at.mode)) {
		n = dir_readlink(l->d, de->ino, target, sizeof(target));
		assert_true(n > 0);
	} else if (S_ISREG(at.mode)) {
		struct dir_session *s;

		assert_int_equal(dir_session_new(l->d, &s), 0);
		assert_int_equal(dir_open_ext(l->d, s, parent, de->name, de->nlen, 0, &at, &ext),
				 0);
		h = bytes_hash(l->pool, &ext, at.size);
		alloc_extent_list_free(&ext);
		dir_session_end(l->d, s);
	}
	snprintf(out, cap, "%llu '%.*s' m%o n%u s%llu r%u u%u g%u a%llu m%llu c%llu h%016llx '%.*s'\n",
		 (unsigned long long)at.ino, (int)de->nlen, de->name, at.mode, at.nlink,
		 (unsigned long long)at.size, at.rdev, at.uid, at.gid,
		 (unsigned long long)at.atime_ns, (unsigned long long)at.mtime_ns,
		 l->ctime ? (unsigned long long)at.ctime_ns : 0ull, (unsigned long long)h,
		 n, target);
}

/* readdir's callback runs under the directory lock: only copy entries. */
struct ent {
	uint64_t ino;
	uint32_t state;
	size_t nlen;
	char name[256];
};

struct ents {
	struct ent v[512];
	unsigned int n;
};

static int ents_cb(void *arg, const struct dir_dirent *de)
{
	struct ents *e = arg;

	assert_true(e->n < 512);
	e->v[e->n] = (struct ent){ de->ino, de->state, de->nlen };
	memcpy(e->v[e->n].name, de->name, de->nlen);
	e->n++;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
	int c = memcmp(x->name, y->name, n);

	return c ? c : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

static void lst_dir(struct lst *l, uint64_t dirid)
{
	struct ents *e = calloc(1, sizeof(*e));
	char line[4096 + 600];
	unsigned int i;
	int eof;

	assert_non_null(e);
	assert_true(dir_readdir(l->d, NULL, dirid, 0, UINT32_MAX, ents_cb, e, &eof) >= 0);
	assert_true(eof);
	/* by name: a checkpoint writes links after the tree, so their readdir
	 * position (never kept across a restart: cookies are new) may move */
	qsort(e->v, e->n, sizeof(e->v[0]), ent_cmp);
	for (i = 0; i < e->n; i++) {
		struct dir_dirent de = { .ino = e->v[i].ino, .state = e->v[i].state,
					 .name = e->v[i].name, .nlen = e->v[i].nlen };

		if (de.state == DIR_ST_DIR) {
			snprintf(line, sizeof(line), "%llu '%.*s' dir\n",
				 (unsigned long long)de.ino, (int)de.nlen, de.name);
			if (l->ndirs < 256)
				l->dirs[l->ndirs++] = de.ino;
		} else {
			lst_what(l, dirid, &de, line, sizeof(line));
		}
		lst_add(l, line, strlen(line));
	}
	free(e);
}

static char *listing_of(struct dir *d, const uint8_t *pool, int ctime)
{
	struct lst l = { d, pool, ctime };
	struct dir_attr at;
	unsigned int i;
	char head[160];

	l.dirs[l.ndirs++] = ROOT;
	for (i = 0; i < l.ndirs; i++) {
		assert_int_equal(dir_getattr(d, NULL, l.dirs[i], &at), 0);
		/* a directory's times follow its entries: the journal keeps them
		 * only at mkdir, setattr and checkpoints (journal_test's domain) */
		snprintf(head, sizeof(head), "[%llu m%o u%u g%u n%u]\n",
			 (unsigned long long)l.dirs[i], at.mode, at.uid, at.gid, at.nlink);
		lst_add(&l, head, strlen(head));
		lst_dir(&l, l.dirs[i]);
	}
	return l.buf ? l.buf : strdup("");
}

static char *listing(struct wfx *f)
{
	return listing_of(f->d, f->pool, 1);
}

/* Equal listings; else print the first line that differs (they are long). */
static void same(const char *want, const char *got)
{
	size_t i = 0, line = 0;

	while (want[i] && want[i] == got[i])
		if (want[i++] == '\n')
			line = i;
	if (want[i] || got[i])
		printf("listing differs at:\nwant: %.300s\ngot:  %.300s\n", want + line, got + line);
	assert_string_equal(want, got);
}

static void attr_of(struct wfx *f, uint64_t parent, const char *name, struct dir_attr *at)
{
	assert_int_equal(dir_lookup(f->d, NULL, parent, name, strlen(name), at), 0);
}

/* ---- the namespace every test builds on ---- */

static char long_target[4096];

static void build_posix(struct wfx *f, uint64_t *sub, uint64_t *sgid)
{
	uint64_t a, b;
	struct dir_setattr sa = { .mask = 1u, .mode = 0600 };	/* SETATTR_MODE */
	struct dir_attr at;

	memset(long_target, 'x', sizeof(long_target) - 1);
	long_target[0] = '/';
	*sub = wmkdir(f, ROOT, "sub", 0755, 0);
	*sgid = wmkdir(f, ROOT, "sgid", 02775, 42);
	a = wput(f, ROOT, "a", "alpha bytes");
	b = wput(f, ROOT, "b", "beta bytes, linked three times");
	wlink(f, a, *sub, "a-link");
	wlink(f, b, *sub, "b1");
	wlink(f, b, ROOT, "b2");
	wlink(f, b, *sgid, "b3");
	wsymlink(f, ROOT, "sym", "a");
	wsymlink(f, *sub, "longsym", long_target);
	wsymlink(f, *sgid, "gsym", "../b");	/* group 42 by the setgid rule */
	wmknod(f, ROOT, "fifo", S_IFIFO | 0640, 0);
	wmknod(f, ROOT, "sock", S_IFSOCK | 0600, 0);
	wmknod(f, *sub, "chr", S_IFCHR | 0620, (1u << 8) | 3);
	wmknod(f, *sgid, "blk", S_IFBLK | 0660, (8u << 8) | 1);
	attr_of(f, ROOT, "fifo", &at);
	assert_int_equal(dir_setattr(f->d, NULL, at.ino, &sa, &at), 0);
	attr_of(f, *sgid, "blk", &at);
	assert_int_equal(at.gid, 42);
	assert_int_equal(at.rdev, (8u << 8) | 1);
}

/* ---- tests ---- */

/* Every POSIX entry comes back exactly, by replay and then by checkpoint. */
static void test_posix_roundtrip(void **state)
{
	struct persist_restore_stats st;
	struct dir_attr at, at2;
	struct wfx f;
	uint64_t sub, sgid;
	char *before, *after, buf[4096];

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	build_posix(&f, &sub, &sgid);
	before = listing(&f);
	wrestart(&f, &st);
	after = listing(&f);
	same(before, after);
	attr_of(&f, sub, "b1", &at);
	attr_of(&f, sgid, "b3", &at2);
	assert_int_equal(at.ino, at2.ino);
	assert_int_equal(at.nlink, 4);
	attr_of(&f, sub, "longsym", &at);
	assert_int_equal(dir_readlink(f.d, at.ino, buf, sizeof(buf)), 4095);
	assert_memory_equal(buf, long_target, 4095);
	attr_of(&f, ROOT, "fifo", &at);
	assert_int_equal(at.mode, S_IFIFO | 0600);
	/* the checkpoint the restart wrote holds the same */
	wrestart(&f, &st);
	free(after);
	after = listing(&f);
	same(before, after);
	free(before);
	free(after);
	wfree(&f);
}

/* Names dropped and moved: unlink of the primary, rename of links, over links. */
static void test_link_changes(void **state)
{
	struct persist_restore_stats st;
	struct dir_attr at;
	struct wfx f;
	uint64_t sub, sgid, b;
	char *before, *after;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	build_posix(&f, &sub, &sgid);
	attr_of(&f, ROOT, "b", &at);
	b = at.ino;
	/* the primary name goes: a link takes the version over */
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "b", 1), 0);
	/* an extra name moves, to a name of another length and directory */
	assert_int_equal(dir_rename(f.d, f.s, sub, "b1", 2, ROOT, "b1-renamed-longer", 17, 0),
			 0);
	/* a rename over a shared name drops that name only */
	wput(&f, ROOT, "c", "gamma");
	assert_int_equal(dir_rename(f.d, f.s, ROOT, "c", 1, sgid, "b3", 2, 0), 0);
	/* a publish over a shared name rebinds that name only */
	wput(&f, sub, "a-link", "new alpha");
	/* rename between two names of one version does nothing */
	wlink(&f, b, sub, "b4");
	assert_int_equal(dir_rename(f.d, f.s, sub, "b4", 2, ROOT, "b2", 2, 0), 0);
	/* an unlink of an extra name */
	assert_int_equal(dir_unlink(f.d, f.s, sub, "b4", 2), 0);
	/* a symlink replaced by a rename, a FIFO unlinked */
	assert_int_equal(dir_rename(f.d, f.s, ROOT, "sym", 3, ROOT, "sock", 4, 0), 0);
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "fifo", 4), 0);
	attr_of(&f, ROOT, "b2", &at);
	assert_int_equal(at.ino, b);
	assert_int_equal(at.nlink, 2);
	before = listing(&f);
	wrestart(&f, &st);
	after = listing(&f);
	same(before, after);
	attr_of(&f, ROOT, "b1-renamed-longer", &at);
	assert_int_equal(at.ino, b);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "b", 1, &at), -ENOENT);
	/* every name of it gone, and then its bytes */
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "b2", 2), 0);
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "b1-renamed-longer", 17), 0);
	free(before);
	before = listing(&f);
	wrestart(&f, &st);
	free(after);
	after = listing(&f);
	same(before, after);
	free(before);
	free(after);
	wfree(&f);
}

/* Eviction of a linked version: no name survives, live or restored. */
static void test_evict_links(void **state)
{
	static char big[16 * BLK];
	struct persist_restore_stats st;
	struct dir_stats ds;
	struct dir_attr at;
	struct wfx f;
	uint64_t sub, sgid, v;
	char *before, *after;

	memset(big, 'k', sizeof(big));
	wnew(&f, 256 * 1024, 48 * BLK, 1);
	build_posix(&f, &sub, &sgid);
	v = wput_n(&f, ROOT, "kv", big, sizeof(big));
	wlink(&f, v, sub, "kv-1");
	wlink(&f, v, sgid, "kv-2");
	/* the pool holds two of these at most: kv (least recent) goes */
	assert_int_equal(dir_unlink(f.d, f.s, ROOT, "a", 1), 0);
	wput_n(&f, ROOT, "kv2", big, sizeof(big));
	wput_n(&f, ROOT, "kv3", big, sizeof(big));
	dir_stats(f.d, &ds);
	assert_true(ds.evictions >= 1);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "kv", 2, &at), -ENOENT);
	assert_int_equal(dir_lookup(f.d, NULL, sub, "kv-1", 4, &at), -ENOENT);
	assert_int_equal(dir_lookup(f.d, NULL, sgid, "kv-2", 4, &at), -ENOENT);
	before = listing(&f);
	wrestart(&f, &st);
	after = listing(&f);
	same(before, after);
	assert_int_equal(dir_lookup(f.d, NULL, sub, "kv-1", 4, &at), -ENOENT);
	free(before);
	free(after);
	wfree(&f);
}

/* A small area: link churn checkpoints many times; replay == checkpoint. */
static void test_checkpoint_equivalence(void **state)
{
	struct persist_restore_stats st;
	struct journal_stats js;
	struct wfx f;
	uint64_t sub, sgid, ino[40];
	char name[64], *before, *after;
	int i;

	wnew(&f, 160 * 1024, 512 * BLK, 1);
	build_posix(&f, &sub, &sgid);
	for (i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "f%d", i % 40);
		if (i < 40)
			ino[i] = wput(&f, ROOT, name, name);
		snprintf(name, sizeof(name), "l%d-%d", i % 40, i);
		wlink(&f, ino[i % 40], i % 2 ? sub : sgid, name);
		if (i % 4 < 2)
			assert_int_equal(dir_unlink(f.d, f.s, i % 2 ? sub : sgid, name,
						    strlen(name)), 0);
		if (i % 5 == 0) {
			snprintf(name, sizeof(name), "s%d", i);
			wsymlink(&f, sub, name, long_target + 3950);
		}
		if (i % 7 == 0) {
			snprintf(name, sizeof(name), "p%d", i);
			wmknod(&f, sgid, name, S_IFCHR | 0600, (unsigned int)i);
		}
	}
	persist_journal_stats(f.j, &js);
	assert_true(js.checkpoints >= 2);
	before = listing(&f);
	/* replay of whatever the last checkpoint left */
	wrestart(&f, &st);
	after = listing(&f);
	same(before, after);
	/* and a checkpoint alone */
	wrestart(&f, &st);
	free(after);
	after = listing(&f);
	same(before, after);
	free(before);
	free(after);
	wfree(&f);
}

static int all_zero(const uint8_t *p, uint64_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

typedef void (*op_fn)(struct wfx *f, uint64_t sub, uint64_t sgid);

static void op_link(struct wfx *f, uint64_t sub, uint64_t sgid)
{
	struct dir_attr at;

	attr_of(f, ROOT, "a", &at);
	wlink(f, at.ino, sgid, "a-another-name");
}

static void op_symlink(struct wfx *f, uint64_t sub, uint64_t sgid)
{
	wsymlink(f, sub, "torn-symlink", long_target + 2000);
}

static void op_mknod(struct wfx *f, uint64_t sub, uint64_t sgid)
{
	wmknod(f, sgid, "torn-dev", S_IFBLK | 0600, 77);
}

static void op_unname(struct wfx *f, uint64_t sub, uint64_t sgid)
{
	assert_int_equal(dir_unlink(f->d, f->s, ROOT, "b", 1), 0);
}

/*
 * The records of op torn at every byte (zeros, then garbage): recovery is
 * the state before it, or after it; an op of two records (an unlink of a
 * shared name is JR_UNNAME, then the version's new ctime) may also stop
 * between them, with every name right and only that ctime older.
 */
static void torn_op(op_fn op)
{
	struct journal_stats js0, js1;
	struct persist_restore_stats st;
	struct wfx f;
	uint64_t total, off, len, first, k, sub, sgid;
	struct jrec_hdr hdr;
	char *before, *after, *after_noc, *got, *got_noc;
	uint8_t *keep;
	int fill, whole;

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	total = BLK + f.meta_len + f.data_len;
	build_posix(&f, &sub, &sgid);
	before = listing(&f);
	persist_journal_stats(f.j, &js0);
	op(&f, sub, sgid);
	persist_journal_stats(f.j, &js1);
	after = listing(&f);
	after_noc = listing_of(f.d, f.pool, 0);
	assert_int_equal(js0.epoch, js1.epoch);
	len = js1.used - js0.used;
	off = BLK + 4096 + js0.used + (js0.epoch % 2 == 0 ? persist_journal_half_len(f.j) : 0);
	memcpy(&hdr, f.pool + off, sizeof(hdr));
	first = hdr.len;	/* the op's first record */
	assert_true(first > 0 && first <= len);
	keep = malloc(total);
	assert_non_null(keep);
	memcpy(keep, f.pool, total);
	for (fill = 0; fill < 2; fill++) {
		for (k = 0; k <= len; k++) {
			memcpy(f.pool, keep, total);
			wclose(&f);
			wopen(&f, 1);
			memset(f.pool + off + k, fill ? 0xa5 : 0, len - k);
			wreopen(&f, &st);
			assert_int_equal(st.skipped, 0);
			got = listing(&f);
			whole = k == len || (!fill && all_zero(keep + off + k, len - k));
			if (whole) {
				same(after, got);
			} else if (k < first && (fill || !all_zero(keep + off + k, first - k))) {
				same(before, got);
			} else {
				got_noc = listing_of(f.d, f.pool, 0);
				same(after_noc, got_noc);
				free(got_noc);
			}
			free(got);
		}
	}
	free(before);
	free(after);
	free(after_noc);
	free(keep);
	wfree(&f);
}

static void test_torn_link(void **state)
{
	torn_op(op_link);
}

static void test_torn_symlink(void **state)
{
	torn_op(op_symlink);
}

static void test_torn_mknod(void **state)
{
	torn_op(op_mknod);
}

static void test_torn_unname(void **state)
{
	torn_op(op_unname);
}

/*
 * A journal as a marud without link records wrote it: files, a directory,
 * a rename, a removal, and a FIFO checkpointed as a file with no extents
 * (which that marud did): it recovers, FIFO included.
 */
static void test_pre_link_journal(void **state)
{
	struct {
		struct jb_file b;
		struct extent e;
		char name[8];
	} file;
	struct {
		struct jb_file b;
		char name[8];
	} fifo;
	struct {
		struct jb_dir b;
		char name[4];
	} dir;
	struct {
		struct jb_rename b;
		char names[16];
	} ren;
	struct jb_remove rm = { 0 };
	struct persist_restore_stats st;
	struct dir_attr at;
	struct wfx f;
	const char *bytes = "old journal bytes";
	uint64_t data = BLK + 256 * 1024, n = strlen(bytes);

	wnew(&f, 256 * 1024, 256 * BLK, 1);
	memcpy(f.pool + data, bytes, n);
	memset(&dir, 0, sizeof(dir));
	dir.b = (struct jb_dir){ 50, ROOT, 1, 2, 3, S_IFDIR | 0755, 0, 0, 3 };
	memcpy(dir.name, "old", 3);
	memset(&file, 0, sizeof(file));
	file.b = (struct jb_file){ 51, 50, n, XXH3_64bits(bytes, n), 4, 5, 6, S_IFREG | 0644,
				   1, 2, 4, 1, 0 };
	file.e = (struct extent){ data, BLK };
	memcpy(file.name, "kept", 4);
	memset(&fifo, 0, sizeof(fifo));
	fifo.b = (struct jb_file){ 52, 50, 0, 0, 7, 8, 9, S_IFIFO | 0600, 0, 0, 4, 0, 0 };
	memcpy(fifo.name, "pipe", 4);
	assert_int_equal(persist_journal_append(f.j, JR_DIR, &dir, sizeof(dir.b) + 3, NULL), 0);
	assert_int_equal(persist_journal_append(f.j, JR_FILE, &file, sizeof(file.b) + sizeof(file.e) + 4,
					NULL), 0);
	assert_int_equal(persist_journal_append(f.j, JR_FILE, &fifo, sizeof(fifo.b) + 4, NULL), 0);
	file.b.id = 53;
	file.e.off = data + BLK;
	memcpy(f.pool + data + BLK, bytes, n);
	memcpy(file.name, "gone", 4);
	assert_int_equal(persist_journal_append(f.j, JR_FILE, &file, sizeof(file.b) + sizeof(file.e) + 4,
					NULL), 0);
	rm.id = 53;
	rm.why = DEV_UNLINK;
	assert_int_equal(persist_journal_append(f.j, JR_REMOVE, &rm, sizeof(rm), NULL), 0);
	memset(&ren, 0, sizeof(ren));
	ren.b = (struct jb_rename){ 51, 50, ROOT, 4, 7 };
	memcpy(ren.names, "keptmoved.", 4 + 6);
	memcpy(ren.names + 4, "moved.b", 7);
	assert_int_equal(persist_journal_append(f.j, JR_RENAME, &ren, sizeof(ren.b) + 11, NULL), 0);
	wrestart(&f, &st);
	assert_int_equal(st.bad_sum, 0);
	attr_of(&f, ROOT, "moved.b", &at);
	assert_int_equal(at.ino, 51);
	assert_int_equal(at.nlink, 1);
	assert_int_equal(at.size, n);
	attr_of(&f, 50, "pipe", &at);
	assert_int_equal(at.mode, S_IFIFO | 0600);
	assert_int_equal(dir_lookup(f.d, NULL, 50, "gone", 4, &at), -ENOENT);
	wfree(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_posix_roundtrip),
		cmocka_unit_test(test_link_changes),
		cmocka_unit_test(test_evict_links),
		cmocka_unit_test(test_checkpoint_equivalence),
		cmocka_unit_test(test_torn_link),
		cmocka_unit_test(test_torn_symlink),
		cmocka_unit_test(test_torn_mknod),
		cmocka_unit_test(test_torn_unname),
		cmocka_unit_test(test_pre_link_journal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

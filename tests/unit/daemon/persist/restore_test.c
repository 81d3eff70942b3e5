/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/restore_test.c: replaying a journal
 * (daemon/persist/restore.c). A journal written record by record, one of
 * each kind (directory, file with its bytes, symlink, FIFO, hard link,
 * attributes, rename, one name of two dropped, a removal, an id mark),
 * restores to exactly the namespace those records describe; a journal
 * whose last record is torn restores up to the record before it; a file
 * whose bytes no longer match its checksum is dropped with its names; a
 * record that does not apply is counted and skipped, the rest still come
 * back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <cmocka.h>

#include "journal_fixture.h"

#define ROOT	DIR_ROOT_ID
#define DATA	(BLK + (1 << 20))	/* first data byte of the fixture's pool */

static void put(struct wfx *f, struct persist_item it)
{
	uint8_t buf[1024];
	uint32_t n = persist_enc_to(&it, buf);

	assert_int_equal(persist_journal_append(f->j, it.type, buf, n, NULL), 0);
}

static struct persist_name nm(uint64_t parent, const char *name)
{
	return (struct persist_name){ parent, name, (uint32_t)strlen(name) };
}

static void restore_fresh(struct wfx *f, struct journal_scan *sc,
			  struct persist_restore_stats *st)
{
	wclose(f);
	wopen(f, 1);
	assert_int_equal(persist_restore(f->p, f->pool, sc, st), 0);
	assert_int_equal(dir_check(f->d), 0);
}

static int look(struct wfx *f, uint64_t parent, const char *name, struct dir_attr *at)
{
	return dir_lookup(f->d, f->s, parent, name, strlen(name), at);
}

static void test_every_record_kind(void **state)
{
	static const char body[] = "bytes of the file";
	struct extent e = { DATA, BLK };
	struct persist_restore_stats st;
	struct journal_scan sc;
	struct dir_attr at;
	char tgt[16];
	struct wfx f;

	wnew(&f, 1 << 20, 4 << 20, 1);
	memcpy(f.pool + DATA, body, sizeof(body) - 1);
	put(&f, (struct persist_item){ .type = JR_DIR, .id = 10, .mode = 040755, .mtime = 77,
				       .at = nm(ROOT, "d") });
	put(&f, (struct persist_item){ .type = JR_FILE, .id = 11, .mode = 0100644,
				       .size = sizeof(body) - 1,
				       .xxh3 = XXH3_64bits(body, sizeof(body) - 1),
				       .ext = &e, .next = 1, .at = nm(10, "f") });
	put(&f, (struct persist_item){ .type = JR_SPECIAL, .id = 12, .mode = 0120777, .size = 3,
				       .tlen = 3, .target = "d/f", .at = nm(ROOT, "sl") });
	put(&f, (struct persist_item){ .type = JR_SPECIAL, .id = 13, .mode = S_IFIFO | 0600,
				       .at = nm(10, "fifo") });
	put(&f, (struct persist_item){ .type = JR_LINK, .id = 11, .ctime = 5,
				       .at = nm(ROOT, "hard") });
	put(&f, (struct persist_item){ .type = JR_LINK, .id = 11, .ctime = 6,
				       .at = nm(ROOT, "hard2") });
	put(&f, (struct persist_item){ .type = JR_ATTR, .id = 11, .mode = 0100600, .uid = 3,
				       .mtime = 99 });
	put(&f, (struct persist_item){ .type = JR_RENAME, .id = 13, .ctime = 55,
				       .at = nm(10, "fifo"), .to = nm(ROOT, "pipe") });
	put(&f, (struct persist_item){ .type = JR_UNNAME, .id = 11, .why = DEV_UNLINK,
				       .at = nm(ROOT, "hard2") });
	put(&f, (struct persist_item){ .type = JR_DIR, .id = 14, .mode = 040755,
				       .at = nm(ROOT, "gone") });
	put(&f, (struct persist_item){ .type = JR_REMOVE, .id = 14, .why = DEV_RMDIR });
	put(&f, (struct persist_item){ .type = JR_IDS, .id = 500000 });
	restore_fresh(&f, &sc, &st);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(st.bad_sum, 0);
	assert_int_equal(st.dirs, 1);		/* d (the root is not counted) */
	assert_int_equal(st.files, 4);		/* f, hard, sl, pipe */
	assert_int_equal(st.next_id, 500000);
	assert_int_equal(look(&f, ROOT, "d", &at), 0);
	assert_int_equal(at.ino, 10);
	assert_int_equal(at.mtime_ns, 77);
	assert_int_equal(look(&f, 10, "f", &at), 0);
	assert_int_equal(at.ino, 11);
	assert_int_equal(at.size, sizeof(body) - 1);
	assert_int_equal(at.mode, 0100600);
	assert_int_equal(at.uid, 3);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(look(&f, ROOT, "hard", &at), 0);
	assert_int_equal(at.ino, 11);
	assert_int_equal(look(&f, ROOT, "hard2", &at), -ENOENT);
	assert_int_equal(look(&f, ROOT, "sl", &at), 0);
	assert_int_equal(dir_readlink(f.d, at.ino, tgt, sizeof(tgt)), 3);
	assert_memory_equal(tgt, "d/f", 3);
	assert_int_equal(look(&f, 10, "fifo", &at), -ENOENT);
	assert_int_equal(look(&f, ROOT, "pipe", &at), 0);
	assert_int_equal(at.ino, 13);
	assert_int_equal(at.ctime_ns, 55);
	assert_int_equal(look(&f, ROOT, "gone", &at), -ENOENT);
	wclose(&f);
	free(f.pool);
}

static void test_torn_tail(void **state)
{
	struct persist_restore_stats st;
	struct journal_stats js;
	struct journal_scan sc;
	struct dir_attr at;
	struct wfx f;
	uint64_t off;

	wnew(&f, 1 << 20, 4 << 20, 1);
	wfx_put(&f, ROOT, "one", "1");
	wfx_put(&f, ROOT, "two", "22");
	persist_journal_stats(f.j, &js);
	wfx_put(&f, ROOT, "three", "333");
	/* the last record, half written: its checksum no longer holds */
	off = BLK + JHALF_HDR + js.used + (js.epoch % 2 == 0 ? persist_journal_half_len(f.j) : 0);
	f.pool[off + sizeof(struct jrec_hdr) + 4] ^= 0xff;
	restore_fresh(&f, &sc, &st);
	assert_int_equal(sc.torn, 1);
	assert_int_equal(sc.lost_records, 0);
	assert_int_equal(st.files, 2);
	assert_int_equal(look(&f, ROOT, "one", &at), 0);
	assert_int_equal(look(&f, ROOT, "two", &at), 0);
	assert_int_equal(look(&f, ROOT, "three", &at), -ENOENT);
	wclose(&f);
	free(f.pool);
}

static void test_bad_bytes_dropped_with_names(void **state)
{
	struct persist_restore_stats st;
	struct journal_scan sc;
	struct extent_list l = { 0 };
	struct dir_attr at;
	struct wfx f;
	uint64_t ino;

	wnew(&f, 1 << 20, 4 << 20, 1);
	ino = wfx_put(&f, ROOT, "bad", "these bytes change");
	wfx_put(&f, ROOT, "good", "these stay");
	assert_int_equal(dir_link(f.d, f.s, ino, ROOT, "bad2", 4, &at), 0);
	assert_int_equal(dir_open_ext(f.d, f.s, ROOT, "bad", 3, 0, &at, &l), 0);
	f.pool[l.v[0].off] ^= 1;
	alloc_extent_list_free(&l);
	assert_int_equal(dir_release(f.d, f.s, ino), 0);
	restore_fresh(&f, &sc, &st);
	assert_int_equal(st.bad_sum, 1);
	assert_int_equal(st.bad_sum_bytes, strlen("these bytes change"));
	assert_int_equal(look(&f, ROOT, "bad", &at), -ENOENT);
	assert_int_equal(look(&f, ROOT, "bad2", &at), -ENOENT);
	assert_int_equal(look(&f, ROOT, "good", &at), 0);
	wclose(&f);
	free(f.pool);
}

static void test_record_that_does_not_apply(void **state)
{
	struct persist_restore_stats st;
	struct journal_scan sc;
	struct dir_attr at;
	struct wfx f;

	wnew(&f, 1 << 20, 4 << 20, 1);
	/* its parent never existed */
	put(&f, (struct persist_item){ .type = JR_DIR, .id = 20, .mode = 040755,
				       .at = nm(999, "orphan") });
	put(&f, (struct persist_item){ .type = JR_DIR, .id = 21, .mode = 040755,
				       .at = nm(ROOT, "fine") });
	restore_fresh(&f, &sc, &st);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(look(&f, ROOT, "fine", &at), 0);
	/* ids still resume above the skipped record's */
	assert_true(st.next_id > 21);
	wclose(&f);
	free(f.pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_record_kind),
		cmocka_unit_test(test_torn_tail),
		cmocka_unit_test(test_bad_bytes_dropped_with_names),
		cmocka_unit_test(test_record_that_does_not_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/replay_test.c: what a replayed record means to the
 * directory (daemon/dir/replay.c), applied item by item as persist/
 * restore.c hands them over. A file claims its extents in the allocator
 * (a second file over the same bytes is refused) and counts as used; a
 * file landing on a name replaces it; a directory, a link, a rename, a
 * removal do what they say and keep the parents' recorded times; a
 * record naming what is not there is refused; dropping a version takes
 * its links; the end of a replay moves the id counter above every id seen.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dir_priv.h"
#include "fixture.h"
#include "persist.h"

static struct persist_name nm(uint64_t parent, const char *name)
{
	return (struct persist_name){ parent, name, (uint32_t)strlen(name) };
}

static int apply(struct fx *f, struct persist_item it)
{
	int rc;

	pthread_mutex_lock(&f->d->lock);
	rc = dir_replay_item(f->d, &it);
	pthread_mutex_unlock(&f->d->lock);
	return rc;
}

static struct persist_item file(uint64_t id, const struct extent *e, const char *name)
{
	return (struct persist_item){ .type = JR_FILE, .id = id, .mode = 0100644,
				      .size = 100, .ext = e, .next = 1, .at = nm(ROOT, name) };
}

static void test_files_claim_their_bytes(void **state)
{
	struct extent e1 = { BASE, BLK }, e2 = { BASE + 4 * BLK, BLK };
	struct dir_attr at;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(apply(&f, file(10, &e1, "a")), 0);
	assert_int_equal(stats(&f).used, BLK);
	/* the same bytes again: refused, nothing changes */
	assert_int_equal(apply(&f, file(11, &e1, "b")), -EEXIST);
	assert_int_equal(lookup(&f, f.s1, ROOT, "b", &at), -ENOENT);
	/* the same id again: refused */
	assert_int_equal(apply(&f, file(10, &e2, "c")), -EEXIST);
	/* a new version under the name: the old one and its bytes go */
	assert_int_equal(apply(&f, file(12, &e2, "a")), 0);
	assert_int_equal(lookup(&f, f.s1, ROOT, "a", &at), 0);
	assert_int_equal(at.ino, 12);
	assert_int_equal(stats(&f).used, BLK);
	assert_int_equal(stats(&f).names, 1);
	fx_close(&f);
}

static void test_names_move_and_go(void **state)
{
	struct extent e = { BASE, BLK };
	struct dir_attr at;
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(apply(&f, (struct persist_item){ .type = JR_DIR, .id = 5,
				.mode = 040755, .mtime = 1000, .ctime = 1000,
				.at = nm(ROOT, "d") }), 0);
	assert_int_equal(apply(&f, file(6, &e, "f")), 0);
	assert_int_equal(apply(&f, (struct persist_item){ .type = JR_LINK, .id = 6,
				.ctime = 77, .at = nm(5, "l") }), 0);
	/* a link to what is not there */
	assert_int_equal(apply(&f, (struct persist_item){ .type = JR_LINK, .id = 66,
				.at = nm(5, "x") }), -ENOENT);
	assert_int_equal(apply(&f, (struct persist_item){ .type = JR_RENAME, .id = 6,
				.ctime = 88, .at = nm(ROOT, "f"), .to = nm(5, "g") }), 0);
	assert_int_equal(lookup(&f, f.s1, 5, "g", &at), 0);
	assert_int_equal(at.ino, 6);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(at.ctime_ns, 88);
	assert_int_equal(lookup(&f, f.s1, ROOT, "d", &at), 0);
	assert_int_equal(at.mtime_ns, 1000);	/* the recorded times stay */
	/* a directory with entries is not removed */
	assert_int_equal(apply(&f, (struct persist_item){ .type = JR_REMOVE, .id = 5 }),
			 -ENOTEMPTY);
	/* dropping the version takes its link too */
	pthread_mutex_lock(&f.d->lock);
	dir_replay_drop(f.d, 6);
	pthread_mutex_unlock(&f.d->lock);
	assert_int_equal(lookup(&f, f.s1, 5, "l", &at), -ENOENT);
	assert_int_equal(lookup(&f, f.s1, 5, "g", &at), -ENOENT);
	assert_int_equal(apply(&f, (struct persist_item){ .type = JR_REMOVE, .id = 5 }), 0);
	assert_int_equal(stats(&f).dirs, 0);
	assert_int_equal(stats(&f).used, 0);
	assert_int_equal(apply(&f, (struct persist_item){ .type = JR_ATTR, .id = 5 }), -ENOENT);
	assert_int_equal(apply(&f, (struct persist_item){ .type = 77 }), -EBADMSG);
	fx_close(&f);
}

static void test_replayed_moves_ids(void **state)
{
	struct persist_restore_stats st = { 0 };
	struct extent e = { BASE, BLK };
	struct fx f;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(apply(&f, file(40, &e, "f")), 0);
	pthread_mutex_lock(&f.d->lock);
	dir_replayed(f.d, 1000, &st);
	pthread_mutex_unlock(&f.d->lock);
	assert_int_equal(st.next_id, 1001);
	assert_int_equal(st.files, 1);
	assert_int_equal(st.bytes, BLK);
	/* a new name after the replay gets an id above it */
	assert_true(put_file(&f, f.s1, ROOT, "new", "n") > 1000);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files_claim_their_bytes),
		cmocka_unit_test(test_names_move_and_go),
		cmocka_unit_test(test_replayed_moves_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/enc_test.c: record bodies (daemon/persist/enc.c).
 * Every record kind encodes and decodes back to the same item; a body
 * cut short, or of an unknown kind, is refused; the sanity check refuses
 * items no writer makes (a symlink as JR_FILE, bytes past the extents, an
 * empty name, a FIFO with a target); a rename written before hard links
 * (no ctime after the names) decodes with ctime 0.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "persist.h"

static const struct extent ext2[2] = { { 8192, 4096 }, { 65536, 8192 } };

static struct persist_item item_of(uint32_t type)
{
	struct persist_item it = { .type = type, .id = 42, .atime = 1, .mtime = 2, .ctime = 3,
				   .mode = 0100644, .uid = 7, .gid = 8,
				   .at = { 5, "name", 4 } };

	switch (type) {
	case JR_FILE:
		it.size = 10000;
		it.xxh3 = 0xabcdef;
		it.ext = ext2;
		it.next = 2;
		break;
	case JR_SPECIAL:
		it.mode = 0120777;
		it.size = it.tlen = 6;
		it.target = "a/b/cd";
		break;
	case JR_DIR:
		it.mode = 040755;
		break;
	case JR_RENAME:
		it.to = (struct persist_name){ 9, "other", 5 };
		break;
	case JR_REMOVE:
	case JR_UNNAME:
		it.why = 3;
		break;
	}
	return it;
}

static void same_name(const struct persist_name *a, const struct persist_name *b)
{
	assert_int_equal(a->parent, b->parent);
	assert_int_equal(a->nlen, b->nlen);
	assert_memory_equal(a->name, b->name, a->nlen);
}

static void roundtrip(uint32_t type)
{
	struct persist_item it = item_of(type), back;
	uint8_t buf[512];
	uint32_t n = persist_enc_to(&it, buf);

	assert_int_equal(n, persist_enc_len(&it));
	assert_int_equal(persist_dec(type, buf, n, &back), 0);
	assert_int_equal(back.type, type);
	assert_int_equal(back.id, it.id);
	if (type == JR_FILE || type == JR_SPECIAL || type == JR_DIR || type == JR_ATTR) {
		assert_int_equal(back.mtime, it.mtime);
		assert_int_equal(back.mode, it.mode);
		assert_int_equal(back.gid, it.gid);
	}
	if (type != JR_REMOVE && type != JR_ATTR && type != JR_IDS)
		same_name(&back.at, &it.at);
	if (type == JR_FILE) {
		assert_int_equal(back.size, it.size);
		assert_int_equal(back.xxh3, it.xxh3);
		assert_int_equal(back.next, 2);
		assert_memory_equal(back.ext, ext2, sizeof(ext2));
	}
	if (type == JR_SPECIAL) {
		assert_int_equal(back.tlen, 6);
		assert_memory_equal(back.target, "a/b/cd", 6);
	}
	if (type == JR_RENAME) {
		same_name(&back.to, &it.to);
		assert_int_equal(back.ctime, it.ctime);
	}
	if (type == JR_LINK)
		assert_int_equal(back.ctime, it.ctime);
	if (type == JR_REMOVE || type == JR_UNNAME)
		assert_int_equal(back.why, 3);
	assert_int_equal(persist_item_check(&back), 0);
	/* one byte short: every length is checked */
	assert_int_equal(persist_dec(type, buf, n - 1, &back),
			 type == JR_RENAME ? 0 : -EBADMSG);
}

static void test_roundtrip_every_kind(void **state)
{
	static const uint32_t kinds[] = { JR_DIR, JR_FILE, JR_REMOVE, JR_RENAME, JR_ATTR,
					  JR_IDS, JR_LINK, JR_UNNAME, JR_SPECIAL };
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		roundtrip(kinds[i]);
}

static void test_pin_roundtrip(void **state)
{
	struct persist_item it = { .type = JR_PIN, .id = 77, .until = 1800000000123456789ull };
	struct persist_item back;
	uint8_t buf[64];
	uint32_t n = persist_enc_to(&it, buf);

	assert_int_equal(n, sizeof(struct jb_pin));
	assert_int_equal(n, persist_enc_len(&it));
	assert_int_equal(persist_dec(JR_PIN, buf, n, &back), 0);
	assert_int_equal(back.type, JR_PIN);
	assert_true(back.id == 77 && back.until == it.until);
	assert_int_equal(persist_item_check(&back), 0);
	assert_int_equal(persist_dec(JR_PIN, buf, n - 1, &back), -EBADMSG);
	/* an unpin is the same record with no deadline */
	it.until = 0;
	persist_enc_to(&it, buf);
	assert_int_equal(persist_dec(JR_PIN, buf, n, &back), 0);
	assert_true(back.until == 0);
}

static void test_refuses_short_and_unknown(void **state)
{
	struct persist_item it = item_of(JR_FILE), back;
	uint8_t buf[512];

	persist_enc_to(&it, buf);
	assert_int_equal(persist_dec(JR_FILE, buf, sizeof(struct jb_file) - 1, &back), -EBADMSG);
	/* extents claimed past the body */
	assert_int_equal(persist_dec(JR_FILE, buf, sizeof(struct jb_file) + 16, &back), -EBADMSG);
	assert_int_equal(persist_dec(99, buf, 100, &back), -EBADMSG);
	assert_int_equal(persist_dec(0, buf, 100, &back), -EBADMSG);
}

static void test_old_rename_has_no_ctime(void **state)
{
	struct persist_item it = item_of(JR_RENAME), back;
	uint8_t buf[512];
	uint32_t n = persist_enc_to(&it, buf);

	/* before hard links: the names, then padding only */
	assert_int_equal(persist_dec(JR_RENAME, buf, n - 8 + 3, &back), 0);
	assert_int_equal(back.ctime, 0);
	same_name(&back.to, &it.to);
}

static void test_check_refuses_what_no_writer_makes(void **state)
{
	struct persist_item it;

	it = item_of(JR_FILE);
	it.mode = 0120777;		/* a symlink needs JR_SPECIAL */
	assert_int_equal(persist_item_check(&it), -EBADMSG);
	it = item_of(JR_FILE);
	it.size = 4096 + 8192 + 1;	/* past its extents */
	assert_int_equal(persist_item_check(&it), -ERANGE);
	it = item_of(JR_DIR);
	it.at.nlen = 0;
	assert_int_equal(persist_item_check(&it), -EINVAL);
	it = item_of(JR_RENAME);
	it.to.nlen = 300;
	assert_int_equal(persist_item_check(&it), -EINVAL);
	it = item_of(JR_SPECIAL);
	it.target = "a\0b/cd";		/* a NUL in the target */
	assert_int_equal(persist_item_check(&it), -EBADMSG);
	it = item_of(JR_SPECIAL);
	it.mode = S_IFIFO | 0644;	/* a FIFO has no target */
	assert_int_equal(persist_item_check(&it), -EBADMSG);
	it.tlen = it.size = 0;
	assert_int_equal(persist_item_check(&it), 0);
	it.mode = 0100644;		/* a regular file is no special file */
	assert_int_equal(persist_item_check(&it), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_every_kind),
		cmocka_unit_test(test_pin_roundtrip),
		cmocka_unit_test(test_refuses_short_and_unknown),
		cmocka_unit_test(test_old_rename_has_no_ctime),
		cmocka_unit_test(test_check_refuses_what_no_writer_makes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/link_test.c: hard links, symlinks and special
 * files (daemon/dir/link.c) over the shared fixture: nlink of every name,
 * unlink of one name (primary or not) keeps the others, rename between two
 * names of one version does nothing (and pushes no event), a lease holds
 * the version whatever happens to its names, eviction removes every name
 * at once, a publish under one name rebinds only it; symlinks and special
 * files take no pool bytes, are never evicted, keep their target / rdev,
 * take chmod/chown/times; names over 255 bytes give -ENAMETOOLONG; rename
 * reports the seq of the event it pushed, 0 when none; set-group-ID
 * directories hand their group to new entries. dir_check() runs
 * after every step that changes accounting.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <cmocka.h>

#include "fixture.h"

static int do_link(struct fx *f, uint64_t ino, uint64_t parent, const char *name,
		   struct dir_attr *at)
{
	return dir_link(f->d, f->s1, ino, parent, name, strlen(name), at);
}

static uint32_t nlink_of(struct fx *f, uint64_t parent, const char *name)
{
	struct dir_attr at;

	assert_int_equal(lookup(f, NULL, parent, name, &at), 0);
	return at.nlink;
}

static void test_link_nlink_and_unlink(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t ino, sub;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	sub = do_mkdir(&f, ROOT, "sub");
	ino = put_file(&f, f.s1, ROOT, "a", "hello");
	assert_int_equal(do_link(&f, ino, sub, "b", &at), 0);
	assert_int_equal(at.ino, ino);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(do_link(&f, ino, ROOT, "c", &at), 0);
	assert_int_equal(nlink_of(&f, ROOT, "a"), 3);
	assert_int_equal(nlink_of(&f, sub, "b"), 3);
	assert_int_equal(do_link(&f, ino, ROOT, "a", &at), -EEXIST);
	assert_int_equal(do_link(&f, sub, ROOT, "d", &at), -EPERM);
	assert_int_equal(do_link(&f, 99999, ROOT, "d", &at), -ENOENT);
	assert_int_equal(stats(&f).names, 3);
	assert_int_equal(dir_check(f.d), 0);
	/* Unlink the name that holds the version: another one takes it. */
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "a", 1), 0);
	assert_int_equal(dir_check(f.d), 0);
	assert_int_equal(nlink_of(&f, sub, "b"), 2);
	assert_int_equal(expect_content(&f, f.s2, sub, "b", "hello"), ino);
	assert_int_equal(expect_content(&f, f.s2, ROOT, "c", "hello"), ino);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "c", 1), 0);
	assert_int_equal(nlink_of(&f, sub, "b"), 1);
	assert_int_equal(dir_check(f.d), 0);
	assert_int_equal(dir_unlink(f.d, f.s1, sub, "b", 1), 0);
	assert_int_equal(lookup(&f, NULL, sub, "b", &at), -ENOENT);
	assert_int_equal(stats(&f).used, 0);
	assert_int_equal(stats(&f).names, 0);
	fx_close(&f);
}

static void test_link_rename_same_version(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t ino, seq, before;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	ino = put_file(&f, f.s1, ROOT, "a", "x");
	assert_int_equal(do_link(&f, ino, ROOT, "b", &at), 0);
	before = stats(&f).event_seq;
	assert_int_equal(dir_rename_ev(f.d, f.s1, ROOT, "a", 1, ROOT, "b", 1, 0, &seq), 0);
	assert_int_equal(seq, 0);
	assert_int_equal(stats(&f).event_seq, before);
	assert_int_equal(nlink_of(&f, ROOT, "a"), 2);
	assert_int_equal(nlink_of(&f, ROOT, "b"), 2);
	/* Moving a link name elsewhere keeps it a name of the version. */
	assert_int_equal(dir_rename_ev(f.d, f.s1, ROOT, "b", 1, ROOT, "longer-name", 11, 0,
				       &seq), 0);
	assert_int_equal(seq, before + 1);
	assert_int_equal(lookup(&f, NULL, ROOT, "longer-name", &at), 0);
	assert_int_equal(at.ino, ino);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(dir_check(f.d), 0);
	/* Renaming a plain file over a link name drops only that name. */
	put_file(&f, f.s1, ROOT, "other", "yy");
	assert_int_equal(dir_rename(f.d, f.s1, ROOT, "other", 5, ROOT, "a", 1, 0), 0);
	assert_int_equal(nlink_of(&f, ROOT, "longer-name"), 1);
	expect_content(&f, f.s2, ROOT, "a", "yy");
	expect_content(&f, f.s2, ROOT, "longer-name", "x");
	fx_close(&f);
}

static void test_link_lease_and_publish(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t ino, nv;

	(void)state;
	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	ino = put_file(&f, f.s1, ROOT, "a", "old");
	assert_int_equal(do_link(&f, ino, ROOT, "b", &at), 0);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "b", 1, 0, &at), 0);
	/* A new version published under "a" rebinds only "a". */
	nv = put_file(&f, f.s1, ROOT, "a", "new!");
	assert_int_not_equal(nv, ino);
	assert_int_equal(nlink_of(&f, ROOT, "a"), 1);
	assert_int_equal(nlink_of(&f, ROOT, "b"), 1);
	expect_content(&f, f.s1, ROOT, "b", "old");
	assert_int_equal(dir_check(f.d), 0);
	/* The last name goes; the lease keeps the bytes. */
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "b", 1), 0);
	assert_int_equal(dir_getattr(f.d, f.s2, ino, &at), 0);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	assert_int_equal(at.nlink, 0);
	assert_true(stats(&f).orphaned > 0);
	assert_int_equal(dir_check(f.d), 0);
	assert_int_equal(dir_release(f.d, f.s2, ino), 0);
	assert_int_equal(stats(&f).orphaned, 0);
	/* A link of an unlinked version is refused. */
	assert_int_equal(do_link(&f, ino, ROOT, "c", &at), -ENOENT);
	fx_close(&f);
}

static void test_link_eviction_removes_all(void **state)
{
	struct dir_event ev[16];
	struct fx f;
	struct dir_attr at;
	uint64_t ino, seq;
	int n, i, evicts = 0;

	(void)state;
	fx_open(&f, 4, DIR_EVICT_LRU, 0);
	ino = put_file(&f, f.s1, ROOT, "a", "victim");
	assert_int_equal(do_link(&f, ino, ROOT, "b", &at), 0);
	assert_int_equal(do_link(&f, ino, ROOT, "c", &at), 0);
	seq = stats(&f).event_seq;
	/* A file as big as the pool: only evicting the victim makes room. */
	put_sized(&f, f.s1, ROOT, "big", stats(&f).capacity);
	assert_int_equal(lookup(&f, NULL, ROOT, "a", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "b", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "c", &at), -ENOENT);
	assert_int_equal(stats(&f).names, 1);
	n = dir_events_wait(f.d, seq, ev, 16, 0);
	for (i = 0; i < n; i++)
		evicts += ev[i].type == DEV_EVICT && ev[i].ino == ino;
	assert_int_equal(evicts, 3);
	fx_close(&f);
}

static void test_symlink_and_special(void **state)
{
	struct dir_setattr sa = { .mask = SETATTR_MODE | SETATTR_UID | SETATTR_ATIME,
				  .mode = 0600, .uid = 77, .atime_ns = 5 };
	char target[PROTO_PATH_MAX], buf[PROTO_PATH_MAX];
	struct dir_stats st0;
	struct fx f;
	struct dir_attr at;
	uint64_t l;

	(void)state;
	fx_open(&f, 4, DIR_EVICT_LRU, 0);
	st0 = stats(&f);
	memset(target, 'x', sizeof(target));
	assert_int_equal(dir_symlink(f.d, f.s1, ROOT, "l", 1, target, PROTO_PATH_MAX, 1, 2,
				     &at), -ENAMETOOLONG);
	assert_int_equal(dir_symlink(f.d, f.s1, ROOT, "l", 1, target, PROTO_PATH_MAX - 1,
				     1, 2, &at), 0);
	l = at.ino;
	assert_true(S_ISLNK(at.mode));
	assert_int_equal(at.size, PROTO_PATH_MAX - 1);
	assert_int_equal(at.reserved, 0);
	assert_int_equal(at.uid, 1);
	assert_int_equal(dir_readlink(f.d, l, buf, sizeof(buf)), PROTO_PATH_MAX - 1);
	assert_memory_equal(buf, target, PROTO_PATH_MAX - 1);
	assert_int_equal(dir_symlink(f.d, f.s1, ROOT, "l", 1, "t", 1, 1, 2, &at), -EEXIST);
	assert_int_equal(dir_mknod(f.d, f.s1, ROOT, "fifo", 4, S_IFIFO | 0644, 0, 3, 4, &at), 0);
	assert_true(S_ISFIFO(at.mode));
	assert_int_equal(dir_readlink(f.d, at.ino, buf, sizeof(buf)), -EINVAL);
	/* Nothing to lease: no bytes in the pool. */
	assert_int_equal(dir_open(f.d, f.s1, ROOT, "fifo", 4, 0, &at), -ENXIO);
	assert_int_equal(dir_open(f.d, f.s1, ROOT, "l", 1, 0, &at), -ELOOP);
	assert_int_equal(dir_mknod(f.d, f.s1, ROOT, "sock", 4, S_IFSOCK | 0644, 0, 3, 4, &at), 0);
	assert_int_equal(dir_mknod(f.d, f.s1, ROOT, "chr", 3, S_IFCHR | 0600, makedev(1, 3),
				   0, 0, &at), 0);
	assert_int_equal(at.rdev, makedev(1, 3));
	assert_int_equal(dir_mknod(f.d, f.s1, ROOT, "blk", 3, S_IFBLK | 0600, makedev(8, 1),
				   0, 0, &at), 0);
	assert_int_equal(dir_mknod(f.d, f.s1, ROOT, "reg", 3, S_IFREG | 0600, 0, 0, 0, &at),
			 -EINVAL);
	/* No pool bytes, nothing evictable. */
	assert_int_equal(stats(&f).free, st0.free);
	assert_int_equal(stats(&f).evictable, 0);
	assert_int_equal(stats(&f).names, 5);
	assert_int_equal(dir_check(f.d), 0);
	/* chmod/chown/utimensat on a symlink keep its type. */
	assert_int_equal(dir_setattr(f.d, f.s1, l, &sa, &at), 0);
	assert_true(S_ISLNK(at.mode));
	assert_int_equal(at.mode & 07777, 0600);
	assert_int_equal(at.uid, 77);
	assert_int_equal(at.atime_ns, 5);
	/* A full pool evicts nothing of these: they hold no bytes. */
	put_sized(&f, f.s1, ROOT, "big", stats(&f).capacity);
	assert_int_equal(lookup(&f, NULL, ROOT, "l", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "fifo", &at), 0);
	/* A hard link to a symlink is a name of it. */
	assert_int_equal(do_link(&f, l, ROOT, "l2", &at), 0);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "l", 1), 0);
	assert_int_equal(dir_readlink(f.d, l, buf, sizeof(buf)), PROTO_PATH_MAX - 1);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "l2", 2), 0);
	assert_int_equal(dir_readlink(f.d, l, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "fifo", 4), 0);
	fx_close(&f);
}

static void test_name_too_long_and_rename_seq(void **state)
{
	char name[300];
	struct fx f;
	struct dir_attr at;
	uint64_t ino, seq = 99;

	(void)state;
	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	memset(name, 'n', sizeof(name));
	assert_int_equal(dir_mkdir(f.d, ROOT, name, 256, 0755, 0, 0, &at), -ENAMETOOLONG);
	assert_int_equal(dir_mkdir(f.d, ROOT, name, 255, 0755, 0, 0, &at), 0);
	assert_int_equal(dir_symlink(f.d, f.s1, ROOT, name, 256, "t", 1, 0, 0, &at),
			 -ENAMETOOLONG);
	/* Renaming a pending file (still being written) to a free name: no event. */
	ino = do_create(&f, f.s1, ROOT, "k.tmp", 0, 0);
	assert_int_equal(dir_rename_ev(f.d, f.s1, ROOT, "k.tmp", 5, ROOT, "k", 1, 0, &seq), 0);
	assert_int_equal(seq, 0);
	assert_int_equal(dir_publish(f.d, f.s1, ino, 0, 0, NULL, NULL), 0);
	assert_int_equal(dir_release(f.d, f.s1, ino), 0);
	/* A published one: the DEV_RENAME it pushed. */
	assert_int_equal(dir_rename_ev(f.d, f.s1, ROOT, "k", 1, ROOT, "k2", 2, 0, &seq), 0);
	assert_int_equal(seq, stats(&f).event_seq);
	assert_int_equal(dir_rename_ev(f.d, f.s1, ROOT, "zz", 2, ROOT, "k3", 2, 0, &seq),
			 -ENOENT);
	assert_int_equal(seq, 0);
	fx_close(&f);
}

static void test_setgid_dir(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t g, ino;

	(void)state;
	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	assert_int_equal(dir_mkdir(f.d, ROOT, "g", 1, S_ISGID | 0775, 1, 50, &at), 0);
	g = at.ino;
	assert_int_equal(dir_mkdir(f.d, g, "sub", 3, 0755, 2, 7, &at), 0);
	assert_int_equal(at.gid, 50);
	assert_true(at.mode & S_ISGID);
	assert_int_equal(dir_create(f.d, f.s1, g, "file", 4, 0, 0, 0644, 2, 7, 0, &at), 0);
	ino = at.ino;
	assert_int_equal(at.gid, 50);
	assert_false(at.mode & S_ISGID);
	assert_int_equal(dir_abandon(f.d, f.s1, ino), 0);
	assert_int_equal(dir_symlink(f.d, f.s1, g, "l", 1, "t", 1, 2, 7, &at), 0);
	assert_int_equal(at.gid, 50);
	assert_int_equal(dir_mknod(f.d, f.s1, g, "p", 1, S_IFIFO | 0600, 0, 2, 7, &at), 0);
	assert_int_equal(at.gid, 50);
	/* Outside it the caller's group stands. */
	assert_int_equal(dir_mkdir(f.d, ROOT, "h", 1, 0755, 2, 7, &at), 0);
	assert_int_equal(at.gid, 7);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_nlink_and_unlink),
		cmocka_unit_test(test_link_rename_same_version),
		cmocka_unit_test(test_link_lease_and_publish),
		cmocka_unit_test(test_link_eviction_removes_all),
		cmocka_unit_test(test_symlink_and_special),
		cmocka_unit_test(test_name_too_long_and_rename_seq),
		cmocka_unit_test(test_setgid_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

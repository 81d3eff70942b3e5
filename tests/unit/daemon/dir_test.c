/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir_test.c: the pool directory over a fake pool (a
 * malloc'd buffer) whose copy callback really copies and zeroes, so file
 * contents are checked byte for byte through the extents dir_extents()
 * hands out. Every test ends with dir_check() (exact accounting, recomputed
 * from scratch) before and after its sessions end. A random-operation test
 * runs dir_check() after every call while malloc/calloc/realloc are made to
 * fail at random (interposed below), so a half-applied operation shows; a
 * threaded variant hammers the one lock.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "alloc.h"
#include "dir.h"
#include "proto.h"

/* ---- malloc fault injection (only armed around single dir_* calls) ---- */

static __thread unsigned long fail_countdown;
static unsigned long fail_injected;

/* Sanitizers bring their own allocator: no injection there. (clang says
 * so with __has_feature, gcc with __SANITIZE_*__.) */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__) && !defined(SANITIZED)
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);

static int should_fail(void)
{
	if (!fail_countdown || --fail_countdown)
		return 0;
	fail_injected++;
	return 1;
}

void *malloc(size_t size)
{
	return should_fail() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return should_fail() ? NULL : __libc_realloc(p, size);
}
#endif

#define BLK	4096ull
#define BASE	BLK		/* room for a superblock, as in a real pool */
#define ROOT	DIR_ROOT_ID

struct fx {
	uint8_t *pool;
	uint64_t size;
	struct alloc *a;
	struct dir *d;
	struct dir_session *s1, *s2;
};

/* Pool offset and contiguous bytes available at byte off of an extent list. */
static uint64_t ext_at(const struct extent_list *l, uint64_t off, uint64_t *avail)
{
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		if (off < l->v[i].len) {
			*avail = l->v[i].len - off;
			return l->v[i].off + off;
		}
		off -= l->v[i].len;
	}
	fail_msg("offset past the extents");
	return 0;
}

static void fake_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		      const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	uint8_t *pool = arg;

	while (len) {
		uint64_t da, sa = len, doff = ext_at(dst, dst_off, &da), soff = 0;
		uint64_t n;

		if (src)
			soff = ext_at(src, src_off, &sa);
		n = len < da ? len : da;
		n = n < sa ? n : sa;
		if (src)
			memmove(pool + doff, pool + soff, n);
		else
			memset(pool + doff, 0, n);
		dst_off += n;
		src_off += n;
		len -= n;
	}
}

/* limits: optional template for max_leases / max_pending_bytes. */
static void fx_open_limits(struct fx *f, uint64_t blocks, enum dir_eviction ev,
			   uint32_t ring, const struct dir_opts *limits)
{
	struct dir_opts o = { 0 };

	memset(f, 0, sizeof(*f));
	f->size = blocks * BLK;
	f->pool = malloc(BASE + f->size);
	assert_non_null(f->pool);
	/* Garbage, so a missing zero-fill shows. */
	memset(f->pool, 0xa5, BASE + f->size);
	assert_int_equal(alloc_new(BASE, f->size, BLK, 16 * BLK, &f->a), 0);
	o.alloc = f->a;
	o.eviction = ev;
	o.event_ring = ring;
	o.copy = fake_copy;
	o.copy_arg = f->pool;
	if (limits) {
		o.max_leases = limits->max_leases;
		o.max_pending_bytes = limits->max_pending_bytes;
	}
	assert_int_equal(dir_new(&o, &f->d), 0);
	assert_int_equal(dir_session_new(f->d, &f->s1), 0);
	assert_int_equal(dir_session_new(f->d, &f->s2), 0);
}

static void fx_open(struct fx *f, uint64_t blocks, enum dir_eviction ev, uint32_t ring)
{
	fx_open_limits(f, blocks, ev, ring, NULL);
}

static void fx_close(struct fx *f)
{
	struct dir_stats st;

	assert_int_equal(dir_check(f->d), 0);
	if (f->s1)
		dir_session_end(f->d, f->s1);
	if (f->s2)
		dir_session_end(f->d, f->s2);
	assert_int_equal(dir_check(f->d), 0);
	dir_stats(f->d, &st);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.orphaned, 0);
	assert_int_equal(st.leases, 0);
	assert_int_equal(st.free + st.used, st.capacity);
	dir_destroy(f->d);
	assert_int_equal(alloc_free_bytes(f->a), f->size);
	alloc_destroy(f->a);
	free(f->pool);
}

/* ---- helpers ---- */

static uint64_t do_mkdir(struct fx *f, uint64_t parent, const char *name)
{
	struct dir_attr at;

	assert_int_equal(dir_mkdir(f->d, parent, name, strlen(name), 0755, 1, 2, &at), 0);
	assert_int_equal(at.state, DIR_ST_DIR);
	return at.ino;
}

static uint64_t do_create(struct fx *f, struct dir_session *s, uint64_t parent,
			  const char *name, uint32_t flags, uint64_t hint)
{
	struct dir_attr at;

	assert_int_equal(dir_create(f->d, s, parent, name, strlen(name), 0, flags,
				    0644, 1, 2, hint, &at), 0);
	assert_int_equal(at.state, DIR_ST_PENDING);
	return at.ino;
}

static void do_pwrite(struct fx *f, struct dir_session *s, uint64_t ino,
		      const void *buf, uint64_t len, uint64_t off)
{
	struct extent_list l;
	struct dir_attr at;
	uint64_t done = 0;

	assert_int_equal(dir_reserve(f->d, s, ino, off + len, &at), 0);
	assert_true(at.reserved >= off + len);
	assert_int_equal(dir_extents(f->d, s, ino, 1, &l, &at), 0);
	while (done < len) {
		uint64_t avail, p = ext_at(&l, off + done, &avail);
		uint64_t n = len - done < avail ? len - done : avail;

		memcpy(f->pool + p, (const uint8_t *)buf + done, n);
		done += n;
	}
	extent_list_free(&l);
	assert_int_equal(dir_wrote(f->d, s, ino, off, off + len, &at), 0);
}

/* Whole content of a version s holds; returns its size. */
static uint64_t do_read(struct fx *f, struct dir_session *s, uint64_t ino,
			uint8_t *buf, uint64_t max)
{
	struct extent_list l;
	struct dir_attr at;
	uint64_t done = 0;

	assert_int_equal(dir_extents(f->d, s, ino, 0, &l, &at), 0);
	assert_true(at.size <= max);
	while (done < at.size) {
		uint64_t avail, p = ext_at(&l, done, &avail);
		uint64_t n = at.size - done < avail ? at.size - done : avail;

		memcpy(buf + done, f->pool + p, n);
		done += n;
	}
	extent_list_free(&l);
	return at.size;
}

/* Create, write and publish; the publisher's lease is released. */
static uint64_t put_file(struct fx *f, struct dir_session *s, uint64_t parent,
			 const char *name, const char *content)
{
	uint64_t len = strlen(content), ino = do_create(f, s, parent, name, 0, 0);
	struct dir_attr at;

	if (len)
		do_pwrite(f, s, ino, content, len, 0);
	assert_int_equal(dir_publish(f->d, s, ino, len, 0x1234, &at), 0);
	assert_int_equal(at.state, DIR_ST_PUBLISHED);
	assert_int_equal(at.ino, ino);
	assert_int_equal(dir_release(f->d, s, ino), 0);
	return ino;
}

static void put_sized(struct fx *f, struct dir_session *s, uint64_t parent,
		      const char *name, uint64_t size)
{
	uint64_t ino = do_create(f, s, parent, name, 0, size);

	assert_int_equal(dir_publish(f->d, s, ino, size, 0, NULL), 0);
	assert_int_equal(dir_release(f->d, s, ino), 0);
}

/* Lease name and compare its bytes with want; returns the version id. */
static uint64_t expect_content(struct fx *f, struct dir_session *s, uint64_t parent,
			       const char *name, const char *want)
{
	uint8_t buf[8192];
	struct dir_attr at;
	uint64_t n;

	assert_int_equal(dir_open(f->d, s, parent, name, strlen(name), 0, &at), 0);
	n = do_read(f, s, at.ino, buf, sizeof(buf));
	assert_int_equal(n, strlen(want));
	assert_memory_equal(buf, want, n);
	assert_int_equal(dir_release(f->d, s, at.ino), 0);
	return at.ino;
}

static int lookup(struct fx *f, struct dir_session *s, uint64_t parent, const char *name,
		  struct dir_attr *at)
{
	struct dir_attr tmp;

	return dir_lookup(f->d, s, parent, name, strlen(name), at ? at : &tmp);
}

static struct dir_stats stats(struct fx *f)
{
	struct dir_stats st;

	dir_stats(f->d, &st);
	return st;
}

/* ---- namespace ---- */

static void test_mkdir_nested(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t a, b, c, e;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "model_r0");
	b = do_mkdir(&f, a, "abc");
	c = do_mkdir(&f, b, "de_g0");
	e = do_mkdir(&f, c, "leaf");
	assert_true(a >= 2 && a < b && b < c && c < e);
	assert_int_equal(lookup(&f, NULL, c, "leaf", &at), 0);
	assert_int_equal(at.ino, e);
	assert_int_equal(at.parent, c);
	assert_int_equal(at.mode, S_IFDIR | 0755);
	assert_int_equal(at.uid, 1);
	assert_int_equal(at.gid, 2);
	assert_int_equal(dir_getattr(f.d, NULL, a, &at), 0);
	assert_int_equal(at.nlink, 3);
	assert_int_equal(at.size, 1);
	assert_int_equal(dir_mkdir(f.d, a, "abc", 3, 0755, 0, 0, &at), -EEXIST);
	assert_int_equal(dir_mkdir(f.d, 999, "x", 1, 0755, 0, 0, &at), -ENOENT);
	put_file(&f, f.s1, a, "file", "x");
	assert_int_equal(lookup(&f, NULL, a, "file", &at), 0);
	assert_int_equal(dir_mkdir(f.d, at.ino, "x", 1, 0755, 0, 0, NULL), -ENOTDIR);
	assert_int_equal(dir_mkdir(f.d, a, "file", 4, 0755, 0, 0, NULL), -EEXIST);
	assert_int_equal(dir_exists(f.d, b, "de_g0", 5), 1);
	assert_int_equal(dir_exists(f.d, b, "nope", 4), 0);
	assert_int_equal(stats(&f).dirs, 4);
	fx_close(&f);
}

static void test_rmdir(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t a;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "a");
	do_mkdir(&f, a, "sub");
	assert_int_equal(dir_rmdir(f.d, ROOT, "a", 1), -ENOTEMPTY);
	assert_int_equal(dir_rmdir(f.d, a, "sub", 3), 0);
	assert_int_equal(dir_rmdir(f.d, a, "sub", 3), -ENOENT);
	put_file(&f, f.s1, a, "f", "data");
	assert_int_equal(dir_rmdir(f.d, a, "f", 1), -ENOTDIR);
	assert_int_equal(dir_rmdir(f.d, ROOT, "a", 1), -ENOTEMPTY);
	assert_int_equal(dir_unlink(f.d, NULL, a, "f", 1), 0);
	assert_int_equal(dir_rmdir(f.d, ROOT, "a", 1), 0);
	assert_int_equal(dir_getattr(f.d, NULL, a, &at), -ENOENT);
	assert_int_equal(dir_rmdir(f.d, ROOT, "..", 2), -EINVAL);
	assert_int_equal(stats(&f).dirs, 0);
	fx_close(&f);
}

static void test_names(void **state)
{
	struct fx f;
	char longname[PROTO_NAME_MAX + 2];
	struct dir_event *ev = malloc(sizeof(*ev));
	struct dir_attr at;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	memset(longname, 'n', sizeof(longname));
	assert_int_equal(dir_mkdir(f.d, ROOT, longname, 255, 0755, 0, 0, &at), 0);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, longname, 255, &at), 0);
	assert_int_equal(dir_create(f.d, f.s1, at.ino, longname, 255, 0, 0, 0644, 0, 0,
				    0, &at), 0);
	assert_int_equal(dir_mkdir(f.d, ROOT, longname, 256, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "", 0, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, ".", 1, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "..", 2, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "a/b", 3, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "a\0b", 3, 0755, 0, 0, &at), -EINVAL);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "x/y", 3, 0, 0, 0644, 0, 0, 0, &at),
			 -EINVAL);
	assert_int_equal(dir_lookup(f.d, NULL, ROOT, "..", 2, &at), -EINVAL);
	assert_int_equal(dir_rename(f.d, NULL, ROOT, longname, 255, ROOT, "a/", 2, 0),
			 -EINVAL);
	assert_int_equal(dir_mkdir(f.d, ROOT, "...", 3, 0755, 0, 0, &at), 0);
	/* Names of 255 bytes survive into event paths. */
	assert_int_equal(dir_events_wait(f.d, 0, ev, 1, 0), 1);
	assert_int_equal(strlen(ev->path), 256);
	assert_memory_equal(ev->path + 1, longname, 255);
	assert_int_equal(strlen(ev->name), 255);
	free(ev);
	fx_close(&f);
}

/* ---- versions ---- */

static void test_create_publish_lookup(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t ino, dirid;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	dirid = do_mkdir(&f, ROOT, "ns");
	ino = do_create(&f, f.s1, dirid, "k.bin", 0, 0);
	/* Pending: only its owner sees it. */
	assert_int_equal(lookup(&f, f.s1, dirid, "k.bin", &at), 0);
	assert_int_equal(at.ino, ino);
	assert_int_equal(at.state, DIR_ST_PENDING);
	assert_int_equal(lookup(&f, NULL, dirid, "k.bin", &at), -ENOENT);
	assert_int_equal(lookup(&f, f.s2, dirid, "k.bin", &at), -ENOENT);
	assert_int_equal(dir_getattr(f.d, f.s2, ino, &at), -ENOENT);
	assert_int_equal(dir_exists(f.d, dirid, "k.bin", 5), 0);
	assert_int_equal(dir_reserve(f.d, f.s2, ino, 10, &at), -EPERM);
	assert_int_equal(dir_extents(f.d, f.s2, ino, 0, &(struct extent_list){ 0 }, &at),
			 -EPERM);
	do_pwrite(&f, f.s1, ino, "hello pool", 10, 0);
	st = stats(&f);
	assert_int_equal(st.pending, BLK);
	assert_int_equal(dir_wrote(f.d, f.s1, ino, 0, BLK + 1, &at), -EINVAL);
	assert_int_equal(dir_publish(f.d, f.s1, ino, BLK + 1, 0, &at), -EINVAL);
	assert_int_equal(dir_publish(f.d, f.s2, ino, 10, 0, &at), -EPERM);
	assert_int_equal(dir_publish(f.d, f.s1, ino, 10, 0xabcdef, &at), 0);
	assert_int_equal(at.leases, 1);
	assert_int_equal(at.parent, dirid);
	assert_int_equal(dir_release(f.d, f.s1, ino), 0);
	assert_int_equal(dir_release(f.d, f.s1, ino), -EINVAL);
	assert_int_equal(lookup(&f, f.s2, dirid, "k.bin", &at), 0);
	assert_int_equal(at.ino, ino);
	assert_int_equal(at.size, 10);
	assert_int_equal(at.xxh3, 0xabcdef);
	assert_int_equal(at.state, DIR_ST_PUBLISHED);
	assert_int_equal(at.mode, S_IFREG | 0644);
	assert_int_equal(at.nlink, 1);
	assert_int_equal(dir_exists(f.d, dirid, "k.bin", 5), 1);
	expect_content(&f, f.s2, dirid, "k.bin", "hello pool");
	/* Open by ino while bound; a reader cannot write. */
	assert_int_equal(dir_open(f.d, f.s2, 0, NULL, 0, ino, &at), 0);
	assert_int_equal(dir_extents(f.d, f.s2, ino, 1, &(struct extent_list){ 0 }, &at),
			 -EPERM);
	assert_int_equal(dir_release(f.d, f.s2, ino), 0);
	assert_int_equal(dir_open(f.d, f.s2, 0, NULL, 0, dirid, &at), -EISDIR);
	assert_int_equal(dir_open(f.d, f.s2, dirid, "none", 4, 0, &at), -ENOENT);
	st = stats(&f);
	assert_int_equal(st.used, BLK);
	assert_int_equal(st.evictable, BLK);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.names, 1);
	assert_int_equal(st.publishes, 1);
	assert_int_equal(st.creates, 1);
	fx_close(&f);
}

static void test_excl(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t p1;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	put_file(&f, f.s1, ROOT, "pub", "1");
	do_mkdir(&f, ROOT, "adir");
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "pub", 3, 0, DIR_CREATE_EXCL, 0644,
				    0, 0, 0, &at), -EEXIST);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "adir", 4, 0, DIR_CREATE_EXCL, 0644,
				    0, 0, 0, &at), -EEXIST);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "adir", 4, 0, 0, 0644, 0, 0, 0, &at),
			 -EISDIR);
	p1 = do_create(&f, f.s1, ROOT, "new", DIR_CREATE_EXCL, 0);
	assert_int_equal(dir_create(f.d, f.s1, ROOT, "new", 3, 0, DIR_CREATE_EXCL, 0644,
				    0, 0, 0, &at), -EEXIST);
	/* Another session's pending version does not count. */
	do_create(&f, f.s2, ROOT, "new", DIR_CREATE_EXCL, 0);
	assert_int_equal(dir_abandon(f.d, f.s1, p1), 0);
	assert_int_equal(dir_abandon(f.d, f.s1, p1), -ENOENT);
	assert_int_equal(stats(&f).abandons, 1);
	fx_close(&f);
}

static void test_copy(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t v1, v2;
	char big[6000];

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v1 = put_file(&f, f.s1, ROOT, "c", "hello world");
	/* Rewrite the middle without truncation: the rest is kept. */
	v2 = do_create(&f, f.s1, ROOT, "c", DIR_CREATE_COPY, 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v2, &at), 0);
	assert_int_equal(at.size, 11);
	do_pwrite(&f, f.s1, v2, "W", 1, 6);
	assert_int_equal(dir_publish(f.d, f.s1, v2, 11, 0, &at), 0);
	assert_int_equal(dir_release(f.d, f.s1, v2), 0);
	expect_content(&f, f.s2, ROOT, "c", "hello World");
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), -ENOENT);
	/* By ino, growing past a block. */
	memset(big, 'b', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(dir_create(f.d, f.s2, 0, NULL, 0, v2, DIR_CREATE_COPY, 0, 0, 0, 0,
				    &at), 0);
	v1 = at.ino;
	assert_int_equal(at.size, 11);
	assert_int_equal(at.parent, ROOT);
	assert_int_equal(at.mode, S_IFREG | 0644);
	do_pwrite(&f, f.s2, v1, big + 11, sizeof(big) - 12, 11);
	assert_int_equal(dir_publish(f.d, f.s2, v1, sizeof(big) - 1, 0, &at), 0);
	assert_int_equal(dir_release(f.d, f.s2, v1), 0);
	memcpy(big, "hello World", 11);
	expect_content(&f, f.s1, ROOT, "c", big);
	/* The old version is gone: -ESTALE. */
	assert_int_equal(dir_create(f.d, f.s2, 0, NULL, 0, v2, DIR_CREATE_COPY, 0, 0, 0, 0,
				    &at), -ESTALE);
	/* COPY of a name with nothing published starts empty. */
	v2 = do_create(&f, f.s1, ROOT, "fresh", DIR_CREATE_COPY, 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v2, &at), 0);
	assert_int_equal(at.size, 0);
	fx_close(&f);
}

static void test_zero_fill(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint8_t buf[3 * 4096];
	uint64_t ino, i;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	ino = do_create(&f, f.s1, ROOT, "z", 0, 0);
	do_pwrite(&f, f.s1, ino, "abc", 3, 0);
	/* A write at 8192 leaves a hole [3, 8192) that must read as zeros. */
	do_pwrite(&f, f.s1, ino, "end", 3, 8192);
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 9000, &at), 0);
	assert_int_equal(at.size, 9000);
	assert_int_equal(do_read(&f, f.s1, ino, buf, sizeof(buf)), 9000);
	assert_memory_equal(buf, "abc", 3);
	for (i = 3; i < 8192; i++)
		assert_int_equal(buf[i], 0);
	assert_memory_equal(buf + 8192, "end", 3);
	for (i = 8195; i < 9000; i++)
		assert_int_equal(buf[i], 0);
	/* Shrink then grow: the cut bytes come back as zeros. */
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 1, &at), 0);
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 5, &at), 0);
	assert_int_equal(do_read(&f, f.s1, ino, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "a\0\0\0\0", 5);
	assert_int_equal(dir_wrote(f.d, f.s1, ino, 5, 4, &at), -EINVAL);
	assert_int_equal(dir_publish(f.d, f.s1, ino, 5, 0, &at), 0);
	/* Publish trimmed the reservation to one block. */
	assert_int_equal(at.reserved, BLK);
	assert_int_equal(dir_truncate(f.d, f.s1, ino, 5, &at), -EPERM);
	fx_close(&f);
}

static void test_publish_over_leased(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	struct dir_event ev[8];
	uint8_t buf[64];
	uint64_t v1, v2, seq;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v1 = put_file(&f, f.s1, ROOT, "kv", "old bytes");
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "kv", 2, 0, &at), 0);
	assert_int_equal(at.leases, 1);
	assert_int_equal(stats(&f).evictable, 0);
	seq = dir_event_seq(f.d);
	v2 = do_create(&f, f.s1, ROOT, "kv", 0, 0);
	do_pwrite(&f, f.s1, v2, "new bytes!", 10, 0);
	assert_int_equal(dir_publish(f.d, f.s1, v2, 10, 0, &at), 0);
	assert_int_equal(dir_release(f.d, f.s1, v2), 0);
	/* The reader keeps the old bytes. */
	assert_int_equal(do_read(&f, f.s2, v1, buf, sizeof(buf)), 9);
	assert_memory_equal(buf, "old bytes", 9);
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), 0);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	assert_int_equal(at.nlink, 0);
	assert_int_equal(at.leases, 1);
	/* Opened by id (a kernel that looked the name up before the
	 * replace): the old bytes, while they are still leased. */
	assert_int_equal(dir_open(f.d, f.s1, 0, NULL, 0, v1, &at), 0);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	assert_int_equal(at.leases, 2);
	assert_int_equal(at.size, 9);
	assert_int_equal(do_read(&f, f.s1, v1, buf, sizeof(buf)), 9);
	assert_memory_equal(buf, "old bytes", 9);
	assert_int_equal(dir_release(f.d, f.s1, v1), 0);
	st = stats(&f);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.used, BLK);
	assert_int_equal(st.replaces, 1);
	assert_int_equal(st.versions, 2);
	assert_int_equal(dir_check(f.d), 0);
	assert_int_equal(dir_events_wait(f.d, seq, ev, 8, 0), 1);
	assert_int_equal(ev[0].type, DEV_REPLACE);
	assert_string_equal(ev[0].path, "/kv");
	assert_string_equal(ev[0].name, "kv");
	assert_int_equal(ev[0].ino, v2);
	assert_int_equal(dir_release(f.d, f.s2, v1), 0);
	st = stats(&f);
	assert_int_equal(st.orphaned, 0);
	assert_int_equal(st.versions, 1);
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), -ENOENT);
	/* gone with its last lease: opening it by id now says so */
	assert_int_equal(dir_open(f.d, f.s1, 0, NULL, 0, v1, &at), -ESTALE);
	expect_content(&f, f.s2, ROOT, "kv", "new bytes!");
	fx_close(&f);
}

static void test_unlink_leased(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint8_t buf[64];
	uint64_t v;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v = put_file(&f, f.s1, ROOT, "u", "still here");
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "u", 1, 0, &at), 0);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "u", 1, 0, &at), 0);
	assert_int_equal(at.leases, 2);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "u", 1), 0);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "u", 1), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "u", &at), -ENOENT);
	assert_int_equal(stats(&f).orphaned, BLK);
	assert_int_equal(stats(&f).unlinks, 1);
	assert_int_equal(do_read(&f, f.s2, v, buf, sizeof(buf)), 10);
	assert_memory_equal(buf, "still here", 10);
	assert_int_equal(dir_release(f.d, f.s2, v), 0);
	assert_int_equal(stats(&f).orphaned, BLK);
	assert_int_equal(dir_check(f.d), 0);
	assert_int_equal(dir_release(f.d, f.s2, v), 0);
	assert_int_equal(stats(&f).orphaned, 0);
	assert_int_equal(stats(&f).free, f.size);
	do_mkdir(&f, ROOT, "d");
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "d", 1), -EISDIR);
	fx_close(&f);
}

static void test_unlink_detaches_pending(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t v, dirid;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	/* Owner unlinks the name it is writing: publish is refused, the
	 * version stays pending (its bytes readable) until abandoned. */
	v = do_create(&f, f.s1, ROOT, "p", 0, 100);
	do_pwrite(&f, f.s1, v, "kept", 4, 0);
	assert_int_equal(dir_unlink(f.d, f.s2, ROOT, "p", 1), -ENOENT);
	assert_int_equal(dir_unlink(f.d, f.s1, ROOT, "p", 1), 0);
	assert_int_equal(lookup(&f, f.s1, ROOT, "p", &at), -ENOENT);
	assert_int_equal(dir_publish(f.d, f.s1, v, 4, 0, &at), -ENOENT);
	assert_int_equal(dir_getattr(f.d, f.s1, v, &at), 0);
	assert_int_equal(at.state, DIR_ST_PENDING);
	{
		uint8_t b[8];

		assert_int_equal(do_read(&f, f.s1, v, b, sizeof(b)), 4);
		assert_memory_equal(b, "kept", 4);
	}
	assert_int_not_equal(stats(&f).pending, 0);
	assert_int_equal(dir_abandon(f.d, f.s1, v), 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v, &at), -ENOENT);
	assert_int_equal(stats(&f).pending, 0);
	/* Another session's unlink of the published name does not detach it. */
	put_file(&f, f.s2, ROOT, "q", "v1");
	v = do_create(&f, f.s1, ROOT, "q", 0, 0);
	assert_int_equal(dir_unlink(f.d, f.s2, ROOT, "q", 1), 0);
	assert_int_equal(dir_publish(f.d, f.s1, v, 0, 0, &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "q", &at), 0);
	assert_int_equal(at.ino, v);
	/* rmdir of the target directory: publish refused, abandon frees. */
	dirid = do_mkdir(&f, ROOT, "gone");
	v = do_create(&f, f.s2, dirid, "x", 0, 10);
	assert_int_equal(dir_rmdir(f.d, ROOT, "gone", 4), 0);
	assert_int_equal(dir_publish(f.d, f.s2, v, 0, 0, &at), -ENOENT);
	assert_int_equal(dir_abandon(f.d, f.s2, v), 0);
	assert_int_equal(stats(&f).pending, 0);
	assert_int_equal(dir_check(f.d), 0);
	/* A directory that took the name. */
	v = do_create(&f, f.s2, ROOT, "late", 0, 10);
	do_mkdir(&f, ROOT, "late");
	assert_int_equal(dir_publish(f.d, f.s2, v, 0, 0, &at), -EISDIR);
	fx_close(&f);
}

static void test_rename_files(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	struct dir_event ev[4];
	uint64_t a, b, old, src, seq;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "a");
	b = do_mkdir(&f, ROOT, "b");
	src = put_file(&f, f.s1, a, "src", "source");
	old = put_file(&f, f.s1, b, "dst", "target");
	assert_int_equal(dir_rename(f.d, NULL, a, "src", 3, b, "dst", 3,
				    PROTO_RENAME_NOREPLACE), -EEXIST);
	/* Over an existing, leased file across directories. */
	assert_int_equal(dir_open(f.d, f.s2, b, "dst", 3, 0, &at), 0);
	seq = dir_event_seq(f.d);
	assert_int_equal(dir_rename(f.d, NULL, a, "src", 3, b, "dst", 3, 0), 0);
	assert_int_equal(lookup(&f, NULL, a, "src", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, b, "dst", &at), 0);
	assert_int_equal(at.ino, src);
	assert_int_equal(at.parent, b);
	expect_content(&f, f.s1, b, "dst", "source");
	st = stats(&f);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.replaces, 1);
	assert_int_equal(st.names, 1);
	assert_int_equal(dir_events_wait(f.d, seq, ev, 4, 0), 1);
	assert_int_equal(ev[0].type, DEV_RENAME);
	assert_string_equal(ev[0].path, "/a/src");
	assert_string_equal(ev[0].path2, "/b/dst");
	assert_string_equal(ev[0].name2, "dst");
	assert_int_equal(ev[0].parent, a);
	assert_int_equal(ev[0].parent2, b);
	assert_int_equal(dir_release(f.d, f.s2, old), 0);
	/* Longer and shorter names move the node; attributes follow. */
	assert_int_equal(dir_rename(f.d, NULL, b, "dst", 3, a, "a-much-longer-name", 18, 0), 0);
	assert_int_equal(dir_rename(f.d, NULL, a, "a-much-longer-name", 18, a, "s", 1, 0), 0);
	expect_content(&f, f.s2, a, "s", "source");
	/* Same name: no-op; missing: -ENOENT; file over dir and back. */
	assert_int_equal(dir_rename(f.d, NULL, a, "s", 1, a, "s", 1, 0), 0);
	assert_int_equal(dir_rename(f.d, NULL, a, "zz", 2, a, "s", 1, 0), -ENOENT);
	do_mkdir(&f, a, "sub");
	assert_int_equal(dir_rename(f.d, NULL, a, "s", 1, a, "sub", 3, 0), -EISDIR);
	assert_int_equal(dir_rename(f.d, NULL, a, "sub", 3, a, "s", 1, 0), -ENOTDIR);
	assert_int_equal(dir_rename(f.d, NULL, 999, "s", 1, a, "t", 1, 0), -ENOENT);
	assert_int_equal(dir_rename(f.d, NULL, a, "s", 1, a, "t", 1, 4), -EINVAL);
	fx_close(&f);
}

static void test_rename_dirs(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_event ev[4];
	uint64_t a, b, c, e, seq;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	a = do_mkdir(&f, ROOT, "a");
	b = do_mkdir(&f, a, "b");
	c = do_mkdir(&f, b, "c");
	put_file(&f, f.s1, c, "f", "deep");
	assert_int_equal(dir_rename(f.d, NULL, ROOT, "a", 1, c, "x", 1, 0), -EINVAL);
	assert_int_equal(dir_rename(f.d, NULL, ROOT, "a", 1, a, "x", 1, 0), -EINVAL);
	e = do_mkdir(&f, ROOT, "e");
	do_mkdir(&f, e, "full");
	assert_int_equal(dir_rename(f.d, NULL, a, "b", 1, ROOT, "e", 1, 0), -ENOTEMPTY);
	/* Over an empty directory, into another parent, with a longer name. */
	assert_int_equal(dir_rename(f.d, NULL, a, "b", 1, e, "full", 4, 0), 0);
	assert_int_equal(dir_getattr(f.d, NULL, b, &at), 0);
	assert_int_equal(at.parent, e);
	assert_int_equal(lookup(&f, NULL, a, "b", &at), -ENOENT);
	expect_content(&f, f.s2, c, "f", "deep");
	seq = dir_event_seq(f.d);
	assert_int_equal(dir_rename(f.d, NULL, ROOT, "e", 1, ROOT, "renamed-e", 9, 0), 0);
	assert_int_equal(dir_unlink(f.d, NULL, c, "f", 1), 0);
	assert_int_equal(dir_events_wait(f.d, seq, ev, 4, 0), 2);
	assert_int_equal(ev[1].type, DEV_UNLINK);
	assert_string_equal(ev[1].path, "/renamed-e/full/c/f");
	assert_int_equal(dir_getattr(f.d, NULL, a, &at), 0);
	assert_int_equal(at.nlink, 2);
	assert_int_equal(at.size, 0);
	assert_int_equal(stats(&f).dirs, 4);
	fx_close(&f);
}

static void test_rename_pending(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t v, b;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	b = do_mkdir(&f, ROOT, "b");
	/* tmp-then-rename while the writer has not published yet. */
	v = do_create(&f, f.s1, ROOT, "x.tmp", 0, 0);
	do_pwrite(&f, f.s1, v, "payload", 7, 0);
	assert_int_equal(dir_rename(f.d, f.s2, ROOT, "x.tmp", 5, b, "x", 1, 0), -ENOENT);
	assert_int_equal(dir_rename(f.d, f.s1, ROOT, "x.tmp", 5, b, "x", 1, 0), 0);
	assert_int_equal(lookup(&f, f.s1, b, "x", &at), 0);
	assert_int_equal(at.ino, v);
	assert_int_equal(lookup(&f, f.s1, ROOT, "x.tmp", &at), -ENOENT);
	assert_int_equal(dir_publish(f.d, f.s1, v, 7, 0, &at), 0);
	assert_int_equal(dir_release(f.d, f.s1, v), 0);
	expect_content(&f, f.s2, b, "x", "payload");
	/* Published x.tmp is not evictable until renamed to a plain name. */
	put_file(&f, f.s1, ROOT, "y.tmp", "t");
	st = stats(&f);
	assert_int_equal(st.evictable, BLK);
	assert_int_equal(st.used, 2 * BLK);
	v = do_create(&f, f.s1, ROOT, "y.tmp", 0, 0);
	assert_int_equal(dir_rename(f.d, f.s1, ROOT, "y.tmp", 5, ROOT, "y", 1, 0), 0);
	assert_int_equal(stats(&f).evictable, 2 * BLK);
	/* The pending version moved with the name. */
	assert_int_equal(lookup(&f, f.s1, ROOT, "y", &at), 0);
	assert_int_equal(at.ino, v);
	assert_int_equal(at.state, DIR_ST_PENDING);
	assert_int_equal(dir_publish(f.d, f.s1, v, 0, 0, &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "y.tmp", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "y", &at), 0);
	assert_int_equal(at.ino, v);
	assert_int_equal(stats(&f).replaces, 1);
	fx_close(&f);
}

static void test_publish_race(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t v1, v2;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	v1 = do_create(&f, f.s1, ROOT, "race", 0, 0);
	v2 = do_create(&f, f.s2, ROOT, "race", 0, 0);
	do_pwrite(&f, f.s1, v1, "one", 3, 0);
	do_pwrite(&f, f.s2, v2, "two!", 4, 0);
	assert_int_equal(lookup(&f, f.s1, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v1);
	assert_int_equal(lookup(&f, f.s2, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v2);
	assert_int_equal(dir_publish(f.d, f.s1, v1, 3, 0, &at), 0);
	assert_int_equal(dir_check(f.d), 0);
	/* s2 still sees its own pending version. */
	assert_int_equal(lookup(&f, f.s2, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v2);
	assert_int_equal(dir_publish(f.d, f.s2, v2, 4, 0, &at), 0);
	/* Last publish wins; s1's publish lease keeps its bytes as orphaned. */
	assert_int_equal(lookup(&f, NULL, ROOT, "race", &at), 0);
	assert_int_equal(at.ino, v2);
	assert_int_equal(dir_getattr(f.d, NULL, v1, &at), 0);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	st = stats(&f);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.used, BLK);
	assert_int_equal(st.publishes, 2);
	assert_int_equal(st.replaces, 1);
	assert_int_equal(st.names, 1);
	assert_int_equal(dir_check(f.d), 0);
	expect_content(&f, f.s1, ROOT, "race", "two!");
	assert_int_equal(dir_release(f.d, f.s1, v1), 0);
	assert_int_equal(dir_release(f.d, f.s2, v2), 0);
	assert_int_equal(stats(&f).orphaned, 0);
	fx_close(&f);
}

static void test_session_end(void **state)
{
	struct fx f;
	struct dir_session *s3;
	struct dir_stats st;
	struct dir_attr at;
	uint64_t v;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(dir_session_new(f.d, &s3), 0);
	assert_int_not_equal(dir_session_id(s3), dir_session_id(f.s1));
	v = put_file(&f, f.s1, ROOT, "shared", "s");
	assert_int_equal(dir_open(f.d, s3, ROOT, "shared", 6, 0, &at), 0);
	assert_int_equal(dir_open(f.d, s3, ROOT, "shared", 6, 0, &at), 0);
	assert_int_equal(dir_unlink(f.d, NULL, ROOT, "shared", 6), 0);
	v = do_create(&f, s3, ROOT, "w1", 0, 3 * BLK);
	do_create(&f, s3, ROOT, "w2", 0, BLK);
	st = stats(&f);
	assert_int_equal(st.pending, 4 * BLK);
	assert_int_equal(st.orphaned, BLK);
	assert_int_equal(st.leases, 2);
	assert_int_equal(st.sessions, 3);
	dir_session_end(f.d, s3);
	st = stats(&f);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.orphaned, 0);
	assert_int_equal(st.leases, 0);
	assert_int_equal(st.sessions, 2);
	assert_int_equal(st.free, f.size);
	assert_int_equal(st.versions, 0);
	assert_int_equal(dir_getattr(f.d, f.s1, v, &at), -ENOENT);
	fx_close(&f);
}

static void test_setattr(void **state)
{
	struct fx f;
	struct dir_setattr sa = { 0 };
	struct dir_attr at;
	uint64_t dirid, v, p;

	fx_open(&f, 64, DIR_EVICT_LRU, 0);
	dirid = do_mkdir(&f, ROOT, "d");
	v = put_file(&f, f.s1, dirid, "f", "x");
	p = do_create(&f, f.s1, dirid, "g", 0, 0);
	sa.mask = SETATTR_MODE | SETATTR_UID | SETATTR_ATIME | SETATTR_MTIME;
	sa.mode = 0600;
	sa.uid = 77;
	sa.atime_ns = 1000;
	sa.mtime_ns = 2000;
	assert_int_equal(dir_setattr(f.d, NULL, dirid, &sa, &at), 0);
	assert_int_equal(at.mode, S_IFDIR | 0600);
	assert_int_equal(at.uid, 77);
	assert_int_equal(at.atime_ns, 1000);
	assert_int_equal(dir_setattr(f.d, NULL, v, &sa, &at), 0);
	assert_int_equal(at.mode, S_IFREG | 0600);
	assert_int_equal(at.gid, 2);
	assert_int_equal(at.mtime_ns, 2000);
	assert_int_equal(dir_setattr(f.d, f.s2, p, &sa, &at), -ENOENT);
	assert_int_equal(dir_setattr(f.d, f.s1, p, &sa, &at), 0);
	assert_int_equal(at.uid, 77);
	/* An orphaned version keeps taking metadata. */
	assert_int_equal(dir_open(f.d, f.s2, dirid, "f", 1, 0, &at), 0);
	assert_int_equal(dir_unlink(f.d, NULL, dirid, "f", 1), 0);
	sa.mask = SETATTR_GID;
	sa.gid = 9;
	assert_int_equal(dir_setattr(f.d, NULL, v, &sa, &at), 0);
	assert_int_equal(at.gid, 9);
	assert_int_equal(at.state, DIR_ST_ORPHANED);
	/* The metadata set while pending is published with the bytes. */
	assert_int_equal(dir_publish(f.d, f.s1, p, 0, 0, &at), 0);
	assert_int_equal(at.mode, S_IFREG | 0600);
	assert_int_equal(dir_setattr(f.d, NULL, 12345, &sa, &at), -ENOENT);
	fx_close(&f);
}

static void test_limits(void **state)
{
	struct dir_opts o = { .max_leases = 2, .max_pending_bytes = 2 * BLK };
	struct fx f;
	struct dir *d;
	struct dir_session *s;
	struct dir_attr at;
	uint64_t v;

	fx_open_limits(&f, 64, DIR_EVICT_LRU, 0, &o);
	d = f.d;
	s = f.s1;
	assert_int_equal(dir_create(d, s, ROOT, "f", 1, 0, 0, 0644, 0, 0, BLK, &at), 0);
	v = at.ino;
	assert_int_equal(dir_publish(d, s, v, 10, 0, &at), 0);
	assert_int_equal(dir_open(d, s, ROOT, "f", 1, 0, &at), 0);
	assert_int_equal(dir_open(d, s, ROOT, "f", 1, 0, &at), -EMFILE);
	assert_int_equal(dir_release(d, s, v), 0);
	assert_int_equal(dir_create(d, s, ROOT, "g", 1, 0, 0, 0644, 0, 0, 3 * BLK, &at),
			 -EDQUOT);
	assert_int_equal(dir_create(d, s, ROOT, "g", 1, 0, 0, 0644, 0, 0, 2 * BLK, &at), 0);
	assert_int_equal(dir_reserve(d, s, at.ino, 2 * BLK + 1, &at), -EDQUOT);
	/* Limits are per session. */
	assert_int_equal(dir_open(d, f.s2, ROOT, "f", 1, 0, &at), 0);
	assert_int_equal(dir_open(d, f.s2, ROOT, "f", 1, 0, &at), 0);
	assert_int_equal(dir_create(d, f.s2, ROOT, "h", 1, 0, 0, 0644, 0, 0, 2 * BLK, &at), 0);
	fx_close(&f);
}

/* ---- eviction ---- */

static void test_evict_lru_order(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	struct dir_event ev[16];
	char name[16];
	uint64_t v, seq;
	int i, n;

	fx_open(&f, 16, DIR_EVICT_LRU, 0);
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		put_sized(&f, f.s1, ROOT, name, BLK);
	}
	assert_int_equal(stats(&f).free, 0);
	assert_int_equal(stats(&f).evictable, 16 * BLK);
	/* f0 read recently, f1 leased and released (back at the MRU end). */
	assert_int_equal(lookup(&f, NULL, ROOT, "f0", &at), 0);
	dir_touch(f.d, at.ino);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "f1", 2, 0, &at), 0);
	assert_int_equal(dir_release(f.d, f.s2, at.ino), 0);
	seq = dir_event_seq(f.d);
	v = do_create(&f, f.s2, ROOT, "big", 0, 3 * BLK);
	st = stats(&f);
	assert_int_equal(st.evictions, 3);
	assert_int_equal(st.evicted_bytes, 3 * BLK);
	assert_int_equal(st.pending, 3 * BLK);
	n = dir_events_wait(f.d, seq, ev, 16, 0);
	assert_int_equal(n, 3);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "/f%d", i + 2);
		assert_int_equal(ev[i].type, DEV_EVICT);
		assert_string_equal(ev[i].path, name);
	}
	assert_int_equal(lookup(&f, NULL, ROOT, "f0", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "f1", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "f2", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "f5", &at), 0);
	/* Growing the pending version evicts the next in line. */
	assert_int_equal(dir_truncate(f.d, f.s2, v, 4 * BLK, &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "f5", &at), -ENOENT);
	assert_int_equal(stats(&f).evictions, 4);
	fx_close(&f);
}

static void test_evict_spares_tmp_and_leased(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;
	uint64_t v;

	fx_open(&f, 8, DIR_EVICT_LRU, 0);
	put_sized(&f, f.s1, ROOT, "a.tmp", BLK);
	put_sized(&f, f.s1, ROOT, "b.tmp.x", BLK);
	put_sized(&f, f.s1, ROOT, "leased", BLK);
	put_sized(&f, f.s1, ROOT, "victim", BLK);
	assert_int_equal(dir_open(f.d, f.s2, ROOT, "leased", 6, 0, &at), 0);
	do_create(&f, f.s1, ROOT, "pend", 0, 3 * BLK);
	st = stats(&f);
	assert_int_equal(st.free, BLK);
	assert_int_equal(st.evictable, BLK);
	/* 3 blocks needed, 2 obtainable: refused, and nothing was evicted. */
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "n", 1, 0, 0, 0644, 0, 0, 3 * BLK,
				    &at), -ENOSPC);
	st = stats(&f);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.enospc, 1);
	assert_int_equal(lookup(&f, f.s2, ROOT, "n", &at), -ENOENT);
	/* 2 blocks: only "victim" goes. */
	v = do_create(&f, f.s2, ROOT, "n", 0, 2 * BLK);
	st = stats(&f);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(lookup(&f, NULL, ROOT, "victim", &at), -ENOENT);
	assert_int_equal(lookup(&f, NULL, ROOT, "a.tmp", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "b.tmp.x", &at), 0);
	assert_int_equal(lookup(&f, NULL, ROOT, "leased", &at), 0);
	assert_int_equal(dir_reserve(f.d, f.s2, v, 3 * BLK, &at), -ENOSPC);
	assert_int_equal(dir_getattr(f.d, f.s2, v, &at), 0);
	assert_int_equal(at.reserved, 2 * BLK);
	assert_int_equal(stats(&f).enospc, 2);
	fx_close(&f);
}

static void test_evict_copy_source_pinned(void **state)
{
	struct fx f;
	struct dir_attr at;
	uint64_t v;

	fx_open(&f, 4, DIR_EVICT_LRU, 0);
	put_file(&f, f.s1, ROOT, "src", "keep me");
	put_sized(&f, f.s1, ROOT, "other", 3 * BLK);
	/* src is LRU-first, yet the copy of it must evict "other" instead. */
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "src", 3, 0, DIR_CREATE_COPY, 0, 0, 0,
				    0, &at), 0);
	v = at.ino;
	assert_int_equal(stats(&f).evictions, 1);
	assert_int_equal(lookup(&f, NULL, ROOT, "other", &at), -ENOENT);
	assert_int_equal(dir_publish(f.d, f.s2, v, 7, 0, &at), 0);
	assert_int_equal(dir_release(f.d, f.s2, v), 0);
	expect_content(&f, f.s1, ROOT, "src", "keep me");
	fx_close(&f);
}

static void test_evict_none(void **state)
{
	struct fx f;
	struct dir_attr at;
	struct dir_stats st;

	fx_open(&f, 4, DIR_EVICT_NONE, 0);
	put_sized(&f, f.s1, ROOT, "a", 2 * BLK);
	put_sized(&f, f.s1, ROOT, "b", 2 * BLK);
	st = stats(&f);
	assert_int_equal(st.evictable, 0);
	assert_int_equal(st.free, 0);
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "c", 1, 0, 0, 0644, 0, 0, 1, &at),
			 -ENOSPC);
	assert_int_equal(dir_create(f.d, f.s2, ROOT, "c", 1, 0, 0, 0644, 0, 0, 0, &at), 0);
	assert_int_equal(dir_truncate(f.d, f.s2, at.ino, 1, &at), -ENOSPC);
	assert_int_equal(at.size, 0);
	st = stats(&f);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.enospc, 2);
	assert_int_equal(lookup(&f, NULL, ROOT, "a", &at), 0);
	fx_close(&f);
}

/* ---- readdir ---- */

struct seen {
	int count;
	uint64_t last_cookie;
	char names[512][32];
	uint32_t states[512];
};

static int collect(void *arg, const struct dir_dirent *de)
{
	struct seen *s = arg;

	assert_true(de->cookie > s->last_cookie);
	s->last_cookie = de->cookie;
	assert_true(de->nlen < 32);
	memcpy(s->names[s->count], de->name, de->nlen);
	s->names[s->count][de->nlen] = '\0';
	s->states[s->count] = de->state;
	s->count++;
	return 0;
}

static int find_seen(const struct seen *s, const char *name)
{
	int i, hits = 0;

	for (i = 0; i < s->count; i++)
		hits += !strcmp(s->names[i], name);
	return hits;
}

static void test_readdir_pagination(void **state)
{
	struct fx f;
	struct seen *s = calloc(1, sizeof(*s));
	char name[32];
	int i, eof = 0, rc, pages = 0;

	assert_non_null(s);
	fx_open(&f, 256, DIR_EVICT_LRU, 0);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "e%03d", i);
		if (i % 10 == 0)
			do_mkdir(&f, ROOT, name);
		else
			put_sized(&f, f.s1, ROOT, name, 0);
	}
	/* s2 writes a new name and rewrites an existing one. */
	do_create(&f, f.s2, ROOT, "pending-only", 0, 0);
	do_create(&f, f.s2, ROOT, "e001", 0, 0);
	while (!eof) {
		rc = dir_readdir(f.d, f.s2, ROOT, s->last_cookie, 7, collect, s, &eof);
		assert_true(rc >= 0 && rc <= 7);
		pages++;
		/* Churn between pages: remove ahead and behind, add new names. */
		if (pages == 3) {
			assert_int_equal(dir_unlink(f.d, NULL, ROOT, "e002", 4), 0);
			assert_int_equal(dir_unlink(f.d, NULL, ROOT, "e099", 4), 0);
			put_sized(&f, f.s1, ROOT, "added", 0);
		}
	}
	/* Each name present throughout is listed exactly once. */
	for (i = 3; i < 99; i++) {
		snprintf(name, sizeof(name), "e%03d", i);
		assert_int_equal(find_seen(s, name), 1);
	}
	assert_int_equal(find_seen(s, "e099"), 0);
	assert_int_equal(find_seen(s, "added"), 1);
	assert_int_equal(find_seen(s, "pending-only"), 1);
	assert_int_equal(find_seen(s, "e001"), 1);
	for (i = 0; i < s->count; i++) {
		if (!strcmp(s->names[i], "e001") || !strcmp(s->names[i], "pending-only"))
			assert_int_equal(s->states[i], DIR_ST_PENDING);
		else if (!strcmp(s->names[i], "e010"))
			assert_int_equal(s->states[i], DIR_ST_DIR);
		else
			assert_true(s->states[i] == DIR_ST_PUBLISHED ||
				    s->states[i] == DIR_ST_DIR);
	}
	/* Another session sees neither pending entry as pending. */
	memset(s, 0, sizeof(*s));
	assert_true(dir_readdir(f.d, f.s1, ROOT, 0, 1000, collect, s, &eof) > 0);
	assert_int_equal(eof, 1);
	assert_int_equal(find_seen(s, "pending-only"), 0);
	assert_int_equal(find_seen(s, "e001"), 1);
	assert_int_equal(dir_readdir(f.d, NULL, 999, 0, 10, collect, s, &eof), -ENOENT);
	fx_close(&f);
	free(s);
}

/* ---- events ---- */

struct waiter {
	struct dir *d;
	uint64_t after;
	int rc;
	struct dir_event ev;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	int rc = dir_events_wait(w->d, w->after, &w->ev, 1, 10000);

	__atomic_store_n(&w->rc, rc, __ATOMIC_SEQ_CST);
	return NULL;
}

static void test_events(void **state)
{
	struct fx f;
	struct dir_event *ev = calloc(16, sizeof(*ev));
	struct waiter w;
	pthread_t th;
	char name[16];
	int i, n;

	assert_non_null(ev);
	fx_open(&f, 64, DIR_EVICT_LRU, 8);
	for (i = 1; i <= 20; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		do_mkdir(&f, ROOT, name);
	}
	assert_int_equal(dir_event_seq(f.d), 20);
	/* Events 1..12 fell out of the 8-entry ring. */
	n = dir_events_wait(f.d, 0, ev, 16, 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].type, DEV_OVERFLOW);
	assert_int_equal(ev[0].seq, 12);
	n = dir_events_wait(f.d, 12, ev, 16, 0);
	assert_int_equal(n, 8);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "/d%d", i + 13);
		assert_int_equal(ev[i].seq, 13 + i);
		assert_int_equal(ev[i].type, DEV_MKDIR);
		assert_string_equal(ev[i].path, name);
		assert_string_equal(ev[i].name, name + 1);
		assert_int_equal(ev[i].parent, ROOT);
	}
	n = dir_events_wait(f.d, 17, ev, 2, 0);
	assert_int_equal(n, 2);
	assert_int_equal(ev[1].seq, 19);
	/* Nothing new: timeout returns 0. */
	assert_int_equal(dir_events_wait(f.d, 20, ev, 16, 20), 0);
	/* A waiter wakes on the next event. */
	w = (struct waiter){ f.d, 20, -1 };
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	assert_int_equal(dir_rmdir(f.d, ROOT, "d20", 3), 0);
	pthread_join(th, NULL);
	assert_int_equal(w.rc, 1);
	assert_int_equal(w.ev.type, DEV_RMDIR);
	assert_string_equal(w.ev.path, "/d20");
	/* And on a kick, with nothing. */
	w = (struct waiter){ f.d, 21, -1 };
	assert_int_equal(pthread_create(&th, NULL, wait_thread, &w), 0);
	while (__atomic_load_n(&w.rc, __ATOMIC_SEQ_CST) == -1) {
		struct timespec ts = { 0, 2000000 };

		dir_events_kick(f.d);
		nanosleep(&ts, NULL);
	}
	pthread_join(th, NULL);
	assert_int_equal(w.rc, 0);
	fx_close(&f);
	free(ev);
}

/* ---- random operations ---- */

struct rng {
	uint64_t x;
};

static uint64_t rnd(struct rng *r, uint64_t n)
{
	r->x ^= r->x << 13;
	r->x ^= r->x >> 7;
	r->x ^= r->x << 17;
	return r->x % n;
}

static const char *const fz_names[] = { "a", "b", "c.tmp", "dd", "x", "y" };
#define FZ_NAMES (sizeof(fz_names) / sizeof(fz_names[0]))

/* Ids a session may act on; stale ids are fine (the call just fails). */
struct fz_sess {
	struct dir_session *s;
	uint64_t ids[16];	/* ring of versions created or opened */
	unsigned int head;
};

struct fz {
	struct dir *d;
	uint8_t *pool;
	uint64_t dirs[8];
	struct fz_sess ss[3];
	int shared;		/* sessions used by several threads: never end them */
};

static const char *fz_name(struct rng *r)
{
	return fz_names[rnd(r, FZ_NAMES)];
}

static uint64_t fz_dir(struct fz *z, struct rng *r)
{
	return z->dirs[rnd(r, 8)];
}

static void fz_remember(struct fz_sess *fs, int rc, uint64_t ino)
{
	if (!rc)
		fs->ids[fs->head++ % 16] = ino;
}

/* Mostly one of the last few versions, so many get published. */
static uint64_t fz_ino(struct fz_sess *fs, struct rng *r)
{
	if (rnd(r, 4))
		return fs->ids[(fs->head - 1 - rnd(r, 3)) % 16];
	return fs->ids[rnd(r, 16)];
}

static void fz_ns_op(struct fz *z, struct rng *r, struct fz_sess *fs, int op)
{
	struct dir_setattr sa = { SETATTR_MODE | SETATTR_MTIME, 0600, 0, 0, 0, 5 };
	const char *n = fz_name(r), *m = fz_name(r);
	struct dir_attr at;
	int rc;

	switch (op) {
	case 0:
		rc = dir_mkdir(z->d, fz_dir(z, r), n, strlen(n), 0755, 0, 0, &at);
		if (!rc)
			z->dirs[rnd(r, 8)] = at.ino;
		break;
	case 1:
		dir_rmdir(z->d, fz_dir(z, r), n, strlen(n));
		break;
	case 2:
		dir_unlink(z->d, fs->s, fz_dir(z, r), n, strlen(n));
		break;
	case 3:
		dir_rename(z->d, fs->s, fz_dir(z, r), n, strlen(n), fz_dir(z, r), m,
			   strlen(m), (uint32_t)rnd(r, 2));
		break;
	case 4:
		dir_setattr(z->d, fs->s, fz_ino(fs, r), &sa, &at);
		break;
	default:
		dir_lookup(z->d, fs->s, fz_dir(z, r), n, strlen(n), &at);
		break;
	}
}

static int fz_count(void *arg, const struct dir_dirent *de)
{
	return ++*(int *)arg > 1000;
}

static void fz_file_op(struct fz *z, struct rng *r, struct fz_sess *fs, int op)
{
	uint64_t ino = fz_ino(fs, r), len = rnd(r, 3 * BLK);
	const char *n = fz_name(r);
	struct extent_list l;
	struct dir_attr at;
	int rc, cnt = 0, eof;

	switch (op) {
	case 0:
		rc = dir_create(z->d, fs->s, fz_dir(z, r), n, strlen(n), 0,
				(uint32_t)rnd(r, 4), 0644, 0, 0, rnd(r, 4) * BLK, &at);
		fz_remember(fs, rc, at.ino);
		break;
	case 1:
		dir_reserve(z->d, fs->s, ino, len, &at);
		dir_wrote(z->d, fs->s, ino, rnd(r, len + 1), len, &at);
		break;
	case 2:
		dir_truncate(z->d, fs->s, ino, len, &at);
		break;
	case 3:
		rc = dir_getattr(z->d, fs->s, ino, &at);
		dir_publish(z->d, fs->s, ino, rc ? 0 : at.size, 1, &at);
		break;
	case 4:
		dir_abandon(z->d, fs->s, ino);
		break;
	case 5:
		rc = dir_open(z->d, fs->s, fz_dir(z, r), n, strlen(n), 0, &at);
		fz_remember(fs, rc, at.ino);
		break;
	case 6:
		dir_release(z->d, fs->s, ino);
		break;
	case 7:
		if (!dir_extents(z->d, fs->s, ino, (int)rnd(r, 2), &l, &at))
			extent_list_free(&l);
		dir_touch(z->d, ino);
		break;
	default:
		dir_readdir(z->d, fs->s, fz_dir(z, r), rnd(r, 40), 8, fz_count, &cnt, &eof);
		break;
	}
}

static void fz_step(struct fz *z, struct rng *r)
{
	struct fz_sess *fs = &z->ss[rnd(r, 3)];
	uint64_t k = rnd(r, 100);

	if (k < 30)
		fz_ns_op(z, r, fs, (int)rnd(r, 6));
	else if (k < 99)
		fz_file_op(z, r, fs, (int)rnd(r, 9));
	else if (!fail_countdown && !z->shared) {
		dir_session_end(z->d, fs->s);
		assert_int_equal(dir_session_new(z->d, &fs->s), 0);
	}
}

static void fz_run(struct fz *z, struct rng *r, int steps, int inject, int check)
{
	int i;

	for (i = 0; i < steps; i++) {
		if (inject && !rnd(r, 4))
			fail_countdown = 1 + rnd(r, 6);
		fz_step(z, r);
		fail_countdown = 0;
		if (check && dir_check(z->d))
			fail_msg("dir_check failed after step %d", i);
	}
}

static void fz_open(struct fx *f, struct fz *z)
{
	int i;

	fx_open(f, 64, DIR_EVICT_LRU, 32);
	memset(z, 0, sizeof(*z));
	z->d = f->d;
	for (i = 0; i < 8; i++)
		z->dirs[i] = ROOT;
	z->ss[0].s = f->s1;
	z->ss[1].s = f->s2;
	assert_int_equal(dir_session_new(f->d, &z->ss[2].s), 0);
}

static void fz_close(struct fx *f, struct fz *z)
{
	f->s1 = z->ss[0].s;
	f->s2 = z->ss[1].s;
	dir_session_end(f->d, z->ss[2].s);
	fx_close(f);
}

static void test_random_ops(void **state)
{
	struct rng r = { 0x9e3779b97f4a7c15ULL };
	struct fx f;
	struct fz z;
	struct dir_stats st;
	void *(*volatile mallocp)(size_t) = malloc;
	void *probe;

	/* Under valgrind malloc is replaced and cannot fail on demand. */
	fail_countdown = 1;
	probe = mallocp(8);
	fail_countdown = 0;
	free(probe);
	fz_open(&f, &z);
	fz_run(&z, &r, 100000, probe == NULL, 1);
	st = stats(&f);
	print_message("random ops: %lu allocation failures injected; %llu creates, "
		      "%llu publishes, %llu replaces, %llu unlinks, %llu evictions, "
		      "%llu abandons, %llu enospc\n", fail_injected,
		      (unsigned long long)st.creates, (unsigned long long)st.publishes,
		      (unsigned long long)st.replaces, (unsigned long long)st.unlinks,
		      (unsigned long long)st.evictions, (unsigned long long)st.abandons,
		      (unsigned long long)st.enospc);
	/* The run must have reached the interesting paths. */
	assert_true(st.publishes > 100 && st.replaces > 10 && st.evictions > 10);
	fz_close(&f, &z);
}

/* Each thread keeps its own bookkeeping; dir and sessions are shared. */
struct fz_thread {
	struct fz z;
	uint64_t seed;
};

static void *fz_thread(void *arg)
{
	struct fz_thread *t = arg;
	struct rng r = { t->seed };

	fz_run(&t->z, &r, 20000, 0, 0);
	return NULL;
}

static void test_threads(void **state)
{
	struct fz_thread t[3];
	pthread_t th[3];
	struct fx f;
	struct fz z;
	int i;

	fz_open(&f, &z);
	z.shared = 1;
	/* Sessions are shared by threads here: the dir must not care. */
	for (i = 0; i < 3; i++) {
		t[i].z = z;
		t[i].seed = 0x1234567ULL * (i + 1);
		assert_int_equal(pthread_create(&th[i], NULL, fz_thread, &t[i]), 0);
	}
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(dir_check(z.d), 0);
	fz_close(&f, &z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkdir_nested),
		cmocka_unit_test(test_rmdir),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_create_publish_lookup),
		cmocka_unit_test(test_excl),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_zero_fill),
		cmocka_unit_test(test_publish_over_leased),
		cmocka_unit_test(test_unlink_leased),
		cmocka_unit_test(test_unlink_detaches_pending),
		cmocka_unit_test(test_rename_files),
		cmocka_unit_test(test_rename_dirs),
		cmocka_unit_test(test_rename_pending),
		cmocka_unit_test(test_publish_race),
		cmocka_unit_test(test_session_end),
		cmocka_unit_test(test_setattr),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_evict_lru_order),
		cmocka_unit_test(test_evict_spares_tmp_and_leased),
		cmocka_unit_test(test_evict_copy_source_pinned),
		cmocka_unit_test(test_evict_none),
		cmocka_unit_test(test_readdir_pagination),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests_name("dir", tests, NULL, NULL);
}

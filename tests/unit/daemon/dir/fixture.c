/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/fixture.c: the shared directory test fixture of
 * fixture.h: the fake pool and its copy callback, the file helpers, and the
 * malloc fault injection (interposed here, so it is in every dir test).
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

#include "fixture.h"

void (*copy_hook)(void *arg);
void *copy_hook_arg;

/* ---- malloc fault injection (only armed around single dir_* calls) ---- */

__thread unsigned long fail_countdown;
unsigned long fail_injected;

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


/* Pool offset and contiguous bytes available at byte off of an extent list. */
uint64_t ext_at(const struct extent_list *l, uint64_t off, uint64_t *avail)
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

void fake_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		      const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	uint8_t *pool = arg;

	if (copy_hook)
		copy_hook(copy_hook_arg);
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
void fx_open_limits(struct fx *f, uint64_t blocks, enum dir_eviction ev,
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
		o.pin_max_bytes = limits->pin_max_bytes;
		o.pin_max_seconds = limits->pin_max_seconds;
	}
	assert_int_equal(dir_new(&o, &f->d), 0);
	assert_int_equal(dir_session_new(f->d, &f->s1), 0);
	assert_int_equal(dir_session_new(f->d, &f->s2), 0);
}

void fx_open(struct fx *f, uint64_t blocks, enum dir_eviction ev, uint32_t ring)
{
	fx_open_limits(f, blocks, ev, ring, NULL);
}

void fx_close(struct fx *f)
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

uint64_t do_mkdir(struct fx *f, uint64_t parent, const char *name)
{
	struct dir_attr at;

	assert_int_equal(dir_mkdir(f->d, parent, name, strlen(name), 0755, 1, 2, &at), 0);
	assert_int_equal(at.state, DIR_ST_DIR);
	return at.ino;
}

uint64_t do_create(struct fx *f, struct dir_session *s, uint64_t parent,
			  const char *name, uint32_t flags, uint64_t hint)
{
	struct dir_attr at;

	assert_int_equal(dir_create(f->d, s, parent, name, strlen(name), 0, flags,
				    0644, 1, 2, hint, &at), 0);
	assert_int_equal(at.state, DIR_ST_PENDING);
	return at.ino;
}

void do_pwrite(struct fx *f, struct dir_session *s, uint64_t ino,
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
	alloc_extent_list_free(&l);
	assert_int_equal(dir_wrote(f->d, s, ino, off, off + len, &at), 0);
}

/* Whole content of a version s holds; returns its size. */
uint64_t do_read(struct fx *f, struct dir_session *s, uint64_t ino,
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
	alloc_extent_list_free(&l);
	return at.size;
}

/* Create, write and publish; the publisher's lease is released. */
uint64_t put_file(struct fx *f, struct dir_session *s, uint64_t parent,
			 const char *name, const char *content)
{
	uint64_t len = strlen(content), ino = do_create(f, s, parent, name, 0, 0);
	struct dir_attr at;

	if (len)
		do_pwrite(f, s, ino, content, len, 0);
	assert_int_equal(dir_publish(f->d, s, ino, len, 0x1234, &at, NULL), 0);
	assert_int_equal(at.state, DIR_ST_PUBLISHED);
	assert_int_equal(at.ino, ino);
	assert_int_equal(dir_release(f->d, s, ino), 0);
	return ino;
}

void put_sized(struct fx *f, struct dir_session *s, uint64_t parent,
		      const char *name, uint64_t size)
{
	uint64_t ino = do_create(f, s, parent, name, 0, size);

	assert_int_equal(dir_publish(f->d, s, ino, size, 0, NULL, NULL), 0);
	assert_int_equal(dir_release(f->d, s, ino), 0);
}

/* Lease name and compare its bytes with want; returns the version id. */
uint64_t expect_content(struct fx *f, struct dir_session *s, uint64_t parent,
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

int lookup(struct fx *f, struct dir_session *s, uint64_t parent, const char *name,
		  struct dir_attr *at)
{
	struct dir_attr tmp;

	return dir_lookup(f->d, s, parent, name, strlen(name), at ? at : &tmp);
}

struct dir_stats stats(struct fx *f)
{
	struct dir_stats st;

	dir_stats(f->d, &st);
	return st;
}

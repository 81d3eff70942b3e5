/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/dir/fixture.h: what every directory test shares: a fake
 * pool (a malloc'd buffer, garbage-filled so a missing zero-fill shows)
 * whose copy callback really copies and zeroes, a dir with two sessions,
 * helpers that write and read file bytes through the extents the dir hands
 * out, and malloc/calloc/realloc fault injection (fail_countdown: the n-th
 * allocation from now fails; only ever armed around single dir_* calls).
 * fx_close() runs dir_check() before and after the sessions end and checks
 * every byte went back to the allocator.
 */
#ifndef DIR_TEST_FIXTURE_H
#define DIR_TEST_FIXTURE_H

#include <stdint.h>

#include "alloc.h"
#include "dir.h"
#include "proto.h"

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

extern __thread unsigned long fail_countdown;
extern unsigned long fail_injected;
/* When set, fake_copy calls it first (one-shot hooks clear it themselves). */
extern void (*copy_hook)(void *arg);
extern void *copy_hook_arg;

uint64_t ext_at(const struct extent_list *l, uint64_t off, uint64_t *avail);
void fake_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		      const struct extent_list *src, uint64_t src_off, uint64_t len);
void fx_open(struct fx *f, uint64_t blocks, enum dir_eviction ev, uint32_t ring);
void fx_close(struct fx *f);
uint64_t do_mkdir(struct fx *f, uint64_t parent, const char *name);
uint64_t do_create(struct fx *f, struct dir_session *s, uint64_t parent,
			  const char *name, uint32_t flags, uint64_t hint);
void do_pwrite(struct fx *f, struct dir_session *s, uint64_t ino,
		      const void *buf, uint64_t len, uint64_t off);
uint64_t do_read(struct fx *f, struct dir_session *s, uint64_t ino,
			uint8_t *buf, uint64_t max);
uint64_t put_file(struct fx *f, struct dir_session *s, uint64_t parent,
			 const char *name, const char *content);
void put_sized(struct fx *f, struct dir_session *s, uint64_t parent,
		      const char *name, uint64_t size);
uint64_t expect_content(struct fx *f, struct dir_session *s, uint64_t parent,
			       const char *name, const char *want);
int lookup(struct fx *f, struct dir_session *s, uint64_t parent, const char *name,
		  struct dir_attr *at);
struct dir_stats stats(struct fx *f);
void fx_open_limits(struct fx *f, uint64_t blocks, enum dir_eviction ev,
		    uint32_t ring, const struct dir_opts *limits);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/persist/journal_fixture.c: the fake pool, directory and
 * journal the warm-restart unit tests open, close and reopen over the same
 * bytes (see journal_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "journal_fixture.h"

static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void no_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		    const struct extent_list *src, uint64_t src_off, uint64_t len)
{
}

void wopen(struct wfx *f, int journal)
{
	struct dir_opts o = { .copy = no_copy };
	struct journal_opts jo = { f->pool, BLK, f->meta_len, uuid, NULL, NULL, f->shared };
	struct persist_owner own;

	assert_int_equal(alloc_new(BLK + f->meta_len, f->data_len, BLK, 16 * BLK, &f->a), 0);
	o.alloc = f->a;
	assert_int_equal(dir_new(&o, &f->d), 0);
	assert_int_equal(dir_session_new(f->d, &f->s), 0);
	f->j = NULL;
	f->p = NULL;
	if (!journal)
		return;
	assert_int_equal(persist_journal_open(&jo, &f->j), 0);
	dir_persist_owner(f->d, &own);
	assert_int_equal(persist_new(f->j, &own, &f->p), 0);
}

void wnew(struct wfx *f, uint64_t meta_len, uint64_t data_len, int journal)
{
	memset(f, 0, sizeof(*f));
	f->meta_len = meta_len;
	f->data_len = data_len;
	f->pool = calloc(1, BLK + meta_len + data_len);
	assert_non_null(f->pool);
	wopen(f, journal);
	if (journal) {
		dir_set_persist(f->d, f->p);
		assert_int_equal(persist_checkpoint(f->p), 0);
	}
}

void wnew_shared(struct wfx *f, uint64_t meta_len, uint64_t data_len)
{
	void *m;

	memset(f, 0, sizeof(*f));
	f->meta_len = meta_len;
	f->data_len = data_len;
	f->shared = 1;
	m = mmap(NULL, BLK + meta_len + data_len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	f->pool = m;
	wopen(f, 1);
	dir_set_persist(f->d, f->p);
	assert_int_equal(persist_checkpoint(f->p), 0);
}

void wfree_pool(struct wfx *f)
{
	if (f->shared)
		munmap(f->pool, BLK + f->meta_len + f->data_len);
	else
		free(f->pool);
	f->pool = NULL;
}

void wclose(struct wfx *f)
{
	dir_session_end(f->d, f->s);
	assert_int_equal(dir_check(f->d), 0);
	persist_stop(f->p);	/* its thread walks f->d */
	dir_destroy(f->d);
	persist_free(f->p);
	alloc_destroy(f->a);
	persist_journal_close(f->j);
	f->p = NULL;
	f->d = NULL;
}

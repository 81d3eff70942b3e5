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
#include <xxhash.h>

#include <cmocka.h>

#include "journal_fixture.h"

static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void no_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		    const struct extent_list *src, uint64_t src_off, uint64_t len)
{
}

uint64_t wfx_pin_max_bytes = UINT64_MAX;

void wopen(struct wfx *f, int journal)
{
	struct dir_opts o = { .copy = no_copy, .pin_max_bytes = wfx_pin_max_bytes };
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

uint64_t wfx_put(struct wfx *f, uint64_t parent, const char *name, const char *c)
{
	struct extent_list l = { 0 };
	uint64_t len = strlen(c), off = 0;
	struct dir_attr at;
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

static int dump_one(void *arg, const struct persist_item *it)
{
	struct wfx_dump *x = arg;
	uint32_t n = persist_enc_len(it);

	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 64;
		x->rec = realloc(x->rec, x->cap * sizeof(*x->rec));
		x->len = realloc(x->len, x->cap * sizeof(*x->len));
		assert_non_null(x->rec);
		assert_non_null(x->len);
	}
	x->rec[x->n] = malloc(n + 4);
	assert_non_null(x->rec[x->n]);
	memcpy(x->rec[x->n], &it->type, 4);
	assert_int_equal(persist_enc_to(it, x->rec[x->n] + 4), n);
	x->len[x->n++] = n + 4;
	return 0;
}

static const struct wfx_dump *sorting;

static int dump_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint32_t n = sorting->len[i] < sorting->len[j] ? sorting->len[i] : sorting->len[j];
	int c = memcmp(sorting->rec[i], sorting->rec[j], n);

	return c ? c : (int)sorting->len[i] - (int)sorting->len[j];
}

void wfx_dump(struct dir *d, struct wfx_dump *out)
{
	struct persist_owner own;
	uint32_t *idx, i;
	uint8_t **rec;
	uint32_t *len;

	memset(out, 0, sizeof(*out));
	dir_persist_owner(d, &own);
	pthread_mutex_lock(own.lock);
	assert_int_equal(own.ops->walk_items(own.dir, dump_one, out), 0);
	pthread_mutex_unlock(own.lock);
	/* sort by index, then permute */
	idx = malloc((out->n + 1) * sizeof(*idx));
	rec = malloc((out->n + 1) * sizeof(*rec));
	len = malloc((out->n + 1) * sizeof(*len));
	assert_true(idx && rec && len);
	for (i = 0; i < out->n; i++)
		idx[i] = i;
	sorting = out;
	qsort(idx, out->n, sizeof(*idx), dump_cmp);
	for (i = 0; i < out->n; i++) {
		rec[i] = out->rec[idx[i]];
		len[i] = out->len[idx[i]];
	}
	free(idx);
	free(out->rec);
	free(out->len);
	out->rec = rec;
	out->len = len;
}

void wfx_dump_free(struct wfx_dump *x)
{
	uint32_t i;

	for (i = 0; i < x->n; i++)
		free(x->rec[i]);
	free(x->rec);
	free(x->len);
	memset(x, 0, sizeof(*x));
}

void wfx_dump_equal(const struct wfx_dump *a, const struct wfx_dump *b)
{
	uint32_t i;

	assert_int_equal(a->n, b->n);
	for (i = 0; i < a->n; i++) {
		assert_int_equal(a->len[i], b->len[i]);
		assert_memory_equal(a->rec[i], b->rec[i], a->len[i]);
	}
}

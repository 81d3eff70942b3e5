/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/extent.c: walking a file range through its extents (see
 * extent.h). Extents of length 0 hold no byte and are stepped over.
 */
#include "extent.h"

void extent_iter_init(struct extent_iter *it, const struct extent *v, uint32_t n,
		      uint64_t off, uint64_t len)
{
	it->v = v;
	it->n = n;
	it->i = 0;
	it->base = 0;
	it->off = off;
	it->left = len;
}

int extent_iter_next(struct extent_iter *it, struct extent_piece *p)
{
	const struct extent *e;
	uint64_t in;

	for (; it->i < it->n && it->left; it->base += it->v[it->i].len, it->i++) {
		e = &it->v[it->i];
		if (it->off - it->base >= e->len)
			continue;
		in = it->off - it->base;
		p->pool_off = e->off + in;
		p->len = e->len - in < it->left ? e->len - in : it->left;
		p->file_off = it->off;
		p->idx = it->i;
		it->off += p->len;
		it->left -= p->len;
		return 1;
	}
	return 0;
}

uint64_t extent_at(const struct extent *v, uint32_t n, uint64_t off, uint64_t *pool_off)
{
	struct extent_iter it;
	struct extent_piece p;

	extent_iter_init(&it, v, n, off, UINT64_MAX - off);
	if (!extent_iter_next(&it, &p))
		return 0;
	*pool_off = p.pool_off;
	return p.len;
}

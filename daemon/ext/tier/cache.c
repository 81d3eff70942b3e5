// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/ext/tier/cache.c: the tier's DRAM cache, which is the page cache
 * of the pool file: residency measured with mincore() on marud's mapping,
 * loads with madvise(MADV_POPULATE_READ / _WRITE) (touching each page
 * where the kernel lacks them), and evictions that never lose a byte: the
 * unit is unmapped from marud's page tables (MADV_DONTNEED), its dirty
 * pages written back and waited for (sync_file_range), then dropped from
 * the page cache (POSIX_FADV_DONTNEED; a page someone dirtied again in
 * between stays, dirty pages are never dropped). Units held by an open
 * read request are never evicted; the others go least recently used first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tier.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

int tier_cache_init(struct tier *t)
{
	uint64_t pages = (t->r.size + page_size() - 1) / page_size();

	t->nunits = (uint32_t)((t->r.size + TIER_UNIT - 1) / TIER_UNIT);
	t->u = calloc(t->nunits, sizeof(*t->u));
	t->vec = malloc(pages ? pages : 1);
	if (!t->u || !t->vec) {
		tier_cache_free(t);
		return -ENOMEM;
	}
	return 0;
}

void tier_cache_free(struct tier *t)
{
	free(t->u);
	free(t->vec);
	t->u = NULL;
	t->vec = NULL;
}

uint64_t tier_resident(struct tier *t, uint64_t off, uint64_t len)
{
	unsigned char v[1024];
	uint64_t pg = page_size(), end = off + len, n = 0, i, k;

	off &= ~(pg - 1);
	if (end > t->r.size)
		end = t->r.size;
	while (off < end) {
		k = (end - off + pg - 1) / pg;
		k = k > sizeof(v) ? sizeof(v) : k;
		if (mincore(t->r.base + off, k * pg, v))
			return 0;
		for (i = 0; i < k; i++)
			n += v[i] & 1 ? pg : 0;
		off += k * pg;
	}
	return n;
}

/* Touch each page: for kernels without MADV_POPULATE_*. */
static void touch(uint8_t *p, uint64_t len, int write)
{
	volatile uint8_t *q = p;
	uint64_t i, pg = page_size();

	for (i = 0; i < len; i += pg) {
		uint8_t b = q[i];

		if (write)
			__atomic_fetch_add(&q[i], 0, __ATOMIC_RELAXED);
		(void)b;
	}
}

int tier_load(struct tier *t, uint64_t off, uint64_t len, int write)
{
	uint64_t pg = page_size(), start = off & ~(pg - 1), end = off + len;

	if (end > t->r.size)
		end = t->r.size;
	if (start >= end)
		return 0;
	if (!madvise(t->r.base + start, end - start,
		     write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
		return 0;
	if (errno != EINVAL)
		return -errno;
	touch(t->r.base + start, end - start, write);
	return 0;
}

/* Write back and drop unit i; the lock is dropped around the syscalls. */
static void evict(struct tier *t, uint32_t i)
{
	uint64_t off = (uint64_t)i * TIER_UNIT, len = TIER_UNIT;
	uint32_t had = t->u[i].bytes;

	if (off + len > t->r.size)
		len = t->r.size - off;
	t->u[i].state = U_EVICTING;	/* take_piece() waits for it */
	pthread_mutex_unlock(&t->lock);
	madvise(t->r.base + off, len, MADV_DONTNEED);
	sync_file_range(t->r.fd, (off64_t)off, (off64_t)len, SYNC_FILE_RANGE_WAIT_BEFORE |
			SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
	posix_fadvise(t->r.fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
	pthread_mutex_lock(&t->lock);
	t->u[i].state = U_COLD;
	t->u[i].bytes = 0;
	t->resident = t->resident > had ? t->resident - had : 0;
	t->evicted_bytes += had;
	pthread_cond_broadcast(&t->done);
}

/* The least recently used resident unit nobody holds; -1 if none. */
static int64_t victim(const struct tier *t)
{
	int64_t best = -1;
	uint32_t i;

	for (i = 0; i < t->nunits; i++) {
		const struct unit *u = &t->u[i];

		if (!u->bytes || u->holds || u->state == U_LOADING || u->state == U_EVICTING)
			continue;
		if (best < 0 || u->used < t->u[best].used)
			best = i;
	}
	return best;
}

int tier_make_room(struct tier *t, uint64_t len)
{
	int64_t i;

	while (t->resident + len > t->budget) {
		i = victim(t);
		if (i < 0)
			return -EBUSY;
		evict(t, (uint32_t)i);
	}
	return 0;
}

/* mincore() over the whole mapping into t->vec, then per unit. */
static void measure(struct tier *t)
{
	uint64_t pg = page_size(), pages = (t->r.size + pg - 1) / pg, p, total = 0;
	uint32_t per = TIER_UNIT / (uint32_t)pg, i;

	pthread_mutex_unlock(&t->lock);
	if (mincore(t->r.base, pages * pg, t->vec))
		memset(t->vec, 0, pages);
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nunits; i++) {
		uint32_t n = 0;

		for (p = (uint64_t)i * per; p < (uint64_t)(i + 1) * per && p < pages; p++)
			n += t->vec[p] & 1;
		if (t->u[i].state != U_LOADING && t->u[i].state != U_EVICTING)
			t->u[i].bytes = n * (uint32_t)pg;
		total += t->u[i].bytes;
	}
	t->resident = total;
}

void tier_hold_budget(struct tier *t)
{
	measure(t);
	if (tier_make_room(t, 0))
		t->stalls++;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/preload/mmap.c: the shim's mmap. A shared (or private read-only)
 * mapping of a whole-page range of a marufs file is its own maru_map()
 * (holding its own lease), remembered by address in the regions list
 * (under pl_tab_lock) until munmap of the whole range releases it; an
 * anonymous, fixed or executable mapping, or one past the file's end,
 * goes to the next definition. A fork child keeps the regions: its
 * mappings were inherited.
 */
/* the off_t of the interposed calls, as in preload.c */
#undef _FILE_OFFSET_BITS
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "preload_priv.h"

/* An intercepted mmap: [start, start+len) belongs to m. */
struct region {
	struct region *next;
	uint8_t *start;
	size_t len;
	struct maru_map *m;
};

static struct region *regions;

static int map_flags_for(int prot, int flags, unsigned int *mf)
{
	int type = flags & MAP_TYPE;

	if (flags & (MAP_ANONYMOUS | MAP_FIXED | MAP_FIXED_NOREPLACE) || (prot & PROT_EXEC))
		return 0;
	if (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) {
		*mf = prot & PROT_WRITE ? MARU_MAP_WRITE : 0;
		return 1;
	}
	/* a private read-only view of immutable bytes is a shared one */
	*mf = 0;
	return type == MAP_PRIVATE && !(prot & PROT_WRITE);
}

static void *region_add(struct maru_map *m, off_t off, size_t len)
{
	struct region *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->m = m;
	r->start = (uint8_t *)maru_map_addr(m) + off;
	r->len = (len + (size_t)pl_page_size - 1) & ~((size_t)pl_page_size - 1);
	pthread_mutex_lock(&pl_tab_lock);
	r->next = regions;
	regions = r;
	pthread_mutex_unlock(&pl_tab_lock);
	return r->start;
}

/* The mapping for an mmap call, or NULL to fall through. */
static void *serve_mmap(size_t len, int prot, int flags, int fd, off_t off)
{
	unsigned int mf;
	struct maru_map *m;
	struct stat st;
	uint64_t size;
	void *p = NULL;
	int rc;

	if (!pl_enabled || pl_in_shim || fd < 0 || len == 0 || off < 0 || (off & (pl_page_size - 1)) ||
	    !map_flags_for(prot, flags, &mf) || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !pl_is_fuse(fd, st.st_dev))
		return NULL;
	pl_in_shim++;
	rc = maru_map(fd, NULL, mf, &m);
	if (rc) {
		plog("mmap fd %d: not mapped (%s): through FUSE", fd, strerror(-rc));
		goto out;
	}
	size = (maru_map_size(m) + (uint64_t)pl_page_size - 1) & ~((uint64_t)pl_page_size - 1);
	if ((uint64_t)off + len > size || ((uintptr_t)maru_map_addr(m) & (pl_page_size - 1))) {
		plog("mmap fd %d: range %lld+%zu past the file: through FUSE", fd,
		     (long long)off, len);
		maru_unmap(m);
		goto out;
	}
	p = region_add(m, off, len);
	if (!p)
		maru_unmap(m);
	else
		plog("mmap fd %d off %lld len %zu%s (zero-copy)", fd, (long long)off, len,
		     mf & MARU_MAP_WRITE ? " writable" : "");
out:
	pl_in_shim--;
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;

	pl_setup();
	p = serve_mmap(len, prot, flags, fd, off);
	return p ? p : pl_real.mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	void *p;

	pl_setup();
	p = serve_mmap(len, prot, flags, fd, off);
	return p ? p : pl_real.mmap64(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
	struct region **pp, *r = NULL;
	size_t full = (len + (size_t)pl_page_size - 1) & ~((size_t)pl_page_size - 1);
	int rc;

	pl_setup();
	if (!pl_in_shim && regions) {
		pthread_mutex_lock(&pl_tab_lock);
		for (pp = &regions; (r = *pp); pp = &r->next) {
			if (r->start == addr && full >= r->len) {
				*pp = r->next;
				break;
			}
		}
		pthread_mutex_unlock(&pl_tab_lock);
	}
	if (!r)
		return pl_real.munmap(addr, len);
	pl_in_shim++;
	rc = maru_unmap(r->m);
	pl_in_shim--;
	plog("munmap %p len %zu (zero-copy mapping released%s)", addr, len,
	     rc ? ", publish failed" : "");
	free(r);
	return 0;
}

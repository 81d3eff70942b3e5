/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/file_hash.c: the streaming digest of a pending version. A version
 * written in order from byte 0 through a data path that hashes (shm, rdma)
 * is hashed while the path copies it (f->hs, fed by the path), and PUBLISH
 * carries the digest, so marud does not read the bytes again. Any other
 * write, a failed one, a shrinking truncate, or handing the extents out
 * (someone may write through a mapping) drops the stream for good
 * (f->hash_off), and marud hashes at PUBLISH.
 */
#include "dp/datapath.h"
#include "file_hash.h"
#include "hash.h"

void file_hash_drop(struct maru_file *f)
{
	hash_stream_free(f->hs);
	f->hs = NULL;
	f->hash_off = 1;
}

/*
 * Keep (or start, at byte 0) the stream only if the write continues the
 * bytes hashed so far and the data path hashes.
 */
void file_hash_before_write(struct maru_file *f, const struct dp_ops *dp, uint64_t off)
{
	if (f->hash_off || !dp->hashes) {
		if (f->hs || !f->hash_off)
			file_hash_drop(f);
		return;
	}
	if (!f->hs && off == 0 && f->hashed == 0) {
		f->hs = hash_stream_new();
		if (!f->hs)
			f->hash_off = 1;	/* marud hashes: no harm */
		return;
	}
	if (!f->hs || off != f->hashed)
		file_hash_drop(f);
}

void file_hash_after_write(struct maru_file *f, ssize_t rc)
{
	if (!f->hs)
		return;
	if (rc > 0)
		f->hashed += (uint64_t)rc;
	else
		file_hash_drop(f);
}

uint64_t file_hash_for_publish(const struct maru_file *f)
{
	if (!f->hs || f->hash_off || f->hashed != f->size)
		return 0;
	return hash_stream_digest(f->hs);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/file_hash.h: the publish digest of a pending version, taken while a
 * data path copies its bytes (file_hash.c); file.c decides when, under the
 * handle's lock held for writing.
 */
#ifndef MARU_FILE_HASH_H
#define MARU_FILE_HASH_H

#include <sys/types.h>

#include "client_priv.h"

struct dp_ops;

/* Never (again) stream-hash f: marud hashes at PUBLISH. */
void file_hash_drop(struct maru_file *f);
/* Before a write at off through dp: keep, start (at byte 0) or drop the stream. */
void file_hash_before_write(struct maru_file *f, const struct dp_ops *dp, uint64_t off);
/* After it: rc bytes more are hashed, or (rc <= 0) the stream is dropped. */
void file_hash_after_write(struct maru_file *f, ssize_t rc);
/* PUBLISH's xxh3: the stream's digest if it covers every byte, else 0. */
uint64_t file_hash_for_publish(const struct maru_file *f);

#endif

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/preload/fixture.h: what the preload shim's tests share.
 * Each test program has the shim's four files (lib/preload/) built in, so
 * their read, mmap, close and dup2 interpose there as under LD_PRELOAD;
 * fixture.c fakes libmaru's map calls (one file, fm.ino, is "mapped" onto
 * fm.bytes, whose byte i is pool_byte(i)) and wraps fstatfs to call every
 * file a FUSE one. setup() writes two files of FSIZE bytes: path (all 'd'
 * on disk, the one the fake maps) and other (all 'o', never mapped).
 */
#ifndef PRELOAD_FIXTURE_H
#define PRELOAD_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FSIZE		(1u << 20)
#define MIN_READ	(64u << 10)	/* MARU_PRELOAD_MIN in meson */

struct fake_maps {
	ino_t ino;		/* the one file the fake maps */
	uint8_t *bytes;		/* its "pool" bytes, page-aligned */
	unsigned int flags;	/* maru_map_flags() of new mappings */
	int check_rc;
	int calls, maps, unmaps;
};

extern struct fake_maps fm;
extern char path[64], other[64];
extern uint8_t buf[FSIZE];

uint8_t pool_byte(size_t i);
int setup(void **state);
int teardown(void **state);
/* buf[0..n) holds the pool's bytes from off. */
int from_pool(size_t off, size_t n);
/* buf[0..n) is all c (the disk's bytes). */
int all(uint8_t c, size_t n);

#endif

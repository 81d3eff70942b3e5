/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/pool_locate.h: finding and mapping the pool memory on a client host,
 * one policy for the shm data path and for maru_map(). marud names
 * the pool by the path it opened; a host sharing the memory may see it under
 * another path (a CXL device is /dev/dax0.0 here, /dev/dax1.0 there), so a
 * client that cannot open that path, or finds another pool behind it, looks
 * for a device-DAX whose superblock carries the pool UUID. pool_locate.c is
 * the only client-side file that includes <daxctl/libdaxctl.h>; without
 * libdaxctl the lookups answer -ENODEV and paths are taken as given.
 */
#ifndef MARU_POOL_LOCATE_H
#define MARU_POOL_LOCATE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The path of an enabled device-DAX whose pool superblock is valid and
 * carries uuid, written to path (len bytes). -ENODEV when there is none.
 */
int pool_locate_dax_find(const uint8_t uuid[16], char *path, size_t len);
/*
 * Mapping granularity of the device-DAX at path (/dev/daxX.Y): offsets and
 * lengths of its mappings must be multiples of it. -ENODEV if libdaxctl does
 * not know the device.
 */
int pool_locate_dax_align(const char *path, uint64_t *align);
/*
 * Where this host reaches the pool marud calls `path`: path itself when it
 * exists and holds the pool with that uuid, else a device-DAX found by
 * pool_locate_dax_find(). -ENODEV (with a reason in *why) when neither works.
 */
int pool_locate(const char *path, const uint8_t uuid[16], char *out, size_t len,
		const char **why);

/* The whole pool mapped read-write here (the shm data path). */
struct pool_map {
	uint8_t *base;
	uint64_t size;
	uint8_t uuid[16];
	/*
	 * A read-only descriptor of the same pool file, the source splice
	 * reads from (splice.c); -1 for a device-DAX, which has no read().
	 * dev and ino name that file.
	 */
	int rofd;
	uint64_t dev, ino;
};

/*
 * Locate the pool marud calls path (pool_locate) and map all size bytes of
 * it; its superblock must carry uuid and size. A regular pool file is also
 * kept open read-only (rofd). -ENODEV with a reason in
 * *why when it cannot be found, opened, mapped or checked.
 */
int pool_locate_map_open(const char *path, const uint8_t uuid[16], uint64_t size,
			 struct pool_map **out, const char **why);
void pool_locate_map_close(struct pool_map *m);

/*
 * Test seam: copy the pool superblock at the start of the device at path
 * (mapped `align` bytes, as devdax requires) into sb (72 bytes). The unit
 * test replaces it to serve fake devices.
 */
extern int (*pool_locate_read_sb)(const char *path, uint64_t align, void *sb, size_t len);

#endif

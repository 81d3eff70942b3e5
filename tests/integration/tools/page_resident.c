// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/integration/tools/page_resident.c: how many bytes of a file's
 * range are in the page cache, as mincore() on a shared mapping tells.
 *   page_resident FILE [OFF+LEN[,OFF+LEN...]]   (default: the whole file)
 * Prints the resident bytes. The hint cases use it on a tier pool file
 * with the extents user.maru.extent gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t resident(const uint8_t *base, uint64_t size, uint64_t off, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), end = off + len, n = 0, i, k;
	unsigned char v[4096];

	off &= ~(pg - 1);
	end = end > size ? size : end;
	while (off < end) {
		k = (end - off + pg - 1) / pg;
		k = k > sizeof(v) ? sizeof(v) : k;
		if (mincore((void *)(base + off), k * pg, v))
			return 0;
		for (i = 0; i < k; i++)
			n += (v[i] & 1) ? pg : 0;
		off += k * pg;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct stat st;
	uint8_t *base;
	uint64_t total = 0, off, len;
	char *spec, *save = NULL, *item, *end;
	int fd;

	if (argc < 2 || (fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st)) {
		fprintf(stderr, "usage: page_resident FILE [OFF+LEN,...]\n");
		return 2;
	}
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return 2;
	if (argc < 3) {
		total = resident(base, (uint64_t)st.st_size, 0, (uint64_t)st.st_size);
	} else {
		spec = argv[2];
		for (item = strtok_r(spec, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
			off = strtoull(item, &end, 0);
			if (*end != '+')
				return 2;
			len = strtoull(end + 1, NULL, 0);
			total += resident(base, (uint64_t)st.st_size, off, len);
		}
	}
	printf("%" PRIu64 "\n", total);
	return 0;
}

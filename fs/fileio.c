/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/fileio.c: reading a libmaru file for the kernel, which takes a short
 * read inside a file for its end: file_read_full() loops until the range or
 * the file ends. pendio.c and pendlife.c (pending versions) and handle.c
 * (leased readers) all read through it.
 */
#include <sys/types.h>

#include "fileio.h"

ssize_t file_read_full(struct maru_file *f, char *buf, size_t size, off_t off)
{
	size_t got = 0;
	ssize_t n;

	/* Never hand the kernel a short read inside the file: it would take
	 * it for EOF (O_DIRECT readers see a truncated block). */
	while (got < size) {
		n = maru_file_pread(f, buf + got, size - got, (uint64_t)off + got);
		if (n < 0)
			return got ? (ssize_t)got : n;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

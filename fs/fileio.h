/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fs/fileio.h: file_read_full(), a read of a libmaru file that is never short inside it. */
#ifndef MARUFS_FILEIO_H
#define MARUFS_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

#include "maru/libmaru.h"

/* Bytes read (size unless the file ends first), or -errno if none were. */
ssize_t file_read_full(struct maru_file *f, char *buf, size_t size, off_t off);

#endif

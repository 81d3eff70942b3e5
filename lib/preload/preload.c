/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/preload/preload.c: libmaru-preload.so, the LD_PRELOAD shim that serves mmap
 * and large reads of marufs files from the pool memory with maru_map()
 * (marufs-design(7) §5), so an unmodified engine reads at memory speed. It interposes
 * mmap/munmap, read/pread/readv/preadv (and their _chk and 64 forms),
 * close/fclose/dup2/dup3; anything it cannot serve goes to the next
 * definition (dlsym RTLD_NEXT) unchanged: other filesystems, reads below
 * MARU_PRELOAD_MIN, descriptors not opened O_RDONLY, pending files, and any
 * descriptor whose mapping failed once.
 *
 * Reads: a table of entries keyed by (fd, st_dev, st_ino) caches, per
 * descriptor, either a read-only mapping of the file or the verdict "not
 * ours". The mapping is made (and the extents asked) once per open, and is
 * normally a range of libmaru's per-process pool mapping, populated once:
 * a served read is a memcpy out of it. The key is checked with fstat on
 * every large read, so a descriptor closed behind our back (close_range, a
 * raw syscall) and reused for another file never hits a stale entry; close,
 * fclose, dup2 and dup3 drop the entry at once, after waiting for the reads
 * in flight on it: the mapping borrows the descriptor as its lease
 * (MARU_MAP_BORROW), so closing it costs no extra round trip to marufs.
 * read/readv keep the file offset with lseek under the entry's pos_lock.
 * Every copy is bracketed by maru_map_check(): after a marud restart the
 * read falls through to FUSE, which answers EIO.
 *
 * mmap: each intercepted mmap is its own maru_map (holding its own lease),
 * remembered by address until munmap of the whole range.
 *
 * Locks: pl_tab_lock guards both tables and entry refcounts; it is never held
 * across a libmaru call or a copy. fork: the child drops the read cache
 * (lazily, on its next call, since libmaru's own fork handlers have not run
 * yet when ours do) and keeps the mmap table: its mappings were inherited.
 * Calls made by libmaru itself (its close, mmap) are recognised by a
 * thread-local flag and passed straight through.
 *
 * Environment: MARU_PRELOAD=0 disables everything, MARU_PRELOAD_LOG=1 logs
 * each interception to stderr, MARU_PRELOAD_MIN=bytes (suffixes K M G)
 * sets the read threshold (default 256 KiB).
 *
 * Files: this one finds the next definitions and reads the environment
 * (it calls none of the others); cache.c is the read cache, the mappings
 * kept across opens and the descriptor calls that drop entries (close,
 * fclose, dup2, dup3); read.c serves the reads, mmap.c the mappings.
 */
/* pread and pread64 are both defined here: no asm redirection of one to the other */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"
#include "preload_priv.h"

#define DEFAULT_MIN		(256u << 10)

struct pl_real pl_real;
int pl_enabled;
size_t pl_min_read = DEFAULT_MIN;
long pl_page_size;
pthread_once_t pl_init_once = PTHREAD_ONCE_INIT;
__thread int pl_in_shim;
static int logging;

/* ---- setup ---- */

void plog(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (!logging)
		return;
	va_start(ap, fmt);
	fputs("maru-preload: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	errno = saved;
}

#define SYM(field, name) (*(void **)&pl_real.field = dlsym(RTLD_NEXT, name))

static void read_env(void)
{
	const char *v = getenv("MARU_PRELOAD");
	uint64_t n;

	pl_enabled = !(v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no")));
	v = getenv("MARU_PRELOAD_LOG");
	logging = v && strcmp(v, "0") != 0 && v[0];
	v = getenv("MARU_PRELOAD_MIN");
	if (v && v[0]) {
		if (parse_size(v, &n) == 0)
			pl_min_read = n ? (size_t)n : 1;
		else
			plog("MARU_PRELOAD_MIN=%s: not a size, keeping %zu", v, pl_min_read);
	}
}

void pl_init(void)
{
	SYM(read, "read");
	SYM(pread, "pread");
	SYM(pread64, "pread64");
	SYM(readv, "readv");
	SYM(preadv, "preadv");
	SYM(preadv64, "preadv64");
	SYM(read_chk, "__read_chk");
	SYM(pread_chk, "__pread_chk");
	SYM(pread64_chk, "__pread64_chk");
	SYM(mmap, "mmap");
	SYM(mmap64, "mmap64");
	SYM(munmap, "munmap");
	SYM(close, "close");
	SYM(fclose, "fclose");
	SYM(dup2, "dup2");
	SYM(dup3, "dup3");
	pl_page_size = sysconf(_SC_PAGESIZE);
	read_env();
}

__attribute__((constructor)) static void preload_ctor(void)
{
	pl_setup();
}

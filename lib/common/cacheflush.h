/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/cacheflush.h: CPU cache maintenance over a byte range, for
 * marud's devdax persist and libmaru's coherence=flush (non-coherent CXL).
 * The line size comes from the CPU (CPUID on x86, CTR_EL0 on aarch64) and
 * the instruction is the best one the CPU has, detected once per process.
 */
#ifndef MARU_CACHEFLUSH_H
#define MARU_CACHEFLUSH_H

#include <stddef.h>

enum cache_insn {
	CACHE_FENCE,		/* no cache maintenance known: a full barrier */
	CACHE_CLFLUSH,
	CACHE_CLFLUSHOPT,
	CACHE_CLWB,		/* x86: also clflushopt/clflush for invalidation */
	CACHE_DC,		/* aarch64: dc cvac / dc civac */
};

/*
 * Write back the cache lines of [p, p+len) (invalidate: and drop them, so
 * the next read comes from memory), then fence. len 0 only fences.
 */
void cache_flush(const void *p, size_t len, int invalidate);
/* The data cache line size in bytes the flush steps by. */
unsigned int cache_line_size(void);
/* The instruction cache_flush() uses for writing back (not invalidating). */
enum cache_insn cache_flush_insn(void);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/cacheflush.c: the one cache-line flush of the project (see
 * cacheflush.h). x86: clwb to write back (keeps the line), clflushopt or
 * clflush to invalidate, sfence after; the line size is CPUID leaf 1's
 * CLFLUSH size. aarch64: dc cvac / dc civac to the point of coherency, dsb
 * after; the line size is CTR_EL0.DminLine. Elsewhere only a full fence.
 * Inline asm rather than intrinsics, so no -mclwb/-mclflushopt is needed.
 */
#include <pthread.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "cacheflush.h"

#define DEFAULT_LINE	64u

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static unsigned int line_size = DEFAULT_LINE;
static enum cache_insn insn = CACHE_FENCE;
static int have_clflushopt;

#if defined(__x86_64__) || defined(__i386__)

/* cpuid rather than __builtin_cpu_supports: gcc 12 does not report clwb. */
static void detect(void)
{
	unsigned int a, b, c, d;

	insn = CACHE_CLFLUSH;
	if (__get_cpuid(1, &a, &b, &c, &d) && ((b >> 8) & 0xff))
		line_size = ((b >> 8) & 0xff) * 8;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		have_clflushopt = !!(b & (1u << 23));
		if (b & (1u << 24))
			insn = CACHE_CLWB;
		else if (have_clflushopt)
			insn = CACHE_CLFLUSHOPT;
	}
}

static void flush_lines(uintptr_t s, uintptr_t end, int invalidate)
{
	/* clwb keeps the line cached: right for a writer, not for a reader */
	int k = invalidate ? (have_clflushopt ? CACHE_CLFLUSHOPT : CACHE_CLFLUSH) : (int)insn;

	for (; s < end; s += line_size) {
		if (k == CACHE_CLWB)
			__asm__ volatile("clwb %0" : "+m"(*(volatile uint8_t *)s));
		else if (k == CACHE_CLFLUSHOPT)
			__asm__ volatile("clflushopt %0" : "+m"(*(volatile uint8_t *)s));
		else
			__asm__ volatile("clflush %0" : "+m"(*(volatile uint8_t *)s));
	}
	__asm__ volatile("sfence" ::: "memory");
}

#elif defined(__aarch64__)

static void detect(void)
{
	uint64_t ctr;

	__asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
	line_size = 4u << ((ctr >> 16) & 0xf);
	insn = CACHE_DC;
}

static void flush_lines(uintptr_t s, uintptr_t end, int invalidate)
{
	for (; s < end; s += line_size) {
		if (invalidate)
			__asm__ volatile("dc civac, %0" : : "r"(s) : "memory");
		else
			__asm__ volatile("dc cvac, %0" : : "r"(s) : "memory");
	}
	__asm__ volatile("dsb ish" ::: "memory");
}

#else

static void detect(void)
{
}

static void flush_lines(uintptr_t s, uintptr_t end, int invalidate)
{
	(void)s;
	(void)end;
	(void)invalidate;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

#endif

void cache_flush(const void *p, size_t len, int invalidate)
{
	uintptr_t s, end;

	pthread_once(&detect_once, detect);
	s = (uintptr_t)p & ~(uintptr_t)(line_size - 1);
	end = (uintptr_t)p + len;
	flush_lines(s, end, invalidate);
}

unsigned int cache_line_size(void)
{
	pthread_once(&detect_once, detect);
	return line_size;
}

enum cache_insn cache_flush_insn(void)
{
	pthread_once(&detect_once, detect);
	return insn;
}

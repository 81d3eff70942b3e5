/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/hintrec.h: a recorder of the hints the mount sends: the
 * tests that link hintrec.c wrap maru_hint (-Wl,--wrap=maru_hint) and read
 * back, in order, each hint's action, request id and version ids.
 */
#ifndef FS_HINTREC_H
#define FS_HINTREC_H

#include <stddef.h>
#include <stdint.h>

#define HINTREC_MAX	64
#define HINTREC_INOS	16

struct hintrec {
	int action;
	char req[64];
	size_t n;
	uint64_t ino[HINTREC_INOS];
};

/* Forget every recorded hint; the next maru_hint() answers rc. */
void hintrec_reset(int rc);
/* The hints recorded so far (copied under the recorder's lock). */
size_t hintrec_get(struct hintrec *out, size_t max);

#endif

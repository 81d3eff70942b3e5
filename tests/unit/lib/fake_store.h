/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/fake_store.h: one chunk file for the fake marud
 * (fake_store.c), enough of marud's version calls for file_test and
 * dp/tcp_test: CREATE, OPEN, RESERVE, WRITE, READ, TRUNCATE, PUBLISH,
 * ABANDON, RELEASE, GETATTR, EXTENTS. It records the order of the calls
 * and every reservation and transfer, and can misbehave on purpose: answer
 * READs in short pieces, refuse big reservations, drop the socket in the
 * middle of a READ reply (fake_marud's cut_bodies cuts WRITEs).
 */
#ifndef FAKE_STORE_H
#define FAKE_STORE_H

#include <pthread.h>
#include <stdint.h>

#include "fake_marud.h"

#define STORE_INO	100
#define STORE_MAX	(12u << 20)

struct store_io {
	uint16_t op;
	uint64_t off;
	uint32_t len;		/* asked */
	uint32_t frame;		/* request payload bytes */
};

struct store {
	pthread_mutex_t mu;
	uint32_t state;		/* MARU_STATE_PENDING or _PUBLISHED */
	uint64_t size, reserved;
	uint8_t *data;		/* STORE_MAX bytes */
	struct proto_extent ext[4];
	uint32_t next;

	uint32_t read_max;	/* answer READs with at most this (0: all) */
	uint64_t enospc_above;	/* refuse reservations beyond (0: none) */
	int cut_reads;		/* drop this many READ replies half sent */
	int short_done;		/* answer WRITE with done = len - 1 */
	int dir_attr;		/* PUBLISH replies carry the directory's attr too */

	char calls[512];	/* one letter per call, see fake_store.c */
	int ncalls;
	uint64_t reserves[32];
	int nreserves;
	struct store_io io[256];
	int nio;
	int write_beyond;	/* a WRITE went past the reservation */
};

void store_init(struct store *s);
void store_free(struct store *s);
/* The fake marud's handler; f->arg is the struct store. */
int store_handler(struct fake_req *q);
/* A copy of the calls string, under the lock. */
void store_calls(struct store *s, char *buf, size_t cap);
/* Deterministic content byte at offset off. */
static inline uint8_t store_byte(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 9) + 7);
}

#endif

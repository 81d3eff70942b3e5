/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/dp/stream_fixture.h: what tcp_pipe_test, tcp_ra_test and
 * tcp_wb_test share: a fake marud (tests/unit/lib/fake_marud.c, real Unix
 * sockets) whose version calls are the fake store's (fake_store.c) but
 * whose READ and WRITE frames a bigger virtual version serves (VF_MAX
 * bytes, more than a stream's window), with faults armed for the Nth such
 * frame; a client of it over tcp; a handle on the version; and a bare
 * struct tcp_stream, made as dp/tcp.c makes one, that the tests hand to
 * the stream calls themselves.
 */
#ifndef STREAM_FIXTURE_H
#define STREAM_FIXTURE_H

#include <pthread.h>
#include <stdint.h>

#include "client_priv.h"
#include "dp/tcp_stream.h"
#include "../fake_store.h"

#define VF_MAX		(40u << 20)
#define PIECE		(128u << 10)
#define MIB		(1u << 20)

enum vf_fault {
	VF_NONE,
	VF_CLOSE,	/* close the socket without an answer */
	VF_STATUS,	/* answer with vf.status */
	VF_SHORT,	/* READ: half the bytes; WRITE: done = len - 1 */
	VF_REQID,	/* answer under another request id */
	VF_DELAY,	/* answer vf.delay_ms late */
};

/* The virtual version's READs and WRITEs, and the faults. */
struct vf {
	pthread_mutex_t mu;
	uint8_t *data;		/* VF_MAX bytes */
	uint64_t size;		/* READs clamp here */
	unsigned int reads, writes;	/* frames seen */
	enum vf_fault fault;
	uint16_t fault_op;	/* OP_READ or OP_WRITE */
	unsigned int fault_at;	/* the frame of fault_op (1: the first) */
	unsigned int fault_n;	/* and this many after it (0: just one) */
	int32_t status;
	int delay_ms;
	uint64_t wr_next;	/* where the next WRITE should start */
	int wr_unordered;	/* a WRITE did not start there */
	unsigned int most_queued;	/* most READs seen waiting on one socket */
	int64_t held_max;	/* most of the client's budget held at a frame */
	int client_gone;	/* the client is freed: held_max no more */
};

struct sfx {
	struct fake_marud f;
	struct store s;
	struct logbook b;
	struct vf v;
	struct maru_client *c;
	struct maru_file *h;
	struct tcp_stream *st;
	const uint8_t *pat;	/* VF_MAX bytes of store_byte() (shared) */
	uint8_t *back;		/* VF_MAX bytes (shared) */
};

/* A fake marud, a client (stream_bytes: opts.stream_bytes), no handle yet. */
struct sfx *sfx_new(unsigned int timeout_ms, size_t stream_bytes);
void sfx_free(struct sfx *x);
/* A published version of size bytes of store_byte(), opened into x->h. */
void sfx_open_published(struct sfx *x, uint64_t size);
/* A pending version (created), opened into x->h; writes land in x->v.data. */
void sfx_create(struct sfx *x);
/* Arm a fault for the at-th frame of op counted from now (n more after it). */
void sfx_fault(struct sfx *x, uint16_t op, enum vf_fault fault, unsigned int at,
	       unsigned int n);
/* The stream, made as dp/tcp.c's stream_of makes it; free drops all it holds. */
struct tcp_stream *stream_new(void);
void stream_free(struct maru_client *c, struct tcp_stream *st);
int64_t held(const struct sfx *x);

#endif

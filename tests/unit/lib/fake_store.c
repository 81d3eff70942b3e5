/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/fake_store.c: the one chunk file of fake_store.h, served
 * the way marud serves a version over tcp: RESERVE sets the reservation,
 * a WRITE past it is refused (-ENOSPC, and noted as the client's fault),
 * READ clamps at the size, PUBLISH makes the version read-only. Letters in
 * calls: C create, O open, R reserve, W write, r read, T truncate,
 * P publish, A abandon, L release, G getattr, E extents.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fake_store.h"
#include "maru/libmaru.h"

void store_init(struct store *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->data = calloc(1, STORE_MAX);
	assert_non_null(s->data);
	s->state = MARU_STATE_PENDING;
}

void store_free(struct store *s)
{
	free(s->data);
	pthread_mutex_destroy(&s->mu);
}

void store_calls(struct store *s, char *buf, size_t cap)
{
	pthread_mutex_lock(&s->mu);
	snprintf(buf, cap, "%s", s->calls);
	pthread_mutex_unlock(&s->mu);
}

static void note(struct store *s, char letter)
{
	if (s->ncalls + 1 < (int)sizeof(s->calls))
		s->calls[s->ncalls++] = letter;
}

static void note_io(struct store *s, const struct fake_req *q, const struct proto_io_req *io)
{
	if (s->nio < 256) {
		s->io[s->nio].op = q->h.op;
		s->io[s->nio].off = io->off;
		s->io[s->nio].len = io->len;
		s->io[s->nio].frame = q->h.len;
		s->nio++;
	}
}

/* proto_attr of the file, its extents after it when with_ext. s->mu held. */
static int reply_attr(struct fake_req *q, struct store *s, int with_ext)
{
	struct proto_attr a = { .ino = STORE_INO, .parent = 1, .size = s->size,
				.reserved = s->reserved, .mode = S_IFREG | 0644,
				.nlink = 1, .state = s->state };

	a.nextents = with_ext ? s->next : 0;
	return fake_reply(q, 0, &a, sizeof(a), s->ext,
			  a.nextents * sizeof(struct proto_extent)) ? -1 : 0;
}

/* As marud with HELLO_F_DIRATTR: the version, then its directory (root, 1 entry). */
static int reply_dir_attr(struct fake_req *q, struct store *s)
{
	struct proto_attr a = { .ino = STORE_INO, .parent = 1, .size = s->size,
				.reserved = s->reserved, .mode = S_IFREG | 0644,
				.nlink = 1, .state = s->state };
	struct proto_attr d = { .ino = 1, .size = 1, .mode = S_IFDIR | 0755, .nlink = 2,
				.state = MARU_STATE_DIR, .mtime_ns = 5000000007ULL,
				.ctime_ns = 5000000007ULL };

	return fake_reply(q, 0, &a, sizeof(a), &d, sizeof(d)) ? -1 : 0;
}

static int do_reserve(struct fake_req *q, struct store *s)
{
	struct proto_size_req r;

	memcpy(&r, q->body, sizeof(r));
	r.size &= ~PROTO_RESERVE_AHEAD;	/* the fake has room or not, nothing to evict */
	if (s->nreserves < 32)
		s->reserves[s->nreserves++] = r.size;
	if ((s->enospc_above && r.size > s->enospc_above) || r.size > STORE_MAX)
		return fake_reply(q, -ENOSPC, NULL, 0, NULL, 0) ? -1 : 0;
	if (r.size > s->reserved)
		s->reserved = r.size;
	return reply_attr(q, s, 1);
}

static int do_write(struct fake_req *q, struct store *s)
{
	struct proto_io_req io;
	struct proto_io_rep rep;

	memcpy(&io, q->body, sizeof(io));
	note_io(s, q, &io);
	if (s->state != MARU_STATE_PENDING)
		return fake_reply(q, -EBADF, NULL, 0, NULL, 0) ? -1 : 0;
	if (io.off + io.len > s->reserved) {
		s->write_beyond = 1;
		return fake_reply(q, -ENOSPC, NULL, 0, NULL, 0) ? -1 : 0;
	}
	memcpy(s->data + io.off, q->body + sizeof(io), io.len);
	if (io.off + io.len > s->size)
		s->size = io.off + io.len;
	rep.done = s->short_done ? io.len - 1 : io.len;
	rep.size = s->size;
	return fake_reply(q, 0, &rep, sizeof(rep), NULL, 0) ? -1 : 0;
}

static int do_read(struct fake_req *q, struct store *s)
{
	struct proto_io_req io;
	struct proto_hdr rh;
	uint64_t n = 0;
	uint8_t *copy;
	int rc;

	memcpy(&io, q->body, sizeof(io));
	note_io(s, q, &io);
	if (io.off < s->size)
		n = s->size - io.off < io.len ? s->size - io.off : io.len;
	if (s->read_max && n > s->read_max)
		n = s->read_max;
	if (s->cut_reads > 0 && n > 1) {
		/* half the reply, then the socket is gone */
		s->cut_reads--;
		proto_hdr_init(&rh, OP_READ, (uint32_t)n, q->h.reqid, q->h.generation, 0);
		proto_send(q->fd, &rh, s->data + io.off, n / 2, NULL, 0);
		return -1;
	}
	/* sent without the lock, as marud sends without one: a client that
	 * reads ahead on one socket must not stall requests on another */
	copy = malloc(n ? n : 1);
	if (!copy)
		return -1;
	memcpy(copy, s->data + io.off, n);
	pthread_mutex_unlock(&s->mu);
	rc = fake_reply(q, 0, copy, n, NULL, 0);
	pthread_mutex_lock(&s->mu);
	free(copy);
	return rc ? -1 : 0;
}

static int do_truncate(struct fake_req *q, struct store *s)
{
	struct proto_size_req r;

	memcpy(&r, q->body, sizeof(r));
	if (r.size > STORE_MAX)
		return fake_reply(q, -ENOSPC, NULL, 0, NULL, 0) ? -1 : 0;
	if (r.size > s->size)
		memset(s->data + s->size, 0, r.size - s->size);
	s->size = r.size;
	if (r.size > s->reserved)
		s->reserved = r.size;
	return reply_attr(q, s, 1);
}

static int do_op(struct fake_req *q, struct store *s)
{
	switch (q->h.op) {
	case OP_CREATE:
		note(s, 'C');
		s->state = MARU_STATE_PENDING;
		s->size = s->reserved = 0;
		return reply_attr(q, s, 1);
	case OP_OPEN:
		note(s, 'O');
		return reply_attr(q, s, 1);
	case OP_EXTENTS:
		note(s, 'E');
		return reply_attr(q, s, 1);
	case OP_GETATTR:
		note(s, 'G');
		return reply_attr(q, s, 0);
	case OP_RESERVE:
		note(s, 'R');
		return do_reserve(q, s);
	case OP_WRITE:
		note(s, 'W');
		return do_write(q, s);
	case OP_READ:
		note(s, 'r');
		return do_read(q, s);
	case OP_TRUNCATE:
		note(s, 'T');
		return do_truncate(q, s);
	case OP_PUBLISH:
		note(s, 'P');
		s->state = MARU_STATE_PUBLISHED;
		return s->dir_attr ? reply_dir_attr(q, s) : reply_attr(q, s, 0);
	case OP_ABANDON:
		note(s, 'A');
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	case OP_RELEASE:
		note(s, 'L');
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	case OP_PING:
		return fake_reply(q, 0, NULL, 0, NULL, 0) ? -1 : 0;
	default:
		return fake_reply(q, -ENOSYS, NULL, 0, NULL, 0) ? -1 : 0;
	}
}

int store_handler(struct fake_req *q)
{
	struct store *s = q->f->arg;
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = do_op(q, s);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

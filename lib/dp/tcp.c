/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dp/tcp.c: the tcp data path: chunk bytes travel in READ and WRITE
 * frames of at most PROTO_MAX_IO on the client's control sockets, and marud
 * copies them to and from its own mapping. marud reserves, zero-fills holes
 * and tracks the size of the pending version; the handle follows its
 * replies. Always available; the isolated mode (marufs-design(7) §8).
 *
 * Reads land straight in the caller's buffer and writes go out of it (no
 * staging copy). Each frame takes one socket only for its own round trip,
 * so control calls never queue behind a long transfer on another thread.
 * Frames go out through the client's control call and the frame size comes
 * from the session's facts, both callbacks of c->env: nothing here names
 * transport.c or session.c. file.c counts the bytes.
 */
#include <errno.h>
#include <string.h>

#include "datapath.h"
#include "failpoint.h"
#include "frame.h"

/*
 * Data bytes one READ or WRITE frame may carry: PROTO_MAX_IO, or less when
 * marud was started with a smaller max-frame (it closes the connection on a
 * bigger frame, and refuses a READ it could not answer in one).
 */
static uint32_t io_max(struct maru_client *c)
{
	struct dp_facts s;
	uint32_t m;

	c->env.facts(c, &s);
	m = s.send_max;
	m = m > 2 * sizeof(struct proto_io_req) ? m - (uint32_t)sizeof(struct proto_io_req) :
						 sizeof(struct proto_io_req);
	return m < PROTO_MAX_IO ? m : PROTO_MAX_IO;
}

static ssize_t tcp_read(struct maru_file *f, void *buf, size_t len, uint64_t off)
{
	struct proto_io_req q = { .ino = f->ino };
	struct req r = { .op = OP_READ, .p1 = &q, .n1 = sizeof(q) };
	uint32_t max = io_max(f->c);
	size_t done = 0;
	int rc;

	while (done < len) {
		q.off = off + done;
		q.len = len - done < max ? (uint32_t)(len - done) : max;
		r.rbuf = (uint8_t *)buf + done;
		r.rcap = q.len;
		rc = f->c->env.call(f->c, &r);
		if (rc)
			return rc;
		/* marud clamps at the version's end: stop there */
		if (r.rlen == 0)
			break;
		done += r.rlen;
		frame_req_done(&r);
	}
	return (ssize_t)done;
}

static ssize_t tcp_write(struct maru_file *f, const void *buf, size_t len, uint64_t off)
{
	struct proto_io_req q = { .ino = f->ino };
	struct proto_io_rep rep;
	struct req r = { .op = OP_WRITE, .p1 = &q, .n1 = sizeof(q),
			 .rbuf = &rep, .rcap = sizeof(rep) };
	uint32_t max = io_max(f->c);
	size_t done = 0;
	int rc;

	rc = 0;
	while (!rc && done < len) {
		q.off = off + done;
		q.len = len - done < max ? (uint32_t)(len - done) : max;
		r.p2 = (const uint8_t *)buf + done;
		r.n2 = q.len;
		rc = f->c->env.call(f->c, &r);
		if (!rc && (r.rlen != sizeof(rep) || rep.done != q.len))
			rc = -EIO;
		if (!rc) {
			/* marud's size, frame by frame: a call that fails half
			 * way leaves the handle where marud is */
			f->size = rep.size;
			done += q.len;
		}
		/* tests: stop the writer between two frames of one call */
		if (!rc && done < len)
			rc = FAILPOINT("libmaru.write.mid");
	}
	return rc ? rc : (ssize_t)done;
}

static int tcp_truncate(struct maru_file *f, uint64_t size)
{
	struct proto_size_req q = { .ino = f->ino, .size = size };
	struct req r = { .op = OP_TRUNCATE, .p1 = &q, .n1 = sizeof(q) };
	const struct proto_attr *a;
	int rc;

	rc = f->c->env.call(f->c, &r);
	if (rc)
		return rc;
	a = r.rep;
	if (r.rlen < sizeof(*a)) {
		frame_req_done(&r);
		return -EIO;
	}
	f->size = a->size;
	f->reserved = a->reserved;
	frame_req_done(&r);
	return 0;
}

/* marud copied the bytes into pool memory when it answered the WRITE. */
static int tcp_sync(struct maru_file *f)
{
	return 0;
}

const struct dp_ops dp_tcp_ops = {
	.kind = MARU_DATA_TCP,
	.name = "tcp",
	.read = tcp_read,
	.write = tcp_write,
	.truncate = tcp_truncate,
	.sync = tcp_sync,
};

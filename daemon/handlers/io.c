// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/io.c: bytes between a socket and pool memory: READ (the
 * reply header then the version's pool pieces, straight from the mapping),
 * WRITE (the payload received into the pending version's extents, reserving
 * first if needed), and hdl_io_copy(), the directory's copy callback for
 * CREATE_COPY and zero fills (run by dir_fill_run, never under the
 * directory lock); hints moved to hint.c. Bulk
 * transfers run with no lock held, on extents the session holds, which the
 * directory promises not to move while held.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>

#include "failpoint.h"
#include "handlers.h"
#include "log.h"
#include "pool.h"
#include "server_priv.h"
#include "session.h"
#include "wire.h"

void hdl_io_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		 const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	uint8_t *base = arg;

	while (len) {
		uint64_t d = 0, s = 0, n = alloc_extent_list_at(dst, dst_off, &d);

		if (!n)
			return;
		if (src) {
			uint64_t sn = alloc_extent_list_at(src, src_off, &s);

			if (!sn)
				return;
			n = n < sn ? n : sn;
		}
		n = n < len ? n : len;
		if (src)
			memmove(base + d, base + s, n);
		else
			memset(base + d, 0, n);
		dst_off += n;
		src_off += n;
		len -= n;
	}
}

/*
 * Large transfers move in two halves so that the fail points marud.read.mid
 * and marud.write.mid stop marud with part of the payload moved; below
 * this size the extra system call would cost more than it is worth.
 */
#define MID_SPLIT_MIN	(64U << 10)

static uint64_t first_half(uint64_t n)
{
	return n >= MID_SPLIT_MIN ? n / 2 : n;
}

/* Header then the pool pieces, straight from the mapping. */
static int send_from_pool(struct conn *c, const struct proto_hdr *req,
			  const struct extent_list *l, uint64_t off, uint64_t n)
{
	struct iovec iov[IOV_BATCH + 1];
	struct proto_hdr h;
	uint64_t covered;
	int k, rc, first = 1;

	proto_hdr_init(&h, req->op, (uint32_t)n, req->reqid, c->srv->generation, 0);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	k = hdl_extent_iov(c->srv, l, off, first_half(n), iov + 1, IOV_BATCH, &covered);
	if (k < 0)
		return k;
	for (;;) {
		rc = wire_sendv(c, iov, k + 1);
		if (!rc && first)
			rc = FAILPOINT("marud.read.mid");
		if (rc)
			return rc;
		first = 0;
		off += covered;
		n -= covered;
		if (!n)
			return 0;
		k = hdl_extent_iov(c->srv, l, off, n, iov + 1, IOV_BATCH, &covered);
		if (k <= 0)
			return k < 0 ? k : -EIO;
		iov[0].iov_len = 0;
	}
}

HANDLER(hdl_read)
{
	const struct proto_io_req *r = (const void *)p;
	struct extent_list l = { 0 };
	struct dir_attr a;
	uint64_t n = 0;
	int rc;

	if (r->len > PROTO_MAX_IO || r->len > atomic_load(&c->srv->max_frame))
		return -EINVAL;
	/* The extents and the LRU touch in one lock hold. */
	rc = dir_read_extents(c->srv->dir, session_dir(c->sess), r->ino, &l, &a);
	if (rc)
		return rc;
	if (r->off < a.size)
		n = a.size - r->off < r->len ? a.size - r->off : r->len;
	rc = send_from_pool(c, h, &l, r->off, n);
	alloc_extent_list_free(&l);
	if (rc) {
		/* The header may be out: the stream cannot be trusted any more. */
		log_warn(rc, "%s: READ send failed", c->peer);
		c->close = 1;
		return rc;
	}
	c->replied = 1;
	atomic_fetch_add(&c->srv->bytes_read, n);
	return 0;
}

static int recv_into_pool(struct conn *c, const struct extent_list *l, uint64_t off,
			  uint64_t n)
{
	struct iovec iov[IOV_BATCH];
	uint64_t covered;
	int k, rc;

	while (n) {
		k = hdl_extent_iov(c->srv, l, off, n, iov, IOV_BATCH, &covered);
		if (k <= 0)
			return k < 0 ? k : -EIO;
		rc = wire_recvv(c, iov, k);
		if (rc)
			return rc;
		c->unread -= covered;
		off += covered;
		n -= covered;
	}
	return 0;
}

/*
 * Extents of s's pending version covering at least end bytes, reserving if
 * short, in one lock hold. A version id unknown to the directory is refused
 * as one the session does not own (-EPERM), as READ refuses it.
 */
static int write_extents(struct conn *c, uint64_t ino, uint64_t end,
			 struct extent_list *l, struct dir_attr *a)
{
	int rc = dir_reserve_ext(c->srv->dir, session_dir(c->sess), ino, end, a, l);

	return rc == -ENOENT ? -EPERM : rc;
}

/* Record [start, end) written; a hole before it is zeroed outside the lock. */
static int write_done(struct conn *c, uint64_t ino, uint64_t start, uint64_t end,
		      struct dir_attr *a)
{
	struct dir_session *ds = session_dir(c->sess);
	struct dir_fill f;
	int rc;

	rc = dir_wrote_begin(c->srv->dir, ds, ino, start, end, a, &f);
	if (rc)
		return rc;
	dir_fill_run(c->srv->dir, &f);
	return dir_fill_done(c->srv->dir, ds, &f, 0, a, NULL);
}

HANDLER(hdl_write)
{
	const struct proto_io_req *r = (const void *)p;
	struct extent_list l = { 0 };
	struct proto_io_rep rep;
	uint64_t end = r->off + r->len;
	struct dir_attr a;
	int rc, broke;

	if (end < r->off)
		return -EFBIG;
	rc = write_extents(c, r->ino, end, &l, &a);
	if (rc)
		return rc;
	rc = recv_into_pool(c, &l, r->off, first_half(r->len));
	broke = rc;
	if (!rc)
		rc = FAILPOINT("marud.write.mid");
	if (!rc)
		broke = rc = recv_into_pool(c, &l, r->off + first_half(r->len),
					    r->len - first_half(r->len));
	alloc_extent_list_free(&l);
	if (rc) {
		log_warn(rc, "%s: WRITE payload", c->peer);
		/* a payload that broke off leaves the stream out of step; an
		 * injected error leaves the rest unread, skipped before the
		 * reply: the client reads its refusal, then goes on (closing
		 * would lose the refusal to a resend of the frames behind it) */
		if (broke)
			c->close = 1;
		return rc;
	}
	atomic_fetch_add(&c->srv->bytes_written, r->len);
	rc = write_done(c, r->ino, r->off, end, &a);
	if (rc)
		return rc;
	rep.done = r->len;
	rep.size = a.size;
	return proto_buf_put(out, &rep, sizeof(rep));
}

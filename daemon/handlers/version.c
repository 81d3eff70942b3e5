// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/version.c: the handlers of a version's life: CREATE,
 * RESERVE and TRUNCATE of a pending version, PUBLISH (hashing its bytes in
 * pool memory, outside the directory lock, when the client sent no hash),
 * ABANDON, and the leases: OPEN, RELEASE, EXTENTS. A PUBLISH of a version
 * already published with the size (and hash) asked is answered as done
 * (published_already) to the session that published it (its reply cache
 * let the answer go) and to a client whose session ended under it (its
 * reply was lost to a restart): it must learn that its publish took effect. Each asks the directory
 * once for its result and the extents of the version (the *_ext calls);
 * copies and zero-fills (CREATE_COPY, a growing TRUNCATE) run here, between
 * a *_begin and dir_fill_done(), outside the directory lock. They reply with
 * attributes and extents (common.c); no lock of their own.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "failpoint.h"
#include "handlers.h"
#include "hash.h"
#include "log.h"
#include "rdma.h"
#include "server_priv.h"
#include "session.h"

/*
 * The directory work of a create takes the lock once; a CREATE_COPY's copy
 * of the published bytes then runs here with no lock held, so other
 * requests go on meanwhile, and dir_fill_done() gives the size and extents.
 */
/*
 * dir_fill_done() drops the copy's pin on its source; when that is the
 * session's last lease on it, the session's rdma rights on it end first
 * (a RELEASE meanwhile saw the pin and kept them).
 */
static int fill_done_unpin(struct conn *c, struct dir_session *ds, struct dir_fill *f,
			   int err, struct dir_attr *a, struct extent_list *ext)
{
	int rc;

	if (!c->srv->rdma || !f->src_ino)
		return dir_fill_done(c->srv->dir, ds, f, err, a, ext);
	rdma_end_lock(c->srv->rdma);
	if (dir_lease_count(c->srv->dir, ds, f->src_ino) <= 1)
		rdma_end_revoke(c->srv->rdma, c->sess, f->src_ino, 0);
	rc = dir_fill_done(c->srv->dir, ds, f, err, a, ext);
	rdma_end_done(c->srv->rdma);
	return rc;
}

HANDLER(hdl_create)
{
	const struct proto_create_req *r = (const void *)p;
	struct dir_session *ds = session_dir(c->sess);
	struct extent_list ext = { 0 };
	uint32_t flags = 0;
	struct dir_fill f;
	struct dir_attr a;
	int rc;

	if (r->flags & CREATE_EXCL)
		flags |= DIR_CREATE_EXCL;
	if (r->flags & CREATE_COPY)
		flags |= DIR_CREATE_COPY;
	rc = dir_create_begin(c->srv->dir, ds, r->parent, name_after(p, sizeof(*r)),
			      r->namelen, r->from_ino, flags, r->mode, r->uid, r->gid,
			      r->size_hint, &a, &f);
	if (rc)
		return rc;
	dir_fill_run(c->srv->dir, &f);
	/* tests: the version exists, its creator has not heard of it yet;
	 * an error from here abandons it (dir_fill_done) */
	rc = FAILPOINT("marud.create.after");
	rc = fill_done_unpin(c, ds, &f, rc, &a, &ext);
	return rc ? rc : hdl_reply_attr_extents(c, &a, &ext, out);
}

HANDLER(hdl_reserve)
{
	const struct proto_size_req *r = (const void *)p;
	struct extent_list ext = { 0 };
	struct dir_attr a;
	int rc;

	if (r->size & PROTO_RESERVE_AHEAD)
		rc = dir_reserve_ahead_ext(c->srv->dir, session_dir(c->sess), r->ino,
					   r->size & ~PROTO_RESERVE_AHEAD, &a, &ext);
	else
		rc = dir_reserve_ext(c->srv->dir, session_dir(c->sess), r->ino, r->size, &a,
				     &ext);
	return rc ? rc : hdl_reply_attr_extents(c, &a, &ext, out);
}

/* A growing truncate's zero-fill runs here, outside the directory lock. */
HANDLER(hdl_truncate)
{
	const struct proto_size_req *r = (const void *)p;
	struct dir_session *ds = session_dir(c->sess);
	struct extent_list ext = { 0 };
	struct dir_fill f;
	struct dir_attr a;
	int rc;

	/* rdma rights on the version end first (a shrink frees its tail) */
	rdma_end_begin(c->srv->rdma, c->sess, r->ino, 1);
	rc = dir_truncate_begin(c->srv->dir, ds, r->ino, r->size, &a, &f);
	rdma_end_done(c->srv->rdma);
	if (rc)
		return rc;
	dir_fill_run(c->srv->dir, &f);
	rc = dir_fill_done(c->srv->dir, ds, &f, 0, &a, &ext);
	return rc ? rc : hdl_reply_attr_extents(c, &a, &ext, out);
}

/* XXH3 of the first size bytes of a version, read in place. */
static int version_xxh3(struct server *srv, const struct extent_list *l, uint64_t size,
			uint64_t *out)
{
	struct hash_stream *h = hash_stream_new();
	struct iovec iov[IOV_BATCH];
	uint64_t off = 0, covered;
	int i, k, rc = 0;

	if (!h)
		return -ENOMEM;
	while (off < size) {
		k = hdl_extent_iov(srv, l, off, size - off, iov, IOV_BATCH, &covered);
		if (k <= 0) {
			rc = k < 0 ? k : -EINVAL;
			break;
		}
		for (i = 0; i < k; i++)
			hash_stream_update(h, iov[i].iov_base, iov[i].iov_len);
		off += covered;
	}
	*out = hash_stream_digest(h);
	hash_stream_free(h);
	return rc;
}

/*
 * Hash outside the dir lock, over the bytes as they are in pool memory:
 * that is what readers will see. (A shm client writes in place and the
 * directory's size may lag behind; nothing may be zero-filled here.)
 */
static int publish_hash(struct conn *c, uint64_t ino, uint64_t size, uint64_t *hash)
{
	struct extent_list l = { 0 };
	struct dir_attr a;
	int rc;

	rc = dir_extents(c->srv->dir, session_dir(c->sess), ino, 1, &l, &a);
	if (rc)
		return rc;
	/* Over the reservation dir_publish refuses it (-EINVAL); no hash needed. */
	if (size <= alloc_extent_list_bytes(&l))
		rc = version_xxh3(c->srv, &l, size, hash);
	alloc_extent_list_free(&l);
	return rc;
}

/*
 * Is r's version published already, with the size and hash r asks for?
 * Then answer as its publish did (its attributes, the directory's after);
 * else -EPERM, the refusal it had.
 */
static int published_already(struct conn *c, const struct proto_publish_req *r,
			     struct pbuf *out)
{
	struct dir_session *ds = session_dir(c->sess);
	struct dir_attr a, da;
	int rc;

	/*
	 * Only to the session that published it, or to a client whose
	 * session ended under it (a restart, a grace run out): it may be the
	 * publisher asking again. Any other session asking to publish a
	 * version it does not own is refused as before.
	 */
	if (!session_published(c->sess, r->ino) && !hdl_session_reborn(c))
		return -EPERM;
	rc = dir_getattr(c->srv->dir, ds, r->ino, &a);
	if (rc || a.ino != r->ino || a.state != DIR_ST_PUBLISHED || a.size != r->size ||
	    (r->xxh3 && a.xxh3 != r->xxh3))
		return -EPERM;
	if (c->dirattr && dir_getattr(c->srv->dir, ds, a.parent, &da))
		return -EPERM;
	log_debug("%s: PUBLISH of version %llu: published already, answered as done",
		  c->peer, (unsigned long long)r->ino);
	rc = hdl_put_attr(out, &a);
	return rc || !c->dirattr ? rc : hdl_put_attr(out, &da);
}

HANDLER(hdl_publish)
{
	const struct proto_publish_req *r = (const void *)p;
	uint64_t hash = r->xxh3;
	struct dir_attr a, da;
	int rc;

	/* the writer's rdma rights end before its bytes are hashed */
	rdma_end_begin(c->srv->rdma, c->sess, r->ino, 1);
	rc = hash ? 0 : publish_hash(c, r->ino, r->size, &hash);
	/* tests: stop or fail with the bytes hashed, the name not yet rebound */
	if (!rc)
		rc = FAILPOINT("marud.publish.before");
	if (!rc)
		rc = dir_publish(c->srv->dir, session_dir(c->sess), r->ino, r->size, hash, &a,
				 c->dirattr ? &da : NULL);
	rdma_end_done(c->srv->rdma);
	if (rc == -EPERM)
		return published_already(c, r, out);
	if (rc)
		return rc;
	session_note_published(c->sess, r->ino);
	/* tests: published, the reply not sent (only abort/exit/sleep make sense) */
	(void)FAILPOINT("marud.publish.after");
	rc = hdl_put_attr(out, &a);
	return rc || !c->dirattr ? rc : hdl_put_attr(out, &da);
}

HANDLER(hdl_abandon)
{
	const struct proto_ino_req *r = (const void *)p;

	int rc;

	rdma_end_begin(c->srv->rdma, c->sess, r->ino, 1);
	rc = dir_abandon(c->srv->dir, session_dir(c->sess), r->ino);
	rdma_end_done(c->srv->rdma);
	return rc;
}

HANDLER(hdl_open)
{
	const struct proto_open_req *r = (const void *)p;
	struct dir_session *ds = session_dir(c->sess);
	struct extent_list ext = { 0 };
	struct dir_attr a;
	int rc;

	rc = dir_open_ext(c->srv->dir, ds, r->parent, name_after(p, sizeof(*r)),
			  r->namelen, r->ino, &a, &ext);
	if (rc)
		return rc;
	rc = hdl_reply_attr_extents(c, &a, &ext, out);
	/* A lease the client never hears about would leak until the session ends. */
	if (rc)
		dir_release(c->srv->dir, ds, a.ino);
	return rc;
}

HANDLER(hdl_release)
{
	const struct proto_ino_req *r = (const void *)p;

	struct dir_session *ds = session_dir(c->sess);
	int rc;

	/* the last lease of the session on ino ends its read-only windows;
	 * counted under the lock RKEY binds with */
	rdma_end_lock(c->srv->rdma);
	if (c->srv->rdma && dir_lease_count(c->srv->dir, ds, r->ino) <= 1)
		rdma_end_revoke(c->srv->rdma, c->sess, r->ino, 0);
	rc = dir_release(c->srv->dir, ds, r->ino);
	rdma_end_done(c->srv->rdma);
	return rc;
}

HANDLER(hdl_extents)
{
	const struct proto_ino_req *r = (const void *)p;

	return hdl_reply_extents(c, r->ino, 0, out);
}


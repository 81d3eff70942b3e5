// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/hint.c: HINT, HINTV and HINT_WAIT, the hints of
 * marufs-design(7) §4.3 on their way to the region extension (daemon/ext/). Every range is
 * checked first against what this connection may read (a lease it holds,
 * or a published version) or, for write hints, its own pending version,
 * and turned into pool ranges; only then, outside the directory lock, is
 * the extension called. A hint never grants access: nothing here changes
 * a lease or a version. HINTV read opens a hint request of the connection
 * (at most PROTO_MAX_HINT_OPEN), read_end closes it; a hint the extension
 * fails is counted, logged by ext.c and answered 0, since hints are advice.
 * Without an extension, HINT keeps its old madvise() and HINTV answers
 * -EOPNOTSUPP (the HELLO advertised no actions).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ext.h"
#include "handlers.h"
#include "log.h"
#include "pool.h"
#include "server_priv.h"
#include "session.h"

/* Pool ranges of one message, grown as versions are resolved. */
struct hint_ranges {
	struct marud_ext_range *v;
	uint32_t n, cap;
};

static int ranges_add(struct hint_ranges *r, uint64_t off, uint64_t len)
{
	struct marud_ext_range *v;

	if (r->n && r->v[r->n - 1].off + r->v[r->n - 1].len == off) {
		r->v[r->n - 1].len += len;
		return 0;
	}
	if (r->n == r->cap) {
		v = realloc(r->v, (r->cap ? r->cap * 2 : 16) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = r->cap ? r->cap * 2 : 16;
	}
	r->v[r->n++] = (struct marud_ext_range){ off, len };
	return 0;
}

/* One checked version range [off, off+len) (len 0: to the end). */
static int resolve(struct conn *c, const struct proto_hint_range *g, int want_write,
		   struct hint_ranges *out)
{
	struct extent_list l = { 0 };
	struct extent_iter it;
	struct extent_piece pc;
	struct dir_attr a;
	uint64_t len = g->len, limit;
	int rc;

	rc = dir_hint_extents(c->srv->dir, session_dir(c->sess), g->ino, want_write, &l, &a);
	if (rc)
		return rc;
	limit = want_write ? a.reserved : a.size;
	if (g->off > limit || (len && len > limit - g->off)) {
		rc = -ERANGE;
		goto out;
	}
	if (!len)
		len = limit - g->off;
	extent_iter_init(&it, l.v, l.n, g->off, len);
	while (!rc && extent_iter_next(&it, &pc))
		rc = ranges_add(out, pc.pool_off, pc.len);
out:
	alloc_extent_list_free(&l);
	return rc;
}

static void refused_log(struct conn *c, const struct proto_hint_range *g, int rc)
{
	atomic_fetch_add(&c->srv->hints_refused, 1);
	if (c->refusals++ < 8)
		log_warnx("%s: hint on version %llu refused: %s", c->peer,
			  (unsigned long long)g->ino,
			  rc == -EPERM ? "this connection may not read it (no lease, not "
			  "published) or, for a write hint, it is not its pending version" :
			  rc == -ERANGE ? "range past its end" : strerror(-rc));
}

static int resolve_all(struct conn *c, const struct proto_hint_range *g, uint32_t n,
		       int want_write, struct hint_ranges *out)
{
	uint32_t i;
	int rc;

	for (i = 0; i < n; i++) {
		rc = resolve(c, &g[i], want_write, out);
		if (rc) {
			refused_log(c, &g[i], rc);
			return rc;
		}
	}
	return 0;
}

/*
 * The id the extension knows this connection's client by: its session's
 * (a client's connections share one session and libmaru spreads requests
 * over them, so one request's hints may come on several connections).
 */
static uint64_t hint_id(struct conn *c)
{
	if (!c->ext_id)
		c->ext_id = ext_open_session_id(session_token(c->sess), SESSION_TOKEN_BYTES);
	return c->ext_id;
}

/* Split into calls of at most MARUD_EXT_MAX_RANGES. */
static int hint_call(struct conn *c, int action, const char *req,
		     const struct hint_ranges *r)
{
	uint32_t at = 0, n;
	int rc = 0;

	do {
		n = r->n - at > MARUD_EXT_MAX_RANGES ? MARUD_EXT_MAX_RANGES : r->n - at;
		rc = ext_hint(c->srv->ext, hint_id(c), action, req, r->v ? r->v + at : NULL, n);
		at += n;
	} while (!rc && at < r->n);
	return rc;
}

/* read opens the request, read_end closes it; -EMFILE at the limit. */
static int open_track(struct conn *c, int action, const char *req, int *opened)
{
	struct hint_sessions *t = ext_hint_sessions(c->srv->ext);
	int rc;

	*opened = 0;
	rc = ext_open_session_track(t, hint_id(c), action == HINT_A_READ ? 1 :
				action == HINT_A_READ_END ? -1 : 0, req);
	if (action != HINT_A_READ)
		return rc < 0 ? rc : 0;
	if (rc == -EMFILE) {
		atomic_fetch_add(&c->srv->hints_over_limit, 1);
		if (c->refusals++ < 8)
			log_warnx("%s: read hint '%s' refused: this client's session already has "
				  "%u open hint requests (the limit); end some with read_end",
				  c->peer, req, PROTO_MAX_HINT_OPEN);
	}
	*opened = rc == 0;
	return rc < 0 ? rc : 0;
}

static int hint_deliver(struct conn *c, int action, const char *req,
			const struct hint_ranges *r)
{
	int rc, opened;

	rc = open_track(c, action, req, &opened);
	if (rc)
		return rc;
	rc = hint_call(c, action, req, r);
	if (rc == -EOPNOTSUPP)
		return rc;
	if (rc && opened)
		ext_open_session_track(ext_hint_sessions(c->srv->ext), hint_id(c), -1, req);
	return 0;
}

/* The request id after the body, NUL-terminated into buf. */
static const struct proto_hint_range *hintv_parse(const uint8_t *p, char *req,
						  struct proto_hintv_req *r)
{
	memcpy(r, p, sizeof(*r));
	memcpy(req, p + sizeof(*r), r->reqlen);
	req[r->reqlen] = '\0';
	return (const void *)(p + sizeof(*r) + ((r->reqlen + 7u) & ~7u));
}

static int hint_needs_request(int action, const char *req)
{
	return action != HINT_A_WRITE && action != HINT_A_WRITE_WAIT && !req[0];
}

HANDLER(hdl_hintv)
{
	struct proto_hintv_req r;
	char req[PROTO_HINT_REQ_MAX + 1];
	const struct proto_hint_range *g = hintv_parse(p, req, &r);
	struct hint_ranges rs = { 0 };
	int rc;

	if (!(ext_actions(c->srv->ext) & (1u << r.action)))
		return -EOPNOTSUPP;
	if (hint_needs_request((int)r.action, req))
		return -EINVAL;
	if ((r.action == HINT_A_READ_END || r.action == HINT_A_PROMOTE) && r.count)
		return -EINVAL;
	rc = resolve_all(c, g, r.count, r.action == HINT_A_WRITE, &rs);
	if (!rc)
		rc = hint_deliver(c, (int)r.action, req, &rs);
	free(rs.v);
	return rc;
}

HANDLER(hdl_hint_wait)
{
	struct proto_hintv_req r;
	char req[PROTO_HINT_REQ_MAX + 1];
	const struct proto_hint_range *g = hintv_parse(p, req, &r);
	struct proto_hint_wait_rep rep = { 0 };
	struct hint_ranges rs = { 0 };
	int rc;

	if (!(ext_actions(c->srv->ext) & (1u << r.action)))
		return -EOPNOTSUPP;
	rc = resolve_all(c, g, r.count, r.action == HINT_A_WRITE_WAIT, &rs);
	/* on this connection's thread: only it waits */
	if (!rc)
		rc = ext_wait(c->srv->ext, hint_id(c), (int)r.action, rs.v, rs.n, r.timeout_ms);
	free(rs.v);
	if (rc < 0)
		return rc;
	rep.ready = (uint32_t)rc;
	return proto_buf_put(out, &rep, sizeof(rep));
}

static void hint_madvise(struct server *srv, const struct hint_ranges *r, int advice)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint32_t i;

	for (i = 0; i < r->n; i++) {
		uint64_t start = r->v[i].off & ~(pg - 1);
		uint64_t end = r->v[i].off + r->v[i].len;

		if (end <= srv->pool->size)
			madvise(srv->pool->base + start, end - start, advice);
	}
}

/* Without an extension: the kernel's read-ahead and cold hints. */
static void hint_fallback(struct server *srv, int action, const struct hint_ranges *r)
{
	if (action == HINT_A_READ || action == HINT_A_PROMOTE)
		hint_madvise(srv, r, MADV_WILLNEED);
#ifdef MADV_COLD
	else if (action == HINT_A_READ_END)
		hint_madvise(srv, r, MADV_COLD);
#endif
}

/* One whole version, named by ino; the request id is "v<ino>". */
HANDLER(hdl_hint)
{
	const struct proto_hint_req *r = (const void *)p;
	struct proto_hint_range g = { r->ino, 0, 0 };
	struct hint_ranges rs = { 0 };
	char req[24];
	int rc, action = (int)r->hint;

	if (action < HINT_A_READ || action > HINT_A_WRITE)
		return -EINVAL;
	rc = resolve_all(c, &g, 1, action == HINT_A_WRITE, &rs);
	if (rc)
		goto out;
	if (action == HINT_A_READ || action == HINT_A_PROMOTE)
		dir_touch(c->srv->dir, r->ino);
	snprintf(req, sizeof(req), "v%llu", (unsigned long long)r->ino);
	if (ext_actions(c->srv->ext) & (1u << action)) {
		if (action == HINT_A_READ_END || action == HINT_A_PROMOTE)
			rs.n = 0;	/* they name a request, not bytes */
		rc = hint_deliver(c, action, req, &rs);
	}
	else
		hint_fallback(c->srv, action, &rs);
	if (rc == -EOPNOTSUPP)
		rc = 0;
out:
	free(rs.v);
	return rc;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/confine.c: a scoped session's view of the namespace (confine.h):
 * where each request carries ids (lib/common/proto/proto.h), their
 * translation and check, the rights check, and the reply's and events'
 * ids and paths. dispatch.c calls it before and after a handler,
 * subscribe.c for each event.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "confine.h"
#include "dir.h"
#include "log.h"
#include "proto.h"
#include "server_priv.h"
#include "tenant.h"

#define PUBLIC_ROOT	DIR_ROOT_ID	/* MARU_ROOT_ID: what a scoped session calls its root */

/* Ops that change the namespace or a version: refused to a ro tenant. */
static int changes(uint16_t op)
{
	switch (op) {
	case OP_MKDIR: case OP_RMDIR: case OP_SETATTR: case OP_RENAME: case OP_UNLINK:
	case OP_SYMLINK: case OP_CREATE: case OP_RESERVE: case OP_TRUNCATE:
	case OP_PUBLISH: case OP_WRITE: case OP_LINK: case OP_MKNOD:
		return 1;
	default:
		return 0;
	}
}

/* A PIN that sets or clears a pin (user.maru.pin written), not a query. */
static int pin_set(uint16_t op, const uint8_t *p, uint32_t len)
{
	struct proto_pin_req r;

	if (op != OP_PIN || len < sizeof(r))
		return 0;
	memcpy(&r, p, sizeof(r));
	return !(r.flags & PIN_F_QUERY);
}

/*
 * Ops on a version the session holds (its own pending version, or a lease):
 * the directory checks that, so a version with no name now (orphaned,
 * unlinked while pending) is the session's to name.
 */
static int held_op(uint16_t op)
{
	switch (op) {
	case OP_RELEASE: case OP_ABANDON: case OP_READ: case OP_WRITE: case OP_PUBLISH:
	case OP_RESERVE: case OP_TRUNCATE: case OP_EXTENTS: case OP_GETATTR:
	case OP_HINT: case OP_HINTV: case OP_HINT_WAIT:
		return 1;
	default:
		return 0;
	}
}

/* The id at p+off: 1 becomes the root; then it must be inside. zero_ok: 0 means none. */
static int id_check(struct conn *c, const struct tenant *tn, uint16_t op, uint8_t *p,
		    uint32_t len, size_t off, int zero_ok)
{
	uint64_t id;
	int in;

	if (off + sizeof(id) > len)
		return 0;	/* proto_req_check() refused it already */
	memcpy(&id, p + off, sizeof(id));
	if (id == 0 && zero_ok)
		return 0;
	if (id == PUBLIC_ROOT) {
		memcpy(p + off, &tn->root, sizeof(id));
		return 0;
	}
	in = dir_within(c->srv->dir, id, tn->root);
	if (in == DIR_WITHIN_YES || (in == DIR_WITHIN_UNNAMED && held_op(op)))
		return 0;
	log_debug("%s: %s names id %llu outside the root of key '%s': ENOENT", c->peer,
		  proto_op_name(op), (unsigned long long)id, tn->name);
	return -ENOENT;
}

/* HINTV, HINT_WAIT: every range's version. */
static int ranges_check(struct conn *c, const struct tenant *tn, uint16_t op, uint8_t *p,
			uint32_t len)
{
	struct proto_hintv_req r;
	size_t at, i;
	int rc = 0;

	if (len < sizeof(r))
		return 0;
	memcpy(&r, p, sizeof(r));
	at = sizeof(r) + (((size_t)r.reqlen + 7) & ~(size_t)7);
	for (i = 0; i < r.count && !rc; i++, at += sizeof(struct proto_hint_range))
		rc = id_check(c, tn, op, p, len, at, 0);
	return rc;
}

static int ids_check(struct conn *c, const struct tenant *tn, uint16_t op, uint8_t *p,
		     uint32_t len)
{
	uint64_t ino = 0;
	int rc;

	switch (op) {
	case OP_RENAME:		/* oldparent, newparent */
	case OP_LINK:		/* ino, newparent */
		rc = id_check(c, tn, op, p, len, 0, 0);
		return rc ? rc : id_check(c, tn, op, p, len, 8, 0);
	case OP_CREATE:		/* parent (0: from_ino's), from_ino (0: none) */
		rc = id_check(c, tn, op, p, len, 0, 1);
		return rc ? rc : id_check(c, tn, op, p, len, 8, 1);
	case OP_OPEN:		/* ino, or (0) parent + name */
		if (len >= sizeof(ino))
			memcpy(&ino, p, sizeof(ino));
		return id_check(c, tn, op, p, len, ino ? 0 : 8, 0);
	case OP_HINTV:
	case OP_HINT_WAIT:
		return ranges_check(c, tn, op, p, len);
	case OP_PING: case OP_HELLO: case OP_AUTH: case OP_STATFS: case OP_SUBSCRIBE:
	case OP_EVENT_ACK:
		return 0;
	default:		/* every other request starts with its id */
		return id_check(c, tn, op, p, len, 0, 0);
	}
}

int confine_request(struct conn *c, const struct proto_hdr *h, uint8_t *p, uint32_t len)
{
	struct tenant *tn = c->tenant;

	if (!tn)
		return 0;
	if (h->op == OP_STATS)
		return -EACCES;
	if ((changes(h->op) || pin_set(h->op, p, len)) && tenant_ro(tn))
		return -EROFS;
	return ids_check(c, tn, h->op, p, len);
}

static void attr_fix(const struct tenant *tn, uint8_t *a)
{
	struct proto_attr at;

	memcpy(&at, a, sizeof(at));
	if (at.ino == tn->root) {
		at.ino = PUBLIC_ROOT;
		at.parent = PUBLIC_ROOT;	/* the root's parent is itself */
	} else if (at.parent == tn->root) {
		at.parent = PUBLIC_ROOT;
	}
	memcpy(a, &at, sizeof(at));
}

static int has_attr(uint16_t op)
{
	switch (op) {
	case OP_MKDIR: case OP_LOOKUP: case OP_GETATTR: case OP_SETATTR: case OP_CREATE:
	case OP_RESERVE: case OP_TRUNCATE: case OP_PUBLISH: case OP_OPEN: case OP_EXTENTS:
	case OP_SYMLINK: case OP_LINK: case OP_MKNOD:
		return 1;
	default:
		return 0;
	}
}

/*
 * STATFS: the pool's byte totals stay (free space is shared), the counts
 * of names, directories and versions, which are other tenants', go.
 */
static void statfs_fix(uint8_t *p)
{
	struct proto_statfs st;

	memcpy(&st, p, sizeof(st));
	st.names = st.dirs = st.versions = 0;
	memcpy(p, &st, sizeof(st));
}

void confine_reply(struct conn *c, uint16_t op, struct pbuf *out)
{
	const struct tenant *tn = c->tenant;
	struct proto_attr a;
	size_t second;

	if (tn && op == OP_STATFS && out->len >= sizeof(struct proto_statfs)) {
		statfs_fix(out->data);
		return;
	}
	if (!tn || !has_attr(op) || out->len < sizeof(a))
		return;
	attr_fix(tn, out->data);
	/* PUBLISH with HELLO_F_DIRATTR: the directory's attr after the extents */
	memcpy(&a, out->data, sizeof(a));
	second = sizeof(a) + (size_t)a.nextents * sizeof(struct proto_extent);
	if (op == OP_PUBLISH && out->len >= second + sizeof(a))
		attr_fix(tn, out->data + second);
}

/* path under the tenant's root, made relative to it ("/r/x" -> "/x"); 0: not under. */
static int path_fix(const struct tenant *tn, char *path, size_t cap)
{
	size_t n = strlen(tn->root_path);

	if (!path[0] || !strcmp(tn->root_path, "/"))
		return 1;
	if (strncmp(path, tn->root_path, n) || (path[n] && path[n] != '/'))
		return 0;
	if (!path[n]) {
		snprintf(path, cap, "/");
		return 1;
	}
	memmove(path, path + n, strlen(path + n) + 1);
	return 1;
}

static int inside(struct conn *c, const struct tenant *tn, uint64_t id)
{
	return id == tn->root || dir_within(c->srv->dir, id, tn->root) == DIR_WITHIN_YES;
}

static uint64_t id_out(const struct tenant *tn, uint64_t id)
{
	return id == tn->root ? PUBLIC_ROOT : id;
}

int confine_event(struct conn *c, struct dir_event *e)
{
	const struct tenant *tn = c->tenant;
	int in1, in2;

	if (!tn || e->type == DEV_OVERFLOW)
		return 1;
	in1 = e->ino == tn->root || inside(c, tn, e->parent ? e->parent : e->ino);
	in2 = e->type == DEV_RENAME ? inside(c, tn, e->parent2) : in1;
	if (!in1 && !in2)
		return 0;
	if (in1 != in2 || !path_fix(tn, e->path, sizeof(e->path)) ||
	    !path_fix(tn, e->path2, sizeof(e->path2))) {
		/* half inside: what it names outside must not be told */
		uint64_t seq = e->seq, t = e->time_ns;

		memset(e, 0, offsetof(struct dir_event, name));
		e->seq = seq;
		e->time_ns = t;
		e->type = DEV_OVERFLOW;
		e->name[0] = e->name2[0] = e->path[0] = e->path2[0] = '\0';
		return 1;
	}
	e->ino = id_out(tn, e->ino);
	e->parent = id_out(tn, e->parent);
	e->parent2 = id_out(tn, e->parent2);
	if (e->ino == PUBLIC_ROOT)
		e->parent = PUBLIC_ROOT;
	return 1;
}

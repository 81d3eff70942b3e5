/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/confine_test.c: a scoped session's view
 * (daemon/confine.c). Real: the directory (the dir tests' fixture), the
 * tenant table loaded from a key file text, confine.c itself. Faked: the
 * connection and server, zeroed structs holding only what confine.c reads
 * (the tenant, the peer, the server's dir); requests and replies are built
 * here as the wire carries them. Cases: the root id translated, ids outside
 * the root and forged ids ENOENT, RENAME and LINK across the root ENOENT,
 * CREATE/OPEN/HINTV's other ids, unnamed versions only for held ops, a ro
 * tenant's changes EROFS, STATS EACCES, replies' and events' ids and paths.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "confine.h"
#include "dir/fixture.h"
#include "keyfile.h"
#include "server_priv.h"
#include "tenant.h"

#define KEYS "marud-keys 1\n" \
	"key a root=/t/a rights=rw secret=aaaaaaaaaaaaaaaa\n" \
	"key b root=/t/b rights=rw secret=bbbbbbbbbbbbbbbb\n" \
	"key r root=/t/r rights=ro secret=rrrrrrrrrrrrrrrr\n"

struct cx {
	struct fx f;
	struct tenants t;
	struct server srv;
	struct conn c;
	struct tenant *a, *b, *r;
	uint64_t tdir, fa, fb, sub, fsub;	/* /t, /t/a/f, /t/b/f, /t/a/d, /t/a/d/g */
};

static struct cx *cx_open(void)
{
	static struct cx x;
	struct dir_attr at;
	struct keyfile kf;
	char err[256];

	memset(&x, 0, sizeof(x));
	fx_open(&x.f, 64, DIR_EVICT_LRU, 0);
	assert_int_equal(tenants_init(&x.t), 0);
	if (keyfile_parse("t", KEYS, strlen(KEYS), &kf, err, sizeof(err)))
		fail_msg("parse: %s", err);
	assert_int_equal(tenants_apply(&x.t, x.f.d, &kf, NULL, NULL), 0);
	keyfile_free(&kf);
	x.a = tenants_find(&x.t, "a");
	x.b = tenants_find(&x.t, "b");
	x.r = tenants_find(&x.t, "r");
	assert_non_null(x.a);
	assert_non_null(x.b);
	assert_non_null(x.r);
	assert_int_equal(lookup(&x.f, NULL, ROOT, "t", &at), 0);
	x.tdir = at.ino;
	x.fa = put_file(&x.f, x.f.s1, x.a->root, "f", "a");
	x.fb = put_file(&x.f, x.f.s1, x.b->root, "f", "b");
	x.sub = do_mkdir(&x.f, x.a->root, "d");
	x.fsub = put_file(&x.f, x.f.s1, x.sub, "g", "g");
	x.srv.dir = x.f.d;
	x.c.srv = &x.srv;
	x.c.tenant = x.a;
	snprintf(x.c.peer, sizeof(x.c.peer), "test");
	return &x;
}

static void cx_close(struct cx *x)
{
	tenants_fini(&x->t);
	fx_close(&x->f);
}

/* confine_request on a request whose payload is p (copied: it may change). */
static int req(struct cx *x, uint16_t op, void *p, uint32_t len)
{
	struct proto_hdr h;

	memset(&h, 0, sizeof(h));
	h.op = op;
	h.len = len;
	return confine_request(&x->c, &h, p, len);
}

/* An op whose payload starts with one id: the result and the id after. */
static int req_id(struct cx *x, uint16_t op, uint64_t *id)
{
	uint8_t p[24] = { 0 };
	int rc;

	memcpy(p, id, sizeof(*id));
	rc = req(x, op, p, sizeof(p));
	memcpy(id, p, sizeof(*id));
	return rc;
}

static void test_unscoped_unchanged(void **state)
{
	struct cx *x = cx_open();
	uint64_t id = ROOT;
	struct proto_attr at = { .ino = x->a->root, .parent = x->tdir };
	struct pbuf out = { .data = (uint8_t *)&at, .len = sizeof(at), .cap = sizeof(at) };
	struct dir_event e = { .type = DEV_PUBLISH, .ino = x->fb, .parent = x->b->root };

	(void)state;
	x->c.tenant = NULL;
	assert_int_equal(req_id(x, OP_GETATTR, &id), 0);
	assert_int_equal(id, ROOT);		/* 1 stays the namespace root */
	id = x->fb;
	assert_int_equal(req_id(x, OP_GETATTR, &id), 0);
	assert_int_equal(req_id(x, OP_STATS, &id), 0);
	confine_reply(&x->c, OP_LOOKUP, &out);
	assert_int_equal(at.ino, x->a->root);
	assert_int_equal(at.parent, x->tdir);
	assert_int_equal(confine_event(&x->c, &e), 1);
	assert_int_equal(e.ino, x->fb);
	cx_close(x);
}

/* 1 is the tenant's root; ids inside pass unchanged. */
static void test_root_id(void **state)
{
	struct cx *x = cx_open();
	uint64_t id = ROOT;

	(void)state;
	assert_int_equal(req_id(x, OP_LOOKUP, &id), 0);
	assert_int_equal(id, x->a->root);
	id = x->fsub;
	assert_int_equal(req_id(x, OP_GETATTR, &id), 0);
	assert_int_equal(id, x->fsub);
	id = x->sub;
	assert_int_equal(req_id(x, OP_READDIR, &id), 0);
	assert_int_equal(id, x->sub);
	id = x->a->root;	/* its own root's real id is inside too */
	assert_int_equal(req_id(x, OP_GETATTR, &id), 0);
	cx_close(x);
}

/* Outside, the parent of the root, and ids that do not exist: all ENOENT. */
static void test_outside_enoent(void **state)
{
	struct cx *x = cx_open();
	uint64_t ids[] = { 0, 0, 0, 999999, 0 };
	unsigned int i;

	(void)state;
	ids[0] = x->fb;
	ids[1] = x->b->root;
	ids[2] = x->tdir;
	ids[4] = x->r->root;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		uint64_t id = ids[i];

		assert_int_equal(req_id(x, OP_GETATTR, &id), -ENOENT);
		id = ids[i];
		assert_int_equal(req_id(x, OP_LOOKUP, &id), -ENOENT);
		id = ids[i];
		assert_int_equal(req_id(x, OP_UNLINK, &id), -ENOENT);
		id = ids[i];
		assert_int_equal(req_id(x, OP_READ, &id), -ENOENT);
	}
	/* b sees its own file, not a's */
	x->c.tenant = x->b;
	ids[0] = x->fb;
	assert_int_equal(req_id(x, OP_GETATTR, &ids[0]), 0);
	ids[0] = x->fa;
	assert_int_equal(req_id(x, OP_GETATTR, &ids[0]), -ENOENT);
	cx_close(x);
}

/* Both parents of a RENAME, the ino and new parent of a LINK. */
static void test_rename_link_across(void **state)
{
	struct cx *x = cx_open();
	struct {
		struct proto_rename_req r;
		char names[8];
	} rn;
	struct {
		struct proto_link_req l;
		char name[8];
	} ln;

	(void)state;
	memset(&rn, 0, sizeof(rn));
	rn.r.oldparent = x->sub;
	rn.r.newparent = ROOT;
	rn.r.oldlen = rn.r.newlen = 1;
	assert_int_equal(req(x, OP_RENAME, &rn, sizeof(rn)), 0);
	assert_int_equal(rn.r.newparent, x->a->root);
	assert_int_equal(rn.r.oldparent, x->sub);
	rn.r.oldparent = ROOT;
	rn.r.newparent = x->b->root;	/* out of the root */
	assert_int_equal(req(x, OP_RENAME, &rn, sizeof(rn)), -ENOENT);
	rn.r.oldparent = x->tdir;	/* in from above the root */
	rn.r.newparent = ROOT;
	assert_int_equal(req(x, OP_RENAME, &rn, sizeof(rn)), -ENOENT);

	memset(&ln, 0, sizeof(ln));
	ln.l.ino = x->fa;
	ln.l.newparent = x->sub;
	ln.l.namelen = 1;
	assert_int_equal(req(x, OP_LINK, &ln, sizeof(ln)), 0);
	ln.l.newparent = x->b->root;	/* a link out */
	assert_int_equal(req(x, OP_LINK, &ln, sizeof(ln)), -ENOENT);
	ln.l.ino = x->fb;		/* a link of b's file in */
	ln.l.newparent = ROOT;
	assert_int_equal(req(x, OP_LINK, &ln, sizeof(ln)), -ENOENT);
	cx_close(x);
}

/* CREATE's from_ino, OPEN by ino or by parent, every HINTV range. */
static void test_other_ids(void **state)
{
	struct cx *x = cx_open();
	struct proto_create_req cr;
	struct proto_open_req op;
	struct {
		struct proto_hintv_req h;
		uint8_t reqb[8];
		struct proto_hint_range r[2];
	} hv;

	(void)state;
	memset(&cr, 0, sizeof(cr));
	assert_int_equal(req(x, OP_CREATE, &cr, sizeof(cr)), 0);	/* 0, 0: none */
	cr.parent = ROOT;
	cr.from_ino = x->fa;
	assert_int_equal(req(x, OP_CREATE, &cr, sizeof(cr)), 0);
	assert_int_equal(cr.parent, x->a->root);
	cr.from_ino = x->fb;
	assert_int_equal(req(x, OP_CREATE, &cr, sizeof(cr)), -ENOENT);

	memset(&op, 0, sizeof(op));
	op.parent = ROOT;		/* by name: the parent is checked */
	assert_int_equal(req(x, OP_OPEN, &op, sizeof(op)), 0);
	assert_int_equal(op.parent, x->a->root);
	op.parent = x->b->root;
	assert_int_equal(req(x, OP_OPEN, &op, sizeof(op)), -ENOENT);
	op.ino = x->fsub;		/* by id: the id is */
	assert_int_equal(req(x, OP_OPEN, &op, sizeof(op)), 0);
	op.ino = x->fb;
	op.parent = x->a->root;
	assert_int_equal(req(x, OP_OPEN, &op, sizeof(op)), -ENOENT);

	memset(&hv, 0, sizeof(hv));
	hv.h.count = 2;
	hv.h.reqlen = 3;		/* rounded up to 8 before the ranges */
	hv.r[0].ino = x->fa;
	hv.r[1].ino = x->fsub;
	assert_int_equal(req(x, OP_HINTV, &hv, sizeof(hv)), 0);
	hv.r[1].ino = x->fb;		/* the second range is outside */
	assert_int_equal(req(x, OP_HINTV, &hv, sizeof(hv)), -ENOENT);
	assert_int_equal(req(x, OP_HINT_WAIT, &hv, sizeof(hv)), -ENOENT);
	cx_close(x);
}

/* A pending version unlinked has no name: only its holder's ops reach it. */
static void test_unnamed_held_only(void **state)
{
	struct cx *x = cx_open();
	uint64_t p, id;

	(void)state;
	p = do_create(&x->f, x->f.s1, x->a->root, "p", 0, 0);
	assert_int_equal(dir_unlink(x->f.d, x->f.s1, x->a->root, "p", 1), 0);
	assert_int_equal(dir_within(x->f.d, p, x->a->root), DIR_WITHIN_UNNAMED);
	id = p;
	assert_int_equal(req_id(x, OP_WRITE, &id), 0);
	id = p;
	assert_int_equal(req_id(x, OP_ABANDON, &id), 0);
	id = p;
	assert_int_equal(req_id(x, OP_GETATTR, &id), 0);
	id = p;
	assert_int_equal(req_id(x, OP_SETATTR, &id), -ENOENT);
	id = p;
	assert_int_equal(req_id(x, OP_LOOKUP, &id), -ENOENT);
	assert_int_equal(dir_abandon(x->f.d, x->f.s1, p), 0);
	cx_close(x);
}

/* A ro tenant: changes and pin changes EROFS, reads and pin queries pass. */
static void test_ro_tenant(void **state)
{
	static const uint16_t chg[] = { OP_MKDIR, OP_RMDIR, OP_SETATTR, OP_RENAME,
		OP_UNLINK, OP_SYMLINK, OP_CREATE, OP_RESERVE, OP_TRUNCATE, OP_PUBLISH,
		OP_WRITE, OP_LINK, OP_MKNOD };
	struct cx *x = cx_open();
	struct proto_pin_req pin = { .ino = ROOT, .seconds = 10 };
	uint64_t id;
	unsigned int i;

	(void)state;
	x->c.tenant = x->r;
	for (i = 0; i < sizeof(chg) / sizeof(chg[0]); i++) {
		id = ROOT;
		assert_int_equal(req_id(x, chg[i], &id), -EROFS);
	}
	assert_int_equal(req(x, OP_PIN, &pin, sizeof(pin)), -EROFS);
	pin.seconds = 0;		/* unpin is a change too */
	assert_int_equal(req(x, OP_PIN, &pin, sizeof(pin)), -EROFS);
	pin.flags = PIN_F_QUERY;
	assert_int_equal(req(x, OP_PIN, &pin, sizeof(pin)), 0);
	assert_int_equal(pin.ino, x->r->root);
	id = ROOT;
	assert_int_equal(req_id(x, OP_LOOKUP, &id), 0);
	id = ROOT;
	assert_int_equal(req_id(x, OP_READDIR, &id), 0);
	/* the same requests from a rw tenant */
	x->c.tenant = x->a;
	id = ROOT;
	assert_int_equal(req_id(x, OP_MKDIR, &id), 0);
	pin.flags = 0;
	pin.ino = x->fa;
	assert_int_equal(req(x, OP_PIN, &pin, sizeof(pin)), 0);
	cx_close(x);
}

/* STATS is the whole pool's: refused; the id-less ops pass. */
static void test_stats_refused(void **state)
{
	static const uint16_t idless[] = { OP_PING, OP_HELLO, OP_AUTH, OP_STATFS,
		OP_SUBSCRIBE, OP_EVENT_ACK };
	struct cx *x = cx_open();
	uint64_t id;
	unsigned int i;

	(void)state;
	id = 0;
	assert_int_equal(req_id(x, OP_STATS, &id), -EACCES);
	x->c.tenant = x->r;
	assert_int_equal(req_id(x, OP_STATS, &id), -EACCES);
	for (i = 0; i < sizeof(idless) / sizeof(idless[0]); i++) {
		id = x->fb;	/* not an id for these: left alone */
		assert_int_equal(req_id(x, idless[i], &id), 0);
		assert_int_equal(id, x->fb);
	}
	cx_close(x);
}

static void test_reply_ids(void **state)
{
	struct cx *x = cx_open();
	struct {
		struct proto_attr a;
		struct proto_extent e[2];
		struct proto_attr dir;
	} pub;
	struct proto_attr at;
	struct proto_statfs st = { .capacity = 100, .free = 50, .names = 7, .dirs = 3,
				   .versions = 9, .block = 4096 };
	struct pbuf out = { .data = (uint8_t *)&at, .len = sizeof(at), .cap = sizeof(at) };

	(void)state;
	memset(&at, 0, sizeof(at));
	at.ino = x->a->root;
	at.parent = x->tdir;		/* the root's parent is not told */
	confine_reply(&x->c, OP_GETATTR, &out);
	assert_int_equal(at.ino, ROOT);
	assert_int_equal(at.parent, ROOT);
	at.ino = x->fa;
	at.parent = x->a->root;
	confine_reply(&x->c, OP_LOOKUP, &out);
	assert_int_equal(at.ino, x->fa);
	assert_int_equal(at.parent, ROOT);
	at.ino = x->fsub;
	at.parent = x->sub;
	confine_reply(&x->c, OP_CREATE, &out);
	assert_int_equal(at.parent, x->sub);
	at.parent = x->a->root;		/* an op with no attr: untouched */
	confine_reply(&x->c, OP_READ, &out);
	assert_int_equal(at.parent, x->a->root);
	out.len = sizeof(at) - 1;	/* too short: untouched */
	confine_reply(&x->c, OP_LOOKUP, &out);
	assert_int_equal(at.parent, x->a->root);

	/* PUBLISH with the directory's attr after the extents */
	memset(&pub, 0, sizeof(pub));
	pub.a.ino = x->fa;
	pub.a.parent = x->a->root;
	pub.a.nextents = 2;
	pub.dir.ino = x->a->root;
	pub.dir.parent = x->tdir;
	out.data = (uint8_t *)&pub;
	out.len = out.cap = sizeof(pub);
	confine_reply(&x->c, OP_PUBLISH, &out);
	assert_int_equal(pub.a.parent, ROOT);
	assert_int_equal(pub.dir.ino, ROOT);
	assert_int_equal(pub.dir.parent, ROOT);

	/* STATFS: the bytes stay, the other tenants' counts go */
	out.data = (uint8_t *)&st;
	out.len = out.cap = sizeof(st);
	confine_reply(&x->c, OP_STATFS, &out);
	assert_int_equal(st.capacity, 100);
	assert_int_equal(st.free, 50);
	assert_int_equal(st.block, 4096);
	assert_int_equal(st.names + st.dirs + st.versions, 0);
	cx_close(x);
}

static void ev(struct dir_event *e, uint32_t type, uint64_t ino, uint64_t parent,
	       const char *path)
{
	memset(e, 0, sizeof(*e));
	e->seq = 42;
	e->time_ns = 7;
	e->type = type;
	e->ino = ino;
	e->parent = parent;
	snprintf(e->name, sizeof(e->name), "n");
	snprintf(e->path, sizeof(e->path), "%s", path);
}

static void test_events(void **state)
{
	struct cx *x = cx_open();
	struct dir_event e;

	(void)state;
	/* inside: ids and path relative to the root */
	ev(&e, DEV_PUBLISH, x->fa, x->a->root, "/t/a/f");
	assert_int_equal(confine_event(&x->c, &e), 1);
	assert_int_equal(e.ino, x->fa);
	assert_int_equal(e.parent, ROOT);
	assert_string_equal(e.path, "/f");
	ev(&e, DEV_PUBLISH, x->fsub, x->sub, "/t/a/d/g");
	assert_int_equal(confine_event(&x->c, &e), 1);
	assert_int_equal(e.parent, x->sub);
	assert_string_equal(e.path, "/d/g");
	/* the root itself (setattr on it) */
	ev(&e, DEV_SETATTR, x->a->root, 0, "/t/a");
	assert_int_equal(confine_event(&x->c, &e), 1);
	assert_int_equal(e.ino, ROOT);
	assert_int_equal(e.parent, ROOT);
	assert_string_equal(e.path, "/");
	/* outside: not delivered */
	ev(&e, DEV_PUBLISH, x->fb, x->b->root, "/t/b/f");
	assert_int_equal(confine_event(&x->c, &e), 0);
	ev(&e, DEV_MKDIR, x->tdir, ROOT, "/t");
	assert_int_equal(confine_event(&x->c, &e), 0);
	/* a rename across the root: overflow, nothing of the outside told */
	ev(&e, DEV_RENAME, x->fa, x->a->root, "/t/a/f");
	e.parent2 = x->b->root;
	snprintf(e.name2, sizeof(e.name2), "secret");
	snprintf(e.path2, sizeof(e.path2), "/t/b/secret");
	assert_int_equal(confine_event(&x->c, &e), 1);
	assert_int_equal(e.type, DEV_OVERFLOW);
	assert_int_equal(e.seq, 42);
	assert_int_equal(e.time_ns, 7);
	assert_int_equal(e.ino, 0);
	assert_int_equal(e.parent2, 0);
	assert_string_equal(e.name2, "");
	assert_string_equal(e.path2, "");
	assert_string_equal(e.path, "");
	/* and back in */
	ev(&e, DEV_RENAME, x->fb, x->b->root, "/t/b/f");
	e.parent2 = x->sub;
	snprintf(e.path2, sizeof(e.path2), "/t/a/d/f");
	assert_int_equal(confine_event(&x->c, &e), 1);
	assert_int_equal(e.type, DEV_OVERFLOW);
	/* inside both ways: the second parent and path translated */
	ev(&e, DEV_RENAME, x->fa, x->a->root, "/t/a/f");
	e.parent2 = x->sub;
	snprintf(e.path2, sizeof(e.path2), "/t/a/d/f");
	assert_int_equal(confine_event(&x->c, &e), 1);
	assert_int_equal(e.type, DEV_RENAME);
	assert_int_equal(e.parent, ROOT);
	assert_int_equal(e.parent2, x->sub);
	assert_string_equal(e.path2, "/d/f");
	/* an overflow is for everyone */
	ev(&e, DEV_OVERFLOW, 0, 0, "");
	assert_int_equal(confine_event(&x->c, &e), 1);
	cx_close(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unscoped_unchanged),
		cmocka_unit_test(test_root_id),
		cmocka_unit_test(test_outside_enoent),
		cmocka_unit_test(test_rename_link_across),
		cmocka_unit_test(test_other_ids),
		cmocka_unit_test(test_unnamed_held_only),
		cmocka_unit_test(test_ro_tenant),
		cmocka_unit_test(test_stats_refused),
		cmocka_unit_test(test_reply_ids),
		cmocka_unit_test(test_events),
	};

	return cmocka_run_group_tests_name("confine", tests, NULL, NULL);
}

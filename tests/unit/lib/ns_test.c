/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/ns_test.c: the namespace calls (lib/ns.c) against a fake
 * marud holding a small tree: lookup, getattr, mkdir, rmdir, unlink and
 * rename with marud's -errno reaching the caller unchanged; invalid names
 * refused before anything is sent; setattr's mask and "now" resolved here;
 * readdir paging in batches (resuming at a cookie, stopping early, a
 * malformed batch -EIO); exists in batches of 4096 names.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "client_priv.h"
#include "fake_marud.h"

#define NENT		3000
#define BIG_DIR		2	/* holds BIG_N files */
#define BIG_N		2500
#define BAD_DIR		3	/* READDIR answers a malformed batch */
#define EXISTS_MAX_TEST	4096	/* names in one EXISTS (ns.c EXISTS_BATCH) */

struct ent {
	uint64_t parent, ino;
	uint32_t mode;
	char name[64];
};

struct tree {
	pthread_mutex_t mu;
	struct ent e[NENT];
	int n;
	uint64_t next_ino;
	struct proto_setattr_req last_setattr;
	struct proto_name_req last_mkdir;
	struct proto_rename_req last_rename;
	uint64_t rename_seq;
	uint32_t max_entries;
};

static struct ent *find_name(struct tree *t, uint64_t parent, const char *name, size_t len)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->e[i].parent == parent && strlen(t->e[i].name) == len &&
		    !memcmp(t->e[i].name, name, len))
			return &t->e[i];
	return NULL;
}

static struct ent *find_ino(struct tree *t, uint64_t ino)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->e[i].ino == ino)
			return &t->e[i];
	return NULL;
}

static struct ent *add(struct tree *t, uint64_t parent, const char *name, size_t len,
		       uint32_t mode)
{
	struct ent *e = &t->e[t->n++];

	e->parent = parent;
	e->ino = t->next_ino++;
	e->mode = mode;
	snprintf(e->name, sizeof(e->name), "%.*s", (int)len, name);
	return e;
}

static int has_children(struct tree *t, uint64_t ino)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->e[i].parent == ino)
			return 1;
	return 0;
}

static int reply_status(struct fake_req *q, int32_t st)
{
	return fake_reply(q, st, NULL, 0, NULL, 0) ? -1 : 0;
}

static int reply_ent(struct fake_req *q, const struct ent *e)
{
	struct proto_attr a = { .ino = e->ino, .parent = e->parent, .mode = e->mode,
				.nlink = 1, .mtime_ns = 3000000007ULL,
				.state = S_ISDIR(e->mode) ? MARU_STATE_DIR : MARU_STATE_PUBLISHED };

	return fake_reply(q, 0, &a, sizeof(a), NULL, 0) ? -1 : 0;
}

/* The parent must be a directory (root 1 or a dir entry). */
static int parent_err(struct tree *t, uint64_t parent)
{
	struct ent *p = find_ino(t, parent);

	if (parent == 1)
		return 0;
	if (!p)
		return -ENOENT;
	return S_ISDIR(p->mode) ? 0 : -ENOTDIR;
}

static int do_name(struct fake_req *q, struct tree *t)
{
	struct proto_name_req r;
	const char *name;
	struct ent *e;
	int err;

	memcpy(&r, q->body, sizeof(r));
	name = (const char *)q->body + sizeof(r);
	err = parent_err(t, r.parent);
	if (err)
		return reply_status(q, err);
	e = find_name(t, r.parent, name, r.namelen);
	switch (q->h.op) {
	case OP_LOOKUP:
		return e ? reply_ent(q, e) : reply_status(q, -ENOENT);
	case OP_MKDIR:
		t->last_mkdir = r;
		if (e)
			return reply_status(q, -EEXIST);
		return reply_ent(q, add(t, r.parent, name, r.namelen, r.mode));
	case OP_RMDIR:
		if (!e)
			return reply_status(q, -ENOENT);
		if (!S_ISDIR(e->mode))
			return reply_status(q, -ENOTDIR);
		if (has_children(t, e->ino))
			return reply_status(q, -ENOTEMPTY);
		*e = t->e[--t->n];
		return reply_status(q, 0);
	default:	/* OP_UNLINK */
		if (!e)
			return reply_status(q, -ENOENT);
		if (S_ISDIR(e->mode))
			return reply_status(q, -EISDIR);
		*e = t->e[--t->n];
		return reply_status(q, 0);
	}
}

static int do_rename(struct fake_req *q, struct tree *t)
{
	struct proto_rename_req r;
	struct proto_rename_rep rep;
	const char *on, *nn;
	struct ent *src, *dst;

	memcpy(&r, q->body, sizeof(r));
	t->last_rename = r;
	on = (const char *)q->body + sizeof(r);
	nn = on + r.oldlen;
	src = find_name(t, r.oldparent, on, r.oldlen);
	dst = find_name(t, r.newparent, nn, r.newlen);
	if (!src)
		return reply_status(q, -ENOENT);
	if (dst && (r.flags & PROTO_RENAME_NOREPLACE))
		return reply_status(q, -EEXIST);
	if (dst)
		*dst = t->e[--t->n];
	src = find_name(t, r.oldparent, on, r.oldlen);
	src->parent = r.newparent;
	snprintf(src->name, sizeof(src->name), "%.*s", (int)r.newlen, nn);
	/* The reply carries the seq of the event the rename made. */
	rep.seq = ++t->rename_seq;
	return fake_reply(q, 0, &rep, sizeof(rep), NULL, 0) ? -1 : 0;
}

/* Entries of dir after cookie (cookies are inos), at most max_entries. */
static int do_readdir(struct fake_req *q, struct tree *t)
{
	struct proto_readdir_req r;
	struct proto_readdir_rep *rep;
	struct pbuf b = { 0 };
	struct proto_dirent d;
	uint32_t count = 0;
	int i, rc, more = 0;

	memcpy(&r, q->body, sizeof(r));
	t->max_entries = r.max_entries;
	assert_int_equal(proto_buf_reserve(&b, sizeof(*rep)), 0);
	b.len = sizeof(*rep);
	for (i = 0; i < t->n; i++) {
		if (t->e[i].parent != r.dir || t->e[i].ino <= r.cookie)
			continue;
		if (count == r.max_entries) {
			more = 1;
			break;
		}
		memset(&d, 0, sizeof(d));
		d.ino = d.cookie = t->e[i].ino;
		d.mode = t->e[i].mode;
		d.namelen = (uint16_t)strlen(t->e[i].name);
		if (r.dir == BAD_DIR)
			d.namelen = 0;
		assert_int_equal(proto_buf_put(&b, &d, sizeof(d)), 0);
		assert_int_equal(proto_buf_put(&b, t->e[i].name, strlen(t->e[i].name)), 0);
		assert_int_equal(proto_buf_align8(&b), 0);
		count++;
	}
	rep = (void *)b.data;
	rep->count = count;
	rep->eof = !more;
	rc = fake_reply(q, 0, b.data, b.len, NULL, 0) ? -1 : 0;
	proto_buf_free(&b);
	return rc;
}

static int do_exists(struct fake_req *q, struct tree *t)
{
	struct proto_exists_req r;
	const uint8_t *p = q->body + sizeof(r);
	uint8_t out[EXISTS_MAX_TEST];
	uint32_t i;
	uint16_t l;

	memcpy(&r, q->body, sizeof(r));
	assert_true(r.count <= sizeof(out));
	for (i = 0; i < r.count; i++) {
		memcpy(&l, p, sizeof(l));
		out[i] = find_name(t, r.parent, (const char *)p + 2, l) != NULL;
		p += 2 + l;
	}
	return fake_reply(q, 0, out, r.count, NULL, 0) ? -1 : 0;
}

static int tree_op(struct fake_req *q, struct tree *t)
{
	struct proto_ino_req ir;
	struct ent *e;

	switch (q->h.op) {
	case OP_LOOKUP:
	case OP_MKDIR:
	case OP_RMDIR:
	case OP_UNLINK:
		return do_name(q, t);
	case OP_RENAME:
		return do_rename(q, t);
	case OP_READDIR:
		return do_readdir(q, t);
	case OP_EXISTS:
		return do_exists(q, t);
	case OP_GETATTR:
	case OP_SETATTR:
		memcpy(&ir, q->body, sizeof(ir));
		if (q->h.op == OP_SETATTR)
			memcpy(&t->last_setattr, q->body, sizeof(t->last_setattr));
		e = find_ino(t, ir.ino);
		return e ? reply_ent(q, e) : reply_status(q, -ENOENT);
	default:
		return reply_status(q, 0);
	}
}

static int tree_handler(struct fake_req *q)
{
	struct tree *t = q->f->arg;
	int rc;

	pthread_mutex_lock(&t->mu);
	rc = tree_op(q, t);
	pthread_mutex_unlock(&t->mu);
	return rc;
}

/* ---- fixture ---- */

struct fx {
	struct fake_marud f;
	struct tree t;
	struct maru_client *c;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char name[32];
	int i;

	assert_non_null(x);
	pthread_mutex_init(&x->t.mu, NULL);
	x->t.next_ino = 2;
	add(&x->t, 1, "big", 3, S_IFDIR | 0755);		/* ino 2 */
	add(&x->t, 1, "bad", 3, S_IFDIR | 0755);		/* ino 3 */
	add(&x->t, 1, "file", 4, S_IFREG | 0644);		/* ino 4 */
	add(&x->t, 1, "full", 4, S_IFDIR | 0755);		/* ino 5 */
	add(&x->t, 5, "inner", 5, S_IFREG | 0644);
	add(&x->t, BAD_DIR, "x", 1, S_IFREG | 0644);
	for (i = 0; i < BIG_N; i++) {
		snprintf(name, sizeof(name), "c%05d", i);
		add(&x->t, BIG_DIR, name, strlen(name), S_IFREG | 0644);
	}
	fake_start(&x->f, tree_handler, &x->t);
	x->c = fake_client(&x->f, 2000, 2, NULL, 0);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	maru_client_free(x->c);
	fake_stop(&x->f);
	free(x);
	return 0;
}

static unsigned int sent(struct fx *x)
{
	unsigned int n = 0, op;

	for (op = OP_MKDIR; op <= OP_EXISTS; op++)
		n += fake_ops(&x->f, (uint16_t)op);
	return n;
}

static void test_lookup_getattr(void **state)
{
	struct fx *x = *state;
	struct maru_attr a;

	assert_int_equal(maru_lookup(x->c, 1, "file", &a), 0);
	assert_int_equal(a.ino, 4);
	assert_int_equal(a.parent, 1);
	assert_true(S_ISREG(a.mode));
	assert_int_equal(a.mtime.tv_sec, 3);
	assert_int_equal(a.mtime.tv_nsec, 7);
	assert_int_equal(maru_lookup(x->c, 1, "file", NULL), 0);
	assert_int_equal(maru_lookup(x->c, 1, "nope", &a), -ENOENT);
	assert_int_equal(maru_lookup(x->c, 4, "x", &a), -ENOTDIR);
	assert_int_equal(maru_lookup(x->c, 999999, "x", &a), -ENOENT);
	assert_int_equal(maru_getattr(x->c, 2, &a), 0);
	assert_int_equal(a.state, MARU_STATE_DIR);
	assert_int_equal(maru_getattr(x->c, 9999999, &a), -ENOENT);
}

static void test_mkdir_rmdir_unlink_errors(void **state)
{
	struct fx *x = *state;
	struct maru_attr a;

	assert_int_equal(maru_mkdir(x->c, 1, "new", 0750 | S_IFREG, 5, 6, &a), 0);
	assert_true(S_ISDIR(a.mode));
	/* the type is ours to set; only permission bits come from the caller */
	assert_int_equal(x->t.last_mkdir.mode, S_IFDIR | 0750);
	assert_int_equal(x->t.last_mkdir.uid, 5);
	assert_int_equal(x->t.last_mkdir.gid, 6);
	assert_int_equal(maru_mkdir(x->c, 1, "new", 0755, 0, 0, &a), -EEXIST);
	assert_int_equal(maru_mkdir(x->c, 777777, "d", 0755, 0, 0, &a), -ENOENT);
	assert_int_equal(maru_mkdir(x->c, 4, "d", 0755, 0, 0, &a), -ENOTDIR);
	assert_int_equal(maru_rmdir(x->c, 1, "full"), -ENOTEMPTY);
	assert_int_equal(maru_rmdir(x->c, 1, "file"), -ENOTDIR);
	assert_int_equal(maru_rmdir(x->c, 1, "gone"), -ENOENT);
	assert_int_equal(maru_rmdir(x->c, 1, "new"), 0);
	assert_int_equal(maru_lookup(x->c, 1, "new", &a), -ENOENT);
	assert_int_equal(maru_unlink(x->c, 1, "big"), -EISDIR);
	assert_int_equal(maru_unlink(x->c, 5, "inner"), 0);
	assert_int_equal(maru_unlink(x->c, 5, "inner"), -ENOENT);
	assert_int_equal(maru_rmdir(x->c, 1, "full"), 0);
}

static void test_invalid_names_not_sent(void **state)
{
	struct fx *x = *state;
	const char *bad[] = { "", ".", "..", "a/b", NULL };
	char longname[MARU_NAME_MAX + 2];
	struct maru_attr a;
	unsigned int before = sent(x);
	int i;

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	for (i = 0; i < 5; i++) {
		const char *n = bad[i];

		assert_int_equal(maru_lookup(x->c, 1, n, &a), -EINVAL);
		assert_int_equal(maru_mkdir(x->c, 1, n, 0755, 0, 0, &a), -EINVAL);
		assert_int_equal(maru_rmdir(x->c, 1, n), -EINVAL);
		assert_int_equal(maru_unlink(x->c, 1, n), -EINVAL);
		assert_int_equal(maru_rename(x->c, 1, "file", 1, n, 0), -EINVAL);
		assert_int_equal(maru_rename(x->c, 1, n, 1, "file", 0), -EINVAL);
	}
	assert_int_equal(maru_lookup(x->c, 1, longname, &a), -ENAMETOOLONG);
	assert_int_equal(maru_rename(x->c, 1, "file", 1, "f2", 0x80), -EINVAL);
	assert_int_equal(maru_lookup(NULL, 1, "file", &a), -EINVAL);
	assert_int_equal(sent(x), before);
	longname[MARU_NAME_MAX] = '\0';	/* 255 bytes: fine */
	assert_int_equal(maru_lookup(x->c, 1, longname, &a), -ENOENT);
}

static void test_rename(void **state)
{
	struct fx *x = *state;
	struct maru_attr a;
	uint64_t seq;

	assert_int_equal(maru_rename(x->c, 1, "file", 2, "moved", 0), 0);
	assert_int_equal(x->t.last_rename.oldparent, 1);
	assert_int_equal(x->t.last_rename.newparent, 2);
	assert_int_equal(x->t.last_rename.oldlen, 4);
	assert_int_equal(x->t.last_rename.newlen, 5);
	assert_int_equal(maru_lookup(x->c, 2, "moved", &a), 0);
	assert_int_equal(a.ino, 4);
	/* maru_rename_seq hands back the seq marud says the rename pushed. */
	seq = 0;
	assert_int_equal(maru_rename_seq(x->c, 2, "moved", 2, "moved2", 0, &seq), 0);
	assert_int_equal(seq, x->t.rename_seq);
	assert_true(seq != 0);
	assert_int_equal(maru_rename_seq(x->c, 2, "nothere", 2, "x", 0, &seq), -ENOENT);
	assert_int_equal(seq, 0);
	assert_int_equal(maru_rename(x->c, 2, "moved2", 2, "moved", 0), 0);
	assert_int_equal(maru_rename(x->c, 2, "moved", 2, "c00001", MARU_RENAME_NOREPLACE),
			 -EEXIST);
	assert_int_equal(x->t.last_rename.flags, PROTO_RENAME_NOREPLACE);
	assert_int_equal(maru_rename(x->c, 2, "moved", 2, "c00001", 0), 0);
	assert_int_equal(x->t.last_rename.flags, 0);
	assert_int_equal(maru_rename(x->c, 1, "nothing", 1, "x", 0), -ENOENT);
}

static void test_setattr(void **state)
{
	struct fx *x = *state;
	struct maru_setattr sa = { .mask = MARU_SET_MODE | MARU_SET_ATIME | MARU_SET_MTIME_NOW,
				   .mode = S_IFDIR | 04711,
				   .atime = { .tv_sec = 12, .tv_nsec = 34 } };
	const struct proto_setattr_req *q = &x->t.last_setattr;
	struct timespec now;
	struct maru_attr a;
	uint64_t now_ns_;

	clock_gettime(CLOCK_REALTIME, &now);
	now_ns_ = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	assert_int_equal(maru_setattr(x->c, 4, &sa, &a), 0);
	assert_int_equal(a.ino, 4);
	assert_int_equal(q->ino, 4);
	assert_int_equal(q->mask, SETATTR_MODE | SETATTR_ATIME | SETATTR_MTIME);
	assert_int_equal(q->mode, 04711);
	assert_int_equal(q->atime_ns, 12000000034ULL);
	/* "now" on the caller's clock */
	assert_true(q->mtime_ns >= now_ns_ && q->mtime_ns < now_ns_ + 5000000000ULL);
	sa.mask = MARU_SET_UID | MARU_SET_GID | MARU_SET_ATIME_NOW;
	sa.uid = 7;
	sa.gid = 8;
	assert_int_equal(maru_setattr(x->c, 4, &sa, NULL), 0);
	assert_int_equal(q->mask, SETATTR_UID | SETATTR_GID | SETATTR_ATIME);
	assert_int_equal(q->uid, 7);
	assert_int_equal(q->gid, 8);
	assert_true(q->atime_ns >= now_ns_);
	assert_int_equal(maru_setattr(x->c, 4, NULL, NULL), -EINVAL);
	assert_int_equal(maru_setattr(x->c, 123456, &sa, NULL), -ENOENT);
}

struct walk {
	int n, stop_at;
	uint64_t last_cookie;
	int ordered;
	char first[16];
};

static int walk_cb(void *arg, const struct maru_dirent *de)
{
	struct walk *w = arg;
	char name[16];

	snprintf(name, sizeof(name), "%.*s", (int)de->namelen, de->name);
	if (w->n == 0)
		snprintf(w->first, sizeof(w->first), "%s", name);
	if (de->cookie <= w->last_cookie || !S_ISREG(de->mode))
		w->ordered = 0;
	w->last_cookie = de->cookie;
	w->n++;
	return w->stop_at && w->n == w->stop_at;
}

static void test_readdir_paging(void **state)
{
	struct fx *x = *state;
	struct walk w = { .ordered = 1 };
	uint64_t mid;

	assert_int_equal(maru_readdir(x->c, BIG_DIR, 0, walk_cb, &w), 0);
	assert_int_equal(w.n, BIG_N);
	assert_true(w.ordered);
	assert_string_equal(w.first, "c00000");
	/* 2500 entries in batches of 1024: three requests */
	assert_int_equal(fake_ops(&x->f, OP_READDIR), 3);
	assert_int_equal(x->t.max_entries, 1024);
	/* resume after the 1000th entry's cookie */
	memset(&w, 0, sizeof(w));
	w.ordered = 1;
	w.stop_at = 1000;
	assert_int_equal(maru_readdir(x->c, BIG_DIR, 0, walk_cb, &w), 0);
	assert_int_equal(w.n, 1000);		/* stopped: the call still says 0 */
	assert_int_equal(fake_ops(&x->f, OP_READDIR), 4);
	mid = w.last_cookie;
	memset(&w, 0, sizeof(w));
	w.ordered = 1;
	w.last_cookie = mid;
	assert_int_equal(maru_readdir(x->c, BIG_DIR, mid, walk_cb, &w), 0);
	assert_int_equal(w.n, BIG_N - 1000);
	assert_string_equal(w.first, "c01000");
	assert_true(w.ordered);
	/* an empty directory: one request, no entries */
	memset(&w, 0, sizeof(w));
	assert_int_equal(maru_readdir(x->c, 4, 0, walk_cb, &w), 0);
	assert_int_equal(w.n, 0);
	/* a malformed batch */
	assert_int_equal(maru_readdir(x->c, BAD_DIR, 0, walk_cb, &w), -EIO);
	assert_int_equal(w.n, 0);
	assert_int_equal(maru_readdir(x->c, BIG_DIR, 0, NULL, &w), -EINVAL);
}

static void test_exists_batches(void **state)
{
	struct fx *x = *state;
	enum { N = 5000 };
	static char names[N][16];
	static const char *np[N];
	static uint8_t out[N];
	int i;

	for (i = 0; i < N; i++) {
		/* every even name exists (c00000, c00002 ...), odd ones do not */
		snprintf(names[i], sizeof(names[i]), i % 2 ? "z%05d" : "c%05d", i / 2);
		np[i] = names[i];
	}
	memset(out, 0xff, sizeof(out));
	assert_int_equal(maru_exists(x->c, BIG_DIR, np, N, out), 0);
	for (i = 0; i < N; i++)
		assert_int_equal(out[i], i % 2 ? 0 : 1);
	assert_int_equal(fake_ops(&x->f, OP_EXISTS), 2);	/* 4096 + 904 */
	assert_int_equal(maru_exists(x->c, BIG_DIR, np, 0, NULL), 0);
	assert_int_equal(fake_ops(&x->f, OP_EXISTS), 2);
	np[3] = "a/b";
	assert_int_equal(maru_exists(x->c, BIG_DIR, np, 10, out), -EINVAL);
	assert_int_equal(fake_ops(&x->f, OP_EXISTS), 2);
	assert_int_equal(maru_exists(x->c, BIG_DIR, NULL, 1, out), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup_getattr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkdir_rmdir_unlink_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_names_not_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_setattr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_paging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exists_batches, setup, teardown),
	};

	return cmocka_run_group_tests_name("ns", tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/gen_corpus.c: writes the seed corpus of the fuzz harnesses:
 * OUT/proto/ gets one valid request frame and one valid reply frame of every
 * op (as a client receives it), OUT/server/ short client sessions in the
 * server_fuzz input format (fuzz.h) that between them send every request op
 * in a state where it succeeds, plus the usual failures (stale generation,
 * request before HELLO, bad name, retried reqid, pool full). The frames are
 * built from the structs of lib/common/proto/proto.h, so a layout change shows up here.
 * Seeds are small files meant to be committed; regenerate them with
 *
 *	gen_corpus tests/fuzz/corpus
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "proto.h"

static const char *out_dir;

static void die(const char *what)
{
	fprintf(stderr, "gen_corpus: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(struct pbuf *b, const void *p, size_t n)
{
	if (proto_buf_put(b, p, n))
		die("out of memory");
}

static void save(const char *sub, const char *name, const struct pbuf *b)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, sub);
	if (mkdir(path, 0755) && errno != EEXIST)
		die(path);
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f))
		die(path);
}

/* A header then up to two payload pieces. */
static void frame(struct pbuf *b, uint16_t op, uint64_t reqid, int32_t status,
		  const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct proto_hdr h;

	proto_hdr_init(&h, op, (uint32_t)(n1 + n2), reqid, FUZZ_GENERATION, status);
	put(b, &h, sizeof(h));
	put(b, p1, n1);
	put(b, p2, n2);
}

/* ---- request bodies ---- */

static size_t name_req(uint8_t *buf, uint64_t parent, const char *name)
{
	struct proto_name_req r = {
		.parent = parent, .mode = 040755, .namelen = (uint16_t)strlen(name),
	};

	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, r.namelen);
	return sizeof(r) + r.namelen;
}

static size_t create_req(uint8_t *buf, uint64_t parent, const char *name,
			 uint64_t from_ino, uint32_t flags, uint64_t hint)
{
	struct proto_create_req r = {
		.parent = parent, .from_ino = from_ino, .size_hint = hint,
		.flags = flags, .mode = 0100644, .namelen = (uint16_t)strlen(name),
	};

	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, r.namelen);
	return sizeof(r) + r.namelen;
}

static size_t open_req(uint8_t *buf, uint64_t ino, uint64_t parent, const char *name)
{
	struct proto_open_req r = { .ino = ino, .parent = parent,
				    .namelen = (uint16_t)strlen(name) };

	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, r.namelen);
	return sizeof(r) + r.namelen;
}

static size_t rename_req(uint8_t *buf, uint64_t op_, const char *o, uint64_t np,
			 const char *n, uint32_t flags)
{
	struct proto_rename_req r = {
		.oldparent = op_, .newparent = np, .flags = flags,
		.oldlen = (uint16_t)strlen(o), .newlen = (uint16_t)strlen(n),
	};

	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), o, r.oldlen);
	memcpy(buf + sizeof(r) + r.oldlen, n, r.newlen);
	return sizeof(r) + r.oldlen + r.newlen;
}

static size_t symlink_req(uint8_t *buf, uint64_t parent, const char *name,
			  const char *target)
{
	struct proto_symlink_req r = { .parent = parent, .namelen = (uint16_t)strlen(name),
				       .targetlen = (uint16_t)strlen(target) };

	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, r.namelen);
	memcpy(buf + sizeof(r) + r.namelen, target, r.targetlen);
	return sizeof(r) + r.namelen + r.targetlen;
}

static size_t link_req(uint8_t *buf, uint64_t ino, uint64_t parent, const char *name)
{
	struct proto_link_req r = { .ino = ino, .newparent = parent,
				    .namelen = (uint16_t)strlen(name) };

	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, r.namelen);
	return sizeof(r) + r.namelen;
}

static size_t mknod_req(uint8_t *buf, uint64_t parent, const char *name, uint32_t mode,
			uint32_t rdev)
{
	struct proto_mknod_req r = { .parent = parent, .mode = mode, .rdev = rdev,
				     .namelen = (uint16_t)strlen(name) };

	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, r.namelen);
	return sizeof(r) + r.namelen;
}

static size_t exists_req(uint8_t *buf, uint64_t parent, const char *const *names, int n)
{
	struct proto_exists_req r = { .parent = parent, .count = (uint32_t)n };
	size_t off = sizeof(r);
	int i;

	memcpy(buf, &r, sizeof(r));
	for (i = 0; i < n; i++) {
		uint16_t l = (uint16_t)strlen(names[i]);

		memcpy(buf + off, &l, sizeof(l));
		memcpy(buf + off + sizeof(l), names[i], l);
		off += sizeof(l) + l;
	}
	return off;
}

/* ---- server sessions ---- */

/* One scenario: the setup bytes, then (selector, frame) pairs. */
struct scen {
	struct pbuf b;
	uint64_t reqid[FUZZ_CONNS];
};

static void scen_start(struct scen *s, uint8_t flags, uint8_t pool)
{
	uint8_t setup[FUZZ_SETUP_BYTES] = { flags, pool, 0, 0 };

	memset(s, 0, sizeof(*s));
	put(&s->b, setup, sizeof(setup));
}

static void req_gen(struct scen *s, uint8_t sel, uint16_t op, uint64_t gen,
		    const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct proto_hdr h;
	int c = sel & FUZZ_SEL_CONN;

	put(&s->b, &sel, 1);
	proto_hdr_init(&h, op, (uint32_t)(n1 + n2), ++s->reqid[c], gen, 0);
	put(&s->b, &h, sizeof(h));
	put(&s->b, p1, n1);
	put(&s->b, p2, n2);
}

static void req(struct scen *s, uint8_t sel, uint16_t op, const void *p1, size_t n1,
		const void *p2, size_t n2)
{
	req_gen(s, sel, op, FUZZ_GENERATION, p1, n1, p2, n2);
}

static void hello(struct scen *s, uint8_t sel, uint8_t reclaim_k)
{
	struct proto_hello_req r = { .proto_version = PROTO_VERSION, .pid = 42 };

	memcpy(r.client_name, "gen_corpus", 10);
	if (reclaim_k) {
		r.flags = HELLO_F_RECLAIM;
		r.token[0] = reclaim_k;
	}
	req(s, sel, OP_HELLO, &r, sizeof(r), NULL, 0);
}

static void hello_rdma(struct scen *s, uint8_t sel)
{
	struct proto_hello_req r = { .flags = HELLO_F_RDMA, .proto_version = PROTO_VERSION,
				     .pid = 42 };

	memcpy(r.client_name, "gen_corpus", 10);
	req(s, sel, OP_HELLO, &r, sizeof(r), NULL, 0);
}

static void rkey_op(struct scen *s, uint8_t sel, uint64_t ino, uint32_t flags)
{
	struct proto_rkey_req r = { .ino = ino, .flags = flags };

	req(s, sel, OP_RKEY, &r, sizeof(r), NULL, 0);
}

static void ino_op(struct scen *s, uint8_t sel, uint16_t op, uint64_t ino)
{
	struct proto_ino_req r = { .ino = ino };

	req(s, sel, op, &r, sizeof(r), NULL, 0);
}

static void name_op(struct scen *s, uint8_t sel, uint16_t op, uint64_t parent,
		    const char *name)
{
	uint8_t buf[sizeof(struct proto_name_req) + PROTO_NAME_MAX];

	req(s, sel, op, buf, name_req(buf, parent, name), NULL, 0);
}

static void create(struct scen *s, uint8_t sel, uint64_t parent, const char *name,
		   uint64_t from, uint32_t flags, uint64_t hint)
{
	uint8_t buf[sizeof(struct proto_create_req) + PROTO_NAME_MAX];

	req(s, sel, OP_CREATE, buf, create_req(buf, parent, name, from, flags, hint), NULL, 0);
}

static void write_op(struct scen *s, uint8_t sel, uint64_t ino, uint64_t off, uint32_t len)
{
	struct proto_io_req r = { .ino = ino, .off = off, .len = len };
	uint8_t *data = malloc(len ? len : 1);
	uint32_t i;

	if (!data)
		die("out of memory");
	for (i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 7 + ino);
	req(s, sel, OP_WRITE, &r, sizeof(r), data, len);
	free(data);
}

static void read_op(struct scen *s, uint8_t sel, uint64_t ino, uint64_t off, uint32_t len)
{
	struct proto_io_req r = { .ino = ino, .off = off, .len = len };

	req(s, sel, OP_READ, &r, sizeof(r), NULL, 0);
}

static void size_op(struct scen *s, uint8_t sel, uint16_t op, uint64_t ino, uint64_t size)
{
	struct proto_size_req r = { .ino = ino, .size = size };

	req(s, sel, op, &r, sizeof(r), NULL, 0);
}

static void publish(struct scen *s, uint8_t sel, uint64_t ino, uint64_t size)
{
	struct proto_publish_req r = { .ino = ino, .size = size };

	req(s, sel, OP_PUBLISH, &r, sizeof(r), NULL, 0);
}

static void open_op(struct scen *s, uint8_t sel, uint64_t ino, uint64_t parent,
		    const char *name)
{
	uint8_t buf[sizeof(struct proto_open_req) + PROTO_NAME_MAX];

	req(s, sel, OP_OPEN, buf, open_req(buf, ino, parent, name), NULL, 0);
}

static void rename_op(struct scen *s, uint8_t sel, uint64_t op_, const char *o,
		      uint64_t np, const char *n, uint32_t flags)
{
	uint8_t buf[sizeof(struct proto_rename_req) + 2 * PROTO_NAME_MAX];

	req(s, sel, OP_RENAME, buf, rename_req(buf, op_, o, np, n, flags), NULL, 0);
}

static void scen_save(struct scen *s, const char *name)
{
	save("server", name, &s->b);
	proto_buf_free(&s->b);
}

/* Ids come from one counter starting at 2 (root is 1): the seeds rely on it. */
/* AUTH with a key name (proto_auth_named), twice: the harness fills the mac. */
static void auth_named(struct scen *s, uint8_t sel)
{
	struct proto_auth_named an = { .a = { .nonce = { 4, 5, 6 } } };

	snprintf(an.key_name, sizeof(an.key_name), "%s", FUZZ_TENANT);
	req(s, sel, OP_AUTH, &an, sizeof(an), NULL, 0);
	req(s, sel, OP_AUTH, &an, sizeof(an), NULL, 0);
	hello(s, sel, 0);
}

/*
 * A scoped session (FUZZ_F_TENANT: tenant "t", root /t = id 2) next to the
 * administrator, who makes /o (3) and /o/f (4): the tenant names ids
 * outside, renames and links across its root, subscribes; a ro tenant
 * tries every change.
 */
static void tenant_seeds(void)
{
	struct proto_auth auth = { .nonce = { 1, 2, 3 } };
	struct proto_readdir_req rd = { .dir = 1, .max_entries = 16 };
	struct proto_subscribe_req sub = { 0 };
	struct proto_hint_req hint = { .ino = 4, .hint = 1 };
	uint8_t buf[512];
	struct scen s;

	scen_start(&s, FUZZ_F_KEY | FUZZ_F_TENANT, 60);
	req(&s, 1, OP_AUTH, &auth, sizeof(auth), NULL, 0);
	req(&s, 1, OP_AUTH, &auth, sizeof(auth), NULL, 0);
	hello(&s, 1, 0);
	name_op(&s, 1, OP_MKDIR, 1, "o");
	create(&s, 1, 3, "f", 0, 0, 10);
	write_op(&s, 1, 4, 0, 10);
	publish(&s, 1, 4, 10);
	auth_named(&s, 2);
	req(&s, 2, OP_SUBSCRIBE, &sub, sizeof(sub), NULL, 0);
	auth_named(&s, 0);
	ino_op(&s, 0, OP_GETATTR, 1);
	name_op(&s, 0, OP_MKDIR, 1, "d");
	name_op(&s, 0, OP_LOOKUP, 3, "f");
	ino_op(&s, 0, OP_GETATTR, 4);
	open_op(&s, 0, 4, 0, "");
	open_op(&s, 0, 0, 3, "f");
	rename_op(&s, 0, 1, "d", 3, "d2", 0);
	req(&s, 0, OP_LINK, buf, link_req(buf, 4, 1, "l"), NULL, 0);
	req(&s, 0, OP_HINT, &hint, sizeof(hint), NULL, 0);
	create(&s, 0, 1, "g", 0, 0, 10);
	write_op(&s, 0, 6, 0, 10);
	publish(&s, 0, 6, 10);
	req(&s, 0, OP_READDIR, &rd, sizeof(rd), NULL, 0);
	req(&s, 0, OP_STATS, NULL, 0, NULL, 0);
	req(&s, 0, OP_STATFS, NULL, 0, NULL, 0);
	scen_save(&s, "tenant");

	scen_start(&s, FUZZ_F_KEY | FUZZ_F_TENANT | FUZZ_F_TENANT_RO, 60);
	auth_named(&s, 0);
	name_op(&s, 0, OP_MKDIR, 1, "x");
	create(&s, 0, 1, "y", 0, 0, 10);
	name_op(&s, 0, OP_UNLINK, 1, "y");
	req(&s, 0, OP_READDIR, &rd, sizeof(rd), NULL, 0);
	ino_op(&s, 0, OP_GETATTR, 1);
	scen_save(&s, "tenant-ro");
}

static void server_seeds(void)
{
	static const char *const names[] = { "a", "b", "missing" };
	struct proto_setattr_req sa = { .ino = 2, .mask = SETATTR_MODE | SETATTR_MTIME,
					.mode = 040700, .mtime_ns = 1000 };
	struct proto_readdir_req rd = { .dir = 1, .max_entries = 16 };
	struct proto_hint_req hint = { .ino = 2, .hint = 1 };
	struct proto_subscribe_req sub = { 0 };
	struct proto_auth auth = { .nonce = { 1, 2, 3 } };
	uint8_t buf[512];
	struct scen s;
	int i;

	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	req(&s, 0, OP_PING, NULL, 0, NULL, 0);
	req(&s, 0, OP_STATFS, NULL, 0, NULL, 0);
	req(&s, 0, OP_STATS, NULL, 0, NULL, 0);
	scen_save(&s, "ping-statfs-stats");

	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	name_op(&s, 0, OP_MKDIR, 1, "a");
	name_op(&s, 0, OP_LOOKUP, 1, "a");
	ino_op(&s, 0, OP_GETATTR, 2);
	req(&s, 0, OP_SETATTR, &sa, sizeof(sa), NULL, 0);
	name_op(&s, 0, OP_MKDIR, 2, "sub");
	req(&s, 0, OP_READDIR, &rd, sizeof(rd), NULL, 0);
	req(&s, 0, OP_EXISTS, buf, exists_req(buf, 1, names, 3), NULL, 0);
	rename_op(&s, 0, 1, "a", 1, "b", 0);
	name_op(&s, 0, OP_RMDIR, 1, "b");
	name_op(&s, 0, OP_RMDIR, 2, "sub");
	name_op(&s, 0, OP_RMDIR, 1, "b");
	scen_save(&s, "namespace");

	/* f is version 2, the symlink 3, the FIFO 4 */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "f", 0, CREATE_EXCL, 10);
	publish(&s, 0, 2, 0);
	req(&s, 0, OP_SYMLINK, buf, symlink_req(buf, 1, "l", "f"), NULL, 0);
	ino_op(&s, 0, OP_READLINK, 3);
	req(&s, 0, OP_LINK, buf, link_req(buf, 2, 1, "g"), NULL, 0);
	req(&s, 0, OP_MKNOD, buf, mknod_req(buf, 1, "p", 0010644, 0), NULL, 0);
	rename_op(&s, 0, 1, "f", 1, "g", 0);
	name_op(&s, 0, OP_UNLINK, 1, "f");
	name_op(&s, 0, OP_LOOKUP, 1, "g");
	scen_save(&s, "links");

	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "f", 0, CREATE_EXCL, 100);
	write_op(&s, 0, 2, 0, 100);
	publish(&s, 0, 2, 100);
	open_op(&s, 0, 0, 1, "f");
	read_op(&s, 0, 2, 0, 4096);
	ino_op(&s, 0, OP_EXTENTS, 2);
	req(&s, 0, OP_HINT, &hint, sizeof(hint), NULL, 0);
	ino_op(&s, 0, OP_RELEASE, 2);
	ino_op(&s, 0, OP_RELEASE, 2);
	name_op(&s, 0, OP_UNLINK, 1, "f");
	scen_save(&s, "write-publish-read");

	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "g", 0, 0, 0);
	size_op(&s, 0, OP_RESERVE, 2, 3 * 4096);
	write_op(&s, 0, 2, 6000, 50);
	size_op(&s, 0, OP_TRUNCATE, 2, 5000);
	size_op(&s, 0, OP_TRUNCATE, 2, 9000);
	ino_op(&s, 0, OP_ABANDON, 2);
	scen_save(&s, "reserve-truncate-abandon");

	/* Copy-on-open then replace: version 3 starts as version 2's bytes. */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "f", 0, 0, 0);
	write_op(&s, 0, 2, 0, 5000);
	publish(&s, 0, 2, 5000);
	create(&s, 0, 0, "", 2, CREATE_COPY, 0);
	write_op(&s, 0, 3, 100, 10);
	publish(&s, 0, 3, 5000);
	open_op(&s, 0, 3, 0, "");
	read_op(&s, 0, 3, 4000, 2000);
	scen_save(&s, "create-copy-replace");

	/* Session 2 keeps reading version 2 after session 1 unlinks it. */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	hello(&s, 1, 0);
	create(&s, 0, 1, "f", 0, 0, 0);
	write_op(&s, 0, 2, 0, 3000);
	publish(&s, 0, 2, 3000);
	ino_op(&s, 0, OP_RELEASE, 2);
	open_op(&s, 1, 0, 1, "f");
	name_op(&s, 0, OP_UNLINK, 1, "f");
	read_op(&s, 1, 2, 0, 3000);
	ino_op(&s, 1, OP_GETATTR, 2);
	ino_op(&s, 1, OP_RELEASE, 2);
	scen_save(&s, "two-sessions-orphan");

	/* Drop a connection with a pending version, reclaim it, publish. */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, FUZZ_SEL_DROP, 1, "p", 0, 0, 10);
	hello(&s, 1, 1);
	write_op(&s, 1, 2, 0, 10);
	publish(&s, 1, 2, 10);
	scen_save(&s, "reclaim");

	/* Keyed marud: AUTH twice (the harness fills the second mac). */
	scen_start(&s, FUZZ_F_KEY, 60);
	req(&s, 0, OP_AUTH, &auth, sizeof(auth), NULL, 0);
	req(&s, 0, OP_AUTH, &auth, sizeof(auth), NULL, 0);
	hello(&s, 0, 0);
	name_op(&s, 0, OP_MKDIR, 1, "k");
	req(&s, 1, OP_PING, NULL, 0, NULL, 0);
	scen_save(&s, "auth");

	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	name_op(&s, 0, OP_MKDIR, 1, "e");
	req(&s, 0, OP_SUBSCRIBE, &sub, sizeof(sub), NULL, 0);
	scen_save(&s, "subscribe");

	tenant_seeds();

	/* RKEY on a pending version, after its publish and after the release
	 * (no rdma listener in the fuzzed server: refused each time, and a
	 * HELLO_F_RDMA HELLO is answered with no rdma fields) */
	scen_start(&s, 0, 60);
	hello_rdma(&s, 0);
	create(&s, 0, 1, "r", 0, 0, 4096);
	write_op(&s, 0, 2, 0, 64);
	rkey_op(&s, 0, 2, RKEY_F_WRITE);
	publish(&s, 0, 2, 64);
	rkey_op(&s, 0, 2, 0);
	ino_op(&s, 0, OP_RELEASE, 2);
	rkey_op(&s, 0, 2, 0);
	rkey_op(&s, 0, 2, 2);	/* an unknown flag */
	scen_save(&s, "rkey");

	/* 16 KiB of pool: the third 8 KiB file evicts the first. */
	for (i = 0; i < 2; i++) {
		scen_start(&s, i ? FUZZ_F_EVICT_NONE : 0, 0);
		hello(&s, 0, 0);
		create(&s, 0, 1, "x", 0, 0, 8192);
		publish(&s, 0, 2, 8192);
		ino_op(&s, 0, OP_RELEASE, 2);
		create(&s, 0, 1, "y", 0, 0, 8192);
		publish(&s, 0, 3, 8192);
		ino_op(&s, 0, OP_RELEASE, 3);
		create(&s, 0, 1, "z", 0, 0, 8192);
		write_op(&s, 0, 4, 0, 8192);
		publish(&s, 0, 4, 8192);
		scen_save(&s, i ? "pool-full-noevict" : "pool-full-evict");
	}

	scen_start(&s, FUZZ_F_FEW_LEASES | FUZZ_F_LITTLE_PENDING, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "l", 0, 0, 0);
	publish(&s, 0, 2, 0);
	for (i = 0; i < 5; i++)
		open_op(&s, 0, 0, 1, "l");
	create(&s, 0, 1, "m", 0, 0, 40 << 10);
	scen_save(&s, "limits");

	/* Failures: before HELLO, bad name, stale generation, retried reqid. */
	scen_start(&s, 0, 60);
	name_op(&s, 2, OP_MKDIR, 1, "early");
	hello(&s, 0, 0);
	name_op(&s, 0, OP_MKDIR, 1, "..");
	req_gen(&s, 0, OP_STATFS, FUZZ_GENERATION + 1, NULL, 0, NULL, 0);
	name_op(&s, 0, OP_MKDIR, 1, "r");
	s.reqid[0]--;
	name_op(&s, 0, OP_MKDIR, 1, "r");
	name_op(&s, 0, OP_LOOKUP, 1, "nope");
	scen_save(&s, "errors");

	/*
	 * Two pending files grown in turns get one extent per step: A's
	 * RESERVE reply outgrows the reply cache (SESSION_CACHE_PAYLOAD), so
	 * its retry is rebuilt from the version instead of replayed.
	 */
	scen_start(&s, 0, 200);
	hello(&s, 0, 0);
	create(&s, 0, 1, "A", 0, 0, 0);
	create(&s, 0, 1, "B", 0, 0, 0);
	for (i = 1; i <= 260; i++) {
		size_op(&s, 0, OP_RESERVE, 2, (uint64_t)i * 4096);
		size_op(&s, 0, OP_RESERVE, 3, (uint64_t)i * 4096);
	}
	s.reqid[0] -= 2;
	size_op(&s, 0, OP_RESERVE, 2, 260 * 4096);
	scen_save(&s, "reply-cache-too-large");

	/* Renames over what exists: files, directories, subtrees. */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "f", 0, 0, 4096);
	publish(&s, 0, 2, 4096);
	create(&s, 0, 1, "g", 0, 0, 4096);
	publish(&s, 0, 3, 4096);
	ino_op(&s, 0, OP_RELEASE, 2);
	rename_op(&s, 0, 1, "f", 1, "g", PROTO_RENAME_NOREPLACE);
	rename_op(&s, 0, 1, "f", 1, "g", 0);
	name_op(&s, 0, OP_MKDIR, 1, "d1");
	name_op(&s, 0, OP_MKDIR, 1, "d2");
	name_op(&s, 0, OP_MKDIR, 4, "sub");
	rename_op(&s, 0, 1, "d1", 6, "x", 0);
	rename_op(&s, 0, 1, "d2", 1, "d1", 0);
	rename_op(&s, 0, 1, "d1", 1, "g", 0);
	rename_op(&s, 0, 1, "g", 1, "d2", 0);
	rename_op(&s, 0, 1, "d1", 5, "moved", 0);
	rename_op(&s, 0, 1, "d2", 1, "d3", 0);
	name_op(&s, 0, OP_RMDIR, 1, "g");
	ino_op(&s, 0, OP_GETATTR, 3);
	ino_op(&s, 0, OP_RELEASE, 3);
	ino_op(&s, 0, OP_GETATTR, 3);
	scen_save(&s, "rename-over");

	/* A pending version whose name went away, or became a directory. */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "p", 0, 0, 0);
	name_op(&s, 0, OP_UNLINK, 1, "p");
	publish(&s, 0, 2, 0);
	create(&s, 0, 1, "q", 0, 0, 0);
	name_op(&s, 0, OP_MKDIR, 1, "q");
	publish(&s, 0, 3, 0);
	create(&s, 0, 1, "q", 0, CREATE_EXCL, 0);
	open_op(&s, 0, 0, 1, "q");
	name_op(&s, 0, OP_RMDIR, 4, "q");
	create(&s, 0, 4, "tmp.tmp", 0, 0, 100);
	publish(&s, 0, 5, 100);
	create(&s, 0, 4, "tmp.tmp", 0, CREATE_EXCL, 0);
	name_op(&s, 0, OP_RMDIR, 1, "q");
	scen_save(&s, "publish-lost-name");

	/*
	 * Multi-extent pending version trimmed at publish; a new pending
	 * version of a published name listed by READDIR; COPY from an
	 * unleased (LRU) version.
	 */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "r", 0, 0, 0);
	create(&s, 0, 1, "s", 0, 0, 0);
	for (i = 1; i <= 4; i++) {
		size_op(&s, 0, OP_RESERVE, 2, (uint64_t)i * 4096);
		size_op(&s, 0, OP_RESERVE, 3, (uint64_t)i * 4096);
	}
	write_op(&s, 0, 2, 0, 9000);
	publish(&s, 0, 2, 5000);
	ino_op(&s, 0, OP_RELEASE, 2);
	create(&s, 0, 1, "r", 0, CREATE_COPY, 0);
	req(&s, 0, OP_READDIR, &rd, sizeof(rd), NULL, 0);
	size_op(&s, 0, OP_TRUNCATE, 4, 100);
	publish(&s, 0, 4, 100);
	ino_op(&s, 0, OP_ABANDON, 3);
	scen_save(&s, "trim-copy-readdir");

	/*
	 * Enough names and versions to grow the directory's hash tables,
	 * READDIR in pages, then half of everything removed again.
	 */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	for (i = 0; i < 100; i++) {
		snprintf((char *)buf, sizeof(buf), "d%02d", i);
		name_op(&s, 0, OP_MKDIR, 1, (const char *)buf);
	}
	for (i = 0; i < 60; i++) {
		snprintf((char *)buf, sizeof(buf), "f%02d", i);
		create(&s, 0, 2 + i % 4, (const char *)buf, 0, 0, 0);
		publish(&s, 0, 102 + (uint64_t)i, 0);
	}
	for (i = 0; i < 7; i++) {
		struct proto_readdir_req page = { .dir = 1, .cookie = (uint64_t)i * 16,
						  .max_entries = 16 };

		req(&s, 0, OP_READDIR, &page, sizeof(page), NULL, 0);
	}
	for (i = 0; i < 60; i += 2) {
		snprintf((char *)buf, sizeof(buf), "f%02d", i);
		name_op(&s, 0, OP_UNLINK, 2 + (uint64_t)(i % 4), (const char *)buf);
		ino_op(&s, 0, OP_RELEASE, 102 + (uint64_t)i);
	}
	for (i = 50; i < 100; i++) {
		snprintf((char *)buf, sizeof(buf), "d%02d", i);
		name_op(&s, 0, OP_RMDIR, 1, (const char *)buf);
	}
	name_op(&s, 0, OP_LOOKUP, 3, "f01");
	scen_save(&s, "many-names");

	/* A pending file renamed before publish lands on its new name. */
	scen_start(&s, 0, 60);
	hello(&s, 0, 0);
	create(&s, 0, 1, "old", 0, 0, 0);
	rename_op(&s, 0, 1, "old", 1, "new", PROTO_RENAME_NOREPLACE);
	publish(&s, 0, 2, 0);
	name_op(&s, 0, OP_LOOKUP, 1, "new");
	scen_save(&s, "rename-pending");
}

/* ---- proto seeds: one request and one reply frame per op ---- */

static void hintv_seeds(void);
static void proto_save(const char *kind, uint16_t op, const void *p1, size_t n1,
		       const void *p2, size_t n2)
{
	struct pbuf b = { 0 };
	char name[64];
	size_t i;

	snprintf(name, sizeof(name), "%s-%s", kind, proto_op_name(op));
	for (i = 0; name[i]; i++)
		if (name[i] >= 'A' && name[i] <= 'Z')
			name[i] = (char)(name[i] - 'A' + 'a');
	frame(&b, op, 1, 0, p1, n1, p2, n2);
	save("proto", name, &b);
	proto_buf_free(&b);
}

static void proto_req_seeds(void)
{
	static const char *const names[] = { "k1", "k2" };
	struct proto_hello_req hello_r = { .proto_version = PROTO_VERSION };
	struct proto_auth auth = { .nonce = { 9 } };
	struct proto_ino_req ino = { .ino = 2 };
	struct proto_setattr_req sa = { .ino = 2, .mask = SETATTR_UID, .uid = 1 };
	struct proto_readdir_req rd = { .dir = 1, .max_entries = 8 };
	struct proto_size_req sz = { .ino = 2, .size = 4096 };
	struct proto_publish_req pub = { .ino = 2, .size = 10 };
	struct proto_io_req io = { .ino = 2, .len = 8 };
	struct proto_hint_req hint = { .ino = 2, .hint = 2 };
	struct proto_subscribe_req sub = { .after_seq = 3 };
	struct proto_ack_req ack = { .seq = 3 };
	struct proto_rkey_req rkey = { .ino = 2, .flags = RKEY_F_WRITE };
	uint8_t buf[512];

	proto_save("req", OP_PING, NULL, 0, NULL, 0);
	proto_save("req", OP_HELLO, &hello_r, sizeof(hello_r), NULL, 0);
	proto_save("req", OP_AUTH, &auth, sizeof(auth), NULL, 0);
	proto_save("req", OP_STATFS, NULL, 0, NULL, 0);
	proto_save("req", OP_STATS, NULL, 0, NULL, 0);
	proto_save("req", OP_MKDIR, buf, name_req(buf, 1, "dir"), NULL, 0);
	proto_save("req", OP_RMDIR, buf, name_req(buf, 1, "dir"), NULL, 0);
	proto_save("req", OP_LOOKUP, buf, name_req(buf, 1, "name"), NULL, 0);
	proto_save("req", OP_GETATTR, &ino, sizeof(ino), NULL, 0);
	proto_save("req", OP_SETATTR, &sa, sizeof(sa), NULL, 0);
	proto_save("req", OP_RENAME, buf, rename_req(buf, 1, "a", 1, "b", 1), NULL, 0);
	proto_save("req", OP_UNLINK, buf, name_req(buf, 1, "f"), NULL, 0);
	proto_save("req", OP_READDIR, &rd, sizeof(rd), NULL, 0);
	proto_save("req", OP_EXISTS, buf, exists_req(buf, 1, names, 2), NULL, 0);
	proto_save("req", OP_CREATE, buf, create_req(buf, 1, "f", 0, CREATE_EXCL, 64), NULL, 0);
	proto_save("req", OP_RESERVE, &sz, sizeof(sz), NULL, 0);
	proto_save("req", OP_TRUNCATE, &sz, sizeof(sz), NULL, 0);
	proto_save("req", OP_PUBLISH, &pub, sizeof(pub), NULL, 0);
	proto_save("req", OP_ABANDON, &ino, sizeof(ino), NULL, 0);
	proto_save("req", OP_OPEN, buf, open_req(buf, 0, 1, "f"), NULL, 0);
	proto_save("req", OP_RELEASE, &ino, sizeof(ino), NULL, 0);
	proto_save("req", OP_EXTENTS, &ino, sizeof(ino), NULL, 0);
	proto_save("req", OP_READ, &io, sizeof(io), NULL, 0);
	proto_save("req", OP_WRITE, &io, sizeof(io), "01234567", 8);
	proto_save("req", OP_HINT, &hint, sizeof(hint), NULL, 0);
	proto_save("req", OP_SUBSCRIBE, &sub, sizeof(sub), NULL, 0);
	proto_save("req", OP_EVENT_ACK, &ack, sizeof(ack), NULL, 0);
	proto_save("req", OP_SYMLINK, buf, symlink_req(buf, 1, "l", "target"), NULL, 0);
	proto_save("req", OP_READLINK, &ino, sizeof(ino), NULL, 0);
	proto_save("req", OP_LINK, buf, link_req(buf, 2, 1, "g"), NULL, 0);
	proto_save("req", OP_MKNOD, buf, mknod_req(buf, 1, "p", 0010644, 0), NULL, 0);
	proto_save("req", OP_RKEY, &rkey, sizeof(rkey), NULL, 0);
	hintv_seeds();
}

/* HINTV / HINT_WAIT: body, request id padded to 8, ranges. */
static void hintv_seeds(void)
{
	struct {
		struct proto_hintv_req r;
		char id[8];
		struct proto_hint_range g[2];
	} m = { { HINT_A_READ, 2, 3, 0, 0 }, "r17", { { 2, 0, 0 }, { 2, 4096, 4096 } } };

	proto_save("req", OP_HINTV, &m, sizeof(m), NULL, 0);
	m.r.action = HINT_A_READ_WAIT;
	m.r.timeout_ms = 20;
	proto_save("req", OP_HINT_WAIT, &m, sizeof(m), NULL, 0);
}

static void proto_rep_seeds(void)
{
	static const uint8_t yes_no[] = { 1, 0, 1 };
	struct proto_hello_rep *hello_r = calloc(1, sizeof(*hello_r));
	struct proto_auth auth = { .nonce = { 7 }, .mac = { 8 } };
	struct proto_statfs st = { .capacity = 1 << 20, .free = 1 << 19, .block = 4096 };
	struct proto_attr a = { .ino = 2, .parent = 1, .size = 10, .nextents = 2 };
	struct proto_extent ext[2] = { { 2 << 20, 4096 }, { 3 << 20, 8192 } };
	struct proto_readdir_rep rr = { .count = 2, .eof = 1 };
	struct proto_dirent d1 = { .ino = 2, .cookie = 1, .state = 1, .namelen = 3 };
	struct proto_dirent d2 = { .ino = 3, .cookie = 2, .state = 3, .namelen = 8 };
	struct proto_io_rep io = { .done = 8, .size = 8 };
	struct proto_rename_rep ren = { .seq = 4 };
	struct proto_event ev = { .seq = 4, .type = 7, .ino = 2, .parent = 1, .parent2 = 1,
				  .namelen = 1, .name2len = 1, .pathlen = 2, .path2len = 2 };
	struct proto_rkey_rep rk = { .count = 2, .flags = RDMA_F_WINDOWS };
	struct proto_rkey keys[2] = { { .off = 2 << 20, .len = 4096, .addr = 2 << 20, .rkey = 0x1180 },
				      { .off = 3 << 20, .len = 8192, .addr = 3 << 20, .rkey = 0x1281 } };
	struct pbuf b = { 0 };

	if (!hello_r)
		die("out of memory");
	snprintf(hello_r->pool_path, sizeof(hello_r->pool_path), "/dev/shm/marud-pool");
	proto_save("rep", OP_PING, NULL, 0, NULL, 0);
	proto_save("rep", OP_HELLO, hello_r, sizeof(*hello_r), NULL, 0);
	proto_save("rep", OP_AUTH, &auth, sizeof(auth), NULL, 0);
	proto_save("rep", OP_STATFS, &st, sizeof(st), NULL, 0);
	proto_save("rep", OP_STATS, "marud_names 1\n", 14, NULL, 0);
	proto_save("rep", OP_OPEN, &a, sizeof(a), ext, sizeof(ext));
	a.nextents = 0;
	proto_save("rep", OP_LOOKUP, &a, sizeof(a), NULL, 0);
	put(&b, &rr, sizeof(rr));
	put(&b, &d1, sizeof(d1));
	put(&b, "dir\0\0\0\0\0", 8);
	put(&b, &d2, sizeof(d2));
	put(&b, "file.bin", 8);
	proto_save("rep", OP_READDIR, b.data, b.len, NULL, 0);
	proto_buf_free(&b);
	proto_save("rep", OP_EXISTS, yes_no, sizeof(yes_no), NULL, 0);
	proto_save("rep", OP_READ, "bytes", 5, NULL, 0);
	proto_save("rep", OP_WRITE, &io, sizeof(io), NULL, 0);
	proto_save("rep", OP_EVENT, &ev, sizeof(ev), "ab/a/b", 6);
	proto_save("rep", OP_RENAME, &ren, sizeof(ren), NULL, 0);
	proto_save("rep", OP_READLINK, "target", 6, NULL, 0);
	proto_save("rep", OP_SYMLINK, &a, sizeof(a), NULL, 0);
	proto_save("rep", OP_RKEY, &rk, sizeof(rk), keys, sizeof(keys));
	/* a HELLO answered with the rdma listener (HELLO_F_RDMA) */
	hello_r->rdma_port = 18515;
	hello_r->rdma_flags = RDMA_F_WINDOWS;
	snprintf(hello_r->rdma_host, sizeof(hello_r->rdma_host), "127.0.0.1");
	frame(&b, OP_HELLO, 1, 0, hello_r, sizeof(*hello_r), NULL, 0);
	save("proto", "rep-hello-rdma", &b);
	proto_buf_free(&b);
	free(hello_r);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	if (mkdir(out_dir, 0755) && errno != EEXIST)
		die(out_dir);
	proto_req_seeds();
	proto_rep_seeds();
	server_seeds();
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/server_fuzz.c: libFuzzer harness of marud's request handling.
 * Each input (format in fuzz.h) gets a fresh marud server over a small shm
 * pool (a few KiB of data after the 2 MiB superblock area) with no listener
 * and no thread; its frames are fed, one at a time, into up to four
 * connections through the fuzzing seam (server.h, in conn.c): the harness
 * writes the frame into one end of a socketpair and the server reads,
 * checks, gates and dispatches it on this thread into the real directory
 * and allocator, exactly as a connection thread would. After every frame
 * the harness reads what marud answered and holds it to what a client
 * accepts: a valid header echoing the request's op and reqid with marud's
 * generation, a status that is 0 or -errno with no payload on error, a
 * payload that proto_rep_check() accepts, at most one reply per request. After the last frame it drops
 * every connection and stops the server, which ends every session and runs
 * dir_check(): the byte accounting must come back exact. ASan, UBSan and
 * LeakSanitizer watch all of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "conf.h"
#include "fuzz.h"
#include "keyfile.h"
#include "proto.h"
#include "server.h"

#define FUZZ_CHECK(cond)                                                         \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "server_fuzz: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

#define TOKENS_KEPT	16
#define SOCK_BUF	(1 << 20)

struct fconn {
	struct conn *c;
	int fd;			/* the client's end */
	int sfd;		/* marud's end */
	bool have_ns;		/* marud's AUTH nonce seen */
	uint8_t ns[32];
};

struct fuzz {
	struct server *srv;
	uint8_t key[CONFIG_KEY_BYTES];
	uint8_t tkey[CONFIG_KEY_BYTES];	/* FUZZ_F_TENANT: the tenant's key */
	struct fconn conns[FUZZ_CONNS];
	uint8_t tokens[TOKENS_KEPT][16];
	unsigned int ntokens;
	uint8_t *rbuf;		/* replies read back */
	size_t rlen, rcap;
	bool trace;		/* FUZZ_TRACE set: log every reply */
};

static char pool_path[64];

static void pool_unlink(void)
{
	unlink(pool_path);
}

/* One shm pool file per process, reused by every input. */
static const char *pool_name(void)
{
	static char name[48];

	if (!name[0]) {
		snprintf(name, sizeof(name), "marud-fuzz-%ld", (long)getpid());
		snprintf(pool_path, sizeof(pool_path), "/dev/shm/%s", name);
		atexit(pool_unlink);
	}
	return name;
}

static void config_of(const uint8_t *setup, struct config *cfg)
{
	uint64_t blocks = FUZZ_POOL_MIN_BLOCKS + (uint64_t)setup[1] * 4;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->pool, sizeof(cfg->pool), "shm:%s", pool_name());
	cfg->size = (2ULL << 20) + blocks * 4096;
	cfg->eviction = setup[0] & FUZZ_F_EVICT_NONE ? DIR_EVICT_NONE : DIR_EVICT_LRU;
	cfg->grace_ms = 30000;
	cfg->max_conns = 16;
	cfg->max_frame = FUZZ_MAX_FRAME;
	cfg->max_leases = setup[0] & FUZZ_F_FEW_LEASES ? 4 : 0;
	cfg->max_pending = setup[0] & FUZZ_F_LITTLE_PENDING ? 32 << 10 : 0;
}

static void conn_open(struct fuzz *fz, struct fconn *fc)
{
	int sv[2], sz = SOCK_BUF;

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	/* Every frame and every reply (<= FUZZ_MAX_FRAME) fits: nothing blocks. */
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	FUZZ_CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	fc->fd = sv[0];
	fc->sfd = sv[1];
	fc->have_ns = false;
	FUZZ_CHECK(conn_fuzz_new(fz->srv, fc->sfd, &fc->c) == 0);
}

static void conn_drop(struct fconn *fc)
{
	if (!fc->c)
		return;
	conn_fuzz_free(fc->c);
	close(fc->fd);
	close(fc->sfd);
	fc->c = NULL;
}

/* ---- fill-ins for what only replies tell a client (fuzz.h) ---- */

static void fill_token(struct fuzz *fz, uint8_t *frame, size_t n)
{
	struct proto_hello_req r;
	static const uint8_t zero[15];

	if (n < PROTO_HDR_SIZE + sizeof(r) || !fz->ntokens)
		return;
	memcpy(&r, frame + PROTO_HDR_SIZE, sizeof(r));
	if (!(r.flags & HELLO_F_RECLAIM) || !r.token[0] || memcmp(r.token + 1, zero, 15))
		return;
	memcpy(r.token, fz->tokens[(r.token[0] - 1u) % fz->ntokens], 16);
	memcpy(frame + PROTO_HDR_SIZE, &r, sizeof(r));
}

static void fill_mac(struct fuzz *fz, struct fconn *fc, uint8_t *frame, size_t n)
{
	static const uint8_t zero[32];
	crypto_auth_hmacsha256_state st;
	struct proto_auth a;

	const uint8_t *key = fz->key;

	if (n < PROTO_HDR_SIZE + sizeof(a) || !fc->have_ns)
		return;
	memcpy(&a, frame + PROTO_HDR_SIZE, sizeof(a));
	if (memcmp(a.mac, zero, sizeof(zero)))
		return;
	/* a named AUTH proves the tenant's key (whatever name it carries) */
	if (n >= PROTO_HDR_SIZE + sizeof(struct proto_auth_named))
		key = fz->tkey;
	crypto_auth_hmacsha256_init(&st, key, sizeof(fz->key));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)"maruc", 5);
	crypto_auth_hmacsha256_update(&st, fc->ns, 32);
	crypto_auth_hmacsha256_update(&st, a.nonce, 32);
	crypto_auth_hmacsha256_final(&st, a.mac);
	memcpy(frame + PROTO_HDR_SIZE, &a, sizeof(a));
}

/* ---- replies ---- */

static void read_replies(struct fuzz *fz, struct fconn *fc)
{
	ssize_t n;

	fz->rlen = 0;
	for (;;) {
		if (fz->rcap - fz->rlen < 4096) {
			fz->rcap = fz->rcap ? fz->rcap * 2 : 1 << 16;
			fz->rbuf = realloc(fz->rbuf, fz->rcap);
			FUZZ_CHECK(fz->rbuf != NULL);
		}
		n = read(fc->fd, fz->rbuf + fz->rlen, fz->rcap - fz->rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		fz->rlen += (size_t)n;
	}
	FUZZ_CHECK(n == 0 || errno == EAGAIN || errno == ECONNRESET);
}

static void note_reply(struct fuzz *fz, struct fconn *fc, const struct proto_hdr *h,
		       const uint8_t *p)
{
	if (h->status)
		return;
	if (h->op == OP_HELLO && fz->ntokens < TOKENS_KEPT)
		memcpy(fz->tokens[fz->ntokens++], p + offsetof(struct proto_hello_rep, token), 16);
	if (h->op == OP_AUTH && h->len == sizeof(struct proto_auth)) {
		memcpy(fc->ns, p + offsetof(struct proto_auth, nonce), 32);
		fc->have_ns = true;
	}
}

/* What marud sent back for request req must be what a client accepts. */
static void check_replies(struct fuzz *fz, struct fconn *fc, const struct proto_hdr *req)
{
	size_t off = 0;
	int answers = 0;

	read_replies(fz, fc);
	while (off < fz->rlen) {
		struct proto_hdr h;
		const uint8_t *p;

		FUZZ_CHECK(fz->rlen - off >= sizeof(h));
		memcpy(&h, fz->rbuf + off, sizeof(h));
		off += sizeof(h);
		FUZZ_CHECK(proto_hdr_check(&h, FUZZ_MAX_FRAME) == 0);
		FUZZ_CHECK(fz->rlen - off >= h.len);
		p = fz->rbuf + off;
		off += h.len;
		FUZZ_CHECK(h.generation == FUZZ_GENERATION);
		FUZZ_CHECK(h.status <= 0 && h.status > -4096);
		FUZZ_CHECK(h.status == 0 || h.len == 0);
		if (h.status == 0)
			FUZZ_CHECK(proto_rep_check(h.op, p, h.len) == 0);
		if (h.op == OP_EVENT) {
			FUZZ_CHECK(h.reqid == 0 && req->op == OP_SUBSCRIBE);
			continue;
		}
		if (fz->trace)
			fprintf(stderr, "server_fuzz: conn %d %s reqid %llu: status %d, %u bytes\n",
				(int)(fc - fz->conns), proto_op_name(h.op),
				(unsigned long long)h.reqid, h.status, h.len);
		FUZZ_CHECK(h.op == req->op && h.reqid == req->reqid);
		FUZZ_CHECK(++answers == 1);
		note_reply(fz, fc, &h, p);
	}
}

/* ---- frames ---- */

static void send_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		/* EAGAIN would mean a frame larger than the socket buffer. */
		FUZZ_CHECK(w > 0);
		p += w;
		n -= (size_t)w;
	}
}

/*
 * Feed one frame of n input bytes (want: the bytes the header promised) to
 * connection fc; false when that connection is gone afterwards.
 */
static bool one_frame(struct fuzz *fz, struct fconn *fc, const uint8_t *in, size_t n,
		      size_t want)
{
	struct proto_hdr h = { 0 };
	uint8_t *frame = malloc(n ? n : 1);
	bool cut = n < want, last;
	int rc;

	FUZZ_CHECK(frame != NULL);
	memcpy(frame, in, n);
	memcpy(&h, frame, n < sizeof(h) ? n : sizeof(h));
	if (!cut && h.op == OP_HELLO)
		fill_token(fz, frame, n);
	if (!cut && h.op == OP_AUTH)
		fill_mac(fz, fc, frame, n);
	send_all(fc->fd, frame, n);
	free(frame);
	/* SUBSCRIBE pushes events until the peer hangs up: hang up first. */
	last = cut || h.op == OP_SUBSCRIBE;
	if (last)
		shutdown(fc->fd, SHUT_WR);
	rc = conn_fuzz_request(fc->c);
	check_replies(fz, fc, &h);
	return rc == 0 && !last;
}

static void run_frames(struct fuzz *fz, const uint8_t *data, size_t size)
{
	size_t off = FUZZ_SETUP_BYTES;

	while (off < size) {
		uint8_t sel = data[off++];
		struct fconn *fc = &fz->conns[sel & FUZZ_SEL_CONN];
		size_t want = PROTO_HDR_SIZE, n;
		struct proto_hdr h;

		if (off + sizeof(h) <= size) {
			memcpy(&h, data + off, sizeof(h));
			want += h.len;
		}
		n = size - off < want ? size - off : want;
		if (!fc->c)
			conn_open(fz, fc);
		if (!one_frame(fz, fc, data + off, n, want) || (sel & FUZZ_SEL_DROP))
			conn_drop(fc);
		off += n;
	}
}

static char keys_path[2][64];

static void keys_unlink(void)
{
	unlink(keys_path[0]);
	unlink(keys_path[1]);
}

/* FUZZ_F_TENANT: marud reads a key file (one per process and rights). */
static void tenant_keys(struct fuzz *fz, struct config *cfg, int ro)
{
	char *path = keys_path[!!ro];
	FILE *f;

	FUZZ_CHECK(sodium_init() >= 0);
	if (!path[0]) {
		if (!keys_path[0][0] && !keys_path[1][0])
			atexit(keys_unlink);
		snprintf(path, sizeof(keys_path[0]), "/dev/shm/marud-fuzz-keys-%ld-%s",
			 (long)getpid(), ro ? "ro" : "rw");
		f = fopen(path, "w");
		FUZZ_CHECK(f != NULL);
		fprintf(f, "%s\nadmin secret=%s\nkey %s root=%s rights=%s secret=%s\n",
			KEYFILE_MAGIC, FUZZ_ADMIN_SECRET, FUZZ_TENANT, FUZZ_TENANT_ROOT,
			ro ? "ro" : "rw", FUZZ_TENANT_SECRET);
		FUZZ_CHECK(fchmod(fileno(f), 0600) == 0 && fclose(f) == 0);
	}
	snprintf(cfg->key_file, sizeof(cfg->key_file), "%s", path);
	crypto_generichash(fz->key, sizeof(fz->key), (const uint8_t *)FUZZ_ADMIN_SECRET,
			   strlen(FUZZ_ADMIN_SECRET), NULL, 0);
	crypto_generichash(fz->tkey, sizeof(fz->tkey), (const uint8_t *)FUZZ_TENANT_SECRET,
			   strlen(FUZZ_TENANT_SECRET), NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz fz = { 0 };
	struct config cfg;
	unsigned int i;
	int rc;

	if (size < FUZZ_SETUP_BYTES || size > FUZZ_MAX_INPUT)
		return 0;
	config_of(data, &cfg);
	memset(fz.key, FUZZ_KEY_BYTE, sizeof(fz.key));
	if ((data[0] & FUZZ_F_KEY) && (data[0] & FUZZ_F_TENANT))
		tenant_keys(&fz, &cfg, data[0] & FUZZ_F_TENANT_RO);
	fz.trace = getenv("FUZZ_TRACE") != NULL;
	rc = server_new(&cfg, data[0] & FUZZ_F_KEY ? fz.key : NULL, FUZZ_GENERATION, &fz.srv);
	if (rc) {
		fprintf(stderr, "server_fuzz: server_new over %s: %s\n", cfg.pool, strerror(-rc));
		abort();
	}
	run_frames(&fz, data, size);
	for (i = 0; i < FUZZ_CONNS; i++)
		conn_drop(&fz.conns[i]);
	/* Ends every session and checks the directory's accounting. */
	FUZZ_CHECK(server_stop(fz.srv) == 0);
	server_destroy(fz.srv);
	free(fz.rbuf);
	return 0;
}

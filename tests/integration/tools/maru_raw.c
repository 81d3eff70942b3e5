/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_raw.c: marufs-design(7) §8 checked on the wire. Speaks
 * the protocol directly (lib/common/proto/proto.h), so it can send what libmaru never
 * would: requests on versions another session owns, writes through a lease,
 * offsets and lengths outside a version, oversized frames, more connections
 * than marud allows. Each check prints one line; any surprise exits 1.
 *
 *   maru_raw URI owner	another session may not write, reserve, truncate,
 *			publish, abandon, read or map a pending version; a
 *			lease may not be written, published or truncated;
 *			ids, offsets and lengths outside what the session
 *			holds give EPERM/EINVAL/EFBIG; marud keeps serving
 *   maru_raw URI frame MAX	a frame over MAX is answered with EMSGSIZE and
 *			the connection closed, at once
 *   maru_raw URI conns N	N connections are served, the next is refused at
 *			once with EUSERS; after one closes, a new one works
 *   maru_raw URI readdir MAX	a READDIR asking for 2^32-1 entries of a
 *			directory with more than fit in a MAX-byte frame gets
 *			one frame's worth, and all of them in a few batches
 *   maru_raw URI leases N	a session holds N leases; one more is EMFILE
 *   maru_raw URI pending BYTES	a session's pending versions hold BYTES; a
 *			write needing more is EDQUOT, and after an abandon fits
 */
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include "maru_tool.h"
#include "proto.h"
#include "sockio.h"
#include "addr.h"

struct raw {
	int fd;
	uint64_t gen, reqid;
};

static struct maru_addr addr;
static uint8_t rep[PROTO_MAX_FRAME];
static uint32_t replen;

#define EXPECT(what, got, want) do {					\
	int _g = (got), _w = (want);					\
	if (_g != _w) {							\
		fprintf(stderr, "maru_raw: %s: got %d (%s), expected %d (%s)\n", \
			what, _g, strerror(-_g), _w, strerror(-_w));	\
		exit(1);						\
	}								\
	printf("%-52s %s\n", what, _w ? strerror(-_w) : "ok");	\
} while (0)

/* One request, its reply into rep; the status, or -ECONNRESET if closed. */
static int call2(struct raw *r, uint16_t op, const void *p1, size_t n1, const void *p2,
		 size_t n2)
{
	struct proto_hdr h;
	int rc;

	proto_hdr_init(&h, op, (uint32_t)(n1 + n2), ++r->reqid, r->gen, 0);
	/* a refused frame may be cut short: its answer is still there to read */
	proto_send(r->fd, &h, p1, n1, p2, n2);
	rc = sock_read_full(r->fd, &h, sizeof(h));
	if (rc)
		return -ECONNRESET;
	CHECK(h.magic == PROTO_MAGIC && h.len <= sizeof(rep));
	replen = h.len;
	if (h.len && sock_read_full(r->fd, rep, h.len))
		return -ECONNRESET;
	return h.status;
}

static int call(struct raw *r, uint16_t op, const void *p, size_t n)
{
	return call2(r, op, p, n, NULL, 0);
}

/* Connect and say HELLO (a new session); -errno if refused. */
static int raw_open(struct raw *r)
{
	struct proto_hello_req q = { .proto_version = PROTO_VERSION };
	const struct proto_hello_rep *hr = (const void *)rep;
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = addr_connect(&addr, 2000);
	if (r->fd < 0)
		return r->fd;
	snprintf(q.client_name, sizeof(q.client_name), "maru_raw");
	r->reqid = (uint64_t)-1;	/* HELLO goes out with reqid 0 */
	rc = call(r, OP_HELLO, &q, sizeof(q));
	if (rc == 0) {
		CHECK(replen == sizeof(*hr));
		r->gen = hr->generation;
	}
	return rc;
}

static void raw_close(struct raw *r)
{
	close(r->fd);
	r->fd = -1;
}

/* ---- requests ---- */

static int create(struct raw *r, const char *name, uint64_t hint, uint64_t *ino)
{
	uint8_t b[sizeof(struct proto_create_req) + PROTO_NAME_MAX];
	struct proto_create_req q = { .parent = MARU_ROOT_ID, .size_hint = hint,
				      .mode = 0100644, .namelen = (uint16_t)strlen(name) };
	int rc;

	memcpy(b, &q, sizeof(q));
	memcpy(b + sizeof(q), name, q.namelen);
	rc = call(r, OP_CREATE, b, sizeof(q) + q.namelen);
	if (!rc)
		*ino = ((const struct proto_attr *)rep)->ino;
	return rc;
}

static int open_name(struct raw *r, const char *name, uint64_t *ino)
{
	uint8_t b[sizeof(struct proto_open_req) + PROTO_NAME_MAX];
	struct proto_open_req q = { .parent = MARU_ROOT_ID, .namelen = (uint16_t)strlen(name) };
	int rc;

	memcpy(b, &q, sizeof(q));
	memcpy(b + sizeof(q), name, q.namelen);
	rc = call(r, OP_OPEN, b, sizeof(q) + q.namelen);
	if (!rc)
		*ino = ((const struct proto_attr *)rep)->ino;
	return rc;
}

static int wr(struct raw *r, uint64_t ino, uint64_t off, uint32_t len)
{
	static uint8_t data[65536];
	struct proto_io_req q = { .ino = ino, .off = off, .len = len };

	CHECK(len <= sizeof(data));
	return call2(r, OP_WRITE, &q, sizeof(q), data, len);
}

static int rd(struct raw *r, uint64_t ino, uint64_t off, uint32_t len)
{
	struct proto_io_req q = { .ino = ino, .off = off, .len = len };

	return call(r, OP_READ, &q, sizeof(q));
}

static int by_ino(struct raw *r, uint16_t op, uint64_t ino)
{
	struct proto_ino_req q = { .ino = ino };

	return call(r, op, &q, sizeof(q));
}

static int sized(struct raw *r, uint16_t op, uint64_t ino, uint64_t size)
{
	struct proto_size_req q = { .ino = ino, .size = size };

	return call(r, op, &q, sizeof(q));
}

static int publish(struct raw *r, uint64_t ino, uint64_t size)
{
	struct proto_publish_req q = { .ino = ino, .size = size };

	return call(r, OP_PUBLISH, &q, sizeof(q));
}

/* ---- checks ---- */

static int check_owner(void)
{
	struct raw a, b, c;
	uint64_t pa, pb, lease;

	OK(raw_open(&a));
	OK(raw_open(&b));
	EXPECT("A creates a.bin", create(&a, "a.bin", 8192, &pa), 0);
	EXPECT("A writes its pending version", wr(&a, pa, 0, 100), 0);
	EXPECT("B writes A's pending version", wr(&b, pa, 0, 100), -EPERM);
	EXPECT("B reserves A's pending version", sized(&b, OP_RESERVE, pa, 1 << 20), -EPERM);
	EXPECT("B truncates A's pending version", sized(&b, OP_TRUNCATE, pa, 0), -EPERM);
	EXPECT("B publishes A's pending version", publish(&b, pa, 100), -EPERM);
	EXPECT("B abandons A's pending version", by_ino(&b, OP_ABANDON, pa), -EPERM);
	EXPECT("B reads A's pending version", rd(&b, pa, 0, 100), -EPERM);
	EXPECT("B asks for A's pending extents", by_ino(&b, OP_EXTENTS, pa), -EPERM);
	EXPECT("A publishes over its reservation", publish(&a, pa, 1 << 30), -EINVAL);
	EXPECT("A publishes a.bin", publish(&a, pa, 100), 0);
	EXPECT("B leases a.bin", open_name(&b, "a.bin", &lease), 0);
	CHECK(lease == pa);
	EXPECT("B writes through its lease", wr(&b, lease, 0, 10), -EPERM);
	EXPECT("B truncates through its lease", sized(&b, OP_TRUNCATE, lease, 0), -EPERM);
	EXPECT("B publishes its lease", publish(&b, lease, 100), -EPERM);
	EXPECT("B abandons its lease", by_ino(&b, OP_ABANDON, lease), -EPERM);
	EXPECT("B reads its lease", rd(&b, lease, 0, 100), 0);
	CHECK(replen == 100);
	EXPECT("B reads past the end (nothing, no error)", rd(&b, lease, 1 << 20, 100), 0);
	CHECK(replen == 0);
	EXPECT("B releases its lease", by_ino(&b, OP_RELEASE, lease), 0);
	EXPECT("B releases it again", by_ino(&b, OP_RELEASE, lease), -EINVAL);
	EXPECT("B reads after release", rd(&b, lease, 0, 100), -EPERM);
	EXPECT("B reads a version id nobody has", rd(&b, 1ULL << 60, 0, 100), -EPERM);
	EXPECT("A creates b.bin", create(&a, "b.bin", 0, &pb), 0);
	EXPECT("A writes at an offset that wraps", wr(&a, pb, UINT64_MAX - 10, 100), -EFBIG);
	EXPECT("A publishes b.bin over its size", publish(&a, pb, 1ULL << 40), -EINVAL);
	EXPECT("A abandons b.bin", by_ino(&a, OP_ABANDON, pb), 0);
	EXPECT("A abandons it again", by_ino(&a, OP_ABANDON, pb), -ENOENT);
	/* a malformed request is a protocol violation: that connection closes */
	OK(raw_open(&c));
	EXPECT("C reads more than a READ may carry", rd(&c, lease, 0, PROTO_MAX_IO + 1),
	       -ECONNRESET);
	raw_close(&c);
	/* marud keeps serving both after all that */
	EXPECT("A still served", call(&a, OP_PING, NULL, 0), 0);
	EXPECT("B still served", open_name(&b, "a.bin", &lease), 0);
	raw_close(&a);
	raw_close(&b);
	return 0;
}

/* The connection must be closed within a second: no hang. */
static void expect_closed(struct raw *r, const char *what)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	char c;

	CHECK(poll(&p, 1, 1000) == 1);
	if (recv(r->fd, &c, 1, 0) > 0) {
		fprintf(stderr, "maru_raw: %s: connection still open\n", what);
		exit(1);
	}
	printf("%-52s %s\n", what, "closed");
}

static int check_frame(uint32_t max)
{
	struct raw r;
	uint8_t *big = calloc(1, max + 1);
	struct proto_io_req q = { 0 };
	uint64_t ino;

	CHECK(big);
	OK(raw_open(&r));
	EXPECT("frame of exactly max-frame bytes is read", create(&r, "f.bin", 0, &ino), 0);
	q.ino = ino;
	q.len = max - (uint32_t)sizeof(q);
	EXPECT("WRITE frame of max-frame bytes", call2(&r, OP_WRITE, &q, sizeof(q), big, q.len), 0);
	q.len = max + 1 - (uint32_t)sizeof(q);
	EXPECT("WRITE frame one byte over max-frame", call2(&r, OP_WRITE, &q, sizeof(q), big, q.len),
	       -EMSGSIZE);
	expect_closed(&r, "and then the connection");
	raw_close(&r);
	OK(raw_open(&r));
	EXPECT("a new connection is served", call(&r, OP_PING, NULL, 0), 0);
	raw_close(&r);
	free(big);
	return 0;
}

static int check_conns(int n)
{
	struct raw r[64], extra;
	int i;

	CHECK(n > 0 && n < 64);
	for (i = 0; i < n; i++)
		OK(raw_open(&r[i]));
	printf("%-52s %s\n", "connections up to max-conns", "ok");
	EXPECT("one more connection", raw_open(&extra), -EUSERS);
	raw_close(&extra);
	raw_close(&r[0]);
	usleep(200000);	/* marud notices the close */
	EXPECT("after one closed, a new one", raw_open(&r[0]), 0);
	for (i = 0; i < n; i++)
		raw_close(&r[i]);
	return 0;
}

static int check_readdir(uint32_t max)
{
	struct proto_readdir_req q = { .dir = MARU_ROOT_ID, .max_entries = UINT32_MAX };
	const struct proto_readdir_rep *rr = (const void *)rep;
	uint32_t fit = (max - 8) / (sizeof(struct proto_dirent) + 256), total = 0, batches = 0;
	uint32_t names = fit * 2 + 7, i;
	const uint8_t *e;
	struct raw r;
	uint64_t ino;
	char name[32];

	OK(raw_open(&r));
	for (i = 0; i < names; i++) {
		snprintf(name, sizeof(name), "n%05u", i);
		OK(create(&r, name, 0, &ino));
		OK(publish(&r, ino, 0));
		OK(by_ino(&r, OP_RELEASE, ino));
	}
	do {
		OK(call(&r, OP_READDIR, &q, sizeof(q)));
		CHECK(replen <= max);
		if (rr->count > fit) {
			fprintf(stderr, "maru_raw: READDIR gave %u entries, a frame fits %u\n",
				rr->count, fit);
			exit(1);
		}
		batches++;
		e = rep + sizeof(*rr);
		for (i = 0; i < rr->count; i++) {
			const struct proto_dirent *d = (const void *)e;

			q.cookie = d->cookie;
			/* other checks may have left names in the root: count ours */
			total += d->namelen == 6 && e[sizeof(*d)] == 'n';
			e += (sizeof(*d) + d->namelen + 7) & ~7u;
		}
	} while (!rr->eof && rr->count);
	CHECK(total == names);
	printf("%-52s %u in %u batches of at most %u\n", "READDIR of 2^32-1 entries", total,
	       batches, fit);
	raw_close(&r);
	return 0;
}

static int check_leases(int n)
{
	struct raw r;
	uint64_t ino, l;
	int i;

	OK(raw_open(&r));
	OK(create(&r, "l.bin", 0, &ino));
	OK(publish(&r, ino, 0));
	OK(by_ino(&r, OP_RELEASE, ino));
	for (i = 0; i < n; i++)
		OK(open_name(&r, "l.bin", &l));
	printf("%-52s %s\n", "leases up to max-leases", "ok");
	EXPECT("one more lease", open_name(&r, "l.bin", &l), -EMFILE);
	EXPECT("after a release, one more", by_ino(&r, OP_RELEASE, l), 0);
	EXPECT("lease again", open_name(&r, "l.bin", &l), 0);
	raw_close(&r);
	return 0;
}

static int check_pending(uint64_t bytes)
{
	struct raw r;
	uint64_t a, b;

	OK(raw_open(&r));
	EXPECT("pending version of max-pending bytes", create(&r, "p1.bin", bytes, &a), 0);
	EXPECT("a second one (over max-pending)", create(&r, "p2.bin", 0, &b), 0);
	EXPECT("writing it beyond max-pending", wr(&r, b, 0, 4096), -EDQUOT);
	EXPECT("reserving beyond max-pending", sized(&r, OP_RESERVE, b, 4096), -EDQUOT);
	EXPECT("abandon the first", by_ino(&r, OP_ABANDON, a), 0);
	EXPECT("now the write fits", wr(&r, b, 0, 4096), 0);
	raw_close(&r);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 3 || addr_parse(argv[1], &addr)) {
		fprintf(stderr, "usage: maru_raw URI owner|frame MAX|conns N|readdir MAX\n");
		return 2;
	}
	if (!strcmp(argv[2], "owner"))
		return check_owner();
	if (argc == 4 && !strcmp(argv[2], "frame"))
		return check_frame((uint32_t)strtoul(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[2], "conns"))
		return check_conns((int)strtol(argv[3], NULL, 10));
	if (argc == 4 && !strcmp(argv[2], "leases"))
		return check_leases((int)strtol(argv[3], NULL, 10));
	if (argc == 4 && !strcmp(argv[2], "pending"))
		return check_pending(strtoull(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[2], "readdir"))
		return check_readdir((uint32_t)strtoul(argv[3], NULL, 0));
	fprintf(stderr, "maru_raw: unknown check %s\n", argv[2]);
	return 2;
}

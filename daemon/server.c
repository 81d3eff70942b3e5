// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/server.c: marud's server. It owns the pool mapping, the allocator,
 * the directory and the session table for the life of the process, the
 * listening sockets and their accept loop, one thread per connection, the
 * AUTH and HELLO handshakes, the table of request handlers, bulk READ/WRITE
 * between sockets and pool memory, the event push of SUBSCRIBE, the registry
 * of subscribers and their acknowledgements (close-to-open across mounts:
 * a change waits, bounded, until the other sessions' subscribers applied
 * it) and the Prometheus STATS text.
 *
 * Locks: conns_lock guards the connection list and count; subs_lock guards
 * the subscriber registry (its acked/acking/missed fields) and the list of
 * lock-holding changes waiting for acknowledgements; sub.wlock orders
 * the writes of a subscriber's two threads on its socket. No lock is taken
 * under another of these, and none is held across a dir_*() call. Handlers
 * call dir_*() (which take the dir lock inside) and session_*() (table lock,
 * cache lock); bulk copies between a socket and pool memory run with no lock
 * held, on extents the session holds, which the directory promises not to
 * move while held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>
#include <xxhash.h>

#include "dir.h"
#include "failpoint.h"
#include "log.h"
#include "pool.h"
#include "proto.h"
#include "server.h"
#include "session.h"
#include "addr.h"

#define CONN_STACK_SIZE		(256U << 10)
#define CONN_BUF_KEEP		(1U << 20)	/* payload buffer kept between requests */
#define IOV_BATCH		64
#define SUB_BATCH		16
#define SUB_WAIT_MS		1000
#define SUB_READER_STACK	(64U << 10)
#define READDIR_MAX		4096
#define LISTEN_BACKLOG		512

struct listener {
	int fd;
	int is_unix;
	char uri[PATH_MAX];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

struct conn {
	struct server *srv;
	struct conn *prev, *next;
	int fd;
	int is_unix;
	char peer[128];
	struct session *sess;
	int authed;
	int auth_stage;
	uint8_t nonce_c[32], nonce_s[32];
	uint8_t *buf;
	size_t cap;
	uint64_t unread;	/* request payload still in the socket (WRITE) */
	int replied;		/* the handler sent its own reply */
	int close;		/* drop the connection after this request */
	uint64_t cache_ino;	/* version whose attr+extents the reply holds */
	struct cache_reply *cached;
	uint8_t owner[SESSION_TOKEN_BYTES];	/* HELLO_F_EVENTS: whose stream */
	int has_owner;
	unsigned int refusals;	/* refused version requests logged */
};

/*
 * One subscribed connection, in server.subs from its start to its end. Its
 * connection thread pushes events; a reader thread of its own takes PINGs and
 * EVENT_ACKs from the socket, so an ACK is seen the moment it arrives.
 */
struct sub {
	struct sub *prev, *next;
	struct conn *c;
	uint64_t acked;		/* subs_lock: every event up to it applied */
	int acking;		/* subs_lock: an ACK came; changes wait for it */
	int missed;		/* subs_lock: a deadline was missed (logged) */
	int listed;		/* subs_lock */
	atomic_int gone;	/* the reader saw the peer leave */
	pthread_mutex_t wlock;	/* socket writes: events vs PING replies */
	pthread_t reader;
};

/* A change waiting for acknowledgements (on the waiter's stack). */
struct ack_wait {
	struct ack_wait *prev, *next;	/* subs_lock: server.waits */
	const struct conn *c;		/* the requester */
	uint64_t seq;
	int listed;			/* it holds a kernel directory lock */
};

struct server {
	struct config cfg;
	struct pool *pool;
	struct alloc *alloc;
	struct dir *dir;
	struct sessions *sessions;
	uint64_t generation;
	int have_key;
	uint8_t key[CONFIG_KEY_BYTES];

	struct listener listeners[CONFIG_MAX_LISTEN];
	unsigned int nlisteners;
	int wake[2];
	pthread_t accept_thread;
	int accepting;

	pthread_mutex_t conns_lock;
	pthread_cond_t conns_cond;
	struct conn *conns;
	unsigned int nconns;

	pthread_mutex_t subs_lock;
	pthread_cond_t subs_cond;	/* CLOCK_MONOTONIC: an ACK came, a sub left */
	struct sub *subs;
	atomic_uint nacking;		/* listed subs that acknowledge */
	struct ack_wait *waits;		/* lock-holding changes waiting for acks */
	atomic_uint ack_publish_ms, ack_ms;
	atomic_uint_fast64_t ack_timeouts;

	atomic_int stopping;
	atomic_uint max_conns;
	atomic_uint max_frame;
	atomic_uint_fast64_t ops[OP_MAX];
	atomic_uint_fast64_t bytes_read, bytes_written, rejected_conns;
};

/* Handler result: the status for the reply header (0 or -errno). */
typedef int (*handler_fn)(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
			  uint32_t len, struct pbuf *out);

#define H_SESSION	1u	/* needs HELLO first */
#define H_CACHED	2u	/* mutating: goes through the reply cache */
#define H_NOGEN		4u	/* no generation check (handshake, PING) */

struct handler {
	handler_fn fn;
	unsigned int flags;
};

static const struct handler *handler_of(uint16_t op);

uint64_t server_generation(const struct server *srv)
{
	return srv->generation;
}

/* ---- pool memory ---- */

void server_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		 const struct extent_list *src, uint64_t src_off, uint64_t len)
{
	uint8_t *base = arg;

	while (len) {
		uint64_t d = 0, s = 0, n = extent_list_at(dst, dst_off, &d);

		if (!n)
			return;
		if (src) {
			uint64_t sn = extent_list_at(src, src_off, &s);

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
 * Fill iov with the pool pieces of [off, off+n) of a version, at most max
 * entries. Returns the count and sets *covered; -EIO if the directory ever
 * handed out an extent outside the mapping.
 */
static int extent_iov(struct server *srv, const struct extent_list *l, uint64_t off,
		      uint64_t n, struct iovec *iov, int max, uint64_t *covered)
{
	int k = 0;

	*covered = 0;
	while (n && k < max) {
		uint64_t po, len = extent_list_at(l, off, &po);

		if (!len)
			break;
		len = len < n ? len : n;
		if (po < srv->pool->data_off || po + len > srv->pool->size || po + len < po)
			return -EIO;
		iov[k].iov_base = srv->pool->base + po;
		iov[k].iov_len = len;
		k++;
		off += len;
		n -= len;
		*covered += len;
	}
	return k;
}

/* ---- socket I/O ---- */

static void iov_advance(struct iovec **iov, int *cnt, size_t done)
{
	while (*cnt && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*cnt)--;
	}
	if (*cnt && done) {
		(*iov)->iov_base = (uint8_t *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
}

static int sendv_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		iov_advance(&iov, &cnt, (size_t)w);
	}
	return 0;
}

static int recvv_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t r = recvmsg(fd, &m, MSG_WAITALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		iov_advance(&iov, &cnt, (size_t)r);
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return len ? recvv_all(fd, &iov, 1) : 0;
}

/* Read and drop n payload bytes (a request answered without its data). */
static int drain(int fd, uint64_t n)
{
	uint8_t scratch[4096];
	int rc;

	while (n) {
		size_t k = n < sizeof(scratch) ? (size_t)n : sizeof(scratch);

		rc = recv_all(fd, scratch, k);
		if (rc)
			return rc;
		n -= k;
	}
	return 0;
}

static int send_reply(struct conn *c, const struct proto_hdr *req, int32_t status,
		      const void *p, size_t n)
{
	struct proto_hdr h;
	struct iovec iov[2];

	if (status)
		n = 0;
	proto_hdr_init(&h, req->op, (uint32_t)n, req->reqid, c->srv->generation, status);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	iov[1].iov_base = (void *)p;
	iov[1].iov_len = n;
	return sendv_all(c->fd, iov, n ? 2 : 1);
}

/* ---- logging helpers ---- */

static void violation(struct conn *c, uint16_t op, const char *reason)
{
	log_warnx("%s: %s: protocol violation: %s; closing", c->peer, proto_op_name(op),
		  reason);
	c->close = 1;
}

/*
 * A request on a version this session may not touch that way (another
 * session's pending version, a write through a lease: -EPERM) or outside
 * it (-EINVAL) is refused, and logged: DESIGN §8. A few per connection, so
 * a hostile client cannot flood the log.
 */
#define REFUSALS_LOGGED	8

static void refused(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, int status)
{
	uint64_t ino = 0;

	if ((status != -EPERM && status != -EINVAL) || h->op < OP_RESERVE || h->op > OP_HINT ||
	    c->refusals >= REFUSALS_LOGGED)
		return;
	/* every request of that range starts with the version id */
	if (len >= sizeof(ino))
		memcpy(&ino, p, sizeof(ino));
	log_warnx("%s: %s of version %llu refused: %s%s", c->peer, proto_op_name(h->op),
		  (unsigned long long)ino, status == -EPERM ?
		  "not this session's to do that with" : "offset, length or size out of range",
		  ++c->refusals == REFUSALS_LOGGED ? " (further refusals not logged)" : "");
}

/* ---- reply builders ---- */

static void attr_to_wire(const struct dir_attr *a, uint32_t nextents, struct proto_attr *w)
{
	memset(w, 0, sizeof(*w));
	w->ino = a->ino;
	w->parent = a->parent;
	w->size = a->size;
	w->reserved = a->reserved;
	w->atime_ns = a->atime_ns;
	w->mtime_ns = a->mtime_ns;
	w->ctime_ns = a->ctime_ns;
	w->xxh3 = a->xxh3;
	w->mode = a->mode;
	w->uid = a->uid;
	w->gid = a->gid;
	w->nlink = a->nlink;
	w->state = a->state;
	w->leases = a->leases;
	w->nextents = nextents;
}

static int put_attr(struct pbuf *out, const struct dir_attr *a)
{
	struct proto_attr w;

	attr_to_wire(a, 0, &w);
	return pbuf_put(out, &w, sizeof(w));
}

static int put_attr_extents(struct pbuf *out, const struct dir_attr *a,
			    const struct extent_list *l)
{
	struct proto_attr w;
	uint32_t i;
	int rc;

	attr_to_wire(a, l->n, &w);
	rc = pbuf_reserve(out, sizeof(w) + (size_t)l->n * sizeof(struct proto_extent));
	if (rc)
		return rc;
	pbuf_put(out, &w, sizeof(w));
	for (i = 0; i < l->n; i++) {
		struct proto_extent e = { .off = l->v[i].off, .len = l->v[i].len };

		pbuf_put(out, &e, sizeof(e));
	}
	return 0;
}

/* attr + extents of a version the session holds (the EXTENTS reply). */
static int reply_extents(struct conn *c, uint64_t ino, int want_write, struct pbuf *out)
{
	struct extent_list l = { 0 };
	struct dir_attr a;
	int rc;

	rc = dir_extents(c->srv->dir, session_dir(c->sess), ino, want_write, &l, &a);
	if (rc)
		return rc;
	rc = put_attr_extents(out, &a, &l);
	extent_list_free(&l);
	c->cache_ino = ino;
	return rc;
}

/* ---- handshake handlers ---- */

static int h_ping(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		  uint32_t len, struct pbuf *out)
{
	return 0;
}

static void auth_mac(const uint8_t *key, const char *label, const uint8_t *a,
		     const uint8_t *b, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, CONFIG_KEY_BYTES);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, a, 32);
	crypto_auth_hmacsha256_update(&st, b, 32);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

static int auth_fail(struct conn *c, const char *why)
{
	log_warnx("%s: authentication failed: %s; closing", c->peer, why);
	c->close = 1;
	return -EACCES;
}

static int h_auth(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		  uint32_t len, struct pbuf *out)
{
	const struct proto_auth *req = (const void *)p;
	struct proto_auth rep;
	uint8_t mac[32];

	if (!c->srv->have_key)
		return -EOPNOTSUPP;
	if (c->authed)
		return 0;
	if (c->auth_stage == 0) {
		memcpy(c->nonce_c, req->nonce, 32);
		randombytes_buf(c->nonce_s, 32);
		memcpy(rep.nonce, c->nonce_s, 32);
		auth_mac(c->srv->key, "marud", c->nonce_c, c->nonce_s, rep.mac);
		c->auth_stage = 1;
		return pbuf_put(out, &rep, sizeof(rep));
	}
	if (sodium_memcmp(req->nonce, c->nonce_c, 32))
		return auth_fail(c, "client nonce changed");
	auth_mac(c->srv->key, "maruc", c->nonce_s, c->nonce_c, mac);
	if (sodium_memcmp(mac, req->mac, 32))
		return auth_fail(c, "bad HMAC");
	c->authed = 1;
	log_debug("%s: authenticated", c->peer);
	/* The last step answers with status alone (lib/common/proto/proto.h). */
	return 0;
}

static void hello_fill(struct server *srv, struct session *s, int reclaimed,
		       struct proto_hello_rep *rep)
{
	struct pool *pl = srv->pool;

	memset(rep, 0, sizeof(*rep));
	memcpy(rep->uuid, pl->uuid, sizeof(rep->uuid));
	memcpy(rep->token, session_token(s), sizeof(rep->token));
	rep->generation = srv->generation;
	rep->pool_size = pl->size;
	rep->pool_align = pl->align;
	rep->data_off = pl->data_off;
	rep->max_frame = atomic_load(&srv->max_frame);
	rep->reclaimed = (uint32_t)reclaimed;
	rep->backend = (uint32_t)pl->ops->kind;
	snprintf(rep->pool_path, sizeof(rep->pool_path), "%s", pl->path);
}

static int h_hello(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		   uint32_t len, struct pbuf *out)
{
	const struct proto_hello_req *req = (const void *)p;
	struct proto_hello_rep *rep;
	char name[sizeof(req->client_name) + 1];
	int rc, reclaimed;

	if (c->sess)
		return -EISCONN;
	if (req->proto_version != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	rc = session_hello(c->srv->sessions, req->flags & HELLO_F_RECLAIM ? req->token : NULL,
			   &c->sess, &reclaimed);
	if (rc)
		return rc;
	/* An event socket names the session it serves: that session's own
	 * changes need not wait for this stream's acknowledgements. */
	if (req->flags & HELLO_F_EVENTS) {
		memcpy(c->owner, req->token, sizeof(c->owner));
		c->has_owner = 1;
	}
	rc = pbuf_reserve(out, sizeof(*rep));
	if (rc)
		return rc;
	rep = (struct proto_hello_rep *)(out->data + out->len);
	hello_fill(c->srv, c->sess, reclaimed, rep);
	out->len += sizeof(*rep);
	memcpy(name, req->client_name, sizeof(req->client_name));
	name[sizeof(req->client_name)] = '\0';
	log_debug("%s: hello from '%s' pid %llu: session %llu%s", c->peer, name,
		  (unsigned long long)req->pid,
		  (unsigned long long)dir_session_id(session_dir(c->sess)),
		  reclaimed ? " (reclaimed)" : "");
	return 0;
}

/* ---- pool-wide handlers ---- */

static int h_statfs(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, struct pbuf *out)
{
	struct dir_stats st;
	struct proto_statfs r;

	dir_stats(c->srv->dir, &st);
	r.capacity = st.capacity;
	r.free = st.free;
	r.evictable = st.evictable;
	r.used = st.used;
	r.pending = st.pending;
	r.orphaned = st.orphaned;
	r.names = st.names;
	r.dirs = st.dirs;
	r.versions = st.versions;
	r.block = st.block;
	return pbuf_put(out, &r, sizeof(r));
}

struct metric {
	const char *name, *type, *help;
	uint64_t value;
};

static int put_text(struct pbuf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int put_text(struct pbuf *out, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -EOVERFLOW;
	return pbuf_put(out, line, (size_t)n);
}

static int put_metric(struct pbuf *out, const struct metric *m)
{
	return put_text(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", m->name, m->help,
			m->name, m->type, m->name, (unsigned long long)m->value);
}

static int put_ops(struct server *srv, struct pbuf *out)
{
	unsigned int op;
	int rc;

	rc = put_text(out, "# HELP marud_ops_total Requests handled, by op.\n"
		      "# TYPE marud_ops_total counter\n");
	for (op = 1; op < OP_MAX && !rc; op++)
		if (handler_of((uint16_t)op))
			rc = put_text(out, "marud_ops_total{op=\"%s\"} %llu\n",
				      proto_op_name((uint16_t)op),
				      (unsigned long long)atomic_load(&srv->ops[op]));
	return rc;
}

static unsigned int server_nconns(struct server *srv)
{
	unsigned int n;

	pthread_mutex_lock(&srv->conns_lock);
	n = srv->nconns;
	pthread_mutex_unlock(&srv->conns_lock);
	return n;
}

static int h_stats(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		   uint32_t len, struct pbuf *out)
{
	struct server *srv = c->srv;
	struct dir_stats st;
	size_t i;
	int rc = 0;

	dir_stats(srv->dir, &st);
	const struct metric m[] = {
		{ "marud_pool_capacity_bytes", "gauge", "Pool data bytes.", st.capacity },
		{ "marud_pool_free_bytes", "gauge", "Unallocated bytes.", st.free },
		{ "marud_pool_used_bytes", "gauge", "Bytes of published versions.", st.used },
		{ "marud_pool_pending_bytes", "gauge", "Bytes of pending versions.", st.pending },
		{ "marud_pool_orphaned_bytes", "gauge",
		  "Bytes of unlinked versions still leased.", st.orphaned },
		{ "marud_pool_evictable_bytes", "gauge",
		  "Published bytes with no lease.", st.evictable },
		{ "marud_names", "gauge", "Names bound to a published version.", st.names },
		{ "marud_dirs", "gauge", "Namespace directories.", st.dirs },
		{ "marud_versions", "gauge", "Live versions.", st.versions },
		{ "marud_leases", "gauge", "Leases held.", st.leases },
		{ "marud_sessions", "gauge", "Client sessions, attached or in grace.",
		  st.sessions },
		{ "marud_connections", "gauge", "Open client connections.",
		  server_nconns(srv) },
		{ "marud_publishes_total", "counter", "Versions published.", st.publishes },
		{ "marud_replaces_total", "counter", "Publishes that replaced a version.",
		  st.replaces },
		{ "marud_unlinks_total", "counter", "Names unlinked.", st.unlinks },
		{ "marud_creates_total", "counter", "Pending versions created.", st.creates },
		{ "marud_abandons_total", "counter", "Pending versions abandoned.",
		  st.abandons },
		{ "marud_evictions_total", "counter", "Versions evicted.", st.evictions },
		{ "marud_evicted_bytes_total", "counter", "Bytes evicted.", st.evicted_bytes },
		{ "marud_enospc_total", "counter", "Allocations refused.", st.enospc },
		{ "marud_lease_grants_total", "counter", "Leases granted.", st.lease_grants },
		{ "marud_bytes_read_total", "counter", "Bytes sent by TCP READ.",
		  atomic_load(&srv->bytes_read) },
		{ "marud_bytes_written_total", "counter", "Bytes received by TCP WRITE.",
		  atomic_load(&srv->bytes_written) },
		{ "marud_rejected_connections_total", "counter",
		  "Connections refused over max-conns.", atomic_load(&srv->rejected_conns) },
		{ "marud_event_seq", "counter", "Sequence of the last event.", st.event_seq },
		{ "marud_ack_subscribers", "gauge",
		  "Event subscribers that acknowledge applied events.",
		  atomic_load(&srv->nacking) },
		{ "marud_ack_timeouts_total", "counter",
		  "Changes whose wait for a subscriber's acknowledgement timed out.",
		  atomic_load(&srv->ack_timeouts) },
		{ "marud_generation", "gauge", "Pool generation of this marud.",
		  srv->generation },
		{ "marud_accounting_ok", "gauge", "1 if free+used+pending+orphaned==capacity.",
		  st.free + st.used + st.pending + st.orphaned == st.capacity },
	};

	for (i = 0; i < sizeof(m) / sizeof(m[0]) && !rc; i++)
		rc = put_metric(out, &m[i]);
	return rc ? rc : put_ops(srv, out);
}

/* ---- namespace handlers ---- */

static const char *name_after(const uint8_t *p, size_t body)
{
	return (const char *)p + body;
}

static int h_mkdir(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		   uint32_t len, struct pbuf *out)
{
	const struct proto_name_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_mkdir(c->srv->dir, r->parent, name_after(p, sizeof(*r)), r->namelen,
		       r->mode, r->uid, r->gid, &a);
	return rc ? rc : put_attr(out, &a);
}

static int h_rmdir(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		   uint32_t len, struct pbuf *out)
{
	const struct proto_name_req *r = (const void *)p;

	return dir_rmdir(c->srv->dir, r->parent, name_after(p, sizeof(*r)), r->namelen);
}

static int h_lookup(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, struct pbuf *out)
{
	const struct proto_name_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_lookup(c->srv->dir, session_dir(c->sess), r->parent,
			name_after(p, sizeof(*r)), r->namelen, &a);
	return rc ? rc : put_attr(out, &a);
}

static int h_getattr(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_ino_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_getattr(c->srv->dir, session_dir(c->sess), r->ino, &a);
	return rc ? rc : put_attr(out, &a);
}

static int h_setattr(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_setattr_req *r = (const void *)p;
	struct dir_setattr sa = {
		.mask = r->mask, .mode = r->mode, .uid = r->uid, .gid = r->gid,
		.atime_ns = r->atime_ns, .mtime_ns = r->mtime_ns,
	};
	struct dir_attr a;
	int rc;

	rc = dir_setattr(c->srv->dir, session_dir(c->sess), r->ino, &sa, &a);
	return rc ? rc : put_attr(out, &a);
}

static int h_rename(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, struct pbuf *out)
{
	const struct proto_rename_req *r = (const void *)p;
	const char *oldname = name_after(p, sizeof(*r));

	return dir_rename(c->srv->dir, session_dir(c->sess), r->oldparent, oldname,
			  r->oldlen, r->newparent, oldname + r->oldlen, r->newlen,
			  r->flags);
}

static int h_unlink(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, struct pbuf *out)
{
	const struct proto_name_req *r = (const void *)p;

	return dir_unlink(c->srv->dir, session_dir(c->sess), r->parent,
			  name_after(p, sizeof(*r)), r->namelen);
}

struct readdir_ctx {
	struct pbuf *out;
	uint32_t count;
	int rc;
};

static int readdir_put(void *arg, const struct dir_dirent *de)
{
	struct readdir_ctx *x = arg;
	struct proto_dirent w = {
		.ino = de->ino, .cookie = de->cookie, .mode = de->mode,
		.state = de->state, .namelen = (uint16_t)de->nlen,
	};

	x->rc = pbuf_put(x->out, &w, sizeof(w));
	if (!x->rc)
		x->rc = pbuf_put(x->out, de->name, de->nlen);
	if (!x->rc)
		x->rc = pbuf_align8(x->out);
	if (x->rc)
		return 1;
	x->count++;
	return 0;
}

static int h_readdir(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_readdir_req *r = (const void *)p;
	struct proto_readdir_rep rep = { 0 };
	struct readdir_ctx x = { .out = out };
	/* Worst case per entry: header + 255 name bytes, aligned. */
	uint32_t fit = (atomic_load(&c->srv->max_frame) - sizeof(rep)) /
		       (sizeof(struct proto_dirent) + 256);
	uint32_t max = r->max_entries;
	int eof = 0, rc;

	if (max == 0 || max > READDIR_MAX)
		max = READDIR_MAX;
	if (max > fit)
		max = fit;
	rc = pbuf_put(out, &rep, sizeof(rep));
	if (rc)
		return rc;
	/* Returns the count delivered: success is >= 0. */
	rc = dir_readdir(c->srv->dir, session_dir(c->sess), r->dir, r->cookie, max,
			 readdir_put, &x, &eof);
	if (rc >= 0)
		rc = x.rc;
	if (rc)
		return rc;
	rep.count = x.count;
	rep.eof = (uint32_t)eof;
	memcpy(out->data, &rep, sizeof(rep));
	return 0;
}

static int h_exists(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, struct pbuf *out)
{
	const struct proto_exists_req *r = (const void *)p;
	size_t off = sizeof(*r);
	uint32_t i;
	int rc;

	rc = pbuf_reserve(out, r->count);
	for (i = 0; i < r->count && !rc; i++) {
		uint16_t nlen;
		uint8_t yes;

		/* proto_req_check vetted the lengths; stay in bounds anyway. */
		if (off + sizeof(nlen) > len)
			return -EPROTO;
		memcpy(&nlen, p + off, sizeof(nlen));
		off += sizeof(nlen);
		if (off + nlen > len)
			return -EPROTO;
		rc = dir_exists(c->srv->dir, r->parent, (const char *)p + off, nlen);
		off += nlen;
		if (rc < 0 && rc != -ENOENT && rc != -ENOTDIR)
			return rc;
		yes = rc == 1;
		rc = pbuf_put(out, &yes, 1);
	}
	return rc;
}

/* ---- version handlers ---- */

static int h_create(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		    uint32_t len, struct pbuf *out)
{
	const struct proto_create_req *r = (const void *)p;
	uint32_t flags = 0;
	struct dir_attr a;
	int rc;

	if (r->flags & CREATE_EXCL)
		flags |= DIR_CREATE_EXCL;
	if (r->flags & CREATE_COPY)
		flags |= DIR_CREATE_COPY;
	rc = dir_create(c->srv->dir, session_dir(c->sess), r->parent,
			name_after(p, sizeof(*r)), r->namelen, r->from_ino, flags,
			r->mode, r->uid, r->gid, r->size_hint, &a);
	if (rc)
		return rc;
	/* tests: the version exists, its creator has not heard of it yet */
	rc = FAILPOINT("marud.create.after");
	if (rc) {
		dir_abandon(c->srv->dir, session_dir(c->sess), a.ino);
		return rc;
	}
	return reply_extents(c, a.ino, 1, out);
}

static int h_reserve(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_size_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_reserve(c->srv->dir, session_dir(c->sess), r->ino, r->size, &a);
	return rc ? rc : reply_extents(c, r->ino, 1, out);
}

static int h_truncate(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		      uint32_t len, struct pbuf *out)
{
	const struct proto_size_req *r = (const void *)p;
	struct dir_attr a;
	int rc;

	rc = dir_truncate(c->srv->dir, session_dir(c->sess), r->ino, r->size, &a);
	return rc ? rc : reply_extents(c, r->ino, 1, out);
}

/* XXH3 of the first size bytes of a version, read in place. */
static int version_xxh3(struct server *srv, const struct extent_list *l, uint64_t size,
			uint64_t *out)
{
	XXH3_state_t *st = XXH3_createState();
	struct iovec iov[IOV_BATCH];
	uint64_t off = 0, covered;
	int i, k, rc = 0;

	if (!st)
		return -ENOMEM;
	XXH3_64bits_reset(st);
	while (off < size) {
		k = extent_iov(srv, l, off, size - off, iov, IOV_BATCH, &covered);
		if (k <= 0) {
			rc = k < 0 ? k : -EINVAL;
			break;
		}
		for (i = 0; i < k; i++)
			XXH3_64bits_update(st, iov[i].iov_base, iov[i].iov_len);
		off += covered;
	}
	*out = XXH3_64bits_digest(st);
	XXH3_freeState(st);
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
	if (size <= extent_list_bytes(&l))
		rc = version_xxh3(c->srv, &l, size, hash);
	extent_list_free(&l);
	return rc;
}

static int h_publish(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_publish_req *r = (const void *)p;
	uint64_t hash = r->xxh3;
	struct dir_attr a;
	int rc;

	if (!hash) {
		rc = publish_hash(c, r->ino, r->size, &hash);
		if (rc)
			return rc;
	}
	/* tests: stop or fail with the bytes hashed, the name not yet rebound */
	rc = FAILPOINT("marud.publish.before");
	if (rc)
		return rc;
	rc = dir_publish(c->srv->dir, session_dir(c->sess), r->ino, r->size, hash, &a);
	if (rc)
		return rc;
	/* tests: published, the reply not sent (only abort/exit/sleep make sense) */
	(void)FAILPOINT("marud.publish.after");
	return put_attr(out, &a);
}

static int h_abandon(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_ino_req *r = (const void *)p;

	return dir_abandon(c->srv->dir, session_dir(c->sess), r->ino);
}

static int h_open(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		  uint32_t len, struct pbuf *out)
{
	const struct proto_open_req *r = (const void *)p;
	struct dir_session *ds = session_dir(c->sess);
	struct dir_attr a;
	int rc;

	rc = dir_open(c->srv->dir, ds, r->parent, name_after(p, sizeof(*r)), r->namelen,
		      r->ino, &a);
	if (rc)
		return rc;
	rc = reply_extents(c, a.ino, 0, out);
	/* A lease the client never hears about would leak until the session ends. */
	if (rc)
		dir_release(c->srv->dir, ds, a.ino);
	return rc;
}

static int h_release(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_ino_req *r = (const void *)p;

	return dir_release(c->srv->dir, session_dir(c->sess), r->ino);
}

static int h_extents(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		     uint32_t len, struct pbuf *out)
{
	const struct proto_ino_req *r = (const void *)p;

	return reply_extents(c, r->ino, 0, out);
}

/* ---- bulk I/O ---- */

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
	k = extent_iov(c->srv, l, off, first_half(n), iov + 1, IOV_BATCH, &covered);
	if (k < 0)
		return k;
	for (;;) {
		rc = sendv_all(c->fd, iov, k + 1);
		if (!rc && first)
			rc = FAILPOINT("marud.read.mid");
		if (rc)
			return rc;
		first = 0;
		off += covered;
		n -= covered;
		if (!n)
			return 0;
		k = extent_iov(c->srv, l, off, n, iov + 1, IOV_BATCH, &covered);
		if (k <= 0)
			return k < 0 ? k : -EIO;
		iov[0].iov_len = 0;
	}
}

static int h_read(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		  uint32_t len, struct pbuf *out)
{
	const struct proto_io_req *r = (const void *)p;
	struct extent_list l = { 0 };
	struct dir_attr a;
	uint64_t n = 0;
	int rc;

	if (r->len > PROTO_MAX_IO || r->len > atomic_load(&c->srv->max_frame))
		return -EINVAL;
	rc = dir_extents(c->srv->dir, session_dir(c->sess), r->ino, 0, &l, &a);
	if (rc)
		return rc;
	if (r->off < a.size)
		n = a.size - r->off < r->len ? a.size - r->off : r->len;
	rc = send_from_pool(c, h, &l, r->off, n);
	extent_list_free(&l);
	if (rc) {
		/* The header may be out: the stream cannot be trusted any more. */
		log_warn(rc, "%s: READ send failed", c->peer);
		c->close = 1;
		return rc;
	}
	c->replied = 1;
	atomic_fetch_add(&c->srv->bytes_read, n);
	dir_touch(c->srv->dir, r->ino);
	return 0;
}

static int recv_into_pool(struct conn *c, const struct extent_list *l, uint64_t off,
			  uint64_t n)
{
	struct iovec iov[IOV_BATCH];
	uint64_t covered;
	int k, rc;

	while (n) {
		k = extent_iov(c->srv, l, off, n, iov, IOV_BATCH, &covered);
		if (k <= 0)
			return k < 0 ? k : -EIO;
		rc = recvv_all(c->fd, iov, k);
		if (rc)
			return rc;
		c->unread -= covered;
		off += covered;
		n -= covered;
	}
	return 0;
}

/* Extents of s's pending version covering at least end bytes (reserving). */
static int write_extents(struct conn *c, uint64_t ino, uint64_t end,
			 struct extent_list *l, struct dir_attr *a)
{
	struct dir_session *ds = session_dir(c->sess);
	int rc;

	rc = dir_extents(c->srv->dir, ds, ino, 1, l, a);
	if (rc || a->reserved >= end)
		return rc;
	extent_list_free(l);
	rc = dir_reserve(c->srv->dir, ds, ino, end, a);
	if (rc)
		return rc;
	return dir_extents(c->srv->dir, ds, ino, 1, l, a);
}

static int h_write(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		   uint32_t len, struct pbuf *out)
{
	const struct proto_io_req *r = (const void *)p;
	struct extent_list l = { 0 };
	struct proto_io_rep rep;
	uint64_t end = r->off + r->len;
	struct dir_attr a;
	int rc;

	if (end < r->off)
		return -EFBIG;
	rc = write_extents(c, r->ino, end, &l, &a);
	if (rc)
		return rc;
	rc = recv_into_pool(c, &l, r->off, first_half(r->len));
	if (!rc)
		rc = FAILPOINT("marud.write.mid");
	if (!rc)
		rc = recv_into_pool(c, &l, r->off + first_half(r->len),
				    r->len - first_half(r->len));
	extent_list_free(&l);
	if (rc) {
		log_warn(rc, "%s: WRITE payload", c->peer);
		c->close = 1;
		return rc;
	}
	atomic_fetch_add(&c->srv->bytes_written, r->len);
	rc = dir_wrote(c->srv->dir, session_dir(c->sess), r->ino, r->off, end, &a);
	if (rc)
		return rc;
	rep.done = r->len;
	rep.size = a.size;
	return pbuf_put(out, &rep, sizeof(rep));
}

static void hint_madvise(struct server *srv, const struct extent_list *l, int advice)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		uint64_t start = l->v[i].off & ~(pg - 1);
		uint64_t end = l->v[i].off + l->v[i].len;

		if (end > srv->pool->size)
			continue;
		madvise(srv->pool->base + start, end - start, advice);
	}
}

/* Hint values follow DESIGN §4.3: read, read_end, promote, write. */
enum { HINT_READ = 1, HINT_READ_END = 2, HINT_PROMOTE = 3, HINT_WRITE = 4 };

static int h_hint(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		  uint32_t len, struct pbuf *out)
{
	const struct proto_hint_req *r = (const void *)p;
	struct extent_list l = { 0 };
	struct dir_attr a;
	int rc;

	if (r->hint < HINT_READ || r->hint > HINT_WRITE)
		return -EINVAL;
	rc = dir_extents(c->srv->dir, session_dir(c->sess), r->ino, 0, &l, &a);
	if (rc)
		return rc;
	if (r->hint == HINT_READ || r->hint == HINT_PROMOTE) {
		hint_madvise(c->srv, &l, MADV_WILLNEED);
		dir_touch(c->srv->dir, r->ino);
	} else if (r->hint == HINT_READ_END) {
#ifdef MADV_COLD
		hint_madvise(c->srv, &l, MADV_COLD);
#endif
	}
	extent_list_free(&l);
	return 0;
}

/* ---- the subscriber registry and acknowledgements ---- */

static void sub_list(struct server *srv, struct sub *s)
{
	pthread_mutex_lock(&srv->subs_lock);
	s->next = srv->subs;
	if (s->next)
		s->next->prev = s;
	srv->subs = s;
	s->listed = 1;
	pthread_mutex_unlock(&srv->subs_lock);
}

/* Leave the registry (either thread, once); waiters may be waiting on it. */
static void sub_unlist(struct server *srv, struct sub *s)
{
	pthread_mutex_lock(&srv->subs_lock);
	if (s->listed) {
		if (s->prev)
			s->prev->next = s->next;
		else
			srv->subs = s->next;
		if (s->next)
			s->next->prev = s->prev;
		s->listed = 0;
		if (s->acking)
			atomic_fetch_sub(&srv->nacking, 1);
		pthread_cond_broadcast(&srv->subs_cond);
	}
	pthread_mutex_unlock(&srv->subs_lock);
}

static void sub_ack(struct server *srv, struct sub *s, uint64_t seq)
{
	pthread_mutex_lock(&srv->subs_lock);
	if (!s->acking && s->listed) {
		s->acking = 1;
		atomic_fetch_add(&srv->nacking, 1);
		log_debug("%s: subscriber acknowledges events", s->c->peer);
	}
	if (seq > s->acked)
		s->acked = seq;
	pthread_cond_broadcast(&srv->subs_cond);
	pthread_mutex_unlock(&srv->subs_lock);
}

/* Is s the event stream of c's own session? */
static int sub_owned_by(const struct sub *s, const struct conn *c)
{
	return s->c->has_owner && c->sess &&
	       !memcmp(s->c->owner, session_token(c->sess), SESSION_TOKEN_BYTES);
}

/* Must a change by c up to event seq wait for s? (subs_lock held) */
static int sub_behind(const struct sub *s, const struct conn *c, uint64_t seq)
{
	if (!s->acking || s->acked >= seq)
		return 0;
	/* The requester keeps its own caches: its own stream is not waited for. */
	return !sub_owned_by(s, c);
}

/*
 * A lock-holding change by c need not wait for s when s's own session has a
 * lock-holding change waiting for c's stream: each mount's notifier may be
 * stuck behind the directory lock its own change holds, so neither could
 * acknowledge before the bound. Both go at once instead. (subs_lock held)
 */
static int sub_in_cycle(struct server *srv, const struct sub *s, const struct conn *c)
{
	const struct ack_wait *w;
	const struct sub *t;

	for (w = srv->waits; w; w = w->next) {
		if (w->c == c || !sub_owned_by(s, w->c))
			continue;
		for (t = srv->subs; t; t = t->next)
			if (sub_owned_by(t, c) && sub_behind(t, w->c, w->seq))
				return 1;
	}
	return 0;
}

static int sub_holds_up(struct server *srv, const struct sub *s, const struct ack_wait *me)
{
	if (!sub_behind(s, me->c, me->seq))
		return 0;
	return !(me->listed && sub_in_cycle(srv, s, me->c));
}

static int subs_behind(struct server *srv, const struct ack_wait *me)
{
	const struct sub *s;

	for (s = srv->subs; s; s = s->next)
		if (sub_holds_up(srv, s, me))
			return 1;
	return 0;
}

/* Count (and log once per subscriber) those that missed the deadline. */
static void subs_missed(struct server *srv, const struct ack_wait *me)
{
	struct sub *s;

	for (s = srv->subs; s; s = s->next) {
		if (!sub_holds_up(srv, s, me))
			continue;
		atomic_fetch_add(&srv->ack_timeouts, 1);
		if (!s->missed)
			log_debug("%s: subscriber did not acknowledge event %llu within "
				  "the deadline (acked %llu); not logged again",
				  s->c->peer, (unsigned long long)me->seq,
				  (unsigned long long)s->acked);
		s->missed = 1;
	}
}

static void deadline_after_ms(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* A lock-holding wait is listed, so that its counterpart can see a cycle. */
static void wait_list(struct server *srv, struct ack_wait *w)
{
	w->next = srv->waits;
	if (w->next)
		w->next->prev = w;
	srv->waits = w;
	w->listed = 1;
	pthread_cond_broadcast(&srv->subs_cond);
}

static void wait_unlist(struct server *srv, struct ack_wait *w)
{
	if (!w->listed)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		srv->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
}

/*
 * Close-to-open across mounts: before c's change up to event seq is
 * answered, every acknowledging subscriber of another session applies it,
 * or ms pass. Called with no lock held (the dir lock above all).
 */
static void acks_wait(struct conn *c, uint64_t seq, unsigned int ms, int holds_lock)
{
	struct ack_wait me = { .c = c, .seq = seq };
	struct server *srv = c->srv;
	struct timespec ts;

	deadline_after_ms(&ts, ms);
	pthread_mutex_lock(&srv->subs_lock);
	if (holds_lock)
		wait_list(srv, &me);
	while (subs_behind(srv, &me) && !atomic_load(&srv->stopping)) {
		if (pthread_cond_timedwait(&srv->subs_cond, &srv->subs_lock, &ts) == ETIMEDOUT) {
			subs_missed(srv, &me);
			break;
		}
	}
	wait_unlist(srv, &me);
	pthread_mutex_unlock(&srv->subs_lock);
}

/*
 * How long a successful op waits for acknowledgements; 0: not at all.
 * PUBLISH runs at close, under no kernel directory lock, so it can wait
 * long. The others hold one on the requesting mount: two of them in one
 * directory on two mounts would each wait for the other mount's notifier,
 * which is blocked on that lock; the short bound breaks that cycle.
 */
static unsigned int ack_wait_ms(struct server *srv, uint16_t op)
{
	switch (op) {
	case OP_PUBLISH:
		return atomic_load(&srv->ack_publish_ms);
	case OP_RENAME:
	case OP_UNLINK:
	case OP_MKDIR:
	case OP_RMDIR:
	case OP_SETATTR:
		return atomic_load(&srv->ack_ms);
	default:
		return 0;
	}
}

/* ---- SUBSCRIBE: the connection becomes an event pusher ---- */

static int send_event(struct conn *c, const struct dir_event *e)
{
	struct proto_event w = {
		.seq = e->seq, .time_ns = e->time_ns, .type = e->type,
		.ino = e->ino, .parent = e->parent, .parent2 = e->parent2,
		.namelen = (uint16_t)strnlen(e->name, sizeof(e->name)),
		.name2len = (uint16_t)strnlen(e->name2, sizeof(e->name2)),
		.pathlen = (uint16_t)strnlen(e->path, sizeof(e->path)),
		.path2len = (uint16_t)strnlen(e->path2, sizeof(e->path2)),
	};
	struct iovec iov[6];
	struct proto_hdr h;
	uint32_t n = sizeof(w) + w.namelen + w.name2len + w.pathlen + w.path2len;

	proto_hdr_init(&h, OP_EVENT, n, 0, c->srv->generation, 0);
	iov[0] = (struct iovec){ &h, sizeof(h) };
	iov[1] = (struct iovec){ &w, sizeof(w) };
	iov[2] = (struct iovec){ (void *)e->name, w.namelen };
	iov[3] = (struct iovec){ (void *)e->name2, w.name2len };
	iov[4] = (struct iovec){ (void *)e->path, w.pathlen };
	iov[5] = (struct iovec){ (void *)e->path2, w.path2len };
	return sendv_all(c->fd, iov, 6);
}

/* One frame from a subscriber: PING or EVENT_ACK. Non-zero: stop reading. */
static int sub_frame(struct sub *s)
{
	struct conn *c = s->c;
	struct proto_ack_req a;
	struct proto_hdr h;
	int rc;

	if (recv_all(c->fd, &h, sizeof(h)))
		return 1;
	rc = proto_hdr_check(&h, sizeof(a));
	if (!rc && (h.op == OP_PING || h.op == OP_EVENT_ACK))
		rc = recv_all(c->fd, &a, h.len) ? 1 : proto_req_check(h.op, &a, h.len);
	if (rc || (h.op != OP_PING && h.op != OP_EVENT_ACK)) {
		if (rc <= 0)
			log_warnx("%s: %s: protocol violation: only PING and EVENT_ACK are "
				  "allowed after SUBSCRIBE; closing", c->peer,
				  proto_op_name(h.op));
		return 1;
	}
	atomic_fetch_add(&c->srv->ops[h.op], 1);
	if (h.op == OP_EVENT_ACK) {
		sub_ack(c->srv, s, a.seq);
		return 0;
	}
	pthread_mutex_lock(&s->wlock);
	rc = send_reply(c, &h, 0, NULL, 0);
	pthread_mutex_unlock(&s->wlock);
	return rc;
}

static void *sub_reader(void *arg)
{
	struct sub *s = arg;
	struct conn *c = s->c;

	while (!sub_frame(s))
		;
	/* Waiters stop waiting for it now, and the pusher leaves its wait. */
	sub_unlist(c->srv, s);
	atomic_store(&s->gone, 1);
	shutdown(c->fd, SHUT_RDWR);
	dir_events_kick(c->srv->dir);
	return NULL;
}

static int sub_start(struct sub *s)
{
	pthread_attr_t attr;
	int rc;

	pthread_mutex_init(&s->wlock, NULL);
	sub_list(s->c->srv, s);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, SUB_READER_STACK);
	rc = -pthread_create(&s->reader, &attr, sub_reader, s);
	pthread_attr_destroy(&attr);
	if (rc) {
		log_warn(rc, "%s: subscriber reader thread", s->c->peer);
		sub_unlist(s->c->srv, s);
		pthread_mutex_destroy(&s->wlock);
	}
	return rc;
}

static void sub_end(struct sub *s)
{
	/* Wakes the reader out of its recv; conn_main closes the fd. */
	shutdown(s->c->fd, SHUT_RDWR);
	pthread_join(s->reader, NULL);
	sub_unlist(s->c->srv, s);
	pthread_mutex_destroy(&s->wlock);
}

/* A peer that hung up is noticed before waiting (the reader kicks too). */
static int sub_peer_gone(struct sub *s)
{
	struct pollfd pfd = { .fd = s->c->fd, .events = POLLRDHUP };

	if (atomic_load(&s->gone))
		return 1;
	return poll(&pfd, 1, 0) > 0 &&
	       (pfd.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL));
}

static void sub_push(struct sub *s, uint64_t after, struct dir_event *ev)
{
	struct server *srv = s->c->srv;
	int i, n, rc = 0;

	while (!atomic_load(&srv->stopping) && !sub_peer_gone(s)) {
		n = dir_events_wait(srv->dir, after, ev, SUB_BATCH, SUB_WAIT_MS);
		pthread_mutex_lock(&s->wlock);
		for (i = 0; i < n && !rc; i++) {
			rc = send_event(s->c, &ev[i]);
			after = ev[i].seq;
		}
		pthread_mutex_unlock(&s->wlock);
		if (n < 0 || rc)
			break;
	}
}

static int h_subscribe(struct conn *c, const struct proto_hdr *h, const uint8_t *p,
		       uint32_t len, struct pbuf *out)
{
	const struct proto_subscribe_req *r = (const void *)p;
	struct server *srv = c->srv;
	uint64_t after = r->after_seq ? r->after_seq : dir_event_seq(srv->dir);
	struct dir_event *ev = malloc(SUB_BATCH * sizeof(*ev));
	struct sub *s = calloc(1, sizeof(*s));

	if (!ev || !s) {
		free(ev);
		free(s);
		return -ENOMEM;
	}
	s->c = c;
	c->replied = 1;
	c->close = 1;
	if (send_reply(c, h, 0, NULL, 0) || sub_start(s))
		goto out;
	log_debug("%s: subscribed after seq %llu", c->peer, (unsigned long long)after);
	sub_push(s, after, ev);
	sub_end(s);
out:
	free(s);
	free(ev);
	return 0;
}

/* ---- dispatch ---- */

static const struct handler handlers[OP_MAX] = {
	[OP_PING] = { h_ping, H_NOGEN },
	[OP_HELLO] = { h_hello, H_NOGEN },
	[OP_AUTH] = { h_auth, H_NOGEN },
	[OP_STATFS] = { h_statfs, H_SESSION },
	[OP_STATS] = { h_stats, H_SESSION },
	[OP_MKDIR] = { h_mkdir, H_SESSION | H_CACHED },
	[OP_RMDIR] = { h_rmdir, H_SESSION | H_CACHED },
	[OP_LOOKUP] = { h_lookup, H_SESSION },
	[OP_GETATTR] = { h_getattr, H_SESSION },
	[OP_SETATTR] = { h_setattr, H_SESSION | H_CACHED },
	[OP_RENAME] = { h_rename, H_SESSION | H_CACHED },
	[OP_UNLINK] = { h_unlink, H_SESSION | H_CACHED },
	[OP_READDIR] = { h_readdir, H_SESSION },
	[OP_EXISTS] = { h_exists, H_SESSION },
	[OP_CREATE] = { h_create, H_SESSION | H_CACHED },
	[OP_RESERVE] = { h_reserve, H_SESSION | H_CACHED },
	[OP_TRUNCATE] = { h_truncate, H_SESSION | H_CACHED },
	[OP_PUBLISH] = { h_publish, H_SESSION | H_CACHED },
	[OP_ABANDON] = { h_abandon, H_SESSION | H_CACHED },
	[OP_OPEN] = { h_open, H_SESSION | H_CACHED },
	[OP_RELEASE] = { h_release, H_SESSION | H_CACHED },
	[OP_EXTENTS] = { h_extents, H_SESSION },
	[OP_READ] = { h_read, H_SESSION },
	[OP_WRITE] = { h_write, H_SESSION | H_CACHED },
	[OP_HINT] = { h_hint, H_SESSION },
	[OP_SUBSCRIBE] = { h_subscribe, H_SESSION },
};

static const struct handler *handler_of(uint16_t op)
{
	if (op >= OP_MAX || !handlers[op].fn)
		return NULL;
	return &handlers[op];
}

/* Replay a recorded reply; a too-large one is rebuilt from its version. */
static int replay(struct conn *c, const struct proto_hdr *h, struct pbuf *out)
{
	const struct cache_reply *r = c->cached;
	int rc;

	if (!r->too_large || r->status)
		return send_reply(c, h, r->status, r->payload, r->len);
	rc = reply_extents(c, r->ino, 0, out);
	return send_reply(c, h, rc, out->data, out->len);
}

/* After a change that emitted events (seq moved past before), wait for acks. */
static void acks_after(struct conn *c, uint16_t op, uint64_t before, unsigned int ms)
{
	uint64_t seq = dir_event_seq(c->srv->dir);

	/* Only PUBLISH runs under no kernel directory lock of the requester. */
	if (seq > before)
		acks_wait(c, seq, ms, op != OP_PUBLISH);
}

static int execute(struct conn *c, const struct handler *hd, const struct proto_hdr *h,
		   const uint8_t *p, uint32_t len, struct pbuf *out)
{
	enum cache_result cr = CACHE_BYPASS;
	unsigned int ack_ms = ack_wait_ms(c->srv, h->op);
	uint64_t seq0 = 0;
	int status;

	if (hd->flags & H_CACHED)
		cr = session_cache_begin(c->sess, h->reqid, h->op, c->cached);
	if (cr == CACHE_HIT) {
		log_debug("%s: %s reqid %llu answered from the reply cache", c->peer,
			  proto_op_name(h->op), (unsigned long long)h->reqid);
		if (c->unread && drain(c->fd, c->unread))
			return -ECONNRESET;
		c->unread = 0;
		return replay(c, h, out);
	}
	c->cache_ino = 0;
	/* Nobody acknowledges: skip even the event sequence lookups. */
	if (ack_ms && !atomic_load(&c->srv->nacking))
		ack_ms = 0;
	if (ack_ms)
		seq0 = dir_event_seq(c->srv->dir);
	status = hd->fn(c, h, p, len, out);
	if (!status && out->len > atomic_load(&c->srv->max_frame))
		status = -EOVERFLOW;
	refused(c, h, p, len, status);
	if (cr == CACHE_MISS)
		session_cache_finish(c->sess, h->reqid, status, out->data,
				     status ? 0 : out->len, c->cache_ino);
	if (!status && ack_ms)
		acks_after(c, h->op, seq0, ack_ms);
	if (c->replied)
		return 0;
	if (c->unread && drain(c->fd, c->unread))
		return -ECONNRESET;
	c->unread = 0;
	return send_reply(c, h, status, out->data, out->len);
}

/* Gates before a handler runs; > 0: answered (or closing) already. */
static int gate(struct conn *c, const struct handler *hd, const struct proto_hdr *h)
{
	if (c->srv->have_key && !c->authed && h->op != OP_AUTH) {
		log_warnx("%s: %s before AUTH; closing", c->peer, proto_op_name(h->op));
		c->close = 1;
		send_reply(c, h, -EACCES, NULL, 0);
		return 1;
	}
	if ((hd->flags & H_SESSION) && !c->sess) {
		violation(c, h->op, "request before HELLO");
		send_reply(c, h, -EPROTO, NULL, 0);
		return 1;
	}
	if (!(hd->flags & H_NOGEN) && h->generation != c->srv->generation) {
		if (c->unread && drain(c->fd, c->unread))
			return -ECONNRESET;
		c->unread = 0;
		send_reply(c, h, -ESTALE, NULL, 0);
		return 1;
	}
	return 0;
}

static int conn_buf(struct conn *c, size_t need)
{
	uint8_t *nb;
	size_t cap = c->cap ? c->cap : 4096;

	if (need <= c->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	nb = realloc(c->buf, cap);
	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	c->cap = cap;
	return 0;
}

/* WRITE is checked by hand: its data stays in the socket until it lands in the pool. */
static int write_check(const struct proto_hdr *h)
{
	return h->len < sizeof(struct proto_io_req) ? -EPROTO : 0;
}

static int write_body_check(const struct proto_io_req *r, uint32_t len)
{
	if ((uint64_t)r->len + sizeof(*r) != len || r->len > PROTO_MAX_IO)
		return -EPROTO;
	return 0;
}

/*
 * Read one request payload. For WRITE only the body is read; its data is
 * left for the handler (c->unread). Returns the bytes in c->buf or -errno;
 * *check is proto_req_check()'s verdict on a payload that framed correctly.
 */
static int read_payload(struct conn *c, const struct proto_hdr *h, int *check)
{
	uint32_t n = h->len;
	int rc;

	*check = 0;
	if (h->op == OP_WRITE) {
		if (write_check(h))
			return -EPROTO;
		n = sizeof(struct proto_io_req);
	}
	rc = conn_buf(c, n ? n : 1);
	if (rc)
		return rc;
	rc = recv_all(c->fd, c->buf, n);
	if (rc)
		return rc;
	c->unread = h->len - n;
	if (h->op == OP_WRITE)
		return write_body_check((const void *)c->buf, h->len) ? -EPROTO : (int)n;
	*check = proto_req_check(h->op, c->buf, n);
	return *check == -EPROTO ? -EPROTO : (int)n;
}

/* Header of the next frame; 1 on a clean EOF between frames. */
static int read_header(struct conn *c, struct proto_hdr *h)
{
	ssize_t r;

	do
		r = recv(c->fd, h, sizeof(*h), MSG_WAITALL);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 1;
	if (r < 0)
		return -errno;
	if ((size_t)r < sizeof(*h))
		return recv_all(c->fd, (uint8_t *)h + r, sizeof(*h) - (size_t)r);
	return 0;
}

/* One request: 0 to go on, non-zero to close. */
static int conn_request(struct conn *c, struct pbuf *out)
{
	const struct handler *hd;
	struct proto_hdr h;
	int rc, n, check;

	rc = read_header(c, &h);
	if (rc)
		return rc;
	rc = proto_hdr_check(&h, atomic_load(&c->srv->max_frame));
	hd = rc ? NULL : handler_of(h.op);
	if (!hd) {
		violation(c, h.op, rc == -EMSGSIZE ? "frame too large" : "bad header or op");
		/* The header is sound but for its length: say why before closing. */
		if (rc == -EMSGSIZE && handler_of(h.op))
			send_reply(c, &h, -EMSGSIZE, NULL, 0);
		return -EPROTO;
	}
	n = read_payload(c, &h, &check);
	if (n < 0) {
		if (n == -EPROTO)
			violation(c, h.op, "malformed payload");
		return n;
	}
	atomic_fetch_add(&c->srv->ops[h.op], 1);
	out->len = 0;
	c->replied = 0;
	rc = gate(c, hd, &h);
	/* A well-framed request naming an invalid entry is the caller's error. */
	if (rc == 0 && check)
		rc = send_reply(c, &h, check, NULL, 0);
	else if (rc == 0)
		rc = execute(c, hd, &h, c->buf, (uint32_t)n, out);
	if (rc < 0)
		return rc;
	return c->close;
}

static void conn_trim(struct conn *c, struct pbuf *out)
{
	if (c->cap > CONN_BUF_KEEP) {
		free(c->buf);
		c->buf = NULL;
		c->cap = 0;
	}
	if (out->cap > CONN_BUF_KEEP)
		pbuf_free(out);
}

static void conn_unlink(struct server *srv, struct conn *c)
{
	pthread_mutex_lock(&srv->conns_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	pthread_cond_broadcast(&srv->conns_cond);
	pthread_mutex_unlock(&srv->conns_lock);
}

static void conn_free(struct conn *c)
{
	free(c->buf);
	free(c->cached);
	free(c);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	struct pbuf out = { 0 };
	int rc;

	log_debug("%s: connection open", c->peer);
	while (!atomic_load(&srv->stopping)) {
		rc = conn_request(c, &out);
		if (rc)
			break;
		conn_trim(c, &out);
	}
	pbuf_free(&out);
	if (c->sess)
		session_detach(srv->sessions, c->sess);
	log_debug("%s: connection closed", c->peer);
	close(c->fd);
	conn_unlink(srv, c);
	conn_free(c);
	return NULL;
}

/* ---- accepting ---- */

static void peer_name(struct conn *c, const struct sockaddr_storage *ss, socklen_t sl)
{
	char host[64], port[NI_MAXSERV];
	struct ucred cred;
	socklen_t cl = sizeof(cred);

	if (c->is_unix) {
		if (!getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl))
			snprintf(c->peer, sizeof(c->peer), "unix pid %d uid %u",
				 (int)cred.pid, (unsigned int)cred.uid);
		else
			snprintf(c->peer, sizeof(c->peer), "unix peer");
		return;
	}
	if (getnameinfo((const struct sockaddr *)ss, sl, host, sizeof(host), port,
			sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(c->peer, sizeof(c->peer), "tcp peer");
	else
		snprintf(c->peer, sizeof(c->peer), "%s:%s", host, port);
}

static int conn_new(struct server *srv, int fd, int is_unix, struct conn **out)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cached = malloc(sizeof(*c->cached));
	if (!c->cached) {
		free(c);
		return -ENOMEM;
	}
	c->srv = srv;
	c->fd = fd;
	c->is_unix = is_unix;
	*out = c;
	return 0;
}

static int conn_spawn(struct server *srv, struct conn *c)
{
	pthread_attr_t at;
	pthread_t t;
	int rc;

	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, CONN_STACK_SIZE);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&srv->conns_lock);
	rc = pthread_create(&t, &at, conn_main, c);
	if (!rc) {
		c->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = c;
		srv->conns = c;
		srv->nconns++;
	}
	pthread_mutex_unlock(&srv->conns_lock);
	pthread_attr_destroy(&at);
	return -rc;
}

/*
 * Over max-conns: answer the client's first request (HELLO, or AUTH) with
 * -EUSERS and close, so it learns why at once instead of retrying into
 * resets until its timeout. The accept thread waits for that request at
 * most REFUSE_WAIT_MS and reads at most one small frame of it (so that the
 * close is a clean FIN, not a reset that could swallow the answer).
 */
#define REFUSE_WAIT_MS	50

static void refuse_conn(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t scratch[sizeof(struct proto_hello_req)];
	struct proto_hdr h;
	ssize_t n = 0;

	if (poll(&pfd, 1, REFUSE_WAIT_MS) == 1)
		n = recv(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_WAITALL);
	if (n == (ssize_t)sizeof(h) && h.len <= sizeof(scratch) &&
	    !proto_hdr_check(&h, sizeof(scratch))) {
		if (poll(&pfd, 1, REFUSE_WAIT_MS) == 1)
			(void)!recv(fd, scratch, h.len, MSG_DONTWAIT);
		proto_hdr_init(&h, h.op, 0, h.reqid, 0, -EUSERS);
		(void)!send(fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	shutdown(fd, SHUT_WR);
}

static void accept_one(struct server *srv, struct listener *l)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct conn *c;
	int fd, one = 1;

	fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warn(errno, "accept on %s", l->uri);
		return;
	}
	if (server_nconns(srv) >= atomic_load(&srv->max_conns)) {
		atomic_fetch_add(&srv->rejected_conns, 1);
		log_warnx("%s: max-conns (%u) reached, refusing a connection", l->uri,
			  atomic_load(&srv->max_conns));
		refuse_conn(fd);
		close(fd);
		return;
	}
	if (!l->is_unix)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (conn_new(srv, fd, l->is_unix, &c)) {
		close(fd);
		return;
	}
	peer_name(c, &ss, sl);
	if (conn_spawn(srv, c)) {
		log_warnx("%s: cannot start a connection thread", c->peer);
		close(fd);
		conn_free(c);
	}
}

static void *accept_main(void *arg)
{
	struct server *srv = arg;
	struct pollfd pfd[CONFIG_MAX_LISTEN + 1];
	unsigned int i;

	for (i = 0; i < srv->nlisteners; i++)
		pfd[i] = (struct pollfd){ .fd = srv->listeners[i].fd, .events = POLLIN };
	pfd[srv->nlisteners] = (struct pollfd){ .fd = srv->wake[0], .events = POLLIN };
	while (!atomic_load(&srv->stopping)) {
		if (poll(pfd, srv->nlisteners + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_warn(errno, "poll on listeners");
			break;
		}
		for (i = 0; i < srv->nlisteners; i++)
			if (pfd[i].revents & POLLIN)
				accept_one(srv, &srv->listeners[i]);
	}
	return NULL;
}

/* ---- the fuzzer's seam (server.h): one frame per call, no thread ---- */

int server_fuzz_conn_new(struct server *srv, int fd, struct conn **out)
{
	int rc = conn_new(srv, fd, 1, out);

	if (!rc)
		snprintf((*out)->peer, sizeof((*out)->peer), "fuzz fd %d", fd);
	return rc;
}

int server_fuzz_request(struct conn *c)
{
	struct pbuf out = { 0 };
	int rc = conn_request(c, &out);

	pbuf_free(&out);
	return rc;
}

void server_fuzz_conn_free(struct conn *c)
{
	if (c->sess)
		session_detach(c->srv->sessions, c->sess);
	conn_free(c);
}

/* ---- listeners ---- */

/* A unix socket path left by a dead marud is removed; a live one is an error. */
static int unix_stale(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

static void mkdir_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	/* Only the last component: /run/marud under a fresh /run. */
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		log_warn(errno, "mkdir %s", dir);
}

static int listen_unix(struct listener *l, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	mkdir_parent(path);
	rc = unix_stale(path);
	if (rc)
		return rc;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		return -errno;
	if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	memcpy(l->path, sa.sun_path, sizeof(l->path));
	/* Same reach as loopback TCP; the key (if any) is the access control. */
	chmod(path, 0666);
	l->is_unix = 1;
	return listen(l->fd, LISTEN_BACKLOG) < 0 ? -errno : 0;
}

static int listen_tcp_ai(struct listener *l, const struct addrinfo *ai)
{
	int one = 1;

	l->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (l->fd < 0)
		return -errno;
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(l->fd, LISTEN_BACKLOG) < 0) {
		int rc = -errno;

		close(l->fd);
		l->fd = -1;
		return rc;
	}
	return 0;
}

static int listen_tcp(struct listener *l, const struct maru_addr *a)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res, *ai;
	char host[256], port[16];
	size_t hl = strlen(a->host);
	int rc;

	snprintf(host, sizeof(host), "%s", a->host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	snprintf(port, sizeof(port), "%u", (unsigned int)a->port);
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc)
		return -EADDRNOTAVAIL;
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai && rc; ai = ai->ai_next)
		rc = listen_tcp_ai(l, ai);
	freeaddrinfo(res);
	return rc;
}

static int listener_open(struct listener *l, const char *uri)
{
	struct maru_addr a;
	int rc;

	l->fd = -1;
	snprintf(l->uri, sizeof(l->uri), "%s", uri);
	rc = addr_parse(uri, &a);
	if (rc)
		return rc;
	rc = a.unix ? listen_unix(l, a.path) : listen_tcp(l, &a);
	if (rc)
		log_warn(rc, "listen %s", uri);
	else
		log_info("listening on %s", uri);
	return rc;
}

static void listeners_close(struct server *srv)
{
	unsigned int i;

	for (i = 0; i < srv->nlisteners; i++) {
		struct listener *l = &srv->listeners[i];

		if (l->fd >= 0)
			close(l->fd);
		l->fd = -1;
		if (l->is_unix && l->path[0] && unlink(l->path) < 0 && errno != ENOENT)
			log_warn(errno, "unlink %s", l->path);
		l->path[0] = '\0';
	}
	srv->nlisteners = 0;
}

static int listeners_open(struct server *srv)
{
	unsigned int i;
	int rc;

	for (i = 0; i < srv->cfg.nlisten; i++) {
		rc = listener_open(&srv->listeners[i], srv->cfg.listen[i]);
		srv->nlisteners = i + 1;
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- life cycle ---- */

static int server_dir(struct server *srv)
{
	struct pool *pl = srv->pool;
	uint64_t block = 4096, align = pl->align >= block ? pl->align : block;
	uint64_t size = (pl->size - pl->data_off) & ~(block - 1);
	struct dir_opts o = {
		.eviction = srv->cfg.eviction,
		.copy = server_copy,
		.copy_arg = pl->base,
		.max_leases = srv->cfg.max_leases,
		.max_pending_bytes = srv->cfg.max_pending,
	};
	int rc;

	if (pl->data_off >= pl->size)
		return -ENOSPC;
	rc = alloc_new(pl->data_off, size, block, align, &srv->alloc);
	if (rc)
		return rc;
	o.alloc = srv->alloc;
	return dir_new(&o, &srv->dir);
}

static int server_init(struct server *srv, const struct config *cfg, const uint8_t *key,
		       uint64_t generation)
{
	pthread_condattr_t ca;
	unsigned int i;

	srv->cfg = *cfg;
	srv->generation = generation;
	srv->wake[0] = srv->wake[1] = -1;
	for (i = 0; i < CONFIG_MAX_LISTEN; i++)
		srv->listeners[i].fd = -1;
	if (key) {
		memcpy(srv->key, key, CONFIG_KEY_BYTES);
		srv->have_key = 1;
	}
	atomic_store(&srv->max_conns, cfg->max_conns);
	atomic_store(&srv->max_frame, cfg->max_frame);
	atomic_store(&srv->ack_publish_ms, cfg->ack_publish_ms);
	atomic_store(&srv->ack_ms, cfg->ack_ms);
	pthread_mutex_init(&srv->conns_lock, NULL);
	pthread_cond_init(&srv->conns_cond, NULL);
	pthread_mutex_init(&srv->subs_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->subs_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (sodium_init() < 0)
		return -EIO;
	return pipe2(srv->wake, O_CLOEXEC) < 0 ? -errno : 0;
}

int server_new(const struct config *cfg, const uint8_t *key, uint64_t generation,
	       struct server **out)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int rc;

	if (!srv)
		return -ENOMEM;
	rc = server_init(srv, cfg, key, generation);
	if (rc)
		goto out_destroy;
	rc = pool_open(cfg->pool, cfg->size, generation, &srv->pool);
	if (rc) {
		log_warn(rc, "pool %s", cfg->pool);
		goto out_destroy;
	}
	rc = server_dir(srv);
	if (rc) {
		log_warn(rc, "directory over pool %s", cfg->pool);
		goto out_destroy;
	}
	rc = sessions_new(srv->dir, cfg->grace_ms, &srv->sessions);
	if (rc)
		goto out_destroy;
	rc = listeners_open(srv);
	if (rc)
		goto out_destroy;
	*out = srv;
	return 0;
out_destroy:
	server_destroy(srv);
	return rc;
}

int server_start(struct server *srv)
{
	int rc;

	rc = sessions_start_reaper(srv->sessions);
	if (rc)
		return rc;
	rc = pthread_create(&srv->accept_thread, NULL, accept_main, srv);
	if (rc)
		return -rc;
	srv->accepting = 1;
	return 0;
}

static void stop_accepting(struct server *srv)
{
	char b = 1;

	if (!srv->accepting)
		return;
	if (write(srv->wake[1], &b, 1) < 0)
		log_warn(errno, "waking the accept thread");
	pthread_join(srv->accept_thread, NULL);
	srv->accepting = 0;
}

/* Kick every connection out of its blocking read and wait until all are gone. */
static void close_connections(struct server *srv)
{
	struct conn *c;

	pthread_mutex_lock(&srv->conns_lock);
	while (srv->nconns) {
		for (c = srv->conns; c; c = c->next)
			shutdown(c->fd, SHUT_RDWR);
		pthread_mutex_unlock(&srv->conns_lock);
		dir_events_kick(srv->dir);
		pthread_mutex_lock(&srv->conns_lock);
		if (srv->nconns) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&srv->conns_cond, &srv->conns_lock, &ts);
		}
	}
	pthread_mutex_unlock(&srv->conns_lock);
}

int server_stop(struct server *srv)
{
	int rc;

	atomic_store(&srv->stopping, 1);
	stop_accepting(srv);
	listeners_close(srv);
	close_connections(srv);
	sessions_destroy(srv->sessions);
	srv->sessions = NULL;
	rc = dir_check(srv->dir);
	if (rc)
		log_warnx("shutdown: directory check failed: %s", strerror(-rc));
	else
		log_info("shutdown: directory check passed, accounting exact");
	return rc;
}

void server_destroy(struct server *srv)
{
	if (!srv)
		return;
	if (srv->accepting || srv->nconns)
		server_stop(srv);
	listeners_close(srv);
	sessions_destroy(srv->sessions);
	if (srv->dir)
		dir_destroy(srv->dir);
	if (srv->alloc)
		alloc_destroy(srv->alloc);
	if (srv->pool)
		pool_close(srv->pool);
	if (srv->wake[0] >= 0)
		close(srv->wake[0]);
	if (srv->wake[1] >= 0)
		close(srv->wake[1]);
	pthread_cond_destroy(&srv->conns_cond);
	pthread_mutex_destroy(&srv->conns_lock);
	pthread_cond_destroy(&srv->subs_cond);
	pthread_mutex_destroy(&srv->subs_lock);
	sodium_memzero(srv->key, sizeof(srv->key));
	free(srv);
}

void server_reload(struct server *srv, const struct config *nc)
{
	config_diff_log(&srv->cfg, nc);
	log_set_verbose(nc->verbose);
	sessions_set_grace(srv->sessions, nc->grace_ms);
	atomic_store(&srv->max_conns, nc->max_conns);
	atomic_store(&srv->max_frame, nc->max_frame);
	atomic_store(&srv->ack_publish_ms, nc->ack_publish_ms);
	atomic_store(&srv->ack_ms, nc->ack_ms);
	srv->cfg.verbose = nc->verbose;
	srv->cfg.grace_ms = nc->grace_ms;
	srv->cfg.max_conns = nc->max_conns;
	srv->cfg.max_frame = nc->max_frame;
	srv->cfg.ack_publish_ms = nc->ack_publish_ms;
	srv->cfg.ack_ms = nc->ack_ms;
}

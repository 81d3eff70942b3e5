/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/proto/proto.h: the marud wire protocol, shared by libmaru and marud. Only
 * proto.c encodes and checks frames; everything else goes through proto_*().
 *
 * Message sequence. A client opens a stream socket (TCP or Unix) and sends
 * HELLO (after AUTH when the pool has a key). marud answers with the pool
 * generation, the pool UUID, the pool memory path and geometry, and a session
 * token. Every later request carries that generation in its header; marud
 * refuses a request whose generation is not its own with -ESTALE before
 * executing it. A client may open several sockets for one session by sending
 * the token in HELLO; a client that lost its sockets reconnects the same way
 * within the grace period and finds its leases and pending versions intact
 * (reply field `reclaimed`). Requests on one socket are answered in order;
 * each carries a request id, increasing per session; a request whose id marud
 * has already answered in that session is not applied again: the recorded
 * status is returned (retry after reconnect).
 *
 * A socket that sends SUBSCRIBE becomes an event stream: marud pushes EVENT
 * frames (reqid 0) from then on and reads nothing more from it but PING and
 * EVENT_ACK. A subscriber that sends EVENT_ACK {seq} says every event up to
 * seq has been applied to its caches; marud answers nothing, and from the
 * first ACK on, a PUBLISH, RENAME, UNLINK, MKDIR, RMDIR, SETATTR, SYMLINK,
 * LINK or MKNOD by any other session waits (bounded) for it to acknowledge that change before it
 * replies. The HELLO of an event socket (HELLO_F_EVENTS) may carry the token
 * of the session it serves, without HELLO_F_RECLAIM: that session's own
 * changes do not wait for it (its caches are kept by the requests).
 *
 * Framing: a fixed 32-byte header, then `len` payload bytes. Each request op
 * has a fixed-size body struct followed by a variable tail (names, data), as
 * listed next to the op. Replies echo op and reqid; status is 0 or -errno;
 * on error the payload is empty. All integers are little-endian; the structs
 * below are the wire layout (host must be little-endian, checked at build).
 * A receiver checks magic, version, op and len before reading any field and
 * closes the connection on any violation.
 */
#ifndef MARU_PROTO_H
#define MARU_PROTO_H

#include <stddef.h>
#include <stdint.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "wire format is little-endian");

#define PROTO_MAGIC	0x5552414dU	/* "MARU" */
#define PROTO_VERSION	1
#define PROTO_HDR_SIZE	32
#define PROTO_MAX_FRAME	(8U << 20)	/* payload bytes, default hard limit */
#define PROTO_MAX_IO	(4U << 20)	/* READ/WRITE bytes per frame */
#define PROTO_MAX_EXTENTS 65536		/* per version */
#define PROTO_NAME_MAX	255
#define PROTO_PATH_MAX	4096

enum proto_op {
	OP_PING = 1,		/* -                      -> -                 */
	OP_HELLO = 2,		/* proto_hello_req         -> proto_hello_rep   */
	OP_AUTH = 3,		/* proto_auth              -> proto_auth        */
	OP_STATFS = 4,		/* -                      -> proto_statfs      */
	OP_STATS = 5,		/* -                      -> text (Prometheus) */
	OP_MKDIR = 10,		/* proto_name_req+name     -> proto_attr        */
	OP_RMDIR = 11,		/* proto_name_req+name     -> -                 */
	OP_LOOKUP = 12,		/* proto_name_req+name     -> proto_attr        */
	OP_GETATTR = 13,	/* proto_ino_req           -> proto_attr        */
	OP_SETATTR = 14,	/* proto_setattr_req       -> proto_attr        */
	OP_RENAME = 15,		/* proto_rename_req+old+new -> proto_rename_rep */
	OP_UNLINK = 16,		/* proto_name_req+name     -> -                 */
	OP_READDIR = 17,	/* proto_readdir_req       -> proto_readdir_rep+entries */
	OP_EXISTS = 18,		/* proto_exists_req+names  -> count bytes, 0/1  */
	OP_SYMLINK = 19,	/* proto_symlink_req+name+target -> proto_attr  */
	OP_CREATE = 20,		/* proto_create_req+name   -> proto_attr+extents */
	OP_RESERVE = 21,	/* proto_size_req          -> proto_attr+extents */
	OP_TRUNCATE = 22,	/* proto_size_req          -> proto_attr+extents */
	OP_PUBLISH = 23,	/* proto_publish_req       -> proto_attr [+ dir's]  */
	OP_ABANDON = 24,	/* proto_ino_req           -> -                 */
	OP_OPEN = 25,		/* proto_open_req+name     -> proto_attr+extents */
	OP_RELEASE = 26,	/* proto_ino_req           -> -                 */
	OP_EXTENTS = 27,	/* proto_ino_req           -> proto_attr+extents */
	OP_READ = 28,		/* proto_io_req            -> data              */
	OP_WRITE = 29,		/* proto_io_req+data       -> proto_io_rep      */
	OP_HINT = 30,		/* proto_hint_req          -> -                 */
	OP_READLINK = 31,	/* proto_ino_req           -> target bytes      */
	OP_LINK = 32,		/* proto_link_req+name     -> proto_attr        */
	OP_MKNOD = 33,		/* proto_mknod_req+name    -> proto_attr        */
	OP_SUBSCRIBE = 40,	/* proto_subscribe_req     -> - then EVENTs     */
	OP_EVENT = 41,		/* pushed: proto_event+names+paths              */
	OP_EVENT_ACK = 42,	/* subscriber: proto_ack_req -> no reply         */
	OP_HINTV = 43,		/* proto_hintv_req+request+ranges -> -          */
	OP_HINT_WAIT = 44,	/* proto_hintv_req+request+ranges -> proto_hint_wait_rep */
	OP_RKEY = 48,		/* proto_rkey_req          -> proto_rkey_rep+keys */
	OP_PIN = 56,		/* proto_pin_req           -> proto_pin_rep     */
	OP_MAX
};

struct proto_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t len;		/* payload bytes after the header */
	int32_t status;		/* replies: 0 or -errno; requests: 0 */
	uint64_t reqid;
	uint64_t generation;	/* requests: the client's; replies: marud's */
};
_Static_assert(sizeof(struct proto_hdr) == PROTO_HDR_SIZE, "header size");

#define HELLO_F_RECLAIM	1u	/* token is set: attach to that session */
#define HELLO_F_EVENTS	2u	/* this socket will subscribe; token: its owner */
/* New flag bits are taken from the top down. */
#define HELLO_F_RDMA	(1u << 31)	/* tell me about the rdma listener */
/* A PUBLISH reply holds a second proto_attr: the directory's, as the
 * publish left it (a marud that does not know the flag sends one). */
#define HELLO_F_DIRATTR	(1u << 30)
/*
 * The client will only map the pool (data=shm): a session of a scoped key
 * (marud.conf(5), issue 26) is refused with -EPERM and a log line, since
 * marud never hands a scoped session the pool mapping (its HELLO reply has
 * an empty pool_path and backend 0: data goes over tcp).
 */
#define HELLO_F_SHM	(1u << 29)

struct proto_hello_req {
	uint32_t flags;
	uint32_t proto_version;
	uint8_t token[16];
	uint64_t pid;
	char client_name[32];	/* NUL-padded */
};
_Static_assert(sizeof(struct proto_hello_req) == 64, "hello_req size");

struct proto_hello_rep {
	uint8_t uuid[16];
	uint8_t token[16];
	uint64_t generation;
	uint64_t pool_size;	/* whole mapping, superblock included */
	uint64_t pool_align;
	uint64_t data_off;
	uint64_t max_frame;
	uint32_t reclaimed;	/* 1: the session named by token was found */
	uint32_t backend;	/* 1 shm, 2 file, 3 dax */
	char pool_path[PROTO_PATH_MAX];	/* NUL-terminated */
	/* Answered only to HELLO_F_RDMA from an authenticated connection (or,
	 * with no key configured, a loopback/unix one); else all zero. */
	uint32_t rdma_port;	/* 0: no rdma data path offered */
	uint32_t rdma_flags;	/* RDMA_F_* */
	char rdma_host[64];	/* listener address; "" or 0.0.0.0: the control host */
	/* The region extension, if marud loaded one. */
	uint32_t hint_actions;	/* 1 << action the region extension takes; 0 none */
	uint32_t ext_abi;	/* its marud_extension ABI version; 0 none */
	/* New fields go here, at the end. */
};
_Static_assert(sizeof(struct proto_hello_rep) == 80 + PROTO_PATH_MAX + 72 + 8, "hello_rep size");

/*
 * The rdma data path (marufs-design(7) §6). Control stays on the authenticated stream
 * above; the rdma listener (marud --listen rdma://ADDR:PORT) carries only
 * one-sided transfers. After a HELLO_F_RDMA HELLO that answered rdma_port,
 * the client connects an RC QP there (rdma_cm) with proto_rdma_cm as the
 * private data: the session token names (and proves) the session, whose
 * connection it then is; marud rejects an unknown token, another
 * generation, and (no key configured) a non-loopback peer. marud posts no
 * work requests of its own on that QP except binding and invalidating
 * memory windows. RKEY {ino, flags} asks for the rights on a version the
 * session holds: RKEY_F_WRITE (its own pending version) read-write, else
 * (a lease) read-only. marud binds one type 2 memory window per extent on
 * the session's QP, covering exactly that extent, and answers them in
 * extent order (addr is the remote address to use; pool offsets are the
 * MR's iova). A later RKEY of the same version answers the same
 * windows, plus new ones for extents added since.
 * The windows are invalidated before RELEASE, PUBLISH (refused or not),
 * ABANDON or TRUNCATE of that version returns, before a CREATE_COPY drops
 * its pin when that was the last lease, and before the session ends (see
 * marufs-protocol(7) for the lifecycle in detail), so no access
 * reaches memory after the right to it ended: it fails with a remote access
 * error, and the QP goes to the error state (the client reconnects it).
 * Where the device's windows do not enforce rights and bounds (marud's
 * self-test at start; rdma_rxe checks no window bounds), marud registers
 * instead one MR per extent on the QP's own PD and answers
 * RDMA_F_EXTENT_MR (same use: one rkey per extent, addr a pool offset).
 * Started with rdma-rights = trust-pool: one MR over the pool with remote
 * read/write, RDMA_F_WHOLE_POOL and the same rkey for every extent, said
 * loudly in its log and stats (rdma_pool_exposed 1).
 * Quarantine: pages a WRITE may still reach (the session's RW windows of a
 * QP whose completions are not drained, or any RW right in whole-pool
 * mode) are neither freed nor reused until marud has moved that QP to the
 * error state and drained it; a new generation knows no earlier rkey.
 */
#define RDMA_F_WINDOWS		1u	/* rights enforced by type 2 memory windows */
#define RDMA_F_WHOLE_POOL	2u	/* one MR over the pool: rkeys reach all of it */
#define RDMA_F_EXTENT_MR	4u	/* rights enforced by one MR per extent */
#define RDMA_CM_MAGIC		0x4d44524dU	/* "MRDM" */

/* rdma_cm private data of the client's connect (56 bytes max on IB). */
struct proto_rdma_cm {
	uint32_t magic;
	uint32_t pad;
	uint64_t generation;
	uint8_t token[16];
};
_Static_assert(sizeof(struct proto_rdma_cm) == 32, "rdma_cm size");

#define RKEY_F_WRITE	1u
struct proto_rkey_req {
	uint64_t ino;
	uint32_t flags;
	uint32_t pad;
};
struct proto_rkey_rep {
	uint32_t count;		/* proto_rkey entries following, one per extent */
	uint32_t flags;		/* RDMA_F_* */
};
struct proto_rkey {
	uint64_t off, len;	/* the extent */
	uint64_t addr;		/* remote address of off */
	uint32_t rkey;
	uint32_t pad;
};
_Static_assert(sizeof(struct proto_rkey) == 32, "rkey size");

/*
 * Mutual HMAC challenge-response (libsodium crypto_auth_hmacsha256, key =
 * the shared key file's bytes hashed to 32 bytes with crypto_generichash).
 * When the client has a key it sends, before HELLO:
 *   AUTH req  {nonce = Nc (random), mac = 0}
 *   AUTH rep  {nonce = Ns (random), mac = HMAC(key, "marud" Nc Ns)}
 *   AUTH req  {nonce = Nc, mac = HMAC(key, "maruc" Ns Nc)}   (client checked rep)
 *   AUTH rep  {status 0}  or status -EACCES and the socket is closed.
 * A marud with a key answers any other first request with -EACCES and closes.
 */
struct proto_auth {
	uint8_t nonce[32];
	uint8_t mac[32];
};
_Static_assert(sizeof(struct proto_auth) == 64, "auth size");

/*
 * Scoped keys (issue 26, marud.conf(5) KEY FILE): a client proving a named
 * key sends both AUTH requests as proto_auth_named, the key's name
 * NUL-padded in key_name (1..63 bytes, the same in both); key is then that
 * named key's. marud answers as above; an unknown name is a wrong key
 * (-EACCES, closed). A 64-byte AUTH proves the administrator key. The
 * replies are unchanged (64 bytes, then status alone).
 */
#define PROTO_KEY_NAME_MAX 64
struct proto_auth_named {
	struct proto_auth a;
	char key_name[PROTO_KEY_NAME_MAX];
};
_Static_assert(sizeof(struct proto_auth_named) == 128, "auth_named size");

struct proto_statfs {
	uint64_t capacity, free, evictable, used, pending, orphaned;
	uint64_t names, dirs, versions, block;
};
_Static_assert(sizeof(struct proto_statfs) == 80, "statfs size");

/* Requests naming an entry: the name (namelen bytes, no NUL) follows. */
struct proto_name_req {
	uint64_t parent;
	uint32_t mode, uid, gid;	/* MKDIR only */
	uint16_t namelen;
	uint16_t pad;
};
_Static_assert(sizeof(struct proto_name_req) == 24, "name_req size");

struct proto_ino_req {
	uint64_t ino;
};

#define SETATTR_MODE	1u
#define SETATTR_UID	2u
#define SETATTR_GID	4u
#define SETATTR_ATIME	8u
#define SETATTR_MTIME	16u
struct proto_setattr_req {
	uint64_t ino;
	uint32_t mask;
	uint32_t mode, uid, gid;
	uint64_t atime_ns, mtime_ns;	/* CLOCK_REALTIME; the client resolves "now" */
};
_Static_assert(sizeof(struct proto_setattr_req) == 40, "setattr size");

#define PROTO_RENAME_NOREPLACE 1u	/* same value as renameat2(2) RENAME_NOREPLACE */
struct proto_rename_req {
	uint64_t oldparent, newparent;
	uint32_t flags;
	uint16_t oldlen, newlen;	/* oldname then newname follow */
};
_Static_assert(sizeof(struct proto_rename_req) == 24, "rename size");
/*
 * seq: the event this rename pushed (DEV_RENAME), 0 when it pushed none
 * (the name was only this session's pending version, or old == new, or
 * both names bind one version): a client waiting for its own change to
 * come back on the event stream waits only when seq != 0.
 */
struct proto_rename_rep {
	uint64_t seq;
};
_Static_assert(sizeof(struct proto_rename_rep) == 8, "rename_rep size");

/*
 * Symbolic link: name (namelen) then the target (targetlen bytes,
 * 1..PROTO_PATH_MAX-1, no NUL) follow. The entry holds no pool memory;
 * its size is targetlen. READLINK of its ino returns the target bytes.
 */
struct proto_symlink_req {
	uint64_t parent;
	uint32_t uid, gid;
	uint16_t namelen, targetlen;
	uint32_t pad;
};
_Static_assert(sizeof(struct proto_symlink_req) == 24, "symlink size");

/* Hard link: bind one more name (newparent, name) to published version ino. */
struct proto_link_req {
	uint64_t ino;
	uint64_t newparent;
	uint16_t namelen;
	uint16_t pad[3];
};
_Static_assert(sizeof(struct proto_link_req) == 24, "link size");

/*
 * Special file: mode is S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK plus
 * permission bits; rdev (devices) as the kernel's 32-bit encoding. A
 * metadata-only entry: no pool memory, size 0.
 */
struct proto_mknod_req {
	uint64_t parent;
	uint32_t mode, uid, gid, rdev;
	uint16_t namelen;
	uint16_t pad[3];
};
_Static_assert(sizeof(struct proto_mknod_req) == 32, "mknod size");

struct proto_readdir_req {
	uint64_t dir;
	uint64_t cookie;	/* entries with a greater cookie */
	uint32_t max_entries;
	uint32_t pad;
};
struct proto_readdir_rep {
	uint32_t count;
	uint32_t eof;
};
/* count entries follow, each: proto_dirent then namelen bytes, 8-aligned. */
struct proto_dirent {
	uint64_t ino;
	uint64_t cookie;
	uint32_t mode;
	uint32_t state;
	uint16_t namelen;
	uint16_t pad[3];
};
_Static_assert(sizeof(struct proto_dirent) == 32, "dirent size");

/* count names follow, each u16 length + bytes; reply: count bytes 0/1. */
struct proto_exists_req {
	uint64_t parent;
	uint32_t count;
	uint32_t pad;
};

#define CREATE_EXCL	1u
#define CREATE_COPY	2u
struct proto_create_req {
	uint64_t parent;	/* 0: use from_ino's name */
	uint64_t from_ino;
	uint64_t size_hint;
	uint32_t flags;
	uint32_t mode, uid, gid;
	uint16_t namelen;
	uint16_t pad[3];
};
_Static_assert(sizeof(struct proto_create_req) == 48, "create size");

struct proto_size_req {
	uint64_t ino;
	uint64_t size;
};

struct proto_publish_req {
	uint64_t ino;
	uint64_t size;		/* final size; must be <= reserved */
	uint64_t xxh3;		/* 0: marud computes it */
};

/* ino != 0: lease that version if still bound; else parent+name follow. */
struct proto_open_req {
	uint64_t ino;
	uint64_t parent;
	uint16_t namelen;
	uint16_t pad[3];
};
_Static_assert(sizeof(struct proto_open_req) == 24, "open size");

struct proto_attr {
	uint64_t ino, parent, size, reserved;
	uint64_t atime_ns, mtime_ns, ctime_ns;
	uint64_t xxh3;
	uint32_t mode, uid, gid, nlink;
	uint32_t state, leases;
	uint32_t nextents;	/* proto_extent entries following (held versions) */
	uint32_t rdev;		/* device nodes: the kernel's 32-bit dev_t; else 0 */
};
_Static_assert(sizeof(struct proto_attr) == 96, "attr size");

struct proto_extent {
	uint64_t off;	/* from the start of the pool mapping */
	uint64_t len;
};

struct proto_io_req {
	uint64_t ino;
	uint64_t off;
	uint32_t len;
	uint32_t pad;
};
struct proto_io_rep {
	uint64_t done;
	uint64_t size;	/* version size after the write */
};

/*
 * Hints are advice (marufs-design(7) §4.3): marud checks them and hands them to its
 * region extension, never grants access because of one. HINT names one
 * whole version; HINTV carries a request id and up to PROTO_MAX_HINT_RANGES
 * ranges. Actions: 1 read, 2 read_end, 3 promote, 4 write (for HINT_WAIT:
 * 5 read_wait, 6 write_wait). Every range must lie in a version the
 * connection may read (a lease it holds, or published); write and
 * write_wait only in its own pending version; else the whole message fails
 * with -EPERM (an unknown version: -ENOENT, past its end: -ERANGE). An
 * action the extension does not take (HELLO hint_actions): -EOPNOTSUPP.
 * read opens a hint request per (connection, request id), read_end closes
 * it; beyond PROTO_MAX_HINT_OPEN open ones marud answers -EMFILE.
 */
struct proto_hint_req {
	uint64_t ino;
	uint32_t hint;
	uint32_t pad;
};

#define PROTO_MAX_HINT_RANGES	4096
#define PROTO_MAX_HINT_OPEN	4096
#define PROTO_HINT_REQ_MAX	63	/* request id bytes */
#define HINT_A_READ		1
#define HINT_A_READ_END		2
#define HINT_A_PROMOTE		3
#define HINT_A_WRITE		4
#define HINT_A_READ_WAIT	5
#define HINT_A_WRITE_WAIT	6

/* Then reqlen request id bytes, zero-padded to 8, then count ranges. */
struct proto_hintv_req {
	uint32_t action;
	uint32_t count;
	uint16_t reqlen;
	uint16_t pad;
	uint32_t timeout_ms;	/* HINT_WAIT: 1..10000; else 0 */
};
_Static_assert(sizeof(struct proto_hintv_req) == 16, "hintv_req size");

struct proto_hint_range {
	uint64_t ino;		/* a version */
	uint64_t off;		/* within it */
	uint64_t len;		/* 0: to its end */
};
_Static_assert(sizeof(struct proto_hint_range) == 24, "hint_range size");

struct proto_hint_wait_rep {
	uint32_t ready;		/* leading ranges ready */
	uint32_t pad;
};

/*
 * TTL pins (marufs-design(7) §4.3, marufs-protocol(7)). PIN {ino, seconds}
 * keeps the published version ino from eviction for that long (clamped to
 * marud's pin-max-seconds), or gives it a new deadline; seconds 0 unpins.
 * PIN_F_QUERY changes nothing (seconds must be 0). The reply says the
 * seconds left (0: not pinned). -ENOSPC: the pool's or the tenant's
 * pinned bytes would pass their cap (no other pin is dropped); -EBUSY a
 * pending version; -ESTALE a version replaced or unlinked; -EISDIR,
 * -EINVAL (symlink, special file), -ENOENT.
 */
#define PIN_F_QUERY	1u
struct proto_pin_req {
	uint64_t ino;
	uint32_t seconds;
	uint32_t flags;		/* PIN_F_* */
};
_Static_assert(sizeof(struct proto_pin_req) == 16, "pin_req size");

struct proto_pin_rep {
	uint32_t left;		/* seconds, rounded up */
	uint32_t pad;
};
_Static_assert(sizeof(struct proto_pin_rep) == 8, "pin_rep size");

struct proto_subscribe_req {
	uint64_t after_seq;	/* 0: from now */
};

/* Sent on an event socket: every event up to seq is applied here. */
struct proto_ack_req {
	uint64_t seq;
};
_Static_assert(sizeof(struct proto_ack_req) == 8, "ack_req size");

/*
 * Pushed event: then name, name2, path, path2 bytes (lengths below).
 * EVENT_F_OWN: the session this stream serves (its HELLO's token) made the
 * change, so no change of another session waits on its acknowledgement;
 * set for PUBLISH and REPLACE (0 from a marud that does not know it).
 */
#define EVENT_F_OWN	1u
/*
 * EVENT_F_UNWAITED: this stream missed an acknowledgement deadline and was
 * dropped from the set changes wait on; changes are being answered without
 * it until it acknowledges the event it missed. Its mount's caches may have
 * answered stale meanwhile: it revalidates them. A marud that does not know
 * the flag never sets it; a client that does not know it ignores it.
 */
#define EVENT_F_UNWAITED	2u
struct proto_event {
	uint64_t seq, time_ns;
	uint32_t type;		/* enum maru_event_type values */
	uint32_t flags;		/* EVENT_F_* */
	uint64_t ino, parent, parent2;
	uint16_t namelen, name2len, pathlen, path2len;
};
_Static_assert(sizeof(struct proto_event) == 56, "event size");

/* ---- codec (proto.c) ---- */

/* Fill a header. */
void proto_hdr_init(struct proto_hdr *h, uint16_t op, uint32_t len,
		    uint64_t reqid, uint64_t generation, int32_t status);
/*
 * Check a received header: magic, version, known op, len <= max_frame.
 * Returns 0 or -EPROTO / -EMSGSIZE.
 */
int proto_hdr_check(const struct proto_hdr *h, uint32_t max_frame);
/*
 * Check a request payload of op for the body size and every length field
 * against len (names 1..255 bytes and valid per marufs-design(7) §2 where the op
 * names an entry). Returns 0 or -EPROTO / -EINVAL (bad name).
 */
int proto_req_check(uint16_t op, const void *payload, uint32_t len);
/* Same for replies as a client receives them (status 0). */
int proto_rep_check(uint16_t op, const void *payload, uint32_t len);
/*
 * 0 if a name is valid: 1..255 bytes, no '/' or NUL, not "." or "..";
 * -ENAMETOOLONG over 255 bytes, else -EINVAL.
 */
int proto_name_valid(const char *name, size_t len);
const char *proto_op_name(uint16_t op);

/* Growable output buffer used to build frames. */
struct pbuf {
	uint8_t *data;
	size_t len, cap;
};
int proto_buf_reserve(struct pbuf *b, size_t more);
int proto_buf_put(struct pbuf *b, const void *p, size_t n);
/* Append 0..7 zero bytes so that len is a multiple of 8. */
int proto_buf_align8(struct pbuf *b);
void proto_buf_free(struct pbuf *b);

/*
 * Write header + up to two payload pieces in one gather loop (sockio.h, which
 * also reads frames: sock_read_full).
 */
int proto_send(int fd, const struct proto_hdr *h, const void *p1, size_t n1,
	       const void *p2, size_t n2);

#endif /* MARU_PROTO_H */

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmaru.h: the public client API of a marufs pool. A client talks to one
 * marud (the pool daemon) and moves chunk bytes over the best data path it
 * can have: direct load/store in the pool mapping (shm), or bulk TCP frames.
 * marufs (the FUSE daemon) uses nothing but this header; engines may link
 * libmaru directly.
 *
 * Conventions: every fallible function returns 0 (or a count) on success and
 * a negative errno on failure; errno itself is never an output. All objects
 * are opaque and every function is thread-safe unless it says otherwise.
 *
 * ABI: the layout of every struct below is pinned per symbol version
 * (lib/libmaru.sym; tests/unit/include/maru/abi_test.c fails when one
 * changes). A struct the caller hands in starts with its size (opts_size,
 * set by maru_client_opts_init(); sa_size): the library takes the caller's
 * smaller, older struct as it was. A struct the library fills starts with
 * the size it filled (attr_size, info_size, statfs_size, event_size); a
 * binary built against an older
 * libmaru.h is bound to the older versions of those calls, which fill the
 * older, smaller layout.
 *
 * Objects:
 *   a directory is a namespace, identified by a 64-bit id (root: MARU_ROOT_ID);
 *   a version is the content of a chunk file, identified by a 64-bit id that is
 *   never reused in a pool's lifetime (both ids are inode numbers);
 *   a name in a directory is bound to at most one PUBLISHED version;
 *   a struct maru_file is a handle that either leases a published version
 *   (read only; its bytes stay valid after unlink/replace/evict of the name)
 *   or owns a PENDING version (write; maru_file_publish() binds it to its
 *   name atomically).
 *
 * Failures every call may return:
 *   -ETIMEDOUT  marud unreachable for longer than opts.timeout_ms (the client
 *               keeps reconnecting in the background; later calls may succeed).
 *               Counted from the call's start, waits for a socket included,
 *               however many calls wait at once.
 *   -EINTR      the cancel token bound to the calling thread fired
 *               (maru_cancel_fire, since MARU_0.2)
 *   -ESTALE     the handle or id belongs to an older pool generation (marud
 *               was restarted): the caller must drop what it cached
 *   -EIO        transport or protocol failure on a handle whose state cannot be
 *               recovered
 */
#ifndef MARU_LIBMARU_H
#define MARU_LIBMARU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MARU_ROOT_ID	1ULL
#define MARU_NAME_MAX	255
#define MARU_PATH_MAX	4096
#define MARU_DEFAULT_PORT 7450

/* Data paths, best first. */
enum maru_data_path {
	MARU_DATA_AUTO = 0,	/* shm if the pool maps here, else rdma if offered, else tcp */
	MARU_DATA_SHM = 1,
	MARU_DATA_RDMA = 2,
	MARU_DATA_TCP = 3,
};

/* Coherence of the shared mapping (marufs-design(7) §5). */
enum maru_coherence {
	MARU_COHERENCE_HW = 0,		/* cache-coherent memory or same host */
	MARU_COHERENCE_FLUSH = 1,	/* flush before publish, invalidate before read */
};

struct maru_client;
struct maru_file;
struct maru_events;

struct maru_client_opts {
	size_t opts_size;		/* set by maru_client_opts_init() */
	const char *uri;		/* maru://host[:port] or maru+unix:///path */
	const char *key_file;		/* shared secret (0600); NULL = none */
	enum maru_data_path data_path;	/* default MARU_DATA_AUTO */
	enum maru_coherence coherence;	/* default MARU_COHERENCE_HW */
	unsigned int timeout_ms;	/* bound on one call while marud is down; default 5000 */
	unsigned int max_conns;		/* sockets for parallel calls; default 4 */
	const char *client_name;	/* shown in marud's log; may be NULL */
	/*
	 * Where this client's log lines go (libdaxctl's set_log_fn, per client):
	 * priority is a syslog LOG_* level, msg one line without a newline.
	 * Lines above log_priority are not formatted at all. NULL (default):
	 * warnings and errors go to stderr prefixed "libmaru: ".
	 */
	void (*log_fn)(void *arg, int priority, const char *msg);
	void *log_arg;
	int log_priority;		/* default LOG_INFO; LOG_DEBUG for debug lines */
	/*
	 * data=rdma: bytes of registered staging buffers (default 8 MiB, in
	 * 1 MiB buffers, one work request each in flight); rounded to buffers.
	 */
	size_t rdma_staging_bytes;
	/*
	 * Wait for a reply by polling its socket, without sleeping, for up to
	 * this many microseconds before blocking (default 50; 0: never; at
	 * most 10000). Only a request that is the client's only one in flight
	 * polls; after a reply that did not come in time the next 8 requests
	 * block at once. Where waking a
	 * sleeping thread is slow (a virtual machine, deep CPU idle states),
	 * this makes a serial request several times faster for a little CPU.
	 */
	unsigned int spin_us;
	/*
	 * Since MARU_0.2 (an older, smaller opts leaves them 0). Leases of
	 * small published files the caller closes with maru_lease_cache_put()
	 * are kept for at most this many files, so that reopening one costs
	 * marud no round trip (maru_lease_cache_take()); 0 (default): none.
	 */
	unsigned int lease_cache;
	unsigned int lease_cache_ms;	/* how long one is kept; default 5000 */
	/*
	 * Since MARU_0.2. data=tcp: bytes this client may hold at once for
	 * reads ahead of the caller (a published version read in order is
	 * fetched in 1 MiB frames, up to 16 MiB ahead per handle) and for
	 * writes sent and not yet acknowledged (a copy of each, up to 16 MiB
	 * per handle), all handles together. 0: the default, 64 MiB; less
	 * than 1 MiB: every transfer waits for its reply (one round trip per
	 * frame, as before).
	 */
	size_t stream_bytes;
	/*
	 * Since MARU_0.3. TLS 1.3 on a maru:// (tcp) URI: tls_ca is the PEM
	 * file of the CA marud's certificate must chain to (its name must
	 * match the URI's host); tls_cert and tls_key (both or neither) a
	 * client certificate for a marud that asks for one (mutual TLS).
	 * With tls_ca set the client never speaks clear text: a marud that
	 * does not answer in TLS fails the connection (-EPROTO, -ECONNRESET),
	 * a refused certificate with -EACCES; a unix URI is -EINVAL. The HMAC
	 * key (key_file) is proved inside the TLS session as before.
	 */
	const char *tls_ca;
	const char *tls_cert;
	const char *tls_key;
};

/* Fill opts with defaults. size is sizeof(*opts) as the caller knows it. */
void maru_client_opts_init(struct maru_client_opts *opts, size_t size);

/*
 * Connect to marud, say hello, choose the data path. Fails with -EINVAL for a
 * malformed URI, -ECONNREFUSED/-ETIMEDOUT when marud cannot be reached,
 * -EACCES when authentication fails, -ENODEV when data_path=shm is forced and
 * the pool cannot be mapped here.
 */
int maru_client_new(const struct maru_client_opts *opts, struct maru_client **out);
/* Abandon pending versions, release leases, close sockets, free. */
void maru_client_free(struct maru_client *c);
/*
 * Since MARU_0.3. The TLS of c's sockets: 0, the parameters of its last
 * session in desc (GnuTLS's words, e.g. "(TLS1.3)-(ECDHE-X25519)-
 * (RSA-PSS-RSAE-SHA256)-(AES-256-GCM)"; may be NULL) and in *ktls (may be
 * NULL) 1 when the kernel carried every session's records (kernel TLS), 0
 * when a thread of libmaru did; -ENOTCONN when c does not use TLS.
 */
int maru_client_tls(struct maru_client *c, char *desc, size_t len, int *ktls);

/*
 * Cancelling calls (since MARU_0.2). A token bound to a thread makes the
 * calls that thread makes end with -EINTR as soon as another thread fires
 * it: at once while a call waits for marud's reply, for a socket or for a
 * reconnect, within the socket's timeout while it sends;
 * maru_cancel_fire_after() makes it fire ms from now (the earliest such
 * time wins; 0: now). A request marud
 * may have executed is not undone: a cancelled publish, write or namespace
 * change is in an unknown state, as after -ETIMEDOUT. A token stays fired
 * until maru_cancel_reset(); bind, reset and fire are async-signal-unsafe
 * but need no lock. Binding NULL unbinds; the old token is returned.
 */
struct maru_cancel;
int maru_cancel_new(struct maru_cancel **out);
void maru_cancel_free(struct maru_cancel *t);
struct maru_cancel *maru_cancel_bind(struct maru_cancel *t);
void maru_cancel_fire(struct maru_cancel *t);
void maru_cancel_fire_after(struct maru_cancel *t, unsigned int ms);
void maru_cancel_reset(struct maru_cancel *t);
int maru_cancel_fired(const struct maru_cancel *t);

struct maru_pool_info {
	size_t info_size;	/* set by libmaru: the bytes it filled */
	uint8_t uuid[16];
	uint64_t generation;	/* changes on every marud start */
	uint64_t size;		/* capacity in bytes */
	uint64_t align;		/* pool alignment (2 MiB for devdax) */
	uint64_t data_off;	/* first byte after the superblock */
	char path[MARU_PATH_MAX];	/* pool memory path as marud sees it */
	char uri[MARU_PATH_MAX];	/* the URI this client connected to */
	enum maru_data_path data_path;	/* the path in use (never AUTO) */
	enum maru_coherence coherence;
};
int maru_client_pool_info(struct maru_client *c, struct maru_pool_info *out);
/*
 * How marud enforces the rkeys of its rdma path, as it said in HELLO:
 * "windows" (a type 2 memory window per extent), "extent-mr" (an MR per
 * extent), "trust-pool" (one MR over the whole pool: not enforced), or
 * NULL when marud offered no rdma path to this client.
 */
const char *maru_client_rdma_rights(struct maru_client *c);

/*
 * Called (from a libmaru thread, never with a libmaru lock held) when the
 * client reconnected to a marud of a new generation: every id, handle and
 * cached name the caller holds is stale. Set before or after connect.
 */
typedef void (*maru_generation_cb)(void *arg, uint64_t old_gen, uint64_t new_gen);
void maru_client_on_generation(struct maru_client *c, maru_generation_cb cb, void *arg);
/*
 * How many generation changes made id stale so far (0 at first): a
 * caller keeps it with an id, handle or cached name and compares it with
 * a later call; a new count means marud restarted under it. It moves as
 * the client takes the new session, before the generation callback runs
 * and before any reply of the new marud reaches a caller. A client of one pool counts every
 * change for every id; a routed client (maru+etcd://) counts each pool's
 * changes for that pool's files only, so that one pool's restart leaves
 * the files of the others current, and every change for a directory's id.
 */
uint64_t maru_client_epoch(struct maru_client *c, uint64_t id);

/* ---- attributes ---- */

enum maru_state {
	MARU_STATE_DIR = 1,
	MARU_STATE_PENDING = 2,
	MARU_STATE_PUBLISHED = 3,
	MARU_STATE_ORPHANED = 4,	/* published, name gone, still leased */
};

struct maru_attr {
	size_t attr_size;	/* set by libmaru: the bytes it filled (0: none) */
	uint64_t ino;		/* directory id or version id */
	uint64_t parent;	/* directory holding the name (0 if none) */
	uint64_t size;		/* bytes; directories: number of entries */
	uint64_t reserved;	/* pool bytes held */
	uint32_t mode;		/* S_IF* type | permission bits */
	uint32_t uid, gid;
	uint32_t nlink;		/* names bound to the version (hard links) */
	uint32_t state;		/* enum maru_state */
	uint32_t leases;	/* leases held on this version, all clients */
	uint64_t xxh3;		/* content checksum taken at publish (0 before) */
	struct timespec atime, mtime, ctime;
	uint32_t rdev;		/* device nodes: the kernel's 32-bit dev_t */
};

enum maru_setattr_mask {
	MARU_SET_MODE = 1 << 0,
	MARU_SET_UID = 1 << 1,
	MARU_SET_GID = 1 << 2,
	MARU_SET_ATIME = 1 << 3,
	MARU_SET_MTIME = 1 << 4,
	MARU_SET_ATIME_NOW = 1 << 5,
	MARU_SET_MTIME_NOW = 1 << 6,
};

struct maru_setattr {
	size_t sa_size;		/* sizeof(*sa) as the caller knows it; 0: MARU_0.2's */
	uint32_t mask;		/* enum maru_setattr_mask */
	uint32_t mode, uid, gid;
	struct timespec atime, mtime;
};

/* ---- namespace ---- */

/*
 * Names: 1..255 bytes, no '/' or NUL, not "." or "..": else -EINVAL
 * (-ENAMETOOLONG over 255 bytes).
 */
int maru_mkdir(struct maru_client *c, uint64_t parent, const char *name,
	       uint32_t mode, uint32_t uid, uint32_t gid, struct maru_attr *out);
/* -ENOTEMPTY unless empty; -ENOTDIR for a file; -ENOENT if missing. */
int maru_rmdir(struct maru_client *c, uint64_t parent, const char *name);
/*
 * name -> attributes of the subdirectory or of the published version. A
 * pending version of this client with that name is returned instead of the
 * published one (the writer sees its own file). -ENOENT when neither exists.
 */
int maru_lookup(struct maru_client *c, uint64_t parent, const char *name,
		struct maru_attr *out);
/* By id: directories, published, pending (own) and orphaned-but-leased versions. */
int maru_getattr(struct maru_client *c, uint64_t ino, struct maru_attr *out);
int maru_setattr(struct maru_client *c, uint64_t ino,
		 const struct maru_setattr *sa, struct maru_attr *out);

#define MARU_RENAME_NOREPLACE 1u
/*
 * Atomically rebind oldname to newname (across directories, over an existing
 * file unless NOREPLACE -> -EEXIST). Moves the published version and retargets
 * this client's pending version of that name, so a later publish lands on the
 * new name. Directories rename too (not into their own subtree: -EINVAL).
 */
int maru_rename(struct maru_client *c, uint64_t oldparent, const char *oldname,
		uint64_t newparent, const char *newname, unsigned int flags);
/*
 * maru_rename, and *event_seq = the seq of the MARU_EV_RENAME event it
 * made, 0 when it made none (only this client's pending version moved, or
 * the names were one already, or two names of one version): a caller that
 * waits for its own change on the event stream need not wait then.
 */
int maru_rename_seq(struct maru_client *c, uint64_t oldparent, const char *oldname,
		    uint64_t newparent, const char *newname, unsigned int flags,
		    uint64_t *event_seq);

/* ---- symlinks, hard links, special files ---- */

/*
 * A symbolic link to target (1..4095 bytes): a metadata-only entry, no
 * pool memory, never evicted; size = strlen(target). -EEXIST if bound.
 */
int maru_symlink(struct maru_client *c, uint64_t parent, const char *name,
		 const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out);
/*
 * Copy a symlink's target into buf (NUL-terminated); returns its length.
 * -EINVAL if ino is no symlink, -ERANGE if size <= its length.
 */
int maru_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size);
/*
 * Bind one more name to published version ino (a hard link): every name
 * shows the same ino and nlink; unlinking one keeps the others; eviction
 * removes them all. -EPERM for a directory, -ENOENT if ino is not bound.
 */
int maru_link(struct maru_client *c, uint64_t ino, uint64_t newparent,
	      const char *newname, struct maru_attr *out);
/*
 * A FIFO, socket or device node (mode S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK
 * | permissions; rdev for devices): metadata only, no pool memory.
 */
int maru_mknod(struct maru_client *c, uint64_t parent, const char *name,
	       uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
	       struct maru_attr *out);
/*
 * Remove the name now; bytes are freed when the last lease ends. This client's
 * pending version of that name is detached (its publish becomes a no-op).
 */
int maru_unlink(struct maru_client *c, uint64_t parent, const char *name);

struct maru_dirent {
	uint64_t ino;
	uint64_t cookie;	/* pass back to continue after this entry */
	uint32_t mode;		/* S_IFDIR or S_IFREG (type bits only are promised) */
	uint32_t state;
	uint16_t namelen;
	const char *name;	/* valid during the callback only, not NUL-terminated */
};
/* Return non-zero from the callback to stop early (the call then returns 0). */
typedef int (*maru_readdir_cb)(void *arg, const struct maru_dirent *de);
/*
 * Stream entries of dir with cookie greater than the given one (0 = start),
 * in stable cookie order, fetched from marud in batches; includes this
 * client's pending files. Returns 0, or -errno.
 */
int maru_readdir(struct maru_client *c, uint64_t dir, uint64_t cookie,
		 maru_readdir_cb cb, void *arg);

/* Batch existence check: out[i] = 1 if names[i] is a published file or dir. */
int maru_exists(struct maru_client *c, uint64_t parent, const char *const *names,
		size_t n, uint8_t *out);

struct maru_statfs {
	size_t statfs_size;	/* set by libmaru: the bytes it filled */
	uint64_t capacity;	/* data bytes of the pool */
	uint64_t free;
	uint64_t evictable;	/* published, unleased, evictable bytes */
	uint64_t used;		/* published bytes (bound to a name) */
	uint64_t pending;
	uint64_t orphaned;	/* unlinked/replaced but still leased */
	uint64_t names;
	uint64_t dirs;
	uint64_t block;		/* allocation unit */
};
int maru_statfs(struct maru_client *c, struct maru_statfs *out);

/*
 * The usage of the tenant whose root is directory dir (MARU_0.3; tenants
 * and their quotas: marud.conf(5)): what marufs shows as user.maru.ns.*
 * on that directory. -ENODATA if dir is no tenant's root (a client of a
 * scoped key may ask only about its own root, also as MARU_ROOT_ID).
 */
struct maru_ns_usage {
	size_t usage_size;	/* set by libmaru: the bytes it filled */
	char tenant[64];	/* the key's name, NUL-terminated */
	uint64_t quota;		/* bytes; 0: none */
	uint64_t used;		/* bytes of its published files */
	uint64_t pending;	/* bytes reserved by its files being written */
	uint64_t evictable;	/* its published bytes with no lease */
	uint64_t evictions;	/* its files evicted (own quota or pool pressure) */
	uint64_t evicted_bytes;
	uint64_t enospc;	/* its reservations refused over the quota */
};
int maru_ns_usage(struct maru_client *c, uint64_t dir, struct maru_ns_usage *out);

/*
 * Pool and client metrics as Prometheus text exposition (NUL-terminated).
 * Writes at most len bytes; returns the full length (call again with a larger
 * buffer if it is >= len). While marud cannot be reached the text holds
 * the client's own families only, maru_client_connected 0 among them, and
 * comes within 200 ms once the client knows of the outage (the first call
 * of an outage may wait opts.timeout_ms).
 */
ssize_t maru_stats_text(struct maru_client *c, char *buf, size_t len);

/* ---- files ---- */

enum maru_create_flags {
	MARU_CREATE_EXCL = 1u << 0,	/* -EEXIST if the name has a published version
					   or a pending one of this client */
	MARU_CREATE_COPY = 1u << 1,	/* start as a copy of the current published bytes
					   (open without O_TRUNC) */
};

/*
 * Create a PENDING version for parent/name owned by this client. size_hint
 * reserves memory up front (0: grow as written). -ENOSPC when even eviction
 * cannot supply size_hint bytes.
 */
int maru_file_create(struct maru_client *c, uint64_t parent, const char *name,
		     uint32_t mode, uint32_t uid, uint32_t gid, unsigned int flags,
		     uint64_t size_hint, struct maru_file **out);
/* Same, for the name that version `ino` is currently published under. */
int maru_file_rewrite(struct maru_client *c, uint64_t ino, unsigned int flags,
		      uint64_t size_hint, struct maru_file **out);
/* Lease the current published version of parent/name (-ENOENT if none). */
int maru_file_open(struct maru_client *c, uint64_t parent, const char *name,
		   struct maru_file **out);
/*
 * Lease version `ino` while it is still bound to a name (-ESTALE if it was
 * replaced, unlinked or evicted: look the name up again).
 */
int maru_file_open_ino(struct maru_client *c, uint64_t ino, struct maru_file **out);

uint64_t maru_file_ino(const struct maru_file *f);
int maru_file_is_pending(const struct maru_file *f);
/* Size as the handle knows it, without asking marud (0 for NULL). */
uint64_t maru_file_size(struct maru_file *f);
int maru_file_attr(struct maru_file *f, struct maru_attr *out);

/* Reads never come up short inside the file; 0 at or past the end. */
ssize_t maru_file_pread(struct maru_file *f, void *buf, size_t len, uint64_t off);
/*
 * Pending only (-EBADF on a lease). Grows the reservation as needed (evicting
 * under pressure); -ENOSPC when the pool cannot supply the bytes, and then
 * nothing of this call is written. Holes read as zeros.
 */
ssize_t maru_file_pwrite(struct maru_file *f, const void *buf, size_t len, uint64_t off);
/* Pending only: set the size (zero-filled when growing). */
int maru_file_truncate(struct maru_file *f, uint64_t size);
/* Pending only: make sure `size` bytes are reserved (fallocate / size hint). */
int maru_file_reserve(struct maru_file *f, uint64_t size);
/* Pending only: bytes are in pool memory (flush for coherence=flush). */
int maru_file_sync(struct maru_file *f);
/*
 * Pending only: bind the version to its name atomically, replacing the
 * previous version. Afterwards the handle is a lease on the published version.
 * Returns -ENOENT (and abandons) if the name was unlinked or its directory
 * removed while pending.
 */
int maru_file_publish(struct maru_file *f);
/*
 * Same, and *dir = the attributes of the version's directory as the publish
 * left them (its mtime, ctime and entry count moved with it); dir->ino is
 * 0 when marud did not send them (a marud older than this library).
 * Through a routed client (maru+etcd://), the directory as the cluster
 * shows it: when another pool gives its attributes, the publish did not
 * change them, said by dir->ino (the directory) with dir->attr_size 0.
 */
int maru_file_publish_dir(struct maru_file *f, struct maru_attr *dir);
/* Release a lease, or abandon a pending version (its memory returns to free). */
void maru_file_close(struct maru_file *f);

struct maru_extent {
	uint64_t off;	/* byte offset in the pool mapping */
	uint64_t len;
};
/*
 * The pool extents holding the file's bytes, in file order. Writes at most
 * max entries; returns the total count.
 */
ssize_t maru_file_extents(struct maru_file *f, struct maru_extent *ext, size_t max);
/*
 * Ask marud whether the handle's version may still be used (one round
 * trip): 0, or -EIO while marud keeps the pool out of use (its memory
 * generation unknown), -ESTALE after a new generation, as a new open would.
 */
int maru_file_recheck(struct maru_file *f);

/*
 * Where file byte off of a lease lies in a descriptor, for splice(2) or a
 * FUSE reply that names a descriptor as its source: *fd (read-only, owned
 * by the client: valid until maru_client_free(), never closed or reused
 * for another file before, and not to be closed by the caller), *fd_off
 * the offset in it, *len the bytes from there that are the file's, in
 * order (to the end of the piece of pool memory holding off, at most to
 * the file's end; 0 at or past the end). A range of several pieces takes
 * one call per piece. Checks, without a round trip, that the pool still
 * belongs to the handle's marud generation: a caller reading through fd
 * later than this call races a marud restart, as a direct read does.
 * -EOPNOTSUPP when the bytes cannot be named this way (data path other
 * than shm, coherence=flush, a device-DAX pool, a pending handle): read
 * them with maru_file_pread() then. -ESTALE / -EIO as maru_file_pread().
 */
int maru_file_splice_src(struct maru_file *f, uint64_t off, int *fd, uint64_t *fd_off,
			 size_t *len);

/* ---- the lease cache (opts.lease_cache) ----
 *
 * A held lease keeps its version's bytes in the pool (marud neither evicts
 * nor frees them), so the cache is bounded every way: files of at most
 * MARU_LEASE_CACHE_FILE_MAX bytes, at most opts.lease_cache of them, within
 * 1/32 of the pool and at most 64 MiB, each for opts.lease_cache_ms. The
 * caller says which versions it still wants: a kept lease is found only by
 * its ino, and it stays valid after the version's name went (a lease does),
 * so a caller that must not see a replaced version drops it when its events
 * say so. Leases of an older session or generation are never handed out.
 */
#define MARU_LEASE_CACHE_FILE_MAX	(64u * 1024)

/*
 * Close f, keeping its lease for a later maru_lease_cache_take() of its
 * ino when it is a lease of a published file that fits the cache (oldest
 * leases make room); else a plain maru_file_close(). f is gone either way.
 */
void maru_lease_cache_put(struct maru_file *f);
/* The lease kept for version ino, now the caller's: 0, or -ENOENT. */
int maru_lease_cache_take(struct maru_client *c, uint64_t ino, struct maru_file **out);
/* Close what is kept for ino (its version went, or the caller forgot it). */
void maru_lease_cache_drop(struct maru_client *c, uint64_t ino);
/* Close every kept lease (events were lost, the caller starts over). */
void maru_lease_cache_clear(struct maru_client *c);
/*
 * Close the leases kept longer than opts.lease_cache_ms. put and take do
 * it too; a caller that may go idle calls this now and then (each second).
 */
void maru_lease_cache_expire(struct maru_client *c);
/* Leases kept now. */
unsigned int maru_lease_cache_count(struct maru_client *c);

/* ---- hints (marufs-design(7) §4.3; advice, never needed for correctness) ---- */

enum maru_hint_action {
	MARU_HINT_READ = 1,	/* request will read these ranges: bring them in */
	MARU_HINT_READ_END = 2,	/* request is done reading (no ranges) */
	MARU_HINT_PROMOTE = 3,	/* request's load starts now: serve it first */
	MARU_HINT_WRITE = 4,	/* a store will write these (own pending) ranges */
};
#define MARU_HINT_MAX_RANGES	4096	/* per message; maru_hint() splits */
#define MARU_HINT_REQUEST_MAX	63	/* request id bytes */

struct maru_hint_range {
	uint64_t ino;		/* a version: published, leased, or own pending */
	uint64_t off;		/* byte offset in it */
	uint64_t len;		/* 0: to its end */
};
/*
 * Which hint actions marud's region extension takes: bit (1 << action);
 * 0 when it has none. maru_hint() sends only those.
 */
uint32_t maru_hint_actions(struct maru_client *c);
/*
 * Send one hint. request names the request (1..63 bytes, no NUL; may be
 * NULL or "" for MARU_HINT_WRITE); read_end and promote take no ranges.
 * Returns 0 when marud took it, -EOPNOTSUPP when its extension does not
 * take that action (nothing is sent), -EPERM when a range is not one this
 * client may read (for write: not its own pending version), -ENOENT /
 * -ERANGE for an unknown version or a range past its end, -EMFILE when the
 * connection already has the most open read requests marud allows (4096).
 * A hint never grants access and may do nothing.
 */
int maru_hint(struct maru_client *c, int action, const char *request,
	      const struct maru_hint_range *r, size_t n);

/* ---- TTL pins (marufs-design(7) §4.3; since MARU_0.3) ---- */

/*
 * Keep published version ino (a file's ino, as maru_lookup() gives it)
 * from eviction for `seconds` (clamped to marud's pin-max-seconds), or
 * give a pinned version a new deadline; seconds 0 unpins. The pin belongs
 * to that version: a new version published under the name, or a rename
 * over it, starts unpinned and the old one's pin ends with its name.
 * Returns the seconds granted (0 after an unpin), -ENOSPC when the pool's
 * or the tenant's pinned bytes would pass their cap (no other pin is
 * dropped for it), -EBUSY for a pending version, -ESTALE for one already
 * replaced or unlinked, -EISDIR, -EINVAL (symlink or special file),
 * -ENOENT. A marud older than pins does not know the request (it ends
 * the connection: the call fails).
 */
int maru_pin_set(struct maru_client *c, uint64_t ino, uint32_t seconds);
/* Seconds left of ino's pin, rounded up; 0 when it has none. */
int maru_pin_get(struct maru_client *c, uint64_t ino);

/* ---- events ---- */

enum maru_event_type {
	MARU_EV_PUBLISH = 1,	/* a name now has a (new) version */
	MARU_EV_REPLACE = 2,	/* same, and an older version was dropped */
	MARU_EV_UNLINK = 3,
	MARU_EV_EVICT = 4,
	MARU_EV_MKDIR = 5,
	MARU_EV_RMDIR = 6,
	MARU_EV_RENAME = 7,	/* parent/name -> parent2/name2 */
	MARU_EV_SETATTR = 8,
	MARU_EV_SYMLINK = 9,	/* a symlink was created at parent/name */
	MARU_EV_LINK = 10,	/* parent/name is one more name of version ino */
	MARU_EV_MKNOD = 11,	/* a FIFO, socket or device node was created */
	MARU_EV_OVERFLOW = 100,	/* events were lost: drop every cached name */
	MARU_EV_GENERATION = 101, /* marud restarted: drop everything */
};

/*
 * The change was made by this subscription's client itself (its own
 * session; marud says so for PUBLISH and REPLACE): no other client waits
 * for maru_events_ack() of it.
 */
#define MARU_EV_F_OWN	1u
/*
 * This subscription missed an acknowledgement deadline and marud answers
 * other clients' changes without waiting for it, until it acknowledges the
 * event it missed: what it cached may have been stale meanwhile.
 */
#define MARU_EV_F_UNWAITED	2u

struct maru_event {
	size_t event_size;	/* set by libmaru: the bytes it filled */
	uint64_t seq;
	uint64_t time_ns;	/* CLOCK_REALTIME */
	uint32_t type;
	uint32_t flags;		/* MARU_EV_F_* */
	uint64_t ino;		/* version or directory id concerned */
	uint64_t parent, parent2;
	char name[MARU_NAME_MAX + 1], name2[MARU_NAME_MAX + 1];
	char path[MARU_PATH_MAX], path2[MARU_PATH_MAX];	/* from the root, "/a/b" */
};

/* Subscribe on a connection of its own, from sequence after_seq (0 = now). */
int maru_events_open(struct maru_client *c, uint64_t after_seq, struct maru_events **out);
/* 1: an event was stored; 0: timeout; -errno. Reconnects by itself. */
int maru_events_next(struct maru_events *ev, struct maru_event *out, int timeout_ms);
/*
 * Tell marud every event up to seq has been applied here (caches
 * invalidated); mutations by other clients wait (bounded) for this before
 * they return. Once a subscription has acknowledged, it should go on doing
 * so whenever it has caught up. Safe to call from another thread than
 * maru_events_next(). -ENOTCONN while the stream is down: nothing to
 * acknowledge then, and after a reconnect acks resume naturally.
 */
int maru_events_ack(struct maru_events *ev, uint64_t seq);
/*
 * 1 while the stream is connected, 0 while it is down (lost: broken, or
 * silent past its stall bound, and not yet back); *losses (may be NULL):
 * how many times it was lost since maru_events_open(). marud answers
 * changes without waiting for a stream it cannot reach: a subscriber that
 * keeps caches treats them as stale across a loss. -EINVAL for NULL.
 */
int maru_events_up(struct maru_events *ev, uint64_t *losses);
void maru_events_close(struct maru_events *ev);

const char *maru_strerror(int err);	/* text for a -errno from this API */
const char *maru_version(void);

#ifdef __cplusplus
}
#endif

/* the rest of the API, in headers of their own */
#include <maru/map.h>
#include <maru/cluster.h>

#endif /* MARU_LIBMARU_H */

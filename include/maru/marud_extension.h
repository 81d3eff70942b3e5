/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * include/maru/marud_extension.h: the versioned C ABI of a marud region
 * extension, a shared module that marud loads with dlopen() when started
 * with --region-extension NAME|PATH. The module exports one data symbol,
 * MARUD_EXTENSION_SYMBOL, a struct marud_extension whose abi_version is
 * MARUD_EXTENSION_ABI and whose size is sizeof(struct marud_extension) as
 * the module was built; marud refuses to start on any other version, on a
 * size smaller than version 1's, or when open() fails. See
 * marud-extension(3) for the contract; in short:
 *
 *  - Hooks answer from local state within microseconds; a hook that must
 *    touch the device queues the work for a thread of its own. Only
 *    read_wait and write_wait may block (up to timeout_ms, 1..10000), and
 *    they run on the requesting connection's thread, so only it waits.
 *  - marud checks every hinted range before the extension sees it: each lies
 *    in a version the connection may read (a lease it holds, or a published
 *    version), or for write hints in the connection's own pending version.
 *    A hint never grants access: the load still leases and reads.
 *  - hint() is called outside marud's directory lock, in the order the
 *    connection issued the hints; it only queues. A failing hint is logged
 *    and ignored.
 *  - retire() is called, under the directory lock, before freed pool bytes
 *    can be handed out again; their old contents are garbage from then on.
 *  - memory_generation() tells the identity of the memory's contents. A
 *    change means the device lost what it held: marud drops its directory
 *    and starts a new pool generation (clients see EIO on old descriptors).
 *    -EAGAIN for longer than the grace period makes the generation unknown:
 *    opens and maps are refused until it answers again.
 *
 * Ranges are byte offsets from the start of the pool mapping (the same
 * offsets as user.maru.extent) and lengths; a hint carries at most
 * MARUD_EXT_MAX_RANGES of them.
 */
#ifndef MARUD_EXTENSION_H
#define MARUD_EXTENSION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MARUD_EXTENSION_ABI	1
#define MARUD_EXTENSION_SYMBOL	"marud_extension"
#define MARUD_EXT_MAX_RANGES	4096

/* Hint actions; the values are the wire's (OP_HINT, OP_HINTV). */
enum marud_ext_action {
	MARUD_EXT_READ = 1,		/* the request will read these ranges */
	MARUD_EXT_READ_END = 2,		/* the request is done reading (no ranges) */
	MARUD_EXT_PROMOTE = 3,		/* the request's load starts now: move it first */
	MARUD_EXT_WRITE = 4,		/* a store will write these ranges soon */
	MARUD_EXT_READ_WAIT = 5,	/* synchronous: wait until ranges are ready */
	MARUD_EXT_WRITE_WAIT = 6,
};
#define MARUD_EXT_ACTION_BIT(a)	(1u << (a))

/* The pool memory as marud mapped it. */
struct marud_ext_region {
	const char *uri;	/* "file:/var/lib/maru/pool" */
	const char *path;	/* the backing object clients map */
	int fd;			/* marud's descriptor of it (do not close) */
	uint32_t backend;	/* 1 shm, 2 file, 3 dax */
	uint8_t *base;		/* marud's MAP_SHARED mapping */
	uint64_t size;		/* mapped bytes */
	uint64_t data_off;	/* first byte versions use */
};

struct marud_ext_range {
	uint64_t off;		/* from the start of the mapping */
	uint64_t len;
};

struct marud_extension {
	uint32_t abi_version;	/* MARUD_EXTENSION_ABI */
	uint32_t size;		/* sizeof(struct marud_extension) */
	const char *name;
	/* MARUD_EXT_ACTION_BIT()s of the hints taken; advertised in HELLO. */
	uint32_t actions;
	uint32_t pad;

	/* Required. config: --region-extension-config, "" if none. */
	int (*open)(const char *config, void **state);
	void (*close)(void *state);

	/* Optional (NULL: not called). 0 or -errno. */
	int (*validate_access)(void *state, const struct marud_ext_region *r);
	/*
	 * The region is mapped and about to be served. fresh: its contents
	 * are new (a new pool, or a directory started empty) and may be
	 * discarded. An error keeps the region out of use: marud refuses
	 * opens and writes, and calls mapped() again until it succeeds.
	 */
	int (*mapped)(void *state, const struct marud_ext_region *r, int fresh);
	/*
	 * A checked hint of connection conn (an id unique for marud's life).
	 * request: NUL-terminated, 1..63 bytes ("" for WRITE with no token).
	 * READ_END and PROMOTE carry no ranges.
	 */
	int (*hint)(void *state, uint64_t conn, enum marud_ext_action action,
		    const char *request, const struct marud_ext_range *r, uint32_t n);
	/*
	 * Block up to timeout_ms until the leading ranges are ready; return
	 * how many leading ranges are (0..n) or -errno.
	 */
	int (*read_wait)(void *state, uint64_t conn, const struct marud_ext_range *r,
			 uint32_t n, uint32_t timeout_ms);
	int (*write_wait)(void *state, uint64_t conn, const struct marud_ext_range *r,
			  uint32_t n, uint32_t timeout_ms);
	/* These bytes were freed; they may be reused once this returns. */
	void (*retire)(void *state, const struct marud_ext_range *r);
	/* conn closed: end what its hints started. */
	void (*connection_closed)(void *state, uint64_t conn);
	/* 0 and *gen, or -EAGAIN while the memory cannot tell. */
	int (*memory_generation)(void *state, uint64_t *gen);
};

#ifdef __cplusplus
}
#endif

#endif /* MARUD_EXTENSION_H */

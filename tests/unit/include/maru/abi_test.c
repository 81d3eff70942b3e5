/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/include/maru/abi_test.c: the public structs keep their layout
 * (what libfuse's test_abi does). Every field of every struct of
 * <maru/libmaru.h> (with <maru/marufs_ioctl.h>), of the MARU_0.1 layouts
 * libmaru still fills (lib/compat.h), and of <maru/marud_extension.h> has
 * its offset and size pinned below, and each struct its size and alignment.
 *
 * A pinned table belongs to a version: libmaru's to the newest node of
 * lib/libmaru.sym, the extension's to MARUD_EXTENSION_ABI and the size of
 * struct marud_extension. The history lists, oldest first, each version
 * and the digest of its pinned table. So a change of layout fails here
 * until the pins are updated AND a new version is added: a new node in
 * libmaru.sym (with the calls whose structs grew, and lib/compat.c for the
 * old layout), or a new extension size or ABI; then append the new
 * digest. A node that adds calls and no layout repeats the digest before
 * it, marked calls_only. `abi_test --print` prints the tables and digests
 * as they are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <maru/libmaru.h>
#include <maru/marud_extension.h>
#include "compat.h"

struct pin {
	const char *type, *field;	/* field NULL: the struct itself */
	size_t off, size;		/* the struct: size, alignment */
};

#define STRUCT(s)	{ #s, NULL, sizeof(struct s), _Alignof(struct s) }
#define FIELD(s, f)	{ #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f) }

static const struct pin lib_actual[] = {
	STRUCT(maru_client_opts),
	FIELD(maru_client_opts, opts_size),
	FIELD(maru_client_opts, uri),
	FIELD(maru_client_opts, key_file),
	FIELD(maru_client_opts, data_path),
	FIELD(maru_client_opts, coherence),
	FIELD(maru_client_opts, timeout_ms),
	FIELD(maru_client_opts, max_conns),
	FIELD(maru_client_opts, client_name),
	FIELD(maru_client_opts, log_fn),
	FIELD(maru_client_opts, log_arg),
	FIELD(maru_client_opts, log_priority),
	FIELD(maru_client_opts, rdma_staging_bytes),
	FIELD(maru_client_opts, spin_us),
	FIELD(maru_client_opts, lease_cache),
	FIELD(maru_client_opts, lease_cache_ms),
	FIELD(maru_client_opts, stream_bytes),
	FIELD(maru_client_opts, tls_ca),
	FIELD(maru_client_opts, tls_cert),
	FIELD(maru_client_opts, tls_key),
	STRUCT(maru_pool_info),
	FIELD(maru_pool_info, info_size),
	FIELD(maru_pool_info, uuid),
	FIELD(maru_pool_info, generation),
	FIELD(maru_pool_info, size),
	FIELD(maru_pool_info, align),
	FIELD(maru_pool_info, data_off),
	FIELD(maru_pool_info, path),
	FIELD(maru_pool_info, uri),
	FIELD(maru_pool_info, data_path),
	FIELD(maru_pool_info, coherence),
	STRUCT(maru_attr),
	FIELD(maru_attr, attr_size),
	FIELD(maru_attr, ino),
	FIELD(maru_attr, parent),
	FIELD(maru_attr, size),
	FIELD(maru_attr, reserved),
	FIELD(maru_attr, mode),
	FIELD(maru_attr, uid),
	FIELD(maru_attr, gid),
	FIELD(maru_attr, nlink),
	FIELD(maru_attr, state),
	FIELD(maru_attr, leases),
	FIELD(maru_attr, xxh3),
	FIELD(maru_attr, atime),
	FIELD(maru_attr, mtime),
	FIELD(maru_attr, ctime),
	FIELD(maru_attr, rdev),
	STRUCT(maru_setattr),
	FIELD(maru_setattr, sa_size),
	FIELD(maru_setattr, mask),
	FIELD(maru_setattr, mode),
	FIELD(maru_setattr, uid),
	FIELD(maru_setattr, gid),
	FIELD(maru_setattr, atime),
	FIELD(maru_setattr, mtime),
	STRUCT(maru_dirent),
	FIELD(maru_dirent, ino),
	FIELD(maru_dirent, cookie),
	FIELD(maru_dirent, mode),
	FIELD(maru_dirent, state),
	FIELD(maru_dirent, namelen),
	FIELD(maru_dirent, name),
	STRUCT(maru_statfs),
	FIELD(maru_statfs, statfs_size),
	FIELD(maru_statfs, capacity),
	FIELD(maru_statfs, free),
	FIELD(maru_statfs, evictable),
	FIELD(maru_statfs, used),
	FIELD(maru_statfs, pending),
	FIELD(maru_statfs, orphaned),
	FIELD(maru_statfs, names),
	FIELD(maru_statfs, dirs),
	FIELD(maru_statfs, block),
	STRUCT(maru_ns_usage),
	FIELD(maru_ns_usage, usage_size),
	FIELD(maru_ns_usage, tenant),
	FIELD(maru_ns_usage, quota),
	FIELD(maru_ns_usage, used),
	FIELD(maru_ns_usage, pending),
	FIELD(maru_ns_usage, evictable),
	FIELD(maru_ns_usage, evictions),
	FIELD(maru_ns_usage, evicted_bytes),
	FIELD(maru_ns_usage, enospc),
	STRUCT(maru_extent),
	FIELD(maru_extent, off),
	FIELD(maru_extent, len),
	STRUCT(maru_hint_range),
	FIELD(maru_hint_range, ino),
	FIELD(maru_hint_range, off),
	FIELD(maru_hint_range, len),
	STRUCT(maru_event),
	FIELD(maru_event, event_size),
	FIELD(maru_event, seq),
	FIELD(maru_event, time_ns),
	FIELD(maru_event, type),
	FIELD(maru_event, flags),
	FIELD(maru_event, ino),
	FIELD(maru_event, parent),
	FIELD(maru_event, parent2),
	FIELD(maru_event, name),
	FIELD(maru_event, name2),
	FIELD(maru_event, path),
	FIELD(maru_event, path2),
	STRUCT(marufs_extent),
	FIELD(marufs_extent, off),
	FIELD(marufs_extent, len),
	STRUCT(marufs_extents),
	FIELD(marufs_extents, magic),
	FIELD(marufs_extents, version),
	FIELD(marufs_extents, first),
	FIELD(marufs_extents, flags),
	FIELD(marufs_extents, uuid),
	FIELD(marufs_extents, generation),
	FIELD(marufs_extents, ino),
	FIELD(marufs_extents, size),
	FIELD(marufs_extents, pool_size),
	FIELD(marufs_extents, align),
	FIELD(marufs_extents, data_off),
	FIELD(marufs_extents, coherence),
	FIELD(marufs_extents, nextents),
	FIELD(marufs_extents, count),
	FIELD(marufs_extents, reserved),
	FIELD(marufs_extents, pool_path),
	FIELD(marufs_extents, ext),
	STRUCT(maru_attr_v1),
	FIELD(maru_attr_v1, ino),
	FIELD(maru_attr_v1, parent),
	FIELD(maru_attr_v1, size),
	FIELD(maru_attr_v1, reserved),
	FIELD(maru_attr_v1, mode),
	FIELD(maru_attr_v1, uid),
	FIELD(maru_attr_v1, gid),
	FIELD(maru_attr_v1, nlink),
	FIELD(maru_attr_v1, state),
	FIELD(maru_attr_v1, leases),
	FIELD(maru_attr_v1, xxh3),
	FIELD(maru_attr_v1, atime),
	FIELD(maru_attr_v1, mtime),
	FIELD(maru_attr_v1, ctime),
	FIELD(maru_attr_v1, rdev),
	STRUCT(maru_pool_info_v1),
	FIELD(maru_pool_info_v1, uuid),
	FIELD(maru_pool_info_v1, generation),
	FIELD(maru_pool_info_v1, size),
	FIELD(maru_pool_info_v1, align),
	FIELD(maru_pool_info_v1, data_off),
	FIELD(maru_pool_info_v1, path),
	FIELD(maru_pool_info_v1, uri),
	FIELD(maru_pool_info_v1, data_path),
	FIELD(maru_pool_info_v1, coherence),
	STRUCT(maru_setattr_v1),
	FIELD(maru_setattr_v1, mask),
	FIELD(maru_setattr_v1, mode),
	FIELD(maru_setattr_v1, uid),
	FIELD(maru_setattr_v1, gid),
	FIELD(maru_setattr_v1, atime),
	FIELD(maru_setattr_v1, mtime),
	STRUCT(maru_statfs_v1),
	FIELD(maru_statfs_v1, capacity),
	FIELD(maru_statfs_v1, free),
	FIELD(maru_statfs_v1, evictable),
	FIELD(maru_statfs_v1, used),
	FIELD(maru_statfs_v1, pending),
	FIELD(maru_statfs_v1, orphaned),
	FIELD(maru_statfs_v1, names),
	FIELD(maru_statfs_v1, dirs),
	FIELD(maru_statfs_v1, block),
	STRUCT(maru_event_v1),
	FIELD(maru_event_v1, seq),
	FIELD(maru_event_v1, time_ns),
	FIELD(maru_event_v1, type),
	FIELD(maru_event_v1, flags),
	FIELD(maru_event_v1, ino),
	FIELD(maru_event_v1, parent),
	FIELD(maru_event_v1, parent2),
	FIELD(maru_event_v1, name),
	FIELD(maru_event_v1, name2),
	FIELD(maru_event_v1, path),
	FIELD(maru_event_v1, path2),
	/* MARU_0.3: a cluster's membership */
	STRUCT(maru_cluster_opts),
	FIELD(maru_cluster_opts, opts_size),
	FIELD(maru_cluster_opts, uri),
	FIELD(maru_cluster_opts, etcd_ca),
	FIELD(maru_cluster_opts, etcd_cert),
	FIELD(maru_cluster_opts, etcd_key),
	FIELD(maru_cluster_opts, etcd_user),
	FIELD(maru_cluster_opts, etcd_password),
	FIELD(maru_cluster_opts, refresh_ms),
	FIELD(maru_cluster_opts, timeout_ms),
	FIELD(maru_cluster_opts, settle_s),
	STRUCT(maru_cluster_pool),
	FIELD(maru_cluster_pool, pool_size),
	FIELD(maru_cluster_pool, uuid),
	FIELD(maru_cluster_pool, uri),
	FIELD(maru_cluster_pool, capacity),
	FIELD(maru_cluster_pool, weight),
	FIELD(maru_cluster_pool, draining),
	FIELD(maru_cluster_pool, zone),
	FIELD(maru_cluster_pool, since),
};

static const struct pin ext_actual[] = {
	STRUCT(marud_ext_region),
	FIELD(marud_ext_region, uri),
	FIELD(marud_ext_region, path),
	FIELD(marud_ext_region, fd),
	FIELD(marud_ext_region, backend),
	FIELD(marud_ext_region, base),
	FIELD(marud_ext_region, size),
	FIELD(marud_ext_region, data_off),
	STRUCT(marud_ext_range),
	FIELD(marud_ext_range, off),
	FIELD(marud_ext_range, len),
	STRUCT(marud_extension),
	FIELD(marud_extension, abi_version),
	FIELD(marud_extension, size),
	FIELD(marud_extension, name),
	FIELD(marud_extension, actions),
	FIELD(marud_extension, pad),
	FIELD(marud_extension, open),
	FIELD(marud_extension, close),
	FIELD(marud_extension, validate_access),
	FIELD(marud_extension, mapped),
	FIELD(marud_extension, hint),
	FIELD(marud_extension, read_wait),
	FIELD(marud_extension, write_wait),
	FIELD(marud_extension, retire),
	FIELD(marud_extension, connection_closed),
	FIELD(marud_extension, memory_generation),
};

/* ---- the pins (abi_test --print) ---- */

static const struct pin lib_pinned[] = {
	{ "maru_client_opts", NULL, 128, 8 },
	{ "maru_client_opts", "opts_size", 0, 8 },
	{ "maru_client_opts", "uri", 8, 8 },
	{ "maru_client_opts", "key_file", 16, 8 },
	{ "maru_client_opts", "data_path", 24, 4 },
	{ "maru_client_opts", "coherence", 28, 4 },
	{ "maru_client_opts", "timeout_ms", 32, 4 },
	{ "maru_client_opts", "max_conns", 36, 4 },
	{ "maru_client_opts", "client_name", 40, 8 },
	{ "maru_client_opts", "log_fn", 48, 8 },
	{ "maru_client_opts", "log_arg", 56, 8 },
	{ "maru_client_opts", "log_priority", 64, 4 },
	{ "maru_client_opts", "rdma_staging_bytes", 72, 8 },
	{ "maru_client_opts", "spin_us", 80, 4 },
	{ "maru_client_opts", "lease_cache", 84, 4 },
	{ "maru_client_opts", "lease_cache_ms", 88, 4 },
	{ "maru_client_opts", "stream_bytes", 96, 8 },
	{ "maru_client_opts", "tls_ca", 104, 8 },
	{ "maru_client_opts", "tls_cert", 112, 8 },
	{ "maru_client_opts", "tls_key", 120, 8 },
	{ "maru_pool_info", NULL, 8256, 8 },
	{ "maru_pool_info", "info_size", 0, 8 },
	{ "maru_pool_info", "uuid", 8, 16 },
	{ "maru_pool_info", "generation", 24, 8 },
	{ "maru_pool_info", "size", 32, 8 },
	{ "maru_pool_info", "align", 40, 8 },
	{ "maru_pool_info", "data_off", 48, 8 },
	{ "maru_pool_info", "path", 56, 4096 },
	{ "maru_pool_info", "uri", 4152, 4096 },
	{ "maru_pool_info", "data_path", 8248, 4 },
	{ "maru_pool_info", "coherence", 8252, 4 },
	{ "maru_attr", NULL, 128, 8 },
	{ "maru_attr", "attr_size", 0, 8 },
	{ "maru_attr", "ino", 8, 8 },
	{ "maru_attr", "parent", 16, 8 },
	{ "maru_attr", "size", 24, 8 },
	{ "maru_attr", "reserved", 32, 8 },
	{ "maru_attr", "mode", 40, 4 },
	{ "maru_attr", "uid", 44, 4 },
	{ "maru_attr", "gid", 48, 4 },
	{ "maru_attr", "nlink", 52, 4 },
	{ "maru_attr", "state", 56, 4 },
	{ "maru_attr", "leases", 60, 4 },
	{ "maru_attr", "xxh3", 64, 8 },
	{ "maru_attr", "atime", 72, 16 },
	{ "maru_attr", "mtime", 88, 16 },
	{ "maru_attr", "ctime", 104, 16 },
	{ "maru_attr", "rdev", 120, 4 },
	{ "maru_setattr", NULL, 56, 8 },
	{ "maru_setattr", "sa_size", 0, 8 },
	{ "maru_setattr", "mask", 8, 4 },
	{ "maru_setattr", "mode", 12, 4 },
	{ "maru_setattr", "uid", 16, 4 },
	{ "maru_setattr", "gid", 20, 4 },
	{ "maru_setattr", "atime", 24, 16 },
	{ "maru_setattr", "mtime", 40, 16 },
	{ "maru_dirent", NULL, 40, 8 },
	{ "maru_dirent", "ino", 0, 8 },
	{ "maru_dirent", "cookie", 8, 8 },
	{ "maru_dirent", "mode", 16, 4 },
	{ "maru_dirent", "state", 20, 4 },
	{ "maru_dirent", "namelen", 24, 2 },
	{ "maru_dirent", "name", 32, 8 },
	{ "maru_statfs", NULL, 80, 8 },
	{ "maru_statfs", "statfs_size", 0, 8 },
	{ "maru_statfs", "capacity", 8, 8 },
	{ "maru_statfs", "free", 16, 8 },
	{ "maru_statfs", "evictable", 24, 8 },
	{ "maru_statfs", "used", 32, 8 },
	{ "maru_statfs", "pending", 40, 8 },
	{ "maru_statfs", "orphaned", 48, 8 },
	{ "maru_statfs", "names", 56, 8 },
	{ "maru_statfs", "dirs", 64, 8 },
	{ "maru_statfs", "block", 72, 8 },
	{ "maru_ns_usage", NULL, 128, 8 },
	{ "maru_ns_usage", "usage_size", 0, 8 },
	{ "maru_ns_usage", "tenant", 8, 64 },
	{ "maru_ns_usage", "quota", 72, 8 },
	{ "maru_ns_usage", "used", 80, 8 },
	{ "maru_ns_usage", "pending", 88, 8 },
	{ "maru_ns_usage", "evictable", 96, 8 },
	{ "maru_ns_usage", "evictions", 104, 8 },
	{ "maru_ns_usage", "evicted_bytes", 112, 8 },
	{ "maru_ns_usage", "enospc", 120, 8 },
	{ "maru_extent", NULL, 16, 8 },
	{ "maru_extent", "off", 0, 8 },
	{ "maru_extent", "len", 8, 8 },
	{ "maru_hint_range", NULL, 24, 8 },
	{ "maru_hint_range", "ino", 0, 8 },
	{ "maru_hint_range", "off", 8, 8 },
	{ "maru_hint_range", "len", 16, 8 },
	{ "maru_event", NULL, 8760, 8 },
	{ "maru_event", "event_size", 0, 8 },
	{ "maru_event", "seq", 8, 8 },
	{ "maru_event", "time_ns", 16, 8 },
	{ "maru_event", "type", 24, 4 },
	{ "maru_event", "flags", 28, 4 },
	{ "maru_event", "ino", 32, 8 },
	{ "maru_event", "parent", 40, 8 },
	{ "maru_event", "parent2", 48, 8 },
	{ "maru_event", "name", 56, 256 },
	{ "maru_event", "name2", 312, 256 },
	{ "maru_event", "path", 568, 4096 },
	{ "maru_event", "path2", 4664, 4096 },
	{ "marufs_extent", NULL, 16, 8 },
	{ "marufs_extent", "off", 0, 8 },
	{ "marufs_extent", "len", 8, 8 },
	{ "marufs_extents", NULL, 4704, 8 },
	{ "marufs_extents", "magic", 0, 4 },
	{ "marufs_extents", "version", 4, 4 },
	{ "marufs_extents", "first", 8, 4 },
	{ "marufs_extents", "flags", 12, 4 },
	{ "marufs_extents", "uuid", 16, 16 },
	{ "marufs_extents", "generation", 32, 8 },
	{ "marufs_extents", "ino", 40, 8 },
	{ "marufs_extents", "size", 48, 8 },
	{ "marufs_extents", "pool_size", 56, 8 },
	{ "marufs_extents", "align", 64, 8 },
	{ "marufs_extents", "data_off", 72, 8 },
	{ "marufs_extents", "coherence", 80, 4 },
	{ "marufs_extents", "nextents", 84, 4 },
	{ "marufs_extents", "count", 88, 4 },
	{ "marufs_extents", "reserved", 92, 4 },
	{ "marufs_extents", "pool_path", 96, 512 },
	{ "marufs_extents", "ext", 608, 4096 },
	{ "maru_attr_v1", NULL, 120, 8 },
	{ "maru_attr_v1", "ino", 0, 8 },
	{ "maru_attr_v1", "parent", 8, 8 },
	{ "maru_attr_v1", "size", 16, 8 },
	{ "maru_attr_v1", "reserved", 24, 8 },
	{ "maru_attr_v1", "mode", 32, 4 },
	{ "maru_attr_v1", "uid", 36, 4 },
	{ "maru_attr_v1", "gid", 40, 4 },
	{ "maru_attr_v1", "nlink", 44, 4 },
	{ "maru_attr_v1", "state", 48, 4 },
	{ "maru_attr_v1", "leases", 52, 4 },
	{ "maru_attr_v1", "xxh3", 56, 8 },
	{ "maru_attr_v1", "atime", 64, 16 },
	{ "maru_attr_v1", "mtime", 80, 16 },
	{ "maru_attr_v1", "ctime", 96, 16 },
	{ "maru_attr_v1", "rdev", 112, 4 },
	{ "maru_pool_info_v1", NULL, 8248, 8 },
	{ "maru_pool_info_v1", "uuid", 0, 16 },
	{ "maru_pool_info_v1", "generation", 16, 8 },
	{ "maru_pool_info_v1", "size", 24, 8 },
	{ "maru_pool_info_v1", "align", 32, 8 },
	{ "maru_pool_info_v1", "data_off", 40, 8 },
	{ "maru_pool_info_v1", "path", 48, 4096 },
	{ "maru_pool_info_v1", "uri", 4144, 4096 },
	{ "maru_pool_info_v1", "data_path", 8240, 4 },
	{ "maru_pool_info_v1", "coherence", 8244, 4 },
	{ "maru_setattr_v1", NULL, 48, 8 },
	{ "maru_setattr_v1", "mask", 0, 4 },
	{ "maru_setattr_v1", "mode", 4, 4 },
	{ "maru_setattr_v1", "uid", 8, 4 },
	{ "maru_setattr_v1", "gid", 12, 4 },
	{ "maru_setattr_v1", "atime", 16, 16 },
	{ "maru_setattr_v1", "mtime", 32, 16 },
	{ "maru_statfs_v1", NULL, 72, 8 },
	{ "maru_statfs_v1", "capacity", 0, 8 },
	{ "maru_statfs_v1", "free", 8, 8 },
	{ "maru_statfs_v1", "evictable", 16, 8 },
	{ "maru_statfs_v1", "used", 24, 8 },
	{ "maru_statfs_v1", "pending", 32, 8 },
	{ "maru_statfs_v1", "orphaned", 40, 8 },
	{ "maru_statfs_v1", "names", 48, 8 },
	{ "maru_statfs_v1", "dirs", 56, 8 },
	{ "maru_statfs_v1", "block", 64, 8 },
	{ "maru_event_v1", NULL, 8752, 8 },
	{ "maru_event_v1", "seq", 0, 8 },
	{ "maru_event_v1", "time_ns", 8, 8 },
	{ "maru_event_v1", "type", 16, 4 },
	{ "maru_event_v1", "flags", 20, 4 },
	{ "maru_event_v1", "ino", 24, 8 },
	{ "maru_event_v1", "parent", 32, 8 },
	{ "maru_event_v1", "parent2", 40, 8 },
	{ "maru_event_v1", "name", 48, 256 },
	{ "maru_event_v1", "name2", 304, 256 },
	{ "maru_event_v1", "path", 560, 4096 },
	{ "maru_event_v1", "path2", 4656, 4096 },
	{ "maru_cluster_opts", NULL, 72, 8 },
	{ "maru_cluster_opts", "opts_size", 0, 8 },
	{ "maru_cluster_opts", "uri", 8, 8 },
	{ "maru_cluster_opts", "etcd_ca", 16, 8 },
	{ "maru_cluster_opts", "etcd_cert", 24, 8 },
	{ "maru_cluster_opts", "etcd_key", 32, 8 },
	{ "maru_cluster_opts", "etcd_user", 40, 8 },
	{ "maru_cluster_opts", "etcd_password", 48, 8 },
	{ "maru_cluster_opts", "refresh_ms", 56, 4 },
	{ "maru_cluster_opts", "timeout_ms", 60, 4 },
	{ "maru_cluster_opts", "settle_s", 64, 4 },
	{ "maru_cluster_pool", NULL, 408, 8 },
	{ "maru_cluster_pool", "pool_size", 0, 8 },
	{ "maru_cluster_pool", "uuid", 8, 40 },
	{ "maru_cluster_pool", "uri", 48, 272 },
	{ "maru_cluster_pool", "capacity", 320, 8 },
	{ "maru_cluster_pool", "weight", 328, 4 },
	{ "maru_cluster_pool", "draining", 332, 4 },
	{ "maru_cluster_pool", "zone", 336, 64 },
	{ "maru_cluster_pool", "since", 400, 8 },
};

static const struct pin ext_pinned[] = {
	{ "marud_ext_region", NULL, 48, 8 },
	{ "marud_ext_region", "uri", 0, 8 },
	{ "marud_ext_region", "path", 8, 8 },
	{ "marud_ext_region", "fd", 16, 4 },
	{ "marud_ext_region", "backend", 20, 4 },
	{ "marud_ext_region", "base", 24, 8 },
	{ "marud_ext_region", "size", 32, 8 },
	{ "marud_ext_region", "data_off", 40, 8 },
	{ "marud_ext_range", NULL, 16, 8 },
	{ "marud_ext_range", "off", 0, 8 },
	{ "marud_ext_range", "len", 8, 8 },
	{ "marud_extension", NULL, 104, 8 },
	{ "marud_extension", "abi_version", 0, 4 },
	{ "marud_extension", "size", 4, 4 },
	{ "marud_extension", "name", 8, 8 },
	{ "marud_extension", "actions", 16, 4 },
	{ "marud_extension", "pad", 20, 4 },
	{ "marud_extension", "open", 24, 8 },
	{ "marud_extension", "close", 32, 8 },
	{ "marud_extension", "validate_access", 40, 8 },
	{ "marud_extension", "mapped", 48, 8 },
	{ "marud_extension", "hint", 56, 8 },
	{ "marud_extension", "read_wait", 64, 8 },
	{ "marud_extension", "write_wait", 72, 8 },
	{ "marud_extension", "retire", 80, 8 },
	{ "marud_extension", "connection_closed", 88, 8 },
	{ "marud_extension", "memory_generation", 96, 8 },
};

/* libmaru: each symbol version node and its pinned table's digest, oldest first. */
static const struct {
	const char *node;
	uint64_t digest;
	int calls_only;		/* the node adds calls, no layout: the digest repeats */
} lib_history[] = {
	{ "MARU_0.1", 0x58064f5f70f8db02ull },	/* before the size fields */
	/* the size fields, opts.lease_cache, opts.stream_bytes */
	{ "MARU_0.2", 0xeb2d3759b1afdabeull },
	/* struct maru_cluster_opts, struct maru_cluster_pool (the cluster calls);
	 * struct maru_ns_usage (maru_ns_usage, tenants' quotas); opts.tls_ca,
	 * opts.tls_cert, opts.tls_key (TLS); the TTL pin calls */
	{ "MARU_0.3", 0x73a6e771b83f762aull },
	/* maru_client_epoch (a pool's restart stales its own files only) */
	{ "MARU_0.4", 0x73a6e771b83f762aull, 1 },
};

/* The extension: each ABI version and struct size, and its table's digest. */
static const struct {
	uint32_t abi, size;
	uint64_t digest;
} ext_history[] = {
	{ 1, 104, 0x29f133049b16fd4eull },
};

#define N(a)	(sizeof(a) / sizeof((a)[0]))

/* FNV-1a over the names and numbers of a table. */
static uint64_t digest(const struct pin *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	char line[256];
	size_t i, k;

	for (i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "%s.%s %zu %zu;", p[i].type,
			 p[i].field ? p[i].field : "", p[i].off, p[i].size);
		for (k = 0; line[k]; k++)
			h = (h ^ (uint8_t)line[k]) * 0x100000001b3ull;
	}
	return h;
}

/* Every difference between the layout and the pins, printed; their count. */
static int compare(const struct pin *a, size_t na, const struct pin *p, size_t np)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < na || i < np; i++) {
		if (i >= na || i >= np || strcmp(a[i].type, p[i].type) ||
		    !a[i].field != !p[i].field ||
		    (a[i].field && strcmp(a[i].field, p[i].field))) {
			printf("ABI: table entry %zu is %s.%s, pinned %s.%s\n", i,
			       i < na ? a[i].type : "(none)",
			       i < na && a[i].field ? a[i].field : "",
			       i < np ? p[i].type : "(none)",
			       i < np && p[i].field ? p[i].field : "");
			return bad + 1;
		}
		if (a[i].off != p[i].off || a[i].size != p[i].size) {
			printf("ABI: struct %s%s%s: %s %zu, %s %zu; pinned %zu, %zu\n",
			       a[i].type, a[i].field ? "." : "", a[i].field ? a[i].field : "",
			       a[i].field ? "offset" : "size", a[i].off,
			       a[i].field ? "size" : "align", a[i].size, p[i].off, p[i].size);
			bad++;
		}
	}
	return bad;
}

/* The names of the version nodes of libmaru.sym, in order; their count. */
static int sym_nodes(char nodes[][32], int max)
{
	FILE *fp = fopen(ABI_SYM_FILE, "r");
	char line[256], name[32];
	int n = 0, comment = 0;

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		if (strstr(line, "/*"))
			comment = 1;
		if (comment) {
			comment = !strstr(line, "*/");
			continue;
		}
		if (sscanf(line, "%31[A-Za-z0-9_.] {", name) == 1 && strchr(line, '{') &&
		    n < max)
			snprintf(nodes[n++], 32, "%s", name);
	}
	fclose(fp);
	return n;
}

static void test_lib_layout(void **state)
{
	if (compare(lib_actual, N(lib_actual), lib_pinned, N(lib_pinned)))
		fail_msg("a public struct of libmaru changed layout: it needs a new "
			 "version node in lib/libmaru.sym (see the top of this file)");
}

static void test_lib_pins_belong_to_newest_node(void **state)
{
	char nodes[16][32];
	size_t i, j, last = N(lib_history) - 1;
	int n = sym_nodes(nodes, 16);

	assert_int_equal(n, (int)N(lib_history));
	for (i = 0; i < N(lib_history); i++) {
		assert_string_equal(nodes[i], lib_history[i].node);
		if (lib_history[i].calls_only) {
			assert_true(i && lib_history[i - 1].digest == lib_history[i].digest);
			continue;
		}
		for (j = 0; j < i; j++)
			assert_true(lib_history[j].digest != lib_history[i].digest);
	}
	if (digest(lib_pinned, N(lib_pinned)) != lib_history[last].digest)
		fail_msg("the pins changed (digest %#llx) but %s's is %#llx: add a version "
			 "node to lib/libmaru.sym and its line to lib_history",
			 (unsigned long long)digest(lib_pinned, N(lib_pinned)),
			 lib_history[last].node, (unsigned long long)lib_history[last].digest);
}

static void test_ext_layout(void **state)
{
	if (compare(ext_actual, N(ext_actual), ext_pinned, N(ext_pinned)))
		fail_msg("a struct of marud_extension.h changed layout: it needs a new "
			 "MARUD_EXTENSION_ABI or extension size (see the top of this file)");
}

static void test_ext_pins_belong_to_abi(void **state)
{
	size_t i, j, last = N(ext_history) - 1;

	for (i = 0; i < N(ext_history); i++)
		for (j = 0; j < i; j++)
			assert_true(ext_history[j].digest != ext_history[i].digest);
	assert_int_equal(ext_history[last].abi, MARUD_EXTENSION_ABI);
	assert_int_equal(ext_history[last].size, sizeof(struct marud_extension));
	if (digest(ext_pinned, N(ext_pinned)) != ext_history[last].digest)
		fail_msg("the extension pins changed (digest %#llx): add a line to ext_history "
			 "for a new extension size or MARUD_EXTENSION_ABI",
			 (unsigned long long)digest(ext_pinned, N(ext_pinned)));
}

static void print_table(const char *name, const struct pin *p, size_t n)
{
	size_t i;

	printf("static const struct pin %s[] = {\n", name);
	for (i = 0; i < n; i++)
		printf("\t{ \"%s\", %s%s%s, %zu, %zu },\n", p[i].type, p[i].field ? "\"" : "",
		       p[i].field ? p[i].field : "NULL", p[i].field ? "\"" : "", p[i].off,
		       p[i].size);
	printf("};\n/* digest %#llx */\n\n", (unsigned long long)digest(p, n));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lib_layout),
		cmocka_unit_test(test_lib_pins_belong_to_newest_node),
		cmocka_unit_test(test_ext_layout),
		cmocka_unit_test(test_ext_pins_belong_to_abi),
	};

	if (argc > 1 && !strcmp(argv[1], "--print")) {
		print_table("lib_pinned", lib_actual, N(lib_actual));
		print_table("ext_pinned", ext_actual, N(ext_actual));
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

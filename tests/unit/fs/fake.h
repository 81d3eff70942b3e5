/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/fake.h: a fake libmaru and a fake libfuse reply side for the
 * unit tests of fs/. Every maru_* and fuse_* call the fs objects make is
 * redirected at link time (-Wl,--wrap=SYM, list in tests/unit/meson.build)
 * to the __wrap_SYM functions of fake.c: a pool of in-memory versions by id,
 * a name table, and a record of the replies and notifications sent.
 */
#ifndef FS_FAKE_H
#define FS_FAKE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/statvfs.h>

#include "mount.h"

#define FAKE_MAX	256

/* A version of the fake pool; published ones are found by lookup/open. */
struct fake_ver {
	uint64_t ino, parent;
	char name[64];
	char data[72 * 1024];	/* past the 64 KiB a small file is */
	size_t size;
	uint64_t reserved;
	int published, used;
};

struct fake {
	struct fake_ver v[FAKE_MAX];
	uint64_t next_ino;
	int files_open, publishes, closes, rewrites, creates;
	int publish_rc;		/* next maru_file_publish() result */
	void (*publish_hook)(void);	/* called as maru_file_publish() begins */
	int open_ino_rc;	/* forced maru_file_open_ino() result (0: normal) */
	int away_rc;		/* lookup, getattr, readdir, statfs fail so (0: no) */
	/* replies */
	int replies, last_err;
	char last_buf[8192];
	size_t last_len, last_xattr;
	int inval_entries, inval_inodes;
	int stores;		/* fuse_lowlevel_notify_store() calls */
	uint64_t last_store_ino;
	char last_inval[64];
	/* fuse_reply_create/statfs/write/data (tests that --wrap them) */
	uint64_t last_namemax, last_blocks;
	int last_direct_io, datas;
	/* maru_file_pread: at most pread_max bytes a call (0: all); from call
	 * number pread_err_after on, pread_err (0: never) */
	size_t pread_max;
	int preads, pread_err, pread_err_after;
	/* maru_file_splice_src: a lease's bytes lie in pieces of splice_piece
	 * bytes of descriptor FAKE_SPLICE_FD, file byte off at fd offset
	 * FAKE_SPLICE_BASE + off (0: -EOPNOTSUPP, as over tcp) */
	size_t splice_piece;
	int splices;
	/* transfer errors: the next maru_file_pwrite (after writing pwrite_part
	 * bytes of it), maru_file_sync and maru_file_truncate fail with these
	 * (0: never); each is cleared once it fired */
	int pwrite_err, sync_err, truncate_err;
	size_t pwrite_part;
	/* maru_ns_usage: the one tenant root (0: none) and its usage */
	uint64_t ns_root;
	struct maru_ns_usage ns;
	/* maru_pin_set/get: pin_rc (0: none) fails the next set; the seconds
	 * set are what get answers; the last set's version and seconds */
	int pin_rc, pin_sets;
	uint32_t pin_left, last_pin_seconds;
	uint64_t last_pin_ino;
	/* the last fuse_req_interrupt_func() registration */
	fuse_req_t intr_req;
	fuse_interrupt_func_t intr_func;
	void *intr_data;
	/* what maru_statfs answers; the last fuse_reply_statfs() whole */
	struct maru_statfs statfs;
	struct statvfs last_statvfs;
	/* maru_client_epoch(): epoch (every id's, a marud restart) plus
	 * pool_epoch[id's top byte & 3] (one pool of a cluster restarted) */
	uint64_t epoch, pool_epoch[4];
};

#define FAKE_SPLICE_FD		42
#define FAKE_SPLICE_BASE	(1ull << 20)

extern struct fake fk;

/* A mount context with every table made (no client, no threads). */
void fake_mount(struct mfs *m);
void fake_unmount(struct mfs *m);
void fake_reset(void);
/* A published version of (parent, name) holding text; its id. */
uint64_t fake_publish(uint64_t parent, const char *name, const char *text);
/* A lease on version ino, as maru_file_open_ino() gives it (aborts if none). */
struct maru_file *fake_lease(uint64_t ino);
struct fake_ver *fake_ver(uint64_t ino);
/* The published version of (parent, name), or NULL. */
struct fake_ver *fake_named(uint64_t parent, const char *name);
/* A scripted event stream (events_test.c); NULL: maru_events_open fails. */
struct fake_events {
	int (*open)(struct maru_events **out);
	int (*next)(struct maru_event *out, int ms);
	int (*ack)(uint64_t seq);
	void (*close)(void);
	int (*up)(uint64_t *losses);	/* NULL: always up, never lost */
};
extern const struct fake_events *fake_events;
/* A request whose userdata is m. */
fuse_req_t fake_req(struct mfs *m);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/dir_priv.h: the inside of struct dir, shared by the files of
 * daemon/dir/ and by nothing else. It defines the records and declares each
 * file's internal calls, grouped by the file that owns them. Calls run one
 * way, from a file to the files it names:
 *
 *   dir.c (new/destroy/sessions, dir_scratch: owns the lock)
 *   fill.c (out-of-lock copy and zero-fill) -> version.c
 *   ns.c, version.c, link.c (the public namespace and version calls)
 *   check.c (stats and the accounting recount)
 *   lease.c (leases, open/release) -> lru.c (the LRU and eviction)
 *   event.c (the event ring and waiters) -> record.c
 *   record.c (changes as journal records; the owner table and walk
 *     persist/ is handed)          replay.c (what a replayed record means)
 *   link.c, links.c (hard links, symlinks; the index of link nodes)
 *   node.c (records: nodes, pending and orphaned versions, extents, attrs)
 *   index.c (the names and ids tables over lib/common/htab.c)
 *
 * Warm restart lives in daemon/persist/: record.c (and ns.c, version.c,
 * link.c for dir_record_room) call into it through persist.h; persist/
 * never calls a dir/ function by name, only the tables it is handed:
 * the owner table replay.c fills (dir_persist_owner: dir_record_walk and
 * dir_record_id_next in record.c, apply_item, drop_version and replayed in
 * replay.c) and, for `marud -n`, dir.c's dir_scratch; so no file of
 * persist/ is in a cycle with one of dir/. Every *_locked or internal function here runs
 * with d->lock held; see dir.c for the lock rules.
 *
 * Layout, chosen to keep a published name near 200 bytes of heap:
 *  - a struct node is one bound name: a directory (struct dnode inline) or a
 *    file with its published version (struct ver inline, first extent
 *    inline). Its name follows it (not NUL-terminated);
 *  - pending versions live in a struct pend (owner session, target name);
 *    orphaned versions (unbound, still leased) are a bare malloc'd struct ver;
 *    so a version moves (dir_ver_move) when it is published or orphaned, and
 *    nothing outside daemon/dir/ holds a pointer to one: leases name
 *    versions by id;
 *  - two hash tables: `names` maps (parent id, name) to nodes and to
 *    attached pending versions (tag bit 1), `ids` maps ids to directories
 *    (tag bit 1) and versions;
 *  - each directory keeps its children in an rbtree by cookie so readdir
 *    resumes in O(log n); cookies come from one counter, never reused.
 */
#ifndef MARUD_DIR_PRIV_H
#define MARUD_DIR_PRIV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "dir.h"
#include "htab.h"
#include "proto.h"
#include "rbtree.h"
#include "ttlpin.h"

#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

#define TAG 1u
#define EVENT_RING_DEFAULT 65536u
#define HTAB_MIN 64u

struct lru_link {
	struct lru_link *prev, *next;	/* prev == NULL: not on the LRU */
};

/* One file version; where it lives depends on state (see the top). */
struct ver {
	uint64_t id;
	struct lru_link lru;
	uint64_t size, xxh3;
	uint64_t atime, mtime, ctime;
	uint32_t mode, uid, gid;
	uint32_t leases;
	uint32_t next;		/* extents; 0 or 1: ext.one, else ext.xl */
	uint8_t state;		/* enum dir_state */
	uint8_t pinned;		/* in d->pins (ttlpin.c): kept off the LRU */
	uint16_t links;		/* names bound besides the node holding it (link.c) */
	/*
	 * A regular file's extents. Symlinks and special files (link.c) have
	 * none (next == 0) and keep here the target (heap, NUL-terminated,
	 * size bytes) or the device number.
	 */
	union {
		struct extent one;
		struct extent_list xl;
		char *target;
		uint64_t rdev;
	} ext;
};

struct dnode {
	uint64_t id;
	struct rb_root kids;	/* struct node by cookie */
	uint64_t nent;
	uint64_t atime, mtime, ctime;
	uint32_t mode, uid, gid, nsub;
};

/*
 * NODE_LINK: one more name of a published version held by another node
 * (hard link, link.c); u.l names it and keeps the link in d->links.
 */
enum { NODE_DIR = 1, NODE_FILE = 2, NODE_LINK = 3 };

struct lnode {
	uint64_t target;	/* version id */
	struct rb_node rb;	/* in d->links by (target, cookie) */
};

/*
 * kind and nlen follow the union and the name follows them: no padding
 * before the name (a 19-byte chunk name makes a 176-byte malloc chunk, not
 * 192). No hash is kept: index.c recomputes it from the name.
 */
struct node {
	struct rb_node rb;	/* in the parent's kids */
	uint64_t parent;
	uint64_t cookie;
	union {
		struct ver v;
		struct dnode d;
		struct lnode l;
	} u;
	uint8_t kind, nlen;
	char name[];
};

struct pend {
	struct ver v;
	struct dir_session *owner;
	struct pend *sprev, *snext;
	uint64_t parent;	/* target directory */
	uint64_t cookie;	/* readdir position while the name is unbound */
	uint32_t hash;
	uint8_t attached;	/* 0 once the owner unlinked the target name */
	uint8_t filling;	/* an out-of-lock fill (fill.c) is writing it */
	uint8_t nlen;
	char name[PROTO_NAME_MAX];
};

struct lease {
	struct rb_node rb;
	uint64_t id;
	uint32_t count;
};

struct dir_session {
	uint64_t id;
	struct dir_session *prev, *next;
	struct pend *pends;
	struct rb_root leases;	/* struct lease by id */
	uint64_t nleases, pending_bytes;
};

/* An event as kept: paths as one heap string "path\0path2\0". */
struct evrec {
	uint64_t seq, time_ns;
	uint32_t type;
	uint64_t origin;	/* d->ev_origin when pushed */
	uint64_t ino, parent, parent2;
	char *paths;
};

struct evring {
	struct evrec *rec;
	uint32_t cap, max, head, count;
	uint64_t seq;		/* last assigned */
	uint64_t kick;
};

struct dir {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* event waiters (CLOCK_MONOTONIC) */
	pthread_cond_t fill_cond;	/* a pending version stopped filling */
	struct dir_opts o;
	uint64_t block;
	struct htab names, ids;
	struct node *root;
	struct lru_link lru;		/* head: least recently used */
	struct rb_root links;		/* NODE_LINK nodes by (target, cookie) */
	struct dir_session *sessions;
	uint64_t next_id, next_cookie, next_sid;
	uint64_t used, pending, orphaned, evictable;
	uint64_t nnames, ndirs, nvers, nleases, nsessions;
	struct dir_stats st;		/* only the event counters are kept here */
	struct evring ev;
	uint64_t ev_origin;		/* the session whose change is being pushed, 0: none */
	struct persist *p;		/* record.c: the journal, when kept warm (persist/) */
	struct ttlpins pins;		/* TTL pins (ttlpin.c; pinver.c, lru.c) */
};

struct nkey {
	uint64_t parent;
	const char *name;
	size_t nlen;
	uint32_t hash;
};

struct evname {
	uint64_t parent;
	const char *name;
	size_t nlen;
};

/* ---- small pure helpers ---- */

static inline uint64_t round_up(uint64_t v, uint64_t b)
{
	return (v + b - 1) / b * b;
}

static inline int name_is_tmp(const char *name, size_t nlen)
{
	return memmem(name, nlen, ".tmp", 4) != NULL;
}

static inline struct node *ver_node(struct ver *v)
{
	return container_of(v, struct node, u.v);
}

static inline struct pend *ver_pend(struct ver *v)
{
	return container_of(v, struct pend, v);
}

/* Read-only extent_list view of a version's extents. */
static inline const struct extent_list *ver_view(const struct ver *v,
						 struct extent_list *tmp)
{
	if (v->next >= 2)
		return &v->ext.xl;
	tmp->v = (struct extent *)&v->ext.one;
	tmp->n = tmp->cap = v->next;
	return tmp;
}

static inline uint64_t ver_reserved(const struct ver *v)
{
	struct extent_list tmp;

	if (v->next == 0)
		return 0;
	if (v->next == 1)
		return v->ext.one.len;
	return alloc_extent_list_bytes(ver_view(v, &tmp));
}

/* ---- index.c: the names and ids tables ---- */

int dir_index_init(struct dir *d);
void dir_index_fini(struct dir *d);
void dir_nkey_set(struct nkey *k, uint64_t parent, const char *name, size_t nlen);
uint32_t dir_node_hash(const struct node *n);
void dir_node_key(struct nkey *k, const struct node *n);
struct node *dir_node_found(const struct dir *d, const struct node *n);
void dir_id_place_dir(struct dir *d, struct node *n);
void dir_id_place_ver(struct dir *d, struct ver *v);
uintptr_t dir_id_find(const struct dir *d, uint64_t id);
struct ver *dir_id_ver(const struct dir *d, uint64_t id);
struct node *dir_id_dir(const struct dir *d, uint64_t id);
int dir_get_dir(const struct dir *d, uint64_t id, struct node **out);
struct node *dir_name_find(const struct dir *d, const struct nkey *k);
struct pend *dir_pend_find(const struct dir *d, const struct dir_session *s,
		       const struct nkey *k);
int dir_pends_of(const struct dir *d, const struct dir_session *s, const struct nkey *k);
int dir_name_key(struct dir *d, uint64_t parent, const char *name, size_t nlen,
	     struct nkey *k, struct node **pdir);
int dir_index_reserve(struct dir *d);

/* ---- node.c: records, extents, attributes ---- */

int dir_ver_take_list(struct ver *v, struct extent_list *l);
void dir_ver_put_list(struct ver *v, struct extent_list *l);
void dir_ver_free_bytes(struct dir *d, struct ver *v);
/* retire.c: dir_opts.retire for bytes about to go back to the allocator. */
void dir_retire(struct dir *d, uint64_t off, uint64_t len);
void dir_retire_list(struct dir *d, const struct extent_list *l);
void dir_retire_tail(struct dir *d, const struct extent_list *l, uint64_t keep);
uint64_t dir_ver_trim(struct dir *d, struct ver *v, uint64_t keep);
int dir_ver_extents_copy(const struct ver *v, struct extent_list *out);
void dir_ver_move(struct dir *d, struct ver *from, struct ver *to);
void dir_ver_attr(const struct ver *v, uint64_t parent, struct dir_attr *o);
void dir_attr_of(const struct node *n, struct dir_attr *o);
void dir_node_attr(const struct dir *d, struct node *n, struct dir_attr *o);
void dir_item_attr(uintptr_t it, struct dir_attr *out);
uint64_t dir_ver_parent(struct ver *v);
void dir_touch_m(struct node *dn, uint64_t t);
int dir_cookie_keycmp(const void *key, const struct rb_node *n);
struct node *dir_node_alloc(size_t nlen);
struct node *dir_root_new(void);
void dir_node_set_name(struct node *n, const struct nkey *k);
void dir_node_link(struct node *parent, struct node *n);
void dir_node_attach(struct dir *d, struct node *parent, struct node *n);
void dir_node_detach(struct dir *d, struct node *n);
int dir_ver_unbind(struct dir *d, struct node *n, struct ver *orphan);
void dir_file_remove(struct dir *d, struct node *n, struct ver *orphan);
void dir_remove(struct dir *d, struct node *n);
void dir_pend_attach(struct dir *d, struct pend *p, const struct nkey *k);
void dir_pend_detach(struct dir *d, struct pend *p);
void dir_pend_unlink_session(struct pend *p);
void dir_pend_abandon(struct dir *d, struct pend *p);
void dir_free_item(struct dir *d, uintptr_t it);

/* ---- within.c: dir_within() with the lock held (quota, pins) ---- */

int dir_within_locked(const struct dir *d, uint64_t id, uint64_t root);

/* ---- record.c: changes into daemon/persist/ (a no-op without a journal) ---- */

/* Record the change an event announces (called by dir_ev_push). */
void dir_record_event(struct dir *d, uint32_t type, uint64_t ino,
		      const struct evname *a, const struct evname *b);
/*
 * Before a change that grows the live state: room for its record (type a
 * JR_* of journal.h), or -ENOSPC.
 */
int dir_record_room(struct dir *d, uint32_t type, size_t nlen, uint32_t next);
/* After handing out an id: keep the id mark above it. */
void dir_record_ids(struct dir *d);

/* ---- replay.c: replayed records, through record.c's owner table ---- */

struct persist_item;
struct persist_restore_stats;
int dir_replay_item(void *dir, const struct persist_item *it);
void dir_replay_drop(void *dir, uint64_t id);
void dir_replayed(void *dir, uint64_t max_id, struct persist_restore_stats *st);
/* record.c: the live directory as items, and the next id (the owner table). */
int dir_record_walk(void *dir, int (*emit)(void *arg, const struct persist_item *it),
		    void *arg);
uint64_t dir_record_id_next(void *dir);

static inline int ver_regular(const struct ver *v)
{
	return (v->mode & 0170000) == 0100000;
}

/* ---- node.c: what a name binds ---- */

/* The version a file or link node binds. */
struct ver *dir_node_ver(const struct dir *d, struct node *n);
/* The node holding the version a file or link node binds. */
struct node *dir_node_primary(const struct dir *d, struct node *n);
/* 1 if n's version has more than one name. */
int dir_node_shared(const struct dir *d, struct node *n);

/* ---- links.c: the index of hard-link nodes ---- */

/* Some link node of version id, or NULL. */
struct node *dir_link_first(const struct dir *d, uint64_t id);
/* Take link node n out of d->links / put it back (rename re-keys it). */
void dir_link_unhook(struct dir *d, struct node *n);
void dir_link_hook(struct dir *d, struct node *n);
/* Remove every other name of v (eviction): DEV_EVICT for each. */
void dir_link_drop_all(struct dir *d, struct ver *v, uint32_t type);
/* dir_destroy: free every link node (they are in no ids slot). */
void dir_link_fini(struct dir *d);

/* ---- link.c: hard links, symlinks, special files ---- */

/*
 * Remove the name n of a version that keeps other names (dir_node_shared):
 * the version stays bound to them (one is promoted to hold it when n did).
 * Frees n; sends DEV_SETATTR for the version (its nlink changed).
 */
void dir_link_drop_name(struct dir *d, struct node *n);
/*
 * POSIX set-group-ID directories: a new entry in directory pd takes pd's
 * group; a new directory (mode != NULL) also keeps S_ISGID.
 */
void dir_inherit_group(const struct node *pd, uint32_t *gid, uint32_t *mode);

/* ---- event.c: the event ring ---- */

void dir_ev_push(struct dir *d, uint32_t type, uint64_t ino,
	     const struct evname *a, const struct evname *b);
void dir_ev_node(struct dir *d, uint32_t type, uint64_t ino, const struct node *n);
void dir_ev_fini(struct dir *d);

/* ---- lru.c: the LRU of evictable versions, eviction ---- */

/* A published version is on the LRU iff unleased, unpinned, regular and not ".tmp". */
static inline int ver_evictable(const struct ver *v, const struct node *n)
{
	return !v->leases && !v->pinned && ver_regular(v) && !name_is_tmp(n->name, n->nlen);
}

void dir_lru_del(struct dir *d, struct ver *v);
/*
 * Lazy pin expiry: every pin whose deadline passed is taken out of
 * d->pins and its version, if still published, joins the LRU at its head
 * (the pin kept it, it did not make it recently used). Called before
 * eviction needs room, before stats and before a pin call.
 */
void dir_pins_expire(struct dir *d);
/* Wall-clock now in ns: pin deadlines are wall-clock (they outlive a restart). */
uint64_t dir_wall_ns(void);
void dir_lru_settle(struct dir *d, struct node *n);
void dir_lru_touch(struct dir *d, struct ver *v);
int dir_get_bytes(struct dir *d, uint64_t len, struct extent_list *l);

/* ---- pinver.c: TTL pins ---- */

/* Replay one JR_PIN record (replay.c). */
int dir_pin_replay(struct dir *d, const struct persist_item *it);

/* ---- lease.c: leases ---- */

struct lease *dir_lease_find(struct dir_session *s, uint64_t id);
void dir_lease_pin(struct dir *d, struct dir_session *s, struct ver *v, struct lease *spare);
void dir_lease_add(struct dir *d, struct dir_session *s, struct ver *v, struct lease *spare);
void dir_lease_drop(struct dir *d, struct dir_session *s, struct lease *l, uint32_t count);
void dir_lease_free_all(struct dir_session *s);

/* ---- version.c: pending versions ---- */

struct create_args {
	uint64_t parent, from_ino, size_hint;
	const char *name;
	size_t nlen;
	uint32_t flags, mode, uid, gid;
};

int dir_own_pend(struct dir *d, struct dir_session *s, uint64_t ino, struct pend **out);
int dir_own_pend_idle(struct dir *d, struct dir_session *s, uint64_t ino, struct pend **out);
int dir_pend_grow(struct dir *d, struct pend *p, uint64_t bytes);
/* *srcp: the published version to copy (the caller copies it), or NULL. */
int dir_create_locked(struct dir *d, struct dir_session *s, const struct create_args *a,
		  struct pend **pp, struct node **srcp);

#endif

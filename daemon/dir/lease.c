/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/lease.c: leases, a session's right to read a version's bytes.
 * It owns each session's lease records (an rbtree by version id, with
 * counts), the per-session lease limit, dir_open() and dir_release(), and
 * what happens when the last lease of a version ends: a published version
 * goes back on the LRU, an orphaned one is freed. A leased version is never
 * evicted or freed, so its extents may be used outside the lock.
 * Called with d->lock held, except the dir_* entry points which take it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "dir_priv.h"
#include "log.h"

static int lease_keycmp(const void *key, const struct rb_node *n)
{
	uint64_t k = *(const uint64_t *)key, id = rb_entry(n, struct lease, rb)->id;

	return k < id ? -1 : k > id;
}

static int lease_cmp(const struct rb_node *a, const struct rb_node *b)
{
	return lease_keycmp(&rb_entry(a, struct lease, rb)->id, b);
}

struct lease *dir_lease_find(struct dir_session *s, uint64_t id)
{
	struct rb_node *n = rb_find(&s->leases, &id, lease_keycmp);

	return rb_entry_safe(n, struct lease, rb);
}

/*
 * Add one lease of s on v without counting a grant: what fill.c pins a copy
 * source with. spare is a preallocated record (consumed or freed).
 */
void dir_lease_pin(struct dir *d, struct dir_session *s, struct ver *v, struct lease *spare)
{
	struct lease *l = dir_lease_find(s, v->id);

	if (l) {
		l->count++;
		free(spare);
	} else {
		spare->id = v->id;
		spare->count = 1;
		rb_insert(&s->leases, &spare->rb, lease_cmp);
	}
	dir_lru_del(d, v);
	v->leases++;
	s->nleases++;
	d->nleases++;
}

/* Add one lease of s on v (an open or a publish). */
void dir_lease_add(struct dir *d, struct dir_session *s, struct ver *v, struct lease *spare)
{
	dir_lease_pin(d, s, v, spare);
	d->st.lease_grants++;
}

/* The last lease of v ended. */
static void ver_unleased(struct dir *d, struct ver *v)
{
	uint64_t r;

	if (v->state == DIR_ST_PUBLISHED) {
		dir_lru_settle(d, ver_node(v));
		return;
	}
	if (v->state != DIR_ST_ORPHANED)
		return;
	r = ver_reserved(v);
	dir_ver_free_bytes(d, v);
	d->orphaned -= r;
	htab_del(&d->ids, (uintptr_t)v);
	d->nvers--;
	free(v);
}

void dir_lease_drop(struct dir *d, struct dir_session *s, struct lease *l, uint32_t count)
{
	struct ver *v = dir_id_ver(d, l->id);

	l->count -= count;
	s->nleases -= count;
	d->nleases -= count;
	if (!l->count) {
		rb_erase(&s->leases, &l->rb);
		free(l);
	}
	if (!v)
		log_fatalx("dir: lease on a lost version");
	v->leases -= count;
	if (!v->leases)
		ver_unleased(d, v);
}

/* dir_destroy: free the records only (the versions go with the ids table). */
void dir_lease_free_all(struct dir_session *s)
{
	struct rb_node *r;

	while ((r = rb_first(&s->leases)) != NULL) {
		rb_erase(&s->leases, r);
		free(rb_entry(r, struct lease, rb));
	}
}

/* The version an open names: parent/name, or (nlen == 0) ino. */
static int open_target(struct dir *d, uint64_t parent, const char *name, size_t nlen,
		       uint64_t ino, struct ver **out)
{
	struct node *pd, *n;
	struct ver *v;
	struct nkey k;
	int rc;

	if (nlen) {
		rc = dir_name_key(d, parent, name, nlen, &k, &pd);
		if (rc)
			return rc;
		n = dir_name_find(d, &k);
		if (!n)
			return -ENOENT;
		if (n->kind == NODE_DIR)
			return -EISDIR;
		*out = dir_node_ver(d, n);
		return 0;
	}
	/*
	 * By id: a published version, or one replaced or unlinked while still
	 * leased. The latter is what a kernel that looked the name up before
	 * the replace opens: on a local filesystem that open gets the old
	 * inode too. Once the last lease is gone the version is, and the
	 * caller looks the name up again.
	 */
	v = dir_id_ver(d, ino);
	if (!v || (v->state != DIR_ST_PUBLISHED && v->state != DIR_ST_ORPHANED))
		return dir_id_dir(d, ino) ? -EISDIR : -ESTALE;
	*out = v;
	return 0;
}

static int open_locked(struct dir *d, struct dir_session *s, uint64_t parent,
		       const char *name, size_t nlen, uint64_t ino, struct dir_attr *out,
		       struct extent_list *ext)
{
	struct extent_list l = { 0 };
	struct lease *spare;
	struct ver *v;
	int rc;

	rc = open_target(d, parent, name, nlen, ino, &v);
	if (rc)
		return rc;
	/* Symlinks and special files have no bytes in the pool to read. */
	if (!ver_regular(v))
		return (v->mode & S_IFMT) == S_IFLNK ? -ELOOP : -ENXIO;
	if (d->o.max_leases && s->nleases >= d->o.max_leases)
		return -EMFILE;
	spare = malloc(sizeof(*spare));
	if (!spare)
		return -ENOMEM;
	if (ext && dir_ver_extents_copy(v, &l)) {
		free(spare);
		return -ENOMEM;
	}
	dir_lease_add(d, s, v, spare);
	dir_ver_attr(v, dir_ver_parent(v), out);
	if (ext)
		*ext = l;
	return 0;
}

int dir_open_ext(struct dir *d, struct dir_session *s, uint64_t parent,
		 const char *name, size_t nlen, uint64_t ino, struct dir_attr *out,
		 struct extent_list *ext)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = open_locked(d, s, parent, name, nlen, ino, out, ext);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_open(struct dir *d, struct dir_session *s, uint64_t parent, const char *name,
	     size_t nlen, uint64_t ino, struct dir_attr *out)
{
	return dir_open_ext(d, s, parent, name, nlen, ino, out, NULL);
}

int dir_release(struct dir *d, struct dir_session *s, uint64_t ino)
{
	struct lease *l;
	int rc = 0;

	pthread_mutex_lock(&d->lock);
	l = dir_lease_find(s, ino);
	if (l)
		dir_lease_drop(d, s, l, 1);
	else
		rc = -EINVAL;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

uint32_t dir_lease_count(struct dir *d, struct dir_session *s, uint64_t ino)
{
	struct lease *l;
	uint32_t n;

	pthread_mutex_lock(&d->lock);
	l = dir_lease_find(s, ino);
	n = l ? l->count : 0;
	pthread_mutex_unlock(&d->lock);
	return n;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/dir/pinver.c: TTL pins on published versions (user.maru.pin,
 * marufs-design(7) §4.3), the directory's side of ttlpin.c: which version
 * a pin may name, taking it off the LRU while pinned and putting it back
 * when unpinned, and the JR_PIN journal record (written here, replayed
 * through replay.c, checkpointed by record.c's walk). A pin belongs to the
 * version: node.c drops it when the version loses its name (replaced,
 * unlinked), lru.c lets it expire lazily. The record carries the
 * wall-clock deadline, not the seconds, so a restart never extends a pin.
 */
#include <errno.h>
#include <sys/stat.h>

#include "dir_priv.h"
#include "log.h"
#include "persist.h"

/* The published version ino names, or -errno as dir_pin says. */
static int pin_target(struct dir *d, uint64_t ino, struct ver **out)
{
	uintptr_t it = dir_id_find(d, ino);
	struct ver *v;

	if (!it)
		return -ENOENT;
	if (it & TAG)
		return -EISDIR;
	v = (struct ver *)it;
	if (v->state == DIR_ST_PENDING)
		return -EBUSY;
	if (v->state != DIR_ST_PUBLISHED)
		return -ESTALE;
	*out = v;
	return 0;
}

static void pin_record(struct dir *d, uint64_t id, uint64_t until_ns, uint64_t tenant,
		       const char *op)
{
	struct persist_item it = { .type = JR_PIN, .id = id, .until = until_ns,
				   .tenant = tenant };

	persist_write(d->p, &it, op, 0);
}

static int pin_set_locked(struct dir *d, struct ver *v, uint32_t seconds, uint64_t tenant,
			  uint32_t *left)
{
	uint64_t now = dir_wall_ns(), until;
	int rc;

	if (!ver_regular(v))
		return -EINVAL;
	rc = ttlpin_set(&d->pins, v->id, ver_reserved(v), tenant, now, seconds, &until);
	if (rc == -ENOSPC)
		log_info("pin: version %llu (%llu bytes) refused: pinned bytes would pass "
			 "a cap (pool %llu of %llu pinned; tenant %llu: %llu)",
			 (unsigned long long)v->id, (unsigned long long)ver_reserved(v),
			 (unsigned long long)d->pins.bytes, (unsigned long long)d->pins.max_bytes,
			 (unsigned long long)tenant,
			 (unsigned long long)ttlpin_tenant_bytes(&d->pins, tenant));
	if (rc)
		return rc;
	if (!v->pinned) {
		v->pinned = 1;
		dir_lru_del(d, v);
	}
	pin_record(d, v->id, until, ttlpin_find(&d->pins, v->id)->tenant, "pin");
	if (left)
		*left = ttlpin_left(&d->pins, v->id, now);
	return 0;
}

static void pin_clear_locked(struct dir *d, struct ver *v)
{
	if (!v->pinned)
		return;
	ttlpin_clear(&d->pins, v->id);
	v->pinned = 0;
	dir_lru_settle(d, ver_node(v));
	pin_record(d, v->id, 0, 0, "unpin");
}

int dir_pin(struct dir *d, uint64_t ino, uint32_t seconds, uint64_t tenant, uint32_t *left)
{
	struct ver *v;
	int rc;

	pthread_mutex_lock(&d->lock);
	dir_pins_expire(d);
	rc = pin_target(d, ino, &v);
	if (rc == 0 && seconds)
		rc = pin_set_locked(d, v, seconds, tenant, left);
	else if (rc == 0) {
		pin_clear_locked(d, v);
		if (left)
			*left = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_pin_left(struct dir *d, uint64_t ino, uint32_t *left)
{
	uintptr_t it;
	int rc = 0;

	pthread_mutex_lock(&d->lock);
	dir_pins_expire(d);
	it = dir_id_find(d, ino);
	if (!it)
		rc = -ENOENT;
	else if (it & TAG)
		rc = -EISDIR;
	else
		*left = ttlpin_left(&d->pins, ino, dir_wall_ns());
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int dir_pin_tenant_cap(struct dir *d, uint64_t tenant, uint64_t max_bytes)
{
	int rc;

	pthread_mutex_lock(&d->lock);
	rc = ttlpin_tenant_cap(&d->pins, tenant, max_bytes);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

uint64_t dir_pin_tenant_bytes(struct dir *d, uint64_t tenant)
{
	uint64_t b;

	pthread_mutex_lock(&d->lock);
	b = ttlpin_tenant_bytes(&d->pins, tenant);
	pthread_mutex_unlock(&d->lock);
	return b;
}

/*
 * Replay of JR_PIN (until 0: unpinned). A deadline already past applies
 * as nothing (0: the pin ran out while marud was down); the caps of this
 * start apply, so a pin over a lowered cap does not come back (-ENOSPC,
 * counted and logged by restore.c as a record that did not apply).
 */
int dir_pin_replay(struct dir *d, const struct persist_item *it)
{
	struct ver *v;
	int rc = pin_target(d, it->id, &v);

	if (rc)
		return rc;
	if (!it->until) {
		if (v->pinned) {
			ttlpin_clear(&d->pins, v->id);
			v->pinned = 0;
			dir_lru_settle(d, ver_node(v));
		}
		return 0;
	}
	if (!ver_regular(v))
		return -EINVAL;
	rc = ttlpin_set_until(&d->pins, v->id, ver_reserved(v), it->tenant, dir_wall_ns(),
			      it->until);
	if (rc == -ETIME)
		return 0;
	if (rc)
		return rc;
	if (!v->pinned) {
		v->pinned = 1;
		dir_lru_del(d, v);
	}
	return 0;
}

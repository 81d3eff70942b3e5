// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/dir/ttlpin.c: the TTL pin table (ttlpin.h). Two rbtrees over the
 * same records: by version id (set, clear, seconds left) and by (deadline,
 * id) so the earliest deadline is the first node and lazy expiry looks at
 * one node when nothing has run out. Caps are checked before a new pin
 * enters: the pool's pinned bytes, then its tenant's; a refused pin
 * changes nothing, and no pin is ever dropped to make room for another.
 */
#include <errno.h>
#include <stdlib.h>

#include "ttlpin.h"

static int id_keycmp(const void *key, const struct rb_node *n)
{
	uint64_t k = *(const uint64_t *)key, id = rb_entry(n, struct ttlpin, by_id)->id;

	return k < id ? -1 : k > id;
}

static int id_cmp(const struct rb_node *a, const struct rb_node *b)
{
	return id_keycmp(&rb_entry(a, struct ttlpin, by_id)->id, b);
}

static int until_cmp(const struct rb_node *a, const struct rb_node *b)
{
	const struct ttlpin *x = rb_entry(a, struct ttlpin, by_until);
	const struct ttlpin *y = rb_entry(b, struct ttlpin, by_until);

	if (x->until_ns != y->until_ns)
		return x->until_ns < y->until_ns ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void ttlpin_init(struct ttlpins *t, uint64_t max_bytes, uint32_t max_seconds)
{
	*t = (struct ttlpins){ .max_bytes = max_bytes, .max_seconds = max_seconds };
}

void ttlpin_fini(struct ttlpins *t)
{
	struct rb_node *n;

	while ((n = rb_first(&t->by_id))) {
		rb_erase(&t->by_id, n);
		free(rb_entry(n, struct ttlpin, by_id));
	}
	t->by_until = (struct rb_root)RB_ROOT_INIT;
	t->bytes = t->count = 0;
}

static struct ttlpin_tenant *tenant_of(const struct ttlpins *t, uint64_t tenant)
{
	uint32_t i;

	for (i = 0; tenant && i < t->ntenants; i++)
		if (t->tenants[i].tenant == tenant)
			return (struct ttlpin_tenant *)&t->tenants[i];
	return NULL;
}

/* tenant's entry, made (with no cap) if new; NULL when the table is full. */
static struct ttlpin_tenant *tenant_entry(struct ttlpins *t, uint64_t tenant)
{
	struct ttlpin_tenant *tt = tenant_of(t, tenant);

	if (!tt && t->ntenants < TTLPIN_MAX_TENANTS) {
		tt = &t->tenants[t->ntenants++];
		*tt = (struct ttlpin_tenant){ .tenant = tenant };
	}
	return tt;
}

int ttlpin_tenant_cap(struct ttlpins *t, uint64_t tenant, uint64_t max_bytes)
{
	struct ttlpin_tenant *tt;

	if (!tenant)
		return -EINVAL;
	tt = tenant_entry(t, tenant);
	if (!tt)
		return -ENOSPC;
	tt->max_bytes = max_bytes;
	return 0;
}

uint64_t ttlpin_tenant_bytes(const struct ttlpins *t, uint64_t tenant)
{
	const struct ttlpin_tenant *tt = tenant_of(t, tenant);

	return tt ? tt->bytes : 0;
}

struct ttlpin *ttlpin_find(const struct ttlpins *t, uint64_t id)
{
	struct rb_node *n = rb_find(&t->by_id, &id, id_keycmp);

	return rb_entry_safe(n, struct ttlpin, by_id);
}

/* Room for bytes more pinned bytes of tenant: 0 or -ENOSPC. */
static int caps_allow(struct ttlpins *t, uint64_t bytes, uint64_t tenant)
{
	const struct ttlpin_tenant *tt = tenant_of(t, tenant);

	if (bytes > t->max_bytes || t->bytes > t->max_bytes - bytes)
		return -ENOSPC;
	if (tt && tt->max_bytes &&
	    (bytes > tt->max_bytes || tt->bytes > tt->max_bytes - bytes))
		return -ENOSPC;
	return 0;
}

static void account(struct ttlpins *t, const struct ttlpin *p, int sign)
{
	struct ttlpin_tenant *tt = tenant_of(t, p->tenant);

	if (sign > 0) {
		t->bytes += p->bytes;
		t->count++;
		if (tt)
			tt->bytes += p->bytes;
	} else {
		t->bytes -= p->bytes;
		t->count--;
		if (tt)
			tt->bytes -= p->bytes;
	}
}

int ttlpin_set_until(struct ttlpins *t, uint64_t id, uint64_t bytes, uint64_t tenant,
		     uint64_t now_ns, uint64_t until_ns)
{
	struct ttlpin *p = ttlpin_find(t, id);

	if (until_ns <= now_ns)
		return -ETIME;
	if (p) {
		/* a new deadline for the same bytes: no cap to check */
		rb_erase(&t->by_until, &p->by_until);
		p->until_ns = until_ns;
		rb_insert(&t->by_until, &p->by_until, until_cmp);
		return 0;
	}
	/* a tenant's pins are counted whether or not it has a cap yet */
	if (caps_allow(t, bytes, tenant) || (tenant && !tenant_entry(t, tenant))) {
		t->refused++;
		return -ENOSPC;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->id = id;
	p->bytes = bytes;
	p->tenant = tenant;
	p->until_ns = until_ns;
	rb_insert(&t->by_id, &p->by_id, id_cmp);
	rb_insert(&t->by_until, &p->by_until, until_cmp);
	account(t, p, 1);
	return 0;
}

int ttlpin_set(struct ttlpins *t, uint64_t id, uint64_t bytes, uint64_t tenant,
	       uint64_t now_ns, uint32_t seconds, uint64_t *until_ns)
{
	uint64_t until;
	int rc;

	if (seconds == 0)
		return -EINVAL;
	if (t->max_seconds && seconds > t->max_seconds)
		seconds = t->max_seconds;
	until = now_ns + (uint64_t)seconds * TTLPIN_NS;
	rc = ttlpin_set_until(t, id, bytes, tenant, now_ns, until);
	if (rc == 0 && until_ns)
		*until_ns = until;
	return rc;
}

static void drop(struct ttlpins *t, struct ttlpin *p)
{
	rb_erase(&t->by_id, &p->by_id);
	rb_erase(&t->by_until, &p->by_until);
	account(t, p, -1);
	free(p);
}

int ttlpin_clear(struct ttlpins *t, uint64_t id)
{
	struct ttlpin *p = ttlpin_find(t, id);

	if (!p)
		return -ENOENT;
	drop(t, p);
	return 0;
}

uint32_t ttlpin_left(const struct ttlpins *t, uint64_t id, uint64_t now_ns)
{
	const struct ttlpin *p = ttlpin_find(t, id);
	uint64_t left;

	if (!p || p->until_ns <= now_ns)
		return 0;
	left = (p->until_ns - now_ns + TTLPIN_NS - 1) / TTLPIN_NS;
	return left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
}

uint64_t ttlpin_expired(struct ttlpins *t, uint64_t now_ns)
{
	struct rb_node *n = rb_first(&t->by_until);
	struct ttlpin *p;
	uint64_t id;

	if (!n)
		return 0;
	p = rb_entry(n, struct ttlpin, by_until);
	if (p->until_ns > now_ns)
		return 0;
	id = p->id;
	drop(t, p);
	t->expired++;
	return id;
}

int ttlpin_walk(const struct ttlpins *t, int (*cb)(void *arg, const struct ttlpin *p),
		void *arg)
{
	struct rb_node *n;
	int rc;

	for (n = rb_first(&t->by_until); n; n = rb_next(n)) {
		rc = cb(arg, rb_entry(n, struct ttlpin, by_until));
		if (rc)
			return rc;
	}
	return 0;
}

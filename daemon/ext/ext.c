// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/ext/ext.c: the loaded region extension: dlopen of NAME or PATH,
 * the ABI version check, open()/close(), and every call marud makes into
 * a hook, with marud's rules around it: optional hooks are skipped when
 * NULL, an action the extension did not advertise is refused before it is
 * called, failures are counted and logged (a few times), and mapped() is
 * remembered so that a region whose mapped() failed stays out of use. The
 * memory generation it records in the pool's superblock page lives here
 * too (read at attach). Hook calls take no marud lock of their own; the
 * caller says which it holds (retire: the directory's).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext_priv.h"
#include "log.h"
#include "pool.h"

#ifndef MARUD_EXTDIR
#define MARUD_EXTDIR "/usr/local/lib/marud/extensions"
#endif

#define MEMGEN_MAGIC 0x4e45474d454d5241ULL	/* "ARMEMGEN" */

static int ext_path(const char *name, char *buf, size_t len)
{
	const char *dir = getenv("MARUD_EXTENSION_DIR");
	int n;

	if (strchr(name, '/'))
		n = snprintf(buf, len, "%s", name);
	else
		n = snprintf(buf, len, "%s/%s.so", dir && *dir ? dir : MARUD_EXTDIR, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int ext_check(const struct marud_extension *x, const char *path)
{
	if (x->abi_version != MARUD_EXTENSION_ABI) {
		log_warnx("region extension %s: ABI version %u, marud takes %u", path,
			  x->abi_version, MARUD_EXTENSION_ABI);
		return -EPROTONOSUPPORT;
	}
	if (x->size < sizeof(*x) || !x->open || !x->close) {
		log_warnx("region extension %s: descriptor too small or without open/close",
			  path);
		return -EINVAL;
	}
	return 0;
}

static int ext_dlopen(struct ext *e, const char *name)
{
	char path[4096];
	int rc = ext_path(name, path, sizeof(path));

	if (rc)
		return rc;
	e->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!e->dl) {
		log_warnx("region extension %s: %s", path, dlerror());
		return -ENOENT;
	}
	e->x = dlsym(e->dl, MARUD_EXTENSION_SYMBOL);
	if (!e->x) {
		log_warnx("region extension %s: no symbol %s", path, MARUD_EXTENSION_SYMBOL);
		return -ENOENT;
	}
	return ext_check(e->x, path);
}

int ext_load(const char *name, const char *config, struct ext **out)
{
	struct ext *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return -ENOMEM;
	rc = ext_open_sessions_new(&e->sessions);
	if (rc)
		goto out_close;
	rc = ext_dlopen(e, name);
	if (rc)
		goto out_close;
	rc = e->x->open(config ? config : "", &e->state);
	if (rc) {
		log_warn(rc, "region extension %s: open", name);
		rc = rc < 0 ? rc : -EINVAL;
		goto out_close;
	}
	snprintf(e->name, sizeof(e->name), "%s", e->x->name ? e->x->name : name);
	atomic_store(&e->gen_known, 1);
	log_info("region extension %s loaded (ABI %u, actions 0x%x)", e->name,
		 e->x->abi_version, e->x->actions);
	*out = e;
	return 0;
out_close:
	if (e->dl)
		dlclose(e->dl);
	ext_open_sessions_free(e->sessions);
	free(e);
	return rc;
}

void ext_unload(struct ext *e)
{
	if (!e)
		return;
	e->x->close(e->state);
	dlclose(e->dl);
	ext_open_sessions_free(e->sessions);
	free(e);
}

const char *ext_name(const struct ext *e)
{
	return e ? e->name : "";
}

uint32_t ext_actions(const struct ext *e)
{
	if (!e || !ext_region_ok((struct ext *)e))
		return 0;
	return e->x->actions;
}

struct ext_stats *ext_stats(struct ext *e)
{
	return &e->st;
}

int ext_region_ok(struct ext *e)
{
	return !e || (atomic_load(&e->mapped_ok) && atomic_load(&e->gen_known));
}

static void region_fill(struct ext *e, struct pool *p)
{
	e->pool = p;
	e->region.uri = p->uri;
	e->region.path = p->path;
	e->region.fd = p->fd;
	e->region.backend = (uint32_t)p->ops->kind;
	e->region.base = p->base;
	e->region.size = p->size;
	e->region.data_off = p->data_off;
}

/* The generation the pool records; 0 when none was recorded. */
static uint64_t memgen_read(const struct pool *p)
{
	uint64_t v[2];

	memcpy(v, p->base + EXT_MEMGEN_OFF, sizeof(v));
	return v[0] == MEMGEN_MAGIC ? v[1] : 0;
}

static void memgen_write(struct pool *p, uint64_t gen)
{
	uint64_t v[2] = { MEMGEN_MAGIC, gen };

	memcpy(p->base + EXT_MEMGEN_OFF, v, sizeof(v));
	pool_persist(p, EXT_MEMGEN_OFF, sizeof(v));
}

/* Compare the extension's generation with the pool's record. */
static int attach_memgen(struct ext *e, struct pool *p, int *fresh_out)
{
	uint64_t gen;
	int rc;

	if (!e->x->memory_generation)
		return 0;
	rc = e->x->memory_generation(e->state, &gen);
	if (rc) {
		log_warn(rc, "region extension %s: memory generation at start", e->name);
		return rc < 0 ? rc : -EIO;
	}
	if (memgen_read(p) != gen) {
		if (memgen_read(p))
			log_warnx("region extension %s: memory generation %llx is not the "
				  "pool's %llx: the memory lost its contents, starting empty",
				  e->name, (unsigned long long)gen,
				  (unsigned long long)memgen_read(p));
		*fresh_out = 1;
		memgen_write(p, gen);
	}
	e->memgen = gen;
	return 0;
}

int ext_attach(struct ext *e, struct pool *p, int fresh, int *fresh_out)
{
	int rc;

	region_fill(e, p);
	*fresh_out = 0;
	if (e->x->validate_access) {
		rc = e->x->validate_access(e->state, &e->region);
		if (rc) {
			log_warn(rc, "region extension %s refuses pool %s", e->name, p->uri);
			return rc < 0 ? rc : -EACCES;
		}
	}
	rc = attach_memgen(e, p, fresh_out);
	if (rc)
		return rc;
	e->st.resets = 0;
	rc = e->x->mapped ? e->x->mapped(e->state, &e->region, fresh || *fresh_out) : 0;
	if (rc)
		log_warn(rc, "region extension %s: mapped() failed; pool out of use until "
			 "it succeeds", e->name);
	atomic_store(&e->mapped_ok, rc == 0);
	return 0;
}

void ext_remap(struct ext *e)
{
	int rc;

	if (atomic_load(&e->mapped_ok) || !e->x->mapped)
		return;
	rc = e->x->mapped(e->state, &e->region, 0);
	if (!rc)
		log_info("region extension %s: mapped() succeeded, pool in use", e->name);
	atomic_store(&e->mapped_ok, rc == 0);
}

int ext_hint(struct ext *e, uint64_t conn, int action, const char *request,
	     const struct marud_ext_range *r, uint32_t n)
{
	int rc;

	if (!e || !(e->x->actions & MARUD_EXT_ACTION_BIT(action)) || !e->x->hint)
		return -EOPNOTSUPP;
	atomic_fetch_add(&e->st.hints, 1);
	rc = e->x->hint(e->state, conn, (enum marud_ext_action)action, request, r, n);
	if (rc) {
		/* advice: the failure is the extension's, the client goes on */
		if (atomic_fetch_add(&e->st.failed, 1) < 8)
			log_warn(rc, "region extension %s: hint %d of request '%s' failed "
				 "(ignored)", e->name, action, request);
		return rc < 0 ? rc : -EIO;
	}
	return 0;
}

int ext_wait(struct ext *e, uint64_t conn, int action, const struct marud_ext_range *r,
	     uint32_t n, uint32_t timeout_ms)
{
	int (*fn)(void *, uint64_t, const struct marud_ext_range *, uint32_t, uint32_t);
	int rc;

	if (!e || !(e->x->actions & MARUD_EXT_ACTION_BIT(action)))
		return -EOPNOTSUPP;
	fn = action == MARUD_EXT_READ_WAIT ? e->x->read_wait : e->x->write_wait;
	if (!fn)
		return -EOPNOTSUPP;
	atomic_fetch_add(&e->st.waits, 1);
	rc = fn(e->state, conn, r, n, timeout_ms);
	if (rc < 0) {
		atomic_fetch_add(&e->st.wait_failed, 1);
		return rc;
	}
	return rc > (int)n ? (int)n : rc;
}

void ext_retire(void *arg, uint64_t off, uint64_t len)
{
	struct ext *e = arg;
	struct marud_ext_range r = { off, len };

	if (!e || !e->x->retire || !len)
		return;
	atomic_fetch_add(&e->st.retired, 1);
	e->x->retire(e->state, &r);
}

void ext_session_end(struct ext *e, uint64_t sid)
{
	if (e && ext_open_session_end(e->sessions, sid) && e->x->connection_closed)
		e->x->connection_closed(e->state, sid);
}

struct hint_sessions *ext_hint_sessions(struct ext *e)
{
	return e ? e->sessions : NULL;
}

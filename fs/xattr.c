/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/xattr.c: the user.maru.* extended attributes (marufs-xattr(7)). Read-only facts about a version (id, extents, checksum,
 * leases, state, pool generation), two writable hints (hint, size), the
 * TTL pin of a file's version (pin: set, read back as seconds left, removed
 * = unpinned; a promise with caps, so its ENOSPC is returned) and
 * per-directory counters. Names outside user.maru. are not stored: get says
 * ENODATA at once (the kernel asks for security.capability on every write,
 * so that path must stay cheap), set says ENOTSUP. Values are read through
 * pending.c (this mount's own pending version of a file first) and libmaru;
 * hints live in the inode table. No lock of its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hints.h"
#include "inode.h"
#include "parse.h"
#include "notify.h"
#include "pending.h"
#include "xattr.h"

#define XA_PREFIX	"user.maru."
#define XA_PREFIX_LEN	(sizeof(XA_PREFIX) - 1)

enum xa_id {
	XA_VERSION, XA_EXTENT, XA_XXH3, XA_LEASES, XA_STATE, XA_GENERATION,
	XA_HINT, XA_SIZE, XA_NS_NAMES, XA_NS_BYTES, XA_PIN, XA_COUNT
};

enum {
	XF_FILE = 1,	/* applies to regular files */
	XF_DIR = 2,	/* applies to directories */
	XF_RO = 4,	/* cannot be set or removed */
	XF_HIDDEN = 8,	/* readable and writable, not in listxattr */
};

static const struct {
	const char *name;	/* after the prefix */
	int flags;
} xa_tab[XA_COUNT] = {
	[XA_VERSION] = { "version", XF_FILE | XF_RO },
	[XA_EXTENT] = { "extent", XF_FILE | XF_RO },
	[XA_XXH3] = { "xxh3", XF_FILE | XF_RO },
	[XA_LEASES] = { "leases", XF_FILE | XF_RO },
	[XA_STATE] = { "state", XF_FILE | XF_RO },
	[XA_GENERATION] = { "generation", XF_FILE | XF_DIR | XF_RO },
	[XA_HINT] = { "hint", XF_FILE | XF_DIR },
	[XA_SIZE] = { "size", XF_FILE },
	[XA_NS_NAMES] = { "ns.names", XF_DIR | XF_RO },
	[XA_NS_BYTES] = { "ns.bytes", XF_DIR | XF_RO },
	/* not listed: reading it asks marud (0 when unpinned) */
	[XA_PIN] = { "pin", XF_FILE | XF_HIDDEN },
};

static const char *const hint_names[HINT_COUNT] = {
	[HINT_READ] = "read",
	[HINT_READ_END] = "read_end",
	[HINT_PROMOTE] = "promote",
	[HINT_WRITE] = "write",
};

/* -1: not user.maru.*; XA_COUNT: unknown user.maru.* name. */
static int xa_find(const char *name)
{
	int i;

	if (strncmp(name, XA_PREFIX, XA_PREFIX_LEN) != 0)
		return -1;
	for (i = 0; i < XA_COUNT; i++)
		if (strcmp(name + XA_PREFIX_LEN, xa_tab[i].name) == 0)
			return i;
	return XA_COUNT;
}

static int xa_applies(int id, const struct maru_attr *a, int hint)
{
	int dir = S_ISDIR(a->mode);

	if (!(xa_tab[id].flags & (dir ? XF_DIR : XF_FILE)))
		return 0;
	if (id == XA_HINT)
		return hint != 0;
	return 1;
}

/* ---- values ---- */

struct strbuf {
	char *p;
	size_t len, cap;
};

static int sb_printf(struct strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	char *np;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(sb->p + sb->len, sb->cap - sb->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if ((size_t)n < sb->cap - sb->len) {
			sb->len += (size_t)n;
			return 0;
		}
		np = realloc(sb->p, sb->cap * 2 + (size_t)n);
		if (!np)
			return -ENOMEM;
		sb->p = np;
		sb->cap = sb->cap * 2 + (size_t)n;
	}
}

static int extents_of(struct maru_file *f, struct strbuf *sb)
{
	struct maru_extent *ext = NULL;
	size_t max = 16;
	ssize_t n, i;
	int rc = 0;

	for (;;) {
		struct maru_extent *ne = realloc(ext, max * sizeof(*ext));

		if (!ne) {
			rc = -ENOMEM;
			goto out;
		}
		ext = ne;
		n = maru_file_extents(f, ext, max);
		if (n < 0) {
			rc = (int)n;
			goto out;
		}
		if ((size_t)n <= max)
			break;
		max = (size_t)n;
	}
	for (i = 0; i < n && rc == 0; i++)
		rc = sb_printf(sb, "%s%" PRIu64 "+%" PRIu64, i ? "," : "",
			       ext[i].off, ext[i].len);
out:
	free(ext);
	return rc;
}

static int extents_cb(void *arg, struct maru_file *f)
{
	return extents_of(f, arg);
}

/* Use this mount's pending of the file if it has one, else a brief lease. */
static int xa_extent(struct mfs *m, uint64_t ino, struct strbuf *sb)
{
	struct pending *p = pend_of_ino(m, ino, 0);
	struct maru_file *f;
	int rc;

	if (p) {
		rc = pend_with_file(p, extents_cb, sb);
		pend_put(p);
		if (rc != -ENOENT)
			return rc;
	}
	rc = maru_file_open_ino(m->c, ino, &f);
	if (rc < 0)
		return rc;
	rc = extents_of(f, sb);
	maru_file_close(f);
	return rc;
}

struct ns_acc {
	uint64_t *inos;
	size_t n, cap;
	int err;
};

static int ns_collect(void *arg, const struct maru_dirent *de)
{
	struct ns_acc *acc = arg;

	if (S_ISDIR(de->mode) || de->state != MARU_STATE_PUBLISHED)
		return 0;
	if (acc->n == acc->cap) {
		size_t cap = acc->cap ? acc->cap * 2 : 256;
		uint64_t *ni = realloc(acc->inos, cap * sizeof(*ni));

		if (!ni) {
			acc->err = -ENOMEM;
			return 1;
		}
		acc->inos = ni;
		acc->cap = cap;
	}
	acc->inos[acc->n++] = de->ino;
	return 0;
}

/* Names and byte total of the published files directly in dir. */
static int xa_ns(struct mfs *m, uint64_t dir, int id, struct strbuf *sb)
{
	struct ns_acc acc = { 0 };
	struct maru_attr a;
	uint64_t bytes = 0;
	size_t i;
	int rc;

	rc = maru_readdir(m->c, dir, 0, ns_collect, &acc);
	if (rc == 0)
		rc = acc.err;
	if (rc == 0 && id == XA_NS_BYTES) {
		for (i = 0; i < acc.n; i++)
			if (maru_getattr(m->c, acc.inos[i], &a) == 0)
				bytes += a.size;	/* gone meanwhile: not counted */
	}
	if (rc == 0)
		rc = sb_printf(sb, "%" PRIu64,
			       id == XA_NS_NAMES ? (uint64_t)acc.n : bytes);
	free(acc.inos);
	return rc;
}

static const char *state_name(uint32_t state)
{
	switch (state) {
	case MARU_STATE_PENDING: return "pending";
	case MARU_STATE_ORPHANED: return "orphaned";
	default: return "published";
	}
}

static int xa_value(struct mfs *m, uint64_t ino, int id, const struct maru_attr *a, int hint,
		    struct strbuf *sb)
{
	switch (id) {
	case XA_VERSION:
		return sb_printf(sb, "%" PRIu64, a->ino);
	case XA_EXTENT:
		return xa_extent(m, ino, sb);
	case XA_XXH3:
		return sb_printf(sb, "%016" PRIx64, a->xxh3);
	case XA_LEASES:
		return sb_printf(sb, "%" PRIu32, a->leases);
	case XA_STATE:
		return sb_printf(sb, "%s", state_name(a->state));
	case XA_GENERATION:
		return sb_printf(sb, "%" PRIu64,
				 __atomic_load_n(&m->generation, __ATOMIC_RELAXED));
	case XA_HINT:
		return sb_printf(sb, "%s", hint_names[hint - 1]);
	case XA_SIZE:
		return sb_printf(sb, "%" PRIu64, a->reserved);
	case XA_NS_NAMES:
	case XA_NS_BYTES:
		return xa_ns(m, ino, id, sb);
	case XA_PIN: {
		int left = maru_pin_get(m->c, a->ino);

		return left < 0 ? left : sb_printf(sb, "%d", left);
	}
	}
	return -ENODATA;
}

static void reply_value(fuse_req_t req, const char *val, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, len);
}

void xattr_get(fuse_req_t req, uint64_t ino, const char *name, size_t size)
{
	struct mfs *m = req_mfs(req);
	struct strbuf sb = { 0 };
	struct maru_attr a;
	int id = xa_find(name), hint, rc;

	if (id < 0 || id == XA_COUNT) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	rc = pend_ino_attr(m, ino, &a);
	if (rc < 0)
		goto out;
	hint = itab_get_hint(m->tab, ino);
	if (!xa_applies(id, &a, hint)) {
		rc = -ENODATA;
		goto out;
	}
	sb.cap = 256;
	sb.p = malloc(sb.cap);
	if (!sb.p) {
		rc = -ENOMEM;
		goto out;
	}
	sb.p[0] = '\0';
	rc = xa_value(m, ino, id, &a, hint, &sb);
out:
	if (rc < 0)
		fuse_reply_err(req, rc == -ESTALE ? ENODATA : -rc);
	else
		reply_value(req, sb.p, sb.len, size);
	free(sb.p);
}

static int parse_hint(const char *value, size_t size)
{
	int i;

	while (size && (value[size - 1] == '\n' || value[size - 1] == '\0'))
		size--;
	for (i = 0; i < HINT_COUNT; i++)
		if (strlen(hint_names[i]) == size &&
		    memcmp(value, hint_names[i], size) == 0)
			return i;
	return -EINVAL;
}

static int set_size(struct mfs *m, uint64_t ino, const char *value, size_t size)
{
	char text[32];
	uint64_t bytes;
	struct pending *p;
	int rc;

	if (size == 0 || size >= sizeof(text))
		return -EINVAL;
	memcpy(text, value, size);
	text[size] = '\0';
	if (text[size - 1] == '\n')
		text[size - 1] = '\0';
	rc = parse_size(text, &bytes);
	if (rc < 0)
		return rc;
	p = pend_of_ino(m, ino, 0);
	if (!p)
		return -EPERM;	/* published versions are immutable */
	rc = pend_reserve(p, bytes);
	pend_put(p);
	/* st_blocks changed behind the kernel's back (a create's attributes
	 * are cached: ns_create) */
	if (rc == 0)
		notify_inval_attr(m->nt, ino, 1);
	return rc;
}

/* SECONDS: decimal, 0..2^32-1 (a trailing newline or NUL is fine). */
static int parse_seconds(const char *value, size_t size, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	while (size && (value[size - 1] == '\n' || value[size - 1] == '\0'))
		size--;
	if (size == 0 || size > 10)
		return -EINVAL;
	for (i = 0; i < size; i++) {
		if (value[i] < '0' || value[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(value[i] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* The published version ino shows now (this mount's pending one: -EBUSY). */
static int pin_version(struct mfs *m, uint64_t ino, uint64_t *ver)
{
	struct maru_attr a;
	int rc = pend_ino_attr(m, ino, &a);

	if (rc < 0)
		return rc;
	if (S_ISDIR(a.mode))
		return -EISDIR;
	if (a.state == MARU_STATE_PENDING)
		return -EBUSY;
	*ver = a.ino;
	return 0;
}

static int set_pin(struct mfs *m, uint64_t ino, const char *value, size_t size)
{
	uint32_t seconds;
	uint64_t ver;
	int rc = parse_seconds(value, size, &seconds);

	if (rc == 0)
		rc = pin_version(m, ino, &ver);
	if (rc == 0)
		rc = maru_pin_set(m->c, ver, seconds);
	return rc < 0 ? rc : 0;
}

void xattr_set(fuse_req_t req, uint64_t ino, const char *name, const char *value,
	       size_t size, int flags)
{
	struct mfs *m = req_mfs(req);
	int id = xa_find(name), rc = 0, h;

	if (id < 0) {
		fuse_reply_err(req, ENOTSUP);
		return;
	}
	if (id == XA_COUNT) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (xa_tab[id].flags & XF_RO) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (id == XA_HINT) {
		h = parse_hint(value, size);
		if (h < 0) {
			rc = h;
		} else {
			itab_set_hint(m->tab, ino, h + 1);
			CNT_INC(m, hints[h]);
			/* on to marud (hints.c); advice: a failure is only counted */
			hints_xattr(m, ino, h + 1);
		}
	} else if (id == XA_PIN) {
		rc = set_pin(m, ino, value, size);
	} else {
		rc = set_size(m, ino, value, size);
	}
	fuse_reply_err(req, -rc);
}

void xattr_list(fuse_req_t req, uint64_t ino, size_t size)
{
	struct mfs *m = req_mfs(req);
	struct maru_attr a;
	char buf[512];
	size_t len = 0, n;
	int i, rc, hint;

	rc = pend_ino_attr(m, ino, &a);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	hint = itab_get_hint(m->tab, ino);
	for (i = 0; i < XA_COUNT; i++) {
		if (!xa_applies(i, &a, hint) || (xa_tab[i].flags & XF_HIDDEN))
			continue;
		n = XA_PREFIX_LEN + strlen(xa_tab[i].name) + 1;
		memcpy(buf + len, XA_PREFIX, XA_PREFIX_LEN);
		memcpy(buf + len + XA_PREFIX_LEN, xa_tab[i].name, n - XA_PREFIX_LEN);
		len += n;
	}
	reply_value(req, buf, len, size);
}

/* removexattr user.maru.pin: unpin; ENODATA when there was no pin. */
static int remove_pin(struct mfs *m, uint64_t ino)
{
	uint64_t ver;
	int rc = pin_version(m, ino, &ver);

	if (rc == 0)
		rc = maru_pin_get(m->c, ver);
	if (rc == 0)
		return -ENODATA;
	if (rc > 0)
		rc = maru_pin_set(m->c, ver, 0);
	return rc < 0 ? rc : 0;
}

void xattr_remove(fuse_req_t req, uint64_t ino, const char *name)
{
	struct itab *t = req_mfs(req)->tab;
	int id = xa_find(name);

	if (id < 0) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (id == XA_COUNT) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (id == XA_PIN) {
		fuse_reply_err(req, -remove_pin(req_mfs(req), ino));
		return;
	}
	if (id != XA_HINT) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (!itab_get_hint(t, ino)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	itab_set_hint(t, ino, 0);
	fuse_reply_err(req, 0);
}

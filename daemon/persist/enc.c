/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/enc.c: journal record bodies (journal.h) from a struct
 * persist_item and back. It only encodes and decodes: when a record is
 * written is record.c's and ckpt.c's, what it means on replay the
 * directory's (dir/replay.c). persist_enc builds a body in p->jb, valid
 * until the next encoding; persist_enc_to writes into the caller's buffer
 * (a record written before its change must survive a checkpoint on the
 * way, which uses p->jb).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "persist_priv.h"
#include "proto.h"

/* Fixed part of each body type; 0: unknown. */
static uint32_t fixed_len(uint32_t type)
{
	switch (type) {
	case JR_DIR:
		return sizeof(struct jb_dir);
	case JR_FILE:
		return sizeof(struct jb_file);
	case JR_REMOVE:
		return sizeof(struct jb_remove);
	case JR_RENAME:
		return sizeof(struct jb_rename);
	case JR_ATTR:
		return sizeof(struct jb_attr);
	case JR_IDS:
		return sizeof(struct jb_ids);
	case JR_LINK:
		return sizeof(struct jb_link);
	case JR_UNNAME:
		return sizeof(struct jb_unname);
	case JR_SPECIAL:
		return sizeof(struct jb_special);
	case JR_PIN:
		return sizeof(struct jb_pin);
	}
	return 0;
}

uint32_t persist_enc_len(const struct persist_item *it)
{
	uint64_t n = fixed_len(it->type);

	if (it->type == JR_FILE)
		n += (uint64_t)it->next * sizeof(struct extent) + it->at.nlen;
	else if (it->type == JR_SPECIAL)
		n += it->tlen + it->at.nlen;
	else if (it->type == JR_RENAME)
		n += it->at.nlen + it->to.nlen + sizeof(uint64_t);
	else if (it->type == JR_DIR || it->type == JR_LINK || it->type == JR_UNNAME)
		n += it->at.nlen;
	return (uint32_t)n;
}

/* The fixed part of it's body into f (fixed_len bytes). */
static void enc_fixed(const struct persist_item *it, void *f)
{
	const struct persist_name *a = &it->at;

	switch (it->type) {
	case JR_DIR:
		*(struct jb_dir *)f = (struct jb_dir){ it->id, a->parent, it->atime, it->mtime,
			it->ctime, it->mode, it->uid, it->gid, a->nlen };
		break;
	case JR_FILE:
		*(struct jb_file *)f = (struct jb_file){ it->id, a->parent, it->size, it->xxh3,
			it->atime, it->mtime, it->ctime, it->mode, it->uid, it->gid, a->nlen,
			it->next, 0 };
		break;
	case JR_SPECIAL:
		*(struct jb_special *)f = (struct jb_special){ it->id, a->parent, it->size,
			it->rdev, it->atime, it->mtime, it->ctime, it->mode, it->uid, it->gid,
			a->nlen, it->tlen, 0 };
		break;
	case JR_LINK:
		*(struct jb_link *)f = (struct jb_link){ it->id, a->parent, it->ctime, a->nlen, 0 };
		break;
	case JR_UNNAME:
		*(struct jb_unname *)f = (struct jb_unname){ it->id, a->parent, a->nlen, it->why };
		break;
	case JR_REMOVE:
		*(struct jb_remove *)f = (struct jb_remove){ it->id, it->why, 0 };
		break;
	case JR_ATTR:
		*(struct jb_attr *)f = (struct jb_attr){ it->id, it->atime, it->mtime, it->ctime,
			it->mode, it->uid, it->gid, 0 };
		break;
	case JR_RENAME:
		*(struct jb_rename *)f = (struct jb_rename){ it->id, a->parent, it->to.parent,
			a->nlen, it->to.nlen };
		break;
	case JR_IDS:
		*(struct jb_ids *)f = (struct jb_ids){ it->id };
		break;
	case JR_PIN:
		*(struct jb_pin *)f = (struct jb_pin){ it->id, it->until, it->tenant };
		break;
	}
}

static uint8_t *put(uint8_t *p, const void *src, size_t n)
{
	if (n)
		memcpy(p, src, n);
	return p + n;
}

uint32_t persist_enc_to(const struct persist_item *it, uint8_t *buf)
{
	union {
		struct jb_file f;
		struct jb_special s;
		struct jb_dir d;
		struct jb_rename r;
	} fx;
	uint32_t flen = fixed_len(it->type);
	uint8_t *p;

	memset(&fx, 0, sizeof(fx));
	enc_fixed(it, &fx);
	p = put(buf, &fx, flen);
	if (it->type == JR_FILE)
		p = put(p, it->ext, (size_t)it->next * sizeof(struct extent));
	if (it->type == JR_SPECIAL)
		p = put(p, it->target, it->tlen);
	if (it->type == JR_FILE || it->type == JR_SPECIAL || it->type == JR_DIR ||
	    it->type == JR_LINK || it->type == JR_UNNAME || it->type == JR_RENAME)
		p = put(p, it->at.name, it->at.nlen);
	if (it->type == JR_RENAME) {
		/* the moved item's ctime follows the names (a rename changes it) */
		p = put(p, it->to.name, it->to.nlen);
		p = put(p, &it->ctime, sizeof(it->ctime));
	}
	return (uint32_t)(p - buf);
}

uint8_t *persist_enc(struct persist *p, const struct persist_item *it, uint32_t *blen)
{
	uint32_t len = persist_enc_len(it);
	uint8_t *nb;

	if (len > p->jbcap) {
		nb = realloc(p->jb, len);
		if (!nb)
			return NULL;
		p->jb = nb;
		p->jbcap = len;
	}
	*blen = persist_enc_to(it, p->jb);
	return p->jb;
}

/* ---- decoding: every length checked against blen ---- */

static int dec_file(const uint8_t *body, uint32_t blen, struct persist_item *it)
{
	struct jb_file b;

	memcpy(&b, body, sizeof(b));
	if (b.next > (blen - sizeof(b)) / sizeof(struct extent) ||
	    sizeof(b) + (uint64_t)b.next * sizeof(struct extent) + b.nlen > blen)
		return -EBADMSG;
	*it = (struct persist_item){ .type = JR_FILE, .id = b.id, .size = b.size,
		.xxh3 = b.xxh3, .atime = b.atime, .mtime = b.mtime, .ctime = b.ctime,
		.mode = b.mode, .uid = b.uid, .gid = b.gid, .next = b.next,
		.ext = (const struct extent *)(body + sizeof(b)),
		.at = { b.parent, (const char *)body + sizeof(b) + b.next * sizeof(struct extent),
			b.nlen } };
	return 0;
}

static int dec_special(const uint8_t *body, uint32_t blen, struct persist_item *it)
{
	struct jb_special b;

	memcpy(&b, body, sizeof(b));
	if (sizeof(b) + (uint64_t)b.tlen + b.nlen > blen)
		return -EBADMSG;
	*it = (struct persist_item){ .type = JR_SPECIAL, .id = b.id, .size = b.size,
		.rdev = b.rdev, .atime = b.atime, .mtime = b.mtime, .ctime = b.ctime,
		.mode = b.mode, .uid = b.uid, .gid = b.gid, .tlen = b.tlen,
		.target = (const char *)body + sizeof(b),
		.at = { b.parent, (const char *)body + sizeof(b) + b.tlen, b.nlen } };
	return 0;
}

static int dec_rename(const uint8_t *body, uint32_t blen, struct persist_item *it)
{
	struct jb_rename b;
	const char *fn = (const char *)body + sizeof(b);

	memcpy(&b, body, sizeof(b));
	if (sizeof(b) + (uint64_t)b.from_len + b.to_len > blen)
		return -EBADMSG;
	*it = (struct persist_item){ .type = JR_RENAME, .id = b.id,
		.at = { b.from_parent, fn, b.from_len },
		.to = { b.to_parent, fn + b.from_len, b.to_len } };
	/* A journal older than the ctime after the names has padding only. */
	if (blen - sizeof(b) - b.from_len - b.to_len >= sizeof(it->ctime))
		memcpy(&it->ctime, fn + b.from_len + b.to_len, sizeof(it->ctime));
	return 0;
}

/* JR_DIR, JR_LINK, JR_UNNAME: a fixed part and a name. */
static int dec_named(uint32_t type, const uint8_t *body, uint32_t blen,
		     struct persist_item *it)
{
	const char *name = (const char *)body + fixed_len(type);
	struct jb_unname u;
	struct jb_link l;
	struct jb_dir d;

	if (type == JR_DIR) {
		memcpy(&d, body, sizeof(d));
		*it = (struct persist_item){ .type = type, .id = d.id, .atime = d.atime,
			.mtime = d.mtime, .ctime = d.ctime, .mode = d.mode, .uid = d.uid,
			.gid = d.gid, .at = { d.parent, name, d.nlen } };
	} else if (type == JR_LINK) {
		memcpy(&l, body, sizeof(l));
		*it = (struct persist_item){ .type = type, .id = l.id, .ctime = l.ctime,
			.at = { l.parent, name, l.nlen } };
	} else {
		memcpy(&u, body, sizeof(u));
		*it = (struct persist_item){ .type = type, .id = u.id, .why = u.why,
			.at = { u.parent, name, u.nlen } };
	}
	return fixed_len(type) + (uint64_t)it->at.nlen > blen ? -EBADMSG : 0;
}

int persist_dec(uint32_t type, const void *body, uint32_t blen, struct persist_item *it)
{
	uint32_t flen = fixed_len(type);
	struct jb_remove r;
	struct jb_attr a;
	struct jb_ids ids;
	struct jb_pin pin;

	if (!flen || blen < flen)
		return -EBADMSG;
	switch (type) {
	case JR_FILE:
		return dec_file(body, blen, it);
	case JR_SPECIAL:
		return dec_special(body, blen, it);
	case JR_RENAME:
		return dec_rename(body, blen, it);
	case JR_REMOVE:
		memcpy(&r, body, sizeof(r));
		*it = (struct persist_item){ .type = type, .id = r.id, .why = r.why };
		return 0;
	case JR_ATTR:
		memcpy(&a, body, sizeof(a));
		*it = (struct persist_item){ .type = type, .id = a.id, .atime = a.atime,
			.mtime = a.mtime, .ctime = a.ctime, .mode = a.mode, .uid = a.uid,
			.gid = a.gid };
		return 0;
	case JR_IDS:
		memcpy(&ids, body, sizeof(ids));
		*it = (struct persist_item){ .type = type, .id = ids.next_id };
		return 0;
	case JR_PIN:
		memcpy(&pin, body, sizeof(pin));
		*it = (struct persist_item){ .type = type, .id = pin.id, .until = pin.until_ns,
			.tenant = pin.tenant };
		return 0;
	}
	return dec_named(type, body, blen, it);
}

static int name_ok(const struct persist_name *n)
{
	return n->nlen && n->nlen <= PROTO_NAME_MAX;
}

/* mode, size and target of a recorded special file make sense together. */
static int special_ok(const struct persist_item *it)
{
	uint32_t t = it->mode & S_IFMT;

	if (t == S_IFLNK)
		return it->tlen && it->tlen == it->size && it->tlen < PROTO_PATH_MAX &&
		       !memchr(it->target, '\0', it->tlen);
	return !it->tlen && !it->size &&
	       (t == S_IFIFO || t == S_IFSOCK || t == S_IFCHR || t == S_IFBLK);
}

int persist_item_check(const struct persist_item *it)
{
	uint64_t bytes = 0;
	uint32_t i;

	switch (it->type) {
	case JR_FILE:
		for (i = 0; i < it->next; i++)
			bytes += it->ext[i].len;
		/* A symlink needs its target: only JR_SPECIAL carries one. */
		if (!name_ok(&it->at) || S_ISLNK(it->mode))
			return -EBADMSG;
		return it->size > bytes ? -ERANGE : 0;
	case JR_SPECIAL:
		return name_ok(&it->at) && special_ok(it) ? 0 : -EBADMSG;
	case JR_RENAME:
		return name_ok(&it->at) && name_ok(&it->to) ? 0 : -EINVAL;
	case JR_DIR:
	case JR_LINK:
	case JR_UNNAME:
		return name_ok(&it->at) ? 0 : -EINVAL;
	}
	return 0;
}

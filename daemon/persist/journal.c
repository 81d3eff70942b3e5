/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/journal.c: the directory journal in the pool's metadata area,
 * so that a restarted (or crashed) marud finds every published name again.
 * It owns the area's layout, the record encoding, appends, checkpoints and
 * the read-only scan; what the records mean is dir/replay.c's.
 *
 * Design. The area is two halves, each a 4 KiB header and then records.
 * One half is the journal: the one with a valid header (magic, pool UUID,
 * checksum) and the higher epoch. Every change of the namespace (publish,
 * replace, unlink, evict, rename, mkdir, rmdir, setattr, link, symlink,
 * mknod) appends one record
 * there, under the directory lock, so the log order is the order of the
 * changes. When the half is full, a checkpoint writes the whole live state
 * (one record per directory, parents first, and per published file) into
 * the other half and then that half's header with epoch + 1: from that
 * instant the new half is the journal, and appends continue after the
 * checkpoint. The old half is never written while it is the journal's
 * fallback, so an append-only log plus an A/B checkpoint needs no in-place
 * update anywhere.
 *
 * Why a crash at any instant recovers: a record counts once it is wholly in
 * the pool and checksummed: XXH3 over everything but its sum field, seeded
 * with the half's salt, a random number drawn for each use of a half.
 * Recovery replays records in order and stops at the first that does not
 * check (torn, never written, or left from an earlier use of the half: its
 * salt differs), so what it rebuilds is exactly the state after some prefix
 * of the changes, never a mix. A checkpoint first wipes the target half's
 * header, writes its records, makes them durable, and only then writes the
 * header; a crash before that header is complete leaves the old half (still
 * intact) as the journal. The header names the pool UUID, so a pool that
 * got a fresh superblock never replays an older pool's journal.
 *
 * Durability. On device-DAX (and non-coherent CXL) every record and every
 * checkpoint is flushed and fenced through the persist callback (pool's
 * dax persist: cache-line write-back + sfence) before the call returns, so
 * before the change it records is answered; a publish also flushes the
 * version's data extents before its record (record.c), so a recovered
 * name never points at bytes still in a cache. On shm and file pools no
 * callback is given: the pool is this host's page cache, a store is in it
 * once executed, and a release fence orders the record after the data; a
 * crash of marud (even SIGKILL) loses nothing stored. A power loss of a
 * file: pool is not covered per record (that would msync per change); the
 * file is msync'd by the kernel on its own schedule.
 *
 * Every record also makes sure the 24 bytes after it read as zero (a clean
 * end), so a scan can tell "the log ends here" from "a record was torn or
 * damaged here"; after a damaged spot it counts the valid records it can
 * still find further on, to say how much was lost.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <xxhash.h>

#include "failpoint.h"
#include "journal.h"
#include "log.h"

#define JHALF_MAGIC	"MARUJRN1"
#define JHALF_VERSION	1u

struct jhalf {
	char magic[8];
	uint32_t version, pad;
	uint8_t uuid[16];
	uint64_t epoch, salt, half_len;
	uint64_t ckpt_records, ckpt_bytes;
	uint64_t sum;		/* XXH64 of the bytes before it */
};

struct journal {
	struct journal_opts o;
	uint8_t *area;
	uint64_t half_len;
	int active;		/* -1: none yet */
	uint64_t epoch, salt, head, seq;
	/* checkpoint in progress */
	int ck_half;
	uint64_t ck_salt, ck_head, ck_seq, ck_records;
	uint64_t ck_durable;	/* checkpoint records below it are durable */
	struct journal_stats st;
	uint8_t *buf;		/* one encoded record, for appends */
	uint32_t bufcap;
};

static uint64_t rec_sum(const uint8_t *r, uint32_t len, uint64_t salt)
{
	return XXH3_64bits_withSeed(r + 8, len - 8, salt);
}

void persist_jrec_encode(void *dst, uint32_t type, uint64_t seq, uint64_t salt, const void *body,
		 uint32_t blen)
{
	uint32_t len = jrec_size(blen);
	struct jrec_hdr h = { 0, JREC_MAGIC, (uint16_t)type, len, seq };
	uint8_t *d = dst;

	memcpy(d, &h, sizeof(h));
	memcpy(d + sizeof(h), body, blen);
	memset(d + sizeof(h) + blen, 0, len - sizeof(h) - blen);
	h.sum = rec_sum(d, len, salt);
	memcpy(d, &h.sum, sizeof(h.sum));
}

int persist_jrec_decode(const void *src, uint64_t avail, uint64_t salt, uint64_t seq,
		uint32_t *type, const void **body, uint32_t *blen)
{
	const uint8_t *s = src;
	struct jrec_hdr h;

	if (avail < sizeof(h))
		return -EBADMSG;
	memcpy(&h, s, sizeof(h));
	if (h.magic != JREC_MAGIC || h.len < sizeof(h) || h.len > avail || (h.len & 7))
		return -EBADMSG;
	if (seq != UINT64_MAX && h.seq != seq)
		return -EBADMSG;
	if (rec_sum(s, h.len, salt) != h.sum)
		return -EBADMSG;
	*type = h.type;
	*body = s + sizeof(h);
	*blen = h.len - (uint32_t)sizeof(h);
	return 0;
}

static int jpersist(struct journal *j, const void *p, uint64_t len)
{
	if (!j->o.persist) {
		atomic_thread_fence(memory_order_release);
		return 0;
	}
	return j->o.persist(j->o.persist_arg, (uint64_t)((const uint8_t *)p - j->o.pool_base),
			    len);
}

int persist_journal_flush(struct journal *j, uint64_t off, uint64_t len)
{
	if (!j->o.persist || !len)
		return 0;
	return j->o.persist(j->o.persist_arg, off, len);
}

static uint8_t *half_at(const struct journal *j, int h)
{
	return j->area + (uint64_t)h * j->half_len;
}

int persist_journal_open(const struct journal_opts *o, struct journal **out)
{
	struct journal *j;

	if (!o || !o->pool_base || !o->uuid || o->area_len < 4 * JHALF_HDR)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->o = *o;
	j->area = o->pool_base + o->area_off;
	j->half_len = (o->area_len / 2) & ~(uint64_t)(JHALF_HDR - 1);
	j->active = -1;
	j->ck_half = -1;
	j->st.half_len = j->half_len;
	*out = j;
	return 0;
}

void persist_journal_close(struct journal *j)
{
	if (!j)
		return;
	free(j->buf);
	free(j);
}

uint64_t persist_journal_half_len(const struct journal *j)
{
	return j->half_len;
}

/* ---- scanning ---- */

static int half_valid(const struct journal *j, int h, struct jhalf *out)
{
	memcpy(out, half_at(j, h), sizeof(*out));
	if (memcmp(out->magic, JHALF_MAGIC, 8) || out->version != JHALF_VERSION)
		return 0;
	if (XXH64(out, offsetof(struct jhalf, sum), 0) != out->sum)
		return 0;
	return !memcmp(out->uuid, j->o.uuid, 16) && out->half_len == j->half_len;
}

static int pick_half(const struct journal *j, struct jhalf *hdr)
{
	struct jhalf a, b;
	int va = half_valid(j, 0, &a), vb = half_valid(j, 1, &b);

	if (va && (!vb || a.epoch >= b.epoch)) {
		*hdr = a;
		return 0;
	}
	if (vb) {
		*hdr = b;
		return 1;
	}
	return -1;
}

static int all_zero(const uint8_t *p, uint64_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* Past a damaged spot: count the valid records of this salt still there. */
static void count_lost(const uint8_t *h, uint64_t from, uint64_t end, uint64_t salt,
		       struct journal_scan *sc)
{
	const void *body;
	uint32_t type, blen;
	uint64_t off;

	for (off = from + 8; off + sizeof(struct jrec_hdr) <= end; off += 8) {
		if (*(const uint16_t *)(h + off + 8) != JREC_MAGIC)
			continue;
		if (persist_jrec_decode(h + off, end - off, salt, UINT64_MAX, &type, &body, &blen))
			continue;
		sc->lost_records++;
		sc->lost_bytes += jrec_size(blen);
		off += jrec_size(blen) - 8;
	}
}

int persist_journal_scan(struct journal *j, journal_rec_fn cb, void *arg, struct journal_scan *sc)
{
	struct jhalf hdr;
	const uint8_t *h;
	const void *body;
	uint32_t type, blen;
	uint64_t off = JHALF_HDR, seq = 0;
	int rc = 0;

	memset(sc, 0, sizeof(*sc));
	sc->half = pick_half(j, &hdr);
	if (sc->half < 0)
		return 0;
	sc->found = 1;
	sc->epoch = hdr.epoch;
	h = half_at(j, sc->half);
	while (!persist_jrec_decode(h + off, j->half_len - off, hdr.salt, seq, &type, &body, &blen)) {
		if (cb && (rc = cb(arg, type, body, blen)) != 0)
			break;
		sc->records++;
		sc->bytes += jrec_size(blen);
		off += jrec_size(blen);
		seq++;
	}
	sc->stop_off = off;
	if (!rc) {
		sc->torn = off + sizeof(struct jrec_hdr) <= j->half_len &&
			   !all_zero(h + off, sizeof(struct jrec_hdr));
		if (sc->torn)
			count_lost(h, off, j->half_len, hdr.salt, sc);
	}
	/* The half read is never appended to again (it may end in a torn record):
	 * it stays the journal, full, until the next checkpoint replaces it. */
	j->epoch = hdr.epoch;
	j->active = sc->half;
	j->head = j->half_len;
	return rc;
}

/* ---- appending ---- */

/* Zero the header slot after a record so a scan sees a clean end there. */
static void mark_end(struct journal *j, uint8_t *h, uint64_t off)
{
	uint64_t n = sizeof(struct jrec_hdr);

	if (off + n > j->half_len)
		n = j->half_len - off;
	memset(h + off, 0, n);
}

int persist_journal_fits(const struct journal *j, uint64_t rlen)
{
	return j->active >= 0 && j->head + rlen <= j->half_len;
}

static int buf_room(struct journal *j, uint32_t len)
{
	uint8_t *nb;

	if (len <= j->bufcap)
		return 0;
	nb = realloc(j->buf, len);
	if (!nb)
		return -ENOMEM;
	j->buf = nb;
	j->bufcap = len;
	return 0;
}

static void fp_hit(const char *fp, const char *what)
{
	char name[64];

	if (!fp)
		return;
	snprintf(name, sizeof(name), "%s.%s", fp, what);
	(void)FAILPOINT(name);
}

int persist_journal_append(struct journal *j, uint32_t type, const void *body, uint32_t blen,
		   const char *fp)
{
	uint32_t len = jrec_size(blen);
	uint8_t *h, *dst;
	int rc;

	if (j->active < 0)
		return -ENODEV;
	if (!persist_journal_fits(j, len))
		return -ENOSPC;
	rc = buf_room(j, len);
	if (rc)
		return rc;
	persist_jrec_encode(j->buf, type, j->seq, j->salt, body, blen);
	h = half_at(j, j->active);
	dst = h + j->head;
	/* The end marker first: the record lands where a clean end was. */
	mark_end(j, h, j->head + len);
	memcpy(dst, j->buf, len / 2);
	fp_hit(fp, "torn");
	memcpy(dst + len / 2, j->buf + len / 2, len - len / 2);
	rc = jpersist(j, dst, len + sizeof(struct jrec_hdr) <= j->half_len - j->head ?
			      len + sizeof(struct jrec_hdr) : len);
	j->head += len;
	j->seq++;
	j->st.appended++;
	fp_hit(fp, "after");
	return rc;
}

/* ---- checkpoints ---- */

static uint64_t new_salt(void)
{
	uint64_t s = 0;

	while (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
		if (errno != EINTR)
			break;
	/* getrandom failing is near impossible; a clock-mixed value still differs. */
	return s ? s : XXH64(&s, sizeof(s), (uint64_t)(uintptr_t)&s);
}

int persist_journal_ckpt_begin(struct journal *j)
{
	uint8_t *h;

	j->ck_half = j->active < 0 ? 0 : j->active ^ 1;
	h = half_at(j, j->ck_half);
	memset(h, 0, JHALF_HDR);
	mark_end(j, h, JHALF_HDR);
	j->ck_salt = new_salt();
	j->ck_head = JHALF_HDR;
	j->ck_seq = 0;
	j->ck_records = 0;
	j->ck_durable = JHALF_HDR;
	return jpersist(j, h, JHALF_HDR + sizeof(struct jrec_hdr));
}

int persist_journal_ckpt_add(struct journal *j, uint32_t type, const void *body, uint32_t blen)
{
	uint32_t len = jrec_size(blen);
	uint8_t *h;

	if (j->ck_half < 0)
		return -EINVAL;
	if (j->ck_head + len > j->half_len)
		return -ENOSPC;
	h = half_at(j, j->ck_half);
	persist_jrec_encode(h + j->ck_head, type, j->ck_seq, j->ck_salt, body, blen);
	j->ck_head += len;
	j->ck_seq++;
	j->ck_records++;
	return 0;
}

int persist_journal_ckpt_commit(struct journal *j)
{
	uint8_t *h = half_at(j, j->ck_half);
	struct jhalf hdr = { 0 };
	int rc;

	mark_end(j, h, j->ck_head);
	rc = jpersist(j, h + j->ck_durable, j->ck_head - j->ck_durable +
		      (j->ck_head + sizeof(struct jrec_hdr) <= j->half_len ?
		       sizeof(struct jrec_hdr) : 0));
	if (rc)
		return rc;
	memcpy(hdr.magic, JHALF_MAGIC, 8);
	hdr.version = JHALF_VERSION;
	memcpy(hdr.uuid, j->o.uuid, 16);
	hdr.epoch = j->epoch + 1;
	hdr.salt = j->ck_salt;
	hdr.half_len = j->half_len;
	hdr.ckpt_records = j->ck_records;
	hdr.ckpt_bytes = j->ck_head - JHALF_HDR;
	hdr.sum = XXH64(&hdr, offsetof(struct jhalf, sum), 0);
	memcpy(h, &hdr, sizeof(hdr));
	rc = jpersist(j, h, sizeof(hdr));
	if (rc)
		return rc;
	j->active = j->ck_half;
	j->epoch = hdr.epoch;
	j->salt = j->ck_salt;
	j->head = j->ck_head;
	j->seq = j->ck_seq;
	j->ck_half = -1;
	j->st.checkpoints++;
	j->st.ckpt_bytes = hdr.ckpt_bytes;
	return 0;
}

/* The target's header is already wiped: the old half stays the journal. */
void persist_journal_ckpt_abort(struct journal *j)
{
	j->ck_half = -1;
}

int persist_journal_ckpt_persist(struct journal *j)
{
	int rc;

	if (j->ck_half < 0)
		return -EINVAL;
	rc = jpersist(j, half_at(j, j->ck_half) + j->ck_durable, j->ck_head - j->ck_durable);
	if (!rc)
		j->ck_durable = j->ck_head;
	return rc;
}

void persist_journal_ckpt_pos(const struct journal *j, struct journal_ckpt_pos *out)
{
	out->head = j->ck_head;
	out->seq = j->ck_seq;
	out->records = j->ck_records;
}

int persist_journal_ckpt_adopt(struct journal *j, const struct journal_ckpt_pos *pos)
{
	if (j->ck_half < 0 || pos->head < JHALF_HDR || pos->head > j->half_len ||
	    (pos->head & 7) || pos->records != pos->seq)
		return -EINVAL;
	j->ck_head = j->ck_durable = pos->head;
	j->ck_seq = pos->seq;
	j->ck_records = pos->records;
	return 0;
}

int persist_journal_ckpt_copy(struct journal *j, uint64_t *from, uint32_t max)
{
	const uint8_t *src;
	struct jrec_hdr h;
	uint8_t *dst;

	if (j->ck_half < 0 || j->active < 0)
		return -EINVAL;
	src = half_at(j, j->active);
	dst = half_at(j, j->ck_half);
	while (*from < j->head && max--) {
		memcpy(&h, src + *from, sizeof(h));
		if (h.len < sizeof(h) || *from + h.len > j->head)
			return -EIO;	/* not a record boundary: never ours */
		if (j->ck_head + h.len > j->half_len)
			return -ENOSPC;
		/* the body with its padding: the same length comes out */
		persist_jrec_encode(dst + j->ck_head, h.type, j->ck_seq, j->ck_salt,
			    src + *from + sizeof(h), h.len - (uint32_t)sizeof(h));
		j->ck_head += h.len;
		j->ck_seq++;
		j->ck_records++;
		*from += h.len;
	}
	return 0;
}

uint64_t persist_journal_head(const struct journal *j)
{
	return j->head;
}

uint64_t persist_journal_used(const struct journal *j)
{
	return j->active < 0 ? 0 : j->head - JHALF_HDR;
}

int persist_journal_shared(const struct journal *j)
{
	return j->o.shared;
}

void persist_journal_stats(const struct journal *j, struct journal_stats *out)
{
	*out = j->st;
	out->epoch = j->epoch;
	out->used = j->active < 0 ? 0 : j->head - JHALF_HDR;
}

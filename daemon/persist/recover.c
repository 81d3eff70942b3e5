/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/recover.c: what marud does with its metadata area at
 * start (persist_start) and under `marud -n` (persist_check). At start it
 * decides between recovering and starting empty (--fresh, a new pool, or
 * a pool whose superblock was rewritten), runs persist_restore() over the
 * journal, says in the log what came back, what was lost and how fast,
 * then writes a checkpoint of the recovered state into the journal's
 * other half (the half replayed, which may end in a torn record, is never
 * appended to). The server then hands the result to the directory.
 * persist_check maps the pool read-only and runs the same restore into a
 * scratch directory its caller makes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "persist.h"
#include "pool.h"
#include "recover.h"
#include "superblock.h"

static int dax_persist(void *arg, uint64_t off, uint64_t len)
{
	return pool_persist(arg, off, len);
}

static void log_scan(const struct journal_scan *sc)
{
	if (!sc->torn)
		return;
	if (sc->lost_records)
		log_warnx("recovery: the journal is damaged at offset %" PRIu64
			  ": recovered up to its last valid record; %" PRIu64
			  " later records (%" PRIu64 " bytes) are lost",
			  sc->stop_off, sc->lost_records, sc->lost_bytes);
	else
		log_warnx("recovery: the journal ends in a torn record at offset %" PRIu64
			  " (a change in flight at the crash): recovered up to the record before it",
			  sc->stop_off);
}

static int recover(struct pool *pl, struct persist *p)
{
	struct persist_restore_stats st;
	struct journal_scan sc;
	uint64_t t0 = now_ns(), ns;
	int rc;

	rc = persist_restore(p, pl->base, &sc, &st);
	if (rc)
		return rc;
	ns = now_ns() - t0;
	if (!sc.found) {
		log_info("recovery: no journal in the metadata area: starting empty");
		return 0;
	}
	log_scan(&sc);
	if (st.bad_sum)
		log_warnx("recovery: %" PRIu64 " versions (%" PRIu64
			  " bytes) dropped: their bytes no longer match their checksum",
			  st.bad_sum, st.bad_sum_bytes);
	if (st.skipped)
		log_warnx("recovery: %" PRIu64 " journal records did not apply", st.skipped);
	log_info("recovery: %" PRIu64 " names, %" PRIu64 " directories, %" PRIu64
		 " bytes back from %" PRIu64 " records (journal epoch %" PRIu64 ") in %" PRIu64
		 " ms (%.0f names/s); ids resume at %" PRIu64,
		 st.files, st.dirs, st.bytes, sc.records, sc.epoch, ns / 1000000,
		 ns ? (double)st.files * 1e9 / (double)ns : 0.0, st.next_id);
	return 0;
}

static int skip_record(void *arg, uint32_t type, const void *body, uint32_t blen)
{
	return 0;
}

/*
 * --fresh: nothing is replayed, but the scan still learns which half is
 * the journal and its epoch, so the checkpoint that follows lands in the
 * other half with a higher epoch and the next start picks it (without
 * it, the old half could win again and bring the forgotten names back).
 */
static int forget(struct journal *j)
{
	struct journal_scan sc;

	log_info("recovery: --fresh: starting empty, forgetting the pool's directory");
	return persist_journal_scan(j, skip_record, NULL, &sc);
}

int persist_start(struct pool *pl, const struct persist_owner *own,
		  const struct persist_start_opts *o, struct persist **out)
{
	struct journal_opts jo = {
		.pool_base = pl->base, .area_off = pl->meta_off, .area_len = pl->meta_len,
		.uuid = pl->uuid,
		.persist = pl->ops->kind == POOL_DAX ? dax_persist : NULL, .persist_arg = pl,
		.shared = 1,	/* every pool is a MAP_SHARED mapping (pool/) */
	};
	struct journal *j;
	struct persist *p;
	int rc;

	*out = NULL;
	if (!o->journal) {
		log_warnx("journal off: the directory will not survive a restart");
		return 0;
	}
	rc = persist_journal_open(&jo, &j);
	if (rc) {
		log_warn(rc, "journal: metadata area of %" PRIu64 " bytes", pl->meta_len);
		return rc;
	}
	rc = persist_new(j, own, &p);
	if (rc) {
		persist_journal_close(j);
		return rc;
	}
	if (o->fresh)
		rc = forget(j);
	else if (pl->sb_fresh)
		log_info("recovery: new superblock: starting empty");
	else
		rc = recover(pl, p);
	if (!rc)
		rc = persist_checkpoint(p);
	if (rc) {
		log_warn(rc, "journal: recovered state cannot be checkpointed");
		persist_free(p);
		persist_journal_close(j);
		return rc;
	}
	*out = p;
	return 0;
}

void persist_close(struct persist *p)
{
	struct journal *j = persist_journal(p);

	persist_free(p);
	persist_journal_close(j);
}

/* ---- marud -n ---- */

static int uri_path(const char *uri, char *buf, size_t cap)
{
	int n;

	if (!strncmp(uri, "shm:", 4))
		n = snprintf(buf, cap, "/dev/shm/%s", uri + 4);
	else if (!strncmp(uri, "file:", 5) || !strncmp(uri, "dax:", 4))
		n = snprintf(buf, cap, "%s", strchr(uri, ':') + 1);
	else
		return -EINVAL;
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static void check_say(const struct journal_scan *sc, const struct persist_restore_stats *st,
		      FILE *out)
{
	if (!sc->found) {
		fprintf(out, "pool metadata: no journal (a start begins empty)\n");
		return;
	}
	fprintf(out, "pool metadata: journal epoch %" PRIu64 ", %" PRIu64 " records, %"
		PRIu64 " names, %" PRIu64 " directories, %" PRIu64 " bytes would be recovered\n"
		"pool metadata: %s; %" PRIu64 " records lost, %" PRIu64
		" versions failing their checksum, %" PRIu64 " records not applying\n",
		sc->epoch, sc->records, st->files, st->dirs, st->bytes,
		sc->torn ? "ends in a torn or damaged record" : "ends cleanly",
		sc->lost_records, st->bad_sum, st->skipped);
}

/* Restore into a scratch directory over the read-only mapping. */
static int check_mapped(const uint8_t *base, const struct pool_superblock *sb,
			const struct persist_scratch *sx, FILE *out)
{
	struct journal_opts jo = { (uint8_t *)base, sb->meta_off, sb->meta_len, sb->uuid };
	struct persist_restore_stats st = { 0 };
	struct persist_owner own;
	struct journal_scan sc = { 0 };
	struct journal *j = NULL;
	struct persist *p = NULL;
	void *h = NULL;
	int rc;

	rc = sx->scratch_open(sb->data_off, (sb->size - sb->data_off) & ~4095ull,
			      sb->align > 4096 ? sb->align : 4096, &own, &h);
	if (!rc)
		rc = persist_journal_open(&jo, &j);
	if (!rc)
		rc = persist_new(j, &own, &p);
	if (!rc)
		rc = persist_restore(p, base, &sc, &st);
	if (!rc)
		check_say(&sc, &st, out);
	if (!rc && sx->scratch_check(h))
		rc = -EUCLEAN;
	persist_free(p);
	persist_journal_close(j);
	if (h)
		sx->scratch_close(h);
	if (rc < 0)
		return rc;
	return sc.lost_records || st.bad_sum || st.skipped;
}

static int check_fd(int fd, const struct persist_scratch *sx, FILE *out)
{
	struct pool_superblock sb;
	size_t len = POOL_SB_SIZE;
	void *m;
	int rc;

	/* device-DAX maps only at its alignment: retry with 2 MiB */
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		len = 2u << 20;
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	}
	if (m == MAP_FAILED)
		return -errno;
	memcpy(&sb, m, sizeof(sb));
	munmap(m, len);
	if (pool_sb_check(&sb) || sb.meta_off < POOL_SB_SIZE ||
	    sb.meta_off + sb.meta_len > sb.data_off || sb.data_off >= sb.size) {
		fprintf(out, "pool metadata: no valid superblock (a start writes a new pool)\n");
		return 0;
	}
	m = mmap(NULL, sb.size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	rc = check_mapped(m, &sb, sx, out);
	munmap(m, sb.size);
	return rc;
}

int persist_check(const char *uri, const struct persist_start_opts *o,
		  const struct persist_scratch *sc, FILE *out)
{
	char path[4096];
	int fd, rc;

	if (!o->journal || o->fresh) {
		fprintf(out, "pool metadata: not read (%s)\n",
			o->fresh ? "fresh: a start begins empty" : "journal off");
		return 0;
	}
	rc = uri_path(uri, path, sizeof(path));
	if (rc)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(out, "pool metadata: %s: %s (a start creates the pool)\n", path,
			strerror(errno));
		return 0;
	}
	rc = check_fd(fd, sc, out);
	close(fd);
	if (rc < 0)
		fprintf(out, "pool metadata: %s: cannot read: %s\n", path, strerror(-rc));
	return rc < 0 ? 1 : rc;
}

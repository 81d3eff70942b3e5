// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/ext/tier/tier.c: the region extension "tier" (a software
 * CXL-SSD, see tier.h): its descriptor, its config ("budget=SIZE",
 * "workers=N", "sweep_ms=N", comma-separated), and the hooks, which only
 * queue work for work.c under t->lock and return. mapped(fresh) punches
 * the data area out of the file so stale contents are gone before any
 * write lands; memory_generation() follows the backing file's identity:
 * st_dev, st_ino and the user.maru.tier.gen xattr that mapped() sets on a
 * file without one (replacing the file, or changing the xattr, is a reset).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "tier.h"

#define GEN_XATTR "user.maru.tier.gen"

static int parse_size(const char *v, size_t n, uint64_t *out)
{
	char buf[32], *end;
	unsigned long long x;

	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, v, n);
	buf[n] = '\0';
	errno = 0;
	x = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	switch (*end) {
	case 'G': case 'g': x <<= 10; /* fall through */
	case 'M': case 'm': x <<= 10; /* fall through */
	case 'K': case 'k': x <<= 10; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	*out = x;
	return *end ? -EINVAL : 0;
}

static int config_one(struct tier *t, const char *kv, size_t n)
{
	const char *eq = memchr(kv, '=', n);
	uint64_t v;
	size_t k;

	if (!eq)
		return -EINVAL;
	k = (size_t)(eq - kv);
	if (parse_size(eq + 1, n - k - 1, &v))
		return -EINVAL;
	if (k == 6 && !memcmp(kv, "budget", 6) && v >= TIER_UNIT)
		t->budget = v;
	else if (k == 7 && !memcmp(kv, "workers", 7) && v >= 1 && v <= TIER_MAX_WORKERS)
		t->workers = (unsigned int)v;
	else if (k == 8 && !memcmp(kv, "sweep_ms", 8) && v >= 1 && v <= 10000)
		t->sweep_ms = (unsigned int)v;
	else
		return -EINVAL;
	return 0;
}

static int config_parse(struct tier *t, const char *c)
{
	const char *comma;
	int rc;

	t->budget = 256ull << 20;
	t->workers = 2;
	t->sweep_ms = 20;
	while (c && *c) {
		comma = strchr(c, ',');
		rc = config_one(t, c, comma ? (size_t)(comma - c) : strlen(c));
		if (rc) {
			fprintf(stderr, "tier: bad config item in '%s' (budget=SIZE>=2M, "
				"workers=1..16, sweep_ms=1..10000)\n", c);
			return rc;
		}
		c = comma ? comma + 1 : NULL;
	}
	return 0;
}

static int t_open(const char *config, void **state)
{
	struct tier *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	rc = config_parse(t, config);
	if (rc) {
		free(t);
		return rc;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->work, NULL);
	pthread_cond_init(&t->done, NULL);
	*state = t;
	return 0;
}

static void t_close(void *state)
{
	struct tier *t = state;

	if (t->have_region)
		tier_threads_stop(t);
	while (t->reqs) {
		t->reqs->inflight = 0;
		tier_req_end(t, t->reqs);
	}
	tier_cache_free(t);
	pthread_cond_destroy(&t->done);
	pthread_cond_destroy(&t->work);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Give the file a generation tag if it has none. */
static void gen_tag(const char *path)
{
	uint64_t v;
	char buf[24];

	if (getxattr(path, GEN_XATTR, buf, sizeof(buf)) > 0)
		return;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)time(NULL);
	snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)v);
	setxattr(path, GEN_XATTR, buf, strlen(buf), 0);
}

/* A file: pool only; remembers it, so memory_generation() can answer. */
static int t_validate(void *state, const struct marud_ext_region *r)
{
	struct tier *t = state;

	if (r->backend != 2 || r->fd < 0) {
		fprintf(stderr, "tier: pool %s is not a file: pool (the tier is a file on disk "
			"behind the page cache)\n", r->uri);
		return -ENOTSUP;
	}
	pthread_mutex_lock(&t->lock);
	t->r = *r;
	pthread_mutex_unlock(&t->lock);
	gen_tag(r->path);
	return 0;
}

static int t_mapped(void *state, const struct marud_ext_region *r, int fresh)
{
	struct tier *t = state;
	int rc;

	if (t->have_region)
		return 0;
	t->r = *r;
	if (fresh && r->size > r->data_off &&
	    fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)r->data_off,
		      (off_t)(r->size - r->data_off)))
		fprintf(stderr, "tier: dropping stale contents: %s\n", strerror(errno));
	rc = tier_cache_init(t);
	if (rc)
		return rc;
	rc = tier_threads_start(t);
	if (rc) {
		tier_cache_free(t);
		return rc;
	}
	t->have_region = 1;
	return 0;
}

/* Append [off, off+len) cut at unit boundaries. */
static int add_pieces(struct treq *q, const struct marud_ext_range *r)
{
	uint64_t off = r->off, end = r->off + r->len, cut;
	struct piece *p;

	while (off < end) {
		cut = (off / TIER_UNIT + 1) * TIER_UNIT;
		cut = cut < end ? cut : end;
		if (q->n == q->cap) {
			p = realloc(q->p, (q->cap ? q->cap * 2 : 16) * sizeof(*p));
			if (!p)
				return -ENOMEM;
			q->p = p;
			q->cap = q->cap ? q->cap * 2 : 16;
		}
		q->p[q->n++] = (struct piece){ off, cut - off };
		off = cut;
	}
	return 0;
}

static struct treq *req_new(struct tier *t, uint64_t conn, const char *id, int write)
{
	struct treq *q = calloc(1, sizeof(*q)), **tail = &t->reqs, *prev = NULL;

	if (!q)
		return NULL;
	q->conn = conn;
	q->write = write;
	snprintf(q->id, sizeof(q->id), "%s", id);
	while (*tail) {
		prev = *tail;
		tail = &(*tail)->next;
	}
	q->prev = prev;
	*tail = q;	/* hint order: the back of the queue */
	return q;
}

static void promote(struct tier *t, const char *id)
{
	struct treq *q = tier_req_find(t, 0, id);

	if (!q || t->reqs == q)
		return;
	q->prev->next = q->next;
	if (q->next)
		q->next->prev = q->prev;
	q->prev = NULL;
	q->next = t->reqs;
	t->reqs->prev = q;
	t->reqs = q;
}

static int queue_ranges(struct tier *t, uint64_t conn, const char *id, int write,
			const struct marud_ext_range *r, uint32_t n)
{
	struct treq *q = write ? NULL : tier_req_find(t, conn, id);
	uint32_t i;
	int rc = 0;

	if (!q)
		q = req_new(t, conn, id, write);
	if (!q)
		return -ENOMEM;
	for (i = 0; i < n && !rc; i++)
		rc = add_pieces(q, &r[i]);
	pthread_cond_broadcast(&t->work);
	return rc;
}

static int t_hint(void *state, uint64_t conn, enum marud_ext_action a, const char *id,
		  const struct marud_ext_range *r, uint32_t n)
{
	struct tier *t = state;
	struct treq *q;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	if (!t->have_region)
		rc = -EAGAIN;
	else if (a == MARUD_EXT_READ || a == MARUD_EXT_WRITE)
		rc = queue_ranges(t, conn, id, a == MARUD_EXT_WRITE, r, n);
	else if (a == MARUD_EXT_READ_END && (q = tier_req_find(t, conn, id)))
		tier_req_end(t, q);
	else if (a == MARUD_EXT_PROMOTE)
		promote(t, id);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* How many leading ranges are wholly resident. */
static uint32_t ready_prefix(struct tier *t, const struct marud_ext_range *r, uint32_t n)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), start, end;
	uint32_t i;

	for (i = 0; i < n; i++) {
		start = r[i].off & ~(pg - 1);
		end = (r[i].off + r[i].len + pg - 1) & ~(pg - 1);
		if (tier_resident(t, start, end - start) < end - start)
			break;
	}
	return i;
}

/* On the requesting connection's thread: poll until ready or timeout. */
static int t_wait(void *state, uint64_t conn, const struct marud_ext_range *r,
		  uint32_t n, uint32_t timeout_ms)
{
	struct tier *t = state;
	struct timespec nap = { 0, 1000000L };
	uint32_t waited = 0, k;

	(void)conn;
	for (;;) {
		k = ready_prefix(t, r, n);
		if (k == n || waited >= timeout_ms)
			return (int)k;
		nanosleep(&nap, NULL);
		waited++;
	}
}

static void t_retire(void *state, const struct marud_ext_range *r)
{
	struct tier *t = state;
	uint64_t i;

	pthread_mutex_lock(&t->lock);
	/* forget their heat: the first to go when room is needed */
	for (i = r->off / TIER_UNIT; t->u && i < t->nunits &&
	     i * TIER_UNIT < r->off + r->len; i++)
		t->u[i].used = 0;
	pthread_mutex_unlock(&t->lock);
}

static void t_conn_closed(void *state, uint64_t conn)
{
	struct tier *t = state;
	struct treq *q, *next;

	pthread_mutex_lock(&t->lock);
	for (q = t->reqs; q; q = next) {
		next = q->next;
		if (q->conn == conn && !q->write)
			tier_req_end(t, q);
	}
	pthread_mutex_unlock(&t->lock);
}

static int t_memgen(void *state, uint64_t *gen)
{
	struct tier *t = state;
	char tag[24] = "";
	struct stat st;
	ssize_t n;

	if (!t->r.path || stat(t->r.path, &st))
		return -EAGAIN;
	n = getxattr(t->r.path, GEN_XATTR, tag, sizeof(tag) - 1);
	*gen = ((uint64_t)st.st_dev << 48) ^ (uint64_t)st.st_ino * 0x9e3779b97f4a7c15ULL;
	if (n > 0)
		*gen ^= strtoull(tag, NULL, 16);
	return 0;
}

__attribute__((visibility("default")))
const struct marud_extension marud_extension = {
	.abi_version = MARUD_EXTENSION_ABI,
	.size = sizeof(struct marud_extension),
	.name = "tier",
	.actions = MARUD_EXT_ACTION_BIT(MARUD_EXT_READ) |
		   MARUD_EXT_ACTION_BIT(MARUD_EXT_READ_END) |
		   MARUD_EXT_ACTION_BIT(MARUD_EXT_PROMOTE) |
		   MARUD_EXT_ACTION_BIT(MARUD_EXT_WRITE) |
		   MARUD_EXT_ACTION_BIT(MARUD_EXT_READ_WAIT) |
		   MARUD_EXT_ACTION_BIT(MARUD_EXT_WRITE_WAIT),
	.open = t_open,
	.close = t_close,
	.validate_access = t_validate,
	.mapped = t_mapped,
	.hint = t_hint,
	.read_wait = t_wait,
	.write_wait = t_wait,
	.retire = t_retire,
	.connection_closed = t_conn_closed,
	.memory_generation = t_memgen,
};

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/ctl_bench.c: the control-plane load generator of issue 12. It
 * speaks marud's wire protocol (lib/common/proto/proto.h, as the integration
 * tool maru_raw does) over many sockets from a few epoll threads, each socket
 * its own session with one request in flight (a closed loop). Not libmaru:
 * its calls block, so 1,000 connections with a request out on each would
 * need 1,000 calling threads (plus each client's notifier thread) on a
 * 2-core machine, and the ratio would measure the scheduler. The same driver
 * runs the Redis peer (RESP, benchnet.h), so both sides cost the same.
 *
 *   ctl_bench mix MARU REDIS CONNS SECONDS NAMES ROUNDS [WORKERS [MARUD_PID REDIS_PID]]
 *	CONNS sessions on each server; marud does exists, lookup, open,
 *	release, create, publish in turn on a directory of NAMES names,
 *	Redis GET x4 and SET x2 on NAMES keys; ROUNDS alternating rounds of
 *	SECONDS each; prints medians of ops/s, p50 and p99 latency, and the
 *	CPU time per op the client took (and each server, given its pid):
 *	on a loaded machine ops/s is partly the scheduler's share, CPU per op
 *	is not.
 *   ctl_bench names MARU N MARUD_PID SECONDS
 *	fills a directory with 10,000 names and one with N (create, publish,
 *	release each), with a thread timing single lookups meanwhile (longest,
 *	p50/p99/p99.9), then the same beside lookups only (the control) and
 *	beside 64 MiB zero-fills and publishes (bulk); marud RSS per name from
 *	/proc/MARUD_PID/status; lookup rate at 10k vs N (medians of 3).
 *
 * MARU and REDIS are addresses as net_connect() takes them. Output lines are
 * "key value"; every request's status is checked (any error exits 1).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "benchnet.h"
#include "proto.h"

#define ROOT_ID		1ULL
#define FILL_CONNS	32
#define LOOKUP_CONNS	64
#define SMALL_NAMES	10000
#define VAL_LEN		96	/* a Redis value about the size of a marud attr reply */
#define MAX_ROUNDS	9
#define STALL_NS	5000000ULL

struct conn {
	int fd;
	uint32_t id;
	uint64_t step;		/* position in the op cycle */
	uint64_t reqid, gen;	/* marud session */
	uint64_t ino;		/* lease or pending version between two steps */
	uint64_t sent_ns;
	unsigned int seed;
	size_t inlen, incap;
	uint8_t *in;
};

struct job;
struct job_ops {
	/* Next request of c into buf: its length, 0 when c has no more work. */
	size_t (*build)(struct job *j, struct conn *c, uint8_t *buf, size_t cap);
	/* Bytes the reply at buf takes, 0 when more are needed, < 0 on error. */
	ssize_t (*reply)(struct job *j, struct conn *c, const uint8_t *buf, size_t len);
};

struct job {
	const struct job_ops *ops;
	uint64_t dir;		/* marud directory holding the names */
	long names;		/* names 0..names-1 exist there */
	const char *prefix;	/* Redis key prefix */
	atomic_long next;	/* fill: next index to create */
	atomic_long done;	/* fill: names published */
	long fill_end;
	uint64_t t_start, t_end;	/* record window (ns); t_end 0: until the work ends */
};

struct worker {
	pthread_t th;
	struct job *job;
	struct conn **conns;
	int nconns;
	long ops;		/* replies inside the window */
	uint32_t *lat;		/* their latencies, ns (capped) */
	size_t nlat, caplat;
	uint64_t max_ns;
	int err;
};

struct result {
	double ops_per_s, p50_us, p99_us, max_us;
	long ops;
	double srv_cpu_us, cli_cpu_us;	/* CPU time over the window (server: 0 unknown) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static _Noreturn void die(const char *what, int rc)
{
	fprintf(stderr, "ctl_bench: %s: %s\n", what, rc < 0 ? strerror(-rc) : "failed");
	exit(1);
}

static long num_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0) {
		fprintf(stderr, "ctl_bench: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

/* Names look like the token hashes engines use as chunk names. */
static int name_of(char *out, size_t cap, long i)
{
	return snprintf(out, cap, "%016lx.kv", (unsigned long)i * 0x9e3779b97f4a7c15UL);
}

static long pick(struct conn *c, long n)
{
	return (long)(((uint64_t)rand_r(&c->seed) << 16 ^ (uint64_t)rand_r(&c->seed)) % (uint64_t)n);
}

/* ---- marud frames ---- */

/* Header, fixed body, variable tail into buf; the frame length (0: too big). */
static size_t maru_frame(struct conn *c, uint8_t *buf, size_t cap, uint16_t op, const void *body,
			 size_t blen, const void *tail, size_t tlen)
{
	struct proto_hdr h;

	if (PROTO_HDR_SIZE + blen + tlen > cap)
		return 0;
	proto_hdr_init(&h, op, (uint32_t)(blen + tlen), c->reqid++, c->gen, 0);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, blen);
	if (tlen)
		memcpy(buf + sizeof(h) + blen, tail, tlen);
	return sizeof(h) + blen + tlen;
}

static size_t maru_named(struct conn *c, uint8_t *buf, size_t cap, uint16_t op, uint64_t dir,
			 const char *name, int nlen)
{
	struct proto_name_req q = { .parent = dir, .mode = 040755, .namelen = (uint16_t)nlen };

	return maru_frame(c, buf, cap, op, &q, sizeof(q), name, (size_t)nlen);
}

static size_t maru_exists(struct conn *c, uint8_t *buf, size_t cap, uint64_t dir,
			  const char *name, int nlen)
{
	struct proto_exists_req q = { .parent = dir, .count = 1 };
	uint8_t tail[2 + PROTO_NAME_MAX];
	uint16_t l = (uint16_t)nlen;

	memcpy(tail, &l, 2);
	memcpy(tail + 2, name, (size_t)nlen);
	return maru_frame(c, buf, cap, OP_EXISTS, &q, sizeof(q), tail, 2 + (size_t)nlen);
}

static size_t maru_open(struct conn *c, uint8_t *buf, size_t cap, uint64_t dir,
			const char *name, int nlen)
{
	struct proto_open_req q = { .parent = dir, .namelen = (uint16_t)nlen };

	return maru_frame(c, buf, cap, OP_OPEN, &q, sizeof(q), name, (size_t)nlen);
}

static size_t maru_create(struct conn *c, uint8_t *buf, size_t cap, uint64_t dir,
			  const char *name, int nlen)
{
	struct proto_create_req q = { .parent = dir, .mode = 0100644, .namelen = (uint16_t)nlen };

	return maru_frame(c, buf, cap, OP_CREATE, &q, sizeof(q), name, (size_t)nlen);
}

static size_t maru_by_ino(struct conn *c, uint8_t *buf, size_t cap, uint16_t op, uint64_t ino)
{
	struct proto_ino_req q = { .ino = ino };
	struct proto_publish_req p = { .ino = ino };

	if (op == OP_PUBLISH)
		return maru_frame(c, buf, cap, op, &p, sizeof(p), NULL, 0);
	return maru_frame(c, buf, cap, op, &q, sizeof(q), NULL, 0);
}

/*
 * A whole reply at buf: check it answers c's request with status 0 (or one
 * of the statuses `ok` allows) and keep an ino it carries. Bytes taken.
 */
static ssize_t maru_take(struct conn *c, const uint8_t *buf, size_t len, int ok)
{
	struct proto_hdr h;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != PROTO_MAGIC || h.len > PROTO_MAX_FRAME || h.reqid != c->reqid - 1)
		return -EPROTO;
	if (len < sizeof(h) + h.len)
		return 0;
	if (h.status && h.status != ok) {
		fprintf(stderr, "ctl_bench: marud op %u: %s\n", h.op, strerror(-h.status));
		return -EREMOTEIO;
	}
	if (!h.status && (h.op == OP_OPEN || h.op == OP_CREATE || h.op == OP_MKDIR)) {
		struct proto_attr a;

		if (h.len < sizeof(a))
			return -EPROTO;
		memcpy(&a, buf + sizeof(h), sizeof(a));
		c->ino = a.ino;
	}
	return (ssize_t)(sizeof(h) + h.len);
}

/* ---- marud jobs: the mix, lookups only, filling a directory ---- */

static size_t mix_build(struct job *j, struct conn *c, uint8_t *buf, size_t cap)
{
	char name[64];
	int n;

	if (c->step % 6 == 4)
		n = snprintf(name, sizeof(name), "w%u-%u", c->id, (unsigned int)(c->step / 6 % 4));
	else
		n = name_of(name, sizeof(name), pick(c, j->names));
	switch (c->step % 6) {
	case 0: return maru_exists(c, buf, cap, j->dir, name, n);
	case 1: return maru_named(c, buf, cap, OP_LOOKUP, j->dir, name, n);
	case 2: return maru_open(c, buf, cap, j->dir, name, n);
	case 3: return maru_by_ino(c, buf, cap, OP_RELEASE, c->ino);
	case 4: return maru_create(c, buf, cap, j->dir, name, n);
	default: return maru_by_ino(c, buf, cap, OP_PUBLISH, c->ino);
	}
}

static ssize_t step_reply(struct job *j, struct conn *c, const uint8_t *buf, size_t len)
{
	ssize_t n = maru_take(c, buf, len, 0);

	if (n > 0)
		c->step++;
	return n;
}

static size_t lookup_build(struct job *j, struct conn *c, uint8_t *buf, size_t cap)
{
	char name[64];
	int n = name_of(name, sizeof(name), pick(c, j->names));

	return maru_named(c, buf, cap, OP_LOOKUP, j->dir, name, n);
}

/*
 * A fill's steps on one connection: create a name, publish it and, with
 * steps == 3, release it as a client's close does.
 */
static size_t fill_next(struct job *j, struct conn *c, uint8_t *buf, size_t cap, int steps)
{
	char name[64];
	long i;
	int n;

	if (c->step % steps == 1)
		return maru_by_ino(c, buf, cap, OP_PUBLISH, c->ino);
	if (c->step % steps == 2)
		return maru_by_ino(c, buf, cap, OP_RELEASE, c->ino);
	i = atomic_fetch_add(&j->next, 1);
	if (i >= j->fill_end)
		return 0;
	n = name_of(name, sizeof(name), i);
	return maru_create(c, buf, cap, j->dir, name, n);
}

/* A name is done when its last step's reply came. */
static ssize_t fill_took(struct job *j, struct conn *c, const uint8_t *buf, size_t len,
			 int steps)
{
	ssize_t n = step_reply(j, c, buf, len);

	if (n > 0 && c->step % steps == 0)
		atomic_fetch_add(&j->done, 1);
	return n;
}

static size_t fill_build(struct job *j, struct conn *c, uint8_t *buf, size_t cap)
{
	return fill_next(j, c, buf, cap, 2);
}

static ssize_t fill_reply(struct job *j, struct conn *c, const uint8_t *buf, size_t len)
{
	return fill_took(j, c, buf, len, 2);
}

static const struct job_ops maru_mix_ops = { mix_build, step_reply };
/* Lookups leave step alone: they may run between the steps of another job. */
static ssize_t any_reply(struct job *j, struct conn *c, const uint8_t *buf, size_t len)
{
	return maru_take(c, buf, len, 0);
}

static const struct job_ops maru_lookup_ops = { lookup_build, any_reply };
static const struct job_ops maru_fill_ops = { fill_build, fill_reply };

/*
 * The scale rows' fill closes what it wrote, as a client's close does:
 * create, publish, release. (Keeping the publish's lease would make one
 * session hold a lease per name, 48 bytes of marud memory each that are
 * the session's, not the name's.)
 */
static size_t sfill_build(struct job *j, struct conn *c, uint8_t *buf, size_t cap)
{
	return fill_next(j, c, buf, cap, 3);
}

static ssize_t sfill_reply(struct job *j, struct conn *c, const uint8_t *buf, size_t len)
{
	return fill_took(j, c, buf, len, 3);
}

static const struct job_ops maru_sfill_ops = { sfill_build, sfill_reply };

/* ---- Redis jobs: GET x4 + SET x2, filling keys ---- */

static size_t redis_set_get(struct job *j, uint8_t *buf, size_t cap, const char *key, int set)
{
	static const char val[VAL_LEN] = { [0 ... VAL_LEN - 1] = 'v' };
	const char *argv[3] = { set ? "SET" : "GET", key, val };
	size_t lens[3] = { 3, strlen(key), sizeof(val) };

	return resp_cmd((char *)buf, cap, set ? 3 : 2, argv, lens);
}

static void key_of(struct job *j, char *key, size_t cap, long i)
{
	char name[64];

	name_of(name, sizeof(name), i);
	snprintf(key, cap, "%s%s", j->prefix, name);
}

static size_t rmix_build(struct job *j, struct conn *c, uint8_t *buf, size_t cap)
{
	char key[96];
	int set = c->step % 6 >= 4;

	if (set)
		snprintf(key, sizeof(key), "%sw%u-%u", j->prefix, c->id, (unsigned int)(c->step / 6 % 4));
	else
		key_of(j, key, sizeof(key), pick(c, j->names));
	return redis_set_get(j, buf, cap, key, set);
}

static size_t rfill_build(struct job *j, struct conn *c, uint8_t *buf, size_t cap)
{
	char key[96];
	long i = atomic_fetch_add(&j->next, 1);

	if (i >= j->fill_end)
		return 0;
	key_of(j, key, sizeof(key), i);
	c->step = 4;	/* a SET */
	return redis_set_get(j, buf, cap, key, 1);
}

static ssize_t redis_reply(struct job *j, struct conn *c, const uint8_t *buf, size_t len)
{
	struct resp_reply r;
	ssize_t n = resp_parse((const char *)buf, len, &r);
	int set = c->step % 6 >= 4;

	if (n <= 0)
		return n;
	if (set ? r.type != '+' : (r.type != '$' || r.num != VAL_LEN)) {
		fprintf(stderr, "ctl_bench: redis %s: unexpected reply '%c' %.*s\n", set ? "SET" : "GET",
			r.type, (int)(r.len < 80 ? r.len : 80), r.data);
		return -EREMOTEIO;
	}
	c->step++;
	return n;
}

static const struct job_ops redis_mix_ops = { rmix_build, redis_reply };
static const struct job_ops redis_fill_ops = { rfill_build, redis_reply };

/* ---- the epoll driver: one request in flight per connection ---- */

static int issue(struct worker *w, struct conn *c)
{
	uint8_t buf[1024];
	size_t n = w->job->ops->build(w->job, c, buf, sizeof(buf));

	if (!n)
		return 0;
	c->sent_ns = now_ns();
	if (net_write_full(c->fd, buf, n))
		die("send", -errno);
	return 1;
}

static void record(struct worker *w, struct conn *c, uint64_t t)
{
	uint64_t d = t - c->sent_ns;

	if (d > w->max_ns)
		w->max_ns = d;
	if (t < w->job->t_start || (w->job->t_end && t >= w->job->t_end))
		return;
	w->ops++;
	if (w->nlat < w->caplat)
		w->lat[w->nlat++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* Read what c has; 1 when its reply is complete (and taken). */
static int conn_input(struct worker *w, struct conn *c)
{
	ssize_t n, took;

	if (c->inlen == c->incap) {
		c->incap *= 2;
		c->in = realloc(c->in, c->incap);
		if (!c->in)
			die("realloc", -ENOMEM);
	}
	n = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		die("recv", n < 0 ? -errno : -ECONNRESET);
	c->inlen += (size_t)n;
	took = w->job->ops->reply(w->job, c, c->in, c->inlen);
	if (took < 0)
		die("reply", (int)took);
	if (!took)
		return 0;
	if ((size_t)took != c->inlen)
		die("reply: bytes after the only reply in flight", -EPROTO);
	c->inlen = 0;
	return 1;
}

static int still_on(const struct job *j, uint64_t t)
{
	return !j->t_end || t < j->t_end;
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct epoll_event evs[256];
	int ep = epoll_create1(EPOLL_CLOEXEC), active = 0;

	if (ep < 0)
		die("epoll_create1", -errno);
	for (int i = 0; i < w->nconns; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w->conns[i] };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, w->conns[i]->fd, &ev) < 0)
			die("epoll_ctl", -errno);
		active += issue(w, w->conns[i]);
	}
	while (active > 0) {
		int n = epoll_wait(ep, evs, 256, 10000);

		if (n == 0)
			die("no reply for 10 s", -ETIMEDOUT);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			uint64_t t;

			if (!conn_input(w, c))
				continue;
			t = now_ns();
			record(w, c, t);
			if (!still_on(w->job, t) || !issue(w, c))
				active--;
		}
	}
	close(ep);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Run job on conns split over nworkers threads; the window is the job's, or
 * all of it when t_end is 0. Returns rate and latency percentiles.
 */
static struct result run_job(struct job *j, struct conn **conns, int nconns, int nworkers)
{
	struct worker ws[16] = { 0 };
	struct result r = { 0 };
	uint64_t t0 = now_ns(), t1;
	size_t total = 0, k = 0;
	uint32_t *all;
	long ops = 0;

	if (nworkers > 16)
		nworkers = 16;
	if (nworkers > nconns)
		nworkers = nconns;
	for (int i = 0; i < nworkers; i++) {
		ws[i].job = j;
		ws[i].conns = conns + (long)nconns * i / nworkers;
		ws[i].nconns = (int)((long)nconns * (i + 1) / nworkers - (long)nconns * i / nworkers);
		ws[i].caplat = 8u << 20;
		ws[i].lat = malloc(ws[i].caplat * sizeof(uint32_t));
		if (!ws[i].lat)
			die("malloc", -ENOMEM);
		pthread_create(&ws[i].th, NULL, worker_main, &ws[i]);
	}
	for (int i = 0; i < nworkers; i++) {
		pthread_join(ws[i].th, NULL);
		ops += ws[i].ops;
		total += ws[i].nlat;
		if (ws[i].max_ns / 1e3 > r.max_us)
			r.max_us = ws[i].max_ns / 1e3;
	}
	t1 = j->t_end ? j->t_end : now_ns();
	all = malloc((total + 1) * sizeof(uint32_t));
	if (!all)
		die("malloc", -ENOMEM);
	for (int i = 0; i < nworkers; i++) {
		memcpy(all + k, ws[i].lat, ws[i].nlat * sizeof(uint32_t));
		k += ws[i].nlat;
		free(ws[i].lat);
	}
	qsort(all, total, sizeof(uint32_t), cmp_u32);
	r.ops = ops;
	r.ops_per_s = ops / ((t1 - (j->t_end ? j->t_start : t0)) / 1e9);
	r.p50_us = total ? all[total / 2] / 1e3 : 0;
	r.p99_us = total ? all[total * 99 / 100] / 1e3 : 0;
	free(all);
	return r;
}

/* ---- connections ---- */

static struct conn *conn_new(const char *addr, uint32_t id)
{
	struct conn *c = calloc(1, sizeof(*c));
	int fd = net_connect(addr);

	if (fd < 0)
		die(addr, fd);
	if (!c)
		die("calloc", -ENOMEM);
	c->fd = fd;
	c->id = id;
	c->seed = 0x5eed + id;
	c->incap = 4096;
	c->in = malloc(c->incap);
	if (!c->in)
		die("malloc", -ENOMEM);
	return c;
}

/* One blocking request on c (setup only): status; the reply payload in rep. */
static int maru_call(struct conn *c, const uint8_t *frame, size_t flen, void *rep, size_t cap)
{
	struct proto_hdr h;
	int rc = net_write_full(c->fd, frame, flen);

	if (!rc)
		rc = net_read_full(c->fd, &h, sizeof(h));
	if (rc)
		die("marud", rc);
	if (h.magic != PROTO_MAGIC || h.len > cap)
		die("marud reply", -EPROTO);
	if (h.len && net_read_full(c->fd, rep, h.len))
		die("marud reply", -EPROTO);
	return h.status;
}

static struct conn *maru_conn(const char *addr, uint32_t id)
{
	static uint8_t rep[sizeof(struct proto_hello_rep)];
	struct proto_hello_req q = { .proto_version = PROTO_VERSION };
	struct conn *c = conn_new(addr, id);
	uint8_t frame[256];
	size_t n;
	int rc;

	snprintf(q.client_name, sizeof(q.client_name), "ctl_bench");
	n = maru_frame(c, frame, sizeof(frame), OP_HELLO, &q, sizeof(q), NULL, 0);
	rc = maru_call(c, frame, n, rep, sizeof(rep));
	if (rc)
		die("HELLO", rc);
	memcpy(&c->gen, rep + offsetof(struct proto_hello_rep, generation), sizeof(c->gen));
	return c;
}

/* mkdir (or find) a directory under the root: its id. */
static uint64_t maru_dir(struct conn *c, const char *name)
{
	uint8_t frame[512];
	struct proto_attr a;
	uint8_t rep[4096];
	size_t n = maru_named(c, frame, sizeof(frame), OP_MKDIR, ROOT_ID, name, (int)strlen(name));
	int rc = maru_call(c, frame, n, rep, sizeof(rep));

	if (rc == -EEXIST) {
		n = maru_named(c, frame, sizeof(frame), OP_LOOKUP, ROOT_ID, name, (int)strlen(name));
		rc = maru_call(c, frame, n, rep, sizeof(rep));
	}
	if (rc)
		die("mkdir", rc);
	memcpy(&a, rep, sizeof(a));
	return a.ino;
}

static struct conn **conns_open(const char *addr, int n, int maru, uint32_t first_id)
{
	struct conn **cs = calloc((size_t)n, sizeof(*cs));

	if (!cs)
		die("calloc", -ENOMEM);
	for (int i = 0; i < n; i++)
		cs[i] = maru ? maru_conn(addr, first_id + (uint32_t)i) : conn_new(addr, first_id + (uint32_t)i);
	return cs;
}

static void conns_close(struct conn **cs, int n)
{
	for (int i = 0; i < n; i++) {
		close(cs[i]->fd);
		free(cs[i]->in);
		free(cs[i]);
	}
	free(cs);
}

/* Create names [from, to) in j's directory (or Redis keys): seconds taken. */
static double fill(struct job *j, const struct job_ops *ops, struct conn **cs, int n, long from, long to)
{
	uint64_t t = now_ns();

	j->ops = ops;
	atomic_store(&j->next, from);
	j->fill_end = to;
	j->t_start = 0;
	j->t_end = 0;
	for (int i = 0; i < n; i++)
		cs[i]->step = 0;
	run_job(j, cs, n, 2);
	return (now_ns() - t) / 1e9;
}

/* CPU time (us) of process pid so far, from /proc/pid/stat; 0 when pid is 0. */
static double proc_cpu_us(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	size_t n;
	FILE *f;

	if (!pid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		die(path, -errno);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the command name may hold spaces */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		die(path, -EPROTO);
	return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 +
	       ru.ru_stime.tv_usec;
}

/* Samples the CPU of the server and of this client at a job's window edges. */
struct cpu_watch {
	pthread_t th;
	const struct job *j;
	long pid;
	double srv_us, cli_us;
};

static void sleep_until(uint64_t t)
{
	uint64_t n = now_ns();
	struct timespec ts;

	if (n >= t)
		return;
	ts.tv_sec = (time_t)((t - n) / 1000000000ULL);
	ts.tv_nsec = (long)((t - n) % 1000000000ULL);
	nanosleep(&ts, NULL);
}

static void *watch_main(void *p)
{
	struct cpu_watch *w = p;
	double s0, c0;

	sleep_until(w->j->t_start);
	s0 = proc_cpu_us(w->pid);
	c0 = self_cpu_us();
	sleep_until(w->j->t_end);
	w->srv_us = proc_cpu_us(w->pid) - s0;
	w->cli_us = self_cpu_us() - c0;
	return NULL;
}

static struct result timed_pid(struct job *j, const struct job_ops *ops, struct conn **cs, int n,
			       double secs, int workers, long pid)
{
	uint64_t warm = (uint64_t)(secs * 1e8);	/* the first 10% is warm-up */
	struct cpu_watch w = { .j = j, .pid = pid };
	struct result r;

	j->ops = ops;
	j->t_start = now_ns() + warm;
	j->t_end = j->t_start + (uint64_t)(secs * 1e9);
	pthread_create(&w.th, NULL, watch_main, &w);
	r = run_job(j, cs, n, workers);
	pthread_join(w.th, NULL);
	r.srv_cpu_us = w.srv_us;
	r.cli_cpu_us = w.cli_us;
	return r;
}

static struct result timed(struct job *j, const struct job_ops *ops, struct conn **cs, int n,
			   double secs, int workers)
{
	return timed_pid(j, ops, cs, n, secs, workers, 0);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_dbl);
	return v[n / 2];
}

/* ---- mix: marud's control plane vs Redis GET/SET, same connections ---- */

static double per_op(double us, long ops)
{
	return ops > 0 ? us / (double)ops : 0;
}

static void print_side(const char *side, struct result *r, int rounds)
{
	double ops[MAX_ROUNDS], p50[MAX_ROUNDS], p99[MAX_ROUNDS], scpu[MAX_ROUNDS], ccpu[MAX_ROUNDS];

	for (int i = 0; i < rounds; i++) {
		ops[i] = r[i].ops_per_s;
		p50[i] = r[i].p50_us;
		p99[i] = r[i].p99_us;
		scpu[i] = per_op(r[i].srv_cpu_us, r[i].ops);
		ccpu[i] = per_op(r[i].cli_cpu_us, r[i].ops);
	}
	printf("%s_ops_per_s %.0f\n%s_p50_us %.1f\n%s_p99_us %.1f\n", side, median(ops, rounds),
	       side, median(p50, rounds), side, median(p99, rounds));
	printf("%s_client_cpu_us_per_op %.2f\n", side, median(ccpu, rounds));
	if (scpu[0] > 0)
		printf("%s_server_cpu_us_per_op %.2f\n", side, median(scpu, rounds));
}

static void print_round(int i, const struct result *m, const struct result *r)
{
	printf("round %d marud %.0f/s p50 %.1f us p99 %.1f us | redis %.0f/s p50 %.1f us p99 %.1f us\n",
	       i + 1, m->ops_per_s, m->p50_us, m->p99_us, r->ops_per_s, r->p50_us, r->p99_us);
	printf("round %d cpu us/op: marud %.2f client %.2f | redis %.2f client %.2f\n", i + 1,
	       per_op(m->srv_cpu_us, m->ops), per_op(m->cli_cpu_us, m->ops),
	       per_op(r->srv_cpu_us, r->ops), per_op(r->cli_cpu_us, r->ops));
}

static int bench_mix(const char *maddr, const char *raddr, int nconns, double secs, long names,
		     int rounds, int workers, const long *pids)
{
	struct job mj = { .names = names }, rj = { .names = names, .prefix = "ctl:" };
	struct conn **mc = conns_open(maddr, nconns, 1, 0);
	struct conn **rc = conns_open(raddr, nconns, 0, 0);
	struct result mr[MAX_ROUNDS], rr[MAX_ROUNDS];
	double ratio[MAX_ROUNDS], cratio[MAX_ROUNDS];
	int nfill = nconns < FILL_CONNS ? nconns : FILL_CONNS;

	mj.dir = maru_dir(mc[0], "ctl");
	printf("conns %d\nworkers %d\nnames %ld\nrounds %d\n", nconns, workers, names, rounds);
	printf("fill_seconds_marud %.2f\n", fill(&mj, &maru_fill_ops, mc, nfill, 0, names));
	printf("fill_seconds_redis %.2f\n", fill(&rj, &redis_fill_ops, rc, nfill, 0, names));
	for (int i = 0; i < rounds; i++) {
		mr[i] = timed_pid(&mj, &maru_mix_ops, mc, nconns, secs, workers, pids[0]);
		rr[i] = timed_pid(&rj, &redis_mix_ops, rc, nconns, secs, workers, pids[1]);
		ratio[i] = mr[i].ops_per_s / rr[i].ops_per_s;
		/* > 1: marud spends less CPU per op than Redis */
		cratio[i] = pids[0] && mr[i].srv_cpu_us > 0 ?
			    per_op(rr[i].srv_cpu_us, rr[i].ops) / per_op(mr[i].srv_cpu_us, mr[i].ops) : 0;
		print_round(i, &mr[i], &rr[i]);
	}
	print_side("marud", mr, rounds);
	print_side("redis", rr, rounds);
	printf("ratio marud/redis %.3f\n", median(ratio, rounds));
	if (pids[0])
		printf("cpu_ratio redis/marud %.3f\n", median(cratio, rounds));
	conns_close(mc, nconns);
	conns_close(rc, nconns);
	return 0;
}

/* ---- names: lookups at 10k vs N, RSS per name, stalls while the table grows ---- */

#define STALL_HIST	65536	/* 1-us buckets; the last holds everything slower */

struct staller {
	pthread_t th;
	struct conn *c;
	struct job *j;		/* the fill under way */
	atomic_int stop;
	long lookups, over;	/* over: lookups slower than STALL_NS */
	uint64_t max_ns;
	long max_at;		/* names handed out when the longest one ended */
	uint32_t *hist;		/* lookups by latency in us */
};

/* The latency (us) under which a share q of the staller's lookups fell. */
static long staller_pct(const struct staller *s, double q)
{
	long want = (long)(s->lookups * q), seen = 0, us;

	for (us = 0; us < STALL_HIST - 1; us++) {
		seen += s->hist[us];
		if (seen > want)
			break;
	}
	return us;
}

/* Time single lookups, one at a time, of names the fill has handed out. */
static void *staller_main(void *p)
{
	struct staller *s = p;
	uint8_t frame[512], rep[4096];

	while (!atomic_load(&s->stop)) {
		long have = atomic_load(&s->j->next);
		char name[64];
		int n = name_of(name, sizeof(name), pick(s->c, have > 0 ? have : 1));
		size_t len = maru_named(s->c, frame, sizeof(frame), OP_LOOKUP, s->j->dir, name, n);
		uint64_t t = now_ns(), d;
		int rc = maru_call(s->c, frame, len, rep, sizeof(rep));

		if (rc && rc != -ENOENT)
			die("lookup during fill", rc);
		d = now_ns() - t;
		s->lookups++;
		s->over += d > STALL_NS;
		s->hist[d / 1000 < STALL_HIST ? d / 1000 : STALL_HIST - 1]++;
		if (d > s->max_ns) {
			s->max_ns = d;
			s->max_at = atomic_load(&s->j->next);
		}
	}
	return NULL;
}

/*
 * Bulk work beside the lookups: each connection creates its own name in
 * the small directory, grows it to BULK_BYTES (marud zero-fills them),
 * publishes it (marud hashes them) and releases it, over and over.
 */
#define BULK_CONNS	4
#define BULK_BYTES	(64ULL << 20)

static size_t bulk_build(struct job *j, struct conn *c, uint8_t *buf, size_t cap)
{
	struct proto_size_req t = { .ino = c->ino, .size = BULK_BYTES };
	struct proto_publish_req p = { .ino = c->ino, .size = BULK_BYTES };
	char name[32];
	int n;

	switch (c->step % 4) {
	case 0:
		n = snprintf(name, sizeof(name), "bulk-%u", c->id);
		return maru_create(c, buf, cap, j->dir, name, n);
	case 1: return maru_frame(c, buf, cap, OP_TRUNCATE, &t, sizeof(t), NULL, 0);
	case 2: return maru_frame(c, buf, cap, OP_PUBLISH, &p, sizeof(p), NULL, 0);
	default: return maru_by_ino(c, buf, cap, OP_RELEASE, c->ino);
	}
}

static const struct job_ops maru_bulk_ops = { bulk_build, step_reply };

/* A "Key: N kB" line of /proc/PID/status (VmRSS, RssShmem), in bytes. */
static long rss_bytes(long pid, const char *key)
{
	char path[64], line[256], fmt[64];
	long kb = -1;
	FILE *f;

	snprintf(fmt, sizeof(fmt), "%s: %%ld kB", key);
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		die(path, -errno);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &kb) == 1)
			break;
	fclose(f);
	if (kb < 0)
		die(key, -EPROTO);
	return kb * 1024;
}

static void staller_start(struct staller *s, const char *addr, struct job *j)
{
	memset(s, 0, sizeof(*s));
	s->c = maru_conn(addr, 9999);
	s->j = j;
	s->hist = calloc(STALL_HIST, sizeof(*s->hist));
	if (!s->hist)
		die("staller", -ENOMEM);
	pthread_create(&s->th, NULL, staller_main, s);
}

static void staller_stop(struct staller *s, const char *what)
{
	atomic_store(&s->stop, 1);
	pthread_join(s->th, NULL);
	printf("%s_lookups %ld\n%s_over_5ms %ld\n%s_max_us %.0f\n", what, s->lookups, what, s->over,
	       what, s->max_ns / 1e3);
	printf("%s_p50_us %ld\n%s_p99_us %ld\n%s_p999_us %ld\n", what, staller_pct(s, 0.5), what,
	       staller_pct(s, 0.99), what, staller_pct(s, 0.999));
	printf("%s_max_at_names %ld\n", what, s->max_at);
	printf("%s_over_5ms_per_100k %.1f\n", what, s->lookups ? 1e5 * (double)s->over / (double)s->lookups : 0);
	free(s->hist);
	close(s->c->fd);
	free(s->c->in);
	free(s->c);
}

/*
 * Fill big with n names while a staller times single lookups into it; then
 * the control: the same staller while as many connections only look up, so
 * a long stall can be told apart from a loaded machine. The control runs as
 * long as the fill did (up to CONTROL_MAX_S): the longest of a few seconds
 * of lookups says nothing about the longest of minutes of them on a shared
 * machine. Both also print their stalls per 100k lookups, which does not
 * depend on how long they ran.
 */
#define CONTROL_MAX_S	120.0

static void fill_watched(const char *addr, struct job *big, struct conn **cs, long n, double secs)
{
	struct staller s;
	double t, ct;

	atomic_store(&big->next, 0);
	staller_start(&s, addr, big);
	t = fill(big, &maru_sfill_ops, cs, FILL_CONNS, 0, n);
	staller_stop(&s, "stall");
	printf("fill_seconds %.2f\nfill_names_per_s %.0f\n", t, n / t);
	ct = t < secs ? secs : t > CONTROL_MAX_S ? CONTROL_MAX_S : t;
	printf("control_seconds %.0f\n", ct);
	staller_start(&s, addr, big);
	timed(big, &maru_lookup_ops, cs, FILL_CONNS, ct, 2);
	staller_stop(&s, "control_stall");
}

/*
 * The staller in big beside BULK_CONNS connections doing 64 MiB zero-fills
 * and publishes in bulk's directory: do lookups queue behind them? (After
 * the RSS reading: marud's zero-fill touches pool pages.)
 */
static void bulk_watched(const char *addr, struct job *big, struct job *bulk, struct conn **cs,
			 double secs)
{
	struct staller s;
	struct result r;
	int i;

	for (i = 0; i < BULK_CONNS; i++)
		cs[i]->step = 0;
	staller_start(&s, addr, big);
	/* at least 3 s: a 64 MiB zero-fill and publish on a loaded 2-vCPU
	 * machine took more than the quick run's 1 s, which then counted no
	 * operation at all */
	r = timed(bulk, &maru_bulk_ops, cs, BULK_CONNS, secs < 3 ? 3 : secs, 2);
	staller_stop(&s, "bulk_stall");
	printf("bulk_conns %d\nbulk_ops_per_s %.1f\n", BULK_CONNS, r.ops_per_s);
}

static int bench_names(const char *addr, long n, long pid, double secs)
{
	struct job small = { .names = SMALL_NAMES }, big = { .names = n };
	struct conn **cs = conns_open(addr, LOOKUP_CONNS, 1, 0);
	double lk_small[3], lk_big[3], ratio[3];
	long rss0, rss1, shm0, shm1;

	small.dir = maru_dir(cs[0], "scale-10k");
	big.dir = maru_dir(cs[0], "scale-n");
	fill(&small, &maru_sfill_ops, cs, FILL_CONNS, 0, SMALL_NAMES);
	rss0 = rss_bytes(pid, "VmRSS");
	shm0 = rss_bytes(pid, "RssShmem");
	fill_watched(addr, &big, cs, n, secs);
	rss1 = rss_bytes(pid, "VmRSS");
	shm1 = rss_bytes(pid, "RssShmem");
	bulk_watched(addr, &big, &small, cs, secs);
	for (int i = 0; i < 3; i++) {
		lk_small[i] = timed(&small, &maru_lookup_ops, cs, LOOKUP_CONNS, secs, 2).ops_per_s;
		lk_big[i] = timed(&big, &maru_lookup_ops, cs, LOOKUP_CONNS, secs, 2).ops_per_s;
		ratio[i] = lk_big[i] / lk_small[i];
	}
	printf("names %ld\nmarud_rss_before %ld\nmarud_rss_after %ld\n", n, rss0, rss1);
	printf("rss_per_name_bytes %.0f\n", (double)(rss1 - rss0) / n);
	/* of which pool pages marud touched (the warm-restart journal) */
	printf("shmem_per_name_bytes %.0f\n", (double)(shm1 - shm0) / n);
	printf("lookups_10k_per_s %.0f\nlookups_n_per_s %.0f\n", median(lk_small, 3), median(lk_big, 3));
	printf("ratio n/10k %.3f\n", median(ratio, 3));
	conns_close(cs, LOOKUP_CONNS);
	return 0;
}

int main(int argc, char **argv)
{
	net_raise_nofile();
	if ((argc == 8 || argc == 9 || argc == 11) && !strcmp(argv[1], "mix")) {
		long rounds = num_arg(argv[7]), pids[2] = { 0, 0 };

		if (rounds > MAX_ROUNDS)
			rounds = MAX_ROUNDS;
		if (argc == 11) {
			pids[0] = num_arg(argv[9]);
			pids[1] = num_arg(argv[10]);
		}
		return bench_mix(argv[2], argv[3], (int)num_arg(argv[4]), (double)num_arg(argv[5]),
				 num_arg(argv[6]), (int)rounds, argc >= 9 ? (int)num_arg(argv[8]) : 2,
				 pids);
	}
	if (argc == 6 && !strcmp(argv[1], "names"))
		return bench_names(argv[2], num_arg(argv[3]), num_arg(argv[4]), (double)num_arg(argv[5]));
	fprintf(stderr, "usage: ctl_bench mix MARU REDIS CONNS SECONDS NAMES ROUNDS "
			"[WORKERS [MARUD_PID REDIS_PID]]\n"
			"       ctl_bench names MARU N MARUD_PID SECONDS\n");
	return 2;
}

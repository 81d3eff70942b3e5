// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/ext/hint_test.c: marud's hints and region extension
 * (daemon/handlers/hint.c, daemon/ext/) on a real server through the
 * fuzzing seam, with the probe extension of tests/ext/ recording each hook:
 * HELLO advertises its actions; a hint on a version the connection cannot
 * read is refused before the extension sees it, a write hint never lets a
 * write through; checked hints reach it as pool ranges in order; the open
 * request limit, per client session (a read and its read_end may come on
 * two connections of one session); a failing hint is logged and ignored; a failing mapped()
 * keeps the pool out of use until it succeeds; retire comes before freed
 * bytes are reused; connection_closed and close come last. Also the
 * per-connection open set (ext/open.c) on its own.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dir_priv.h"
#include "ext_priv.h"
#include "server_harness.h"
#include "server_priv.h"

#define ROOT DIR_ROOT_ID

struct fx {
	struct th t;
	struct tconn a, b;
	struct treply r;
	uint8_t buf[1 << 17];
	char log[128];
};

static uint64_t next_reqid = 1;

static uint64_t reqid(void)
{
	return next_reqid++;
}

static int fx_start(struct fx *f, const char *extra)
{
	th_config(&f->t);
	snprintf(f->log, sizeof(f->log), "/tmp/maru-probe-%ld.log", (long)getpid());
	unlink(f->log);
	snprintf(f->t.cfg.region_ext, sizeof(f->t.cfg.region_ext), "%s", PROBE_EXT);
	snprintf(f->t.cfg.region_ext_config, sizeof(f->t.cfg.region_ext_config), "log=%s%s%s",
		 f->log, extra[0] ? "," : "", extra);
	f->t.cfg.memgen_poll_ms = 10;
	f->t.cfg.memgen_grace_ms = 1000;
	return th_new(&f->t, NULL);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fx_start(f, ""), 0);
	tc_open(&f->t, &f->a);
	tc_open(&f->t, &f->b);
	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	assert_int_equal(tc_hello(&f->b, NULL, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	tc_close(&f->a);
	tc_close(&f->b);
	assert_int_equal(th_free(&f->t), 0);
	unlink(f->log);
	free(f);
	return 0;
}

/* The probe's log so far, NUL-terminated. */
static char *probe_log(struct fx *f)
{
	static char text[1 << 16];
	FILE *fp = fopen(f->log, "r");
	size_t n = 0;

	if (fp) {
		n = fread(text, 1, sizeof(text) - 1, fp);
		fclose(fp);
	}
	text[n] = '\0';
	return text;
}

/* The open hint requests of tc's session. */
static unsigned int open_count(struct fx *f, struct tconn *tc)
{
	uint64_t sid = ext_open_session_id(session_token(tc->c->sess), SESSION_TOKEN_BYTES);

	return ext_open_session_count(ext_hint_sessions(f->t.srv->ext), sid);
}

static struct proto_attr do_create(struct fx *f, struct tconn *tc, const char *name)
{
	struct proto_create_req q = { .parent = ROOT, .size_hint = 8192, .mode = 0644 };
	struct proto_attr a;

	q.namelen = (uint16_t)strlen(name);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), name, q.namelen);
	assert_int_equal(tc_call(tc, OP_CREATE, reqid(), f->buf, sizeof(q) + q.namelen,
				 &f->r, NULL), 0);
	memcpy(&a, f->r.p, sizeof(a));
	return a;
}

static int do_write(struct fx *f, struct tconn *tc, uint64_t ino, uint32_t len)
{
	struct proto_io_req q = { .ino = ino, .off = 0, .len = len };

	memcpy(f->buf, &q, sizeof(q));
	memset(f->buf + sizeof(q), 'x', len);
	return tc_call(tc, OP_WRITE, reqid(), f->buf, sizeof(q) + len, &f->r, NULL);
}

/* A published version of 8 KiB named name, made by a; its ino. */
static uint64_t published(struct fx *f, const char *name)
{
	struct proto_attr a = do_create(f, &f->a, name);
	struct proto_publish_req p = { .ino = a.ino, .size = 8192 };

	assert_int_equal(do_write(f, &f->a, a.ino, 8192), 0);
	assert_int_equal(tc_call(&f->a, OP_PUBLISH, reqid(), &p, sizeof(p), &f->r, NULL), 0);
	return a.ino;
}

static int hintv(struct fx *f, struct tconn *tc, uint16_t op, uint32_t action,
		 const char *req, const struct proto_hint_range *g, uint32_t n)
{
	struct proto_hintv_req q = { .action = action, .count = n,
				     .reqlen = (uint16_t)strlen(req) };
	size_t at = sizeof(q);

	if (op == OP_HINT_WAIT)
		q.timeout_ms = 20;
	memset(f->buf, 0, sizeof(q) + 72);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + at, req, q.reqlen);
	at += (q.reqlen + 7u) & ~7u;
	if (n)	/* memcpy's source must not be NULL, even for 0 bytes */
		memcpy(f->buf + at, g, n * sizeof(*g));
	return tc_call(tc, op, reqid(), f->buf, at + n * sizeof(*g), &f->r, NULL);
}

static void test_hello_advertises(void **state)
{
	struct fx *f = *state;
	struct proto_hello_rep rep;
	struct tconn c;

	tc_open(&f->t, &c);
	tc_send(c.fd, OP_HELLO, 1, TH_GENERATION,
		&(struct proto_hello_req){ .proto_version = PROTO_VERSION }, 64);
	assert_int_equal(tc_step(&c), 0);
	assert_int_equal(tc_reply(c.fd, &f->r, 0), 0);
	memcpy(&rep, f->r.p, sizeof(rep));
	assert_int_equal(rep.hint_actions, 0x7e);
	assert_int_equal(rep.ext_abi, MARUD_EXTENSION_ABI);
	tc_close(&c);
	assert_non_null(strstr(probe_log(f), "open\nvalidate 1\nmapped 1 0\n"));
}

static void test_refused_before_the_extension(void **state)
{
	struct fx *f = *state;
	struct proto_attr mine = do_create(f, &f->a, "pending");
	uint64_t pub = published(f, "pub");
	struct proto_hint_range g = { mine.ino, 0, 0 }, w = { pub, 0, 0 };

	/* b may not read a's pending version: refused, the probe saw nothing */
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "r1", &g, 1), -EPERM);
	/* nobody may write-hint a published version, nor b a's pending one */
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_WRITE, "", &w, 1), -EPERM);
	assert_int_equal(hintv(f, &f->a, OP_HINTV, HINT_A_WRITE, "", &w, 1), -EPERM);
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_WRITE, "", &g, 1), -EPERM);
	assert_int_equal(hintv(f, &f->b, OP_HINT_WAIT, HINT_A_WRITE_WAIT, "", &g, 1), -EPERM);
	/* a range past the end; an unknown version */
	w.off = 4096;
	w.len = 8192;
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "r1", &w, 1), -ERANGE);
	w.ino = 999999;
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "r1", &w, 1), -ENOENT);
	assert_null(strstr(probe_log(f), "hint "));
	assert_int_equal(atomic_load(&f->t.srv->hints_refused), 7);
	/* and the hint let no write through: b still cannot write a's version */
	assert_int_equal(do_write(f, &f->b, mine.ino, 4096), -EPERM);
	/* a may write-hint its own pending version */
	assert_int_equal(hintv(f, &f->a, OP_HINTV, HINT_A_WRITE, "t1", &g, 1), 0);
	assert_non_null(strstr(probe_log(f), " 4 t1 1 "));
}

/* The pool extents of a version, as "OFF+LEN" of its first extent. */
static void first_extent(struct fx *f, uint64_t ino, char *out, size_t len)
{
	struct extent_list l = { 0 };
	struct dir_attr a;

	assert_int_equal(dir_hint_extents(f->t.srv->dir, NULL, ino, 0, &l, &a), 0);
	snprintf(out, len, " %llu+%llu", (unsigned long long)l.v[0].off + 4096,
		 (unsigned long long)4096);
	alloc_extent_list_free(&l);
}

static void test_checked_hints_in_order(void **state)
{
	struct fx *f = *state;
	uint64_t x = published(f, "x"), y = published(f, "y");
	struct proto_hint_range g[2] = { { y, 0, 0 }, { x, 4096, 4096 } };
	char want[64], *log, *h1, *h2, *h3;

	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "r7", g, 2), 0);
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_PROMOTE, "r7", NULL, 0), 0);
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ_END, "r7", NULL, 0), 0);
	assert_int_equal(hintv(f, &f->b, OP_HINT_WAIT, HINT_A_READ_WAIT, "", g, 2), 0);
	assert_int_equal(f->r.len, sizeof(struct proto_hint_wait_rep));
	assert_int_equal(((struct proto_hint_wait_rep *)f->r.p)->ready, 2);
	log = probe_log(f);
	h1 = strstr(log, " 1 r7 ");
	h2 = strstr(log, " 3 r7 0");
	h3 = strstr(log, " 2 r7 0");
	assert_true(h1 && h2 && h3 && h1 < h2 && h2 < h3);
	/* x's second page, as a pool range */
	first_extent(f, x, want, sizeof(want));
	assert_non_null(strstr(h1, want));
	assert_non_null(strstr(log, "wait "));
	assert_int_equal(open_count(f, &f->b), 0);
}

static void test_open_limit(void **state)
{
	struct fx *f = *state;
	struct proto_hint_range g = { published(f, "lim"), 0, 4096 };
	char req[16];
	int i;

	for (i = 0; i < PROTO_MAX_HINT_OPEN; i++) {
		snprintf(req, sizeof(req), "q%d", i);
		assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, req, &g, 1), 0);
	}
	/* the same request again opens nothing new */
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "q0", &g, 1), 0);
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "over", &g, 1), -EMFILE);
	assert_int_equal(atomic_load(&f->t.srv->hints_over_limit), 1);
	/* other sessions have their own limit; an end makes room */
	assert_int_equal(hintv(f, &f->a, OP_HINTV, HINT_A_READ, "over", &g, 1), 0);
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ_END, "q5", NULL, 0), 0);
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "over", &g, 1), 0);
	assert_int_equal(open_count(f, &f->b), PROTO_MAX_HINT_OPEN);
}

/*
 * libmaru spreads one client's requests over its connections: a read on one
 * connection and its read_end on another of the same session are one
 * request to the extension, and a connection's end is not the session's.
 */
static void test_one_session_many_connections(void **state)
{
	struct fx *f = *state;
	struct proto_hint_range g = { published(f, "multi"), 0, 4096 };
	char want[64];
	struct tconn c;

	tc_open(&f->t, &c);
	assert_int_equal(tc_hello(&c, session_token(f->b.c->sess), NULL), 0);
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "m1", &g, 1), 0);
	assert_int_equal(open_count(f, &c), 1);
	assert_int_equal(hintv(f, &c, OP_HINTV, HINT_A_READ_END, "m1", NULL, 0), 0);
	assert_int_equal(open_count(f, &f->b), 0);
	assert_int_equal(c.c->ext_id, f->b.c->ext_id);
	snprintf(want, sizeof(want), "hint %llu 2 m1 0\n", (unsigned long long)f->b.c->ext_id);
	assert_non_null(strstr(probe_log(f), want));
	tc_close(&c);
	snprintf(want, sizeof(want), "closed %llu\n", (unsigned long long)f->b.c->ext_id);
	assert_null(strstr(probe_log(f), want));
}

static void test_retire_before_reuse(void **state)
{
	struct fx *f = *state;
	uint64_t v = published(f, "gone");
	struct proto_name_req q = { .parent = ROOT, .namelen = 4 };
	char want[64];
	struct extent_list l = { 0 };
	struct dir_attr a;

	assert_int_equal(dir_hint_extents(f->t.srv->dir, NULL, v, 0, &l, &a), 0);
	snprintf(want, sizeof(want), "retire %llu+%llu", (unsigned long long)l.v[0].off,
		 (unsigned long long)l.v[0].len);
	alloc_extent_list_free(&l);
	/* publish left a with a lease: let it go, so unlink frees the bytes */
	assert_int_equal(tc_call(&f->a, OP_RELEASE, reqid(), &v, sizeof(v), &f->r, NULL), 0);
	assert_null(strstr(probe_log(f), want));
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), "gone", 4);
	assert_int_equal(tc_call(&f->a, OP_UNLINK, reqid(), f->buf, sizeof(q) + 4, &f->r,
				 NULL), 0);
	assert_non_null(strstr(probe_log(f), want));
	assert_true(atomic_load(&ext_stats(f->t.srv->ext)->retired) >= 1);
}

static void test_hook_order_to_the_end(void **state)
{
	struct fx *f = *state;
	struct proto_hint_range g = { published(f, "end"), 0, 0 };
	char closed[64], *log, *h, *c, *z;

	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "r1", &g, 1), 0);
	snprintf(closed, sizeof(closed), "closed %llu\n", (unsigned long long)f->b.c->ext_id);
	tc_close(&f->b);
	tc_close(&f->a);
	assert_int_equal(th_free(&f->t), 0);
	log = probe_log(f);
	h = strstr(log, "hint ");
	c = strstr(log, closed);
	z = strstr(log, "close\n");
	assert_true(h && c && z && h < c && c < z);
	/* close is the last line */
	assert_string_equal(z, "close\n");
	/* teardown frees again: start a fresh server for it */
	assert_int_equal(fx_start(f, ""), 0);
	tc_open(&f->t, &f->a);
	tc_open(&f->t, &f->b);
}

/* Restart the fixture's server with another probe config. */
static void restart(struct fx *f, const char *extra, int want)
{
	char path[96];

	tc_close(&f->a);
	tc_close(&f->b);
	assert_int_equal(th_free(&f->t), 0);
	assert_int_equal(fx_start(f, extra), want);
	if (want) {
		/* a refused start leaves no pool it created behind */
		snprintf(path, sizeof(path), "/dev/shm/%s", f->t.shm);
		assert_int_equal(access(path, F_OK), -1);
		assert_int_equal(fx_start(f, ""), 0);
	}
	tc_open(&f->t, &f->a);
	tc_open(&f->t, &f->b);
	assert_int_equal(tc_hello(&f->a, NULL, NULL), 0);
	assert_int_equal(tc_hello(&f->b, NULL, NULL), 0);
}

static void test_failing_hint_ignored(void **state)
{
	struct fx *f = *state;
	struct proto_hint_range g;

	restart(f, "fail_hint=1", 0);
	g = (struct proto_hint_range){ published(f, "f"), 0, 0 };
	/* advice: the client hears 0, marud counts and logs the failure */
	assert_int_equal(hintv(f, &f->b, OP_HINTV, HINT_A_READ, "r1", &g, 1), 0);
	assert_int_equal(atomic_load(&ext_stats(f->t.srv->ext)->failed), 1);
	/* and a failed read hint leaves no request open */
	assert_int_equal(open_count(f, &f->b), 0);
	assert_non_null(strstr(probe_log(f), "hint "));
}

static void test_mapped_failure_keeps_pool_out(void **state)
{
	struct fx *f = *state;
	struct proto_create_req q = { .parent = ROOT, .mode = 0644, .namelen = 1 };

	restart(f, "fail_mapped=1", 0);
	assert_false(ext_region_ok(f->t.srv->ext));
	memcpy(f->buf, &q, sizeof(q));
	f->buf[sizeof(q)] = 'n';
	assert_int_equal(tc_call(&f->a, OP_CREATE, reqid(), f->buf, sizeof(q) + 1, &f->r,
				 NULL), -EIO);
	/* namespace requests still work; no actions are advertised */
	assert_int_equal(ext_actions(f->t.srv->ext), 0);
	/* the watch asks again; this time mapped() succeeds */
	ext_remap(f->t.srv->ext);
	assert_true(ext_region_ok(f->t.srv->ext));
	assert_int_equal(tc_call(&f->a, OP_CREATE, reqid(), f->buf, sizeof(q) + 1, &f->r,
				 NULL), 0);
	assert_non_null(strstr(probe_log(f), "mapped 1 -5\nmapped 0 0\n"));
}

static void test_unknown_generation_refuses_start(void **state)
{
	struct fx *f = *state;

	/* memory_generation() cannot tell at start: marud does not start */
	restart(f, "gen=/nonexistent/maru-gen", -EAGAIN);
}

static void test_open_set(void **state)
{
	struct hint_open *s = NULL;

	(void)state;
	assert_int_equal(ext_open_add(&s, "a"), 0);
	assert_int_equal(ext_open_add(&s, "a"), 1);
	assert_int_equal(ext_open_add(&s, "b"), 0);
	assert_int_equal(ext_open_count(s), 2);
	assert_int_equal(ext_open_del(s, "a"), 1);
	assert_int_equal(ext_open_del(s, "a"), 0);
	assert_int_equal(ext_open_count(s), 1);
	ext_open_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_advertises, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_before_the_extension, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_checked_hints_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_session_many_connections, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_retire_before_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hook_order_to_the_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_hint_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapped_failure_keeps_pool_out, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_generation_refuses_start, setup,
						teardown),
		cmocka_unit_test(test_open_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

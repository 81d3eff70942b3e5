/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/handlers/hreq.h: the requests the handler tests send
 * (one per wire op, built from lib/common/proto/proto.h) on a server of
 * server_harness.h, and a metric read back from STATS. Only wire formats:
 * the tests see marud through its protocol, so they hold whatever the
 * handlers' C names become.
 */
#ifndef TESTS_HANDLERS_HREQ_H
#define TESTS_HANDLERS_HREQ_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_harness.h"

#define HR_ROOT		1ULL	/* the root directory's id (DIR_ROOT_ID) */

/* A harness server, two HELLOed clients, a reply and a scratch buffer. */
struct hfx {
	struct th t;
	struct tconn a, b;
	struct treply r;
	uint8_t buf[1 << 17];
};

static inline uint64_t hr_id(void)
{
	static uint64_t id = 1000;

	return id++;
}

static inline struct hfx *hfx_new(const uint8_t *key)
{
	struct hfx *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	th_config(&f->t);
	if (th_new(&f->t, key)) {
		free(f);
		return NULL;
	}
	tc_open(&f->t, &f->a);
	tc_open(&f->t, &f->b);
	return f;
}

static inline int hfx_free(struct hfx *f)
{
	int rc;

	tc_close(&f->a);
	tc_close(&f->b);
	rc = th_free(&f->t);
	free(f);
	return rc;
}

/* A fixture whose two clients have said HELLO (no key). */
static inline int hfx_setup(void **state)
{
	struct hfx *f = hfx_new(NULL);

	if (!f || tc_hello(&f->a, NULL, NULL) || tc_hello(&f->b, NULL, NULL))
		return -1;
	*state = f;
	return 0;
}

static inline int hfx_teardown(void **state)
{
	return hfx_free(*state);
}

/* The proto_attr at the start of the last reply. */
static inline struct proto_attr hr_attr(const struct hfx *f)
{
	struct proto_attr a;

	memcpy(&a, f->r.p, sizeof(a));
	return a;
}

/* CREATE name under parent; status, the attr in f->r. */
static inline int hr_create(struct hfx *f, struct tconn *tc, uint64_t parent,
			    const char *name, uint64_t hint)
{
	struct proto_create_req q = { .parent = parent, .size_hint = hint, .mode = 0644 };

	q.namelen = (uint16_t)strlen(name);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), name, q.namelen);
	return tc_call(tc, OP_CREATE, hr_id(), f->buf, sizeof(q) + q.namelen, &f->r, NULL);
}

static inline int hr_write(struct hfx *f, struct tconn *tc, uint64_t ino, uint64_t off,
			   const void *data, uint32_t len)
{
	struct proto_io_req q = { .ino = ino, .off = off, .len = len };

	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), data, len);
	return tc_call(tc, OP_WRITE, hr_id(), f->buf, sizeof(q) + len, &f->r, NULL);
}

static inline int hr_read(struct hfx *f, struct tconn *tc, uint64_t ino, uint64_t off,
			  uint32_t len)
{
	struct proto_io_req q = { .ino = ino, .off = off, .len = len };

	return tc_call(tc, OP_READ, hr_id(), &q, sizeof(q), &f->r, NULL);
}

static inline int hr_publish(struct hfx *f, struct tconn *tc, uint64_t ino, uint64_t size)
{
	struct proto_publish_req q = { .ino = ino, .size = size };

	return tc_call(tc, OP_PUBLISH, hr_id(), &q, sizeof(q), &f->r, NULL);
}

/* An op whose request is one proto_ino_req. */
static inline int hr_ino(struct hfx *f, struct tconn *tc, uint16_t op, uint64_t ino)
{
	struct proto_ino_req q = { .ino = ino };

	return tc_call(tc, op, hr_id(), &q, sizeof(q), &f->r, NULL);
}

/* An op whose request is proto_name_req + name (MKDIR, RMDIR, LOOKUP, UNLINK). */
static inline int hr_name(struct hfx *f, struct tconn *tc, uint16_t op, uint64_t parent,
			  const char *name, uint32_t mode)
{
	size_t n = name_req(f->buf, parent, name, mode);

	return tc_call(tc, op, hr_id(), f->buf, n, &f->r, NULL);
}

static inline int hr_open(struct hfx *f, struct tconn *tc, uint64_t parent, const char *name)
{
	struct proto_open_req q = { .parent = parent };

	q.namelen = (uint16_t)strlen(name);
	memcpy(f->buf, &q, sizeof(q));
	memcpy(f->buf + sizeof(q), name, q.namelen);
	return tc_call(tc, OP_OPEN, hr_id(), f->buf, sizeof(q) + q.namelen, &f->r, NULL);
}

/* CREATE, WRITE data, PUBLISH on tc: the published version's ino. */
static inline uint64_t hr_file(struct hfx *f, struct tconn *tc, const char *name,
			       const void *data, uint32_t len)
{
	uint64_t ino;

	if (hr_create(f, tc, HR_ROOT, name, len))
		return 0;
	ino = hr_attr(f).ino;
	if (len && hr_write(f, tc, ino, 0, data, len))
		return 0;
	return hr_publish(f, tc, ino, len) ? 0 : ino;
}

/* The value of Prometheus sample `name` in a STATS reply; -1 if absent. */
static inline int64_t hr_metric(struct hfx *f, struct tconn *tc, const char *name)
{
	char *text;
	const char *l;
	size_t n = strlen(name);
	int64_t v = -1;

	if (tc_call(tc, OP_STATS, hr_id(), NULL, 0, &f->r, NULL))
		return -1;
	text = malloc(f->r.len + 1);
	if (!text)
		return -1;
	memcpy(text, f->r.p, f->r.len);
	text[f->r.len] = '\0';
	for (l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, name, n) && l[n] == ' ') {
			v = strtoll(l + n + 1, NULL, 10);
			break;
		}
	}
	free(text);
	return v;
}

#endif

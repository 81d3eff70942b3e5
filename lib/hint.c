// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/hint.c: maru_hint(), hints for marud's region extension
 * (marufs-design(7) §4.3): one HINTV message per MARU_HINT_MAX_RANGES
 * ranges, sent only when the session's HELLO said the extension takes
 * that action. Hints are advice: nothing here changes a lease or a handle.
 */
#include <errno.h>
#include <string.h>

#include "client_priv.h"
#include "frame.h"
#include "maru/libmaru.h"
#include "proto.h"
#include "transport.h"
#include "route.h"

_Static_assert(sizeof(struct maru_hint_range) == sizeof(struct proto_hint_range),
	       "maru_hint_range is the wire's range");
_Static_assert(MARU_HINT_MAX_RANGES == PROTO_MAX_HINT_RANGES, "hint ranges per message");

uint32_t maru_hint_actions(struct maru_client *c)
{
	uint32_t a;

	if (!c)
		return 0;
	if (c->route)
		return route_hint_actions(c);
	pthread_mutex_lock(&c->lock);
	a = c->s.established ? c->s.hint_actions : 0;
	pthread_mutex_unlock(&c->lock);
	return a;
}

static int hint_args(int action, const char *request, size_t *reqlen,
		     const struct maru_hint_range *r, size_t n)
{
	*reqlen = request ? strnlen(request, MARU_HINT_REQUEST_MAX + 1) : 0;
	if (action < MARU_HINT_READ || action > MARU_HINT_WRITE)
		return -EINVAL;
	if (*reqlen > MARU_HINT_REQUEST_MAX || (!*reqlen && action != MARU_HINT_WRITE))
		return -EINVAL;
	if ((action == MARU_HINT_READ_END || action == MARU_HINT_PROMOTE) ? n != 0
	    : (n == 0 || !r))
		return -EINVAL;
	return 0;
}

static int hint_send(struct maru_client *c, int action, const char *request,
		     size_t reqlen, const struct maru_hint_range *r, size_t n)
{
	struct proto_hintv_req q = { .action = (uint32_t)action, .count = (uint32_t)n,
				     .reqlen = (uint16_t)reqlen };
	static const uint8_t zero[8];
	struct pbuf b = { 0 };
	struct req rq = { .op = OP_HINTV };
	int rc;

	rc = proto_buf_put(&b, &q, sizeof(q));
	if (!rc && reqlen)
		rc = proto_buf_put(&b, request, reqlen);
	if (!rc)
		rc = proto_buf_put(&b, zero, ((reqlen + 7) & ~(size_t)7) - reqlen);
	if (!rc && n)
		rc = proto_buf_put(&b, r, n * sizeof(*r));
	if (!rc) {
		rq.p1 = b.data;
		rq.n1 = b.len;
		rc = transport_call(c, &rq);
		frame_req_done(&rq);
	}
	proto_buf_free(&b);
	return rc;
}

int maru_hint(struct maru_client *c, int action, const char *request,
	      const struct maru_hint_range *r, size_t n)
{
	size_t reqlen, i = 0, k;
	int rc;

	if (!c)
		return -EINVAL;
	rc = hint_args(action, request, &reqlen, r, n);
	if (rc)
		return rc;
	if (c->route)
		return route_hint(c, action, request, r, n);
	if (!(maru_hint_actions(c) & (1u << action)))
		return -EOPNOTSUPP;
	do {
		k = n - i > MARU_HINT_MAX_RANGES ? MARU_HINT_MAX_RANGES : n - i;
		rc = hint_send(c, action, request, reqlen, r ? r + i : NULL, k);
		i += k;
	} while (!rc && i < n);
	return rc;
}

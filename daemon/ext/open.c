// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/ext/open.c: the hint requests one connection keeps open, so that
 * one connection cannot make the extension hold an unbounded number of
 * them: a read hint opens its request id, read_end closes it, the
 * connection's end closes all (the extension hears connection_closed).
 * At most PROTO_MAX_HINT_OPEN per connection; request ids are kept as
 * 64-bit hashes in a small growing array (a connection's own thread is the
 * only user, so there is no lock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"
#include "hash.h"
#include "proto.h"

struct hint_open {
	unsigned int n, cap;
	uint64_t id[];
};

static uint64_t req_hash(const char *request)
{
	uint64_t h = hash_xxh3(request, strlen(request));

	return h ? h : 1;
}

static int find(const struct hint_open *s, uint64_t h)
{
	unsigned int i;

	for (i = 0; s && i < s->n; i++)
		if (s->id[i] == h)
			return (int)i;
	return -1;
}

static int grow(struct hint_open **set)
{
	unsigned int cap = *set ? (*set)->cap * 2 : 16;
	struct hint_open *s;

	if (cap > PROTO_MAX_HINT_OPEN)
		cap = PROTO_MAX_HINT_OPEN;
	s = realloc(*set, sizeof(*s) + cap * sizeof(s->id[0]));
	if (!s)
		return -ENOMEM;
	if (!*set)
		s->n = 0;
	s->cap = cap;
	*set = s;
	return 0;
}

int hint_open_add(struct hint_open **set, const char *request)
{
	uint64_t h = req_hash(request);
	int rc;

	if (find(*set, h) >= 0)
		return 1;
	if (*set && (*set)->n >= PROTO_MAX_HINT_OPEN)
		return -EMFILE;
	if (!*set || (*set)->n == (*set)->cap) {
		rc = grow(set);
		if (rc)
			return rc;
	}
	(*set)->id[(*set)->n++] = h;
	return 0;
}

int hint_open_del(struct hint_open *set, const char *request)
{
	int i = find(set, req_hash(request));

	if (i < 0)
		return 0;
	set->id[i] = set->id[--set->n];
	return 1;
}

unsigned int hint_open_count(const struct hint_open *set)
{
	return set ? set->n : 0;
}

void hint_open_free(struct hint_open *set)
{
	free(set);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs/marustat/pool.c: the pool source: one libmaru client (tcp data path,
 * so nothing of the pool is mapped; one socket) kept for every line, and
 * maru_stats_text() with the maru_client_* lines taken out: they would
 * describe marustat's own client, not the pool's engines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <maru/libmaru.h>

#include "pool.h"

int pool_open(const char *uri, const char *key_file, struct maru_client **out, char *err,
	      unsigned int errlen)
{
	struct maru_client_opts o;
	int rc;

	maru_client_opts_init(&o, sizeof(o));
	o.uri = uri;
	o.key_file = key_file;
	o.data_path = MARU_DATA_TCP;
	o.timeout_ms = 3000;
	o.max_conns = 1;
	o.client_name = "marustat";
	rc = maru_client_new(&o, out);
	if (rc)
		snprintf(err, errlen, "%s: cannot connect to marud: %s", uri, maru_strerror(rc));
	return rc;
}

/* Lines of the client's own families ("maru_client_..." samples and their
 * "# HELP/TYPE maru_client_..." heads) removed in place. */
static void strip_client(char *text)
{
	char *in = text, *out = text, *nl;
	size_t len;

	while (*in) {
		nl = strchr(in, '\n');
		len = nl ? (size_t)(nl - in) + 1 : strlen(in);
		if (strncmp(in, "maru_client_", 12) && strncmp(in, "# HELP maru_client_", 19) &&
		    strncmp(in, "# TYPE maru_client_", 19)) {
			memmove(out, in, len);
			out += len;
		}
		in += len;
	}
	*out = '\0';
}

int pool_fetch(struct maru_client *c, const char *uri, char **text, char *err,
	       unsigned int errlen)
{
	size_t cap = 256 * 1024;
	char *buf;
	ssize_t n;

	for (;;) {
		buf = malloc(cap);
		if (!buf)
			return -ENOMEM;
		n = maru_stats_text(c, buf, cap);
		if (n < 0) {
			free(buf);
			snprintf(err, errlen, "%s: STATS failed: %s", uri, maru_strerror((int)n));
			return (int)n;
		}
		if ((size_t)n < cap)
			break;
		free(buf);
		cap = (size_t)n + 1;
	}
	strip_client(buf);
	*text = buf;
	return 0;
}

void pool_close(struct maru_client *c)
{
	maru_client_free(c);
}

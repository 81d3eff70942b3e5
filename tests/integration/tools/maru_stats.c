/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_stats.c: print a pool's Prometheus stats text
 * (marud's metrics plus this client's) through libmaru; the harness uses it
 * (lib/common.sh maru_stats) when no marufs mount is there to cat.
 *
 *   usage: maru_stats URI
 */
#include "maru_tool.h"

int main(int argc, char **argv)
{
	struct maru_client *c;
	size_t cap = 64 * 1024;
	char *buf = NULL;
	ssize_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: maru_stats URI\n");
		return 2;
	}
	c = tool_client(argv[1]);
	for (;;) {
		buf = realloc(buf, cap);
		CHECK(buf);
		n = OK(maru_stats_text(c, buf, cap));
		if ((size_t)n < cap)
			break;
		cap = (size_t)n + 1;
	}
	fwrite(buf, 1, (size_t)n, stdout);
	free(buf);
	maru_client_free(c);
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/maru_pin.c: the libmaru TTL pin calls
 * (maru_pin_set, maru_pin_get) on a path of the pool, for the security
 * suite's pin cases.
 *
 *   usage: maru_pin URI PATH|#INO [SECONDS]
 *
 * #INO names a version id as is, unresolved (a client that forges ids).
 * Prints the seconds granted (with SECONDS) or left (without) and exits 0;
 * on a refusal prints "error NAME" (ENOSPC, EBUSY...) on stdout and exits 3.
 */
#include <errno.h>

#include "maru_tool.h"

static const char *err_name(int e)
{
	switch (e) {
	case ENOSPC: return "ENOSPC";
	case EBUSY: return "EBUSY";
	case ESTALE: return "ESTALE";
	case ENOENT: return "ENOENT";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case EROFS: return "EROFS";
	default: return "OTHER";
	}
}

/* The ino a path under the root names (components split on '/'). */
static int resolve(struct maru_client *c, char *path, uint64_t *ino)
{
	struct maru_attr a;
	uint64_t at = MARU_ROOT_ID;
	char *save = NULL, *w;
	int rc;

	for (w = strtok_r(path, "/", &save); w; w = strtok_r(NULL, "/", &save)) {
		rc = maru_lookup(c, at, w, &a);
		if (rc)
			return rc;
		at = a.ino;
	}
	*ino = at;
	return 0;
}

int main(int argc, char **argv)
{
	struct maru_client *c;
	uint64_t ino;
	char *end;
	int rc;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: maru_pin URI PATH|#INO [SECONDS]\n");
		return 2;
	}
	c = tool_client(argv[1]);
	if (argv[2][0] == '#') {
		ino = strtoull(argv[2] + 1, &end, 10);
		rc = 0;
	} else {
		rc = resolve(c, argv[2], &ino);
	}
	if (rc == 0 && argc == 4)
		rc = maru_pin_set(c, ino, (uint32_t)strtoul(argv[3], &end, 10));
	else if (rc == 0)
		rc = maru_pin_get(c, ino);
	maru_client_free(c);
	if (rc < 0) {
		printf("error %s\n", err_name(-rc));
		return 3;
	}
	printf("%d\n", rc);
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/tools/fs_renameat2.c: renameat2(2) from the shell, which
 * mv(1) cannot do with flags. "fs_renameat2 [-n|-x] OLD NEW": -n passes
 * RENAME_NOREPLACE, -x RENAME_EXCHANGE. Exits 0 on success; otherwise prints
 * "errno NAME" (e.g. "errno EEXIST") on stdout and exits 1, so cases can
 * assert the exact error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static const char *errno_name(int err)
{
	switch (err) {
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EXDEV: return "EXDEV";
	case EBUSY: return "EBUSY";
	case EPERM: return "EPERM";
	case ENOTEMPTY: return "ENOTEMPTY";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	default: return strerror(err);
	}
}

int main(int argc, char **argv)
{
	unsigned int flags = 0;
	int opt;

	while ((opt = getopt(argc, argv, "nx")) != -1) {
		if (opt == 'n')
			flags |= RENAME_NOREPLACE;
		else if (opt == 'x')
			flags |= RENAME_EXCHANGE;
		else
			return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: fs_renameat2 [-n|-x] OLD NEW\n");
		return 2;
	}
	if (renameat2(AT_FDCWD, argv[optind], AT_FDCWD, argv[optind + 1], flags) == 0)
		return 0;
	printf("errno %s\n", errno_name(errno));
	return 1;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/replay.c: the main() that turns a fuzz harness into a plain
 * unit test. Linked with one harness (any compiler, no libFuzzer), it calls
 * LLVMFuzzerTestOneInput() once on every file named on the command line and
 * on every regular file, in name order, of every directory named (dotfiles
 * and README* skipped): the saved regression inputs and the seed corpus.
 * A harness check that fails aborts, which fails the test.
 *
 *	usage: replay PATH...
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int read_file(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *nb;
	size_t cap = 0, n = 0, got;
	int rc = 0;

	if (!f)
		return -errno;
	do {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	if (!rc && ferror(f))
		rc = -EIO;
	fclose(f);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int replay_file(const char *path)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int rc = read_file(path, &data, &len);

	if (rc) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-rc));
		return rc;
	}
	printf("replay: %s (%zu bytes)\n", path, len);
	fflush(stdout);
	LLVMFuzzerTestOneInput(data, len);
	free(data);
	return 0;
}

static int skipped(const char *name)
{
	return name[0] == '.' || !strncmp(name, "README", 6);
}

/* Returns the number of inputs replayed, or -errno. */
static int replay_dir(const char *dir)
{
	struct dirent **ents;
	char path[4096];
	struct stat st;
	int n, i, done = 0, rc = 0;

	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	for (i = 0; i < n; i++) {
		if (!rc && !skipped(ents[i]->d_name)) {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				rc = replay_file(path);
				done++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	return rc ? rc : done;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i, n, total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
		if (n < 0)
			return 1;
		total += S_ISDIR(st.st_mode) ? n : 1;
	}
	printf("replay: %d inputs, no failure\n", total);
	return total ? 0 : 1;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/keyfile_fuzz.c: libFuzzer harness of the key file parser
 * (lib/common/keyfile.c). The input is a key file's text. Beyond "no
 * crash, no leak", it asserts what keyfile.h promises: -EINVAL comes with
 * an error "keys:LINE: ..." naming a line of the input; a success gives
 * keys whose names, roots, rights and secrets obey the rules, roots that
 * never nest, and text that, written back out, parses to the same keys.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "keyfile.h"

#define FUZZ_CHECK(cond)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "keyfile_fuzz: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);                       \
			abort();                                                  \
		}                                                                 \
	} while (0)

static unsigned int lines_of(const uint8_t *d, size_t n)
{
	unsigned int l = 1;
	size_t i;

	for (i = 0; i < n; i++)
		l += d[i] == '\n';
	return l;
}

static void check_key(const struct keyfile_key *k, int admin)
{
	size_t i;

	FUZZ_CHECK(k->secret_len >= KEYFILE_SECRET_MIN && k->secret_len <= KEYFILE_SECRET_MAX);
	FUZZ_CHECK(strlen(k->secret) == k->secret_len);
	for (i = 0; i < k->secret_len; i++)
		FUZZ_CHECK(k->secret[i] > ' ' && k->secret[i] <= '~');
	if (admin) {
		FUZZ_CHECK(!k->name[0] && !k->root[0]);
		return;
	}
	FUZZ_CHECK(k->name[0] && k->name[0] != '.' && strlen(k->name) <= KEYFILE_NAME_MAX);
	FUZZ_CHECK(k->root[0] == '/' && !strstr(k->root, "//") && !strstr(k->root, "/../") &&
		   !strstr(k->root, "/./"));
	FUZZ_CHECK(k->rights == KEYFILE_RW || k->rights == KEYFILE_RO);
}

/* Write kf back in the format (one line per key) into buf. */
static size_t write_back(const struct keyfile *kf, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "%s\n", KEYFILE_MAGIC);
	unsigned int i;

	if (kf->have_admin)
		n += (size_t)snprintf(buf + n, cap - n, "admin secret=%s\n", kf->admin.secret);
	for (i = 0; i < kf->nkeys && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "key %s root=%s rights=%s quota=%llu secret=%s\n",
				      kf->keys[i].name, kf->keys[i].root,
				      kf->keys[i].rights ? "ro" : "rw",
				      (unsigned long long)kf->keys[i].quota, kf->keys[i].secret);
	FUZZ_CHECK(n < cap);
	return n;
}

static void same(const struct keyfile *a, const struct keyfile *b)
{
	unsigned int i;

	FUZZ_CHECK(a->have_admin == b->have_admin && a->nkeys == b->nkeys);
	if (a->have_admin)
		FUZZ_CHECK(!strcmp(a->admin.secret, b->admin.secret));
	for (i = 0; i < a->nkeys; i++) {
		FUZZ_CHECK(!strcmp(a->keys[i].name, b->keys[i].name));
		FUZZ_CHECK(!strcmp(a->keys[i].root, b->keys[i].root));
		FUZZ_CHECK(a->keys[i].rights == b->keys[i].rights);
		FUZZ_CHECK(a->keys[i].quota == b->keys[i].quota);
		FUZZ_CHECK(!strcmp(a->keys[i].secret, b->keys[i].secret));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char back[(KEYFILE_MAX_KEYS + 2) * (KEYFILE_LINE_MAX + 64)];
	struct keyfile kf, kf2;
	char err[512];
	unsigned int i, j, line;
	size_t n;
	int rc;

	rc = keyfile_parse("keys", (const char *)data, size, &kf, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc) {
		FUZZ_CHECK(sscanf(err, "keys:%u: ", &line) == 1);
		FUZZ_CHECK(line >= 1 && line <= lines_of(data, size));
		return 0;
	}
	FUZZ_CHECK(keyfile_is_v1((const char *)data, size));
	FUZZ_CHECK(kf.have_admin || kf.nkeys);
	if (kf.have_admin)
		check_key(&kf.admin, 1);
	for (i = 0; i < kf.nkeys; i++) {
		check_key(&kf.keys[i], 0);
		FUZZ_CHECK(keyfile_find(&kf, kf.keys[i].name) == &kf.keys[i]);
		for (j = 0; j < i; j++)
			FUZZ_CHECK(!keyfile_root_holds(kf.keys[i].root, kf.keys[j].root) &&
				   !keyfile_root_holds(kf.keys[j].root, kf.keys[i].root));
	}
	n = write_back(&kf, back, sizeof(back));
	rc = keyfile_parse("back", back, n, &kf2, err, sizeof(err));
	if (rc)
		fprintf(stderr, "keyfile_fuzz: written back: %s\n", err);
	FUZZ_CHECK(rc == 0);
	same(&kf, &kf2);
	keyfile_free(&kf2);
	keyfile_free(&kf);
	return 0;
}

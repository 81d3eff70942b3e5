/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/keyfile.h: the key file's text format (marud.conf(5), "KEY
 * FILE"), parsed strictly for marud (every key) and for libmaru (the one
 * key a client proves). Pure text in, records out: no file system, no
 * hashing (the caller hashes each secret into its 32-byte HMAC key), so
 * that tests/fuzz/keyfile_fuzz.c can feed it anything.
 *
 * A file whose first line is exactly "marud-keys 1" is in this format:
 *
 *   marud-keys 1
 *   # comment
 *   admin secret=SECRET
 *   key NAME root=/PATH rights=rw|ro [quota=SIZE] secret=SECRET
 *
 * Any other file is a legacy key file: its whole content is the one
 * administrator secret (keyfile_is_v1() tells them apart).
 */
#ifndef MARU_KEYFILE_H
#define MARU_KEYFILE_H

#include <stddef.h>
#include <stdint.h>

#define KEYFILE_MAGIC		"marud-keys 1"
#define KEYFILE_NAME_MAX	63	/* [A-Za-z0-9_.-], first not '.' */
#define KEYFILE_ROOT_MAX	1023	/* absolute, no ".", "..", "//" */
#define KEYFILE_SECRET_MIN	16
#define KEYFILE_SECRET_MAX	256	/* printable ASCII, no space */
#define KEYFILE_MAX_KEYS	256
#define KEYFILE_LINE_MAX	2048
#define KEYFILE_KEY_BYTES	32

enum keyfile_rights { KEYFILE_RW = 0, KEYFILE_RO = 1 };

struct keyfile_key {
	char name[KEYFILE_NAME_MAX + 1];	/* "" for the administrator */
	char root[KEYFILE_ROOT_MAX + 1];	/* "" for the administrator */
	int rights;				/* enum keyfile_rights */
	uint64_t quota;				/* bytes, 0: none */
	char secret[KEYFILE_SECRET_MAX + 1];
	size_t secret_len;
	unsigned int line;			/* where it was defined */
};

struct keyfile {
	struct keyfile_key admin;
	int have_admin;
	struct keyfile_key *keys;		/* named keys, file order */
	unsigned int nkeys;
};

/* 1 if text starts with the KEYFILE_MAGIC line. */
int keyfile_is_v1(const char *text, size_t len);
/*
 * Parse text (len bytes, need not be NUL-terminated). On error returns
 * -EINVAL (or -ENOMEM) and writes "FILE:LINE: what" into err (errlen bytes,
 * always NUL-terminated); `file` names the source in that message. On
 * success kf is filled and must be given to keyfile_free().
 */
int keyfile_parse(const char *file, const char *text, size_t len, struct keyfile *kf,
		  char *err, size_t errlen);
/* Frees the keys and wipes the secrets; kf may then be parsed into again. */
void keyfile_free(struct keyfile *kf);
/* The named key, or NULL. */
const struct keyfile_key *keyfile_find(const struct keyfile *kf, const char *name);
/* 1 if root a is b or an ancestor of b ("/a" holds "/a/b", not "/ab"). */
int keyfile_root_holds(const char *a, const char *b);

#endif

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/common/keyfile.c: the strict parser of the key file's text format
 * (keyfile.h, marud.conf(5)). Every refusal names the file and the line.
 * Fuzzed by tests/fuzz/keyfile_fuzz.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyfile.h"
#include "parse.h"

struct kp {
	const char *file;
	unsigned int line;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static int kerr(struct kp *p, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s:%u: %s", p->file, p->line, what);
	return -EINVAL;
}

int keyfile_is_v1(const char *text, size_t len)
{
	size_t n = strlen(KEYFILE_MAGIC);

	return len >= n && !memcmp(text, KEYFILE_MAGIC, n) &&
	       (len == n || text[n] == '\n' || (text[n] == '\r' && len > n + 1 &&
						 text[n + 1] == '\n'));
}

int keyfile_root_holds(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (!strcmp(a, "/"))
		return 1;
	return !strncmp(a, b, n) && (b[n] == '\0' || b[n] == '/');
}

static int name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > KEYFILE_NAME_MAX || s[0] == '.')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' ||
		      s[i] == '.'))
			return 0;
	return 1;
}

/* Absolute; components not empty, ".", ".." or over 255 bytes; no trailing '/'. */
static const char *root_bad(const char *s)
{
	const char *c, *e;

	if (s[0] != '/')
		return "is not absolute";
	if (strlen(s) > KEYFILE_ROOT_MAX)
		return "is too long";
	if (!strcmp(s, "/"))
		return NULL;
	for (c = s + 1;; c = e + 1) {
		e = strchr(c, '/');
		if (!e)
			e = c + strlen(c);
		if (e == c)
			return "has an empty component (\"//\" or a trailing \"/\")";
		if ((e - c == 1 && c[0] == '.') || (e - c == 2 && c[0] == '.' && c[1] == '.'))
			return "has a \".\" or \"..\" component";
		if (e - c > 255)
			return "has a component over 255 bytes";
		if (*e == '\0')
			return NULL;
	}
}

static int secret_set(struct kp *p, struct keyfile_key *k, const char *v)
{
	size_t i, n = strlen(v);

	if (n < KEYFILE_SECRET_MIN || n > KEYFILE_SECRET_MAX)
		return kerr(p, "secret must be %d to %d characters (it has %zu)",
			    KEYFILE_SECRET_MIN, KEYFILE_SECRET_MAX, n);
	for (i = 0; i < n; i++)
		if (v[i] <= ' ' || v[i] > '~')
			return kerr(p, "secret holds a character that is not printable ASCII");
	memcpy(k->secret, v, n + 1);
	k->secret_len = n;
	return 0;
}

/* One "word=value" of a key line; seen: bit per word, to refuse repeats. */
static int attr_set(struct kp *p, struct keyfile_key *k, int admin, char *w, unsigned *seen)
{
	static const char *const words[] = { "secret", "root", "rights", "quota" };
	char *v = strchr(w, '=');
	const char *why;
	unsigned int i;

	if (!v)
		return kerr(p, "\"%.64s\": expected WORD=VALUE", w);
	*v++ = '\0';
	for (i = 0; i < 4 && strcmp(w, words[i]); i++)
		;
	if (i == 4 || (admin && i > 0))
		return kerr(p, "unknown word \"%.64s\" for %s", w, admin ? "admin" : "a key");
	if (*seen & (1u << i))
		return kerr(p, "%s given twice", w);
	*seen |= 1u << i;
	if (i == 0)
		return secret_set(p, k, v);
	if (i == 1) {
		why = root_bad(v);
		if (why)
			return kerr(p, "root \"%.64s\" %s", v, why);
		memcpy(k->root, v, strlen(v) + 1);
		return 0;
	}
	if (i == 2) {
		if (strcmp(v, "rw") && strcmp(v, "ro"))
			return kerr(p, "rights must be rw or ro, not \"%.16s\"", v);
		k->rights = v[1] == 'o' ? KEYFILE_RO : KEYFILE_RW;
		return 0;
	}
	if (parse_size(v, &k->quota))
		return kerr(p, "quota \"%.32s\" is not a size (bytes, or with K, M, G, T)", v);
	return 0;
}

static int key_check(struct kp *p, const struct keyfile *kf, const struct keyfile_key *k)
{
	unsigned int i;

	for (i = 0; i < kf->nkeys; i++) {
		if (!strcmp(kf->keys[i].name, k->name))
			return kerr(p, "key %s is defined again (first on line %u)", k->name,
				    kf->keys[i].line);
		if (keyfile_root_holds(kf->keys[i].root, k->root) ||
		    keyfile_root_holds(k->root, kf->keys[i].root))
			return kerr(p, "root %s of key %s overlaps root %s of key %s (line %u): "
				    "roots must not nest", k->root, k->name,
				    kf->keys[i].root, kf->keys[i].name, kf->keys[i].line);
	}
	return 0;
}

static int key_line(struct kp *p, struct keyfile *kf, char **w, int nw)
{
	int admin = !strcmp(w[0], "admin");
	struct keyfile_key k, *nk;
	unsigned int seen = 0;
	int i, rc;

	memset(&k, 0, sizeof(k));
	k.line = p->line;
	if (!admin && strcmp(w[0], "key"))
		return kerr(p, "unknown line \"%.32s\": expected admin or key", w[0]);
	if (admin && kf->have_admin)
		return kerr(p, "admin is defined again (first on line %u)", kf->admin.line);
	if (!admin) {
		if (nw < 2 || !name_ok(w[1]))
			return kerr(p, "key needs a NAME of 1 to %d letters, digits, '_', '-' "
				    "or '.' (not first)", KEYFILE_NAME_MAX);
		memcpy(k.name, w[1], strlen(w[1]) + 1);
	}
	for (i = admin ? 1 : 2; i < nw; i++) {
		rc = attr_set(p, &k, admin, w[i], &seen);
		if (rc)
			goto out;
	}
	rc = -EINVAL;
	if (!(seen & 1)) {
		rc = kerr(p, "%s has no secret=", admin ? "admin" : k.name);
		goto out;
	}
	if (admin) {
		kf->admin = k;
		kf->have_admin = 1;
		rc = 0;
		goto out;
	}
	if (!(seen & 2) || !(seen & 4)) {
		rc = kerr(p, "key %s needs root= and rights=", k.name);
		goto out;
	}
	rc = key_check(p, kf, &k);
	if (rc)
		goto out;
	if (kf->nkeys >= KEYFILE_MAX_KEYS) {
		rc = kerr(p, "more than %d keys", KEYFILE_MAX_KEYS);
		goto out;
	}
	nk = realloc(kf->keys, (kf->nkeys + 1) * sizeof(*nk));
	rc = -ENOMEM;
	if (!nk)
		goto out;
	kf->keys = nk;
	kf->keys[kf->nkeys++] = k;
	rc = 0;
out:
	memset(k.secret, 0, sizeof(k.secret));
	return rc;
}

/* Split a line (NUL-terminated, no newline) into words at spaces/tabs. */
static int one_line(struct kp *p, struct keyfile *kf, char *s)
{
	char *w[8];
	int nw = 0;

	while (*s) {
		while (*s == ' ' || *s == '\t')
			*s++ = '\0';
		if (!*s || *s == '#')
			break;
		if (nw == 8)
			return kerr(p, "too many words (at most 7 WORD=VALUE after the name)");
		w[nw++] = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
	}
	return nw ? key_line(p, kf, w, nw) : 0;
}

int keyfile_parse(const char *file, const char *text, size_t len, struct keyfile *kf,
		  char *err, size_t errlen)
{
	struct kp p = { file ? file : "key file", 1, err, errlen };
	char line[KEYFILE_LINE_MAX + 1];
	const char *nl;
	size_t at, n;
	int rc = 0;

	memset(kf, 0, sizeof(*kf));
	if (err && errlen)
		err[0] = '\0';
	if (!keyfile_is_v1(text, len))
		return kerr(&p, "first line is not \"%s\"", KEYFILE_MAGIC);
	/* the magic line is checked; text need not end in a NUL */
	nl = memchr(text, '\n', len);
	at = nl ? (size_t)(nl - text) + 1 : len;
	while (at < len && !rc) {
		p.line++;
		for (n = 0; at + n < len && text[at + n] != '\n'; n++)
			;
		if (n > KEYFILE_LINE_MAX) {
			rc = kerr(&p, "line longer than %d bytes", KEYFILE_LINE_MAX);
			break;
		}
		memcpy(line, text + at, n);
		line[n] = '\0';
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		if (strlen(line) != (n && text[at + n - 1] == '\r' ? n - 1 : n))
			rc = kerr(&p, "NUL byte in the line");
		else
			rc = one_line(&p, kf, line);
		at += n + 1;
	}
	memset(line, 0, sizeof(line));
	if (!rc && !kf->have_admin && kf->nkeys == 0)
		rc = kerr(&p, "no admin and no key");
	if (rc)
		keyfile_free(kf);
	return rc;
}

void keyfile_free(struct keyfile *kf)
{
	unsigned int i;

	for (i = 0; i < kf->nkeys; i++)
		memset(kf->keys[i].secret, 0, sizeof(kf->keys[i].secret));
	free(kf->keys);
	memset(kf, 0, sizeof(*kf));
}

const struct keyfile_key *keyfile_find(const struct keyfile *kf, const char *name)
{
	unsigned int i;

	for (i = 0; i < kf->nkeys; i++)
		if (!strcmp(kf->keys[i].name, name))
			return &kf->keys[i];
	return NULL;
}

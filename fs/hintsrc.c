// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fs/hintsrc.c: where the mount's explicit hints come from: the text
 * written to .maru/hints (hintline.c parses each line; every path is
 * resolved from the mount root, one LOOKUP per component, and must be a
 * file) and user.maru.hint (on a file, that file; on a directory, every
 * file in it). Everything is checked before anything is queued (hints.c).
 * A `pin` line is no hint: its pins are set here, at once, so a refusal
 * (ENOSPC over a cap) fails the write().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hints.h"
#include "log.h"

/* The version a path names, relative to the root. */
static int resolve(struct mfs *m, const char *path, uint64_t *ino)
{
	char name[256];
	struct maru_attr a;
	uint64_t at = FUSE_ROOT_ID;
	const char *c = path;
	size_t n;
	int rc;

	memset(&a, 0, sizeof(a));
	while (*c) {
		n = strcspn(c, "/");
		if (n >= sizeof(name))
			return -ENAMETOOLONG;
		memcpy(name, c, n);
		name[n] = '\0';
		rc = maru_lookup(m->c, at, name, &a);
		if (rc)
			return rc;
		at = a.ino;
		c += n + (c[n] == '/');
	}
	if (!S_ISREG(a.mode))
		return -EISDIR;
	*ino = at;
	return 0;
}

static int line_ranges(struct mfs *m, const struct hint_line *l, struct maru_hint_range *r,
		       const char **bad, int *err)
{
	size_t i;

	for (i = 0; i < l->npaths; i++) {
		*err = resolve(m, l->path[i], &r[i].ino);
		if (*err) {
			*bad = l->path[i];
			return -EINVAL;
		}
		r[i].off = r[i].len = 0;
	}
	return 0;
}

/* One line: parsed and resolved into *l and r[]; logged when bad. */
static int line_check(struct mfs *m, char *text, struct hint_line *l,
		      struct maru_hint_range *r)
{
	char copy[160];
	const char *why, *bad = NULL;
	int err = 0;

	snprintf(copy, sizeof(copy), "%s", text);
	if (hint_line_parse(text, l, &why)) {
		log_warnx(".maru/hints: bad line '%s': %s", copy, why);
		return -EINVAL;
	}
	if (line_ranges(m, l, r, &bad, &err)) {
		log_warnx(".maru/hints: bad line '%s': %s: %s", copy, bad,
			  err == -EISDIR ? "not a file" : maru_strerror(err));
		return -EINVAL;
	}
	return 0;
}

/* A pin line: each path's version pinned (or unpinned) now. */
static int line_pins(struct mfs *m, const struct hint_line *l, const struct maru_hint_range *r)
{
	size_t i;
	int rc;

	for (i = 0; i < l->npaths; i++) {
		rc = maru_pin_set(m->c, r[i].ino, l->seconds);
		if (rc < 0) {
			log_warnx(".maru/hints: pin %u %s: %s", l->seconds, l->path[i],
				  maru_strerror(rc));
			return rc;
		}
	}
	return 0;
}

struct parsed {
	struct hint_line l;
	struct maru_hint_range r[HINT_LINE_MAX_PATHS];
};

int hints_write_text(struct mfs *m, const char *buf, size_t len)
{
	char *text = malloc(len + 1), *line, *nl;
	struct parsed *p = NULL;
	size_t cap = 0, np = 0, i;
	int rc = 0;

	if (!text)
		return -ENOMEM;
	memcpy(text, buf, len);
	text[len] = '\0';
	for (line = text; !rc && line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!line[strspn(line, " \t")])
			continue;	/* blank line */
		if (np == cap) {
			struct parsed *g = realloc(p, (cap ? cap * 2 : 2) * sizeof(*p));

			if (!g) {
				rc = -ENOMEM;
				break;
			}
			p = g;
			cap = cap ? cap * 2 : 2;
		}
		rc = line_check(m, line, &p[np].l, p[np].r);
		np += rc == 0;
	}
	for (i = 0; !rc && i < np; i++) {
		if (p[i].l.action == HINT_LINE_PIN)
			rc = line_pins(m, &p[i].l, p[i].r);
		else
			rc = hintq_push(m->hq, p[i].l.action, p[i].l.req, p[i].r,
					p[i].l.npaths);
	}
	free(p);
	free(text);
	return rc;
}

struct dir_files {
	struct maru_hint_range *r;
	size_t n, cap;
};

static int dir_file(void *arg, const struct maru_dirent *de)
{
	struct dir_files *f = arg;
	struct maru_hint_range *g;

	if (!S_ISREG(de->mode))
		return 0;
	if (f->n == f->cap) {
		g = realloc(f->r, (f->cap ? f->cap * 2 : 16) * sizeof(*g));
		if (!g)
			return 1;
		f->r = g;
		f->cap = f->cap ? f->cap * 2 : 16;
	}
	f->r[f->n++] = (struct maru_hint_range){ de->ino, 0, 0 };
	return 0;
}

int hints_xattr(struct mfs *m, uint64_t ino, int action)
{
	struct maru_hint_range one = { ino, 0, 0 };
	struct dir_files f = { 0 };
	struct maru_attr a;
	char req[32];
	int rc = maru_getattr(m->c, ino, &a);

	if (rc)
		return rc;
	snprintf(req, sizeof(req), "x%llu", (unsigned long long)ino);
	if (action == MARU_HINT_READ_END || action == MARU_HINT_PROMOTE)
		return hintq_push(m->hq, action, req, NULL, 0);
	if (!S_ISDIR(a.mode))
		return hintq_push(m->hq, action, req, &one, 1);
	rc = maru_readdir(m->c, ino, 0, dir_file, &f);
	if (!rc && f.n)
		rc = hintq_push(m->hq, action, req, f.r, f.n);
	free(f.r);
	return rc;
}

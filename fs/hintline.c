// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fs/hintline.c: one line of .maru/hints, as a shell writes it:
 *   read REQ PATH...   read_end REQ   promote REQ   write TOKEN PATH...
 *   pin SECONDS PATH...   (a TTL pin of each file's version; 0 unpins)
 * words separated by blanks, REQ 1..63 bytes, SECONDS 0..4294967295, paths relative to the mount
 * (no leading '/', no "." or ".." component), at most HINT_LINE_MAX_PATHS.
 * No I/O, no state: hints.c resolves the paths.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "hints.h"

static const struct {
	const char *word;
	int action, paths;	/* paths: 1 wants some, 0 none */
} verbs[] = {
	{ "read", MARU_HINT_READ, 1 },
	{ "read_end", MARU_HINT_READ_END, 0 },
	{ "promote", MARU_HINT_PROMOTE, 0 },
	{ "write", MARU_HINT_WRITE, 1 },
	{ "pin", HINT_LINE_PIN, 1 },
};

/* Next blank-separated word, NUL-terminated in place; NULL at the end. */
static char *word(char **at)
{
	char *p = *at, *w;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return NULL;
	w = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	if (*p)
		*p++ = '\0';
	*at = p;
	return w;
}

static int path_ok(const char *p)
{
	const char *c = p;
	size_t n;

	if (*p == '/')
		return 0;
	while (*c) {
		n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		c += n;
		if (*c == '/')
			c++;
	}
	return 1;
}

static int verb_of(const char *w)
{
	size_t i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(w, verbs[i].word))
			return (int)i;
	return -1;
}

static int seconds_parse(const char *w, uint32_t *out)
{
	uint64_t v = 0;
	size_t n = strlen(w), i;

	if (n == 0 || n > 10)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (w[i] < '0' || w[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(w[i] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int paths_parse(char **at, struct hint_line *out, const char **why)
{
	char *w;

	while ((w = word(at))) {
		if (out->npaths == HINT_LINE_MAX_PATHS) {
			*why = "more than 4096 paths on one line";
			return -EINVAL;
		}
		if (!path_ok(w)) {
			*why = "a path must be relative to the mount, without . or ..";
			return -EINVAL;
		}
		out->path[out->npaths++] = w;
	}
	return 0;
}

int hint_line_parse(char *line, struct hint_line *out, const char **why)
{
	char *at = line, *w = word(&at), *req;
	int v;

	memset(out, 0, offsetof(struct hint_line, path));
	out->npaths = 0;
	*why = "expected read REQ PATH..., read_end REQ, promote REQ, write TOKEN PATH... "
	       "or pin SECONDS PATH...";
	if (!w || (v = verb_of(w)) < 0)
		return -EINVAL;
	out->action = verbs[v].action;
	req = word(&at);
	if (!req) {
		*why = "the request id is missing";
		return -EINVAL;
	}
	if (strlen(req) > HINT_REQ_MAX) {
		*why = "the request id is longer than 63 bytes";
		return -EINVAL;
	}
	memcpy(out->req, req, strlen(req) + 1);
	if (out->action == HINT_LINE_PIN && seconds_parse(req, &out->seconds)) {
		*why = "pin takes whole seconds, 0 to 4294967295";
		return -EINVAL;
	}
	if (paths_parse(&at, out, why))
		return -EINVAL;
	if (verbs[v].paths && !out->npaths) {
		*why = "read, write and pin name at least one path";
		return -EINVAL;
	}
	if (!verbs[v].paths && out->npaths) {
		*why = "read_end and promote take no paths";
		return -EINVAL;
	}
	return 0;
}

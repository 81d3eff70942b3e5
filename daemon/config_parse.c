// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/config_parse.c: where marud's settings come from and in which
 * order: the command-line grammar (getopt_long, -D key=value, the flag
 * options that are keys with a fixed value), the `key = value` file format
 * (comments, quotes, line numbers in errors) and the layering in
 * config_load() (defaults < file < command line). Every value goes through
 * config_set() (config.c).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "config.h"
#include "config_priv.h"

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Cut a '#' comment: at line start or after whitespace (paths may hold '#'). */
static void strip_comment(char *s)
{
	char *p;

	for (p = s; *p; p++) {
		if (*p == '#' && (p == s || isspace((unsigned char)p[-1]))) {
			*p = '\0';
			return;
		}
	}
}

static void unquote(char **v)
{
	size_t n = strlen(*v);

	if (n >= 2 && (*v)[0] == '"' && (*v)[n - 1] == '"') {
		(*v)[n - 1] = '\0';
		(*v)++;
	}
}

static int config_line(struct config *c, char *line, const char *file,
		       unsigned int lineno, FILE *err)
{
	char *eq, *key, *val;
	int rc;

	strip_comment(line);
	key = trim(line);
	if (!*key)
		return 0;
	eq = strchr(key, '=');
	if (!eq) {
		config_errf(err, "%s:%u: expected key = value", file, lineno);
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(key);
	val = trim(eq + 1);
	unquote(&val);
	rc = config_set(c, key, val, LAYER_FILE);
	if (rc == -ENOENT)
		config_errf(err, "%s:%u: unknown key '%s'", file, lineno, key);
	else if (rc)
		config_errf(err, "%s:%u: bad value '%s' for %s: %s", file, lineno, val, key,
		     strerror(-rc));
	return rc;
}

static int config_read_file(struct config *c, const char *file, FILE *err)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned int lineno = 0;
	int rc = 0;
	FILE *f = fopen(file, "re");

	if (!f) {
		rc = -errno;
		config_errf(err, "%s: %s", file, strerror(-rc));
		return rc;
	}
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		rc = config_line(c, line, file, lineno, err);
		if (rc)
			break;
	}
	free(line);
	fclose(f);
	return rc;
}

int config_load(const struct config_args *a, struct config *c, FILE *err)
{
	unsigned int i;
	int rc;

	config_defaults(c);
	c->foreground = a->foreground;
	c->check_only = a->check_only;
	if (a->file) {
		if (strlen(a->file) >= sizeof(c->file))
			return -ENAMETOOLONG;
		memcpy(c->file, a->file, strlen(a->file) + 1);
		rc = config_read_file(c, a->file, err);
		if (rc)
			return rc;
	}
	for (i = 0; i < a->ndefs; i++) {
		rc = config_set(c, a->defs[i].key, a->defs[i].value, LAYER_CMDLINE);
		if (rc == -ENOENT)
			config_errf(err, "unknown option '%s'", a->defs[i].key);
		else if (rc)
			config_errf(err, "bad value '%s' for %s: %s", a->defs[i].value,
			     a->defs[i].key, strerror(-rc));
		if (rc)
			return rc;
	}
	c->verbose += a->verbose;
	return 0;
}

void config_usage(FILE *out)
{
	fprintf(out,
		"usage: marud [-dnv] [-f file] [-D key=value] [--pool URI] [--size SIZE]\n"
		"             [--listen URI]... [--eviction lru|none] [--grace SECONDS]\n"
		"             [--key-file PATH] [--max-conns N] [--max-frame BYTES]\n"
		"             [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
		"             [--handshake-timeout-ms MS] [--handshake-max N]\n"
		"             [--handshake-per-source N]\n"
		"             [--max-leases N] [--max-pending BYTES] [--pidfile PATH]\n"
		"             [--ack-timeout-publish-ms MS] [--ack-timeout-ms MS]\n"
		"             [--meta-size BYTES] [--fresh] [--no-journal] [--prealloc]\n"
		"             [--cluster etcd://HOST:PORT[,HOST:PORT...]/NAME] [--drain]\n"
		"             [--cluster-advertise URI]\n"
		"             [--region-extension NAME|PATH] [--region-extension-config STRING]\n"
		"             [--memory-generation-poll-ms MS] [--memory-generation-grace-ms MS]\n"
		"             [--rdma-rights auto|extent-mr|trust-pool]\n"
		"             [--metrics-listen ADDR:PORT] [--metrics-remote] [--no-histograms]\n");
}

static int add_def(struct config_args *a, const char *key, size_t klen, const char *value)
{
	struct config_def *d;

	if (a->ndefs >= CONFIG_MAX_DEFINES || klen == 0 || klen >= sizeof(d->key))
		return -EINVAL;
	d = &a->defs[a->ndefs++];
	memcpy(d->key, key, klen);
	d->key[klen] = '\0';
	d->value = value;
	return 0;
}

static int add_define(struct config_args *a, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t klen;

	if (!eq)
		return -EINVAL;
	klen = (size_t)(eq - kv);
	while (klen && isspace((unsigned char)kv[klen - 1]))
		klen--;
	eq++;
	while (isspace((unsigned char)*eq))
		eq++;
	return add_def(a, kv, klen, eq);
}

static const struct option long_opts[] = {
	{ "pool", required_argument, NULL, 0 },
	{ "size", required_argument, NULL, 0 },
	{ "listen", required_argument, NULL, 0 },
	{ "eviction", required_argument, NULL, 0 },
	{ "grace", required_argument, NULL, 0 },
	{ "key-file", required_argument, NULL, 0 },
	{ "tls-cert", required_argument, NULL, 0 },
	{ "tls-key", required_argument, NULL, 0 },
	{ "tls-client-ca", required_argument, NULL, 0 },
	{ "max-conns", required_argument, NULL, 0 },
	{ "max-frame", required_argument, NULL, 0 },
	{ "handshake-timeout-ms", required_argument, NULL, 0 },
	{ "handshake-max", required_argument, NULL, 0 },
	{ "handshake-per-source", required_argument, NULL, 0 },
	{ "max-leases", required_argument, NULL, 0 },
	{ "max-pending", required_argument, NULL, 0 },
	{ "pidfile", required_argument, NULL, 0 },
	{ "ack-timeout-publish-ms", required_argument, NULL, 0 },
	{ "ack-timeout-ms", required_argument, NULL, 0 },
	{ "meta-size", required_argument, NULL, 0 },
	{ "fresh", no_argument, NULL, 0 },
	{ "no-journal", no_argument, NULL, 0 },
	{ "prealloc", no_argument, NULL, 0 },
	{ "region-extension", required_argument, NULL, 0 },
	{ "region-extension-config", required_argument, NULL, 0 },
	{ "memory-generation-poll-ms", required_argument, NULL, 0 },
	{ "memory-generation-grace-ms", required_argument, NULL, 0 },
	{ "rdma-rights", required_argument, NULL, 0 },
	{ "cluster", required_argument, NULL, 0 },
	{ "cluster-advertise", required_argument, NULL, 0 },
	{ "drain", no_argument, NULL, 0 },
	{ "metrics-listen", required_argument, NULL, 0 },
	{ "metrics-remote", no_argument, NULL, 0 },
	{ "no-histograms", no_argument, NULL, 0 },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int config_parse_args(int argc, char **argv, struct config_args *a)
{
	int ch, idx, rc = 0;

	memset(a, 0, sizeof(*a));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "dnvf:D:h", long_opts, &idx)) != -1) {
		switch (ch) {
		case 0:
			/* The flags are their config keys with a fixed value. */
			if (!strcmp(long_opts[idx].name, "fresh"))
				rc = add_def(a, "fresh", 5, "yes");
			else if (!strcmp(long_opts[idx].name, "drain"))
				rc = add_def(a, "drain", 5, "yes");
			else if (!strcmp(long_opts[idx].name, "prealloc"))
				rc = add_def(a, "prealloc", 8, "yes");
			else if (!strcmp(long_opts[idx].name, "no-journal"))
				rc = add_def(a, "journal", 7, "no");
			else if (!strcmp(long_opts[idx].name, "metrics-remote"))
				rc = add_def(a, "metrics-remote", 14, "yes");
			else if (!strcmp(long_opts[idx].name, "no-histograms"))
				rc = add_def(a, "histograms", 10, "no");
			else
				rc = add_def(a, long_opts[idx].name,
					     strlen(long_opts[idx].name), optarg);
			break;
		case 'd':
			a->foreground = 1;
			break;
		case 'n':
			a->check_only = 1;
			break;
		case 'v':
			a->verbose++;
			break;
		case 'f':
			a->file = optarg;
			break;
		case 'D':
			rc = add_define(a, optarg);
			if (rc)
				fprintf(stderr, "marud: -D wants key=value: '%s'\n", optarg);
			break;
		case 'h':
			config_usage(stdout);
			return 1;
		default:
			rc = -EINVAL;
		}
		if (rc)
			break;
	}
	if (!rc && optind < argc)
		rc = -EINVAL;
	if (rc)
		config_usage(stderr);
	return rc;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/config.c: marud's configuration. It owns the defaults, the
 * command-line grammar, the `key = value` file format (keys are the long
 * option names, '-' or '_'), the layering (defaults < file < command line),
 * the checks that refuse an unsafe setup (key file mode, non-loopback TCP
 * without a key), the -n summary and the SIGHUP comparison. Nothing here
 * opens the pool or a socket.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "conf.h"
#include "config.h"
#include "rdma.h"
#include "log.h"
#include "proto.h"
#include "addr.h"
#include "parse.h"

#define LAYER_FILE	1
#define LAYER_CMDLINE	2
#define KEY_FILE_MAX	(64U << 10)	/* same bound as libmaru */

typedef int (*config_setter)(struct config *c, const char *v, int layer);

struct config_key {
	const char *name;
	config_setter set;
};

static void errf(FILE *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void errf(FILE *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputc('\n', err);
}

static int set_string(char *dst, size_t cap, const char *v)
{
	size_t n = strlen(v);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, v, n + 1);
	return 0;
}

static int set_pool(struct config *c, const char *v, int layer)
{
	static const char *const schemes[] = { "shm:", "file:", "dax:" };
	size_t i;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i]);

		if (!strncmp(v, schemes[i], n) && v[n])
			return set_string(c->pool, sizeof(c->pool), v);
	}
	return -EINVAL;
}

static int set_size(struct config *c, const char *v, int layer)
{
	return parse_size(v, &c->size);
}

static int set_listen(struct config *c, const char *v, int layer)
{
	if (strncmp(v, "unix:", 5) && strncmp(v, "tcp://", 6) && strncmp(v, "rdma://", 7))
		return -EINVAL;
	/* A layer that names listen addresses replaces the lower layer's list. */
	if (c->listen_layer != layer) {
		c->nlisten = 0;
		c->listen_layer = layer;
	}
	if (c->nlisten >= CONFIG_MAX_LISTEN)
		return -E2BIG;
	if (set_string(c->listen[c->nlisten], sizeof(c->listen[0]), v))
		return -ENAMETOOLONG;
	c->nlisten++;
	return 0;
}

static int set_eviction(struct config *c, const char *v, int layer)
{
	if (!strcmp(v, "lru"))
		c->eviction = DIR_EVICT_LRU;
	else if (!strcmp(v, "none"))
		c->eviction = DIR_EVICT_NONE;
	else
		return -EINVAL;
	return 0;
}

/* Seconds with up to three decimals ("30", "0.25"), kept in milliseconds. */
static int set_grace(struct config *c, const char *v, int layer)
{
	uint64_t ms = 0;
	const char *p = v;
	int frac = -1;

	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		if (*p == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (!isdigit((unsigned char)*p) || frac >= 3)
			return -EINVAL;
		if (ms > UINT64_MAX / 10 - 10)
			return -ERANGE;
		ms = ms * 10 + (uint64_t)(*p - '0');
		if (frac >= 0)
			frac++;
	}
	for (frac = frac < 0 ? 0 : frac; frac < 3; frac++) {
		if (ms > UINT64_MAX / 10)
			return -ERANGE;
		ms *= 10;
	}
	if (ms > 365ULL * 86400 * 1000)
		return -ERANGE;
	c->grace_ms = ms;
	return 0;
}

static int set_key_file(struct config *c, const char *v, int layer)
{
	return set_string(c->key_file, sizeof(c->key_file), v);
}

static int set_pidfile(struct config *c, const char *v, int layer)
{
	return set_string(c->pidfile, sizeof(c->pidfile), v);
}

static int parse_ranged(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	int rc = parse_u64(v, out);

	if (rc)
		return rc;
	return *out < lo || *out > hi ? -ERANGE : 0;
}

static int set_max_conns(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 1, 1000000, &n);

	if (!rc)
		c->max_conns = (uint32_t)n;
	return rc;
}

static int set_max_frame(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_size(v, &n);

	if (rc)
		return rc;
	/* Below 64 KiB a HELLO reply or a modest READDIR would not fit. */
	if (n < (64U << 10) || n > (1ULL << 30))
		return -ERANGE;
	c->max_frame = (uint32_t)n;
	return 0;
}

static int set_max_leases(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, UINT32_MAX, &n);

	if (!rc)
		c->max_leases = (uint32_t)n;
	return rc;
}

static int set_max_pending(struct config *c, const char *v, int layer)
{
	return parse_size(v, &c->max_pending);
}

/* Milliseconds a change waits for other subscribers' acks (0: none). */
static int set_ack_publish_ms(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 60000, &n);

	if (!rc)
		c->ack_publish_ms = (uint32_t)n;
	return rc;
}

static int set_ack_ms(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 60000, &n);

	if (!rc)
		c->ack_ms = (uint32_t)n;
	return rc;
}

static int set_verbose(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 9, &n);

	if (!rc)
		c->verbose = (int)n;
	return rc;
}

static int parse_yesno(const char *v, int *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcmp(v, yes[i]) || !strcmp(v, no[i])) {
			*out = !strcmp(v, yes[i]);
			return 0;
		}
	}
	return -EINVAL;
}

static int set_fresh(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->fresh);
}

static int set_prealloc(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->prealloc);
}

static int set_journal(struct config *c, const char *v, int layer)
{
	return parse_yesno(v, &c->journal);
}

static int set_meta_size(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_size(v, &n);

	if (rc)
		return rc;
	/* Room for two halves of a few records each, and no more than 1 TiB. */
	if (n < (64u << 10) || n > (1ULL << 40))
		return -ERANGE;
	c->meta_size = n;
	return 0;
}

static int set_region_ext(struct config *c, const char *v, int layer)
{
	return set_string(c->region_ext, sizeof(c->region_ext), v);
}

static int set_region_ext_config(struct config *c, const char *v, int layer)
{
	return set_string(c->region_ext_config, sizeof(c->region_ext_config), v);
}

static int set_memgen_poll(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 10, 60000, &n);

	if (!rc)
		c->memgen_poll_ms = (uint32_t)n;
	return rc;
}

static int set_memgen_grace(struct config *c, const char *v, int layer)
{
	uint64_t n;
	int rc = parse_ranged(v, 0, 600000, &n);

	if (!rc)
		c->memgen_grace_ms = (uint32_t)n;
	return rc;
}

static const struct config_key config_keys[] = {
	{ "pool", set_pool },
	{ "size", set_size },
	{ "listen", set_listen },
	{ "eviction", set_eviction },
	{ "grace", set_grace },
	{ "key-file", set_key_file },
	{ "max-conns", set_max_conns },
	{ "max-frame", set_max_frame },
	{ "max-leases", set_max_leases },
	{ "max-pending", set_max_pending },
	{ "pidfile", set_pidfile },
	{ "verbose", set_verbose },
	{ "ack-timeout-publish-ms", set_ack_publish_ms },
	{ "ack-timeout-ms", set_ack_ms },
	{ "meta-size", set_meta_size },
	{ "fresh", set_fresh },
	{ "journal", set_journal },
	{ "prealloc", set_prealloc },
	{ "region-extension", set_region_ext },
	{ "region-extension-config", set_region_ext_config },
	{ "memory-generation-poll-ms", set_memgen_poll },
	{ "memory-generation-grace-ms", set_memgen_grace },
};

static void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	set_string(c->pool, sizeof(c->pool), CONFIG_DEFAULT_POOL);
	set_string(c->listen[0], sizeof(c->listen[0]), CONFIG_DEFAULT_UNIX);
	set_string(c->listen[1], sizeof(c->listen[1]), CONFIG_DEFAULT_TCP);
	c->nlisten = 2;
	c->eviction = DIR_EVICT_LRU;
	c->grace_ms = 30 * 1000;
	c->journal = 1;
	c->max_conns = 1024;
	c->max_frame = PROTO_MAX_FRAME;
	c->max_leases = 65536;
	c->max_pending = 0;
	c->ack_publish_ms = 1000;
	c->ack_ms = 50;
	c->memgen_poll_ms = 100;
	c->memgen_grace_ms = 2000;
}

int config_set(struct config *c, const char *key, const char *value, int layer)
{
	char norm[32];
	size_t i, n = strlen(key);

	if (n == 0 || n >= sizeof(norm))
		return -ENOENT;
	for (i = 0; i <= n; i++)
		norm[i] = key[i] == '_' ? '-' : key[i];
	for (i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++)
		if (!strcmp(norm, config_keys[i].name))
			return config_keys[i].set(c, value, layer);
	return -ENOENT;
}

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
		errf(err, "%s:%u: expected key = value", file, lineno);
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(key);
	val = trim(eq + 1);
	unquote(&val);
	rc = config_set(c, key, val, LAYER_FILE);
	if (rc == -ENOENT)
		errf(err, "%s:%u: unknown key '%s'", file, lineno, key);
	else if (rc)
		errf(err, "%s:%u: bad value '%s' for %s: %s", file, lineno, val, key,
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
		errf(err, "%s: %s", file, strerror(-rc));
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
		if (set_string(c->file, sizeof(c->file), a->file))
			return -ENAMETOOLONG;
		rc = config_read_file(c, a->file, err);
		if (rc)
			return rc;
	}
	for (i = 0; i < a->ndefs; i++) {
		rc = config_set(c, a->defs[i].key, a->defs[i].value, LAYER_CMDLINE);
		if (rc == -ENOENT)
			errf(err, "unknown option '%s'", a->defs[i].key);
		else if (rc)
			errf(err, "bad value '%s' for %s: %s", a->defs[i].value,
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
		"             [--max-leases N] [--max-pending BYTES] [--pidfile PATH]\n"
		"             [--ack-timeout-publish-ms MS] [--ack-timeout-ms MS]\n"
		"             [--meta-size BYTES] [--fresh] [--no-journal] [--prealloc]\n"
		"             [--region-extension NAME|PATH] [--region-extension-config STRING]\n"
		"             [--memory-generation-poll-ms MS] [--memory-generation-grace-ms MS]\n");
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
	{ "max-conns", required_argument, NULL, 0 },
	{ "max-frame", required_argument, NULL, 0 },
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
			else if (!strcmp(long_opts[idx].name, "prealloc"))
				rc = add_def(a, "prealloc", 8, "yes");
			else if (!strcmp(long_opts[idx].name, "no-journal"))
				rc = add_def(a, "journal", 7, "no");
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

static int ipv4_loopback(const char *host)
{
	struct in_addr a4;

	if (inet_pton(AF_INET, host, &a4) != 1)
		return -1;
	return (ntohl(a4.s_addr) >> 24) == 127;
}

static int ipv6_loopback(const char *host)
{
	struct in6_addr a6;

	if (inet_pton(AF_INET6, host, &a6) != 1)
		return -1;
	return IN6_IS_ADDR_LOOPBACK(&a6);
}

int config_host_is_loopback(const char *host)
{
	char h[256];
	size_t n = strlen(host);
	int r;

	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(h))
		return 0;
	memcpy(h, host, n);
	h[n] = '\0';
	r = ipv4_loopback(h);
	if (r >= 0)
		return r;
	r = ipv6_loopback(h);
	if (r >= 0)
		return r;
	/* Names: only "localhost" is trusted, never what a resolver says. */
	return !strcasecmp(h, "localhost");
}

int config_load_key(const char *path, uint8_t key[CONFIG_KEY_BYTES], FILE *err)
{
	struct stat st;
	uint8_t *buf;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		errf(err, "key file %s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		errf(err, "key file %s: %s", path, strerror(-rc));
		goto out_close;
	}
	rc = -EPERM;
	if (!S_ISREG(st.st_mode)) {
		errf(err, "key file %s: not a regular file; refusing to start", path);
		goto out_close;
	}
	if (st.st_mode & 077) {
		errf(err, "key file %s: mode %04o gives group/other access; "
		     "it must be 0600: refusing to start", path,
		     (unsigned int)(st.st_mode & 07777));
		goto out_close;
	}
	rc = -EINVAL;
	if (st.st_size <= 0 || st.st_size > KEY_FILE_MAX) {
		errf(err, "key file %s: empty or larger than 64 KiB", path);
		goto out_close;
	}
	buf = malloc((size_t)st.st_size);
	rc = -ENOMEM;
	if (!buf)
		goto out_close;
	rc = (int)read(fd, buf, (size_t)st.st_size);
	if (rc != (int)st.st_size) {
		rc = rc < 0 ? -errno : -EIO;
		errf(err, "key file %s: short read", path);
		goto out_free;
	}
	crypto_generichash(key, CONFIG_KEY_BYTES, buf, (unsigned long long)st.st_size,
			   NULL, 0);
	rc = 0;
out_free:
	sodium_memzero(buf, (size_t)st.st_size);
	free(buf);
out_close:
	close(fd);
	return rc;
}

static int validate_listen(const char *uri, int have_key, FILE *err)
{
	struct maru_addr a;
	int rc = rdma_uri(uri, a.host, sizeof(a.host), &a.port);

	a.unix = 0;
	if (rc == 0)
		rc = addr_parse(uri, &a);
	else
		rc = rc < 0 ? rc : (HAVE_RDMA ? 0 : -EOPNOTSUPP);
	if (rc) {
		errf(err, "listen %s: not unix:PATH, tcp://ADDR:PORT or rdma://ADDR:PORT%s",
		     uri, rc == -EOPNOTSUPP ? " (marud built without RDMA)" : "");
		return rc;
	}
	if (a.unix || have_key)
		return 0;
	if (!config_host_is_loopback(a.host)) {
		errf(err, "listen %s: not a loopback address and no key-file is "
		     "configured; refusing to serve it", uri);
		return -EPERM;
	}
	return 0;
}

int config_validate(const struct config *c, uint8_t key[CONFIG_KEY_BYTES],
		    int *have_key, FILE *err)
{
	unsigned int i;
	int rc;

	*have_key = 0;
	if (c->key_file[0]) {
		rc = config_load_key(c->key_file, key, err);
		if (rc)
			return rc;
		*have_key = 1;
	}
	if (c->nlisten == 0) {
		errf(err, "no listen address");
		return -EINVAL;
	}
	for (i = 0; i < c->nlisten; i++) {
		rc = validate_listen(c->listen[i], *have_key, err);
		if (rc)
			return rc;
	}
	return 0;
}

const char *config_eviction_name(enum dir_eviction e)
{
	return e == DIR_EVICT_NONE ? "none" : "lru";
}

void config_print(const struct config *c, FILE *out)
{
	unsigned int i;

	fprintf(out, "config file: %s\n", c->file[0] ? c->file : "(none)");
	fprintf(out, "pool: %s\n", c->pool);
	if (c->size)
		fprintf(out, "size: %llu bytes\n", (unsigned long long)c->size);
	else
		fprintf(out, "size: backend default\n");
	for (i = 0; i < c->nlisten; i++)
		fprintf(out, "listen: %s\n", c->listen[i]);
	fprintf(out, "eviction: %s\n", config_eviction_name(c->eviction));
	fprintf(out, "grace: %llu.%03llu s\n", (unsigned long long)(c->grace_ms / 1000),
		(unsigned long long)(c->grace_ms % 1000));
	fprintf(out, "key-file: %s\n", c->key_file[0] ? c->key_file :
		"(none: serving only loopback and unix sockets)");
	fprintf(out, "max-conns: %u\n", c->max_conns);
	fprintf(out, "max-frame: %u bytes\n", c->max_frame);
	fprintf(out, "max-leases: %u per session%s\n", c->max_leases,
		c->max_leases ? "" : " (unlimited)");
	fprintf(out, "max-pending: %llu bytes per session%s\n",
		(unsigned long long)c->max_pending, c->max_pending ? "" : " (unlimited)");
	fprintf(out, "pidfile: %s\n", c->pidfile[0] ? c->pidfile : "(none)");
	fprintf(out, "ack-timeout-publish-ms: %u\n", c->ack_publish_ms);
	fprintf(out, "ack-timeout-ms: %u\n", c->ack_ms);
	if (c->meta_size)
		fprintf(out, "meta-size: %llu bytes\n", (unsigned long long)c->meta_size);
	else
		fprintf(out, "meta-size: as the pool records (new pool: 1/32 of it, at most 2 GiB)\n");
	fprintf(out, "journal: %s%s\n", c->journal ? "yes" : "no",
		c->fresh ? " (fresh: start empty)" : "");
	fprintf(out, "prealloc: %s\n", c->prealloc ? "yes" : "no");
	fprintf(out, "region-extension: %s\n", c->region_ext[0] ? c->region_ext : "(none)");
	if (c->region_ext[0])
		fprintf(out, "region-extension-config: %s\n"
			"memory-generation-poll-ms: %u\nmemory-generation-grace-ms: %u\n",
			c->region_ext_config, c->memgen_poll_ms, c->memgen_grace_ms);
	fprintf(out, "verbose: %d\n", c->verbose);
}

static int listen_differs(const struct config *a, const struct config *b)
{
	unsigned int i;

	if (a->nlisten != b->nlisten)
		return 1;
	for (i = 0; i < a->nlisten; i++)
		if (strcmp(a->listen[i], b->listen[i]))
			return 1;
	return 0;
}

static int restart_needed(const char *what, int differs)
{
	if (differs)
		log_warnx("reload: %s changed; it takes effect only after a restart", what);
	return differs;
}

int config_diff_log(const struct config *o, const struct config *n)
{
	int restart = 0;

	if (o->verbose != n->verbose)
		log_info("reload: verbose %d -> %d", o->verbose, n->verbose);
	if (o->grace_ms != n->grace_ms)
		log_info("reload: grace %llu ms -> %llu ms",
			 (unsigned long long)o->grace_ms, (unsigned long long)n->grace_ms);
	if (o->max_conns != n->max_conns)
		log_info("reload: max-conns %u -> %u", o->max_conns, n->max_conns);
	if (o->max_frame != n->max_frame)
		log_info("reload: max-frame %u -> %u", o->max_frame, n->max_frame);
	if (o->ack_publish_ms != n->ack_publish_ms)
		log_info("reload: ack-timeout-publish-ms %u -> %u", o->ack_publish_ms,
			 n->ack_publish_ms);
	if (o->ack_ms != n->ack_ms)
		log_info("reload: ack-timeout-ms %u -> %u", o->ack_ms, n->ack_ms);
	restart += restart_needed("eviction", o->eviction != n->eviction);
	restart += restart_needed("max-leases", o->max_leases != n->max_leases);
	restart += restart_needed("max-pending", o->max_pending != n->max_pending);
	restart += restart_needed("pool", strcmp(o->pool, n->pool) != 0);
	restart += restart_needed("size", o->size != n->size);
	restart += restart_needed("meta-size", o->meta_size != n->meta_size);
	restart += restart_needed("journal", o->journal != n->journal);
	restart += restart_needed("prealloc", o->prealloc != n->prealloc);
	restart += restart_needed("region-extension",
				  strcmp(o->region_ext, n->region_ext) != 0 ||
				  strcmp(o->region_ext_config, n->region_ext_config) != 0);
	restart += restart_needed("listen", listen_differs(o, n));
	restart += restart_needed("key-file", strcmp(o->key_file, n->key_file) != 0);
	restart += restart_needed("pidfile", strcmp(o->pidfile, n->pidfile) != 0);
	return restart;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fs/opts.c: the marufs command line: `marufs [options] POOL MOUNTPOINT`
 * (also as mount.fuse3 passes it from fstab) parsed with libfuse's option
 * parser into struct mfs_opts, the help text of marufs's options, the
 * arguments every mount adds for libfuse, and the words of data= and
 * coherence= as libmaru's values. Kept apart from mfs.c so that the unit
 * tests parse command lines without mounting.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

enum { KEY_HELP, KEY_VERSION };

#define MOPT(t, p) { t, offsetof(struct mfs_opts, p), 1 }

static const struct fuse_opt mfs_optspec[] = {
	MOPT("data=%s", data),
	MOPT("coherence=%s", coherence),
	MOPT("key_file=%s", key_file),
	MOPT("tls_ca=%s", tls_ca),
	MOPT("tls_cert=%s", tls_cert),
	MOPT("tls_key=%s", tls_key),
	MOPT("timeout_ms=%u", timeout_ms),
	MOPT("entry_timeout=%lf", entry_timeout),
	MOPT("attr_timeout=%lf", attr_timeout),
	MOPT("negative_timeout=%lf", negative_timeout),
	MOPT("max_conns=%u", max_conns),
	MOPT("stream_bytes=%zu", stream_bytes),
	MOPT("spin_us=%d", spin_us),
	MOPT("logfile=%s", logfile),
	MOPT("lookup_hints=%s", lookup_hints),
	MOPT("metrics=%s", metrics),
	MOPT("metrics_remote", metrics_remote),
	MOPT("histograms=%d", histograms),
	MOPT("readahead_kb=%u", readahead_kb),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	/* fstab-only options that may reach us past mount.fuse3 */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

void opts_usage(const char *prog)
{
	printf("usage: %s [options] POOL MOUNTPOINT\n"
	       "POOL is maru://host[:port], maru+unix:///path/to/marud.sock, or a\n"
	       "cluster of pools, maru+etcd://host:port[,host:port...]/NAME\n\n"
	       "marufs options:\n"
	       "    -o data=auto|shm|tcp|rdma   data path (default auto)\n"
	       "    -o coherence=hw|flush       flush=non-coherent shared CXL memory (hw)\n"
	       "    -o key_file=PATH            shared secret for marud (mode 0600)\n"
	       "    -o tls_ca=PATH              TLS 1.3 to marud: the CA of its certificate\n"
	       "    -o tls_cert=PATH,tls_key=PATH  client certificate (mutual TLS)\n"
	       "    -o timeout_ms=N             bound on one call while marud is down (5000)\n"
	       "    -o max_conns=N              control sockets for parallel calls (4)\n"
	       "    -o stream_bytes=N           data=tcp: bytes read ahead/written behind (64 MiB)\n"
	       "    -o spin_us=N                poll for marud's reply this long first (0: never)\n"
	       "    -o entry_timeout=SECS       cache of positive names (%.0f)\n"
	       "    -o attr_timeout=SECS        cache of attributes (%.0f)\n"
	       "    -o negative_timeout=SECS    cache of missing names (%.0f)\n"
	       "    -o logfile=PATH             log there (appended; SIGUSR1 reopens)\n"
	       "    -o lookup_hints=on|off      first lookup of a name is a read hint (on)\n"
	       "    -o metrics=ADDR:PORT        serve GET /metrics there (loopback only unless\n"
	       "                                -o metrics_remote is given too)\n"
	       "    -o histograms=0|1           latency histograms (1)\n"
	       "    -o readahead_kb=N           kernel read-ahead of the mount (%u; 0: the kernel's)\n"
	       "    -h, --help                  this text\n"
	       "    -V, --version               print versions\n\n",
	       prog, DEFAULT_ENTRY_TIMEOUT, DEFAULT_ATTR_TIMEOUT, DEFAULT_NEG_TIMEOUT,
	       DEFAULT_READAHEAD_KB);
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct mfs_opts *o = data;

	switch (key) {
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		/* the first non-option is the pool; the mountpoint goes on to libfuse */
		if (!o->pool) {
			o->pool = strdup(arg);
			return o->pool ? 0 : -1;
		}
		return 1;
	}
	return 1;
}

int opts_parse(struct fuse_args *args, struct mfs_opts *o)
{
	o->entry_timeout = DEFAULT_ENTRY_TIMEOUT;
	o->attr_timeout = DEFAULT_ATTR_TIMEOUT;
	o->negative_timeout = DEFAULT_NEG_TIMEOUT;
	o->histograms = 1;
	o->readahead_kb = DEFAULT_READAHEAD_KB;
	return fuse_opt_parse(args, o, mfs_optspec, opt_proc) < 0 ? -1 : 0;
}

int opts_mount_args(const struct mfs_opts *o, struct fuse_args *args)
{
	char *fsname;
	size_t len;
	int rc = 0;

	if (fuse_opt_add_arg(args, "-odefault_permissions") < 0 ||
	    fuse_opt_add_arg(args, "-osubtype=marufs") < 0)
		return -ENOMEM;
	if (strchr(o->pool, ',') || strchr(o->pool, '\\'))
		return 0;	/* would need escaping; the default fsname will do */
	len = strlen(o->pool) + sizeof("-ofsname=");
	fsname = malloc(len);
	if (!fsname)
		return -ENOMEM;
	snprintf(fsname, len, "-ofsname=%s", o->pool);
	if (fuse_opt_add_arg(args, fsname) < 0)
		rc = -ENOMEM;
	free(fsname);
	return rc;
}

static const struct {
	const char *name;
	enum maru_data_path path;
} data_paths[] = {
	{ "auto", MARU_DATA_AUTO }, { "shm", MARU_DATA_SHM },
	{ "tcp", MARU_DATA_TCP }, { "rdma", MARU_DATA_RDMA },
};

const char *opts_data_path_name(enum maru_data_path p)
{
	size_t i;

	for (i = 0; i < sizeof(data_paths) / sizeof(data_paths[0]); i++)
		if (data_paths[i].path == p)
			return data_paths[i].name;
	return "unknown";
}

int opts_data_path(const char *s, enum maru_data_path *out)
{
	size_t i;

	if (!s) {
		*out = MARU_DATA_AUTO;
		return 0;
	}
	for (i = 0; i < sizeof(data_paths) / sizeof(data_paths[0]); i++) {
		if (strcmp(s, data_paths[i].name) == 0) {
			*out = data_paths[i].path;
			return 0;
		}
	}
	return -EINVAL;
}

/* hw: coherent memory or the pool node itself; flush: non-coherent CXL. */
int opts_coherence(const char *s, enum maru_coherence *out)
{
	if (!s || strcmp(s, "hw") == 0)
		*out = MARU_COHERENCE_HW;
	else if (strcmp(s, "flush") == 0)
		*out = MARU_COHERENCE_FLUSH;
	else
		return -EINVAL;
	return 0;
}

void opts_free(struct mfs_opts *o)
{
	free(o->pool);
	free(o->data);
	free(o->coherence);
	free(o->key_file);
	free(o->tls_ca);
	free(o->tls_cert);
	free(o->tls_key);
	free(o->logfile);
	free(o->lookup_hints);
	free(o->metrics);
}

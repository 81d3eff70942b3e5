// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/fs/opts_test.c: the marufs command line (fs/opts.c, what
 * fs/mfs.c parses with): the timeouts' defaults; every -o option into its
 * field; the first non-option is the pool and the mountpoint stays for
 * libfuse with libfuse's own options; fstab-only words are dropped; -h and
 * -V only set their flags; the arguments every mount adds (fsname only for
 * a pool that needs no escaping); data= and coherence= words as libmaru's
 * values, NULL as the default, anything else EINVAL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "opts.h"

/* Parse argv (NULL-terminated) into o; args keeps what libfuse gets. */
static int parse(char **argv, struct fuse_args *args, struct mfs_opts *o)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	memset(o, 0, sizeof(*o));
	*args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	return opts_parse(args, o);
}

/* Does any argument left for libfuse contain s? */
static int args_have(const struct fuse_args *args, const char *s)
{
	int i;

	for (i = 0; i < args->argc; i++)
		if (strstr(args->argv[i], s))
			return 1;
	return 0;
}

static void test_defaults(void **state)
{
	char *argv[] = { "marufs", "maru+unix:///run/marud.sock", "/mnt/m", NULL };
	struct fuse_args args;
	struct mfs_opts o;

	assert_int_equal(parse(argv, &args, &o), 0);
	assert_string_equal(o.pool, "maru+unix:///run/marud.sock");
	assert_true(o.entry_timeout == DEFAULT_ENTRY_TIMEOUT);
	assert_true(o.attr_timeout == DEFAULT_ATTR_TIMEOUT);
	assert_true(o.negative_timeout == DEFAULT_NEG_TIMEOUT);
	assert_null(o.data);
	assert_null(o.lookup_hints);
	assert_null(o.metrics);
	assert_int_equal(o.metrics_remote, 0);
	assert_int_equal(o.histograms, 1);
	assert_int_equal(o.timeout_ms, 0);
	assert_int_equal(o.show_help, 0);
	assert_int_equal(args.argc, 2);	/* program and mountpoint */
	assert_string_equal(args.argv[1], "/mnt/m");
	opts_free(&o);
	fuse_opt_free_args(&args);
}

static void test_every_option(void **state)
{
	char *argv[] = { "marufs", "-o",
		"data=shm,coherence=flush,key_file=/etc/k,timeout_ms=7,max_conns=3,spin_us=5",
		"-ostream_bytes=1048576",
		"-o", "entry_timeout=1.5,attr_timeout=2.5,negative_timeout=0,logfile=l.log",
		"-olookup_hints=off,ro,defaults,_netdev,nofail,noauto,user",
		"-ometrics=0.0.0.0:9465,metrics_remote,histograms=0",
		"maru://host:9", "/mnt/m", "-f", NULL };
	struct fuse_args args;
	struct mfs_opts o;

	assert_int_equal(parse(argv, &args, &o), 0);
	assert_string_equal(o.data, "shm");
	assert_string_equal(o.coherence, "flush");
	assert_string_equal(o.key_file, "/etc/k");
	assert_int_equal(o.timeout_ms, 7);
	assert_int_equal(o.max_conns, 3);
	assert_int_equal(o.spin_us, 5);
	assert_int_equal(o.stream_bytes, 1048576);
	assert_true(o.entry_timeout == 1.5);
	assert_true(o.attr_timeout == 2.5);
	assert_true(o.negative_timeout == 0);
	assert_string_equal(o.logfile, "l.log");
	assert_string_equal(o.lookup_hints, "off");
	assert_string_equal(o.metrics, "0.0.0.0:9465");
	assert_int_equal(o.metrics_remote, 1);
	assert_int_equal(o.histograms, 0);
	assert_string_equal(o.pool, "maru://host:9");
	/* libfuse's own options go on; marufs's and fstab's do not */
	assert_true(args_have(&args, "ro"));
	assert_true(args_have(&args, "-f"));
	assert_true(args_have(&args, "/mnt/m"));
	assert_false(args_have(&args, "defaults"));
	assert_false(args_have(&args, "_netdev"));
	assert_false(args_have(&args, "nofail"));
	assert_false(args_have(&args, "user"));
	assert_false(args_have(&args, "data="));
	assert_false(args_have(&args, "metrics"));
	assert_false(args_have(&args, "maru://"));
	opts_free(&o);
	fuse_opt_free_args(&args);
}

static void test_help_version(void **state)
{
	char *help[] = { "marufs", "--help", NULL };
	char *ver[] = { "marufs", "-V", NULL };
	struct fuse_args args;
	struct mfs_opts o;

	assert_int_equal(parse(help, &args, &o), 0);
	assert_int_equal(o.show_help, 1);
	assert_int_equal(o.show_version, 0);
	assert_null(o.pool);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(ver, &args, &o), 0);
	assert_int_equal(o.show_version, 1);
	assert_int_equal(o.show_help, 0);
	fuse_opt_free_args(&args);
	/* a bad number is the parser's error */
	{
		char *bad[] = { "marufs", "-o", "timeout_ms=lots", "p", "/m", NULL };
		char *bad2[] = { "marufs", "-o", "stream_bytes=lots", "p", "/m", NULL };

		assert_int_equal(parse(bad, &args, &o), -1);
		opts_free(&o);
		fuse_opt_free_args(&args);
		assert_int_equal(parse(bad2, &args, &o), -1);
		opts_free(&o);
		fuse_opt_free_args(&args);
	}
}

static void test_mount_args(void **state)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct mfs_opts o = { .pool = "maru://h:1" };

	assert_int_equal(opts_mount_args(&o, &args), 0);
	assert_int_equal(args.argc, 3);
	assert_string_equal(args.argv[0], "-odefault_permissions");
	assert_string_equal(args.argv[1], "-osubtype=marufs");
	assert_string_equal(args.argv[2], "-ofsname=maru://h:1");
	fuse_opt_free_args(&args);
	o.pool = "maru://a,b";
	assert_int_equal(opts_mount_args(&o, &args), 0);
	assert_int_equal(args.argc, 2);
	assert_false(args_have(&args, "fsname"));
	fuse_opt_free_args(&args);
	o.pool = "maru+unix:///x\\y";
	assert_int_equal(opts_mount_args(&o, &args), 0);
	assert_int_equal(args.argc, 2);
	fuse_opt_free_args(&args);
}

static void test_words(void **state)
{
	enum maru_data_path p = MARU_DATA_TCP;
	enum maru_coherence c = MARU_COHERENCE_FLUSH;

	assert_int_equal(opts_data_path(NULL, &p), 0);
	assert_int_equal(p, MARU_DATA_AUTO);
	assert_int_equal(opts_data_path("shm", &p), 0);
	assert_int_equal(p, MARU_DATA_SHM);
	assert_int_equal(opts_data_path("tcp", &p), 0);
	assert_int_equal(p, MARU_DATA_TCP);
	assert_int_equal(opts_data_path("rdma", &p), 0);
	assert_int_equal(p, MARU_DATA_RDMA);
	assert_int_equal(opts_data_path("auto", &p), 0);
	assert_int_equal(p, MARU_DATA_AUTO);
	assert_int_equal(opts_data_path("SHM", &p), -EINVAL);
	assert_int_equal(opts_data_path("", &p), -EINVAL);
	assert_int_equal(opts_coherence(NULL, &c), 0);
	assert_int_equal(c, MARU_COHERENCE_HW);
	assert_int_equal(opts_coherence("flush", &c), 0);
	assert_int_equal(c, MARU_COHERENCE_FLUSH);
	assert_int_equal(opts_coherence("hw", &c), 0);
	assert_int_equal(c, MARU_COHERENCE_HW);
	assert_int_equal(opts_coherence("sw", &c), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_option),
		cmocka_unit_test(test_help_version),
		cmocka_unit_test(test_mount_args),
		cmocka_unit_test(test_words),
	};

	return cmocka_run_group_tests_name("fs/opts", tests, NULL, NULL);
}

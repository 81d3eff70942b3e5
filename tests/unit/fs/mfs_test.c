/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/mfs_test.c: the mount context's life (fs/mfs.c) short of
 * mounting: the command line (go on, --help, usage errors); the client's
 * options from -o options (every field, the lease cache on, the words and
 * ranges refused); the log file's path made absolute and a log file that
 * cannot be opened failing the start; every table built and torn down to
 * NULL; a generation change moving the epoch and counted once the
 * notifier ran it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake.h"
#include "mfs.h"
#include "notify.h"
#include "opts.h"

static int cmdline(struct mfs *m, struct fuse_cmdline_opts *co, int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	int rc;

	memset(m, 0, sizeof(*m));
	memset(co, 0, sizeof(*co));
	rc = mfs_cmdline(m, &args, co);
	fuse_opt_free_args(&args);
	return rc;
}

static void done(struct mfs *m, struct fuse_cmdline_opts *co)
{
	free(co->mountpoint);
	opts_free(&m->o);
}

static void test_cmdline(void **state)
{
	char *ok[] = { "marufs", "-o", "data=tcp", "maru+unix:///s.sock", "/tmp", NULL };
	char *help[] = { "marufs", "--help", NULL };
	char *nomnt[] = { "marufs", "maru+unix:///s.sock", NULL };
	char *none[] = { "marufs", NULL };
	struct fuse_cmdline_opts co;
	struct mfs m;

	assert_int_equal(cmdline(&m, &co, 5, ok), -1);	/* go on mounting */
	assert_string_equal(m.o.pool, "maru+unix:///s.sock");
	assert_string_equal(m.o.mountpoint, "/tmp");	/* an existing directory */
	assert_ptr_equal(m.o.mountpoint, co.mountpoint);
	assert_string_equal(m.o.data, "tcp");
	done(&m, &co);
	assert_int_equal(cmdline(&m, &co, 2, help), 0);
	assert_true(m.o.show_help);
	done(&m, &co);
	assert_int_equal(cmdline(&m, &co, 2, nomnt), 2);
	done(&m, &co);
	assert_int_equal(cmdline(&m, &co, 1, none), 2);
	done(&m, &co);
}

static void test_client_opts(void **state)
{
	struct maru_client_opts co;
	char name[64];
	struct mfs m;

	memset(&m, 0, sizeof(m));
	m.o.pool = "maru+unix:///s.sock";
	m.o.mountpoint = "/mnt/x";
	m.o.key_file = "/etc/k";
	m.o.data = "shm";
	m.o.coherence = "flush";
	m.o.timeout_ms = 1234;
	m.o.max_conns = 3;
	m.o.spin_us = 50;
	assert_int_equal(mfs_client_opts(&m, &co, name, sizeof(name)), 0);
	assert_int_equal(co.opts_size, sizeof(co));
	assert_string_equal(co.uri, m.o.pool);
	assert_string_equal(co.key_file, "/etc/k");
	assert_int_equal(co.data_path, MARU_DATA_SHM);
	assert_int_equal(co.coherence, MARU_COHERENCE_FLUSH);
	assert_int_equal(co.timeout_ms, 1234);
	assert_int_equal(co.max_conns, 3);
	assert_int_equal(co.spin_us, 50);
	assert_int_equal(co.lease_cache, MFS_LEASE_CACHE);
	assert_non_null(co.log_fn);
	assert_ptr_equal(co.log_arg, &m);
	assert_string_equal(co.client_name, "marufs:/mnt/x");
	assert_ptr_equal(co.client_name, name);
	/* unset: libmaru's defaults stay */
	m.o.timeout_ms = m.o.max_conns = 0;
	m.o.data = m.o.coherence = NULL;
	assert_int_equal(mfs_client_opts(&m, &co, name, sizeof(name)), 0);
	assert_int_equal(co.coherence, MARU_COHERENCE_HW);
	assert_int_not_equal(co.timeout_ms, 0);
	assert_int_not_equal(co.max_conns, 0);
	/* refused */
	m.o.data = "nfs";
	assert_int_equal(mfs_client_opts(&m, &co, name, sizeof(name)), -EINVAL);
	m.o.data = NULL;
	m.o.coherence = "soft";
	assert_int_equal(mfs_client_opts(&m, &co, name, sizeof(name)), -EINVAL);
	m.o.coherence = NULL;
	m.o.spin_us = 10001;
	assert_int_equal(mfs_client_opts(&m, &co, name, sizeof(name)), -EINVAL);
	m.o.spin_us = -1;
	assert_int_equal(mfs_client_opts(&m, &co, name, sizeof(name)), -EINVAL);
}

static void test_logfile(void **state)
{
	char cwd[4096], want[4200], *p = NULL;
	struct mfs m;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(mfs_logfile_path("/var/log/m.log", &p), 0);
	assert_string_equal(p, "/var/log/m.log");
	free(p);
	assert_int_equal(mfs_logfile_path("m.log", &p), 0);
	snprintf(want, sizeof(want), "%s/m.log", cwd);
	assert_string_equal(p, want);	/* fuse_daemonize() goes to "/" */
	free(p);
	/* a log file that cannot be opened fails the mount command */
	memset(&m, 0, sizeof(m));
	m.o.logfile = "/nonexistent-dir-of-marufs/m.log";
	assert_int_equal(mfs_log_start(&m, 1, 0), -1);
	mfs_log_end();
}

static void test_tables(void **state)
{
	struct mfs m;

	memset(&m, 0, sizeof(m));
	m.o.attr_timeout = 1;
	assert_int_equal(mfs_tables_new(&m), 0);
	assert_non_null(m.tab);
	assert_non_null(m.pt);
	assert_non_null(m.dc);
	assert_non_null(m.da);
	assert_non_null(m.pins);
	assert_non_null(m.hr);
	assert_non_null(m.nt);
	assert_non_null(m.ring);
	assert_int_not_equal(m.mounted.tv_sec, 0);
	m.lc = (struct maru_client *)&m;	/* any client: dropped with the files */
	mfs_tables_drop_files(&m);
	assert_null(m.lc);
	assert_null(m.tab);
	assert_null(m.pins);
	mfs_tables_free(&m);
	assert_null(m.pt);
	assert_null(m.nt);
	assert_null(m.ring);
	assert_null(m.dc);
	assert_null(m.da);
	assert_null(m.hr);
}

static void test_generation(void **state)
{
	struct timespec ts = { 0, 1000000 };
	struct mfs m;
	int i;

	fake_reset();
	fake_mount(&m);
	assert_int_equal(notify_start(m.nt), 0);
	m.generation = 4;
	mfs_on_generation(&m, 4, 5);
	assert_int_equal(m.generation, 5);
	assert_int_equal(mfs_epoch(&m), 1);	/* handles of epoch 0 fail now */
	for (i = 0; i < 5000 && !__atomic_load_n(&m.cnt.generations, __ATOMIC_ACQUIRE); i++)
		nanosleep(&ts, NULL);
	assert_int_equal(m.cnt.generations, 1);	/* counted once it ran */
	notify_stop(m.nt);
	fake_unmount(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmdline),
		cmocka_unit_test(test_client_opts),
		cmocka_unit_test(test_logfile),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_generation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

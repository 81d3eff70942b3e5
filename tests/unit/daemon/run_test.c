/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/run_test.c: marud's process life (daemon/run.c, what
 * main() calls): generations, the pidfile, the restart argv and the
 * re-exec mark, a SIGHUP reload that fails or applies, the signal loop on
 * a real server (SIGHUP reloads it, SIGUSR1 and a SIGUSR2 without a reset
 * are taken and ignored, SIGTERM ends it; SIGUSR2 after a reset ends it),
 * daemonizing (the waiting parent exits with the child's status byte, or 1
 * when the child never sends one), the -n summary, and run_serve() serving
 * on a unix socket in the foreground until SIGTERM, pidfile written and
 * removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "run.h"
#include "server_harness.h"
#include "server_priv.h"

static char tmpdir[64];

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	fclose(f);
}

static void test_generation(void **state)
{
	uint64_t a = run_new_generation(), b = run_new_generation();

	assert_true(a != 0);
	assert_true(b != 0);
	assert_true(a != b);
}

static void test_pidfile(void **state)
{
	char path[128], line[32], want[32];
	FILE *f;

	tmp_path(path, sizeof(path), "marud.pid");
	assert_int_equal(run_pidfile_write(path), 0);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	snprintf(want, sizeof(want), "%ld\n", (long)getpid());
	assert_string_equal(line, want);
	unlink(path);
	tmp_path(path, sizeof(path), "no/such/dir/marud.pid");
	assert_int_equal(run_pidfile_write(path), -ENOENT);
}

static void test_fresh_argv(void **state)
{
	char *argv1[] = { "marud", "-d", "-f", "x.conf" };
	char *argv2[] = { "marud", "--fresh", "-d" };
	char **nv;

	nv = run_fresh_argv(4, argv1);
	assert_non_null(nv);
	assert_string_equal(nv[0], "marud");
	assert_string_equal(nv[3], "x.conf");
	assert_string_equal(nv[4], "--fresh");
	assert_null(nv[5]);
	free(nv);
	nv = run_fresh_argv(3, argv2);
	assert_string_equal(nv[1], "--fresh");
	assert_string_equal(nv[2], "-d");
	assert_null(nv[3]);	/* not added twice */
	free(nv);
}

static void test_daemonized_mark(void **state)
{
	setenv("MARUD_DAEMONIZED", "1", 1);
	assert_int_equal(run_daemonized_already(), 1);
	assert_null(getenv("MARUD_DAEMONIZED"));	/* one use only */
	assert_int_equal(run_daemonized_already(), 0);
	setenv("MARUD_DAEMONIZED", "yes", 1);
	assert_int_equal(run_daemonized_already(), 0);
	assert_null(getenv("MARUD_DAEMONIZED"));
}

static void test_reload_config(void **state)
{
	struct config_args a = { 0 };
	struct config nc;
	char path[128];

	tmp_path(path, sizeof(path), "reload.conf");
	a.file = path;
	write_file(path, "max-conns = 77\ngrace = 5\n");
	assert_int_equal(run_reload_config(&a, &nc), 0);
	assert_int_equal(nc.max_conns, 77);
	assert_int_equal(nc.grace_ms, 5000);
	write_file(path, "max-conns = 77\nno-such-key = 1\n");
	assert_int_equal(run_reload_config(&a, &nc), -ENOENT);
	unlink(path);
	assert_int_equal(run_reload_config(&a, &nc), -ENOENT);
}

/*
 * The loop on a real server: SIGHUP reloads it from the file, SIGUSR1 and
 * a SIGUSR2 with no reset asked are taken and ignored, SIGTERM ends the
 * loop. (Linux hands pending signals to sigwaitinfo lowest number first:
 * HUP 1, USR1 10, USR2 12, TERM 15.)
 */
static void test_signal_loop(void **state)
{
	struct config_args a = { 0 };
	struct th t;
	sigset_t set;
	char path[128];

	tmp_path(path, sizeof(path), "loop.conf");
	write_file(path, "max-conns = 5\nmax-frame = 65536\nack-timeout-ms = 9\n");
	a.file = path;
	run_block_signals(&set);
	th_config(&t);
	assert_int_equal(th_new(&t, NULL), 0);
	assert_int_equal(atomic_load(&t.srv->max_conns), 16);
	pthread_kill(pthread_self(), SIGHUP);
	pthread_kill(pthread_self(), SIGUSR1);
	pthread_kill(pthread_self(), SIGUSR2);
	pthread_kill(pthread_self(), SIGTERM);
	run_signal_loop(t.srv, &a, &set, 1);
	assert_int_equal(atomic_load(&t.srv->max_conns), 5);
	assert_int_equal(atomic_load(&t.srv->max_frame), 65536);
	assert_int_equal(atomic_load(&t.srv->ack_ms), 9);
	assert_int_equal(server_reset_asked(t.srv), 0);

	/* A reset asked: SIGUSR2 ends the loop (main restarts marud). */
	atomic_store(&t.srv->reset, 1);
	pthread_kill(pthread_self(), SIGUSR2);
	run_signal_loop(t.srv, &a, &set, 1);
	assert_int_equal(server_reset_asked(t.srv), 1);
	assert_int_equal(th_free(&t), 0);
	unlink(path);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/*
 * Daemonize in a child: the child (the waiting parent) exits with the
 * status byte its own child sends, or 1 when none comes.
 */
static int daemonized_exit(int mode)
{
	int notify = -1, st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (run_daemonize(&notify) < 0)
			_exit(3);
		/* The daemon: its own session, cwd /. */
		if (getsid(0) != getpid() || access(".", F_OK) || notify < 0)
			_exit(4);
		if (mode == 0 || mode == 1)
			run_notify_parent(&notify, (char)mode);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_daemonize(void **state)
{
	assert_int_equal(daemonized_exit(0), 0);
	assert_int_equal(daemonized_exit(1), 1);
	assert_int_equal(daemonized_exit(2), 1);	/* never notified */
}

static void test_notify_once(void **state)
{
	int p[2], notify;
	char b = 9;

	assert_int_equal(pipe(p), 0);
	notify = p[1];
	run_notify_parent(&notify, 0);
	assert_int_equal(notify, -1);
	run_notify_parent(&notify, 1);	/* closed already: nothing */
	assert_int_equal(read(p[0], &b, 1), 1);
	assert_int_equal(b, 0);
	assert_int_equal(read(p[0], &b, 1), 0);	/* EOF: the write end is closed */
	close(p[0]);
}

static void test_check_only(void **state)
{
	struct config_args a = { 0 };
	struct config cfg;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	assert_int_equal(config_load(&a, &cfg, NULL), 0);
	snprintf(cfg.pool, sizeof(cfg.pool), "shm:marud-run-test-none-%ld", (long)getpid());
	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(run_check_only(&cfg, 0, out), 0);
	fclose(out);
	assert_non_null(strstr(text, "configuration OK (no key configured"));
	assert_non_null(strstr(text, "pool: shm:marud-run-test-none-"));
	assert_non_null(strstr(text, "a start creates the pool"));
	free(text);
}

struct stopper {
	pthread_t target;
	char sock[100];
	atomic_int served;
};

/* A connection to path, or -1 (no assert: not the test's thread). */
static int try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Wait until marud answers on its socket, then SIGTERM the serving thread. */
static void *stop_when_serving(void *arg)
{
	struct stopper *s = arg;
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	struct treply *r = malloc(sizeof(*r));
	int i, fd = -1;

	for (i = 0; r && i < 500 && fd < 0; i++) {
		fd = try_connect(s->sock);
		if (fd < 0)
			nanosleep(&ts, NULL);
	}
	/* Not th_call(): it asserts, and this is not the test's thread. */
	if (fd >= 0) {
		tc_send(fd, OP_PING, 1, 0, NULL, 0);
		if (tc_reply(fd, r, 5000) == 0 && r->h.op == OP_PING && r->h.reqid == 1 &&
		    r->h.status == 0)
			atomic_store(&s->served, 1);
	}
	if (fd >= 0)
		close(fd);
	free(r);
	pthread_kill(s->target, SIGTERM);
	return NULL;
}

static void test_serve_foreground(void **state)
{
	struct config_args a = { 0 };
	struct stopper s = { .target = pthread_self() };
	struct config cfg;
	struct th t;
	pthread_t th;
	sigset_t set;
	int cwd = -1;
	char pid[128], shm[96];

	th_config(&t);
	cfg = t.cfg;
	cfg.foreground = 1;
	tmp_path(s.sock, sizeof(s.sock), "serve.sock");
	tmp_path(pid, sizeof(pid), "serve.pid");
	cfg.nlisten = 1;
	snprintf(cfg.listen[0], sizeof(cfg.listen[0]), "unix:%s", s.sock);
	snprintf(cfg.pidfile, sizeof(cfg.pidfile), "%s", pid);
	/* The thread must not take SIGTERM itself: block it there too. */
	run_block_signals(&set);
	assert_int_equal(pthread_create(&th, NULL, stop_when_serving, &s), 0);
	assert_int_equal(run_serve(&a, &cfg, NULL, 0, &cwd), 0);
	pthread_join(th, NULL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	assert_int_equal(atomic_load(&s.served), 1);
	assert_true(cwd >= 0);
	close(cwd);
	assert_int_equal(access(pid, F_OK), -1);	/* removed at exit */
	assert_int_equal(access(s.sock, F_OK), -1);	/* unlinked at stop */
	snprintf(shm, sizeof(shm), "/dev/shm/%s", t.shm);
	unlink(shm);
}

static int group_setup(void **state)
{
	log_init("run_test", 1, 0);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/marud-run-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	return rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generation),
		cmocka_unit_test(test_pidfile),
		cmocka_unit_test(test_fresh_argv),
		cmocka_unit_test(test_daemonized_mark),
		cmocka_unit_test(test_reload_config),
		cmocka_unit_test(test_signal_loop),
		cmocka_unit_test(test_daemonize),
		cmocka_unit_test(test_notify_once),
		cmocka_unit_test(test_check_only),
		cmocka_unit_test(test_serve_foreground),
	};

	return cmocka_run_group_tests_name("run", tests, group_setup, group_teardown);
}

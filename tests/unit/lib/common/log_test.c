/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/log_test.c: the log line format and whole lines from
 * concurrent threads (common/log.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "failpoint.h"
#include "log.h"
#include "maru/libmaru.h"
#include "superblock.h"
#include "addr.h"
#include "clock.h"
#include "hash.h"
#include "parse.h"

static const char *capture_stderr(void (*fn)(void))
{
	static char out[4096];
	int p[2], saved;
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	fn();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = '\0';
	return out;
}

static void log_some(void)
{
	errno = EBUSY;
	log_warn(-ENOENT, "open %s", "x");
	log_warn(EACCES, "n=%d", 5);
	log_warnx("plain");
	log_debug("hidden %d", 1);
	log_set_verbose(1);
	log_debug("shown %d", 2);
	log_set_verbose(0);
	log_info("done");
	assert_int_equal(errno, EBUSY);
}

static void log_long(void)
{
	char big[5000];

	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_warn(EIO, "%s", big);
}

static void *log_thread(void *arg)
{
	int i;

	for (i = 0; i < 200; i++)
		log_info("thread %ld line %03d %s", (long)(intptr_t)arg, i,
			 "abcdefghijklmnopqrstuvwxyz");
	return NULL;
}

static void log_threads(void)
{
	pthread_t t[4];
	long i;

	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, log_thread, (void *)(intptr_t)i), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

/* Lines from concurrent threads arrive whole: one write() per line. */
static void test_log_threads(void **state)
{
	static char out[65536];
	int p[2], saved, lines = 0, t, n;
	const char *line;
	ssize_t got, total = 0;

	(void)state;
	log_init("utiltest", 1, 0);
	assert_int_equal(pipe(p), 0);
	saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	log_threads();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	while ((got = read(p[0], out + total, sizeof(out) - 1 - (size_t)total)) > 0)
		total += got;
	close(p[0]);
	out[total] = '\0';
	for (line = out; *line; line = strchr(line, '\n') + 1) {
		assert_int_equal(sscanf(line, "utiltest: thread %d line %d abcdefghijklmnopqrstuvwxyz%n",
					&t, &n, &n), 2);
		assert_int_equal(line[n], '\n');
		lines++;
	}
	assert_int_equal(lines, 800);
}

static void test_log(void **state)
{
	const char *out;

	(void)state;
	log_init("/usr/sbin/utiltest", 1, 0);
	assert_int_equal(log_get_verbose(), 0);
	out = capture_stderr(log_some);
	assert_string_equal(out,
		"utiltest: open x: No such file or directory\n"
		"utiltest: n=5: Permission denied\n"
		"utiltest: plain\n"
		"utiltest: shown 2\n"
		"utiltest: done\n");
	/* an overlong message is cut, but stays one line */
	out = capture_stderr(log_long);
	assert_true(strlen(out) > 1000 && strlen(out) < 4096);
	assert_int_equal(strncmp(out, "utiltest: zzz", 13), 0);
	assert_int_equal(out[strlen(out) - 1], '\n');
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log),
		cmocka_unit_test(test_log_threads),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}

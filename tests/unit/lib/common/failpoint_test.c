/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/common/failpoint_test.c: MARU_FAILPOINT parsing with every
 * action, abort and exit in forked children (common/failpoint.c).
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

#if HAVE_FAILPOINTS
/* Exit status of a child that hits name `hits` times. */
static int child_hits(const char *name, int hits)
{
	int i, status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		for (i = 0; i < hits; i++)
			failpoint_hit(name);
		_exit(42);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_failpoint(void **state)
{
	uint64_t t0;
	int status;

	(void)state;
	/* parsed once, at the first hit: everything is armed here */
	setenv("MARU_FAILPOINT",
	       "t_err=error:5,t_name=error:ENOSPC,t_neg=error:-7,t_nth=3*error:28,"
	       "t_sleep=sleep:30,t_bad=frobnicate,=error:5,t_zero=0*error:5,"
	       "t_exit=exit,t_abort=abort,t_abort2=2*abort,t_errbad=error:EWHAT,", 1);
	assert_int_equal(failpoint_hit("t_err"), -5);
	assert_int_equal(failpoint_hit("t_err"), -5);
	assert_int_equal(FAILPOINT("t_name"), -ENOSPC);
	assert_int_equal(failpoint_hit("t_neg"), -7);
	assert_int_equal(failpoint_hit("t_nth"), 0);
	assert_int_equal(failpoint_hit("t_nth"), 0);
	assert_int_equal(failpoint_hit("t_nth"), -28);
	assert_int_equal(failpoint_hit("t_nth"), 0);
	t0 = mono_ns();
	assert_int_equal(failpoint_hit("t_sleep"), 0);
	assert_true(mono_ns() - t0 >= 30000000ull);
	assert_int_equal(failpoint_hit("t_bad"), 0);
	assert_int_equal(failpoint_hit("t_zero"), 0);
	assert_int_equal(failpoint_hit("t_errbad"), 0);
	assert_int_equal(failpoint_hit("not_armed"), 0);
	assert_int_equal(failpoint_hit(""), 0);

	status = child_hits("t_exit", 1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	status = child_hits("t_abort", 1);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	status = child_hits("t_abort2", 1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 42);
	status = child_hits("t_abort2", 2);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}
#endif

int main(void)
{
#if HAVE_FAILPOINTS
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failpoint),
	};

	return cmocka_run_group_tests_name("failpoint", tests, NULL, NULL);
#else
	printf("skip: built without fail points (-Dfailpoints=false)\n");
	return 77;
#endif
}

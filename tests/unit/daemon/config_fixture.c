/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/config_fixture.c: what the tests of marud's
 * configuration share (config_test.c, config_parse_test.c,
 * config_check_test.c): a temp dir of config and key files, loading with
 * -D defines and the errors captured in errbuf.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"

#include "config_fixture.h"

char tmpdir[] = "/tmp/marud-config-test.XXXXXX";
char errbuf[4096];

/* Write text to tmpdir/name with mode; returns the path (static buffer). */
const char *write_file(const char *name, const char *text, mode_t mode)
{
	static char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

/* config_load of file (may be NULL) and -D defines; errors into errbuf. */
int load(const char *file, const char *const *defs, struct config *c)
{
	struct config_args a = { 0 };
	FILE *err = fmemopen(errbuf, sizeof(errbuf), "w");
	int rc;

	assert_non_null(err);
	memset(errbuf, 0, sizeof(errbuf));
	a.file = file;
	for (; defs && *defs; defs += 2) {
		snprintf(a.defs[a.ndefs].key, sizeof(a.defs[0].key), "%s", defs[0]);
		a.defs[a.ndefs++].value = defs[1];
	}
	rc = config_load(&a, c, err);
	fclose(err);
	return rc;
}

int config_fx_setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

int config_fx_teardown(void **state)
{
	static const char *const names[] = { "good.conf", "bad.conf", "o.conf", "key" };
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	return rmdir(tmpdir);
}

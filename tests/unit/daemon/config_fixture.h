/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/config_fixture.h: the helpers of the configuration's
 * tests (config_fixture.c).
 */
#ifndef TESTS_CONFIG_FIXTURE_H
#define TESTS_CONFIG_FIXTURE_H

#include <sys/types.h>

#include "conf.h"

extern char tmpdir[];
extern char errbuf[4096];

/* Write text to tmpdir/name with mode; returns the path (static buffer). */
const char *write_file(const char *name, const char *text, mode_t mode);
/* config_load of file (may be NULL) and -D defines; errors into errbuf. */
int load(const char *file, const char *const *defs, struct config *c);
int config_fx_setup(void **state);
int config_fx_teardown(void **state);

#endif

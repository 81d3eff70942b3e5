/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/config_priv.h: what the three files of marud's configuration
 * share and nothing else sees: the layers a value is set at, the defaults
 * (config.c) and the error printer that writes to an optional stream.
 */
#ifndef MARUD_CONFIG_PRIV_H
#define MARUD_CONFIG_PRIV_H

#include <stdio.h>

#include "conf.h"

#define LAYER_FILE	1
#define LAYER_CMDLINE	2

/* Reset c to the built-in defaults (the bottom layer). */
void config_defaults(struct config *c);
/* printf to err and a newline; nothing when err is NULL. */
void config_errf(FILE *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

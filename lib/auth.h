/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/auth.h: the shared-key file and the AUTH exchange with marud (mutual
 * proof of the key, see marufs-protocol(7)).
 */
#ifndef MARU_AUTH_H
#define MARU_AUTH_H

#include <stdint.h>

struct maru_client;

/* Read the key file at path (must be a private regular file) into key. */
int auth_load_key(const struct maru_client *c, const char *path, uint8_t key[32]);
/* Prove c's key to marud on fd and check marud's proof. -EACCES on mismatch. */
int auth_exchange(const struct maru_client *c, int fd);

#endif

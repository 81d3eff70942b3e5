/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/auth.h: the shared-key file and the AUTH exchange with marud (mutual
 * proof of the key, see marufs-protocol(7)).
 */
#ifndef MARU_AUTH_H
#define MARU_AUTH_H

#include <stdint.h>

struct maru_client;

/*
 * Read the key file at path (must be a private regular file) into key. A
 * file in the key file format (lib/common/keyfile.h) must hold one key:
 * its name goes to name ("" for an admin line), and AUTH then names it.
 * Any other file is the administrator's secret as a whole (name "").
 */
int auth_load_key(const struct maru_client *c, const char *path, uint8_t key[32],
		  char name[64]);
/* Prove c's key to marud on fd and check marud's proof. -EACCES on mismatch. */
int auth_exchange(const struct maru_client *c, int fd);

#endif

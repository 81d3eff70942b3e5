/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/certs.h: certificates for the TLS tests of lib/
 * (tlsdial_test, cluster/etcd_test), made with GnuTLS in a fresh temp dir:
 * ca and ca2 (a CA that signed nothing), srv (a server certificate for
 * 127.0.0.1 and ::1, signed by ca) and cli (a client certificate signed
 * by ca), each NAME.pem and NAME.key.
 */
#ifndef TEST_CERTS_H
#define TEST_CERTS_H

#include <stddef.h>

/* Make the dir (under /tmp, named after tag) and the certificates in it. */
void certs_make(char *dir, size_t cap, const char *tag);
/* dir/name into out. */
void certs_path(const char *dir, char *out, size_t len, const char *name);
/* The dir and all in it. */
void certs_remove(const char *dir);

#endif

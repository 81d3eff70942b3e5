/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/tlsdial.h: a client's TLS (lib/common/tls.c does the sessions): the
 * credentials from opts.tls_ca/tls_cert/tls_key, and the one call every
 * socket to marud (transport.c's and the tcp data path's) makes right
 * after connect, before AUTH.
 */
#ifndef MARU_TLSDIAL_H
#define MARU_TLSDIAL_H

#include <stdint.h>

struct maru_client;

/* maru_client_new: c's credentials if opts ask for TLS (0 when not). */
int tlsdial_init(struct maru_client *c);
void tlsdial_free(struct maru_client *c);
/*
 * fd just connected: with TLS, the descriptor of its session after the
 * handshake (by deadline, ended by the thread's cancel token), else fd.
 * On error fd is closed and -errno returned, the reason logged.
 */
int tlsdial_wrap(struct maru_client *c, int fd, uint64_t deadline);

/*
 * A socket that TLS let through ended with rc during AUTH or HELLO: the
 * error to report instead when marud's TLS refused us after the handshake
 * (-EACCES: our client certificate; said once), else rc.
 */
int tlsdial_ended(struct maru_client *c, int rc);

#endif

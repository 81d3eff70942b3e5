/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/srvtls.h: marud's side of TLS (lib/common/tls.h does the
 * sessions): the server certificate, key and optional client CA from the
 * configuration (tls-cert, tls-key, tls-client-ca), their reload on SIGHUP
 * (new connections take the new certificate, live ones keep theirs), and
 * the wrapping of each accepted TCP connection. Unix sockets stay clear.
 */
#ifndef MARUD_SRVTLS_H
#define MARUD_SRVTLS_H

struct server;
struct config;

/* Load cfg's certificate if it names one: 0 (TLS off when none), -errno logged. */
int srvtls_open(struct server *srv);
void srvtls_close(struct server *srv);
/*
 * SIGHUP (reload.c): load the certificate files nc names (the running
 * configuration's when nc is NULL: it failed to load, the files may still
 * have been replaced); a failure keeps the old certificate. 0 or -errno.
 */
int srvtls_reload(struct server *srv, const struct config *nc);
/* 1 when TCP clients must speak TLS. */
int srvtls_on(const struct server *srv);
/*
 * An accepted TCP fd: the descriptor to serve instead (the TLS session's,
 * the handshake running meanwhile within the handshake timeout), or -errno.
 */
int srvtls_wrap(struct server *srv, int fd, const char *peer);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/tls.h: TLS 1.3 (GnuTLS) under a socket, for libmaru and marud.
 * The socket code above calls one small interface: a handshake turns a
 * connected TCP socket into a descriptor it reads, writes, polls and closes
 * exactly as before. With kernel TLS (GnuTLS's KTLS, both directions) that
 * descriptor is the TCP socket itself; otherwise it is one end of an
 * AF_UNIX socket pair whose other end a relay thread pumps through the
 * GnuTLS session. So blocking and non-blocking I/O, SO_RCVTIMEO,
 * MSG_PEEK, epoll and the cancel tokens' polls work unchanged; closing
 * (or shutting down) the descriptor ends the session with a close_notify.
 * Returns 0 or -errno; err (when given) gets one line that says why.
 */
#ifndef MARU_TLS_H
#define MARU_TLS_H

#include <stddef.h>
#include <stdint.h>

struct tls_creds;

/*
 * Client credentials: the CA file marud's certificate must chain to, and
 * optionally a certificate and key for mutual TLS (both or neither).
 */
int tls_creds_client(const char *ca, const char *cert, const char *key,
		     struct tls_creds **out, char *err, size_t errlen);
/* Server credentials; client_ca (may be NULL) makes a client certificate required. */
int tls_creds_server(const char *cert, const char *key, const char *client_ca,
		     struct tls_creds **out, char *err, size_t errlen);
/*
 * The last fatal alert a relay of these credentials received after its
 * handshake (TLS 1.3 servers refuse a client certificate that way), taken:
 * 0 if none, else -EACCES (a certificate refused) or -EPROTO, its name in why.
 */
int tls_creds_alert(struct tls_creds *cr, char *why, size_t len);
/* Reference counting: every session holds one until it ends. */
struct tls_creds *tls_creds_get(struct tls_creds *cr);
void tls_creds_put(struct tls_creds *cr);

struct tls_info {
	char desc[96];		/* "(TLS1.3)-(ECDHE-X25519)-...", GnuTLS's words */
	int ktls;		/* 1: the kernel carries the records (both ways) */
};

/*
 * Client side on connected fd: handshake by deadline (mono_ms), ended
 * early with -EINTR when stop_fd (may be -1) becomes readable; marud's
 * certificate is checked against the CA and host. On success *app is the
 * descriptor to use (fd is then owned by the session: never close it
 * apart from *app). -EACCES: certificate refused, or a client certificate
 * asked for and none given; -EPROTO: the peer does not speak TLS 1.3;
 * -ECONNRESET, -ETIMEDOUT: the network.
 */
int tls_client(struct tls_creds *cr, int fd, const char *host, uint64_t deadline,
	       int stop_fd, int *app, struct tls_info *info, char *err, size_t errlen);
/*
 * Server side on accepted fd: *app at once; the handshake runs on the
 * session's relay thread within hs_ms, and a failure is logged (peer
 * names the client; at most 5 such lines per 10 s, the rest counted) and
 * closes *app's peer end. A peer whose first byte cannot begin a TLS
 * handshake is logged the same way and handed to clear (if not NULL) on
 * fd, to be told in its own protocol, and is then closed.
 */
int tls_server(struct tls_creds *cr, int fd, unsigned int hs_ms, const char *peer,
	       void (*clear)(int fd, const char *peer), int *app);

/* Sessions set up since start: through kernel TLS, through a relay thread. */
void tls_counts(uint64_t *ktls, uint64_t *relay);

#endif

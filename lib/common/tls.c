// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * lib/common/tls.c: TLS 1.3 sessions for libmaru's and marud's TCP sockets
 * (see tls.h), on GnuTLS. It owns the credentials (reference counted, so a
 * certificate reload never frees what a live session uses), the handshake
 * (non-blocking, by a deadline, ended by a stop descriptor) and the relay
 * thread of each session that the kernel does not carry.
 *
 * The relay: the caller holds one end of an AF_UNIX stream pair, the
 * thread the other end and the TCP socket, both non-blocking, with one
 * buffer each way; it moves whatever is ready and polls for the rest.
 * Bytes never wait behind the other direction, so a peer that writes a big
 * request while the other streams a big reply cannot deadlock it. The
 * caller closing its end sends close_notify and ends the thread; the
 * network ending (or an alert) closes the caller's end after what was
 * decrypted has been handed over.
 *
 * Only TLS 1.3 is offered or accepted, no session tickets (nothing to
 * resume: a connection lives long), no automatic rekey (kernel TLS of
 * this era cannot take a KeyUpdate).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/socket.h>
#include <gnutls/x509.h>

#include "clock.h"
#include "log.h"
#include "tls.h"

#define TLS_PRIORITY	"NORMAL:-VERS-ALL:+VERS-TLS1.3"
#define TLS_FLAGS	(GNUTLS_NO_TICKETS | GNUTLS_NO_AUTO_REKEY | GNUTLS_NO_SIGNAL | \
			 GNUTLS_NONBLOCK)
#define RELAY_BUF	(64U << 10)
#define TLS_RECORD_MAX	(16U << 10)	/* plaintext of one record */
#define RELAY_STACK	(128U << 10)

struct tls_creds {
	gnutls_certificate_credentials_t x;
	atomic_uint refs;
	int server;
	int have_cert;		/* client: a certificate to show */
	int verify_peer;	/* server: a client certificate is required */
	atomic_int alert;	/* 1 + the last fatal alert a relay received, or 0 */
};

struct relay {
	gnutls_session_t s;
	struct tls_creds *cr;
	int net, app;
	int server;		/* handshake first, on this thread */
	unsigned int hs_ms;
	void (*clear)(int fd, const char *peer);	/* a peer speaking clear text */
	char peer[128];
	uint8_t up[RELAY_BUF], down[RELAY_BUF];	/* app -> net, net -> app */
};

static atomic_uint_fast64_t n_ktls, n_relay;

/*
 * A server's refusals (bad handshakes, clear-text clients) are logged at
 * most REFUSE_LINES a window; the rest are counted into one line when the
 * next is logged, so a scanner cannot flood the log.
 */
#define REFUSE_LINES		5
#define REFUSE_WINDOW_MS	10000

static pthread_mutex_t refuse_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t refuse_start;
static unsigned int refuse_lines;
static uint64_t refuse_quiet;

static void refuse_log(const char *peer, const char *why)
{
	uint64_t now = mono_ms(), quiet = 0;
	int show;

	pthread_mutex_lock(&refuse_lock);
	if (now - refuse_start >= REFUSE_WINDOW_MS) {
		refuse_start = now;
		refuse_lines = 0;
		quiet = refuse_quiet;
		refuse_quiet = 0;
	}
	show = refuse_lines < REFUSE_LINES;
	if (show)
		refuse_lines++;
	else
		refuse_quiet++;
	pthread_mutex_unlock(&refuse_lock);
	if (quiet)
		log_warnx("TLS: %llu more refusals were not logged in the last %u s",
			  (unsigned long long)quiet, REFUSE_WINDOW_MS / 1000);
	if (show)
		log_warnx("%s: TLS refused: %s", peer, why);
}

void tls_counts(uint64_t *ktls, uint64_t *relay)
{
	*ktls = atomic_load(&n_ktls);
	*relay = atomic_load(&n_relay);
}

static void say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int creds_new(int server, struct tls_creds **out)
{
	struct tls_creds *cr = calloc(1, sizeof(*cr));

	if (!cr)
		return -ENOMEM;
	if (gnutls_certificate_allocate_credentials(&cr->x) < 0) {
		free(cr);
		return -ENOMEM;
	}
	atomic_init(&cr->refs, 1);
	cr->server = server;
	*out = cr;
	return 0;
}

static int load_pair(struct tls_creds *cr, const char *cert, const char *key, char *err,
		     size_t errlen)
{
	int rc = gnutls_certificate_set_x509_key_file(cr->x, cert, key, GNUTLS_X509_FMT_PEM);

	if (rc < 0) {
		say(err, errlen, "certificate %s with key %s: %s", cert, key, gnutls_strerror(rc));
		return rc == GNUTLS_E_FILE_ERROR ? -ENOENT : -EINVAL;
	}
	cr->have_cert = 1;
	return 0;
}

static int load_ca(struct tls_creds *cr, const char *ca, char *err, size_t errlen)
{
	int rc = gnutls_certificate_set_x509_trust_file(cr->x, ca, GNUTLS_X509_FMT_PEM);

	if (rc <= 0) {
		say(err, errlen, "CA file %s: %s", ca,
		    rc == 0 ? "no certificate in it" : gnutls_strerror(rc));
		return rc == GNUTLS_E_FILE_ERROR ? -ENOENT : -EINVAL;
	}
	return 0;
}

int tls_creds_client(const char *ca, const char *cert, const char *key,
		     struct tls_creds **out, char *err, size_t errlen)
{
	struct tls_creds *cr;
	int rc;

	if (!ca || !*ca || (!cert) != (!key)) {
		say(err, errlen, "TLS needs a CA file (tls_ca=), and a client certificate "
		    "comes with its key (tls_cert= and tls_key=)");
		return -EINVAL;
	}
	rc = creds_new(0, &cr);
	if (rc)
		return rc;
	rc = load_ca(cr, ca, err, errlen);
	if (!rc && cert)
		rc = load_pair(cr, cert, key, err, errlen);
	if (rc) {
		tls_creds_put(cr);
		return rc;
	}
	*out = cr;
	return 0;
}

int tls_creds_server(const char *cert, const char *key, const char *client_ca,
		     struct tls_creds **out, char *err, size_t errlen)
{
	struct tls_creds *cr;
	int rc;

	rc = creds_new(1, &cr);
	if (rc)
		return rc;
	rc = load_pair(cr, cert, key, err, errlen);
	if (!rc && client_ca && *client_ca) {
		rc = load_ca(cr, client_ca, err, errlen);
		cr->verify_peer = 1;
	}
	if (rc) {
		tls_creds_put(cr);
		return rc;
	}
	*out = cr;
	return 0;
}

struct tls_creds *tls_creds_get(struct tls_creds *cr)
{
	atomic_fetch_add(&cr->refs, 1);
	return cr;
}

void tls_creds_put(struct tls_creds *cr)
{
	if (!cr || atomic_fetch_sub(&cr->refs, 1) != 1)
		return;
	gnutls_certificate_free_credentials(cr->x);
	free(cr);
}

int tls_creds_alert(struct tls_creds *cr, char *why, size_t len)
{
	int a = atomic_exchange(&cr->alert, 0);
	const char *name;

	if (!a)
		return 0;
	name = gnutls_alert_get_name((gnutls_alert_description_t)(a - 1));
	say(why, len, "%s", name ? name : "alert");
	switch (a - 1) {
	case GNUTLS_A_BAD_CERTIFICATE: case GNUTLS_A_UNSUPPORTED_CERTIFICATE:
	case GNUTLS_A_CERTIFICATE_REVOKED: case GNUTLS_A_CERTIFICATE_EXPIRED:
	case GNUTLS_A_CERTIFICATE_UNKNOWN: case GNUTLS_A_UNKNOWN_CA:
	case GNUTLS_A_ACCESS_DENIED: case GNUTLS_A_CERTIFICATE_REQUIRED:
	case GNUTLS_A_DECRYPT_ERROR:
		return -EACCES;
	default:
		return -EPROTO;
	}
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int session_new(struct tls_creds *cr, int fd, gnutls_session_t *out)
{
	gnutls_session_t s;

	if (gnutls_init(&s, (cr->server ? GNUTLS_SERVER : GNUTLS_CLIENT) | TLS_FLAGS) < 0)
		return -ENOMEM;
	if (gnutls_priority_set_direct(s, TLS_PRIORITY, NULL) < 0 ||
	    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cr->x) < 0) {
		gnutls_deinit(s);
		return -EINVAL;
	}
	if (cr->server && cr->verify_peer) {
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(s, NULL, 0);
	}
	gnutls_transport_set_int(s, fd);
	gnutls_handshake_set_timeout(s, 0);
	*out = s;
	return 0;
}

/* A GnuTLS error of the handshake as -errno, and why in err. */
static int hs_error(gnutls_session_t s, int rc, char *err, size_t errlen)
{
	gnutls_datum_t txt = { 0 };
	int e;

	switch (rc) {
	case GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR:
	case GNUTLS_E_CERTIFICATE_ERROR:
		if (gnutls_certificate_verification_status_print(
			    gnutls_session_get_verify_cert_status(s), GNUTLS_CRT_X509, &txt, 0) == 0) {
			say(err, errlen, "certificate refused: %s", (const char *)txt.data);
			gnutls_free(txt.data);
		} else {
			say(err, errlen, "certificate refused");
		}
		return -EACCES;
	case GNUTLS_E_CERTIFICATE_REQUIRED:
	case GNUTLS_E_NO_CERTIFICATE_FOUND:
		say(err, errlen, "no client certificate (this side requires one: mutual TLS)");
		return -EACCES;
	case GNUTLS_E_WARNING_ALERT_RECEIVED:
	case GNUTLS_E_FATAL_ALERT_RECEIVED:
		e = gnutls_alert_get(s);
		say(err, errlen, "the peer ended the handshake: %s",
		    gnutls_alert_get_name(e) ? gnutls_alert_get_name(e) : "alert");
		return e == GNUTLS_A_PROTOCOL_VERSION || e == GNUTLS_A_HANDSHAKE_FAILURE ||
		       e == GNUTLS_A_INSUFFICIENT_SECURITY ? -EPROTO : -EACCES;
	case GNUTLS_E_PREMATURE_TERMINATION:
	case GNUTLS_E_PUSH_ERROR:
	case GNUTLS_E_PULL_ERROR:
		say(err, errlen, "the connection ended during the TLS handshake "
		    "(does the peer speak TLS?)");
		return -ECONNRESET;
	default:
		say(err, errlen, "no TLS 1.3 handshake: %s (does the peer speak TLS?)",
		    gnutls_strerror(rc));
		return -EPROTO;
	}
}

/* 1 when the stream end fd (readable) was closed by its peer, not written to. */
static int closed_end(int fd)
{
	uint8_t b;

	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0 ||
	       (errno != EAGAIN && errno != EINTR);
}

/*
 * stop_fd: the client's cancel eventfd (readable: fired), or the server's
 * relay end of the pair (only its closing stops: the caller may write its
 * first bytes before the handshake is done; they wait in the pair).
 */
static int handshake(gnutls_session_t s, int fd, uint64_t deadline, int stop_fd,
		     int stop_on_close, char *err, size_t errlen)
{
	struct pollfd p[2];
	uint64_t now;
	int rc;

	for (;;) {
		rc = gnutls_handshake(s);
		if (rc == 0)
			return 0;
		if (rc != GNUTLS_E_AGAIN && rc != GNUTLS_E_INTERRUPTED) {
			/* tell the peer why (best effort: the socket is non-blocking) */
			gnutls_alert_send_appropriate(s, rc);
			return hs_error(s, rc, err, errlen);
		}
		now = mono_ms();
		if (now >= deadline) {
			say(err, errlen, "TLS handshake timed out");
			return -ETIMEDOUT;
		}
		p[0] = (struct pollfd){ .fd = fd,
					.events = gnutls_record_get_direction(s) ? POLLOUT : POLLIN };
		p[1] = (struct pollfd){ .fd = stop_fd, .events = POLLIN };
		rc = poll(p, stop_fd >= 0 ? 2 : 1, (int)(deadline - now));
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc > 0 && stop_fd >= 0 && p[1].revents) {
			if (!stop_on_close || closed_end(stop_fd)) {
				say(err, errlen, "TLS handshake cancelled");
				return -EINTR;
			}
			stop_fd = -1;	/* bytes waiting: the pair keeps them */
		}
	}
}

/* ---- the relay ---- */

struct pump {
	size_t up_len, up_off, down_len, down_off;
	int app_eof, net_eof;
};

/* Move what is ready without waiting: 1 if anything moved, 0 if not, -1 to end. */
static int pump_once(struct relay *r, struct pump *p)
{
	ssize_t n;
	int moved = 0;

	/* as many records as are there and fit: one hand-over for several */
	while (!p->net_eof && p->down_len + TLS_RECORD_MAX <= sizeof(r->down)) {
		n = gnutls_record_recv(r->s, r->down + p->down_len,
				       sizeof(r->down) - p->down_len);
		if (n > 0) {
			if (!p->down_len)
				p->down_off = 0;
			p->down_len += (size_t)n;
			moved = 1;
			continue;
		}
		if (n == 0 || (n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED)) {
			/* before the caller sees the end, so that it can ask why */
			if (n == GNUTLS_E_FATAL_ALERT_RECEIVED)
				atomic_store(&r->cr->alert, 1 + (int)gnutls_alert_get(r->s));
			p->net_eof = 1;
			moved = 1;
		}
		break;
	}
	if (p->down_len) {
		n = send(r->app, r->down + p->down_off, p->down_len - p->down_off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			p->down_off += (size_t)n;
			if (p->down_off == p->down_len)
				p->down_len = 0;
			moved = 1;
		} else if (errno != EAGAIN && errno != EINTR) {
			return -1;	/* the caller closed its end */
		}
	}
	if (!p->up_len && !p->app_eof) {
		n = recv(r->app, r->up, sizeof(r->up), MSG_DONTWAIT);
		if (n > 0) {
			p->up_len = (size_t)n;
			p->up_off = 0;
			moved = 1;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			p->app_eof = 1;
			moved = 1;
		}
	}
	if (p->up_len) {
		n = gnutls_record_send(r->s, r->up + p->up_off, p->up_len - p->up_off);
		if (n > 0) {
			p->up_off += (size_t)n;
			if (p->up_off == p->up_len)
				p->up_len = 0;
			moved = 1;
		} else if (n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED) {
			return -1;
		}
	}
	if ((p->app_eof && !p->up_len) || (p->net_eof && !p->down_len))
		return -1;
	return moved;
}

static void pump(struct relay *r)
{
	struct pump p = { 0 };
	struct pollfd f[2];
	int rc;

	while ((rc = pump_once(r, &p)) >= 0) {
		if (rc)
			continue;
		f[0] = (struct pollfd){ .fd = r->net };
		f[1] = (struct pollfd){ .fd = r->app };
		if (!p.net_eof && p.down_len + TLS_RECORD_MAX <= sizeof(r->down))
			f[0].events |= POLLIN;
		if (p.up_len)
			f[0].events |= POLLOUT;
		if (!p.up_len)
			f[1].events |= POLLIN;
		if (p.down_len)
			f[1].events |= POLLOUT;
		/* a side we wait nothing from is left out: its hang-up would
		 * wake this loop until the other side moved */
		for (int i = 0; i < 2; i++)
			if (!f[i].events)
				f[i].fd = -1;
		if (poll(f, 2, -1) < 0 && errno != EINTR)
			break;
	}
	if (p.app_eof)
		gnutls_bye(r->s, GNUTLS_SHUT_WR);
}

static void relay_free(struct relay *r)
{
	if (r->s)
		gnutls_deinit(r->s);
	if (r->net >= 0)
		close(r->net);
	if (r->app >= 0)
		close(r->app);
	tls_creds_put(r->cr);
	free(r);
}

#define TLS_RECORD_HANDSHAKE	0x16

/*
 * 1 when the peer's first byte (waited for by deadline, or until stop_fd
 * is readable) cannot start a TLS handshake.
 */
static int speaks_clear(int fd, uint64_t deadline, int stop_fd)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
	uint64_t now = mono_ms();
	uint8_t b;

	if (now >= deadline || poll(p, 2, (int)(deadline - now)) < 1 || !p[0].revents)
		return 0;	/* marud never writes first: its end readable is its close */
	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && b != TLS_RECORD_HANDSHAKE;
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	uint64_t deadline = mono_ms() + r->hs_ms;
	char err[256];
	int rc;

	/*
	 * marud writes nothing before the client's first request, so its end
	 * turning readable means it closed the connection (a handshake limit,
	 * its handshake deadline, shutdown): stop waiting for the peer then.
	 */
	if (r->server && r->clear && speaks_clear(r->net, deadline, r->app)) {
		refuse_log(r->peer, "clear text at a TLS listener (the client needs tls_ca=)");
		r->clear(r->net, r->peer);
		relay_free(r);
		return NULL;
	}
	if (r->server) {
		rc = handshake(r->s, r->net, deadline, r->app, 1, err, sizeof(err));
		if (rc == -EINTR) {
			relay_free(r);	/* marud let the connection go: admit.c said why */
			return NULL;
		}
		if (rc) {
			refuse_log(r->peer, err);
			relay_free(r);
			return NULL;
		}
		if (gnutls_transport_is_ktls_enabled(r->s))
			atomic_fetch_add(&n_ktls, 1);
		else
			atomic_fetch_add(&n_relay, 1);
	}
	pump(r);
	relay_free(r);
	return NULL;
}

/* A relay for session s on net; *app the caller's end. The relay owns s and net. */
static int relay_start(struct tls_creds *cr, gnutls_session_t s, int net, int server,
		       unsigned int hs_ms, const char *peer, void (*clear)(int, const char *),
		       int *app)
{
	struct relay *r;
	pthread_attr_t at;
	pthread_t t;
	int sv[2], rc;

	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = -errno;
		free(r);
		return rc;
	}
	*r = (struct relay){ .s = s, .cr = tls_creds_get(cr), .net = net, .app = sv[1],
			     .server = server, .hs_ms = hs_ms, .clear = clear };
	snprintf(r->peer, sizeof(r->peer), "%s", peer ? peer : "peer");
	rc = nonblock(sv[1]);
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, RELAY_STACK);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (!rc)
		rc = -pthread_create(&t, &at, relay_main, r);
	pthread_attr_destroy(&at);
	if (rc) {
		close(sv[0]);
		r->s = NULL;	/* the caller still owns s and net */
		r->net = -1;
		relay_free(r);
		return rc;
	}
	*app = sv[0];
	return 0;
}

static void fill_info(gnutls_session_t s, int ktls, struct tls_info *info)
{
	char *d;

	if (!info)
		return;
	d = gnutls_session_get_desc(s);
	snprintf(info->desc, sizeof(info->desc), "%s", d ? d : "TLS");
	gnutls_free(d);
	info->ktls = ktls;
}

/* host is an IPv4 or IPv6 address, not a name */
static int is_address(const char *host)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

int tls_client(struct tls_creds *cr, int fd, const char *host, uint64_t deadline,
	       int stop_fd, int *app, struct tls_info *info, char *err, size_t errlen)
{
	gnutls_session_t s;
	int rc, ktls;

	rc = nonblock(fd);
	if (!rc)
		rc = session_new(cr, fd, &s);
	if (rc)
		return rc;
	if (host && *host) {
		/* no SNI for an address (RFC 6066): a GnuTLS server, marud's,
		 * refuses the handshake on "::1" as a name */
		if (!is_address(host))
			gnutls_server_name_set(s, GNUTLS_NAME_DNS, host, strlen(host));
		gnutls_session_set_verify_cert(s, host, 0);
	} else {
		gnutls_session_set_verify_cert(s, NULL, 0);
	}
	rc = handshake(s, fd, deadline, stop_fd, 0, err, errlen);
	/* TLS 1.3: a server's refusal of our (missing) certificate comes after
	 * our handshake ends; its request came before, so say it now */
	if (!rc && gnutls_certificate_client_get_request_status(s) &&
	    !gnutls_certificate_get_ours(s)) {
		if (cr->have_cert)
			say(err, errlen, "marud asks for a client certificate from another CA "
			    "than the one that signed ours (tls_cert=)");
		else
			say(err, errlen, "marud asks for a client certificate (mutual TLS): "
			    "give tls_cert= and tls_key=");
		rc = -EACCES;
	}
	if (rc) {
		gnutls_deinit(s);
		return rc;
	}
	ktls = gnutls_transport_is_ktls_enabled(s) == GNUTLS_KTLS_DUPLEX;
	fill_info(s, ktls, info);
	if (ktls) {
		/* the kernel has the keys: the socket is the session */
		int fl = fcntl(fd, F_GETFL);

		gnutls_deinit(s);
		atomic_fetch_add(&n_ktls, 1);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
			return -errno;
		*app = fd;
		return 0;
	}
	rc = relay_start(cr, s, fd, 0, 0, NULL, NULL, app);
	if (rc) {
		gnutls_deinit(s);
		return rc;
	}
	atomic_fetch_add(&n_relay, 1);
	return 0;
}

int tls_server(struct tls_creds *cr, int fd, unsigned int hs_ms, const char *peer,
	       void (*clear)(int fd, const char *peer), int *app)
{
	gnutls_session_t s;
	int rc;

	rc = nonblock(fd);
	if (!rc)
		rc = session_new(cr, fd, &s);
	if (rc)
		return rc;
	rc = relay_start(cr, s, fd, 1, hs_ms, peer, clear, app);
	if (rc)
		gnutls_deinit(s);
	return rc;
}

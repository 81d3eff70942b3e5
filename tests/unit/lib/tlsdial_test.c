/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/tlsdial_test.c: lib/tlsdial.c, a client's TLS. Without
 * tls_ca/cert/key nothing changes (the socket is the socket); TLS on a
 * unix URI, a CA file that is not there or a certificate without its key
 * fail maru_client_new's init, with a line that says why, and the
 * caller's strings are not kept. A wrapped socket speaks TLS with marud's
 * side (bytes both ways), counts the session and describes it
 * (maru_client_tls); the host of a [v6] URI is checked without its
 * brackets (and sent as no SNI name: marud's GnuTLS refuses "::1"); a refused certificate is -EACCES with the socket closed and
 * said once per reason (again after a session succeeded); a peer that
 * does not speak TLS is an error that says so; a fired cancel token ends
 * the handshake with -EINTR, unsaid. A session marud ends with a fatal
 * alert after the handshake (a refused client certificate) turns the
 * -ECONNRESET of the next read into -EACCES, once.
 * Real: GnuTLS (lib/common/tls.c both sides, and a bare GnuTLS server for
 * the alert), loopback TCP, certificates made in a temp dir (certs.c). No
 * marud: the calls are tlsdial.c's own, on a client struct made by hand.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>

#include "certs.h"
#include "client_priv.h"
#include "tls.h"
#include "tlsdial.h"
#include "fake_marud.h"

static char dir[64];
static struct logbook book;

static void path(char *out, size_t len, const char *name)
{
	certs_path(dir, out, len, name);
}

static int setup(void **state)
{
	(void)state;
	certs_make(dir, sizeof(dir), "tlsdial-test");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	certs_remove(dir);
	return 0;
}

/* A client as maru_client_new has it before tlsdial_init; ca names a file of dir. */
static struct maru_client *client(const char *uri, const char *ca)
{
	struct maru_client *c = calloc(1, sizeof(*c));
	static char cafile[128];

	assert_non_null(c);
	pthread_mutex_init(&c->lock, NULL);
	assert_int_equal(addr_parse(uri, &c->addr), 0);
	snprintf(c->uri, sizeof(c->uri), "%s", uri);
	logbook_init(&book);
	c->opts.log_fn = log_cb;
	c->opts.log_arg = &book;
	c->opts.log_priority = LOG_DEBUG;
	if (ca) {
		path(cafile, sizeof(cafile), ca);
		c->opts.tls_ca = cafile;
	}
	return c;
}

static void client_free(struct maru_client *c)
{
	tlsdial_free(c);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* A connected loopback TCP pair (v6: over ::1). */
static void tcp_pair(int v6, int *cli, int *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr *sa = v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a;
	socklen_t al = v6 ? sizeof(a6) : sizeof(a);
	int l = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, sa, al), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, sa, &al), 0);
	*cli = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(*cli, sa, al), 0);
	*srv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*srv >= 0);
	close(l);
}

static struct tls_creds *server_creds(void)
{
	char crt[128], key[128], err[256];
	struct tls_creds *cr;

	path(crt, sizeof(crt), "srv.pem");
	path(key, sizeof(key), "srv.key");
	assert_int_equal(tls_creds_server(crt, key, NULL, &cr, err, sizeof(err)), 0);
	return cr;
}

/* Wrap a fresh socket to marud's side (a TLS server, its app end in *sapp). */
static int wrap(struct maru_client *c, struct tls_creds *sc, int v6, int *sapp)
{
	int cfd, sfd;

	tcp_pair(v6, &cfd, &sfd);
	assert_int_equal(tls_server(sc, sfd, 5000, "test peer", NULL, sapp), 0);
	return tlsdial_wrap(c, cfd, mono_ms() + 5000);
}

static int lines(const char *needle)
{
	int i, n = 0;

	pthread_mutex_lock(&book.mu);
	for (i = 0; i < book.n && i < 64; i++)
		n += strstr(book.lines[i], needle) != NULL;
	pthread_mutex_unlock(&book.mu);
	return n;
}

static void test_no_tls(void **state)
{
	struct maru_client *c = client("maru://127.0.0.1:7450", NULL);
	char desc[64];

	(void)state;
	assert_int_equal(tlsdial_init(c), 0);
	assert_null(c->tls);
	assert_int_equal(tlsdial_wrap(c, 42, mono_ms() + 1000), 42);
	assert_int_equal(tlsdial_ended(c, -ECONNRESET), -ECONNRESET);
	assert_int_equal(maru_client_tls(c, desc, sizeof(desc), NULL), -ENOTCONN);
	assert_int_equal(maru_client_tls(NULL, desc, sizeof(desc), NULL), -EINVAL);
	assert_int_equal(book.n, 0);
	client_free(c);
}

static void test_init_refused(void **state)
{
	struct maru_client *c = client("maru+unix:///run/x.sock", "ca.pem");
	char k[128];

	(void)state;
	assert_int_equal(tlsdial_init(c), -EINVAL);
	assert_int_equal(lines("is a unix socket"), 1);
	client_free(c);
	c = client("maru://127.0.0.1:7450", "missing.pem");
	assert_true(tlsdial_init(c) < 0);
	assert_null(c->tls);
	assert_int_equal(lines("TLS: "), 1);
	/* the caller's strings are not kept */
	assert_null(c->opts.tls_ca);
	client_free(c);
	/* a certificate without its key */
	c = client("maru://127.0.0.1:7450", "ca.pem");
	path(k, sizeof(k), "srv.pem");
	c->opts.tls_cert = k;
	assert_true(tlsdial_init(c) < 0);
	assert_null(c->opts.tls_cert);
	client_free(c);
}

static void test_session(void **state)
{
	struct maru_client *c = client("maru://127.0.0.1:7450", "ca.pem");
	struct tls_creds *sc = server_creds();
	char desc[96], buf[8];
	int app, sapp, ktls = -1;

	(void)state;
	assert_int_equal(tlsdial_init(c), 0);
	assert_non_null(c->tls);
	app = wrap(c, sc, 0, &sapp);
	assert_true(app >= 0);
	/* bytes both ways through the session */
	assert_int_equal(write(app, "hello", 5), 5);
	assert_int_equal(read(sapp, buf, 5), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(write(sapp, "world", 5), 5);
	assert_int_equal(read(app, buf, 5), 5);
	assert_memory_equal(buf, "world", 5);
	assert_int_equal(atomic_load(&c->tls_sessions), 1);
	assert_int_equal(maru_client_tls(c, desc, sizeof(desc), &ktls), 0);
	assert_non_null(strstr(desc, "TLS1.3"));
	assert_int_equal(ktls, atomic_load(&c->tls_ktls) == 1);
	assert_int_equal(maru_client_tls(c, NULL, 0, NULL), 0);
	/* closing ours ends marud's */
	close(app);
	assert_int_equal(read(sapp, buf, 1), 0);
	close(sapp);
	assert_int_equal(book.n, 0);
	/* a [v6] URI: the certificate is checked for ::1, brackets off */
	strcpy(c->addr.host, "[::1]");
	app = wrap(c, sc, 1, &sapp);
	assert_true(app >= 0);
	assert_int_equal(atomic_load(&c->tls_sessions), 2);
	close(app);
	close(sapp);
	tls_creds_put(sc);
	client_free(c);
}

/* Refused: -EACCES, socket closed, said once per reason. */
static void test_refused_said_once(void **state)
{
	struct maru_client *c = client("maru://127.0.0.2:7450", "ca.pem");
	struct tls_creds *sc = server_creds();
	int cfd, sfd, sapp, app;

	(void)state;
	assert_int_equal(tlsdial_init(c), 0);
	/* the certificate is not for 127.0.0.2 */
	tcp_pair(0, &cfd, &sfd);
	assert_int_equal(tls_server(sc, sfd, 5000, "test peer", NULL, &sapp), 0);
	assert_int_equal(tlsdial_wrap(c, cfd, mono_ms() + 5000), -EACCES);
	assert_int_equal(fcntl(cfd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	close(sapp);
	assert_int_equal(wrap(c, sc, 0, &sapp), -EACCES);
	close(sapp);
	assert_int_equal(lines("TLS with marud at maru://127.0.0.2:7450"), 1);
	/* a session that works: the next refusal is said again */
	strcpy(c->addr.host, "127.0.0.1");
	app = wrap(c, sc, 0, &sapp);
	assert_true(app >= 0);
	close(app);
	close(sapp);
	strcpy(c->addr.host, "127.0.0.2");
	assert_int_equal(wrap(c, sc, 0, &sapp), -EACCES);
	close(sapp);
	assert_int_equal(lines("TLS with marud at"), 2);
	tls_creds_put(sc);
	client_free(c);
	/* a CA that signed nothing of marud's */
	c = client("maru://127.0.0.1:7450", "ca2.pem");
	sc = server_creds();
	assert_int_equal(tlsdial_init(c), 0);
	assert_int_equal(wrap(c, sc, 0, &sapp), -EACCES);
	close(sapp);
	assert_int_equal(lines("certificate refused"), 1);
	tls_creds_put(sc);
	client_free(c);
}

/* A peer that answers in clear text. */
static void test_not_tls(void **state)
{
	struct maru_client *c = client("maru://127.0.0.1:7450", "ca.pem");
	static const char junk[] = "MARU 1 clear text, not a TLS record\r\n";
	int cfd, sfd, rc;

	(void)state;
	assert_int_equal(tlsdial_init(c), 0);
	tcp_pair(0, &cfd, &sfd);
	assert_int_equal(write(sfd, junk, sizeof(junk)), sizeof(junk));
	rc = tlsdial_wrap(c, cfd, mono_ms() + 5000);
	assert_true(rc == -EPROTO || rc == -ECONNRESET);
	assert_int_equal(lines("does the peer speak TLS?"), 1);
	close(sfd);
	client_free(c);
}

/* The thread's cancel token fired: -EINTR, nothing said. */
static void test_cancelled(void **state)
{
	struct maru_client *c = client("maru://127.0.0.1:7450", "ca.pem");
	struct maru_cancel *t;
	int cfd, sfd;

	(void)state;
	assert_int_equal(tlsdial_init(c), 0);
	assert_int_equal(maru_cancel_new(&t), 0);
	maru_cancel_bind(t);
	maru_cancel_fire(t);
	tcp_pair(0, &cfd, &sfd);	/* nobody answers the handshake */
	assert_int_equal(tlsdial_wrap(c, cfd, mono_ms() + 5000), -EINTR);
	assert_int_equal(book.n, 0);
	maru_cancel_bind(NULL);
	maru_cancel_free(t);
	close(sfd);
	client_free(c);
}

/* A bare GnuTLS server: the handshake, then a fatal alert. */
static void *alerting_server(void *arg)
{
	int fd = (int)(intptr_t)arg, rc;
	gnutls_certificate_credentials_t x;
	gnutls_session_t s;
	char crt[128], key[128];

	path(crt, sizeof(crt), "srv.pem");
	path(key, sizeof(key), "srv.key");
	gnutls_certificate_allocate_credentials(&x);
	gnutls_certificate_set_x509_key_file(x, crt, key, GNUTLS_X509_FMT_PEM);
	gnutls_init(&s, GNUTLS_SERVER);
	gnutls_set_default_priority(s);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, x);
	gnutls_transport_set_int(s, fd);
	do
		rc = gnutls_handshake(s);
	while (rc < 0 && !gnutls_error_is_fatal(rc));
	if (rc == 0)
		gnutls_alert_send(s, GNUTLS_AL_FATAL, GNUTLS_A_CERTIFICATE_REQUIRED);
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(x);
	close(fd);
	return (void *)(intptr_t)rc;
}

static void test_ended_by_alert(void **state)
{
	struct maru_client *c = client("maru://127.0.0.1:7450", "ca.pem");
	pthread_t th;
	void *ret;
	char buf[8];
	int cfd, sfd, app;

	(void)state;
	assert_int_equal(tlsdial_init(c), 0);
	tcp_pair(0, &cfd, &sfd);
	assert_int_equal(pthread_create(&th, NULL, alerting_server, (void *)(intptr_t)sfd), 0);
	app = tlsdial_wrap(c, cfd, mono_ms() + 5000);
	assert_true(app >= 0);
	assert_int_equal(pthread_join(th, &ret), 0);
	assert_null(ret);
	if (atomic_load(&c->tls_ktls)) {
		/* the kernel carried the session: no relay saw the alert */
		printf("kernel TLS: the alert is the kernel's, not checked here\n");
		close(app);
		client_free(c);
		return;
	}
	/* the session ends for us (AUTH would see -ECONNRESET) */
	assert_true(read(app, buf, sizeof(buf)) <= 0);
	assert_int_equal(tlsdial_ended(c, -ETIMEDOUT), -ETIMEDOUT);
	assert_int_equal(tlsdial_ended(c, -ECONNRESET), -EACCES);
	assert_int_equal(lines("our client certificate, tls_cert=, was refused"), 1);
	/* taken: the next reset is a reset */
	assert_int_equal(tlsdial_ended(c, -ECONNRESET), -ECONNRESET);
	close(app);
	client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_tls),
		cmocka_unit_test(test_init_refused),
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_refused_said_once),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_cancelled),
		cmocka_unit_test(test_ended_by_alert),
	};

	return cmocka_run_group_tests_name("tlsdial", tests, setup, teardown);
}

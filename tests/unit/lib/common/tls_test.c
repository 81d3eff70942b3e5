// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/lib/common/tls_test.c: lib/common/tls.c over a real loopback
 * TCP connection, client and server in this process. Certificates are made
 * here with GnuTLS (a CA, a server certificate for 127.0.0.1 and a client
 * one, and a second CA that signed nothing). Checks: 8 MiB each way at
 * once through both relays with every byte compared (a relay that blocked
 * one direction on the other deadlocks); a wrong CA and a wrong host are
 * -EACCES; mutual TLS without a client certificate is -EACCES on the
 * client; a clear-text client at a TLS server is handed to the clear
 * callback; closing the client's descriptor ends the server's with EOF;
 * an already fired stop descriptor ends the handshake with -EINTR.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "clock.h"
#include "sockio.h"
#include "tls.h"

static char dir[64];

static void path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void save(const char *name, gnutls_datum_t *d)
{
	char p[128];
	FILE *f;

	path(p, sizeof(p), name);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(d->data, 1, d->size, f), d->size);
	fclose(f);
	gnutls_free(d->data);
}

/* A key and a certificate signed by (ca, cakey), or self-signed when ca is NULL. */
static void make(const char *name, const char *cn, int is_ca, const char *ip,
		 gnutls_x509_crt_t ca, gnutls_x509_privkey_t cakey,
		 gnutls_x509_crt_t *crt_out, gnutls_x509_privkey_t *key_out)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t d;
	char file[64];
	unsigned char serial[8];
	time_t now = time(NULL);

	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
			 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0), 0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	gnutls_x509_crt_set_version(crt, 3);
	gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
	serial[0] &= 0x7f;
	gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
	gnutls_x509_crt_set_activation_time(crt, now - 60);
	gnutls_x509_crt_set_expiration_time(crt, now + 3600);
	gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn));
	gnutls_x509_crt_set_key(crt, key);
	gnutls_x509_crt_set_basic_constraints(crt, is_ca, -1);
	if (is_ca) {
		gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN);
	} else {
		gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
		gnutls_x509_crt_set_key_purpose_oid(crt, ip ? GNUTLS_KP_TLS_WWW_SERVER :
						    GNUTLS_KP_TLS_WWW_CLIENT, 0);
	}
	if (ip) {
		unsigned char a[4] = { 127, 0, 0, 1 };

		gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, a, 4,
						     GNUTLS_FSAN_SET);
	}
	assert_int_equal(gnutls_x509_crt_sign2(crt, ca ? ca : crt, ca ? cakey : key,
					       GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
	snprintf(file, sizeof(file), "%s.pem", name);
	save(file, &d);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d), 0);
	snprintf(file, sizeof(file), "%s.key", name);
	save(file, &d);
	*crt_out = crt;
	*key_out = key;
}

static int setup(void **state)
{
	gnutls_x509_crt_t ca, ca2, c;
	gnutls_x509_privkey_t cak, ca2k, k;

	snprintf(dir, sizeof(dir), "/tmp/maru-tls-test.XXXXXX");
	assert_non_null(mkdtemp(dir));
	make("ca", "test ca", 1, NULL, NULL, NULL, &ca, &cak);
	make("ca2", "test ca2", 1, NULL, NULL, NULL, &ca2, &ca2k);
	make("srv", "127.0.0.1", 0, "127.0.0.1", ca, cak, &c, &k);
	gnutls_x509_crt_deinit(c);
	gnutls_x509_privkey_deinit(k);
	make("cli", "client", 0, NULL, ca, cak, &c, &k);
	gnutls_x509_crt_deinit(c);
	gnutls_x509_privkey_deinit(k);
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_crt_deinit(ca2);
	gnutls_x509_privkey_deinit(cak);
	gnutls_x509_privkey_deinit(ca2k);
	(void)state;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)state;
	return system(cmd) == 0 ? 0 : -1;
}

/* A connected loopback TCP pair. */
static void tcp_pair(int *cli, int *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	*cli = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*cli, (struct sockaddr *)&a, sizeof(a)), 0);
	*srv = accept(l, NULL, NULL);
	assert_true(*srv >= 0);
	close(l);
}

static struct tls_creds *server_creds(int mutual)
{
	char cert[128], key[128], ca[128], err[256];
	struct tls_creds *cr;

	path(cert, sizeof(cert), "srv.pem");
	path(key, sizeof(key), "srv.key");
	path(ca, sizeof(ca), "ca.pem");
	assert_int_equal(tls_creds_server(cert, key, mutual ? ca : NULL, &cr, err, sizeof(err)), 0);
	return cr;
}

static struct tls_creds *client_creds(const char *caname, int with_cert)
{
	char cert[128], key[128], ca[128], err[256];
	struct tls_creds *cr;

	path(cert, sizeof(cert), "cli.pem");
	path(key, sizeof(key), "cli.key");
	path(ca, sizeof(ca), caname);
	assert_int_equal(tls_creds_client(ca, with_cert ? cert : NULL, with_cert ? key : NULL,
					  &cr, err, sizeof(err)), 0);
	return cr;
}

static atomic_int clear_seen;

static void on_clear(int fd, const char *peer)
{
	(void)fd;
	(void)peer;
	clear_seen = 1;
}

/* Dial: server side wrapped first (its handshake runs on its relay). */
static int dial(struct tls_creds *sc, struct tls_creds *cc, const char *host, int stop,
		int *capp, int *sapp, char *err, size_t errlen)
{
	struct tls_info info;
	int cfd, sfd, rc;

	tcp_pair(&cfd, &sfd);
	assert_int_equal(tls_server(sc, sfd, 5000, "test peer", on_clear, sapp), 0);
	rc = tls_client(cc, cfd, host, mono_ms() + 5000, stop, capp, &info, err, errlen);
	if (rc) {
		print_message("dial %s: %d %s\n", host, rc, err);
		close(cfd);
	}
	else
		assert_non_null(strstr(info.desc, "TLS1.3"));
	return rc;
}

#define BULK	(8U << 20)

struct bulk { int fd; uint8_t *out; uint8_t *in; int wrc, rrc; };

static void *writer(void *arg)
{
	struct bulk *b = arg;

	b->wrc = sock_write_full(b->fd, b->out, BULK);
	return NULL;
}

static void fill(uint8_t *p, uint32_t seed)
{
	for (size_t i = 0; i < BULK; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11);
}

static void test_bulk_both_ways(void **state)
{
	struct tls_creds *sc = server_creds(0), *cc = client_creds("ca.pem", 0);
	struct bulk c = { 0 }, s = { 0 };
	pthread_t tc, ts;
	char err[256];
	uint8_t b;

	assert_int_equal(dial(sc, cc, "127.0.0.1", -1, &c.fd, &s.fd, err, sizeof(err)), 0);
	c.out = malloc(BULK); c.in = malloc(BULK);
	s.out = malloc(BULK); s.in = malloc(BULK);
	assert_non_null(c.out); assert_non_null(c.in);
	assert_non_null(s.out); assert_non_null(s.in);
	fill(c.out, 1);
	fill(s.out, 2);
	/* both write everything before either reads: only independent
	 * directions in each relay let this finish */
	pthread_create(&tc, NULL, writer, &c);
	pthread_create(&ts, NULL, writer, &s);
	assert_int_equal(sock_read_full(s.fd, s.in, BULK), 0);
	assert_int_equal(sock_read_full(c.fd, c.in, BULK), 0);
	pthread_join(tc, NULL);
	pthread_join(ts, NULL);
	assert_int_equal(c.wrc, 0);
	assert_int_equal(s.wrc, 0);
	assert_memory_equal(s.in, c.out, BULK);
	assert_memory_equal(c.in, s.out, BULK);
	/* the client closing ends the server's side with EOF */
	close(c.fd);
	assert_int_equal(sock_read_full(s.fd, &b, 1), -ECONNRESET);
	close(s.fd);
	free(c.out); free(c.in); free(s.out); free(s.in);
	tls_creds_put(sc);
	tls_creds_put(cc);
	(void)state;
}

static void test_refusals(void **state)
{
	struct tls_creds *sc = server_creds(0), *msc = server_creds(1);
	struct tls_creds *wrong = client_creds("ca2.pem", 0), *plain = client_creds("ca.pem", 0);
	struct tls_creds *mutual = client_creds("ca.pem", 1);
	char err[256], b;
	int c, s;

	assert_int_equal(dial(sc, wrong, "127.0.0.1", -1, &c, &s, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "certificate refused"));
	close(s);
	assert_int_equal(dial(sc, plain, "127.0.0.2", -1, &c, &s, err, sizeof(err)), -EACCES);
	close(s);
	assert_int_equal(dial(msc, plain, "127.0.0.1", -1, &c, &s, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "client certificate"));
	close(s);
	assert_int_equal(dial(msc, mutual, "127.0.0.1", -1, &c, &s, err, sizeof(err)), 0);
	assert_int_equal(sock_write_full(c, "x", 1), 0);
	assert_int_equal(sock_read_full(s, &b, 1), 0);
	assert_int_equal(b, 'x');
	close(c);
	close(s);
	tls_creds_put(sc); tls_creds_put(msc); tls_creds_put(wrong);
	tls_creds_put(plain); tls_creds_put(mutual);
	(void)state;
}

static void test_clear_client_and_stop(void **state)
{
	struct tls_creds *sc = server_creds(0), *cc = client_creds("ca.pem", 0);
	char err[256];
	uint64_t one = 1;
	int cfd, sfd, app, efd;

	/* a clear-text first byte goes to the callback, not to a handshake */
	clear_seen = 0;
	tcp_pair(&cfd, &sfd);
	assert_int_equal(tls_server(sc, sfd, 5000, "clear peer", on_clear, &app), 0);
	assert_int_equal(sock_write_full(cfd, "MARU", 4), 0);
	for (int i = 0; i < 500 && !clear_seen; i++)
		usleep(10000);
	assert_int_equal(clear_seen, 1);
	close(cfd);
	close(app);
	/* a fired stop descriptor ends the client's handshake at once */
	efd = eventfd(0, 0);
	assert_true(efd >= 0);
	assert_int_equal(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	tcp_pair(&cfd, &sfd);
	assert_int_equal(tls_client(cc, cfd, "127.0.0.1", mono_ms() + 5000, efd, &app, NULL, err,
				    sizeof(err)), -EINTR);
	close(cfd);
	close(sfd);
	close(efd);
	tls_creds_put(cc);
	/* a CA file without a certificate, a certificate without its key */
	assert_int_equal(tls_creds_client("/dev/null", NULL, NULL, &cc, err, sizeof(err)) < 0, 1);
	assert_int_equal(tls_creds_client("/dev/null", "/dev/null", NULL, &cc, err, sizeof(err)),
			 -EINVAL);
	tls_creds_put(sc);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bulk_both_ways),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_clear_client_and_stop),
	};

	return cmocka_run_group_tests_name("tls", tests, setup, teardown);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/daemon/srvtls_test.c: marud's side of TLS (daemon/srvtls.c)
 * over real loopback TCP connections, the client being lib/common/tls.c's.
 * Certificates are made here with GnuTLS: two CAs, a server certificate
 * for 127.0.0.1 signed by each. Faked: the server, a zeroed struct server
 * holding only what srvtls.c reads (cfg's tls-* paths, the handshake
 * timeout). Cases: TLS off (no certificate: nothing to wrap); a
 * certificate that cannot be loaded; a wrapped connection serving bytes
 * both ways under the certificate configured; a reload: new connections
 * take the new certificate, one made before keeps working, the paths are
 * kept for a reload without a configuration, which reads the same files
 * again; a failed reload keeps the running certificate; turning TLS or
 * client certificates on or off is left to a restart; a clear-text client
 * is told -EPROTONOSUPPORT in clear.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "clock.h"
#include "proto.h"
#include "server_priv.h"
#include "sockio.h"
#include "srvtls.h"
#include "tls.h"

static char dir[64];
static struct server srv;

static void path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void save(const char *name, const char *ext, gnutls_datum_t *d)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s.%s", dir, name, ext);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(d->data, 1, d->size, f), d->size);
	fclose(f);
	gnutls_free(d->data);
}

/* name.pem and name.key: a CA (signer NULL) or a 127.0.0.1 server cert. */
static void issue(const char *name, gnutls_x509_crt_t ca, gnutls_x509_privkey_t cakey,
		  gnutls_x509_crt_t *crt_out, gnutls_x509_privkey_t *key_out)
{
	static const unsigned char lo[4] = { 127, 0, 0, 1 };
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	unsigned char serial[8];
	gnutls_datum_t d;
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
	gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, name, strlen(name));
	gnutls_x509_crt_set_key(crt, key);
	gnutls_x509_crt_set_basic_constraints(crt, !ca, -1);
	if (!ca) {
		gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN);
	} else {
		gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
		gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
		gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, lo, 4,
						     GNUTLS_FSAN_SET);
	}
	assert_int_equal(gnutls_x509_crt_sign2(crt, ca ? ca : crt, ca ? cakey : key,
					       GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
	save(name, "pem", &d);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d), 0);
	save(name, "key", &d);
	if (crt_out) {
		*crt_out = crt;
		*key_out = key;
	} else {
		gnutls_x509_crt_deinit(crt);
		gnutls_x509_privkey_deinit(key);
	}
}

static int group_setup(void **state)
{
	gnutls_x509_crt_t ca1, ca2;
	gnutls_x509_privkey_t k1, k2;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/marud-srvtls.XXXXXX");
	assert_non_null(mkdtemp(dir));
	issue("ca1", NULL, NULL, &ca1, &k1);
	issue("ca2", NULL, NULL, &ca2, &k2);
	issue("s1", ca1, k1, NULL, NULL);
	issue("s2", ca2, k2, NULL, NULL);
	gnutls_x509_crt_deinit(ca1);
	gnutls_x509_crt_deinit(ca2);
	gnutls_x509_privkey_deinit(k1);
	gnutls_x509_privkey_deinit(k2);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A configuration naming certificate name (NULL: none), optionally a client CA. */
static void conf(struct config *c, const char *name, const char *client_ca)
{
	memset(c, 0, sizeof(*c));
	if (name) {
		snprintf(c->tls_cert, sizeof(c->tls_cert), "%s/%s.pem", dir, name);
		snprintf(c->tls_key, sizeof(c->tls_key), "%s/%s.key", dir, name);
	}
	if (client_ca)
		path(c->tls_client_ca, sizeof(c->tls_client_ca), client_ca);
}

static int setup(void **state)
{
	(void)state;
	memset(&srv, 0, sizeof(srv));
	atomic_store(&srv.hs_timeout_ms, 5000);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	srvtls_close(&srv);
	return 0;
}

static void tcp_pair(int *cli, int *sfd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	*cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(*cli, (struct sockaddr *)&a, sizeof(a)), 0);
	*sfd = accept(l, NULL, NULL);
	assert_true(*sfd >= 0);
	close(l);
}

/*
 * A connection wrapped by srvtls_wrap(), dialled by a client trusting ca:
 * the client's result; on success *capp, *sapp are the two ends.
 */
static int dial(const char *ca, int *capp, int *sapp)
{
	struct tls_creds *cc;
	char cafile[128], err[256];
	int cfd, sfd, rc;

	path(cafile, sizeof(cafile), ca);
	assert_int_equal(tls_creds_client(cafile, NULL, NULL, &cc, err, sizeof(err)), 0);
	tcp_pair(&cfd, &sfd);
	*sapp = srvtls_wrap(&srv, sfd, "test peer");
	assert_true(*sapp >= 0);
	rc = tls_client(cc, cfd, "127.0.0.1", mono_ms() + 5000, -1, capp, NULL, err,
			sizeof(err));
	tls_creds_put(cc);
	if (rc) {
		close(cfd);
		close(*sapp);
	}
	return rc;
}

/* One byte each way through the session. */
static void ping(int capp, int sapp, char x)
{
	char b = 0;

	assert_int_equal(sock_write_full(capp, &x, 1), 0);
	assert_int_equal(sock_read_full(sapp, &b, 1), 0);
	assert_int_equal(b, x);
	assert_int_equal(sock_write_full(sapp, &x, 1), 0);
	assert_int_equal(sock_read_full(capp, &b, 1), 0);
	assert_int_equal(b, x);
}

static void test_off(void **state)
{
	struct config nc;

	(void)state;
	assert_int_equal(srvtls_open(&srv), 0);
	assert_false(srvtls_on(&srv));
	assert_int_equal(srvtls_wrap(&srv, -1, "p"), -EINVAL);
	conf(&nc, "s1", NULL);		/* turning it on is for a restart */
	assert_int_equal(srvtls_reload(&srv, &nc), 0);
	assert_false(srvtls_on(&srv));
	assert_int_equal(srvtls_reload(&srv, NULL), 0);
	assert_false(srvtls_on(&srv));
}

static void test_open_fails(void **state)
{
	(void)state;
	conf(&srv.cfg, "s1", NULL);
	path(srv.cfg.tls_key, sizeof(srv.cfg.tls_key), "missing.key");
	assert_true(srvtls_open(&srv) < 0);
	assert_false(srvtls_on(&srv));
	conf(&srv.cfg, "s1", "missing-ca.pem");
	assert_true(srvtls_open(&srv) < 0);
	assert_false(srvtls_on(&srv));
}

static void test_wrap_serves(void **state)
{
	int c, s;

	(void)state;
	conf(&srv.cfg, "s1", NULL);
	assert_int_equal(srvtls_open(&srv), 0);
	assert_true(srvtls_on(&srv));
	assert_int_equal(dial("ca1.pem", &c, &s), 0);
	ping(c, s, 'a');
	close(c);
	close(s);
	/* the certificate is s1's: a client trusting only ca2 refuses it */
	assert_int_equal(dial("ca2.pem", &c, &s), -EACCES);
}

/* New connections take the new certificate; live ones keep theirs. */
static void test_reload(void **state)
{
	struct config nc;
	char want[128];
	int c1, s1, c2, s2, c, s;

	(void)state;
	conf(&srv.cfg, "s1", NULL);
	assert_int_equal(srvtls_open(&srv), 0);
	assert_int_equal(dial("ca1.pem", &c1, &s1), 0);
	conf(&nc, "s2", NULL);
	assert_int_equal(srvtls_reload(&srv, &nc), 0);
	assert_true(srvtls_on(&srv));
	assert_int_equal(dial("ca2.pem", &c2, &s2), 0);
	assert_int_equal(dial("ca1.pem", &c, &s), -EACCES);
	ping(c1, s1, 'o');		/* made before: still served */
	ping(c2, s2, 'n');
	/* the paths kept for a reload without a configuration */
	path(want, sizeof(want), "s2.pem");
	assert_string_equal(srv.cfg.tls_cert, want);
	path(want, sizeof(want), "s2.key");
	assert_string_equal(srv.cfg.tls_key, want);
	close(c1);
	close(s1);
	close(c2);
	close(s2);
}

/* A reload with no configuration reads the running paths again. */
static void test_reload_same_files(void **state)
{
	char cmd[512];
	int c, s;

	(void)state;
	snprintf(cmd, sizeof(cmd), "cp %s/s1.pem %s/live.pem && cp %s/s1.key %s/live.key",
		 dir, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	conf(&srv.cfg, "live", NULL);
	assert_int_equal(srvtls_open(&srv), 0);
	assert_int_equal(dial("ca1.pem", &c, &s), 0);
	close(c);
	close(s);
	/* the files replaced in place (a renewal), then SIGHUP */
	snprintf(cmd, sizeof(cmd), "cp %s/s2.pem %s/live.pem && cp %s/s2.key %s/live.key",
		 dir, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(srvtls_reload(&srv, NULL), 0);
	assert_int_equal(dial("ca2.pem", &c, &s), 0);
	close(c);
	close(s);
}

/* A reload that cannot load keeps the running certificate and paths. */
static void test_reload_fails_keeps(void **state)
{
	struct config nc;
	char want[128];
	int c, s;

	(void)state;
	conf(&srv.cfg, "s1", NULL);
	assert_int_equal(srvtls_open(&srv), 0);
	conf(&nc, "s2", NULL);
	path(nc.tls_key, sizeof(nc.tls_key), "missing.key");
	assert_true(srvtls_reload(&srv, &nc) < 0);
	assert_true(srvtls_on(&srv));
	assert_int_equal(dial("ca1.pem", &c, &s), 0);
	close(c);
	close(s);
	path(want, sizeof(want), "s1.key");
	assert_string_equal(srv.cfg.tls_key, want);
	/* a key that is not the certificate's */
	conf(&nc, "s2", NULL);
	path(nc.tls_key, sizeof(nc.tls_key), "s1.key");
	assert_true(srvtls_reload(&srv, &nc) < 0);
	assert_int_equal(dial("ca1.pem", &c, &s), 0);
	close(c);
	close(s);
}

/* Off, or client certificates on or off: a restart's, not a reload's. */
static void test_reload_no_toggle(void **state)
{
	struct config nc;
	int c, s;

	(void)state;
	conf(&srv.cfg, "s1", NULL);
	assert_int_equal(srvtls_open(&srv), 0);
	conf(&nc, NULL, NULL);
	assert_int_equal(srvtls_reload(&srv, &nc), 0);
	assert_true(srvtls_on(&srv));
	conf(&nc, "s2", "ca1.pem");	/* client certificates asked from now on */
	assert_int_equal(srvtls_reload(&srv, &nc), 0);
	/* still s1, still no client certificate asked */
	assert_int_equal(dial("ca1.pem", &c, &s), 0);
	ping(c, s, 't');
	close(c);
	close(s);
}

/* A clear-text client's first request is answered in clear, then closed. */
static void test_clear_client(void **state)
{
	struct proto_hdr h, r;
	int cfd, sfd, app;
	char b;

	(void)state;
	conf(&srv.cfg, "s1", NULL);
	assert_int_equal(srvtls_open(&srv), 0);
	tcp_pair(&cfd, &sfd);
	app = srvtls_wrap(&srv, sfd, "clear peer");
	assert_true(app >= 0);
	proto_hdr_init(&h, OP_HELLO, 0, 77, 0, 0);
	assert_int_equal(sock_write_full(cfd, &h, sizeof(h)), 0);
	assert_int_equal(sock_read_full(cfd, &r, sizeof(r)), 0);
	assert_int_equal(r.magic, PROTO_MAGIC);
	assert_int_equal(r.op, OP_HELLO);
	assert_int_equal(r.reqid, 77);
	assert_int_equal(r.status, -EPROTONOSUPPORT);
	assert_int_equal(sock_read_full(cfd, &b, 1), -ECONNRESET);	/* then EOF */
	close(cfd);
	close(app);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrap_serves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_same_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_fails_keeps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_no_toggle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clear_client, setup, teardown),
	};

	return cmocka_run_group_tests_name("srvtls", tests, group_setup, group_teardown);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/lib/certs.c: the certificates of certs.h, ECDSA P-256,
 * valid from a minute ago for an hour.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "certs.h"

enum kind { CA, SERVER, CLIENT };

void certs_path(const char *dir, char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void save(const char *dir, const char *name, const char *ext, gnutls_datum_t *d)
{
	char file[64], p[160];
	FILE *f;

	snprintf(file, sizeof(file), "%s.%s", name, ext);
	certs_path(dir, p, sizeof(p), file);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(d->data, 1, d->size, f), d->size);
	fclose(f);
	gnutls_free(d->data);
}

static void usage(gnutls_x509_crt_t crt, enum kind k)
{
	static const unsigned char v4[4] = { 127, 0, 0, 1 };
	static const unsigned char v6[16] = { [15] = 1 };

	gnutls_x509_crt_set_basic_constraints(crt, k == CA, -1);
	if (k == CA) {
		gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN);
		return;
	}
	gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
	gnutls_x509_crt_set_key_purpose_oid(crt, k == SERVER ? GNUTLS_KP_TLS_WWW_SERVER :
					    GNUTLS_KP_TLS_WWW_CLIENT, 0);
	if (k == SERVER) {
		gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, v4, 4,
						     GNUTLS_FSAN_SET);
		gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, v6, 16,
						     GNUTLS_FSAN_APPEND);
	}
}

/* name.pem and name.key of kind k, signed by (ca, cakey) or self-signed. */
static void make(const char *dir, const char *name, enum kind k, gnutls_x509_crt_t ca,
		 gnutls_x509_privkey_t cakey, gnutls_x509_crt_t *crt_out,
		 gnutls_x509_privkey_t *key_out)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t d;
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
	gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, name, strlen(name));
	gnutls_x509_crt_set_key(crt, key);
	usage(crt, k);
	assert_int_equal(gnutls_x509_crt_sign2(crt, ca ? ca : crt, ca ? cakey : key,
					       GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
	save(dir, name, "pem", &d);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d), 0);
	save(dir, name, "key", &d);
	*crt_out = crt;
	*key_out = key;
}

void certs_make(char *dir, size_t cap, const char *tag)
{
	gnutls_x509_crt_t ca, ca2, c;
	gnutls_x509_privkey_t cak, ca2k, k;

	snprintf(dir, cap, "/tmp/maru-%s.XXXXXX", tag);
	assert_non_null(mkdtemp(dir));
	make(dir, "ca", CA, NULL, NULL, &ca, &cak);
	make(dir, "ca2", CA, NULL, NULL, &ca2, &ca2k);
	make(dir, "srv", SERVER, ca, cak, &c, &k);
	gnutls_x509_crt_deinit(c);
	gnutls_x509_privkey_deinit(k);
	make(dir, "cli", CLIENT, ca, cak, &c, &k);
	gnutls_x509_crt_deinit(c);
	gnutls_x509_privkey_deinit(k);
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_crt_deinit(ca2);
	gnutls_x509_privkey_deinit(cak);
	gnutls_x509_privkey_deinit(ca2k);
}

void certs_remove(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

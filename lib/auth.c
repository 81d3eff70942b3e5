/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/auth.c: the client side of the shared-key authentication (lib/common/proto/proto.h,
 * OP_AUTH): loading the key file and the mutual HMAC challenge-response run
 * on every socket before HELLO. The key never leaves this process; only MACs
 * over fresh nonces cross the wire, and the client checks marud's proof
 * before giving its own, so a fake marud learns nothing it could replay.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_priv.h"
#include "auth.h"
#include "frame.h"
#include "keyfile.h"

#define KEY_FILE_MAX	(64 * 1024)

/* sodium_init() is idempotent and thread-safe: the only global state we use. */
static int sodium_ready(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

static int read_all(int fd, uint8_t *buf, size_t cap, size_t *out)
{
	size_t n = 0;
	ssize_t k;

	while (n < cap) {
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	*out = n;
	return 0;
}

static int key_file_mode_ok(const struct maru_client *c, const char *path,
			    const struct stat *st)
{
	if (!S_ISREG(st->st_mode)) {
		clog_warnx(c, "key file %s is not a regular file", path);
		return -EINVAL;
	}
	if (st->st_mode & 077) {
		clog_warnx(c, "key file %s must be mode 0600 (it is %04o): refusing it", path,
			  (unsigned int)(st->st_mode & 07777));
		return -EACCES;
	}
	return 0;
}

/* A key file in keyfile.h's format: exactly one key, admin or named. */
static int load_v1(const struct maru_client *c, const char *path, const uint8_t *buf,
		   size_t n, uint8_t key[32], char name[64])
{
	const struct keyfile_key *k;
	struct keyfile kf;
	char why[512];
	int rc;

	rc = keyfile_parse(path, (const char *)buf, n, &kf, why, sizeof(why));
	if (rc) {
		clog_warnx(c, "%s", why);
		return rc;
	}
	if (kf.have_admin + kf.nkeys != 1) {
		clog_warnx(c, "key file %s holds %u keys: a client's key file holds one "
			   "(an admin line or one key line)", path, kf.have_admin + kf.nkeys);
		keyfile_free(&kf);
		return -EINVAL;
	}
	k = kf.have_admin ? &kf.admin : &kf.keys[0];
	crypto_generichash(key, 32, (const uint8_t *)k->secret, k->secret_len, NULL, 0);
	snprintf(name, 64, "%s", k->name);
	keyfile_free(&kf);
	return 0;
}

int auth_load_key(const struct maru_client *c, const char *path, uint8_t key[32],
		  char name[64])
{
	struct stat st;
	uint8_t *buf;
	size_t n = 0;
	int fd, rc;

	rc = sodium_ready();
	if (rc)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		clog_warn(c, rc, "key file %s", path);
		return rc;
	}
	rc = fstat(fd, &st) ? -errno : key_file_mode_ok(c, path, &st);
	buf = rc ? NULL : malloc(KEY_FILE_MAX + 1);
	if (!rc && !buf)
		rc = -ENOMEM;
	if (!rc)
		rc = read_all(fd, buf, KEY_FILE_MAX + 1, &n);
	if (!rc && (n == 0 || n > KEY_FILE_MAX)) {
		clog_warnx(c, "key file %s must hold 1..%d bytes", path, KEY_FILE_MAX);
		rc = -EINVAL;
	}
	name[0] = '\0';
	if (!rc && keyfile_is_v1((const char *)buf, n))
		rc = load_v1(c, path, buf, n, key, name);
	else if (!rc)
		crypto_generichash(key, 32, buf, n, NULL, 0);
	if (buf) {
		sodium_memzero(buf, KEY_FILE_MAX + 1);
		free(buf);
	}
	close(fd);
	return rc;
}

/* HMAC(key, label || a || b) over two 32-byte nonces. */
static void auth_mac(uint8_t mac[32], const uint8_t key[32], const char *label,
		     const uint8_t a[32], const uint8_t b[32])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, 32);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, a, 32);
	crypto_auth_hmacsha256_update(&st, b, 32);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

/* One AUTH round trip; the reply (if any) lands in *rep. */
static int auth_round(const struct maru_client *c, int fd, const struct proto_auth *q,
		      struct proto_auth *rep, int want_body)
{
	struct proto_auth_named qn;
	struct req r = { .op = OP_AUTH, .p1 = q, .n1 = sizeof(*q),
			 .rbuf = rep, .rcap = sizeof(*rep) };
	struct proto_hdr h;
	int rc;

	/* a scoped key is named (proto.h, proto_auth_named) */
	if (c->key_name[0]) {
		memset(&qn, 0, sizeof(qn));
		qn.a = *q;
		snprintf(qn.key_name, sizeof(qn.key_name), "%s", c->key_name);
		r.p1 = &qn;
		r.n1 = sizeof(qn);
	}
	proto_hdr_init(&h, OP_AUTH, (uint32_t)r.n1, 0, 0, 0);
	rc = frame_call(fd, PROTO_MAX_FRAME, &h, &r);
	if (rc)
		return rc;
	if (r.status)
		return r.status == -EACCES ? -EACCES : r.status;
	if (want_body && r.rlen != sizeof(*rep))
		return -EPROTO;
	return 0;
}

int auth_exchange(const struct maru_client *c, int fd)
{
	const uint8_t *key = c->key;
	struct proto_auth q, rep;
	uint8_t mac[32];
	int rc;

	rc = sodium_ready();
	if (rc)
		return rc;
	memset(&q, 0, sizeof(q));
	randombytes_buf(q.nonce, sizeof(q.nonce));
	rc = auth_round(c, fd, &q, &rep, 1);
	if (rc)
		goto out;
	auth_mac(mac, key, "marud", q.nonce, rep.nonce);
	if (sodium_memcmp(mac, rep.mac, sizeof(mac)) != 0) {
		clog_warnx(c, "wrong key: marud failed to prove the shared key, so ours differs "
			   "from marud's key-file (or this is not the marud meant); not "
			   "answering it");
		rc = -EACCES;
		goto out;
	}
	auth_mac(q.mac, key, "maruc", rep.nonce, q.nonce);
	rc = auth_round(c, fd, &q, &rep, 0);
	if (rc == -EACCES)
		clog_warnx(c, "wrong key: marud refused our key (it differs from marud's "
			   "key-file)");
out:
	sodium_memzero(&q, sizeof(q));
	sodium_memzero(mac, sizeof(mac));
	return rc;
}

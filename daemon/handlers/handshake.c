// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * daemon/handlers/handshake.c: the handlers that start a connection: PING,
 * the two-step AUTH (HMAC-SHA256 over both nonces under the configured key)
 * and HELLO (a new or reclaimed session, the pool's description). They set
 * the connection's auth and session state that dispatch.c's gate reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "admit.h"
#include "ext.h"
#include "handlers.h"
#include "rdma.h"
#include "log.h"
#include "pool.h"
#include "server_priv.h"
#include "session.h"

HANDLER(hdl_ping)
{
	return 0;
}

static void auth_mac(const uint8_t *key, const char *label, const uint8_t *a,
		     const uint8_t *b, uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, CONFIG_KEY_BYTES);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label));
	crypto_auth_hmacsha256_update(&st, a, 32);
	crypto_auth_hmacsha256_update(&st, b, 32);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

/* Logged with a count per source (admit.c): a client in a retry loop is one line. */
static int auth_fail(struct conn *c, const char *why)
{
	admit_refused(c->srv, c->src, why);
	c->close = 1;
	return -EACCES;
}

/*
 * The key this AUTH proves (key out): the administrator's for a plain
 * AUTH, the named key's for a proto_auth_named (its tenant in *tn). A name
 * marud does not hold, or a second step naming another key, is a wrong key.
 */
static int auth_key(struct conn *c, const uint8_t *p, uint32_t len, uint8_t *key,
		    struct tenant **tn)
{
	const struct proto_auth_named *rn = (const void *)p;
	char name[PROTO_KEY_NAME_MAX];

	*tn = NULL;
	if (len == sizeof(*rn)) {
		if (!memchr(rn->key_name, '\0', sizeof(rn->key_name)) || !rn->key_name[0])
			return auth_fail(c, "AUTH key name not 1..63 bytes and NUL-terminated");
		memcpy(name, rn->key_name, sizeof(name));
		*tn = tenants_find(&c->srv->tenants, name);
		if (!*tn || atomic_load(&(*tn)->revoked)) {
			log_warnx("%s: AUTH names key '%s', which the key file does not hold",
				  c->peer, name);
			return auth_fail(c, "unknown key name");
		}
		memcpy(key, (*tn)->key, CONFIG_KEY_BYTES);
	} else {
		pthread_mutex_lock(&c->srv->tenants.lock);
		memcpy(key, c->srv->key, CONFIG_KEY_BYTES);
		pthread_mutex_unlock(&c->srv->tenants.lock);
	}
	if (c->auth_stage == 1 && *tn != c->tenant)
		return auth_fail(c, "AUTH step 2 names another key than step 1");
	return 0;
}

HANDLER(hdl_auth)
{
	const struct proto_auth *req = (const void *)p;
	struct proto_auth rep;
	struct tenant *tn;
	uint8_t mac[32], key[CONFIG_KEY_BYTES];
	int rc;

	if (!c->srv->have_key)
		return -EOPNOTSUPP;
	if (c->authed)
		return 0;
	rc = auth_key(c, p, len, key, &tn);
	if (rc)
		return rc;
	if (c->auth_stage == 0) {
		c->tenant = tn;
		memcpy(c->nonce_c, req->nonce, 32);
		randombytes_buf(c->nonce_s, 32);
		memcpy(rep.nonce, c->nonce_s, 32);
		auth_mac(key, "marud", c->nonce_c, c->nonce_s, rep.mac);
		sodium_memzero(key, sizeof(key));
		c->auth_stage = 1;
		return proto_buf_put(out, &rep, sizeof(rep));
	}
	if (sodium_memcmp(req->nonce, c->nonce_c, 32))
		return auth_fail(c, "AUTH out of order (client nonce changed)");
	auth_mac(key, "maruc", c->nonce_s, c->nonce_c, mac);
	sodium_memzero(key, sizeof(key));
	if (sodium_memcmp(mac, req->mac, 32))
		return auth_fail(c, "wrong key (the client's AUTH proof does not match marud's key)");
	c->authed = 1;
	if (tn)
		log_info("%s: authenticated with key '%s' (root %s, %s)", c->peer, tn->name,
			 tn->root_path, tenant_ro(tn) ? "ro" : "rw");
	else
		log_debug("%s: authenticated", c->peer);
	/* The last step answers with status alone (lib/common/proto/proto.h). */
	return 0;
}

/*
 * A client whose session had ended (a partition longer than the grace, a
 * marud restart) asks to reclaim it and gets a new one; the calls it had
 * in flight then reach the new session and name versions of the old one
 * (an ABANDON, a READ under the old lease), which are refused as they must
 * be. That is the expected case after a reconnect, not an attack: the last
 * REBORN_KEEP such sessions are remembered (by token) so that dispatch.c
 * logs those refusals at debug level only.
 */
static void reborn_note(struct server *srv, const uint8_t *token)
{
	pthread_mutex_lock(&srv->reborn_lock);
	memcpy(srv->reborn[srv->reborn_next++ % REBORN_KEEP], token, SESSION_TOKEN_BYTES);
	pthread_mutex_unlock(&srv->reborn_lock);
}

int hdl_session_reborn(const struct conn *c)
{
	struct server *srv = c->srv;
	unsigned int i, n;
	int found = 0;

	if (!c->sess)
		return 0;
	pthread_mutex_lock(&srv->reborn_lock);
	n = srv->reborn_next < REBORN_KEEP ? srv->reborn_next : REBORN_KEEP;
	for (i = 0; i < n && !found; i++)
		found = !memcmp(srv->reborn[i], session_token(c->sess), SESSION_TOKEN_BYTES);
	pthread_mutex_unlock(&srv->reborn_lock);
	return found;
}

static void hello_fill(struct server *srv, struct session *s, int reclaimed,
		       struct proto_hello_rep *rep)
{
	int scoped = session_tenant(s) != NULL;

	struct pool *pl = srv->pool;

	memset(rep, 0, sizeof(*rep));
	memcpy(rep->uuid, pl->uuid, sizeof(rep->uuid));
	memcpy(rep->token, session_token(s), sizeof(rep->token));
	rep->generation = srv->generation;
	rep->pool_size = pl->size;
	rep->pool_align = pl->align;
	rep->data_off = pl->data_off;
	rep->max_frame = atomic_load(&srv->max_frame);
	rep->reclaimed = (uint32_t)reclaimed;
	/* shared memory cannot isolate: a scoped session is not told the pool */
	rep->backend = scoped ? 0 : (uint32_t)pl->ops->kind;
	snprintf(rep->pool_path, sizeof(rep->pool_path), "%s", scoped ? "" : pl->path);
	/* hint actions as wire bits; libmaru sends only these */
	rep->hint_actions = ext_actions(srv->ext);
	rep->ext_abi = srv->ext ? MARUD_EXTENSION_ABI : 0;
}

/*
 * session_hello(), and the session takes the connection's tenant. A token
 * of another tenant's session (or the administrator's) is not reclaimed:
 * the connection gets a new session, as for an unknown token.
 */
static int hello_session(struct conn *c, const struct proto_hello_req *req, int *reclaimed)
{
	const uint8_t *tok = req->flags & HELLO_F_RECLAIM ? req->token : NULL;
	int rc;

	rc = session_hello(c->srv->sessions, tok, &c->sess, reclaimed);
	if (rc || !*reclaimed || session_tenant(c->sess) == c->tenant) {
		if (!rc && !*reclaimed)
			session_set_tenant(c->sess, c->tenant);
		return rc;
	}
	log_warnx("%s: HELLO reclaims a session of another key: given a new one", c->peer);
	session_detach(c->srv->sessions, c->sess);
	c->sess = NULL;
	rc = session_hello(c->srv->sessions, NULL, &c->sess, reclaimed);
	if (!rc)
		session_set_tenant(c->sess, c->tenant);
	return rc;
}

HANDLER(hdl_hello)
{
	const struct proto_hello_req *req = (const void *)p;
	struct proto_hello_rep *rep;
	char name[sizeof(req->client_name) + 1];
	int rc, reclaimed;

	if (c->sess)
		return -EISCONN;
	if (req->proto_version != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (c->tenant && (req->flags & HELLO_F_SHM)) {
		log_warnx("%s: key '%s' asked for data=shm: refused, a scoped key is never "
			  "handed the pool mapping (use data=tcp)", c->peer, c->tenant->name);
		c->close = 1;
		return -EPERM;
	}
	/* the reply cache's slot: only a connection with a session needs one */
	if (!c->cached) {
		c->cached = malloc(sizeof(*c->cached));
		if (!c->cached)
			return -ENOMEM;
	}
	rc = hello_session(c, req, &reclaimed);
	if (rc)
		return rc;
	if ((req->flags & HELLO_F_RECLAIM) && !reclaimed)
		reborn_note(c->srv, session_token(c->sess));
	/* An event socket names the session it serves: that session's own
	 * changes need not wait for this stream's acknowledgements. */
	if (req->flags & HELLO_F_EVENTS) {
		memcpy(c->owner, req->token, sizeof(c->owner));
		c->has_owner = 1;
		c->owner_sid = sessions_token_sid(c->srv->sessions, req->token);
	}
	c->dirattr = (req->flags & HELLO_F_DIRATTR) != 0;
	rc = proto_buf_reserve(out, sizeof(*rep));
	if (rc)
		return rc;
	rep = (struct proto_hello_rep *)(out->data + out->len);
	hello_fill(c->srv, c->sess, reclaimed, rep);
	/* the rdma path only for a connection that proved the key (or, with
	 * none configured, one that can only be local: config_check.c) */
	if ((req->flags & HELLO_F_RDMA) && (c->authed || !c->srv->have_key) && !c->tenant)
		rdma_hello(c->srv->rdma, c->sess, NULL, rep);
	out->len += sizeof(*rep);
	memcpy(name, req->client_name, sizeof(req->client_name));
	name[sizeof(req->client_name)] = '\0';
	log_debug("%s: hello from '%s' pid %llu: session %llu%s", c->peer, name,
		  (unsigned long long)req->pid,
		  (unsigned long long)dir_session_id(session_dir(c->sess)),
		  reclaimed ? " (reclaimed)" : "");
	return 0;
}

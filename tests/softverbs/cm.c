// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/cm.c: the rdma_cm half of the software verbs device —
 * event channels (a pipe per channel, one byte per queued event), cm ids,
 * address and route resolution against the host's real IP routing, and the
 * connection handshake carried on the emulated wire:
 *
 *   active                          passive
 *   rdma_connect   --- REQ --->     CONNECT_REQUEST (listener's channel)
 *                  <-- REP ----     rdma_accept (QP -> RTR -> RTS)
 *   QP -> RTR -> RTS, ESTABLISHED
 *   (taken by rdma_get_cm_event)
 *                  --- RTU --->     ESTABLISHED
 *   (or)           <-- REJ ----     rdma_reject: REJECTED, status 28
 *   rdma_disconnect -- DREQ -->     DISCONNECTED; DREP sent back
 *   DISCONNECTED   <-- DREP ---
 *
 * A wire that drops (peer exit, drop_conn_after) gives DISCONNECTED once
 * established, UNREACHABLE while connecting, CONNECT_ERROR after an accept.
 * A connect with no listener gives REJECTED with status 8, as IB CM does
 * for an unknown service id.
 */
#include "sv.h"
#include "softverbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SV_REJ_CONSUMER 28
#define SV_REJ_INVALID_SERVICE 8

static struct sv_id *sv_id(struct rdma_cm_id *id)
{
	return sv_container(id, struct sv_id, id);
}

SV_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct sv_chan *c = calloc(1, sizeof(*c));
	int p[2];

	if (!c || pipe2(p, O_CLOEXEC) < 0) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	c->ch.fd = p[0];
	c->wr_fd = p[1];
	sv_list_init(&c->events);
	sv_lock();
	sv_init_locked();
	sv_unlock();
	return &c->ch;
}

SV_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct sv_chan *c = sv_container(channel, struct sv_chan, ch);

	sv_lock();
	sv_foreach(l, &c->events) {
		sv_list_del(l);
		free(sv_container(l, struct sv_evt, link));
	}
	sv_unlock();
	close(c->ch.fd);
	close(c->wr_fd);
	free(c);
}

static struct sv_evt *sv_evt_post(struct sv_id *i, struct rdma_cm_id *listen,
				  enum rdma_cm_event_type type, int status)
{
	struct rdma_event_channel *ch = listen ? listen->channel : i->id.channel;
	struct sv_chan *c = sv_container(ch, struct sv_chan, ch);
	struct sv_evt *e = calloc(1, sizeof(*e));
	char b = 1;
	ssize_t n;

	if (!e)
		return NULL;
	e->ev.id = &i->id;
	e->ev.listen_id = listen;
	e->ev.event = type;
	e->ev.status = status;
	sv_list_add_tail(&c->events, &e->link);
	n = write(c->wr_fd, &b, 1);
	(void)n;
	return e;
}

static void sv_evt_conn(struct sv_evt *e, const struct sv_cm_wire *w,
			const uint8_t *pdata)
{
	size_t len = w->pdata_len < sizeof(e->pdata) ? w->pdata_len : sizeof(e->pdata);

	if (!e)
		return;
	memcpy(e->pdata, pdata, len);
	e->ev.param.conn.private_data = len ? e->pdata : NULL;
	e->ev.param.conn.private_data_len = (uint8_t)len;
	e->ev.param.conn.responder_resources = w->initiator_depth;
	e->ev.param.conn.initiator_depth = w->responder_resources;
	e->ev.param.conn.retry_count = w->retry;
	e->ev.param.conn.rnr_retry_count = w->rnr;
	e->ev.param.conn.qp_num = w->qpn;
}

/*
 * As librdmacm: the active side's QP goes to RTS and the RTU leaves when the
 * program takes its connect response (here: its ESTABLISHED) from
 * rdma_get_cm_event(), so the passive side is established only after that.
 */
static void sv_rtu_send_locked(struct rdma_cm_id *id)
{
	struct sv_msg m = { .type = SV_MSG_RTU };

	sv_foreach(l, &sv.ids) {
		struct sv_id *i = sv_container(l, struct sv_id, link);

		if (&i->id != id || !i->rtu_due)
			continue;
		i->rtu_due = false;
		if (i->conn && !i->conn->dead)
			sv_conn_send(i->conn, &m, NULL, 0, NULL, 0);
		return;
	}
}

SV_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				struct rdma_cm_event **event)
{
	struct sv_chan *c = sv_container(channel, struct sv_chan, ch);
	struct sv_evt *e;
	char b;

	if (read(channel->fd, &b, 1) != 1)
		return -1;
	sv_lock();
	if (sv_list_empty(&c->events)) {
		sv_unlock();
		errno = EIO;
		return -1;
	}
	e = sv_container(c->events.next, struct sv_evt, link);
	sv_list_del(&e->link);
	if (e->ev.event == RDMA_CM_EVENT_ESTABLISHED)
		sv_rtu_send_locked(e->ev.id);
	sv_unlock();
	*event = &e->ev;
	return 0;
}

SV_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	free(sv_container(event, struct sv_evt, ev));
	return 0;
}

SV_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const s[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event >= sizeof(s) / sizeof(s[0]))
		return "UNKNOWN EVENT";
	return s[event];
}

static struct ibv_context *sv_cm_ctx_locked(void)
{
	if (!sv.cm_ctx)
		sv.cm_ctx = sv_open_ctx();
	return sv.cm_ctx;
}

SV_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **l = calloc(2, sizeof(*l));

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	sv_lock();
	sv_init_locked();
	l[0] = sv_cm_ctx_locked();
	sv_unlock();
	if (num_devices)
		*num_devices = l[0] ? 1 : 0;
	return l;
}

SV_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

static struct sv_id *sv_id_new(struct rdma_event_channel *ch, void *context,
			       enum rdma_port_space ps)
{
	struct sv_id *i = calloc(1, sizeof(*i));

	if (!i)
		return NULL;
	i->id.channel = ch;
	i->id.context = context;
	i->id.ps = ps;
	i->id.qp_type = IBV_QPT_RC;
	i->id.port_num = 1;
	i->state = SV_ID_IDLE;
	sv_list_add_tail(&sv.ids, &i->link);
	return i;
}

SV_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			     struct rdma_cm_id **id, void *context,
			     enum rdma_port_space ps)
{
	struct rdma_event_channel *ch = channel;
	struct sv_id *i;

	if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB) {
		errno = EINVAL;
		return -1;
	}
	if (!ch && !(ch = rdma_create_event_channel()))
		return -1;
	sv_lock();
	sv_init_locked();
	i = sv_id_new(ch, context, ps);
	if (i)
		i->own_channel = !channel;
	sv_unlock();
	if (!i) {
		if (!channel)
			rdma_destroy_event_channel(ch);
		errno = ENOMEM;
		return -1;
	}
	*id = &i->id;
	return 0;
}

SV_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct sv_id *i = sv_id(id);

	sv_lock();
	if (i->conn)
		sv_conn_free(i->conn);
	if (i->lsock)
		sv_sock_bury(i->lsock);
	sv_foreach(l, &sv.socks) {	/* handshakes not yet claimed by a REQ */
		struct sv_sock *s = sv_container(l, struct sv_sock, link);

		if (s->kind == SV_SOCK_CONN && s->conn->listener == i && !s->conn->id)
			sv_conn_free(s->conn);
	}
	sv_list_del(&i->link);
	sv_unlock();
	if (i->own_channel)
		rdma_destroy_event_channel(id->channel);
	free(i);
	return 0;
}

/* Ephemeral ports differ between processes and runs sharing one host. */
static uint16_t sv_ephemeral_port(void)
{
	static uint64_t x;

	if (!x)
		x = sv_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return (uint16_t)(32768 + x % 28000);
}

static socklen_t sv_salen(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static void sv_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)sa)->sin_port = htons(port);
}

static uint16_t sv_get_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

/* The kernel says whether the IP is one of ours, as rdma_bind_addr would. */
static int sv_ip_is_local(const struct sockaddr *sa)
{
	struct sockaddr_storage ss;
	int fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = 0;

	if (fd < 0)
		return -errno;
	memcpy(&ss, sa, sv_salen(sa));
	sv_set_port((struct sockaddr *)&ss, 0);
	if (bind(fd, (struct sockaddr *)&ss, sv_salen(sa)) < 0)
		rc = -EADDRNOTAVAIL;
	close(fd);
	return rc;
}

static int sv_unix_addr(const struct sockaddr *sa, struct sockaddr_un *un,
			socklen_t *len)
{
	char name[sizeof(un->sun_path) - 1];
	int rc = sv_addr_name(sa, name, sizeof(name));

	if (rc < 0)
		return rc;
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path + 1, name, strlen(name));
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	return 0;
}

/* Bind the listener's wire name; port 0 takes a free ephemeral port. */
static int sv_bind_wire(struct sv_id *i, struct sockaddr *sa)
{
	struct sockaddr_un un;
	socklen_t len;
	bool any = sv_get_port(sa) == 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	for (int tries = 0; tries < 4096; tries++) {
		if (any)
			sv_set_port(sa, sv_ephemeral_port());
		if (sv_unix_addr(sa, &un, &len) == 0 &&
		    bind(fd, (struct sockaddr *)&un, len) == 0) {
			i->lsock = calloc(1, sizeof(*i->lsock));
			if (!i->lsock)
				break;
			i->lsock->kind = SV_SOCK_LISTEN;
			i->lsock->fd = fd;
			i->lsock->id = i;
			/* on sv.socks only once listening: destroying a merely
			 * bound id must find it unlinked, not garbage */
			sv_list_init(&i->lsock->link);
			return 0;
		}
		if (!any)
			break;
	}
	close(fd);
	return -EADDRINUSE;
}

SV_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct sv_id *i = sv_id(id);
	struct sockaddr_storage ss = { 0 };
	int rc;

	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	memcpy(&ss, addr, sv_salen(addr));
	rc = sv_ip_is_local(addr);
	sv_lock();
	if (!rc && i->state != SV_ID_IDLE)
		rc = -EINVAL;
	if (!rc)
		rc = sv_bind_wire(i, (struct sockaddr *)&ss);
	if (!rc) {
		memcpy(&id->route.addr.src_storage, &ss, sizeof(ss));
		id->verbs = sv_cm_ctx_locked();
		i->state = SV_ID_BOUND;
	}
	sv_unlock();
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

SV_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct sv_id *i = sv_id(id);
	int rc = 0;

	sv_lock();
	if (i->state != SV_ID_BOUND || !i->lsock)
		rc = -EINVAL;
	if (!rc)
		rc = sv_nic_start_locked();
	if (!rc && listen(i->lsock->fd, backlog > 0 ? backlog : 128) < 0)
		rc = -errno;
	if (!rc)
		rc = sv_sock_add(i->lsock);
	if (!rc)
		i->state = SV_ID_LISTEN;
	sv_unlock();
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

/* The source the kernel would route from, found with a UDP connect. */
static int sv_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, dst, sv_salen(dst)) < 0 ||
	    getsockname(fd, (struct sockaddr *)src, &len) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int sv_sync_wait(struct sv_id *i, enum rdma_cm_event_type want);

SV_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct sv_id *i = sv_id(id);
	struct sockaddr_storage src = { 0 };
	int rc;

	if (!dst_addr || (dst_addr->sa_family != AF_INET &&
			  dst_addr->sa_family != AF_INET6)) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (src_addr) {
		memcpy(&src, src_addr, sv_salen(src_addr));
		rc = sv_ip_is_local(src_addr);
		if (rc) {
			errno = -rc;
			return -1;
		}
	}
	rc = src_addr ? 0 : sv_route_src(dst_addr, &src);
	sv_lock();
	if (i->state != SV_ID_IDLE && i->state != SV_ID_BOUND) {
		sv_unlock();
		errno = EINVAL;
		return -1;
	}
	memcpy(&id->route.addr.dst_storage, dst_addr, sv_salen(dst_addr));
	if (!rc) {
		if (sv_get_port((struct sockaddr *)&src) == 0)
			sv_set_port((struct sockaddr *)&src,
				    sv_ephemeral_port());
		memcpy(&id->route.addr.src_storage, &src, sizeof(src));
		id->verbs = sv_cm_ctx_locked();
		i->state = SV_ID_ADDR;
	}
	sv_evt_post(i, NULL, rc ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED,
		    rc);
	sv_unlock();
	return i->own_channel ? sv_sync_wait(i, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

SV_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct sv_id *i = sv_id(id);

	sv_lock();
	if (i->state != SV_ID_ADDR) {
		sv_unlock();
		errno = EINVAL;
		return -1;
	}
	i->state = SV_ID_ROUTE;
	id->route.num_paths = 1;
	sv_evt_post(i, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	sv_unlock();
	return i->own_channel ? sv_sync_wait(i, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

/* Synchronous ids (NULL channel) wait for their own event, as librdmacm does. */
static int sv_sync_wait(struct sv_id *i, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *e;
	int status;
	enum rdma_cm_event_type got;

	if (rdma_get_cm_event(i->id.channel, &e) < 0)
		return -1;
	got = e->event;
	status = e->status;
	rdma_ack_cm_event(e);
	if (got == want)
		return 0;
	errno = status < 0 ? -status : (got == RDMA_CM_EVENT_REJECTED ?
					ECONNREFUSED : ECONNRESET);
	return -1;
}

static struct sv_conn *sv_conn_new(int fd, struct sv_id *id, struct sv_id *listener)
{
	struct sv_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->sock.kind = SV_SOCK_CONN;
	c->sock.fd = fd;
	c->sock.conn = c;
	c->sock.id = id;
	c->id = id;
	c->listener = listener;
	sv_list_init(&c->out);
	sv_list_init(&c->sock.link);
	if (sv_sock_add(&c->sock) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

void sv_cm_on_accept(struct sv_id *listener, int fd)
{
	if (!sv_conn_new(fd, NULL, listener))
		close(fd);
}

/* Reach the listener for dst: its own IP first, then a wildcard bind. */
static int sv_dial(const struct sockaddr *dst)
{
	struct sockaddr_storage any;
	struct sockaddr_un un;
	socklen_t len;
	int fd, rc;

	memset(&any, 0, sizeof(any));
	any.ss_family = dst->sa_family;
	sv_set_port((struct sockaddr *)&any, sv_get_port(dst));
	for (int pass = 0; pass < 2; pass++) {
		rc = sv_unix_addr(pass ? (struct sockaddr *)&any : dst, &un, &len);
		if (rc < 0)
			return rc;
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&un, len) == 0) {
			fcntl(fd, F_SETFL, O_NONBLOCK);
			return fd;
		}
		rc = -errno;
		close(fd);
	}
	return rc;
}

static void sv_wire_fill(struct sv_cm_wire *w, const struct sv_id *i,
			 const struct rdma_conn_param *p)
{
	memset(w, 0, sizeof(*w));
	w->qpn = i->id.qp ? i->id.qp->qp_num : (p ? p->qp_num : 0);
	if (p) {
		w->responder_resources = p->responder_resources;
		w->initiator_depth = p->initiator_depth;
		w->retry = p->retry_count;
		w->rnr = p->rnr_retry_count;
		w->pdata_len = p->private_data_len;
	}
	memcpy(&w->src, &i->id.route.addr.src_storage, sizeof(w->src));
	memcpy(&w->dst, &i->id.route.addr.dst_storage, sizeof(w->dst));
}

static int sv_send_cm(struct sv_id *i, uint32_t type, const struct rdma_conn_param *p,
		      int status)
{
	struct sv_msg m = { .type = type, .status = status };
	struct sv_cm_wire w;

	sv_wire_fill(&w, i, p);
	return sv_conn_send(i->conn, &m, &w, sizeof(w),
			    p ? p->private_data : NULL, p ? p->private_data_len : 0);
}

static int sv_connect_locked(struct sv_id *i, struct rdma_conn_param *p)
{
	int fd, rc;

	if (i->state != SV_ID_ROUTE)
		return -EINVAL;
	rc = sv_nic_start_locked();
	if (rc < 0)
		return rc;
	fd = sv_dial(&i->id.route.addr.dst_addr);
	if (fd == -ECONNREFUSED || fd == -ENOENT) {
		i->state = SV_ID_REJECTED;
		sv_evt_post(i, NULL, RDMA_CM_EVENT_REJECTED, SV_REJ_INVALID_SERVICE);
		return 0;
	}
	if (fd < 0)
		return fd;
	i->conn = sv_conn_new(fd, i, NULL);
	if (!i->conn) {
		close(fd);
		return -ENOMEM;
	}
	i->state = SV_ID_CONNECTING;
	return sv_send_cm(i, SV_MSG_REQ, p, 0);
}

SV_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct sv_id *i = sv_id(id);
	int rc;

	sv_lock();
	rc = sv_connect_locked(i, conn_param);
	sv_unlock();
	if (rc) {
		errno = -rc;
		return -1;
	}
	return i->own_channel ? sv_sync_wait(i, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

/* The QP is made ready the way librdmacm does after REP or at accept. */
static void sv_qp_ready(struct sv_id *i, uint32_t peer_qpn)
{
	struct sv_qp *q;

	i->peer_qpn = peer_qpn;
	if (!i->id.qp)
		return;
	q = sv_container(i->id.qp, struct sv_qp, qp);
	q->conn = i->conn;
	q->dest_qpn = peer_qpn;
	if (q->qp.state == IBV_QPS_INIT) {
		sv_qp_set_state(q, IBV_QPS_RTR);
		sv_qp_set_state(q, IBV_QPS_RTS);
	}
}

static int sv_accept_locked(struct sv_id *i, struct rdma_conn_param *p)
{
	if (i->state != SV_ID_REQ_RCVD || !i->conn)
		return -EINVAL;
	if (i->conn->dead) {
		i->state = SV_ID_DISCONNECTED;
		sv_evt_post(i, NULL, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
		return 0;
	}
	sv_qp_ready(i, i->peer_qpn);
	i->state = SV_ID_ACCEPTED;
	return sv_send_cm(i, SV_MSG_REP, p, 0);
}

SV_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct sv_id *i = sv_id(id);
	int rc;

	sv_lock();
	rc = sv_accept_locked(i, conn_param);
	sv_unlock();
	if (rc) {
		errno = -rc;
		return -1;
	}
	return i->own_channel ? sv_sync_wait(i, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

SV_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	struct sv_id *i = sv_id(id);
	struct rdma_conn_param p = { .private_data = private_data,
				     .private_data_len = private_data_len };
	int rc = -EINVAL;

	sv_lock();
	if (i->state == SV_ID_REQ_RCVD && i->conn) {
		rc = i->conn->dead ? 0 : sv_send_cm(i, SV_MSG_REJ, &p, SV_REJ_CONSUMER);
		i->state = SV_ID_REJECTED;
	}
	sv_unlock();
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

SV_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct sv_id *i = sv_id(id);
	int rc = 0;

	sv_lock();
	if (i->state == SV_ID_ESTABLISHED || i->state == SV_ID_ACCEPTED) {
		sv_send_cm(i, SV_MSG_DREQ, NULL, 0);
		i->state = SV_ID_DISCONNECTING;
	} else if (i->state != SV_ID_DISCONNECTED && i->state != SV_ID_DISCONNECTING) {
		rc = -EINVAL;
	}
	if (!rc && id->qp)
		sv_qp_set_state(sv_container(id->qp, struct sv_qp, qp), IBV_QPS_ERR);
	sv_unlock();
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

static void sv_cm_req(struct sv_conn *c, const struct sv_cm_wire *w, const uint8_t *pd)
{
	struct sv_id *l = c->listener, *i;

	if (!l || c->id)
		return;
	i = sv_id_new(l->id.channel, l->id.context, l->id.ps);
	if (!i) {
		sv_conn_kill(c);
		return;
	}
	memcpy(&i->id.route.addr.src_storage, &w->dst, sizeof(w->dst));
	memcpy(&i->id.route.addr.dst_storage, &w->src, sizeof(w->src));
	i->id.route.num_paths = 1;
	i->id.verbs = l->id.verbs;
	i->state = SV_ID_REQ_RCVD;
	i->peer_qpn = w->qpn;
	i->conn = c;
	c->id = i;
	c->sock.id = i;
	sv_evt_conn(sv_evt_post(i, &l->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0), w, pd);
}

static void sv_cm_rep(struct sv_id *i, const struct sv_cm_wire *w, const uint8_t *pd)
{
	if (i->state != SV_ID_CONNECTING)
		return;
	sv_qp_ready(i, w->qpn);
	i->rtu_due = true;	/* sent once the program takes the event */
	i->state = SV_ID_ESTABLISHED;
	sv_evt_conn(sv_evt_post(i, NULL, RDMA_CM_EVENT_ESTABLISHED, 0), w, pd);
}

static void sv_cm_simple(struct sv_id *i, const struct sv_msg *m)
{
	struct sv_msg drep = { .type = SV_MSG_DREP };

	switch (m->type) {
	case SV_MSG_RTU:
		if (i->state != SV_ID_ACCEPTED)
			return;
		i->state = SV_ID_ESTABLISHED;
		sv_evt_post(i, NULL, RDMA_CM_EVENT_ESTABLISHED, 0);
		return;
	case SV_MSG_DREQ:
		sv_conn_send(i->conn, &drep, NULL, 0, NULL, 0);
		/* fall through */
	case SV_MSG_DREP:
		if (i->state == SV_ID_DISCONNECTED)
			return;
		i->state = SV_ID_DISCONNECTED;
		sv_evt_post(i, NULL, RDMA_CM_EVENT_DISCONNECTED, 0);
		return;
	default:
		return;
	}
}

void sv_cm_handle(struct sv_conn *c, const struct sv_msg *m, const uint8_t *p)
{
	struct sv_cm_wire w;
	const uint8_t *pd = p + sizeof(w);
	struct sv_id *i = c->id;

	if (m->type == SV_MSG_REQ || m->type == SV_MSG_REP || m->type == SV_MSG_REJ) {
		if (m->len < sizeof(w))
			return;
		memcpy(&w, p, sizeof(w));
		w.pdata_len = m->len - (uint32_t)sizeof(w);
	}
	if (m->type == SV_MSG_REQ) {
		sv_cm_req(c, &w, pd);
		return;
	}
	if (!i)
		return;
	if (m->type == SV_MSG_REP) {
		sv_cm_rep(i, &w, pd);
	} else if (m->type == SV_MSG_REJ && i->state == SV_ID_CONNECTING) {
		i->state = SV_ID_REJECTED;
		sv_evt_conn(sv_evt_post(i, NULL, RDMA_CM_EVENT_REJECTED, m->status),
			    &w, pd);
		sv_conn_kill(c);
	} else {
		sv_cm_simple(i, m);
	}
}

void sv_cm_conn_lost(struct sv_conn *c)
{
	struct sv_id *i = c->id;

	sv_sock_del(&c->sock);
	if (!i) {
		sv_sock_bury(&c->sock);
		return;
	}
	if (i->id.qp)
		sv_qp_conn_lost(sv_container(i->id.qp, struct sv_qp, qp));
	switch (i->state) {
	case SV_ID_CONNECTING:
		sv_evt_post(i, NULL, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case SV_ID_ACCEPTED:
		sv_evt_post(i, NULL, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
		break;
	case SV_ID_ESTABLISHED:
	case SV_ID_DISCONNECTING:
		sv_evt_post(i, NULL, RDMA_CM_EVENT_DISCONNECTED, 0);
		break;
	default:
		break;
	}
	if (i->state != SV_ID_REQ_RCVD && i->state != SV_ID_REJECTED)
		i->state = SV_ID_DISCONNECTED;
}

/* librdmacm makes a CQ and channel per direction when none are given. */
static int sv_cm_own_cqs(struct rdma_cm_id *id, struct ibv_qp_init_attr *a)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(id->verbs);
	int n = (int)(a->cap.max_send_wr + a->cap.max_recv_wr) + 1;

	if (!ch)
		return -1;
	id->send_cq = ibv_create_cq(id->verbs, n, id, ch, 0);
	if (!id->send_cq) {
		ibv_destroy_comp_channel(ch);
		return -1;
	}
	id->send_cq_channel = id->recv_cq_channel = ch;
	id->recv_cq = id->send_cq;
	a->send_cq = a->recv_cq = id->send_cq;
	sv_id(id)->own_cqs = true;
	return 0;
}

SV_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct sv_ctx *c = sv_container(id->verbs, struct sv_ctx, vctx.context);
	struct ibv_qp_init_attr a = *qp_init_attr;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE };
	struct ibv_qp *qp;

	if (!id->verbs || id->qp) {
		errno = EINVAL;
		return -1;
	}
	if (!pd) {
		if (!c->default_pd)
			c->default_pd = ibv_alloc_pd(id->verbs);
		pd = c->default_pd;
	}
	if (!pd || pd->context != id->verbs || (!a.send_cq && !a.recv_cq &&
						sv_cm_own_cqs(id, &a) < 0)) {
		errno = pd ? EINVAL : ENOMEM;
		return -1;
	}
	qp = ibv_create_qp(pd, &a);
	if (!qp)
		return -1;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		errno = EINVAL;
		return -1;
	}
	qp_init_attr->cap = a.cap;
	sv_lock();
	id->qp = qp;
	sv_unlock();
	return 0;
}

SV_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct sv_id *i = sv_id(id);

	if (!id->qp)
		return;
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	if (!i->own_cqs)
		return;
	ibv_destroy_cq(id->send_cq);
	if (id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	ibv_destroy_comp_channel(id->send_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
	i->own_cqs = false;
}

SV_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct sv_id *i = sv_id(id);
	struct rdma_event_channel *old = id->channel;
	bool was_own = i->own_channel;
	struct rdma_event_channel *ch = channel;

	if (!ch && !(ch = rdma_create_event_channel()))
		return -1;
	sv_lock();
	id->channel = ch;
	i->own_channel = !channel;
	sv_unlock();
	if (was_own)
		rdma_destroy_event_channel(old);
	return 0;
}

SV_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons(sv_get_port(&id->route.addr.src_addr));
}

SV_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons(sv_get_port(&id->route.addr.dst_addr));
}

SV_EXPORT int softverbs_drop_conn(struct rdma_cm_id *id)
{
	struct sv_id *i = sv_id(id);
	int rc = -ENOTCONN;

	sv_lock();
	if (i->conn && !i->conn->dead) {
		sv_conn_kill(i->conn);
		rc = 0;
	}
	sv_unlock();
	return rc;
}

SV_EXPORT int softverbs_active(void)
{
	return 1;
}

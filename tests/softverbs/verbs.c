// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/verbs.c: the device-side verbs of the software verbs
 * device — the device list and contexts, protection domains, memory regions
 * (lkey/rkey, access flags, the fail_reg fault), memory windows, completion
 * channels, CQs (poll, arm, delayed and lost CQEs) and async events. It also
 * owns the global state `sv` and its lock. Queue pairs and the data path are
 * in qp.c; rdma_cm in cm.c; the wire and the NIC thread in nic.c.
 */
#include "sv.h"
#include "softverbs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sv_state sv = { .lock = PTHREAD_MUTEX_INITIALIZER };
static bool sv_inited;
static struct ibv_device sv_dev = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = "softverbs0",
	.dev_name = "uverbs-soft0",
	.dev_path = "/nonexistent/softverbs0",
	.ibdev_path = "/nonexistent/softverbs0",
};
static struct ibv_device *sv_devs[2] = { &sv_dev, NULL };

void sv_lock(void)
{
	pthread_mutex_lock(&sv.lock);
}

void sv_unlock(void)
{
	pthread_mutex_unlock(&sv.lock);
}

uint64_t sv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A forked child gets a fresh NIC: the parent's NIC thread does not exist
 * there, and the child must not hold the parent's connections open.
 */
static void sv_atfork_child(void)
{
	if (!sv_inited)
		return;
	sv_foreach(l, &sv.socks) {
		struct sv_sock *s = sv_container(l, struct sv_sock, link);

		if (s->fd >= 0)
			close(s->fd);
	}
	if (sv.nic_up) {
		close(sv.epfd);
		close(sv.wakefd);
	}
	pthread_mutex_init(&sv.lock, NULL);
	sv_inited = false;
	sv.nic_up = false;
	sv.cm_ctx = NULL;
}

int sv_init_locked(void)
{
	const char *s;

	if (sv_inited)
		return 0;
	sv_list_init(&sv.mrs);
	sv_list_init(&sv.mws);
	sv_list_init(&sv.cqs);
	sv_list_init(&sv.qps);
	sv_list_init(&sv.ids);
	sv_list_init(&sv.socks);
	sv_list_init(&sv.grave);
	memset(&sv.fault, 0, sizeof(sv.fault));
	sv_fault_parse(getenv("SOFTVERBS_FAULT"));
	s = getenv("SOFTVERBS_MW");
	sv.mw_off = s && strcmp(s, "0") == 0;
	s = getenv("SOFTVERBS_MW_BOUNDS");
	sv.mw_bounds_off = s && strcmp(s, "0") == 0;
	s = getenv("SOFTVERBS_NS");
	snprintf(sv.ns, sizeof(sv.ns), "%s", s ? s : "");
	/* Key and QPN spaces differ between processes, as on two NICs. */
	sv.next_key = ((uint32_t)getpid() & 0xfff) << 12;
	sv.next_qpn = 0x100 + (((uint32_t)getpid() & 0xff) << 12);
	sv.next_handle = 1;
	sv_inited = true;
	return 0;
}

__attribute__((constructor)) static void sv_ctor(void)
{
	pthread_atfork(NULL, NULL, sv_atfork_child);
}

uint32_t sv_new_key(void)
{
	/* index in the upper 24 bits, an 8-bit tag below (ibv_inc_rkey) */
	sv.next_key += 0x100;
	return sv.next_key | ((sv.next_key >> 8) & 0x7f) | 0x80;
}

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **l = calloc(2, sizeof(*l));

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l[0] = sv_devs[0];
	if (num_devices)
		*num_devices = 1;
	return l;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return htobe64(0x5f7f000000000001ull);
}

static int sv_query_port_ex(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *a, size_t len);
static int sv_query_device_ex(struct ibv_context *ctx,
			      const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *a, size_t len);

static struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
static int sv_dealloc_mw(struct ibv_mw *mw);
static int sv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int sv_req_notify(struct ibv_cq *cq, int solicited_only);

int sv_verbs_fill_ops(struct sv_ctx *c)
{
	struct ibv_context_ops *o = &c->vctx.context.ops;

	if (!sv.mw_off) {
		o->alloc_mw = sv_alloc_mw;
		o->dealloc_mw = sv_dealloc_mw;
		o->bind_mw = sv_bind_mw1;
	}
	o->poll_cq = sv_poll_cq;
	o->req_notify_cq = sv_req_notify;
	o->post_send = sv_post_send;
	o->post_recv = sv_post_recv;
	c->vctx.query_port = sv_query_port_ex;
	c->vctx.query_device_ex = sv_query_device_ex;
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	return 0;
}

struct ibv_context *sv_open_ctx(void)
{
	struct sv_ctx *c = calloc(1, sizeof(*c));
	int p[2];

	if (!c)
		goto out_nomem;
	if (pipe2(p, O_CLOEXEC) < 0)
		goto out_free;
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	c->async_rd = p[0];
	c->async_wr = p[1];
	sv_list_init(&c->async_q);
	c->vctx.context.device = &sv_dev;
	c->vctx.context.cmd_fd = -1;
	c->vctx.context.async_fd = c->async_rd;
	c->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	sv_verbs_fill_ops(c);
	return &c->vctx.context;
out_free:
	free(c);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx;

	if (device != &sv_dev) {
		errno = ENODEV;
		return NULL;
	}
	sv_lock();
	sv_init_locked();
	ctx = sv_open_ctx();
	sv_unlock();
	return ctx;
}

SV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sv_ctx *c = sv_container(context, struct sv_ctx, vctx.context);

	sv_lock();
	sv_foreach(l, &c->async_q) {
		sv_list_del(l);
		free(sv_container(l, struct sv_async, link));
	}
	close(c->async_rd);
	close(c->async_wr);
	if (c->default_pd)
		free(c->default_pd);
	if (sv.cm_ctx == context)
		sv.cm_ctx = NULL;
	sv_unlock();
	free(c);
	return 0;
}

static void sv_fill_dev_attr(struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "softverbs-1");
	a->node_guid = htobe64(0x5f7f000000000001ull);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = 4096;
	a->vendor_id = 0x5f7f;
	a->hw_ver = 1;
	a->max_qp = 4096;
	a->max_qp_wr = 4096;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
	if (!sv.mw_off)
		a->device_cap_flags |= IBV_DEVICE_MEM_WINDOW |
				       IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_sge = 16;
	a->max_sge_rd = 16;
	a->max_cq = 4096;
	a->max_cqe = 65536;
	a->max_mr = 65536;
	a->max_pd = 4096;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_res_rd_atom = 4096 * 16;
	a->atomic_cap = IBV_ATOMIC_NONE;
	a->max_mw = sv.mw_off ? 0 : 65536;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

SV_EXPORT int ibv_query_device(struct ibv_context *context,
			       struct ibv_device_attr *device_attr)
{
	sv_lock();
	sv_init_locked();
	sv_fill_dev_attr(device_attr);
	sv_unlock();
	return 0;
}

static int sv_query_device_ex(struct ibv_context *ctx,
			      const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *a, size_t len)
{
	struct ibv_device_attr_ex full;

	memset(&full, 0, sizeof(full));
	ibv_query_device(ctx, &full.orig_attr);
	memcpy(a, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

static void sv_fill_port(struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->gid_tbl_len = 1;
	a->port_cap_flags = 0;
	a->max_msg_sz = 1u << 31;
	a->pkey_tbl_len = 1;
	a->lid = 1;
	a->active_width = 2;
	a->active_speed = 32;
	a->phys_state = 5;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
}

static int sv_query_port_ex(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *a, size_t len)
{
	struct ibv_port_attr full;

	if (port != 1)
		return EINVAL;
	sv_fill_port(&full);
	memcpy(a, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

/* The exported symbol takes the old, shorter struct. */
#undef ibv_query_port
SV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *port_attr)
{
	return sv_query_port_ex(context, port_num, (struct ibv_port_attr *)port_attr,
				offsetof(struct ibv_port_attr, link_layer) + 1);
}

SV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			    int index, union ibv_gid *gid)
{
	if (port_num != 1 || index != 0)
		return -1;
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	gid->raw[12] = 127;
	gid->raw[15] = 1;
	return 0;
}

SV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			     int index, __be16 *pkey)
{
	if (port_num != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);
	return 0;
}

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	sv_lock();
	pd->context = context;
	pd->handle = sv.next_handle++;
	sv_unlock();
	return pd;
}

static bool sv_pd_busy(struct ibv_pd *pd)
{
	sv_foreach(l, &sv.mrs)
		if (sv_container(l, struct sv_mr, link)->mr.pd == pd)
			return true;
	sv_foreach(l, &sv.mws)
		if (sv_container(l, struct sv_mw, link)->mw.pd == pd)
			return true;
	sv_foreach(l, &sv.qps)
		if (sv_container(l, struct sv_qp, link)->qp.pd == pd)
			return true;
	return false;
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int rc = 0;

	sv_lock();
	if (sv_pd_busy(pd))
		rc = EBUSY;
	sv_unlock();
	if (!rc)
		free(pd);
	return rc;
}

/* Remote write or atomic rights need local write, as on real HCAs. */
static bool sv_access_ok(unsigned int access)
{
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return false;
	return true;
}

static struct ibv_mr *sv_reg(struct ibv_pd *pd, void *addr, size_t length,
			     uint64_t iova, unsigned int access)
{
	struct sv_mr *m;
	unsigned long slow;

	sv_lock();
	sv_init_locked();
	slow = (unsigned long)(((unsigned __int128)sv.fault.reg_mr_us_per_mib * length) >> 20);
	sv_unlock();
	/* a slow registration (pinning a large region) holds no lock of ours */
	sv_fault_sleep(slow);
	sv_lock();
	if (sv.fault.fail_reg && ++sv.fault.n_reg == sv.fault.fail_reg) {
		sv_unlock();
		errno = ENOMEM;
		return NULL;
	}
	if (!pd || (!addr && length) || !sv_access_ok(access)) {
		sv_unlock();
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		sv_unlock();
		errno = ENOMEM;
		return NULL;
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.handle = sv.next_handle++;
	m->mr.lkey = m->mr.rkey = m->key = sv_new_key();
	m->iova = iova;
	m->access = access;
	sv_list_add_tail(&sv.mrs, &m->link);
	sv_unlock();
	return &m->mr;
}

#undef ibv_reg_mr
SV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				    size_t length, int access)
{
	return sv_reg(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
SV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					 size_t length, uint64_t iova, int access)
{
	return sv_reg(pd, addr, length, iova, (unsigned int)access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					  size_t length, uint64_t iova,
					  unsigned int access)
{
	return sv_reg(pd, addr, length, iova, access);
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct sv_mr *m = sv_container(mr, struct sv_mr, mr);

	sv_lock();
	if (m->bound_mws) {
		sv_unlock();
		return EBUSY;
	}
	sv_list_del(&m->link);
	sv_unlock();
	free(m);
	return 0;
}

struct sv_mr *sv_mr_by_key(uint32_t key)
{
	sv_foreach(l, &sv.mrs) {
		struct sv_mr *m = sv_container(l, struct sv_mr, link);

		if (m->key == key)
			return m;
	}
	return NULL;
}

struct sv_mw *sv_mw_by_key(uint32_t key)
{
	sv_foreach(l, &sv.mws) {
		struct sv_mw *w = sv_container(l, struct sv_mw, link);

		if (w->key == key)
			return w;
	}
	return NULL;
}

static struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct sv_mw *w;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	sv_lock();
	w->mw.context = pd->context;
	w->mw.pd = pd;
	w->mw.type = type;
	w->mw.handle = sv.next_handle++;
	w->mw.rkey = w->key = sv_new_key();
	sv_list_add_tail(&sv.mws, &w->link);
	sv_unlock();
	return &w->mw;
}

static int sv_dealloc_mw(struct ibv_mw *mw)
{
	struct sv_mw *w = sv_container(mw, struct sv_mw, mw);

	sv_lock();
	if (w->bound && w->mr)
		w->mr->bound_mws--;
	sv_list_del(&w->link);
	sv_unlock();
	free(w);
	return 0;
}

SV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sv_comp_channel *c = calloc(1, sizeof(*c));
	int p[2];

	if (!c || pipe2(p, O_CLOEXEC) < 0) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	c->ch.context = context;
	c->ch.fd = p[0];
	c->wr_fd = p[1];
	return &c->ch;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sv_comp_channel *c = sv_container(channel, struct sv_comp_channel, ch);

	sv_lock();
	if (channel->refcnt) {
		sv_unlock();
		return EBUSY;
	}
	sv_unlock();
	close(c->ch.fd);
	close(c->wr_fd);
	free(c);
	return 0;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
				       void *cq_context,
				       struct ibv_comp_channel *channel,
				       int comp_vector)
{
	struct sv_cq *c;

	if (cqe < 1 || cqe > 65536 || comp_vector != 0) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	sv_lock();
	sv_init_locked();
	c->cq.context = context;
	c->cq.channel = channel;
	c->cq.cq_context = cq_context;
	c->cq.handle = sv.next_handle++;
	c->cq.cqe = cqe;
	pthread_mutex_init(&c->cq.mutex, NULL);
	pthread_cond_init(&c->cq.cond, NULL);
	sv_list_init(&c->entries);
	if (channel)
		channel->refcnt++;
	sv_list_add_tail(&sv.cqs, &c->link);
	sv_unlock();
	return &c->cq;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct sv_cq *c = sv_container(cq, struct sv_cq, cq);

	sv_lock();
	sv_foreach(l, &sv.qps) {
		struct sv_qp *q = sv_container(l, struct sv_qp, link);

		if (q->qp.send_cq == cq || q->qp.recv_cq == cq) {
			sv_unlock();
			return EBUSY;
		}
	}
	sv_foreach(l, &c->entries) {
		sv_list_del(l);
		free(sv_container(l, struct sv_cqe, link));
	}
	if (cq->channel)
		cq->channel->refcnt--;
	sv_list_del(&c->link);
	sv_unlock();
	free(c);
	return 0;
}

static void sv_cq_notify(struct sv_cq *c)
{
	struct sv_comp_channel *ch;
	struct ibv_cq *p = &c->cq;
	ssize_t n;

	c->armed = 0;
	c->notify_due = false;
	if (!c->cq.channel)
		return;
	ch = sv_container(c->cq.channel, struct sv_comp_channel, ch);
	n = write(ch->wr_fd, &p, sizeof(p));
	(void)n;		/* a full pipe loses the event, like an overrun */
}

static bool sv_cq_wants(struct sv_cq *c, const struct sv_cqe *e)
{
	if (c->armed == 1)
		return true;
	return c->armed == 2 && (e->solicited || e->wc.status != IBV_WC_SUCCESS);
}

void sv_cq_push(struct sv_cq *c, const struct ibv_wc *wc, bool solicited)
{
	struct sv_cqe *e;
	struct ibv_async_event ae;

	if (sv.fault.lose_cqe && ++sv.fault.n_cqe == sv.fault.lose_cqe)
		return;
	if (c->n >= c->cq.cqe) {
		ae.element.cq = &c->cq;
		ae.event_type = IBV_EVENT_CQ_ERR;
		sv_async_push(c->cq.context, &ae);
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->wc = *wc;
	e->solicited = solicited;
	e->ready_ns = sv_now_ns() + sv.fault.delay_cqe_ms * 1000000ull;
	sv_list_add_tail(&c->entries, &e->link);
	c->n++;
	if (!sv_cq_wants(c, e))
		return;
	if (sv.fault.delay_cqe_ms) {
		c->notify_due = true;
		sv_nic_wake();
		return;
	}
	sv_cq_notify(c);
}

/* Fire the channel for delayed CQEs that became visible; NIC thread. */
void sv_cq_tick(uint64_t now, int *timeout_ms)
{
	sv_foreach(l, &sv.cqs) {
		struct sv_cq *c = sv_container(l, struct sv_cq, link);
		struct sv_cqe *e;
		int ms;

		if (!c->notify_due || sv_list_empty(&c->entries))
			continue;
		e = sv_container(c->entries.next, struct sv_cqe, link);
		if (e->ready_ns <= now) {
			sv_cq_notify(c);
			continue;
		}
		ms = (int)((e->ready_ns - now) / 1000000) + 1;
		if (*timeout_ms < 0 || ms < *timeout_ms)
			*timeout_ms = ms;
	}
}

static int sv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct sv_cq *c = sv_container(cq, struct sv_cq, cq);
	uint64_t now = sv_now_ns();
	int got = 0;

	sv_lock();
	while (got < n && !sv_list_empty(&c->entries)) {
		struct sv_cqe *e = sv_container(c->entries.next, struct sv_cqe, link);

		if (e->ready_ns > now)
			break;
		wc[got++] = e->wc;
		sv_list_del(&e->link);
		c->n--;
		free(e);
	}
	sv_unlock();
	return got;
}

static int sv_req_notify(struct ibv_cq *cq, int solicited_only)
{
	struct sv_cq *c = sv_container(cq, struct sv_cq, cq);

	uint64_t now = sv_now_ns();
	bool due = false;

	sv_lock();
	c->armed = solicited_only ? 2 : 1;
	/* a CQE held back by delay_cqe_ms is not in the CQ yet, as on a NIC
	 * that has not written it: it fires the armed CQ when it shows up */
	sv_foreach(l, &c->entries) {
		struct sv_cqe *e = sv_container(l, struct sv_cqe, link);

		if (e->ready_ns > now && sv_cq_wants(c, e))
			due = true;
	}
	if (due) {
		c->notify_due = true;
		sv_nic_wake();
	}
	sv_unlock();
	return 0;
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
			       struct ibv_cq **cq, void **cq_context)
{
	struct ibv_cq *p;
	ssize_t n = read(channel->fd, &p, sizeof(p));

	if (n != (ssize_t)sizeof(p)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	*cq = p;
	*cq_context = p->cq_context;
	return 0;
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_mutex_unlock(&cq->mutex);
}

void sv_async_push(struct ibv_context *ctx, const struct ibv_async_event *e)
{
	struct sv_ctx *c = sv_container(ctx, struct sv_ctx, vctx.context);
	struct sv_async *a = calloc(1, sizeof(*a));
	char b = 1;
	ssize_t n;

	if (!a)
		return;
	a->ev = *e;
	sv_list_add_tail(&c->async_q, &a->link);
	n = write(c->async_wr, &b, 1);
	(void)n;
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *context,
				  struct ibv_async_event *event)
{
	struct sv_ctx *c = sv_container(context, struct sv_ctx, vctx.context);
	struct sv_async *a;
	char b;

	if (read(c->async_rd, &b, 1) != 1)
		return -1;
	sv_lock();
	if (sv_list_empty(&c->async_q)) {
		sv_unlock();
		errno = EIO;
		return -1;
	}
	a = sv_container(c->async_q.next, struct sv_async, link);
	sv_list_del(&a->link);
	sv_unlock();
	*event = a->ev;
	free(a);
	return 0;
}

SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
}

SV_EXPORT int ibv_fork_init(void)
{
	return 0;
}

static const char *const sv_wc_str[] = {
	[IBV_WC_SUCCESS] = "success",
	[IBV_WC_LOC_LEN_ERR] = "local length error",
	[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[IBV_WC_LOC_PROT_ERR] = "local protection error",
	[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[IBV_WC_MW_BIND_ERR] = "memory management operation error",
	[IBV_WC_BAD_RESP_ERR] = "bad response error",
	[IBV_WC_LOC_ACCESS_ERR] = "local access error",
	[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[IBV_WC_REM_ACCESS_ERR] = "remote access error",
	[IBV_WC_REM_OP_ERR] = "remote operation error",
	[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[IBV_WC_REM_ABORT_ERR] = "aborted error",
	[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
	[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[IBV_WC_FATAL_ERR] = "fatal error",
	[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[IBV_WC_GENERAL_ERR] = "general error",
};

SV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	if ((unsigned int)status >= sizeof(sv_wc_str) / sizeof(sv_wc_str[0]) ||
	    !sv_wc_str[status])
		return "unknown";
	return sv_wc_str[status];
}

SV_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	switch (event) {
	case IBV_EVENT_QP_FATAL: return "local work queue catastrophic error";
	case IBV_EVENT_QP_ACCESS_ERR: return "invalid request local wq error";
	case IBV_EVENT_CQ_ERR: return "CQ error";
	case IBV_EVENT_COMM_EST: return "communication established";
	default: return "unknown";
	}
}

SV_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	return port_state == IBV_PORT_ACTIVE ? "PORT_ACTIVE" : "PORT_DOWN";
}

SV_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	return node_type == IBV_NODE_CA ? "InfiniBand channel adapter" : "unknown";
}

SV_EXPORT int softverbs_set_mw_bounds(int on)
{
	sv_lock();
	sv_init_locked();
	sv.mw_bounds_off = !on;
	sv_unlock();
	return 0;
}

SV_EXPORT int softverbs_set_mw_support(int on)
{
	sv_lock();
	sv_init_locked();
	sv.mw_off = !on;
	sv_unlock();
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/softverbs/sv.h: private state of the software verbs device, shared
 * by verbs.c (device, PD, MR, MW, CQ, channels), qp.c (QP state machine and
 * the data path), cm.c (rdma_cm ids and events) and nic.c (the per-process
 * emulated NIC thread and its wire). One process has one emulated NIC; every
 * object hangs off the global `sv` below.
 *
 * Lock order: there is one lock, sv.lock. Every exported entry point and the
 * NIC thread take it around all work on the object graph; helpers named
 * sv_*_locked or taking `struct sv_*` arguments expect it held. Nothing
 * blocks while holding it: socket writes are queued and flushed without
 * blocking, channel fds are pipes written with O_NONBLOCK.
 */
#ifndef SOFTVERBS_SV_H
#define SOFTVERBS_SV_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SV_EXPORT __attribute__((visibility("default")))

struct sv_link {
	struct sv_link *next, *prev;
};

static inline void sv_list_init(struct sv_link *h)
{
	h->next = h->prev = h;
}

static inline bool sv_list_empty(const struct sv_link *h)
{
	return h->next == h;
}

static inline void sv_list_add_tail(struct sv_link *h, struct sv_link *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void sv_list_del(struct sv_link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define sv_container(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define sv_foreach(pos, head) \
	for (struct sv_link *pos = (head)->next, *pos##_n = pos->next; \
	     pos != (head); pos = pos##_n, pos##_n = pos->next)

/* Fault knobs: every counter is process-wide; 0 means off. */
struct sv_fault {
	unsigned long drop_conn_after;	/* data WRs sent before the cut */
	unsigned long delay_cqe_ms;	/* each CQE held this long */
	unsigned long lose_cqe;		/* the Nth CQE is discarded */
	unsigned long fail_reg;		/* the Nth reg_mr fails */
	unsigned long err_qp_after;	/* post_send WRs before QP -> ERR */
	unsigned long destroy_qp_ms;	/* each ibv_destroy_qp takes this long */
	unsigned long destroy_bound_qp_ms;	/* + this per type 2 window bound to it */
	unsigned long reg_mr_us_per_mib;	/* ibv_reg_mr* takes this per MiB */
	unsigned long n_data, n_cqe, n_reg, n_post;
};

struct sv_ctx {
	struct verbs_context vctx;	/* vctx.context is what callers see */
	int async_rd, async_wr;
	struct sv_link async_q;		/* struct sv_async */
	struct ibv_pd *default_pd;	/* for rdma_create_qp(pd = NULL) */
};

struct sv_async {
	struct ibv_async_event ev;
	struct sv_link link;
};

struct sv_mr {
	struct ibv_mr mr;
	uint32_t key;			/* lkey == rkey; callers may scribble on mr */
	uint64_t iova;
	unsigned int access;
	int bound_mws;
	struct sv_link link;		/* sv.mrs */
};

struct sv_mw {
	struct ibv_mw mw;
	uint32_t key;			/* the rkey that is valid now */
	bool bound;
	struct sv_mr *mr;
	uint64_t addr, len;
	unsigned int access;
	uint32_t qpn;			/* type 2: the QP it is bound to */
	struct sv_link link;		/* sv.mws */
};

struct sv_comp_channel {
	struct ibv_comp_channel ch;
	int wr_fd;
};

struct sv_cqe {
	struct ibv_wc wc;
	uint64_t ready_ns;
	bool solicited;
	struct sv_link link;
};

struct sv_cq {
	struct ibv_cq cq;
	struct sv_link entries;		/* struct sv_cqe */
	int n;
	int armed;			/* 0, 1 any, 2 solicited only */
	bool notify_due;		/* armed and a delayed CQE is waiting */
	struct sv_link link;		/* sv.cqs */
};

/* A send queue entry; completes in posting order (RC is ordered). */
struct sv_swr {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	bool signaled, remote, done;
	enum ibv_wc_status status;
	uint64_t seq;
	int nsge;
	struct ibv_sge *sge;		/* READ: where the answer lands */
	struct sv_link link;
};

struct sv_rwr {
	uint64_t wr_id;
	int nsge;
	struct ibv_sge *sge;
	struct sv_link link;
};

struct sv_conn;

struct sv_qp {
	struct ibv_qp qp;
	unsigned int access;
	uint32_t max_send_wr, max_recv_wr, max_inline, max_sge;
	bool sq_sig_all;
	uint32_t dest_qpn;
	struct sv_link sq, rq;		/* struct sv_swr, struct sv_rwr */
	uint32_t sq_n, rq_n;
	struct sv_link early;		/* struct sv_inbound: SENDs before a recv */
	uint64_t next_seq;
	struct sv_conn *conn;
	struct sv_link link;		/* sv.qps */
};

/* A SEND that arrived before a receive was posted (RNR retry, infinite). */
struct sv_inbound {
	struct sv_conn *conn;
	uint64_t seq;
	uint32_t flags, imm, len;
	uint8_t *data;
	struct sv_link link;
};

struct sv_chan {
	struct rdma_event_channel ch;
	int wr_fd;
	struct sv_link events;		/* struct sv_evt */
};

struct sv_evt {
	struct rdma_cm_event ev;
	uint8_t pdata[256];
	struct sv_link link;
};

enum sv_id_state {
	SV_ID_IDLE, SV_ID_BOUND, SV_ID_ADDR, SV_ID_ROUTE, SV_ID_LISTEN,
	SV_ID_CONNECTING, SV_ID_REQ_RCVD, SV_ID_ACCEPTED, SV_ID_ESTABLISHED,
	SV_ID_DISCONNECTING, SV_ID_DISCONNECTED, SV_ID_REJECTED,
};

struct sv_id {
	struct rdma_cm_id id;
	enum sv_id_state state;
	struct sv_sock *lsock;		/* listening socket */
	struct sv_conn *conn;
	uint32_t peer_qpn;
	bool own_channel;		/* created for a NULL channel */
	bool own_cqs;			/* rdma_create_qp made the CQs */
	bool rtu_due;			/* active side: RTU sent when ESTABLISHED is taken */
	struct sv_link link;		/* sv.ids */
};

enum sv_sock_kind { SV_SOCK_LISTEN, SV_SOCK_CONN, SV_SOCK_WAKE };

struct sv_sock {
	enum sv_sock_kind kind;
	int fd;
	struct sv_id *id;		/* listener or connected id */
	struct sv_conn *conn;
	bool gone;			/* closed; freed by the NIC thread */
	struct sv_link link;		/* sv.socks, then sv.grave */
};

struct sv_chunk {
	size_t len, off;
	struct sv_link link;
	uint8_t data[];
};

struct sv_conn {
	struct sv_sock sock;
	struct sv_id *id;		/* NULL until the REQ made a child id */
	struct sv_id *listener;		/* passive side, until the REQ */
	uint8_t *in;
	size_t in_len, in_cap;
	struct sv_link out;		/* struct sv_chunk */
	bool want_out, dead;
	bool cut_pending;		/* drop_conn_after: cut once answers are in */
};

/* Wire: both ends are on one host, so fields are host-endian. */
enum sv_msg_type {
	SV_MSG_REQ = 1, SV_MSG_REP, SV_MSG_RTU, SV_MSG_REJ, SV_MSG_DREQ,
	SV_MSG_DREP, SV_MSG_READ, SV_MSG_READ_RESP, SV_MSG_WRITE, SV_MSG_SEND,
	SV_MSG_ACK,
};

enum { SV_F_IMM = 1, SV_F_INV = 2, SV_F_SOLICITED = 4 };

struct sv_msg {
	uint32_t type;
	uint32_t len;
	uint64_t seq;
	uint64_t addr;
	uint32_t rkey;
	int32_t status;
	uint32_t imm;
	uint32_t flags;
	uint64_t rlen;		/* READ: bytes asked for (len is the payload) */
};
_Static_assert(sizeof(struct sv_msg) == 48, "wire header size");

struct sv_cm_wire {
	uint32_t qpn;
	uint8_t responder_resources, initiator_depth, retry, rnr;
	uint32_t pdata_len;
	struct sockaddr_storage src, dst;
};

struct sv_state {
	pthread_mutex_t lock;
	bool nic_up;
	pthread_t nic;
	int epfd, wakefd;
	struct sv_sock wake;
	struct sv_fault fault;
	bool mw_off;
	bool mw_bounds_off;		/* SOFTVERBS_MW_BOUNDS=0: rxe's window check */
	uint32_t next_key, next_qpn, next_handle;
	struct sv_link mrs, mws, cqs, qps, ids, socks, grave;
	struct ibv_context *cm_ctx;
	char ns[64];
};

extern struct sv_state sv;

void sv_lock(void);
void sv_unlock(void);
uint64_t sv_now_ns(void);
int sv_init_locked(void);

/* verbs.c */
struct ibv_context *sv_open_ctx(void);
struct sv_mr *sv_mr_by_key(uint32_t key);
struct sv_mw *sv_mw_by_key(uint32_t key);
uint32_t sv_new_key(void);
void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited);
void sv_cq_tick(uint64_t now, int *timeout_ms);
void sv_async_push(struct ibv_context *ctx, const struct ibv_async_event *e);
int sv_verbs_fill_ops(struct sv_ctx *c);

/* qp.c */
int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int sv_bind_mw1(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b);
int sv_qp_set_state(struct sv_qp *q, enum ibv_qp_state st);
void sv_qp_to_err(struct sv_qp *q, int event);	/* 0: no async event */
void sv_qp_conn_lost(struct sv_qp *q);
void sv_qp_handle_data(struct sv_conn *c, const struct sv_msg *m, const uint8_t *p);

/* nic.c */
int sv_nic_start_locked(void);
int sv_conn_send(struct sv_conn *c, const struct sv_msg *m,
		 const void *p1, size_t l1, const void *p2, size_t l2);
void sv_conn_kill(struct sv_conn *c);
void sv_conn_free(struct sv_conn *c);
int sv_sock_add(struct sv_sock *s);
void sv_sock_del(struct sv_sock *s);
void sv_sock_bury(struct sv_sock *s);
int sv_addr_name(const struct sockaddr *sa, char *buf, size_t len);
void sv_fault_parse(const char *spec);
void sv_nic_wake(void);
void sv_fault_sleep(unsigned long us);

/* cm.c */
void sv_cm_on_accept(struct sv_id *listener, int fd);
void sv_cm_handle(struct sv_conn *c, const struct sv_msg *m, const uint8_t *p);
void sv_cm_conn_lost(struct sv_conn *c);

#endif

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/softverbs/nic.c: the emulated NIC of one process — a thread that
 * waits in epoll on the listening and connected sockets that stand in for
 * the wire, reads framed messages (struct sv_msg + payload) and hands them
 * to cm.c (connection management) or qp.c (data path), flushes queued
 * outbound bytes without ever blocking, and fires completion channels for
 * CQEs the delay_cqe_ms fault held back. An address ip:port maps to the
 * abstract unix socket "@softverbs<ns>/<ip>:<port>". It also parses the
 * SOFTVERBS_FAULT knobs.
 */
#include "sv.h"
#include "softverbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int sv_addr_name(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	const void *a;
	uint16_t port;

	if (sa->sa_family == AF_INET) {
		a = &((const struct sockaddr_in *)sa)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	} else {
		return -EAFNOSUPPORT;
	}
	if (!inet_ntop(sa->sa_family, a, ip, sizeof(ip)))
		return -EINVAL;
	if (snprintf(buf, len, "softverbs%s/%s:%u", sv.ns, ip, port) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

void sv_nic_wake(void)
{
	uint64_t one = 1;
	ssize_t n;

	if (!sv.nic_up)
		return;
	n = write(sv.wakefd, &one, sizeof(one));
	(void)n;
}

/* The slow-verb fault knobs: sleep us (0: none), no lock held. */
void sv_fault_sleep(unsigned long us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000),
			       .tv_nsec = (long)(us % 1000000) * 1000L };

	while (us && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int sv_sock_add(struct sv_sock *s)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = s };

	if (epoll_ctl(sv.epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
		return -errno;
	sv_list_add_tail(&sv.socks, &s->link);
	return 0;
}

void sv_sock_del(struct sv_sock *s)
{
	if (s->fd < 0)
		return;
	epoll_ctl(sv.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
	sv_list_del(&s->link);
}

/*
 * An epoll batch may still name a socket an application thread just closed,
 * so sockets are freed by the NIC thread after it handled its batch.
 */
void sv_sock_bury(struct sv_sock *s)
{
	sv_sock_del(s);
	s->gone = true;
	sv_list_add_tail(&sv.grave, &s->link);
	sv_nic_wake();
}

static void sv_conn_release(struct sv_conn *c)
{
	sv_foreach(l, &c->out) {
		sv_list_del(l);
		free(sv_container(l, struct sv_chunk, link));
	}
	free(c->in);
	free(c);
}

static void sv_grave_sweep(void)
{
	sv_foreach(l, &sv.grave) {
		struct sv_sock *s = sv_container(l, struct sv_sock, link);

		sv_list_del(l);
		if (s->kind == SV_SOCK_CONN)
			sv_conn_release(s->conn);
		else
			free(s);
	}
}

static void sv_conn_want_out(struct sv_conn *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &c->sock };

	if (c->want_out == on || c->sock.fd < 0)
		return;
	c->want_out = on;
	if (on)
		ev.events |= EPOLLOUT;
	epoll_ctl(sv.epfd, EPOLL_CTL_MOD, c->sock.fd, &ev);
}

/* Write what the socket takes now; the NIC thread does the rest. */
static int sv_conn_flush(struct sv_conn *c)
{
	while (!sv_list_empty(&c->out)) {
		struct sv_chunk *k = sv_container(c->out.next, struct sv_chunk, link);
		ssize_t n = send(c->sock.fd, k->data + k->off, k->len - k->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			sv_conn_want_out(c, true);
			return 0;
		}
		if (n < 0)
			return -errno;
		k->off += (size_t)n;
		if (k->off == k->len) {
			sv_list_del(&k->link);
			free(k);
		}
	}
	sv_conn_want_out(c, false);
	return 0;
}

int sv_conn_send(struct sv_conn *c, const struct sv_msg *m,
		 const void *p1, size_t l1, const void *p2, size_t l2)
{
	struct sv_chunk *k;
	struct sv_msg h = *m;

	if (c->dead || c->sock.fd < 0)
		return -EPIPE;
	k = malloc(sizeof(*k) + sizeof(h) + l1 + l2);
	if (!k)
		return -ENOMEM;
	h.len = (uint32_t)(l1 + l2);
	k->len = sizeof(h) + l1 + l2;
	k->off = 0;
	memcpy(k->data, &h, sizeof(h));
	if (l1)
		memcpy(k->data + sizeof(h), p1, l1);
	if (l2)
		memcpy(k->data + sizeof(h) + l1, p2, l2);
	sv_list_add_tail(&c->out, &k->link);
	return sv_conn_flush(c);
}

/* Cut the wire as a cable pull would: both NICs see the link drop. */
void sv_conn_kill(struct sv_conn *c)
{
	if (c->sock.fd >= 0)
		shutdown(c->sock.fd, SHUT_RDWR);
}

/* Forget c everywhere, then let the NIC thread free it. */
void sv_conn_free(struct sv_conn *c)
{
	c->dead = true;
	sv_foreach(l, &sv.qps) {
		struct sv_qp *q = sv_container(l, struct sv_qp, link);

		if (q->conn == c)
			q->conn = NULL;
		sv_foreach(e, &q->early) {
			struct sv_inbound *in = sv_container(e, struct sv_inbound, link);

			if (in->conn == c)
				in->conn = NULL;
		}
	}
	sv_sock_bury(&c->sock);
}

static void sv_conn_dispatch(struct sv_conn *c, const struct sv_msg *m,
			     const uint8_t *p)
{
	if (m->type >= SV_MSG_READ)
		sv_qp_handle_data(c, m, p);
	else
		sv_cm_handle(c, m, p);
}

/* Parse every complete message in the input buffer. */
static void sv_conn_parse(struct sv_conn *c)
{
	size_t off = 0;

	while (c->in_len - off >= sizeof(struct sv_msg) && !c->dead) {
		struct sv_msg m;

		memcpy(&m, c->in + off, sizeof(m));
		if (c->in_len - off - sizeof(m) < m.len)
			break;
		sv_conn_dispatch(c, &m, c->in + off + sizeof(m));
		off += sizeof(m) + m.len;
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
}

static int sv_conn_grow(struct sv_conn *c)
{
	size_t want = c->in_cap ? c->in_cap : 65536;
	struct sv_msg m;
	uint8_t *n;

	if (c->in_len >= sizeof(m)) {
		memcpy(&m, c->in, sizeof(m));
		if (sizeof(m) + (size_t)m.len > want)
			want = sizeof(m) + (size_t)m.len;
	}
	if (c->in_len == want)
		want *= 2;
	if (want == c->in_cap)
		return 0;
	n = realloc(c->in, want);
	if (!n)
		return -ENOMEM;
	c->in = n;
	c->in_cap = want;
	return 0;
}

static void sv_conn_lost(struct sv_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	sv_cm_conn_lost(c);
}

static void sv_conn_readable(struct sv_conn *c)
{
	for (;;) {
		ssize_t n;

		if (sv_conn_grow(c) < 0) {
			sv_conn_lost(c);
			return;
		}
		n = recv(c->sock.fd, c->in + c->in_len, c->in_cap - c->in_len,
			 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			sv_conn_lost(c);
			return;
		}
		c->in_len += (size_t)n;
		sv_conn_parse(c);
		if (c->dead)
			return;
	}
}

static void sv_listen_ready(struct sv_sock *s)
{
	int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd >= 0)
		sv_cm_on_accept(s->id, fd);
}

static void sv_nic_event(struct epoll_event *e)
{
	struct sv_sock *s = e->data.ptr;
	uint64_t v;

	if (s->gone)
		return;
	if (s->kind == SV_SOCK_WAKE) {
		ssize_t n = read(s->fd, &v, sizeof(v));

		(void)n;
		return;
	}
	if (s->kind == SV_SOCK_LISTEN) {
		sv_listen_ready(s);
		return;
	}
	if (s->conn->dead)
		return;
	if ((e->events & EPOLLOUT) && sv_conn_flush(s->conn) < 0) {
		sv_conn_lost(s->conn);
		return;
	}
	if (e->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		sv_conn_readable(s->conn);
}

static void *sv_nic_main(void *arg)
{
	struct epoll_event ev[16];
	int timeout = -1;

	for (;;) {
		int n = epoll_wait(sv.epfd, ev, 16, timeout);

		sv_lock();
		for (int i = 0; i < n; i++)
			sv_nic_event(&ev[i]);
		sv_grave_sweep();
		timeout = -1;
		sv_cq_tick(sv_now_ns(), &timeout);
		sv_unlock();
	}
	return NULL;
}

int sv_nic_start_locked(void)
{
	pthread_attr_t at;
	int rc;

	sv_init_locked();
	if (sv.nic_up)
		return 0;
	sv.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sv.epfd < 0)
		return -errno;
	sv.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sv.wakefd < 0) {
		rc = -errno;
		goto out_ep;
	}
	sv.wake.kind = SV_SOCK_WAKE;
	sv.wake.fd = sv.wakefd;
	rc = sv_sock_add(&sv.wake);
	if (rc < 0)
		goto out_wake;
	sv_list_del(&sv.wake.link);	/* not a wire: fork must not close it twice */
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = -pthread_create(&sv.nic, &at, sv_nic_main, NULL);
	pthread_attr_destroy(&at);
	if (rc < 0)
		goto out_wake;
	/* named, so a benchmark can tell the emulated NIC's CPU time apart
	 * (tests/bench/rdma_bench.sh: comm in /proc/PID/task/TID/stat) */
	pthread_setname_np(sv.nic, "softverbs-nic");
	sv.nic_up = true;
	return 0;
out_wake:
	close(sv.wakefd);
out_ep:
	close(sv.epfd);
	return rc;
}

static void sv_fault_kv(const char *k, size_t klen, unsigned long v)
{
	static const struct { const char *name; size_t off; } keys[] = {
		{ "drop_conn_after", offsetof(struct sv_fault, drop_conn_after) },
		{ "delay_cqe_ms", offsetof(struct sv_fault, delay_cqe_ms) },
		{ "lose_cqe", offsetof(struct sv_fault, lose_cqe) },
		{ "fail_reg", offsetof(struct sv_fault, fail_reg) },
		{ "err_qp_after", offsetof(struct sv_fault, err_qp_after) },
		{ "destroy_qp_ms", offsetof(struct sv_fault, destroy_qp_ms) },
		{ "destroy_bound_qp_ms", offsetof(struct sv_fault, destroy_bound_qp_ms) },
		{ "reg_mr_us_per_mib", offsetof(struct sv_fault, reg_mr_us_per_mib) },
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strlen(keys[i].name) == klen && !strncmp(keys[i].name, k, klen)) {
			*(unsigned long *)(void *)((char *)&sv.fault + keys[i].off) = v;
			return;
		}
	}
	fprintf(stderr, "softverbs: unknown fault knob '%.*s'\n", (int)klen, k);
}

/* "k=v,k=v": replaces every knob and restarts every counter. */
void sv_fault_parse(const char *spec)
{
	memset(&sv.fault, 0, sizeof(sv.fault));
	while (spec && *spec) {
		const char *eq = strchr(spec, '=');
		const char *end = strchr(spec, ',');
		char *stop;
		unsigned long v;

		if (!end)
			end = spec + strlen(spec);
		if (!eq || eq > end) {
			fprintf(stderr, "softverbs: bad fault spec near '%s'\n", spec);
			return;
		}
		errno = 0;
		v = strtoul(eq + 1, &stop, 10);
		if (errno || stop != end)
			fprintf(stderr, "softverbs: bad value near '%s'\n", spec);
		else
			sv_fault_kv(spec, (size_t)(eq - spec), v);
		spec = *end ? end + 1 : end;
	}
}

SV_EXPORT int softverbs_fault_set(const char *spec)
{
	sv_lock();
	sv_init_locked();
	sv_fault_parse(spec);
	sv_unlock();
	return 0;
}

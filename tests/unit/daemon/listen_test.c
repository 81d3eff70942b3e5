// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tests/unit/daemon/listen_test.c: marud's listeners and accept thread
 * (daemon/listen.c) on a real server with real sockets: a unix listener
 * (parent directory made, mode 0666, served through the accept and
 * connection threads, unlinked at stop), a stale socket file replaced, a
 * live one refused with -EADDRINUSE and left alone, a non-socket refused,
 * bad URIs, an ephemeral TCP port, max-conns answering -EUSERS, a batch of
 * requests from one write answered in order by one send of the event loop
 * (and counted by STATS),
 * pipelined requests answered in order across the event loop's hand-over
 * of the connection to a thread of its own (a READ), and that thread giving
 * the connection back to the loop once it is quiet; a request that copies,
 * zero-fills or hashes pool bytes never runs on the loop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "addr.h"
#include "dir.h"
#include "server_harness.h"
#include "server_priv.h"

struct fx {
	char dir[64];		/* temp dir */
	char run[80];		/* dir/run, made by marud */
	char sock[100];		/* dir/run/marud.sock */
	struct th t;
	struct treply r;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/marud-listen-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->run, sizeof(f->run), "%s/run", f->dir);
	snprintf(f->sock, sizeof(f->sock), "%s/marud.sock", f->run);
	th_config(&f->t);
	f->t.cfg.nlisten = 1;
	snprintf(f->t.cfg.listen[0], sizeof(f->t.cfg.listen[0]), "unix:%s", f->sock);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char path[96];
	int rc = 0;

	if (f->t.srv)
		rc = th_free(&f->t);
	snprintf(path, sizeof(path), "/dev/shm/%s", f->t.shm);
	unlink(path);
	unlink(f->sock);
	rmdir(f->run);
	rmdir(f->dir);
	free(f);
	return rc;
}

static int hello(int fd, struct treply *r)
{
	struct proto_hello_req req = { .proto_version = PROTO_VERSION, .pid = 1 };

	return th_call(fd, OP_HELLO, 1, &req, sizeof(req), r);
}

static void test_unix_serves_and_unlinks(void **state)
{
	struct fx *f = *state;
	struct stat st;
	int fd;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(lstat(f->sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0666);
	assert_int_equal(server_start(f->t.srv), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(th_call(fd, OP_PING, 9, NULL, 0, &f->r), 0);
	assert_int_equal(hello(fd, &f->r), 0);
	assert_int_equal(f->r.len, sizeof(struct proto_hello_rep));
	assert_int_equal(th_free(&f->t), 0);
	/* stop closed the connection and removed the socket file */
	assert_int_equal(tc_reply(fd, &f->r, 5000), -ECONNRESET);
	close(fd);
	assert_int_equal(lstat(f->sock, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_stale_socket_replaced(void **state)
{
	struct fx *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	/* a dead marud's socket: bound, nobody listening */
	assert_int_equal(mkdir(f->run, 0755), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(th_call(fd, OP_PING, 1, NULL, 0, &f->r), 0);
	close(fd);
}

static void test_live_socket_refused(void **state)
{
	struct fx *f = *state;
	struct th other;
	struct stat st;
	char path[96];
	int fd;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	th_config(&other);
	other.cfg.nlisten = 1;
	memcpy(other.cfg.listen[0], f->t.cfg.listen[0], sizeof(other.cfg.listen[0]));
	assert_int_equal(th_new(&other, NULL), -EADDRINUSE);
	snprintf(path, sizeof(path), "/dev/shm/%s", other.shm);
	unlink(path);
	/* the failed server left the live one's socket alone */
	assert_int_equal(lstat(f->sock, &st), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(th_call(fd, OP_PING, 1, NULL, 0, &f->r), 0);
	close(fd);
}

static void test_not_a_socket_refused(void **state)
{
	struct fx *f = *state;
	struct stat st;
	int fd;

	assert_int_equal(mkdir(f->run, 0755), 0);
	fd = open(f->sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(th_new(&f->t, NULL), -EEXIST);
	assert_int_equal(lstat(f->sock, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void test_bad_uris(void **state)
{
	struct fx *f = *state;
	char *cfgl = f->t.cfg.listen[0];
	size_t cap = sizeof(f->t.cfg.listen[0]);

	snprintf(cfgl, cap, "bogus:%s", f->sock);
	assert_int_equal(th_new(&f->t, NULL), -EINVAL);
	snprintf(cfgl, cap, "unix:/tmp/%0200d", 0);
	assert_int_equal(th_new(&f->t, NULL), -ENAMETOOLONG);
	snprintf(cfgl, cap, "unix:");
	assert_int_equal(th_new(&f->t, NULL), -EINVAL);
	f->t.srv = NULL;
}

static void test_tcp_ephemeral_port(void **state)
{
	struct fx *f = *state;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct maru_addr a = { .port = 0 };
	int fd;

	snprintf(f->t.cfg.listen[0], sizeof(f->t.cfg.listen[0]), "tcp://127.0.0.1:0");
	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	assert_int_equal(getsockname(f->t.srv->listeners[0].fd, (struct sockaddr *)&ss, &sl), 0);
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	a.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	assert_int_not_equal(a.port, 0);
	fd = addr_connect(&a, 5000);
	assert_true(fd >= 0);
	assert_int_equal(th_call(fd, OP_PING, 2, NULL, 0, &f->r), 0);
	close(fd);
}

static void wait_no_conns(struct server *srv)
{
	struct timespec ts = { 0, 10 * 1000000L };
	int i;

	for (i = 0; i < 500 && atomic_load(&srv->nconns); i++)
		nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&srv->nconns), 0);
}

static void test_max_conns_answers_eusers(void **state)
{
	struct proto_hello_req req = { .proto_version = PROTO_VERSION };
	struct fx *f = *state;
	int a, b;

	f->t.cfg.max_conns = 1;
	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	a = th_connect_unix(f->sock);
	assert_int_equal(hello(a, &f->r), 0);
	b = th_connect_unix(f->sock);
	/* told why (before any generation: 0), then closed */
	tc_send(b, OP_HELLO, 3, TH_GENERATION, &req, sizeof(req));
	assert_int_equal(tc_reply(b, &f->r, 5000), 0);
	assert_int_equal(f->r.h.op, OP_HELLO);
	assert_int_equal(f->r.h.reqid, 3);
	assert_int_equal(f->r.h.status, -EUSERS);
	assert_int_equal(f->r.h.generation, 0);
	assert_int_equal(tc_reply(b, &f->r, 5000), -ECONNRESET);
	close(b);
	assert_int_equal(atomic_load(&f->t.srv->rejected_conns), 1);
	/* the slot frees when the first client leaves */
	close(a);
	wait_no_conns(f->t.srv);
	b = th_connect_unix(f->sock);
	assert_int_equal(hello(b, &f->r), 0);
	close(b);
}

/*
 * Many requests in one go, a READ among them (the event loop hands the
 * connection to a thread of its own there): every reply comes, in order.
 */
static void test_pipelined_in_order(void **state)
{
	struct proto_io_req rd = { .ino = 777, .off = 0, .len = 16 };
	struct fx *f = *state;
	uint64_t id;
	int fd;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(hello(fd, &f->r), 0);
	for (id = 10; id < 210; id++) {
		if (id == 150)
			tc_send(fd, OP_READ, id, TH_GENERATION, &rd, sizeof(rd));
		else
			tc_send(fd, OP_PING, id, TH_GENERATION, NULL, 0);
	}
	for (id = 10; id < 210; id++) {
		assert_int_equal(tc_reply(fd, &f->r, 5000), 0);
		assert_int_equal(f->r.h.reqid, id);
		assert_int_equal(f->r.h.op, id == 150 ? OP_READ : OP_PING);
		if (id != 150)
			assert_int_equal(f->r.h.status, 0);
		else
			assert_true(f->r.h.status < 0);	/* no such version */
	}
	/* the thread serves what follows */
	assert_int_equal(th_call(fd, OP_PING, 300, NULL, 0, &f->r), 0);
	close(fd);
	assert_int_equal(th_free(&f->t), 0);
}

static uint64_t loop_sends(struct server *srv)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < CONN_LOOPS_MAX; i++)
		n += atomic_load(&srv->loops[i].sends);
	return n;
}

/*
 * A batch of requests that arrives in one write is read in one go, run in
 * order, and answered in one send by the loop: the shape that makes a
 * pipelining client pay one wakeup and two syscalls for the batch.
 */
static void test_batch_one_send(void **state)
{
	enum { N = 100 };
	struct proto_hdr frames[N];
	struct fx *f = *state;
	uint64_t before;
	int fd, i;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(hello(fd, &f->r), 0);
	before = loop_sends(f->t.srv);
	for (i = 0; i < N; i++)
		proto_hdr_init(&frames[i], OP_PING, 0, 1000 + (uint64_t)i, TH_GENERATION, 0);
	assert_int_equal(write(fd, frames, sizeof(frames)), (ssize_t)sizeof(frames));
	for (i = 0; i < N; i++) {
		assert_int_equal(tc_reply(fd, &f->r, 5000), 0);
		assert_int_equal(f->r.h.reqid, 1000 + (uint64_t)i);
		assert_int_equal(f->r.h.status, 0);
	}
	assert_int_equal(loop_sends(f->t.srv) - before, 1);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 0);
	/* the loop counted them on its own counters; STATS adds them up */
	assert_int_equal(th_call(fd, OP_STATS, 2000, NULL, 0, &f->r), 0);
	f->r.p[f->r.len < sizeof(f->r.p) ? f->r.len : sizeof(f->r.p) - 1] = 0;
	assert_non_null(strstr((char *)f->r.p, "\nmarud_ops_total{op=\"PING\"} 100\n"));
	assert_non_null(strstr((char *)f->r.p, "\nmarud_loop_sends_total "));
	close(fd);
	assert_int_equal(th_free(&f->t), 0);
}

static int threads_now(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Threads of this process whose nice value is nice (stat field 19). */
static int threads_at_nice(int nice)
{
	DIR *d = opendir("/proc/self/task");
	char path[300], line[1024], *p;
	struct dirent *e;
	int n = 0, v, i;
	FILE *f;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;	/* the thread ended */
		p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		/* the blank before field i: state is field 3, nice field 19 */
		for (i = 3; p && i <= 19; i++)
			p = strchr(p + 1, ' ');
		if (p && sscanf(p, " %d", &v) == 1 && v == nice)
			n++;
	}
	closedir(d);
	return n;
}

/* A connection handed to a thread of its own goes back to the loop when quiet. */
static void test_thread_gives_back(void **state)
{
	struct proto_io_req rd = { .ino = 777, .off = 0, .len = 16 };
	struct fx *f = *state;
	int fd, before, i;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	fd = th_connect_unix(f->sock);
	assert_int_equal(hello(fd, &f->r), 0);
	before = threads_now();
	assert_true(th_call(fd, OP_READ, 2, &rd, sizeof(rd), &f->r) < 0);
	/* the thread lingers a little, then leaves (10 s: a loaded machine) */
	for (i = 0; i < 1000 && threads_now() > before; i++)
		usleep(10000);
	assert_int_equal(threads_now(), before);
	for (i = 0; i < 5; i++)
		assert_int_equal(th_call(fd, OP_PING, 3 + (uint64_t)i, NULL, 0, &f->r), 0);
	assert_true(th_call(fd, OP_READ, 9, &rd, sizeof(rd), &f->r) < 0);
	close(fd);
	assert_int_equal(th_free(&f->t), 0);
}

/* A CREATE (flags, from_ino) of name in the root, over a loop connection. */
static int create_on(int fd, uint64_t id, uint32_t flags, uint64_t from, const char *name,
		     struct treply *r)
{
	struct proto_create_req q = { .parent = DIR_ROOT_ID, .from_ino = from, .flags = flags,
				      .mode = 0644 };
	uint8_t buf[sizeof(q) + 16];

	q.namelen = (uint16_t)strlen(name);
	memcpy(buf, &q, sizeof(q));
	memcpy(buf + sizeof(q), name, q.namelen);
	return th_call(fd, OP_CREATE, id, buf, sizeof(q) + q.namelen, r);
}

/*
 * A bulk copy, zero-fill or hash (CREATE_COPY, TRUNCATE, a PUBLISH of more
 * than 1 MiB without its digest) goes to a thread of its own, so that it
 * never holds up the loop's other connections, and that thread runs at
 * nice 10; a plain CREATE, a small PUBLISH and one that brings its digest
 * stay on the loop.
 */
static void test_bulk_fill_off_loop(void **state)
{
	struct proto_size_req tr = { .ino = 777, .size = 1 << 20 };
	struct proto_publish_req small = { .ino = 777, .size = 4096 };
	struct proto_publish_req digest = { .ino = 777, .size = 64 << 20, .xxh3 = 1 };
	struct proto_publish_req hashed = { .ino = 777, .size = 64 << 20 };
	struct fx *f = *state;
	int a, b, c;

	assert_int_equal(th_new(&f->t, NULL), 0);
	assert_int_equal(server_start(f->t.srv), 0);
	a = th_connect_unix(f->sock);
	b = th_connect_unix(f->sock);
	assert_int_equal(hello(a, &f->r), 0);
	assert_int_equal(hello(b, &f->r), 0);
	assert_int_equal(create_on(a, 2, 0, 0, "plain", &f->r), 0);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 0);
	/* a copy (of a version that is not there: the answer does not matter) */
	create_on(a, 3, CREATE_COPY, 777, "copy", &f->r);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 1);
	assert_int_equal(threads_at_nice(10), 1);	/* a's thread copies */
	assert_true(th_call(b, OP_TRUNCATE, 4, &tr, sizeof(tr), &f->r) < 0);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 2);
	assert_int_equal(threads_at_nice(10), 2);
	/* a PUBLISH marud hashes goes too, unless small or the digest came */
	c = th_connect_unix(f->sock);
	assert_int_equal(hello(c, &f->r), 0);
	assert_true(th_call(c, OP_PUBLISH, 5, &small, sizeof(small), &f->r) < 0);
	assert_true(th_call(c, OP_PUBLISH, 6, &digest, sizeof(digest), &f->r) < 0);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 2);
	assert_true(th_call(c, OP_PUBLISH, 7, &hashed, sizeof(hashed), &f->r) < 0);
	assert_int_equal(atomic_load(&f->t.srv->conn_handoffs), 3);
	close(a);
	close(b);
	close(c);
	assert_int_equal(th_free(&f->t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unix_serves_and_unlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_socket_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_socket_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_socket_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_uris, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp_ephemeral_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_conns_answers_eusers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_one_send, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_gives_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulk_fill_off_loop, setup, teardown),
	};

	return cmocka_run_group_tests_name("listen", tests, NULL, NULL);
}

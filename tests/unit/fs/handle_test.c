/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/handle_test.c: fs/handle.c (with the pending version of
 * pending.c under it) against the fake libmaru: create, write, flush
 * publishes and a reader reads it; a write after publish starts a
 * copy-on-write version; O_TRUNC rewrites; a stale open asks for a pin;
 * zero-copy holds keep a flush from publishing; handles of an older
 * generation fail with EIO, those of another pool's files do not; a copy-on-write that loses its race to a
 * publish keeps its old version's bytes for the private copy it falls back
 * to; write-only descriptors are direct_io: they drop what readers here
 * cached of what they overwrite, and a small new file they wrote is stored
 * in the kernel's cache at publish; a read of a published version names
 * the pieces libmaru gives (maru_file_splice_src) as its reply's source,
 * and falls back to a copy where they cannot be named or are too many.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake.h"
#include "handle.h"
#include "inode.h"
#include "notify.h"
#include "pin.h"

static struct mfs m;

static int setup(void **state)
{
	fake_reset();
	fake_mount(&m);
	return 0;
}

static int teardown(void **state)
{
	fake_unmount(&m);
	assert_int_equal(fk.files_open, 0);
	return 0;
}

static struct handle *create(const char *name, struct maru_attr *a)
{
	struct handle *h;

	assert_int_equal(handle_create(&m, 1, name, 0644, 0, 0, O_WRONLY | O_CREAT, &h, a), 0);
	return h;
}

static void put(struct handle *h, const char *text, off_t off)
{
	assert_int_equal(handle_write(h, text, strlen(text), off), (ssize_t)strlen(text));
}

static void assert_reads(uint64_t ino, const char *want)
{
	struct handle *r;
	int keep, direct;
	char *buf;

	assert_int_equal(handle_open(&m, ino, O_RDONLY, &r, &keep, &direct), 0);
	assert_true(keep);	/* published bytes are immutable */
	assert_false(direct);
	assert_int_equal(handle_read(r, 64, 0, &buf), (ssize_t)strlen(want));
	assert_memory_equal(buf, want, strlen(want));
	handle_close(r);
}

static void test_create_write_flush_read(void **state)
{
	struct maru_attr a;
	struct handle *h = create("a", &a);

	put(h, "abc", 0);
	assert_int_equal(handle_getattr(h, a.ino, &a), 0);
	assert_int_equal(a.size, 3);	/* the pending's own size */
	assert_int_equal(fk.publishes, 0);
	assert_int_equal(handle_flush(h, 1), 0);
	assert_int_equal(fk.publishes, 1);
	handle_close(h);
	assert_int_equal(fk.publishes, 1);
	assert_reads(fake_named(1, "a")->ino, "abc");
}

/*
 * A writer forks; the child's copy of the descriptor closes (a FLUSH from a
 * process that neither opened nor wrote through it): nothing is published
 * and libmaru is not called; the writer's own close publishes. A FLUSH from
 * another thread of the writer's process is the writer's. Real: the child
 * process and the thread; the kernel's FLUSH is the call.
 */
struct other {
	pid_t tid;
	int fds[2];
};

static void *other_thread(void *arg)
{
	struct other *o = arg;
	char c;

	__atomic_store_n(&o->tid, gettid(), __ATOMIC_RELEASE);
	if (read(o->fds[0], &c, 1) < 0)
		return NULL;	/* the test's end closes it */
	return NULL;
}

static void test_fork_copy_flush(void **state)
{
	struct other o = { 0 };
	struct maru_attr a;
	struct handle *h = create("forked", &a);
	pthread_t t;
	pid_t child;
	int status;

	handle_task(h, getpid(), 0);
	handle_task(h, getpid(), 1);
	put(h, "parent wrote", 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(handle_flush(h, child), 0);
	assert_int_equal(fk.publishes, 0);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	/* another live thread of this process closes: the writer's close */
	assert_int_equal(pipe(o.fds), 0);
	assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
	while (!__atomic_load_n(&o.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	assert_int_equal(handle_flush(h, o.tid), 0);
	assert_int_equal(fk.publishes, 1);
	close(o.fds[1]);
	pthread_join(t, NULL);
	close(o.fds[0]);
	handle_close(h);
	assert_reads(fake_named(1, "forked")->ino, "parent wrote");
}

static void test_copy_on_write(void **state)
{
	struct maru_attr a;
	struct handle *h = create("b", &a);

	put(h, "one", 0);
	assert_int_equal(handle_flush(h, 1), 0);
	put(h, "two!", 0);	/* published meanwhile: a new version */
	assert_int_equal(m.cnt.cow_rewrites, 1);
	assert_int_equal(fk.rewrites, 1);
	assert_int_equal(handle_flush(h, 1), 0);
	assert_int_equal(fk.publishes, 2);
	handle_close(h);
	assert_reads(fake_named(1, "b")->ino, "two!");
}

static void test_trunc_rewrite(void **state)
{
	uint64_t ino = fake_publish(1, "c", "long old text");
	struct handle *h;
	int keep, direct;

	itab_remember(m.tab, ino, 1, "c");
	assert_int_equal(handle_open(&m, ino, O_WRONLY | O_TRUNC, &h, &keep, &direct), 0);
	assert_false(keep);
	put(h, "z", 0);
	handle_close(h);	/* the last writer's release publishes */
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(fk.rewrites, 1);
	assert_reads(fake_named(1, "c")->ino, "z");
	itab_forget(m.tab, ino, 1);
}

static void test_stale_open_wants_pin(void **state)
{
	uint64_t ino = fake_publish(1, "d", "x");
	struct handle *h;
	int keep, direct;

	itab_remember(m.tab, ino, 1, "d");
	fake_ver(ino)->published = 0;	/* replaced and gone */
	assert_int_equal(handle_open(&m, ino, O_RDONLY, &h, &keep, &direct), -ESTALE);
	assert_int_equal(m.cnt.stale_opens, 1);
	assert_true(pin_wanted(m.pins, 1, "d"));
	assert_false(pin_wanted(m.pins, 1, "d"));	/* consumed */
	itab_forget(m.tab, ino, 1);
}

static void test_zero_copy_hold(void **state)
{
	struct maru_attr a;
	struct handle *h = create("e", &a);
	struct zc_ref z;

	assert_int_equal(handle_zc_get(h, 1, &z), 0);
	assert_true(z.writable);
	assert_true(z.pending);
	assert_non_null(z.file);
	handle_zc_put(&z);
	assert_int_equal(handle_flush(h, 1), 0);	/* a mapping still writes */
	assert_int_equal(fk.publishes, 0);
	assert_int_equal(handle_zc_unhold(h), 0);
	assert_int_equal(handle_zc_unhold(h), -EINVAL);
	assert_int_equal(handle_flush(h, 1), 0);
	assert_int_equal(fk.publishes, 1);
	assert_int_equal(handle_zc_get(h, 0, &z), 0);	/* read-only: the published file */
	assert_false(z.pending);
	assert_false(z.writable);
	handle_zc_put(&z);
	handle_close(h);
}

static void test_dead_mapping_publishes_nothing(void **state)
{
	struct maru_attr a;
	struct handle *h = create("f", &a);
	struct zc_ref z;

	put(h, "x", 0);
	assert_int_equal(handle_zc_get(h, 1, &z), 0);
	handle_zc_put(&z);
	handle_close(h);	/* released with its hold: the writer died */
	assert_int_equal(fk.publishes, 0);
	assert_null(fake_named(1, "f"));
}

static void test_older_generation(void **state)
{
	struct maru_attr a;
	struct handle *h = create("g", &a);
	char *buf;

	put(h, "x", 0);
	fk.epoch++;	/* marud restarted */
	assert_int_equal(handle_read(h, 1, 0, &buf), -EIO);
	assert_int_equal(handle_write(h, "y", 1, 0), -EIO);
	assert_int_equal(handle_getattr(h, a.ino, &a), -EIO);
	handle_close(h);
	assert_int_equal(fk.publishes, 0);
}

/*
 * On a cluster mount a pool's restart stales its own files only: a
 * writer of a file on another pool goes on and publishes; a reader of a
 * file on the restarted pool fails.
 */
static void test_other_pool_generation(void **state)
{
	uint64_t ino = fake_publish(1, "r", "kept");
	struct handle *h, *r;
	struct maru_attr a;
	int keep, direct;
	char *buf;

	h = create("w", &a);
	assert_int_equal(handle_open(&m, ino, O_RDONLY, &r, &keep, &direct), 0);
	put(h, "x", 0);
	fk.pool_epoch[1]++;	/* a pool that holds neither file */
	assert_int_equal(handle_write(h, "y", 1, 1), 1);
	assert_int_equal(handle_read(r, 4, 0, &buf), 4);
	handle_close(h);
	assert_int_equal(fk.publishes, 1);
	assert_non_null(fake_named(1, "w"));
	fk.pool_epoch[0]++;	/* the pool of both */
	assert_int_equal(handle_read(r, 4, 0, &buf), -EIO);
	handle_close(r);
}

/* The reply's buffers of a spliced read of size bytes at off. */
static int read_src(uint64_t ino, size_t size, off_t off, struct handle_src *src)
{
	struct handle *r;
	int keep, direct, rc;

	assert_int_equal(handle_open(&m, ino, O_RDONLY, &r, &keep, &direct), 0);
	rc = handle_read_src(r, size, off, src);
	handle_close(r);
	return rc;
}

static void test_read_src_pieces(void **state)
{
	uint64_t ino = fake_publish(1, "s", "0123456789abcdefghij");	/* 20 bytes */
	struct handle_src src;
	const struct fuse_buf *b = src.bv.buf;

	/* not nameable (tcp, flush, a device-DAX): by copy */
	assert_int_equal(read_src(ino, 64, 0, &src), -EAGAIN);
	assert_int_equal(fk.splices, 1);
	/* pieces of 8: [3, 8) [8, 16) [16, 20), cut at the file's end */
	fk.splice_piece = 8;
	assert_int_equal(read_src(ino, 64, 3, &src), 0);
	assert_int_equal(src.bv.count, 3);
	assert_int_equal(b[0].size, 5);
	assert_int_equal(b[0].pos, FAKE_SPLICE_BASE + 3);
	assert_int_equal(b[1].size, 8);
	assert_int_equal(b[1].pos, FAKE_SPLICE_BASE + 8);
	assert_int_equal(b[2].size, 4);
	assert_int_equal(b[2].pos, FAKE_SPLICE_BASE + 16);
	assert_int_equal(b[2].fd, FAKE_SPLICE_FD);
	assert_true(b[2].flags & FUSE_BUF_IS_FD);
	assert_true(b[2].flags & FUSE_BUF_FD_SEEK);
	/* ... and cut at the read's end, inside a piece */
	assert_int_equal(read_src(ino, 6, 4, &src), 0);
	assert_int_equal(src.bv.count, 2);
	assert_int_equal(b[0].size + b[1].size, 6);
	/* at the end: EOF is the copy path's */
	assert_int_equal(read_src(ino, 64, 20, &src), -EAGAIN);
	/* more pieces than a reply holds: by copy */
	fk.splice_piece = 2;
	assert_int_equal(read_src(ino, 20, 0, &src), -EAGAIN);
	assert_int_equal(read_src(ino, 2 * HANDLE_SRC_BUFS, 0, &src), 0);
	assert_int_equal(src.bv.count, HANDLE_SRC_BUFS);
}

static void test_fallocate_truncate(void **state)
{
	struct maru_attr a;
	struct handle *h = create("h", &a);

	assert_true(handle_is_writer(h));
	assert_int_equal(handle_fallocate(h, 100), 0);
	assert_int_equal(handle_getattr(h, a.ino, &a), 0);
	assert_int_equal(a.size, 100);
	assert_int_equal(handle_truncate(h, 7, &a), 0);
	assert_int_equal(a.size, 7);
	assert_int_equal(handle_fsync(h), 0);
	handle_close(h);
	assert_int_equal(fake_named(1, "h")->size, 7);
}

/* ---- a copy-on-write racing a publish ---- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int in_publish, go;
	struct handle *h;
	const char *text;
	ssize_t n;
	int rc;
} race = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, NULL, 0, 0 };

/* maru_file_publish() stops here until the test says go. */
static void publish_gate(void)
{
	pthread_mutex_lock(&race.lock);
	race.in_publish = 1;
	pthread_cond_broadcast(&race.cond);
	while (!race.go)
		pthread_cond_wait(&race.cond, &race.lock);
	pthread_mutex_unlock(&race.lock);
}

static void *flush_thread(void *arg)
{
	race.rc = handle_flush(arg, 1);
	return NULL;
}

static void *write_thread(void *arg)
{
	race.n = handle_write(race.h, race.text, strlen(race.text), 0);
	return NULL;
}

/*
 * Writer a published its version P (a reader r still on it) and writes
 * again: its copy-on-write finds the name's live pending Q, which another
 * writer is publishing right then (Q's lock held), and waits to attach to
 * it. Meanwhile r closes. Q's publish wins, so a stays on P and falls back
 * to a private copy of P's bytes: P must not have been closed under it (r's
 * close saw no handle left while a was moving), or the write fails with EIO.
 */
static void test_cow_loses_race_to_publish(void **state)
{
	struct handle *a, *r, *c;
	struct maru_attr at;
	pthread_t tf, tw;
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	int keep, direct;
	char *buf;

	a = create("cw", &at);
	put(a, "one", 0);
	assert_int_equal(handle_open(&m, at.ino, O_RDONLY, &r, &keep, &direct), 0);
	assert_int_equal(handle_flush(a, 1), 0);	/* P published */
	assert_int_equal(handle_open(&m, at.ino, O_WRONLY, &c, &keep, &direct), 0);
	put(c, "new", 0);				/* Q, the name's pending */
	race.in_publish = race.go = 0;
	fk.publish_hook = publish_gate;
	assert_int_equal(pthread_create(&tf, NULL, flush_thread, c), 0);
	pthread_mutex_lock(&race.lock);
	while (!race.in_publish)
		pthread_cond_wait(&race.cond, &race.lock);
	pthread_mutex_unlock(&race.lock);
	race.h = a;
	race.text = "after";
	assert_int_equal(pthread_create(&tw, NULL, write_thread, NULL), 0);
	nanosleep(&ts, NULL);	/* a waits to attach to Q */
	handle_close(r);
	pthread_mutex_lock(&race.lock);
	race.go = 1;
	pthread_cond_broadcast(&race.cond);
	pthread_mutex_unlock(&race.lock);
	pthread_join(tf, NULL);
	pthread_join(tw, NULL);
	fk.publish_hook = NULL;
	assert_int_equal(race.rc, 0);
	assert_int_equal(race.n, 5);		/* no EIO */
	assert_int_equal(handle_read(a, 64, 0, &buf), 5);
	assert_memory_equal(buf, "after", 5);	/* its private copy */
	assert_int_equal(handle_flush(a, 1), 0);
	handle_close(a);
	handle_close(c);
	assert_int_equal(fk.publishes, 2);	/* the copy is never published */
	assert_reads(fake_named(1, "cw")->ino, "new");
}

/*
 * A descriptor open for writing only is direct_io (its writes bypass the
 * kernel's page cache); read-write ones are not. A direct write drops the
 * inode's pages (before it returns) only while a handle that caches them,
 * here a reader of the pending file, is attached. A small new file written
 * that way is stored in the kernel's cache when it is published; a large
 * one, one written through the cache and a rewrite (the kernel's inode is
 * the old version) are not.
 */
static void test_write_only_is_direct(void **state)
{
	static char big[1000];
	struct handle *w, *rw, *r, *o, *l;
	struct maru_attr at, at2, at3;
	int keep, direct;
	uint64_t ino;

	memset(big, 'b', sizeof(big) - 1);
	assert_int_equal(notify_start(m.nt), 0);
	w = create("wo", &at);
	assert_true(handle_is_direct(w));
	put(w, "first", 0);
	assert_int_equal(fk.inval_inodes, 0);	/* nobody caches its pages */
	assert_int_equal(handle_open(&m, at.ino, O_RDONLY, &r, &keep, &direct), 0);
	assert_false(direct);
	put(w, "again", 0);
	assert_int_equal(fk.inval_inodes, 1);	/* the reader's pages dropped */
	handle_close(r);
	put(w, "third", 0);
	assert_int_equal(fk.inval_inodes, 1);
	assert_int_equal(fk.stores, 0);
	handle_close(w);			/* publishes */
	assert_int_equal(fk.stores, 1);		/* small, new, written direct */
	assert_int_equal(fk.last_store_ino, at.ino);
	assert_int_equal(handle_create(&m, 1, "rw", 0644, 0, 0, O_RDWR | O_CREAT, &rw, &at2), 0);
	assert_false(handle_is_direct(rw));
	put(rw, "rw", 0);
	handle_close(rw);
	l = create("large", &at3);
	put(l, big, 66000);
	handle_close(l);
	assert_int_equal(fk.stores, 1);
	ino = fake_named(1, "wo")->ino;
	itab_remember(m.tab, ino, 1, "wo");
	assert_int_equal(handle_open(&m, ino, O_WRONLY, &o, &keep, &direct), 0);
	assert_true(direct);
	put(o, "x", 0);
	handle_close(o);	/* publishes: ino is the old version now */
	assert_int_equal(fk.stores, 1);		/* a rewrite */
	itab_forget(m.tab, ino, 1);
	ino = fake_named(1, "wo")->ino;
	itab_remember(m.tab, ino, 1, "wo");
	assert_int_equal(handle_open(&m, ino, O_RDWR, &o, &keep, &direct), 0);
	assert_false(direct);
	handle_close(o);
	itab_forget(m.tab, ino, 1);
	notify_stop(m.nt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_write_flush_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_on_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trunc_rewrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_open_wants_pin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_copy_hold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_mapping_publishes_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_older_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_pool_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallocate_truncate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_src_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_copy_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_only_is_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cow_loses_race_to_publish, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("fs/handle", tests, NULL, NULL);
}

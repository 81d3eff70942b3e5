/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/unit/fs/link_test.c: marufs's handlers of fs/link.c (symlink,
 * readlink, link, mknod of special files) and the event wait of ns_rename,
 * over the shared fake (fake.c) plus the libmaru calls only these need,
 * wrapped here: a new name is handed to the kernel as an entry carrying
 * the pool's attributes (rdev included), errors pass through (a link of a
 * pending file is EPERM), and a rename whose reply names no event
 * (maru_rename_seq gives 0) waits for nothing, while one with an event
 * waits for it (counted in event_waits, bounded).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>

#include "fake.h"
#include "notify.h"
#include "link.h"
#include "ns.h"

static uint64_t rename_seq_reply;
static int link_rc;
static char readlink_buf[64];
static struct maru_attr last_attr;

int __wrap_maru_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			   const char *nn, unsigned int flags, uint64_t *seq);
int __wrap_maru_rename_seq(struct maru_client *c, uint64_t op, const char *on, uint64_t np,
			   const char *nn, unsigned int flags, uint64_t *seq)
{
	*seq = rename_seq_reply;
	return 0;
}

static void new_attr(struct maru_attr *out, uint32_t mode, uint32_t rdev)
{
	memset(out, 0, sizeof(*out));
	out->ino = 40;
	out->mode = mode;
	out->nlink = 1;
	out->rdev = rdev;
	out->state = MARU_STATE_PUBLISHED;
	last_attr = *out;
}

int __wrap_maru_symlink(struct maru_client *c, uint64_t parent, const char *name,
			const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out);
int __wrap_maru_symlink(struct maru_client *c, uint64_t parent, const char *name,
			const char *target, uint32_t uid, uint32_t gid, struct maru_attr *out)
{
	new_attr(out, S_IFLNK | 0777, 0);
	out->size = strlen(target);
	return 0;
}

int __wrap_maru_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size);
int __wrap_maru_readlink(struct maru_client *c, uint64_t ino, char *buf, size_t size)
{
	if (ino != 40)
		return -EINVAL;
	snprintf(buf, size, "%s", "the/target");
	return 10;
}

int __wrap_maru_link(struct maru_client *c, uint64_t ino, uint64_t newparent,
		     const char *newname, struct maru_attr *out);
int __wrap_maru_link(struct maru_client *c, uint64_t ino, uint64_t newparent,
		     const char *newname, struct maru_attr *out)
{
	if (link_rc)
		return link_rc;
	new_attr(out, S_IFREG | 0644, 0);
	out->ino = ino;
	out->nlink = 2;
	return 0;
}

int __wrap_maru_mknod(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
		      struct maru_attr *out);
int __wrap_maru_mknod(struct maru_client *c, uint64_t parent, const char *name,
		      uint32_t mode, uint32_t rdev, uint32_t uid, uint32_t gid,
		      struct maru_attr *out)
{
	new_attr(out, mode, rdev);
	return 0;
}

int __wrap_fuse_reply_readlink(fuse_req_t req, const char *link);
int __wrap_fuse_reply_readlink(fuse_req_t req, const char *link)
{
	fk.replies++;
	fk.last_err = 0;
	snprintf(readlink_buf, sizeof(readlink_buf), "%s", link);
	return 0;
}

static void test_new_names(void **state)
{
	struct mfs m;

	(void)state;
	fake_reset();
	fake_mount(&m);
	link_symlink(fake_req(&m), "the/target", 1, "l");
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_len, 40);	/* the entry's ino */
	link_readlink(fake_req(&m), 40);
	assert_string_equal(readlink_buf, "the/target");
	link_readlink(fake_req(&m), 41);
	assert_int_equal(fk.last_err, EINVAL);
	link_mknod(fake_req(&m), 1, "p", S_IFIFO | 0600, 0);
	assert_int_equal(fk.last_err, 0);
	assert_true(S_ISFIFO(last_attr.mode));
	link_mknod(fake_req(&m), 1, "dev", S_IFCHR | 0600, 0x103);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(last_attr.rdev, 0x103);
	link_hardlink(fake_req(&m), 7, 1, "h");
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(fk.last_len, 7);
	/* A version still being written has no name to link: EPERM, as Linux says. */
	link_rc = -ENOENT;
	link_hardlink(fake_req(&m), 8, 1, "h2");
	assert_int_equal(fk.last_err, EPERM);
	link_rc = -EEXIST;
	link_hardlink(fake_req(&m), 8, 1, "h");
	assert_int_equal(fk.last_err, EEXIST);
	link_rc = 0;
	fake_unmount(&m);
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_rename_waits_only_for_an_event(void **state)
{
	struct timespec t0;
	struct mfs m;

	(void)state;
	fake_reset();
	fake_mount(&m);
	assert_int_equal(notify_start(m.nt), 0);
	notify_stream_up(m.nt, 1);
	/* No event made (a pending file moved to a free name): no wait. */
	rename_seq_reply = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ns_rename(fake_req(&m), 1, "k.tmp", 1, "k", 0);
	assert_int_equal(fk.last_err, 0);
	assert_int_equal(m.cnt.event_waits, 0);
	assert_true(since(&t0) < 0.5);
	/* An event made: the handler waits for it (here it never comes). */
	rename_seq_reply = 12;
	ns_rename(fake_req(&m), 1, "k", 1, "k2", 0);
	assert_int_equal(m.cnt.event_waits, 1);
	assert_int_equal(m.cnt.event_wait_timeouts, 1);
	notify_stop(m.nt);
	fake_unmount(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_names),
		cmocka_unit_test(test_rename_waits_only_for_an_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/sockio.c: the project's one implementation of "send all of it"
 * and "read all of it" over a socket (see sockio.h). One gather call per
 * attempt, advancing the iovec over partial transfers. A descriptor that is
 * not a socket (a pipe in a test) falls back to readv/writev once.
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "sockio.h"

#define DRAIN_CHUNK	4096

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax()	__asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax()	do { } while (0)
#endif

static void iov_advance(struct iovec **iov, int *cnt, size_t done)
{
	while (*cnt && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*cnt)--;
	}
	if (*cnt && done) {
		(*iov)->iov_base = (uint8_t *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
}

static ssize_t gather(int fd, struct iovec *iov, int cnt, bool write, bool *nosock)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
	ssize_t n;

	if (!*nosock) {
		n = write ? sendmsg(fd, &m, MSG_NOSIGNAL) : recvmsg(fd, &m, MSG_WAITALL);
		if (n >= 0 || errno != ENOTSOCK)
			return n;
		*nosock = true;
	}
	return write ? writev(fd, iov, cnt) : readv(fd, iov, cnt);
}

static int move_all(int fd, struct iovec *iov, int cnt, bool write)
{
	bool nosock = false;
	ssize_t n;

	/* skip empty leading entries so a 0 return always means EOF */
	iov_advance(&iov, &cnt, 0);
	while (cnt > 0) {
		n = gather(fd, iov, cnt, write, &nosock);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return write ? -EIO : -ECONNRESET;
		iov_advance(&iov, &cnt, (size_t)n);
	}
	return 0;
}

int sock_writev_all(int fd, struct iovec *iov, int cnt)
{
	return move_all(fd, iov, cnt, true);
}

int sock_readv_all(int fd, struct iovec *iov, int cnt)
{
	return move_all(fd, iov, cnt, false);
}

int sock_read_full(int fd, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return len ? move_all(fd, &iov, 1, false) : 0;
}

int sock_write_full(int fd, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return len ? move_all(fd, &iov, 1, true) : 0;
}

int sock_drain(int fd, uint64_t n)
{
	uint8_t scratch[DRAIN_CHUNK];
	size_t k;
	int rc;

	while (n) {
		k = n < sizeof(scratch) ? (size_t)n : sizeof(scratch);
		rc = sock_read_full(fd, scratch, k);
		if (rc)
			return rc;
		n -= k;
	}
	return 0;
}

int sock_spin_readable(int fd, uint64_t ns)
{
	uint64_t end = mono_ns() + ns;
	char b;

	do {
		/* -1/EAGAIN: nothing yet; anything else would not block */
		if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0 || errno != EAGAIN)
			return 1;
		cpu_relax();
	} while (mono_ns() < end);
	return 0;
}

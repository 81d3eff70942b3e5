/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/common/sockio.h: whole-buffer socket I/O for marud, marufs and libmaru.
 * Every call moves all the bytes asked for or fails: it retries after EINTR
 * and partial transfers, writes with sendmsg(MSG_NOSIGNAL) so a closed peer
 * is -EPIPE and not SIGPIPE, and reads end with -ECONNRESET when the peer
 * closes first. Pipes and files work too (plain readv/writev), for tests.
 * Returns 0 or -errno.
 */
#ifndef MARU_SOCKIO_H
#define MARU_SOCKIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* iov is consumed: its entries are advanced over what was moved. */
int sock_writev_all(int fd, struct iovec *iov, int cnt);
int sock_readv_all(int fd, struct iovec *iov, int cnt);
int sock_read_full(int fd, void *buf, size_t len);
int sock_write_full(int fd, const void *buf, size_t len);
/* Read and drop n bytes (a payload nobody will use). */
int sock_drain(int fd, uint64_t n);
/*
 * Poll fd without sleeping until it has a byte to read, an error or EOF, or
 * until ns nanoseconds passed: 1 if it became readable (or will not block),
 * 0 when the time ran out. Burns a CPU meanwhile; a caller spends this only
 * where waking a sleeping thread costs more than the wait.
 */
int sock_spin_readable(int fd, uint64_t ns);

#endif

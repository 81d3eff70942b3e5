/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/bench/benchnet.h: what the benchmarks that talk to a server over a
 * socket share: connecting from an address string, and the handful of RESP
 * (the Redis protocol) the Redis peers speak. The bench writes its own tiny
 * client instead of linking hiredis so the peer costs no dependency and both
 * sides of a ratio are driven by code of the same weight.
 */
#ifndef BENCH_BENCHNET_H
#define BENCH_BENCHNET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "unix:/path", "tcp:HOST:PORT" or "HOST:PORT"; a connected fd or -errno. */
int net_connect(const char *spec);
/* Write or read exactly len bytes on a blocking fd: 0 or -errno (-EPIPE at EOF). */
int net_write_full(int fd, const void *buf, size_t len);
int net_read_full(int fd, void *buf, size_t len);
/* Raise RLIMIT_NOFILE to its hard limit (1,000 sockets need more than 1024). */
void net_raise_nofile(void);

/* One RESP reply as resp_parse() found it. */
struct resp_reply {
	char type;		/* '+', '-', ':', '$' (bulk), '*' (array header only) */
	long long num;		/* ':' value, '$'/'*' length (-1 = nil) */
	const char *data;	/* '$': the bulk bytes; '+'/'-': the line */
	size_t len;		/* bytes at data */
};

/*
 * Encode a command of argc bulk strings into buf. Returns the length, or 0
 * when cap is too small.
 */
size_t resp_cmd(char *buf, size_t cap, int argc, const char *const *argv, const size_t *lens);
/*
 * Parse one reply at the start of buf: bytes it takes (> 0), 0 when more
 * bytes are needed, -EPROTO when buf does not start with a reply.
 */
ssize_t resp_parse(const char *buf, size_t len, struct resp_reply *r);
/*
 * Blocking: read one bulk reply of up to cap bytes straight into dst (no
 * copy through a line buffer, so a 32 MiB GET costs one pass). Returns the
 * bulk length, -ENOENT for nil, -EPROTO/-EMSGSIZE/-errno otherwise.
 */
ssize_t resp_read_bulk(int fd, void *dst, size_t cap);
/* Blocking: read one reply line ("+OK", ":1", "-ERR ..."); 0 if it is not an error. */
int resp_read_status(int fd);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/util.h: small helpers shared by libmaru, marud and marufs: clocks,
 * size parsing, pool URI parsing, checksums.
 */
#ifndef MARU_UTIL_H
#define MARU_UTIL_H

#include <stddef.h>
#include <stdint.h>

uint64_t now_ns(void);		/* CLOCK_REALTIME */
uint64_t mono_ns(void);		/* CLOCK_MONOTONIC */

/* "64M", "2G", "4096", "1T" -> bytes. -EINVAL on garbage or overflow. */
int parse_size(const char *s, uint64_t *out);
/* Decimal unsigned with range check; -EINVAL/-ERANGE. */
int parse_u64(const char *s, uint64_t *out);

/*
 * GNU C modes predefine the macro `unix` as 1, which would turn the field
 * below into "int 1;". Nothing in this project uses the macro.
 */
#undef unix

/* Parsed control address. */
struct maru_addr {
	int unix;		/* 1: path is a Unix socket path */
	char host[256];
	uint16_t port;
	char path[108];
};
/*
 * "maru://host[:port]", "maru+unix:///path", and for marud's --listen
 * "tcp://addr:port" and "unix:PATH". -EINVAL otherwise.
 */
int addr_parse(const char *uri, struct maru_addr *out);
/* Connect a blocking stream socket; -errno. timeout_ms bounds connect(). */
int addr_connect(const struct maru_addr *a, unsigned int timeout_ms);

uint64_t hash_xxh3(const void *p, size_t len);

#endif

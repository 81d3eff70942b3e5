/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/common/addr.h: control addresses: parse a URI, connect to it. */
#ifndef MARU_ADDR_H
#define MARU_ADDR_H

#include <stdint.h>

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
/* The same, ended early with -EINTR when stop_fd (>= 0) turns readable (tcp). */
int addr_connect_stop(const struct maru_addr *a, unsigned int timeout_ms, int stop_fd);

#endif

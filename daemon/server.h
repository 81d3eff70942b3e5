/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/server.h: the running marud: pool, allocator, directory and session
 * table wired together, the listening sockets, the connections (an event
 * loop per CPU; a thread of its own for one whose request waits) and the
 * request handlers of lib/common/proto/proto.h. run.c creates it from a config,
 * starts it, reloads it on SIGHUP and stops it on SIGTERM. server.c holds
 * the life cycle; the request path runs listen.c -> conn.c -> dispatch.c ->
 * subscribe.c, handlers/ -> wire.c (server_priv.h tells the layers apart).
 */
#ifndef MARUD_SERVER_H
#define MARUD_SERVER_H

#include <stdint.h>

#include "alloc.h"
#include "conf.h"

struct server;

/*
 * Open the pool (writing `generation` into its superblock), build the
 * directory and bind every listen address. key: the 32-byte key (AUTH
 * required on every connection) or NULL (loopback and unix only; the caller
 * has validated that). Nothing is served until server_start().
 */
int server_new(const struct config *cfg, const uint8_t *key, uint64_t generation,
	       struct server **out);
/* Start the accept thread and the session reaper. */
int server_start(struct server *srv);
/*
 * Clean shutdown: stop accepting, close every connection, end every session,
 * check the directory (logged). Returns the dir_check() result.
 */
int server_stop(struct server *srv);
/* Unmap the pool, unlink unix sockets, free everything. */
void server_destroy(struct server *srv);
/* SIGHUP: apply what can change at run time (verbose, grace, limits). */
void server_reload(struct server *srv, const struct config *nc);
uint64_t server_generation(const struct server *srv);
/*
 * 1 once the region extension's memory generation changed (the memory
 * lost its contents): marud has raised SIGUSR2 and run.c restarts it in
 * place with --fresh (new generation, empty directory).
 */
int server_reset_asked(const struct server *srv);

/*
 * The directory's copy callback over a mapping (handlers/io.c): arg is the
 * mapping base (extent offsets are relative to it); src == NULL zero-fills.
 */
void hdl_io_copy(void *arg, const struct extent_list *dst, uint64_t dst_off,
		 const struct extent_list *src, uint64_t src_off, uint64_t len);

/*
 * For the fuzzer and unit tests only (tests/fuzz/server_fuzz.c,
 * tests/unit/daemon/server_harness.c; conn.c): drive one connection on
 * the caller's thread, one request frame per call, through the same
 * read/check/gate/dispatch path a connection thread runs. fd is a stream
 * socket (a socketpair end: bulk I/O uses sendmsg/recvmsg) that the caller
 * owns and closes. conn_fuzz_request() returns 0 to go on, non-zero when
 * the connection would be closed; conn_fuzz_free() detaches it from
 * its session as a dropped connection does.
 */
struct conn;
int conn_fuzz_new(struct server *srv, int fd, struct conn **out);
int conn_fuzz_request(struct conn *c);
void conn_fuzz_free(struct conn *c);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/ext/ext.h: marud's side of a region extension
 * (include/maru/marud_extension.h): loading it with dlopen (ext.c), the
 * calls into its hooks with marud's rules around them (ext.c), the watch
 * on its memory generation (gen.c), and the per-connection set of open
 * hint requests that bounds what one connection may keep open (open.c).
 * The hint handlers (handlers/hint.c) check ranges before calling here;
 * nothing in this folder touches the directory except through the retire
 * callback the directory calls (dir_opts.retire).
 */
#ifndef MARUD_EXT_H
#define MARUD_EXT_H

#include <stdatomic.h>
#include <stdint.h>

#include "maru/marud_extension.h"

struct pool;
struct ext;

/*
 * Where marud keeps the memory generation the directory's journal was
 * written under: inside the superblock page, after the sealed superblock
 * (which is 88 bytes), so it dies with the pool.
 */
#define EXT_MEMGEN_OFF	2048

struct ext_stats {
	atomic_uint_fast64_t hints, refused, failed, opened, closed, over_limit;
	atomic_uint_fast64_t waits, wait_failed, retired, resets;
};

/*
 * Load name_or_path (a path if it contains '/', else NAME.so in the
 * extension directory MARUD_EXTDIR, or $MARUD_EXTENSION_DIR when set) and
 * call its open(config). Every failure is logged and returned.
 */
int ext_load(const char *name_or_path, const char *config, struct ext **out);
/* close() the extension and dlclose it (watch stopped first); NULL is fine. */
void ext_unload(struct ext *e);
const char *ext_name(const struct ext *e);
uint32_t ext_actions(const struct ext *e);
struct ext_stats *ext_stats(struct ext *e);

/*
 * The pool is mapped: validate_access then mapped(fresh). *fresh_out is
 * set when the memory generation the pool records differs from the
 * extension's (the directory must start empty). A failing mapped() is not
 * an error here: the region stays out of use (ext_region_ok() 0) and the
 * watch thread asks again.
 */
int ext_attach(struct ext *e, struct pool *p, int fresh, int *fresh_out);
/* 1 when versions may be opened and written (mapped, generation known). */
int ext_region_ok(struct ext *e);

/* Checked hints and waits (handlers/hint.c); -EOPNOTSUPP if not taken. */
int ext_hint(struct ext *e, uint64_t conn, int action, const char *request,
	     const struct marud_ext_range *r, uint32_t n);
int ext_wait(struct ext *e, uint64_t conn, int action, const struct marud_ext_range *r,
	     uint32_t n, uint32_t timeout_ms);
/* dir_opts.retire: under the directory lock, before bytes are reused. */
void ext_retire(void *arg, uint64_t off, uint64_t len);
/*
 * The session (hint id sid) ended: its open requests are forgotten and,
 * if it ever hinted, the extension hears connection_closed(sid).
 */
void ext_session_end(struct ext *e, uint64_t sid);
/* The session table of open hint requests (NULL without an extension). */
struct hint_sessions *ext_hint_sessions(struct ext *e);

/*
 * gen.c: watch memory_generation() every poll_ms on a thread of its own;
 * when it changes (or comes back after grace_ms unknown) call reset(arg)
 * once. While unknown past grace_ms the region is out of use: unknown(arg)
 * is called as it goes out of use (clients drop what they cache).
 */
int ext_watch_start(struct ext *e, unsigned int poll_ms, unsigned int grace_ms,
		    void (*reset)(void *arg), void (*unknown)(void *arg), void *arg);
void ext_watch_stop(struct ext *e);

/* open.c: the hint requests one connection keeps open (read .. read_end). */
struct hint_open;
/* 0 opened, 1 already open, -EMFILE at PROTO_MAX_HINT_OPEN, -ENOMEM. */
int ext_open_add(struct hint_open **set, const char *request);
/* 1 closed, 0 was not open. */
int ext_open_del(struct hint_open *set, const char *request);
unsigned int ext_open_count(const struct hint_open *set);
void ext_open_free(struct hint_open *set);

/*
 * The open sets of every client session (a client's connections share its
 * session): the id the extension knows a session by (its "conn"), and the
 * table. ext_open_session_track: open 1 adds request (as ext_open_add), -1
 * deletes it (as ext_open_del), 0 only makes the session known.
 * ext_open_session_end: 1 if the session was known (it hinted), then forgotten.
 */
struct hint_sessions;
uint64_t ext_open_session_id(const uint8_t *token, size_t len);
int ext_open_sessions_new(struct hint_sessions **out);
void ext_open_sessions_free(struct hint_sessions *t);
int ext_open_session_track(struct hint_sessions *t, uint64_t sid, int open, const char *request);
unsigned int ext_open_session_count(struct hint_sessions *t, uint64_t sid);
int ext_open_session_end(struct hint_sessions *t, uint64_t sid);

#endif

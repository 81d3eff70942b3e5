/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/session.h: what the last HELLO told a client (session.c): the session
 * epoch handles are checked against, the generation callback, and the data
 * path chosen for the pool that session names (opened and closed through
 * its struct dp_ops).
 */
#ifndef MARU_SESSION_H
#define MARU_SESSION_H

#include "client_priv.h"
#include "dp/datapath.h"

/*
 * Record a successful HELLO (transport.c, under hello_lock). Returns the
 * session epoch the socket belongs to. Never touches the data path: a pool
 * that moved is only marked, and session_dp() maps it again.
 */
uint64_t session_update(struct maru_client *c, const struct proto_hello_rep *rep);
/* Choose the data path for the current session now (maru_client_new). */
int session_dp_select(struct maru_client *c);
/* The data path to use now (after choosing again if the pool moved). */
const struct dp_ops *session_dp(struct maru_client *c);
enum maru_data_path session_dp_kind(struct maru_client *c);
/* Close the data path (its mapping, its QP): maru_client_free. */
void session_dp_close(struct maru_client *c);
/* The facts of the current session a data path asks for (c->env.facts). */
void session_facts(struct maru_client *c, struct dp_facts *out);
const char *session_dp_name(enum maru_data_path p);
/*
 * Whether something held from the session of (epoch, generation) is still
 * good: 0, -EIO when our session expired (same generation), -ESTALE when
 * marud restarted (new generation). No round trip.
 */
int session_held_check(struct maru_client *c, uint64_t epoch, uint64_t generation);
/* The thread that runs the generation callback, one per client. */
int session_notifier_start(struct maru_client *c);
void session_notifier_stop(struct maru_client *c);
/* Generation changes told so far (maru_client_epoch() of a one-pool client). */
uint64_t session_epoch(struct maru_client *c);

#endif

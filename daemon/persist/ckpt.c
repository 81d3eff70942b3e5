/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/persist/ckpt.c: checkpoints of the directory into the journal's
 * other half (journal.h): the live state as the owner's walk_items gives
 * it, one record per directory (parents first), per file and special
 * file, then every extra name.
 *
 * Two ways. persist_ckpt_now() walks the tree under the directory lock, which at
 * N names holds the lock for N record encodings (about 200 ms at 270k
 * names here). A checkpoint in the background holds it only for a fork:
 * when half the room the last checkpoint left is used, persist_ckpt_kick() wakes
 * the directory's checkpoint thread, which under the lock begins the
 * checkpoint and forks; the child has the directory as it was at that
 * instant (copy-on-write), writes the walk into the other half of the
 * shared pool mapping, makes it durable and reports where it ended
 * through a pipe, then exits. This process meanwhile appends to the old
 * half as usual, which stays the journal. The thread then adopts the
 * child's end and copies the records appended since the fork after it, a
 * batch per lock hold, and commits in the hold that catches up. The new
 * half so holds the state at the fork followed by every change since, in
 * order: replay gives what the old half gives, and restore needs nothing
 * new. A crash before the commit leaves the old half the journal.
 *
 * States (p->ck.state, under the owner's lock): IDLE; WANT (kicked, the
 * thread has not forked yet); CHILD (the child walks); CATCHUP (copying
 * the records appended since the fork). When the old half fills first,
 * persist_ckpt_now() finishes a CATCHUP at once, or kills a CHILD and
 * walks under the lock as before: no change is ever applied without its record. A failed child
 * (the state does not fit, a crash) turns background checkpoints off
 * until the next checkpoint under the lock succeeds. Only a journal over
 * a shared mapping (persist_journal_shared) gets the thread: a forked child's
 * stores into private memory would never reach this process.
 *
 * The cost: the fork copies this process's page tables (under the lock:
 * ck.hold_ns says how long), and pages this process writes while the
 * child runs are copied once each.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "failpoint.h"
#include "log.h"
#include "persist_priv.h"

/* Records copied per lock hold while catching up: each is re-sealed with
 * the new half's salt (XXH3 over it), tens of microseconds for a batch. */
#define CK_BATCH	256u

/* One walked item into the checkpoint begun in p->j. */
static int ckpt_item(void *arg, const struct persist_item *it)
{
	struct persist *p = arg;
	uint32_t blen;
	uint8_t *b = persist_enc(p, it, &blen);

	return b ? persist_journal_ckpt_add(p->j, it->type, b, blen) : -ENOMEM;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void held(struct persist *p, uint64_t t0)
{
	uint64_t t = now_ns() - t0;

	if (t > p->ck.hold_ns)
		p->ck.hold_ns = t;
}

/* The id mark the checkpoint's JR_IDS names, raised before it is taken. */
static void raise_id_mark(struct persist *p)
{
	uint64_t next = p->own.ops->id_next(p->own.dir);

	if (p->id_mark < next + JOURNAL_ID_BATCH)
		p->id_mark = next + JOURNAL_ID_BATCH;
}

/* Every record of the live state, into the checkpoint begun in p->j. */
static int ckpt_write(struct persist *p)
{
	struct jb_ids ids = { .next_id = p->id_mark };
	int rc;

	rc = persist_journal_ckpt_add(p->j, JR_IDS, &ids, sizeof(ids));
	if (!rc)
		rc = p->own.ops->walk_items(p->own.dir, ckpt_item, p);
	return rc;
}

/* A checkpoint committed: the room it left, and what counts from now. */
static void committed(struct persist *p, uint64_t removed_before)
{
	p->jremoved -= removed_before;
	p->jtight = !persist_journal_fits(p->j, persist_journal_half_len(p->j) / 8);
	p->ck.base = persist_journal_used(p->j);
	p->ck.off = 0;
}

/* Drop a background checkpoint under way (the child, if any, is gone after). */
static void bg_drop(struct persist *p)
{
	if (p->ck.state == CK_CHILD) {
		kill(p->ck.pid, SIGKILL);
		while (waitpid(p->ck.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (p->ck.state == CK_CHILD || p->ck.state == CK_CATCHUP)
		persist_journal_ckpt_abort(p->j);
	p->ck.state = CK_IDLE;
	p->ck.gen++;
}

static void bg_failed(struct persist *p, int rc, const char *why)
{
	log_warn(rc, "journal: background checkpoint failed (%s); checkpoints wait for a full half, under the directory lock",
		 why);
	bg_drop(p);
	p->ck.failed++;
	p->ck.off = 1;
}

/* Copy up to max records appended since the fork; commit once caught up. */
static int bg_catchup(struct persist *p, uint32_t max)
{
	uint64_t t0 = now_ns();
	int rc = persist_journal_ckpt_copy(p->j, &p->ck.from, max);

	if (!rc && p->ck.from == persist_journal_head(p->j)) {
		rc = persist_journal_ckpt_commit(p->j);
		if (!rc) {
			p->ck.state = CK_IDLE;
			p->ck.bg++;
			committed(p, p->ck.removed);
		}
	}
	held(p, t0);
	if (rc)
		bg_failed(p, rc, "copying the records since the fork");
	return rc;
}

/* The walk under the lock. */
static int ckpt_walk(struct persist *p)
{
	int rc;

	if (p->ck.state == CK_CHILD || p->ck.state == CK_CATCHUP)
		bg_drop(p);
	p->ck.state = CK_IDLE;
	raise_id_mark(p);
	rc = persist_journal_ckpt_begin(p->j);
	if (!rc)
		rc = ckpt_write(p);
	if (!rc)
		rc = persist_journal_ckpt_commit(p->j);
	if (rc) {
		persist_journal_ckpt_abort(p->j);
		return rc;
	}
	p->ck.sync++;
	committed(p, p->jremoved);
	return 0;
}

int persist_ckpt_now(struct persist *p)
{
	uint64_t t0;
	int rc;

	if (p->ck.state == CK_CATCHUP && !bg_catchup(p, UINT32_MAX) &&
	    p->ck.state == CK_IDLE)
		return 1;
	t0 = now_ns();
	rc = ckpt_walk(p);
	held(p, t0);
	return rc;
}

void persist_ckpt_kick(struct persist *p)
{
	uint64_t used, room;

	if (!p->ck.on || p->ck.off || p->ck.state != CK_IDLE)
		return;
	used = persist_journal_used(p->j);
	room = persist_journal_half_len(p->j) - p->ck.base;
	if (used - p->ck.base < room / 2)
		return;
	p->ck.state = CK_WANT;
	pthread_cond_signal(&p->ck.cond);
}

/* What the child tells the thread. */
struct ck_report {
	int rc;
	struct journal_ckpt_pos pos;
};

/* The child: write the state it was forked with, report, exit. */
static void __attribute__((noreturn)) ck_child(struct persist *p, int wfd, pid_t parent)
{
	struct ck_report r = { 0 };

	/* never outlive marud; touch none of its sockets or files */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	if (wfd > 3)
		close_range(3, (unsigned int)wfd - 1, 0);
	close_range((unsigned int)wfd + 1, ~0u, 0);
	r.rc = FAILPOINT("marud.journal.ckpt.child");
	if (!r.rc)
		r.rc = ckpt_write(p);
	if (!r.rc)
		r.rc = persist_journal_ckpt_persist(p->j);
	persist_journal_ckpt_pos(p->j, &r.pos);
	if (write(wfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	_exit(0);
}

/* Under the lock: begin the checkpoint and fork its child. 0 or -errno. */
static int bg_start(struct persist *p, int *rfd)
{
	uint64_t t0 = now_ns();
	pid_t pid, self = getpid();
	int fds[2], rc;

	raise_id_mark(p);
	rc = persist_journal_ckpt_begin(p->j);
	if (rc)
		return rc;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		rc = -errno;
		persist_journal_ckpt_abort(p->j);
		return rc;
	}
	p->ck.from = persist_journal_head(p->j);
	p->ck.removed = p->jremoved;
	pid = fork();
	if (pid == 0)
		ck_child(p, fds[1], self);
	rc = pid < 0 ? -errno : 0;
	close(fds[1]);
	held(p, t0);
	if (rc) {
		close(fds[0]);
		persist_journal_ckpt_abort(p->j);
		return rc;
	}
	p->ck.pid = pid;
	p->ck.state = CK_CHILD;
	p->ck.gen++;
	*rfd = fds[0];
	return 0;
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* One background checkpoint, from CK_WANT; the lock held on entry and exit. */
static void bg_run(struct persist *p)
{
	struct ck_report r;
	uint64_t gen;
	ssize_t got;
	int rfd = -1, rc;

	rc = bg_start(p, &rfd);
	if (rc) {
		p->ck.state = CK_IDLE;
		bg_failed(p, rc, "starting its process");
		return;
	}
	gen = p->ck.gen;
	pthread_mutex_unlock(p->own.lock);
	got = read_full(rfd, &r, sizeof(r));
	close(rfd);
	pthread_mutex_lock(p->own.lock);
	if (gen != p->ck.gen)	/* ckpt_now or the end dropped it (and reaped) */
		return;
	while (waitpid(p->ck.pid, NULL, 0) < 0 && errno == EINTR)
		;
	p->ck.state = CK_CATCHUP;	/* the child is gone: abort needs no kill */
	if (got != (ssize_t)sizeof(r)) {
		bg_failed(p, -EPIPE, "its process ended without a report");
		return;
	}
	if (r.rc) {
		bg_failed(p, r.rc, "writing the state");
		return;
	}
	rc = persist_journal_ckpt_adopt(p->j, &r.pos);
	if (rc) {
		bg_failed(p, rc, "its report");
		return;
	}
	while (p->ck.state == CK_CATCHUP && gen == p->ck.gen && !p->ck.stop) {
		if (bg_catchup(p, CK_BATCH) || p->ck.state != CK_CATCHUP)
			break;
		pthread_mutex_unlock(p->own.lock);
		sched_yield();
		pthread_mutex_lock(p->own.lock);
	}
}

static void *ck_main(void *arg)
{
	struct persist *p = arg;

	pthread_mutex_lock(p->own.lock);
	for (;;) {
		while (!p->ck.stop && p->ck.state != CK_WANT)
			pthread_cond_wait(&p->ck.cond, p->own.lock);
		if (p->ck.stop)
			break;
		bg_run(p);
	}
	pthread_mutex_unlock(p->own.lock);
	return NULL;
}

/* Under the lock: the thread for a journal over a shared mapping. */
void persist_ckpt_start(struct persist *p)
{
	sigset_t all, old;

	p->ck.base = persist_journal_used(p->j);
	if (p->ck.on || !persist_journal_shared(p->j))
		return;
	pthread_cond_init(&p->ck.cond, NULL);
	p->ck.stop = 0;
	/* no signal for this thread, and none for the children it forks */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	p->ck.on = !pthread_create(&p->ck.thread, NULL, ck_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!p->ck.on) {
		pthread_cond_destroy(&p->ck.cond);
		log_warnx("journal: no checkpoint thread: checkpoints run under the directory lock");
	}
}

void persist_ckpt_fini(struct persist *p)
{
	/* on changes only here and in persist_ckpt_start, both on the owner's
	 * thread: once stopped, the owner's lock may be gone (persist_free
	 * after the directory) */
	if (!p->ck.on)
		return;
	pthread_mutex_lock(p->own.lock);
	p->ck.stop = 1;
	if (p->ck.state != CK_IDLE && p->ck.state != CK_WANT)
		bg_drop(p);
	p->ck.state = CK_IDLE;
	pthread_cond_signal(&p->ck.cond);
	pthread_mutex_unlock(p->own.lock);
	pthread_join(p->ck.thread, NULL);
	pthread_cond_destroy(&p->ck.cond);
	p->ck.on = 0;
}

int persist_checkpoint(struct persist *p)
{
	int rc;

	/* before serving (a start, a restore): no request waits on this hold */
	pthread_mutex_lock(p->own.lock);
	rc = ckpt_walk(p);
	pthread_mutex_unlock(p->own.lock);
	return rc;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon/dir/ckpt.c: checkpoints of the directory into the journal's other
 * half (daemon/meta/journal.h): the live state, one record per directory
 * (parents first), per file and special file, then every extra name.
 *
 * Two ways. ckpt_now() walks the tree under the directory lock, which at
 * N names holds the lock for N record encodings (about 200 ms at 270k
 * names here). A checkpoint in the background holds it only for a fork:
 * when half the room the last checkpoint left is used, ckpt_kick() wakes
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
 * States (d->ck.state, under d->lock): IDLE; WANT (kicked, the thread has
 * not forked yet); CHILD (the child walks); CATCHUP (copying the records
 * appended since the fork). When the old half fills first, ckpt_now()
 * finishes a CATCHUP at once, or kills a CHILD and walks under the lock
 * as before: no change is ever applied without its record. A failed child
 * (the state does not fit, a crash) turns background checkpoints off
 * until the next checkpoint under the lock succeeds. Only a journal over
 * a shared mapping (journal_shared) gets the thread: a forked child's
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

#include "dir_priv.h"
#include "failpoint.h"
#include "journal.h"
#include "log.h"

/* Records copied per lock hold while catching up: each is re-sealed with
 * the new half's salt (XXH3 over it), tens of microseconds for a batch. */
#define CK_BATCH	256u

/* One tree entry; link nodes wait for ckpt_links (after their versions). */
static int ckpt_node(struct dir *d, const struct node *n)
{
	uint32_t blen, type;
	uint8_t *p;

	if (n->kind == NODE_LINK)
		return 0;
	if (n->kind == NODE_DIR) {
		type = JR_DIR;
		p = jenc_dir(d, n, &blen);
	} else if (ver_regular(&n->u.v)) {
		type = JR_FILE;
		p = jenc_file(d, n, &blen);
	} else {
		type = JR_SPECIAL;
		p = jenc_special(d, n, &blen);
	}
	if (!p)
		return -ENOMEM;
	return journal_ckpt_add(d->j, type, p, blen);
}

static int ckpt_links(struct dir *d)
{
	struct rb_node *r;
	uint32_t blen;
	uint8_t *p;
	int rc = 0;

	for (r = rb_first(&d->links); r && !rc; r = rb_next(r)) {
		p = jenc_link(d, container_of(r, struct node, u.l.rb), &blen);
		rc = p ? journal_ckpt_add(d->j, JR_LINK, p, blen) : -ENOMEM;
	}
	return rc;
}

/* Every directory before its children, depth first (explicit stack). */
static int ckpt_tree(struct dir *d)
{
	const struct node **stack, **ns;
	size_t top = 0, cap = 64;
	struct rb_node *r;
	int rc = 0;

	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[top++] = d->root;
	while (top && !rc) {
		const struct node *dn = stack[--top];

		for (r = rb_first(&dn->u.d.kids); r && !rc; r = rb_next(r)) {
			const struct node *c = rb_entry(r, struct node, rb);

			rc = ckpt_node(d, c);
			if (rc || c->kind != NODE_DIR)
				continue;
			if (top == cap) {
				ns = realloc(stack, cap * 2 * sizeof(*stack));
				if (!ns) {
					rc = -ENOMEM;
					break;
				}
				stack = ns;
				cap *= 2;
			}
			stack[top++] = c;
		}
	}
	free(stack);
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void held(struct dir *d, uint64_t t0)
{
	uint64_t t = now_ns() - t0;

	if (t > d->ck.hold_ns)
		d->ck.hold_ns = t;
}

/* The id mark the checkpoint's JR_IDS names, raised before it is taken. */
static void raise_id_mark(struct dir *d)
{
	if (d->id_mark < d->next_id + JOURNAL_ID_BATCH)
		d->id_mark = d->next_id + JOURNAL_ID_BATCH;
}

/* Every record of the live state, into the checkpoint begun in d->j. */
static int ckpt_write(struct dir *d)
{
	struct jb_ids ids = { .next_id = d->id_mark };
	struct jb_attr root;
	int rc;

	jenc_attr((uintptr_t)d->root | TAG, &root);
	rc = journal_ckpt_add(d->j, JR_IDS, &ids, sizeof(ids));
	if (!rc)
		rc = journal_ckpt_add(d->j, JR_ATTR, &root, sizeof(root));
	if (!rc)
		rc = ckpt_tree(d);
	if (!rc)
		rc = ckpt_links(d);
	return rc;
}

/* A checkpoint committed: the room it left, and what counts from now. */
static void committed(struct dir *d, uint64_t removed_before)
{
	d->jremoved -= removed_before;
	d->jtight = !journal_fits(d->j, journal_half_len(d->j) / 8);
	d->ck.base = journal_used(d->j);
	d->ck.off = 0;
}

/* Drop a background checkpoint under way (the child, if any, is gone after). */
static void bg_drop(struct dir *d)
{
	if (d->ck.state == CK_CHILD) {
		kill(d->ck.pid, SIGKILL);
		while (waitpid(d->ck.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (d->ck.state == CK_CHILD || d->ck.state == CK_CATCHUP)
		journal_ckpt_abort(d->j);
	d->ck.state = CK_IDLE;
	d->ck.gen++;
}

static void bg_failed(struct dir *d, int rc, const char *why)
{
	log_warn(rc, "journal: background checkpoint failed (%s); checkpoints wait for a full half, under the directory lock",
		 why);
	bg_drop(d);
	d->ck.failed++;
	d->ck.off = 1;
}

/* Copy up to max records appended since the fork; commit once caught up. */
static int bg_catchup(struct dir *d, uint32_t max)
{
	uint64_t t0 = now_ns();
	int rc = journal_ckpt_copy(d->j, &d->ck.from, max);

	if (!rc && d->ck.from == journal_head(d->j)) {
		rc = journal_ckpt_commit(d->j);
		if (!rc) {
			d->ck.state = CK_IDLE;
			d->ck.bg++;
			committed(d, d->ck.removed);
		}
	}
	held(d, t0);
	if (rc)
		bg_failed(d, rc, "copying the records since the fork");
	return rc;
}

/* The walk under the lock. */
static int ckpt_walk(struct dir *d)
{
	int rc;

	if (d->ck.state == CK_CHILD || d->ck.state == CK_CATCHUP)
		bg_drop(d);
	d->ck.state = CK_IDLE;
	raise_id_mark(d);
	rc = journal_ckpt_begin(d->j);
	if (!rc)
		rc = ckpt_write(d);
	if (!rc)
		rc = journal_ckpt_commit(d->j);
	if (rc) {
		journal_ckpt_abort(d->j);
		return rc;
	}
	d->ck.sync++;
	committed(d, d->jremoved);
	return 0;
}

int ckpt_now(struct dir *d)
{
	uint64_t t0;
	int rc;

	if (d->ck.state == CK_CATCHUP && !bg_catchup(d, UINT32_MAX) &&
	    d->ck.state == CK_IDLE)
		return 1;
	t0 = now_ns();
	rc = ckpt_walk(d);
	held(d, t0);
	return rc;
}

void ckpt_kick(struct dir *d)
{
	uint64_t used, room;

	if (!d->ck.on || d->ck.off || d->ck.state != CK_IDLE)
		return;
	used = journal_used(d->j);
	room = journal_half_len(d->j) - d->ck.base;
	if (used - d->ck.base < room / 2)
		return;
	d->ck.state = CK_WANT;
	pthread_cond_signal(&d->ck.cond);
}

/* What the child tells the thread. */
struct ck_report {
	int rc;
	struct journal_ckpt_pos pos;
};

/* The child: write the state it was forked with, report, exit. */
static void __attribute__((noreturn)) ck_child(struct dir *d, int wfd, pid_t parent)
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
		r.rc = ckpt_write(d);
	if (!r.rc)
		r.rc = journal_ckpt_persist(d->j);
	journal_ckpt_pos(d->j, &r.pos);
	if (write(wfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	_exit(0);
}

/* Under the lock: begin the checkpoint and fork its child. 0 or -errno. */
static int bg_start(struct dir *d, int *rfd)
{
	uint64_t t0 = now_ns();
	pid_t pid, self = getpid();
	int fds[2], rc;

	raise_id_mark(d);
	rc = journal_ckpt_begin(d->j);
	if (rc)
		return rc;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		rc = -errno;
		journal_ckpt_abort(d->j);
		return rc;
	}
	d->ck.from = journal_head(d->j);
	d->ck.removed = d->jremoved;
	pid = fork();
	if (pid == 0)
		ck_child(d, fds[1], self);
	rc = pid < 0 ? -errno : 0;
	close(fds[1]);
	held(d, t0);
	if (rc) {
		close(fds[0]);
		journal_ckpt_abort(d->j);
		return rc;
	}
	d->ck.pid = pid;
	d->ck.state = CK_CHILD;
	d->ck.gen++;
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

/* One background checkpoint, from CK_WANT; d->lock held on entry and exit. */
static void bg_run(struct dir *d)
{
	struct ck_report r;
	uint64_t gen;
	ssize_t got;
	int rfd = -1, rc;

	rc = bg_start(d, &rfd);
	if (rc) {
		d->ck.state = CK_IDLE;
		bg_failed(d, rc, "starting its process");
		return;
	}
	gen = d->ck.gen;
	pthread_mutex_unlock(&d->lock);
	got = read_full(rfd, &r, sizeof(r));
	close(rfd);
	pthread_mutex_lock(&d->lock);
	if (gen != d->ck.gen)	/* ckpt_now or the end dropped it (and reaped) */
		return;
	while (waitpid(d->ck.pid, NULL, 0) < 0 && errno == EINTR)
		;
	d->ck.state = CK_CATCHUP;	/* the child is gone: abort needs no kill */
	if (got != (ssize_t)sizeof(r)) {
		bg_failed(d, -EPIPE, "its process ended without a report");
		return;
	}
	if (r.rc) {
		bg_failed(d, r.rc, "writing the state");
		return;
	}
	rc = journal_ckpt_adopt(d->j, &r.pos);
	if (rc) {
		bg_failed(d, rc, "its report");
		return;
	}
	while (d->ck.state == CK_CATCHUP && gen == d->ck.gen && !d->ck.stop) {
		if (bg_catchup(d, CK_BATCH) || d->ck.state != CK_CATCHUP)
			break;
		pthread_mutex_unlock(&d->lock);
		sched_yield();
		pthread_mutex_lock(&d->lock);
	}
}

static void *ck_main(void *arg)
{
	struct dir *d = arg;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!d->ck.stop && d->ck.state != CK_WANT)
			pthread_cond_wait(&d->ck.cond, &d->lock);
		if (d->ck.stop)
			break;
		bg_run(d);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* Under the lock: the thread for a journal over a shared mapping. */
static void ckpt_start(struct dir *d)
{
	sigset_t all, old;

	d->ck.base = journal_used(d->j);
	if (d->ck.on || !journal_shared(d->j))
		return;
	pthread_cond_init(&d->ck.cond, NULL);
	d->ck.stop = 0;
	/* no signal for this thread, and none for the children it forks */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	d->ck.on = !pthread_create(&d->ck.thread, NULL, ck_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!d->ck.on) {
		pthread_cond_destroy(&d->ck.cond);
		log_warnx("journal: no checkpoint thread: checkpoints run under the directory lock");
	}
}

void ckpt_fini(struct dir *d)
{
	pthread_mutex_lock(&d->lock);
	if (!d->ck.on) {
		pthread_mutex_unlock(&d->lock);
		return;
	}
	d->ck.stop = 1;
	if (d->ck.state != CK_IDLE && d->ck.state != CK_WANT)
		bg_drop(d);
	d->ck.state = CK_IDLE;
	pthread_cond_signal(&d->ck.cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->ck.thread, NULL);
	pthread_cond_destroy(&d->ck.cond);
	d->ck.on = 0;
}

int dir_checkpoint(struct dir *d)
{
	int rc = 0;

	/* before serving (a start, a restore): no request waits on this hold */
	pthread_mutex_lock(&d->lock);
	if (d->j)
		rc = ckpt_walk(d);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void dir_set_journal(struct dir *d, struct journal *j)
{
	if (!j)
		ckpt_fini(d);
	pthread_mutex_lock(&d->lock);
	d->j = j;
	if (j)
		ckpt_start(d);
	pthread_mutex_unlock(&d->lock);
}

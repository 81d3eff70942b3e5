/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/softverbs/softverbs.h: the test-only control surface of the
 * software verbs device (libsoftverbs.so, built from tests/softverbs and
 * never installed). Everything else a program uses is the real libibverbs
 * and librdmacm API from <infiniband/verbs.h> and <rdma/rdma_cma.h>.
 *
 * Environment knobs, read when the first verbs object is created:
 *   SOFTVERBS_FAULT="k=v,..."  the fault knobs below (all counters are
 *                              per process; 0 or absent = off)
 *     drop_conn_after=N  the first N data WRs (SEND/WRITE/READ) posted in
 *                        this process reach the peer; the next is held back
 *                        and the wire is cut as soon as the ones sent are
 *                        answered: both sides see DISCONNECTED, the held WR
 *                        completes IBV_WC_RETRY_EXC_ERR, later ones flush
 *     delay_cqe_ms=M     every CQE is invisible to ibv_poll_cq, and the
 *                        completion channel silent, for M ms
 *     lose_cqe=N         the Nth CQE of this process is discarded (the
 *                        operation itself took place)
 *     fail_reg=N         the Nth ibv_reg_mr* call fails with ENOMEM
 *     err_qp_after=N     the first N ibv_post_send WRs are normal; the next
 *                        moves its QP to ERR first (IBV_EVENT_QP_FATAL on
 *                        the async fd): it and every outstanding WR complete
 *                        with IBV_WC_WR_FLUSH_ERR
 *     destroy_qp_ms=M    every ibv_destroy_qp (and rdma_destroy_qp) takes
 *                        M ms before it returns, holding no lock of the
 *                        device
 *     destroy_bound_qp_ms=M  and M ms more for each type 2 window still
 *                        bound to the QP: rdma_rxe's destroy waits for the
 *                        QP's references to drop, and a bound type 2
 *                        window holds one (seen: about 51 s under TCG)
 *     reg_mr_us_per_mib=U  every ibv_reg_mr* call takes U us per MiB of its
 *                        length first (pinning a large region: rxe under
 *                        TCG took about 10 s for 512 MiB, U = 20000),
 *                        holding no lock of the device
 *   SOFTVERBS_MW=0        no memory windows: device_cap_flags lacks
 *                        IBV_DEVICE_MEM_WINDOW(_TYPE_2B), max_mw is 0 and
 *                        ibv_alloc_mw() fails with EOPNOTSUPP
 *   SOFTVERBS_MW_BOUNDS=0 a type 2 window's rkey is checked as rdma_rxe does
 *                        (Linux 6.1 and 6.12): its rights and QP, but for
 *                        bounds only the underlying MR's range, not the
 *                        window's (so a READ past a window's end but inside
 *                        its MR succeeds). The default enforces the
 *                        window's own bounds, as the IB spec asks.
 *   SOFTVERBS_NS=str      namespace for the wire names, so concurrent test
 *                        runs on one host cannot meet each other
 *
 * Where providers differ on what the spec leaves open, softverbs models the
 * spec by default and rdma_rxe by a switch (README.md lists each):
 * SOFTVERBS_MW_BOUNDS=0 for rxe's window bounds, destroy_bound_qp_ms for
 * rxe's wait on a QP's bound windows, reg_mr_us_per_mib for its pinning.
 *
 * A forked child gets a fresh emulated NIC: it cannot use its parent's
 * verbs objects (as with real verbs), and its knobs come from the
 * environment again, not from its parent's softverbs_fault_set().
 */
#ifndef SOFTVERBS_H
#define SOFTVERBS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Replace every fault knob with spec (SOFTVERBS_FAULT syntax) and restart
 * the counters; NULL or "" turns faults off. Returns 0. */
int softverbs_fault_set(const char *spec);

/* Memory window support for contexts opened after the call. */
int softverbs_set_mw_support(int on);

/* 0: check type 2 windows' bounds as rdma_rxe does (SOFTVERBS_MW_BOUNDS=0);
 * 1: the window's own bounds (the default). Takes effect at once. */
int softverbs_set_mw_bounds(int on);

/* Move qp to ERR as a local catastrophic error would: outstanding WRs are
 * flushed and IBV_EVENT_QP_FATAL is queued on the context's async fd. */
int softverbs_qp_error(struct ibv_qp *qp);

/* Cut id's wire now, as a cable pull: both ends see the link drop. */
int softverbs_drop_conn(struct rdma_cm_id *id);

/* 1 if this library provides the verbs the process calls (a real
 * libibverbs never defines it, so dlsym() of it tells the two apart). */
int softverbs_active(void);

#ifdef __cplusplus
}
#endif

#endif

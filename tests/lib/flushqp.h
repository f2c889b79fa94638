/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * flushqp.h - a QP whose receives complete at once: an RC QP in the error
 * state (RESET -> INIT -> ERR: the kernel refuses RESET -> ERR with
 * EINVAL) on a CQ of a new completion channel, so that each receive
 * posted there is flushed and an armed CQ gets a completion event.  For
 * the programs that make CQ events in bulk (bench/bench_shim.c,
 * tests/perf/cost.c).
 */
#ifndef RC_FLUSHQP_H
#define RC_FLUSHQP_H

#include <infiniband/verbs.h>

/* The QP, with its CQ and channel in *cq and *ch; NULL on a failure. */
static inline struct ibv_qp *flush_qp(struct ibv_context *ctx,
				      struct ibv_pd *pd,
				      struct ibv_comp_channel **ch,
				      struct ibv_cq **cq)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *qp;

	*ch = ibv_create_comp_channel(ctx);
	*cq = *ch ? ibv_create_cq(ctx, 16, NULL, *ch, 0) : NULL;
	if (!*cq)
		return NULL;
	qa.send_cq = qa.recv_cq = *cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	if (qp && (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
		   ibv_modify_qp(qp, &err, IBV_QP_STATE)))
		return NULL;
	return qp;
}

#endif

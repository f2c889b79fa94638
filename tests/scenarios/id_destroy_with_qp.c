/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * id-destroy-with-qp: the id goes while it still has its QP.  argv[1]:
 *   bad        the QP uses CQs librdmacm made (no send_cq/recv_cq given):
 *              rdma_destroy_id leaks them (error)
 *   clean      rdma_destroy_qp first
 *   rping      rping 44.0's server teardown: the QP is on the program's own
 *              PD and CQ, the id goes first, then ibv_destroy_qp and the
 *              CQ: nothing leaks (a warning)
 *   qp-leak    the same, but the QP is never destroyed: the warning at the
 *              call, and leak-qp at exit (with leak-cq and leak-pd)
 */
#include <string.h>
#include "scn.h"

static NOINLINE int drop_id(struct rdma_cm_id *id)
{
	return rdma_destroy_id(id);
}

int main(int argc, char **argv)
{
	const char *mode = scn_mode(argc, argv);
	bool leak = !strcmp(mode, "qp-leak");
	bool own = leak || !strcmp(mode, "rping");
	bool bad = own || strcmp(mode, "clean");
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);
	struct ibv_qp_init_attr attr;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp;

	scn_resolve(id, 7471);
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	if (own) {
		pd = ibv_alloc_pd(id->verbs);
		cq = pd ? ibv_create_cq(id->verbs, 8, NULL, NULL, 0) : NULL;
		if (!cq)
			scn_die("ibv_alloc_pd/ibv_create_cq");
		attr.send_cq = attr.recv_cq = cq;
	}
	if (rdma_create_qp(id, pd, &attr))
		scn_die("rdma_create_qp");
	qp = id->qp;
	if (!bad)
		rdma_destroy_qp(id);
	if (drop_id(id))
		scn_die("rdma_destroy_id");
	if (own && !leak) {
		if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) ||
		    ibv_dealloc_pd(pd))
			scn_die("ibv_destroy_qp/cq, ibv_dealloc_pd");
	}
	rdma_destroy_event_channel(ch);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mr_ah_test.c - what real programs found different from a RoCE device
 * in the loopback libibverbs:
 *
 *  - the device has a vendor ID (rxe's 0xffffff), not 0;
 *  - ibv_rereg_mr keeps lkey and rkey (changing access, PD or the
 *    translation), moves the PD reference, and sorts its errors as
 *    libibverbs 44.0 does (input errors before the command, -1/EINVAL;
 *    what the kernel refuses, -4);
 *  - an address handle, or an RC QP's address vector at RTR, without a
 *    GRH fails with EINVAL, as on every RoCE port; a QP in RESET cannot
 *    go to ERR (EINVAL), as the kernel's state table says;
 *  - memory windows can be allocated (as on rxe; leak-mw needs one).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../lib/tcheck.h"

static struct ibv_context *ctx;

static void test_vendor(void)
{
	struct ibv_device_attr a;
	struct ibv_device_attr_ex ax;

	CHECK(ibv_query_device(ctx, &a) == 0 && a.vendor_id == 0xffffff);
	CHECK(ibv_query_device_ex(ctx, NULL, &ax) == 0 &&
	      ax.orig_attr.vendor_id == 0xffffff);
}

static void test_rereg(void)
{
	static char buf[4096], buf2[8192];
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr;
	uint32_t lkey, rkey;

	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	REQUIRE(pd && pd2);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	lkey = mr->lkey;
	rkey = mr->rkey;

	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE) == 0);
	CHECK(mr->lkey == lkey && mr->rkey == rkey);

	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0) == 0);
	CHECK(mr->pd == pd2 && mr->lkey == lkey && mr->rkey == rkey);
	CHECK(ibv_dealloc_pd(pd2) == EBUSY);

	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf2,
			   sizeof(buf2), 0) == 0);
	CHECK(mr->addr == buf2 && mr->length == sizeof(buf2));
	CHECK(mr->lkey == lkey && mr->rkey == rkey);

	/* libibverbs' own checks */
	errno = 0;
	CHECK(ibv_rereg_mr(mr, 0x10, NULL, NULL, 0, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, 0, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf, 0,
			   0) == IBV_REREG_MR_ERR_INPUT && errno == EINVAL);
	/* ... and the kernel's: remote write needs local write */
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE) == IBV_REREG_MR_ERR_CMD &&
	      errno == EINVAL);
	CHECK(mr->lkey == lkey && mr->rkey == rkey && mr->pd == pd2);

	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dealloc_pd(pd2) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
}

static void test_grh(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_ah_attr aa;
	struct ibv_qp_attr qa;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	int mask;

	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	REQUIRE(pd && cq);

	memset(&aa, 0, sizeof(aa));
	aa.port_num = 1;
	errno = 0;
	CHECK(!ibv_create_ah(pd, &aa) && errno == EINVAL);
	aa.is_global = 1;
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah);
	if (ah)
		CHECK(ibv_destroy_ah(ah) == 0);

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	qp = ibv_create_qp(pd, &ia);
	REQUIRE(qp);
	/* RESET to ERR is not in the kernel's state table */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE) == EINVAL);
	CHECK(qp->state == IBV_QPS_RESET);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	REQUIRE(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = qp->qp_num;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.dlid = 1;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	       IBV_QP_MIN_RNR_TIMER;
	CHECK(ibv_modify_qp(qp, &qa, mask) == EINVAL);
	qa.ah_attr.is_global = 1;
	CHECK(ibv_modify_qp(qp, &qa, mask) == 0);
	CHECK(ibv_destroy_qp(qp) == 0);
	CHECK(ibv_destroy_cq(cq) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
}

/*
 * Memory windows as rxe has them: allocated with an rkey no MR has, a
 * reference on their PD, types 1 and 2 only; binding is not emulated.
 */
static void test_mw(void)
{
	static char buf[4096];
	struct ibv_device_attr a;
	struct ibv_mw *mw1, *mw2;
	struct ibv_mw_bind bind;
	struct ibv_pd *pd;
	struct ibv_mr *mr;

	CHECK(ibv_query_device(ctx, &a) == 0 && a.max_mw > 0);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	REQUIRE(mw1 && mw2);
	CHECK(mw1->pd == pd && mw1->context == ctx);
	CHECK(mw1->type == IBV_MW_TYPE_1 && mw2->type == IBV_MW_TYPE_2);
	CHECK(mw1->rkey && mw2->rkey && mw1->rkey != mw2->rkey);
	CHECK(mw1->rkey != mr->rkey && mw2->rkey != mr->rkey);
	errno = 0;
	CHECK(!ibv_alloc_mw(pd, (enum ibv_mw_type)3) && errno == EINVAL);
	memset(&bind, 0, sizeof(bind));
	bind.bind_info.mr = mr;
	bind.bind_info.addr = (uintptr_t)buf;
	bind.bind_info.length = sizeof(buf);
	/* the library's checks, before any QP is touched */
	CHECK(ibv_bind_mw(NULL, mw2, &bind) == EINVAL);
	bind.bind_info.mr = NULL;
	CHECK(ibv_bind_mw(NULL, mw1, &bind) == EINVAL);
	bind.bind_info.mr = mr;
	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dealloc_pd(pd) == EBUSY);
	CHECK(ibv_dealloc_mw(mw1) == 0);
	CHECK(ibv_dealloc_pd(pd) == EBUSY);
	CHECK(ibv_dealloc_mw(mw2) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
}

int main(void)
{
	struct ibv_device **list;
	char ns[64];
	int n;

	snprintf(ns, sizeof(ns), "rdmacheck-mrah-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);
	list = ibv_get_device_list(&n);
	REQUIRE(list && n >= 1);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	ibv_free_device_list(list);
	test_vendor();
	test_rereg();
	test_grh();
	test_mw();
	CHECK(ibv_close_device(ctx) == 0);
	if (failures)
		fprintf(stderr, "mr_ah_test: %d failure(s)\n", failures);
	else
		printf("mr_ah_test: ok\n");
	return failures ? 1 : 0;
}

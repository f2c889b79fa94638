/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/perf/wr_cost.c: the data path's calls for callgrind, in
 * cost.c's form (tests/perf/cost.sh with COST_PROGRAM and COST_SOURCE
 * naming this program): COST_N posts of one receive, COST_N posts of one
 * signaled send (one SGE each), COST_N polls of one completion, on an RC
 * QP in the error state, where each WR completes (flushed) at once.
 * "wr_cost ops" prints, for the context's post_send, post_recv and
 * poll_cq and a send_ops_flags QP's wr_send and wr_complete, whether each
 * is the provider's or the shim's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define COST_N 200
#define COST_ROUNDS 4
#define NOINLINE __attribute__((noinline, noclone))

static struct ibv_qp *qp;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[4096];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

#define COST(call, body)						\
	static NOINLINE double cost_##call(void *arg)			\
	{								\
		int i;							\
									\
		for (i = 0; i < COST_N; i++) {				\
			body;						\
		}							\
		return (double)(uintptr_t)arg;				\
	}

static struct ibv_sge sge;
static struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
static struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
	.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
static struct ibv_wc wc;

COST(ibv_post_recv,
     struct ibv_recv_wr *bad;
     if (ibv_post_recv(qp, &rwr, &bad))
	die("ibv_post_recv"))
COST(ibv_post_send,
     struct ibv_send_wr *bad;
     if (ibv_post_send(qp, &swr, &bad))
	die("ibv_post_send"))
COST(ibv_poll_cq,
     if (ibv_poll_cq(cq, 1, &wc) != 1)
	die("ibv_poll_cq"))

/* The work between two measured calls (left out of the profile). */
static NOINLINE void cost_setup(void)
{
	while (ibv_poll_cq(cq, 1, &wc) == 1)
		;
}

/* Whose function f is: one line "NAME: the shim's" or "the provider's". */
static void whose(const char *name, void *f)
{
	Dl_info di;

	if (!f || !dladdr(f, &di) || !di.dli_fname)
		die(name);
	printf("%s: %s\n", name, strstr(di.dli_fname, "rdmacheck") ?
	       "the shim's" : "the provider's");
}

/* The data-path operations of ctx, and the ibv_wr_* ones of a QP made
 * with send_ops_flags. */
static int ops(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp_ex *qx;
	struct ibv_qp *q;

	whose("post_send", (void *)ctx->ops.post_send);
	whose("post_recv", (void *)ctx->ops.post_recv);
	whose("poll_cq", (void *)ctx->ops.poll_cq);
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	if (!cq)
		die("ibv_create_cq");
	memset(&ax, 0, sizeof(ax));
	ax.send_cq = ax.recv_cq = cq;
	ax.qp_type = IBV_QPT_RC;
	ax.cap.max_send_wr = ax.cap.max_recv_wr = 1;
	ax.cap.max_send_sge = ax.cap.max_recv_sge = 1;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.pd = pd;
	ax.send_ops_flags = IBV_QP_EX_WITH_SEND;
	q = ibv_create_qp_ex(ctx, &ax);
	if (!q || !(qx = ibv_qp_to_qp_ex(q)))
		die("ibv_create_qp_ex");
	whose("wr_send", (void *)qx->wr_send);
	whose("wr_complete", (void *)qx->wr_complete);
	if (ibv_destroy_qp(q) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		die("teardown");
	return ibv_close_device(ctx);
}

int main(int argc, char **argv)
{
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp_init_attr qa;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int n, r;

	list = ibv_get_device_list(&n);
	if (!list || n < 1 || !(ctx = ibv_open_device(list[0])))
		die("ibv_open_device");
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	if (argc > 1 && !strcmp(argv[1], "ops"))
		return ops(ctx, pd);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) :
		NULL;
	cq = mr ? ibv_create_cq(ctx, 4 * COST_N, NULL, NULL, 0) : NULL;
	if (!cq)
		die("ibv_create_cq");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = COST_N;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	if (!qp || ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
	    ibv_modify_qp(qp, &err, IBV_QP_STATE))
		die("ibv_create_qp/ibv_modify_qp");
	sge.addr = (uintptr_t)buf;
	sge.length = 64;
	sge.lkey = mr->lkey;
	for (r = 0; r < COST_ROUNDS; r++) {
		cost_ibv_post_recv(NULL);
		cost_setup();
		cost_ibv_post_send(NULL);
		cost_setup();
		cost_ibv_post_recv(NULL);
		cost_ibv_poll_cq(NULL);
		cost_setup();
	}
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dereg_mr(mr) ||
	    ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		die("teardown");
	return 0;
}

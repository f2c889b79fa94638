/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wr.c - scenarios for the data-path rules (tier 7, track_wr=1).
 * argv[1] names the rule to break (the function that breaks it has the
 * same name, with '_' for '-'), RULE:clean runs its clean twin.  Two RC
 * QPs, A and B, on one context and PD, each with its own CQ, connected
 * to each other by hand (INIT, RTR, RTS), carry the traffic.  Each
 * prints the completions it polls: the same on every backend.  The
 * free-registered-memory ones run with track_buffers=1.  The -qpx ones
 * make the QPs with send_ops_flags and post their sends with ibv_wr_*.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>
#include "scn.h"

#define BUF 4096

static bool bad;
static bool qpx;	/* QPs made with send_ops_flags, sends by ibv_wr_* */
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq[2];
static struct ibv_qp *qp[2];
static struct ibv_mr *mr;
static char *buf;

enum { A, B };

static void open_all(int cqe)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		scn_die("ibv_get_device_list");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx || !(pd = ibv_alloc_pd(ctx)))
		scn_die("ibv_open_device/ibv_alloc_pd");
	buf = calloc(1, 2 * BUF);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!buf || !mr)
		scn_die("ibv_reg_mr");
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr qa;

		cq[i] = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
		if (!cq[i])
			scn_die("ibv_create_cq");
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = cq[i];
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		if (qpx) {
			struct ibv_qp_init_attr_ex ax = {
				.send_cq = cq[i], .recv_cq = cq[i],
				.qp_type = IBV_QPT_RC, .cap = qa.cap,
				.comp_mask = IBV_QP_INIT_ATTR_PD |
					     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
				.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
			};

			qp[i] = ibv_create_qp_ex(ctx, &ax);
		} else {
			qp[i] = ibv_create_qp(pd, &qa);
		}
		if (!qp[i])
			scn_die("ibv_create_qp");
	}
}

static void to_init(struct ibv_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		scn_die("ibv_modify_qp(INIT)");
}

/* q to RTR and RTS, its peer the QP numbered dest. */
static void to_rts(struct ibv_qp *q, uint32_t dest)
{
	struct ibv_qp_attr a;
	union ibv_gid gid;

	if (ibv_query_gid(ctx, 1, 0, &gid))
		scn_die("ibv_query_gid");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 1;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		scn_die("ibv_modify_qp(RTR)");
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		scn_die("ibv_modify_qp(RTS)");
}

static void connect_all(void)
{
	to_init(qp[A]);
	to_init(qp[B]);
	to_rts(qp[A], qp[B]->qp_num);
	to_rts(qp[B], qp[A]->qp_num);
}

static void close_all(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if ((qp[i] && ibv_destroy_qp(qp[i])) || ibv_destroy_cq(cq[i]))
			scn_die("ibv_destroy_qp/ibv_destroy_cq");
	if ((mr && ibv_dereg_mr(mr)) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		scn_die("ibv_dereg_mr/ibv_dealloc_pd/ibv_close_device");
	free(buf);
}

static int post_recv(struct ibv_qp *q, uint64_t id, uint64_t addr,
		     uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
	struct ibv_recv_wr *badwr;

	return ibv_post_recv(q, &wr, &badwr);
}

static int post_send(struct ibv_qp *q, uint64_t id, uint64_t addr,
		     uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *badwr;
	struct ibv_qp_ex *qx;

	if (!qpx)
		return ibv_post_send(q, &wr, &badwr);
	if (!(qx = ibv_qp_to_qp_ex(q)))
		scn_die("ibv_qp_to_qp_ex");
	ibv_wr_start(qx);
	qx->wr_id = id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, lkey, addr, len);
	return ibv_wr_complete(qx);
}

/* A signalled RDMA WRITE of len bytes at addr to raddr/rkey, on q. */
static int post_write(struct ibv_qp *q, uint64_t id, uint64_t addr,
		      uint32_t len, uint32_t lkey, uint64_t raddr,
		      uint32_t rkey)
{
	struct ibv_sge s = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey } };
	struct ibv_send_wr *badwr;

	return ibv_post_send(q, &wr, &badwr);
}

/* One completion on c, printed. */
static void poll_one(int i)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq[i], 1, &wc)) == 0)
		;
	if (n < 0)
		scn_die("ibv_poll_cq");
	printf("scenario: %s: wr %llu: %s\n", i == A ? "A" : "B",
	       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
}

/* A message from B into A's posted receive, both completions polled. */
static void b_to_a(void)
{
	if (post_send(qp[B], 2, (uintptr_t)buf, 8, mr->lkey))
		scn_die("ibv_post_send");
	poll_one(B);
	poll_one(A);
}

/* A receive posted, its MR deregistered before the WR completed. */
static NOINLINE void mr_dereg_with_wr_in_flight(void)
{
	open_all(16);
	connect_all();
	if (post_recv(qp[A], 1, (uintptr_t)buf, BUF, mr->lkey))
		scn_die("ibv_post_recv");
	if (!bad)
		b_to_a();
	if (ibv_dereg_mr(mr))
		scn_die("ibv_dereg_mr");
	mr = NULL;
	close_all();
}

/* A send whose SGE runs one byte past its MR (clean: it ends at the
 * MR's last byte). */
static NOINLINE void wr_sge_outside_mr(void)
{
	uintptr_t last;

	open_all(16);
	connect_all();
	last = (uintptr_t)buf + BUF - 1;
	/* Bad: the send fails at A, nothing reaches B. */
	if (!bad && post_recv(qp[B], 1, (uintptr_t)buf, 16, mr->lkey))
		scn_die("ibv_post_recv");
	if (post_send(qp[A], 2, last, bad ? 2 : 1, mr->lkey))
		scn_die("ibv_post_send");
	poll_one(A);
	if (!bad)
		poll_one(B);
	close_all();
}

/* The same, A's send built with ibv_wr_* (checked at ibv_wr_complete). */
static NOINLINE void wr_sge_outside_mr_qpx(void)
{
	qpx = true;
	wr_sge_outside_mr();
}

/*
 * A send built with ibv_wr_* from a second MR, still in flight (B has no
 * receive posted) when that MR is deregistered; then B posts one and A's
 * completion is polled, its status not printed: the WR read memory no
 * longer registered (clean: both completions polled, then the MR goes).
 */
static NOINLINE void mr_dereg_with_wr_in_flight_qpx(void)
{
	struct ibv_mr *m2;
	struct ibv_wc wc;
	int n;

	qpx = true;
	open_all(16);
	m2 = ibv_reg_mr(pd, buf + BUF, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!m2)
		scn_die("ibv_reg_mr");
	connect_all();
	if (post_send(qp[A], 2, (uintptr_t)buf + BUF, 8, m2->lkey))
		scn_die("ibv_wr_complete");
	if (bad && ibv_dereg_mr(m2))
		scn_die("ibv_dereg_mr");
	if (post_recv(qp[B], 1, (uintptr_t)buf, 16, mr->lkey))
		scn_die("ibv_post_recv");
	if (bad) {
		while ((n = ibv_poll_cq(cq[A], 1, &wc)) == 0)
			;
		if (n < 0)
			scn_die("ibv_poll_cq");
		printf("scenario: A: wr %llu polled\n",
		       (unsigned long long)wc.wr_id);
	} else {
		poll_one(A);
		poll_one(B);
		if (ibv_dereg_mr(m2))
			scn_die("ibv_dereg_mr");
	}
	close_all();
}

/*
 * An RDMA WRITE from A into B's MR m2 (this process's, named by its
 * rkey), not yet polled when m2 is deregistered (clean: polled first).
 * A's completion is polled after, its status not printed: the peer's
 * memory went while the WR was in flight.
 */
static NOINLINE void mr_dereg_with_wr_in_flight_rkey(void)
{
	struct ibv_mr *m2;
	struct ibv_wc wc;
	int n;

	open_all(16);
	m2 = ibv_reg_mr(pd, buf + BUF, BUF, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (!m2)
		scn_die("ibv_reg_mr");
	connect_all();
	if (post_write(qp[A], 3, (uintptr_t)buf, 8, mr->lkey,
		       (uintptr_t)buf + BUF, m2->rkey))
		scn_die("ibv_post_send");
	if (!bad) {
		poll_one(A);
	} else {
		if (ibv_dereg_mr(m2))
			scn_die("ibv_dereg_mr");
		while ((n = ibv_poll_cq(cq[A], 1, &wc)) == 0)
			;
		if (n < 0)
			scn_die("ibv_poll_cq");
		printf("scenario: A: wr %llu polled\n",
		       (unsigned long long)wc.wr_id);
	}
	if (!bad && ibv_dereg_mr(m2))
		scn_die("ibv_dereg_mr");
	close_all();
}

/* The name of an errno value a call returned (the same on every backend). */
static const char *err_name(int e)
{
	static char b[32];

	switch (e) {
	case 0:
		return "0";
	case EINVAL:
		return "EINVAL";
	case EBUSY:
		return "EBUSY";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	}
	snprintf(b, sizeof(b), "errno %d", e);
	return b;
}

/* One BIND_MW (type 2) or LOCAL_INV WR posted on B, its completion
 * polled: m2 NULL unbinds. */
static void b_local_op(enum ibv_wr_opcode op, uint64_t id, struct ibv_mw *mw,
		       uint32_t rkey, struct ibv_mr *m2)
{
	struct ibv_send_wr wr, *badwr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_BIND_MW) {
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info.mr = m2;
		wr.bind_mw.bind_info.addr = (uintptr_t)buf + BUF;
		wr.bind_mw.bind_info.length = BUF;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	} else {
		wr.invalidate_rkey = rkey;
	}
	if (ibv_post_send(qp[B], &wr, &badwr))
		scn_die("ibv_post_send(BIND_MW/LOCAL_INV)");
	poll_one(B);
}

/*
 * A memory window bound on B to B's MR m2 (type 2: an IBV_WR_BIND_MW on
 * B; type 1, mw1: ibv_bind_mw), an RDMA WRITE from A through the
 * window's rkey, not yet polled when m2 is deregistered: the dereg fails
 * (a window is bound: its errno printed), A's completion is polled, the
 * window invalidated (type 2) and deallocated, m2 deregistered (clean:
 * the WRITE polled, the window gone, then m2 deregistered).
 */
static NOINLINE void mw_run(bool type1)
{
	struct ibv_mw_bind mb;
	struct ibv_mw *mw;
	struct ibv_mr *m2;
	uint32_t rkey;

	open_all(16);
	m2 = ibv_reg_mr(pd, buf + BUF, BUF, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	if (!m2)
		scn_die("ibv_reg_mr");
	mw = ibv_alloc_mw(pd, type1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
	if (!mw)
		scn_die("ibv_alloc_mw");
	connect_all();
	if (type1) {
		memset(&mb, 0, sizeof(mb));
		mb.wr_id = 4;
		mb.send_flags = IBV_SEND_SIGNALED;
		mb.bind_info.mr = m2;
		mb.bind_info.addr = (uintptr_t)buf + BUF;
		mb.bind_info.length = BUF;
		mb.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (ibv_bind_mw(qp[B], mw, &mb))
			scn_die("ibv_bind_mw");
		poll_one(B);
		rkey = mw->rkey;
	} else {
		rkey = ibv_inc_rkey(mw->rkey);
		b_local_op(IBV_WR_BIND_MW, 4, mw, rkey, m2);
	}
	if (post_write(qp[A], 3, (uintptr_t)buf, 8, mr->lkey,
		       (uintptr_t)buf + BUF + 16, rkey))
		scn_die("ibv_post_send");
	if (bad)
		printf("scenario: ibv_dereg_mr with a window bound: %s\n",
		       err_name(ibv_dereg_mr(m2)));
	poll_one(A);
	if (!type1)
		b_local_op(IBV_WR_LOCAL_INV, 5, mw, rkey, NULL);
	if (ibv_dealloc_mw(mw))
		scn_die("ibv_dealloc_mw");
	printf("scenario: ibv_dereg_mr: %s\n", err_name(ibv_dereg_mr(m2)));
	close_all();
}

static NOINLINE void mr_dereg_with_wr_in_flight_mw(void)
{
	mw_run(false);
}

static NOINLINE void mr_dereg_with_wr_in_flight_mw1(void)
{
	mw_run(true);
}

/* A receive whose lkey is of an MR on another PD. */
static NOINLINE void wr_sge_outside_mr_pd(void)
{
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;

	open_all(16);
	pd2 = ibv_alloc_pd(ctx);
	mr2 = pd2 ? ibv_reg_mr(pd2, buf + BUF, BUF, IBV_ACCESS_LOCAL_WRITE) :
		NULL;
	if (!mr2)
		scn_die("ibv_reg_mr");
	to_init(qp[A]);
	if (post_recv(qp[A], 1, (uintptr_t)buf + (bad ? BUF : 0), 16,
		      bad ? mr2->lkey : mr->lkey))
		scn_die("ibv_post_recv");
	if (ibv_destroy_qp(qp[A]))
		scn_die("ibv_destroy_qp");
	qp[A] = NULL;
	if (ibv_dereg_mr(mr2) || ibv_dealloc_pd(pd2))
		scn_die("ibv_dereg_mr/ibv_dealloc_pd");
	close_all();
}

/* More receives posted than A's CQ holds (clean: exactly as many). */
static NOINLINE void cq_overrun_possible(void)
{
	int i, n;

	open_all(4);
	n = cq[A]->cqe + (bad ? 1 : 0);
	if (n > 16) {
		fprintf(stderr, "scenario: a CQ of %d entries\n", cq[A]->cqe);
		exit(77);
	}
	to_init(qp[A]);
	for (i = 0; i < n; i++)
		if (post_recv(qp[A], i, (uintptr_t)buf + 16 * i, 16,
			      mr->lkey))
			scn_die("ibv_post_recv");
	close_all();
}

/*
 * The overrun itself: B sends (unsignaled) into every one of A's cqe + 1
 * receives, nobody polls, so A's CQ has one completion more than it
 * holds.  Prints what the device does about it: A's async event, then
 * what A's and B's CQs hold, and A's state.
 */
static NOINLINE void cq_overrun_possible_overflow(void)
{
	struct ibv_send_wr wr, *badwr;
	struct ibv_async_event ev;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	struct ibv_sge sg;
	struct pollfd pfd;
	struct ibv_wc wc;
	int i, n, k;

	open_all(4);
	n = cq[A]->cqe + 1;
	if (n > 16) {
		fprintf(stderr, "scenario: a CQ of %d entries\n", cq[A]->cqe);
		exit(77);
	}
	connect_all();
	for (i = 0; i < n; i++)
		if (post_recv(qp[A], i, (uintptr_t)buf + 16 * i, 16,
			      mr->lkey))
			scn_die("ibv_post_recv");
	for (i = 0; i < n; i++) {
		sg = (struct ibv_sge){ .addr = (uintptr_t)buf + BUF - 8,
				       .length = 8, .lkey = mr->lkey };
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 100 + i;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		if (ibv_post_send(qp[B], &wr, &badwr))
			scn_die("ibv_post_send");
	}
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	fcntl(pfd.fd, F_SETFL, fcntl(pfd.fd, F_GETFL) | O_NONBLOCK);
	if (poll(&pfd, 1, 3000) == 1 && !ibv_get_async_event(ctx, &ev)) {
		printf("scenario: async: %s%s\n",
		       ibv_event_type_str(ev.event_type),
		       ev.element.cq == cq[A] ? " (A's CQ)" :
		       ev.element.qp == qp[A] ? " (A's QP)" : "");
		ibv_ack_async_event(&ev);
	} else {
		printf("scenario: async: none\n");
	}
	for (i = 0; i < 2; i++) {
		k = 0;
		while (ibv_poll_cq(cq[i], 1, &wc) == 1) {
			printf("scenario: %s: wr %llu: %s\n",
			       i == A ? "A" : "B",
			       (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
			k++;
		}
		printf("scenario: %s: %d completions\n", i == A ? "A" : "B",
		       k);
	}
	if (ibv_query_qp(qp[A], &qa, IBV_QP_STATE, &ia))
		scn_die("ibv_query_qp");
	printf("scenario: A: state %d\n", qa.qp_state);
	close_all();
}

/* A send posted in INIT (clean: a receive in INIT, before RTR). */
static NOINLINE void post_in_wrong_qp_state(void)
{
	int ret;

	open_all(16);
	to_init(qp[A]);
	if (bad)
		ret = post_send(qp[A], 1, (uintptr_t)buf, 8, mr->lkey);
	else
		ret = post_recv(qp[A], 1, (uintptr_t)buf, 8, mr->lkey);
	printf("scenario: post in INIT: %s\n", ret ? "refused" : "accepted");
	close_all();
}

/* A receive posted in RESET. */
static NOINLINE void post_in_wrong_qp_state_reset(void)
{
	int ret;

	open_all(16);
	ret = post_recv(qp[A], 1, (uintptr_t)buf, 8, mr->lkey);
	printf("scenario: post in RESET: %s\n", ret ? "refused" : "accepted");
	close_all();
}

/* A's send completed but never polled when A's QP goes (clean: polled
 * first). */
static NOINLINE void destroy_qp_with_unpolled_completions(void)
{
	open_all(16);
	connect_all();
	if (post_recv(qp[B], 1, (uintptr_t)buf, 16, mr->lkey) ||
	    post_send(qp[A], 2, (uintptr_t)buf + 16, 8, mr->lkey))
		scn_die("ibv_post_recv/ibv_post_send");
	poll_one(B);
	if (!bad)
		poll_one(A);
	if (ibv_destroy_qp(qp[A]))
		scn_die("ibv_destroy_qp");
	qp[A] = NULL;
	close_all();
}

/*
 * A's QP never destroyed, its send's completion never polled: the exit
 * leak report counts it on the QP (clean: polled, the QP still leaks).
 * The rest is torn down but what A's QP holds (its CQ, the PD, the
 * context) and the MR its send uses.
 */
static NOINLINE void leak_qp_unpolled(void)
{
	open_all(16);
	connect_all();
	if (post_recv(qp[B], 1, (uintptr_t)buf, 16, mr->lkey) ||
	    post_send(qp[A], 2, (uintptr_t)buf + 16, 8, mr->lkey))
		scn_die("ibv_post_recv/ibv_post_send");
	poll_one(B);
	if (!bad)
		poll_one(A);
	if (ibv_destroy_qp(qp[B]) || ibv_destroy_cq(cq[B]))
		scn_die("ibv_destroy_qp/ibv_destroy_cq");
}

/* Memory freed while its MR lives (clean: deregistered first). */
static NOINLINE void free_registered_memory(void)
{
	char *mem = malloc(BUF);
	struct ibv_mr *m;

	open_all(16);
	m = mem ? ibv_reg_mr(pd, mem, BUF, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!m)
		scn_die("ibv_reg_mr");
	if (!bad && ibv_dereg_mr(m))
		scn_die("ibv_dereg_mr");
	free(mem);
	if (bad && ibv_dereg_mr(m))
		scn_die("ibv_dereg_mr");
	close_all();
}

/* A mapping unmapped while its MR lives (clean: deregistered first). */
static NOINLINE void free_registered_memory_munmap(void)
{
	void *mem = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *m;

	open_all(16);
	m = mem != MAP_FAILED ? ibv_reg_mr(pd, mem, BUF,
					   IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!m)
		scn_die("ibv_reg_mr");
	if (!bad && ibv_dereg_mr(m))
		scn_die("ibv_dereg_mr");
	if (munmap(mem, BUF))
		scn_die("munmap");
	if (bad && ibv_dereg_mr(m))
		scn_die("ibv_dereg_mr");
	close_all();
}

static const struct {
	const char *rule;
	void (*run)(void);
} scenarios[] = {
	{ "mr-dereg-with-wr-in-flight", mr_dereg_with_wr_in_flight },
	{ "mr-dereg-with-wr-in-flight-qpx", mr_dereg_with_wr_in_flight_qpx },
	{ "mr-dereg-with-wr-in-flight-rkey",
	  mr_dereg_with_wr_in_flight_rkey },
	{ "mr-dereg-with-wr-in-flight-mw", mr_dereg_with_wr_in_flight_mw },
	{ "mr-dereg-with-wr-in-flight-mw1",
	  mr_dereg_with_wr_in_flight_mw1 },
	{ "wr-sge-outside-mr", wr_sge_outside_mr },
	{ "wr-sge-outside-mr-qpx", wr_sge_outside_mr_qpx },
	{ "wr-sge-outside-mr-pd", wr_sge_outside_mr_pd },
	{ "cq-overrun-possible", cq_overrun_possible },
	{ "cq-overrun-possible-overflow", cq_overrun_possible_overflow },
	{ "post-in-wrong-qp-state", post_in_wrong_qp_state },
	{ "post-in-wrong-qp-state-reset", post_in_wrong_qp_state_reset },
	{ "destroy-qp-with-unpolled-completions",
	  destroy_qp_with_unpolled_completions },
	{ "leak-qp-unpolled", leak_qp_unpolled },
	{ "free-registered-memory", free_registered_memory },
	{ "free-registered-memory-munmap", free_registered_memory_munmap },
};

int main(int argc, char **argv)
{
	const char *mode, *colon;
	size_t len;
	unsigned i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s RULE[:clean]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	mode = argv[1];
	colon = strchr(mode, ':');
	len = colon ? (size_t)(colon - mode) : strlen(mode);
	bad = !(colon && !strcmp(colon, ":clean"));
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strlen(scenarios[i].rule) == len &&
		    !strncmp(mode, scenarios[i].rule, len)) {
			scenarios[i].run();
			return 0;
		}
	fprintf(stderr, "%s: unknown scenario %s\n", argv[0], mode);
	return 2;
}

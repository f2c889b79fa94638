/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * async_test.c - asynchronous events of the loopback libibverbs on the
 * context's async fd, and the pollability of event fds:
 *
 *  - COMM_EST when a request reaches an RC QP still in RTR (once);
 *  - SRQ_LIMIT_REACHED when an armed SRQ drops below its limit (once,
 *    then disarmed), QP_LAST_WQE_REACHED when a QP on an SRQ goes to ERR;
 *  - no event when the peer QP's process dies, as on a wire: an RC
 *    send fails with RETRY_EXC_ERR after the transport timeout, a UC
 *    send is lost;
 *  - the async fd polls readable exactly while events wait: reading them
 *    all, or destroying the object they are about, leaves it quiet; so
 *    does destroying a CQ whose completion event nobody fetched from a
 *    channel other CQs share, which then still delivers theirs.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "../lib/tcheck.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[4096];

static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/* The next async event, which must be t about element elem. */
static void expect_event(enum ibv_event_type t, void *elem)
{
	struct ibv_async_event ev;

	REQUIRE(readable(ctx->async_fd, 5000));
	REQUIRE(ibv_get_async_event(ctx, &ev) == 0);
	if (ev.event_type != t) {
		fprintf(stderr, "FAIL: event %s, want %s\n",
			ibv_event_type_str(ev.event_type),
			ibv_event_type_str(t));
		failures++;
	} else {
		CHECK(ev.element.qp == elem);
	}
	ibv_ack_async_event(&ev);
}

/* A QP of type t at INIT on the parent's or a child's objects. */
static struct ibv_qp *qp_at_init(struct ibv_pd *p, struct ibv_cq *c,
				 enum ibv_qp_type t, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = c;
	ia.srq = srq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = t;
	qp = ibv_create_qp(p, &ia);
	if (!qp)
		return NULL;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

static struct ibv_qp *rc_qp(struct ibv_srq *srq)
{
	struct ibv_qp *qp = qp_at_init(pd, cq, IBV_QPT_RC, srq);

	REQUIRE(qp);
	return qp;
}

/* To RTR towards dest, with the masks the QP's type takes. */
static int rtr(struct ibv_qp *qp, uint32_t dest)
{
	bool rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = dest;
	qa.min_rnr_timer = 12;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.port_num = 1;
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN |
			     (rc ? IBV_QP_MAX_DEST_RD_ATOMIC |
			      IBV_QP_MIN_RNR_TIMER : 0));
}

static int rts(struct ibv_qp *qp)
{
	bool rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0));
}

/* RTR then RTS towards dest. */
static int connect_qp(struct ibv_qp *qp, uint32_t dest)
{
	return rtr(qp, dest) || rts(qp);
}

/* Through INIT from RESET, which cannot go to ERR directly. */
static void to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (qp->state == IBV_QPS_RESET)
		REQUIRE(ibv_modify_qp(qp, &qa, IBV_QP_STATE |
				      IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS) == 0);
	qa.qp_state = IBV_QPS_ERR;
	REQUIRE(ibv_modify_qp(qp, &qa, IBV_QP_STATE) == 0);
}

static void post_recv(struct ibv_qp *qp, struct ibv_srq *srq, int n)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	while (n--) {
		if (srq)
			REQUIRE(ibv_post_srq_recv(srq, &wr, &bad) == 0);
		else
			REQUIRE(ibv_post_recv(qp, &wr, &bad) == 0);
	}
}

static void send_one(struct ibv_qp *qp)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf + 2048, .length = 8, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	REQUIRE(ibv_post_send(qp, &wr, &bad) == 0);
}

/* n completions from cq, the statuses in st[] */
static void drain(int n, enum ibv_wc_status *st)
{
	struct ibv_wc wc;
	int got = 0, spins = 0;

	while (got < n && spins++ < 2000000) {
		if (ibv_poll_cq(cq, 1, &wc) == 1) {
			if (st)
				st[got] = wc.status;
			got++;
		}
	}
	REQUIRE(got == n);
}

static void test_comm_est(void)
{
	struct ibv_qp *a = rc_qp(NULL), *b = rc_qp(NULL);

	REQUIRE(rtr(a, b->qp_num) == 0);
	REQUIRE(rts(a) == 0);
	REQUIRE(rtr(b, a->qp_num) == 0);
	post_recv(b, NULL, 2);
	CHECK(!readable(ctx->async_fd, 0));
	send_one(a);
	drain(2, NULL);
	expect_event(IBV_EVENT_COMM_EST, b);
	REQUIRE(rts(b) == 0);
	send_one(a);
	drain(2, NULL);
	/* once per QP */
	CHECK(!readable(ctx->async_fd, 50));
	CHECK(ibv_destroy_qp(a) == 0);
	CHECK(ibv_destroy_qp(b) == 0);
}

static void test_srq(void)
{
	struct ibv_srq_init_attr sia;
	struct ibv_srq_attr sa;
	struct ibv_srq *srq;
	struct ibv_qp *a, *b;

	memset(&sia, 0, sizeof(sia));
	sia.attr.max_wr = 8;
	sia.attr.max_sge = 1;
	srq = ibv_create_srq(pd, &sia);
	REQUIRE(srq);
	a = rc_qp(NULL);
	b = rc_qp(srq);
	REQUIRE(rtr(a, b->qp_num) == 0);
	REQUIRE(rts(a) == 0);
	REQUIRE(rtr(b, a->qp_num) == 0);
	REQUIRE(rts(b) == 0);
	post_recv(NULL, srq, 3);
	sa.srq_limit = 2;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0);
	send_one(a);
	drain(2, NULL);
	CHECK(!readable(ctx->async_fd, 50));	/* 2 left: not below */
	send_one(a);
	drain(2, NULL);
	expect_event(IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	CHECK(ibv_query_srq(srq, &sa) == 0 && sa.srq_limit == 0);
	send_one(a);
	drain(2, NULL);
	CHECK(!readable(ctx->async_fd, 50));	/* disarmed */

	to_err(b);
	expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, b);
	CHECK(!readable(ctx->async_fd, 0));

	/* an event nobody fetched goes with its QP, and so does its token */
	CHECK(ibv_destroy_qp(b) == 0);
	b = rc_qp(srq);
	to_err(b);
	CHECK(readable(ctx->async_fd, 5000));
	CHECK(ibv_destroy_qp(b) == 0);
	CHECK(!readable(ctx->async_fd, 0));

	CHECK(ibv_destroy_qp(a) == 0);
	CHECK(ibv_destroy_srq(srq) == 0);
}

/* Two CQs on one channel; one is destroyed with its event unfetched. */
static void test_channel(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *c1, *c2, *got;
	struct ibv_qp_init_attr ia;
	struct ibv_qp *q1, *q2;
	void *cctx;

	REQUIRE(ch);
	c1 = ibv_create_cq(ctx, 4, (void *)1, ch, 0);
	c2 = ibv_create_cq(ctx, 4, (void *)2, ch, 0);
	REQUIRE(c1 && c2);
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 2;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ia.recv_cq = c1;
	q1 = ibv_create_qp(pd, &ia);
	ia.send_cq = ia.recv_cq = c2;
	q2 = ibv_create_qp(pd, &ia);
	REQUIRE(q1 && q2);
	to_err(q1);
	to_err(q2);
	/* a receive posted to an ERR QP completes at once (flushed) */
	CHECK(ibv_req_notify_cq(c1, 0) == 0);
	post_recv(q1, NULL, 1);
	CHECK(readable(ch->fd, 5000));
	CHECK(ibv_destroy_qp(q1) == 0);
	CHECK(ibv_destroy_cq(c1) == 0);
	CHECK(!readable(ch->fd, 0));
	CHECK(ibv_req_notify_cq(c2, 0) == 0);
	post_recv(q2, NULL, 1);
	CHECK(readable(ch->fd, 5000));
	CHECK(ibv_get_cq_event(ch, &got, &cctx) == 0 && got == c2 &&
	      cctx == (void *)2);
	ibv_ack_cq_events(c2, 1);
	CHECK(!readable(ch->fd, 0));
	CHECK(ibv_destroy_qp(q2) == 0);
	CHECK(ibv_destroy_cq(c2) == 0);
	CHECK(ibv_destroy_comp_channel(ch) == 0);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The next completion of cq within ms milliseconds; false if none. */
static bool next_wc(struct ibv_wc *wc, int ms)
{
	double end = now_s() + ms / 1e3;

	do {
		if (ibv_poll_cq(cq, 1, wc) == 1)
			return true;
	} while (now_s() < end);
	return false;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia))
		return IBV_QPS_UNKNOWN;
	return qa.qp_state;
}

/*
 * The peer QP's process dies (killed: no goodbye, its QPs destroyed by
 * the kernel, no CM).  On a wire nothing tells the survivor: no async
 * event, and its receives stay posted.  An RC send then goes unanswered
 * and completes with RETRY_EXC_ERR after the transport timeout (4.096 us
 * * 2^14 * 8 = 0.54 s here), the QP goes to ERR and the receive is
 * flushed after it; a UC send is lost without the sender knowing.
 */
static void test_peer_death(enum ibv_qp_type t)
{
	int up[2], down[2], status;
	uint32_t qpn, peer;
	struct ibv_wc wc;
	struct ibv_qp *a;
	double t0, dt;
	pid_t pid;

	REQUIRE(pipe(up) == 0 && pipe(down) == 0);
	a = qp_at_init(pd, cq, t, NULL);
	REQUIRE(a);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct ibv_device **l = ibv_get_device_list(NULL);
		struct ibv_context *cx = l ? ibv_open_device(l[0]) : NULL;
		struct ibv_pd *p = cx ? ibv_alloc_pd(cx) : NULL;
		struct ibv_cq *c = cx ? ibv_create_cq(cx, 4, NULL, NULL, 0) :
			NULL;
		struct ibv_qp *b = p && c ? qp_at_init(p, c, t, NULL) : NULL;

		if (!b)
			_exit(3);
		if (write(up[1], &b->qp_num, 4) != 4 ||
		    read(down[0], &peer, 4) != 4)
			_exit(5);
		if (connect_qp(b, peer) || write(up[1], "r", 1) != 1)
			_exit(6);
		/* wait for the parent's word, then die as by SIGKILL */
		if (read(down[0], &peer, 1) != 1)
			_exit(7);
		raise(SIGKILL);
		_exit(8);
	}
	REQUIRE(read(up[0], &qpn, 4) == 4);
	REQUIRE(connect_qp(a, qpn) == 0);
	post_recv(a, NULL, 1);
	REQUIRE(write(down[1], &a->qp_num, 4) == 4);
	REQUIRE(read(up[0], &peer, 1) == 1);
	REQUIRE(write(down[1], "x", 1) == 1);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* nothing happens to a QP that only receives (the old loopback
	 * flushed it and raised QP_FATAL within a few milliseconds) */
	CHECK(!next_wc(&wc, 300));
	CHECK(!readable(ctx->async_fd, 0));
	CHECK(qp_state(a) == IBV_QPS_RTS);
	t0 = now_s();
	send_one(a);
	REQUIRE(next_wc(&wc, 5000));
	dt = now_s() - t0;
	CHECK(wc.wr_id == 2);
	if (t == IBV_QPT_UC) {
		CHECK(wc.status == IBV_WC_SUCCESS);
		CHECK(!next_wc(&wc, 100));
		CHECK(qp_state(a) == IBV_QPS_RTS);
	} else {
		if (wc.status != IBV_WC_RETRY_EXC_ERR || dt < 0.5)
			fprintf(stderr, "FAIL: send: %s after %.3f s, want "
				"%s after >= 0.54 s\n",
				ibv_wc_status_str(wc.status), dt,
				ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
		CHECK(wc.status == IBV_WC_RETRY_EXC_ERR && dt >= 0.5);
		REQUIRE(next_wc(&wc, 1000));
		CHECK(wc.wr_id == 1 && wc.status == IBV_WC_WR_FLUSH_ERR);
		CHECK(qp_state(a) == IBV_QPS_ERR);
	}
	CHECK(!readable(ctx->async_fd, 0));
	CHECK(ibv_destroy_qp(a) == 0);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
}

int main(void)
{
	struct ibv_device **list;
	char ns[64];

	alarm(60);
	snprintf(ns, sizeof(ns), "rdmacheck-async-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);
	list = ibv_get_device_list(NULL);
	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	REQUIRE(ctx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	REQUIRE(pd && cq);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	test_comm_est();
	printf("async_test: COMM_EST: %s\n", failures ? "FAIL" : "ok");
	test_srq();
	printf("async_test: SRQ events, withdrawn events: %s\n",
	       failures ? "FAIL" : "ok");
	test_channel();
	printf("async_test: shared completion channel: %s\n",
	       failures ? "FAIL" : "ok");
	test_peer_death(IBV_QPT_RC);
	printf("async_test: RC peer killed: %s\n", failures ? "FAIL" : "ok");
	test_peer_death(IBV_QPT_UC);
	printf("async_test: UC peer killed: %s\n", failures ? "FAIL" : "ok");
	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_destroy_cq(cq) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	if (failures)
		fprintf(stderr, "async_test: %d failure(s)\n", failures);
	else
		printf("async_test: ok\n");
	return failures ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rc_test.c - self-test of the loopback libibverbs data path.  Two QPs
 * ("A" and "B") are connected by hand (INIT/RTR/RTS with dest_qp_num),
 * either inside one process ("single") or in a parent and a forked child
 * ("fork", QPN/rkey exchange and step barriers over a socketpair).  RC:
 * megabyte WRITE/READ both ways at once, SEND/RECV with immediate, the
 * receive's CQE queued before the requester's completion, SENDs
 * parked until their RECVs are posted, RDMA WRITE (+imm), RDMA READ,
 * atomics, inline sends with lkey 0, no CQE for unsignaled WRs,
 * completion channel events (and EAGAIN with O_NONBLOCK), flush on ERR on
 * both sides, a bad rkey (REM_ACCESS_ERR and the target's QP_ACCESS_ERR
 * async event), a bad lkey (LOC_PROT_ERR), sends to a destroyed peer
 * (RETRY_EXC_ERR only once the transport timeout expired, with a
 * completion event).  UD: GRH, reply through
 * ibv_create_ah_from_wc, Q_Key mismatch dropped, multicast.  The
 * ibv_wr_* API (send, inline, write, read, atomic, a batch, abort, the
 * errors wr_complete returns, the send_ops_flags refused as on rxe).
 * Memory windows: type 1 and 2 binds, RDMA through them, out of range,
 * local invalidate and send with invalidate, binds rxe refuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#define BUF_SIZE 4096
#define TMO_MS 10000
#define UD_QKEY 0x11111111

struct ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

struct info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
};

static struct ep eps[2];
static uint64_t qpx_ops;	/* non-zero: QPs made with these send ops */
static struct info peer[2];	/* what each side knows about the other */
static int me = -1;		/* -1: both roles in this process */
static int sock = -1;
static const char *step = "start";

#define A 0
#define B 1
#define DO(r) if (me < 0 || me == (r))

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rc_test[%s] %s: ", me < 0 ? "single" :
		me == A ? "A" : "B", step);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

#define CHECK(c) do { if (!(c)) die("check failed: %s (line %d)", #c, \
				    __LINE__); } while (0)

/* Both processes reach this point before either goes on. */
static void barrier(void)
{
	char c = 's';

	if (me < 0)
		return;
	if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
		die("barrier: peer gone");
}

static void exchange(int r, struct info *mine)
{
	if (me < 0) {
		peer[!r] = *mine;
		return;
	}
	if (write(sock, mine, sizeof(*mine)) != sizeof(*mine) ||
	    read(sock, &peer[r], sizeof(peer[r])) != sizeof(peer[r]))
		die("exchange: peer gone");
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long end = now_ms() + TMO_MS;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
		if (now_ms() > end)
			die("timeout waiting for a completion");
		sched_yield();
	}
	CHECK(n == 1);
}

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id,
		      enum ibv_wc_status st, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	wait_wc(cq, &wc);
	if (wc.wr_id != wr_id || wc.status != st ||
	    (st == IBV_WC_SUCCESS && wc.opcode != op))
		die("wc wr_id %llu status %s opcode %d, want %llu %s %d",
		    (unsigned long long)wc.wr_id,
		    ibv_wc_status_str(wc.status), wc.opcode,
		    (unsigned long long)wr_id, ibv_wc_status_str(st), op);
}

static void expect_empty(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	if (ibv_poll_cq(cq, 1, &wc))
		die("unexpected completion wr_id %llu status %s",
		    (unsigned long long)wc.wr_id,
		    ibv_wc_status_str(wc.status));
}

static void post_recv(struct ep *e, uint64_t wr_id, size_t off, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + off,
		.length = len,
		.lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK(ibv_post_recv(e->qp, &wr, &bad) == 0);
}

static void post_send(struct ep *e, uint64_t wr_id, enum ibv_wr_opcode op,
		      size_t off, size_t len, unsigned int flags,
		      uint32_t lkey, uint64_t raddr, uint32_t rkey,
		      uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + off,
		.length = len,
		.lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = flags,
		.imm_data = imm,
	};
	struct ibv_send_wr *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK(ibv_post_send(e->qp, &wr, &bad) == 0);
}

static void open_ep(int r, enum ibv_qp_type type)
{
	struct ep *e = &eps[r];
	struct ibv_device **list;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	int n;

	list = ibv_get_device_list(&n);
	CHECK(list && n == 1);
	CHECK(strcmp(ibv_get_device_name(list[0]), "rdmalo0") == 0);
	e->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	CHECK(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	CHECK(e->pd);
	e->ch = ibv_create_comp_channel(e->ctx);
	CHECK(e->ch);
	e->scq = ibv_create_cq(e->ctx, 32, e, e->ch, 0);
	e->rcq = ibv_create_cq(e->ctx, 32, e, e->ch, 0);
	CHECK(e->scq && e->rcq);
	e->buf = calloc(1, BUF_SIZE);
	CHECK(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(e->mr);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.qp_type = type;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	ia.cap.max_inline_data = 64;
	ia.qp_context = e;
	if (qpx_ops) {
		struct ibv_qp_init_attr_ex ax = {
			.qp_context = e, .send_cq = e->scq, .recv_cq = e->rcq,
			.cap = ia.cap, .qp_type = type,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = e->pd, .send_ops_flags = qpx_ops,
		};

		e->qp = ibv_create_qp_ex(e->ctx, &ax);
	} else {
		e->qp = ibv_create_qp(e->pd, &ia);
		CHECK(!e->qp || !ibv_qp_to_qp_ex(e->qp));
	}
	CHECK(e->qp);
	CHECK(e->qp->state == IBV_QPS_RESET && e->qp->pd == e->pd &&
	      e->qp->send_cq == e->scq && e->qp->recv_cq == e->rcq &&
	      e->qp->context == e->ctx && e->qp->qp_context == e);
	CHECK(ibv_destroy_cq(e->scq) == EBUSY);
	CHECK(ibv_dealloc_pd(e->pd) == EBUSY);

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	if (type == IBV_QPT_UD) {
		qa.qkey = UD_QKEY;
		CHECK(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE |
				    IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_QKEY) == 0);
		qa.qp_state = IBV_QPS_RTR;
		CHECK(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE) == 0);
		qa.qp_state = IBV_QPS_RTS;
		qa.sq_psn = 1;
		CHECK(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE |
				    IBV_QP_SQ_PSN) == 0);
		CHECK(ibv_query_qp(e->qp, &qa, IBV_QP_QKEY, &qia) == 0);
		CHECK(qa.qkey == UD_QKEY);
		return;
	}
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;
	CHECK(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
	CHECK(ibv_query_qp(e->qp, &qa, IBV_QP_CAP | IBV_QP_STATE, &qia) == 0);
	CHECK(qa.qp_state == IBV_QPS_INIT);
	CHECK(qa.cap.max_inline_data >= 64 && qia.cap.max_send_wr >= 16);
}

static void connect_ep(int r)
{
	struct ep *e = &eps[r];
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_4096;
	qa.dest_qp_num = peer[r].qpn;
	qa.rq_psn = 1;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 12;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.is_global = 1;
	CHECK(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == 0);
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = 1;
	qa.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
	CHECK(e->qp->state == IBV_QPS_RTS);
}

static void setup_pair_type(enum ibv_qp_type type)
{
	int r;

	for (r = 0; r < 2; r++) {
		DO(r) {
			struct info mine;

			open_ep(r, type);
			mine.qpn = eps[r].qp->qp_num;
			mine.rkey = eps[r].mr->rkey;
			mine.addr = (uintptr_t)eps[r].buf;
			exchange(r, &mine);
		}
	}
	if (me < 0)
		CHECK(eps[A].qp->qp_num != eps[B].qp->qp_num);
	if (type == IBV_QPT_UD) {
		barrier();
		return;
	}
	/* B reaches RTR after A: exercises the parked inbound stream. */
	DO(A) connect_ep(A);
	barrier();
	DO(B) connect_ep(B);
	barrier();
}

static void setup_pair(void)
{
	setup_pair_type(IBV_QPT_RC);
}

static void close_ep(int r)
{
	struct ep *e = &eps[r];

	CHECK(ibv_destroy_qp(e->qp) == 0);
	CHECK(ibv_dereg_mr(e->mr) == 0);
	CHECK(ibv_destroy_cq(e->scq) == 0);
	CHECK(ibv_destroy_cq(e->rcq) == 0);
	CHECK(ibv_destroy_comp_channel(e->ch) == 0);
	CHECK(ibv_dealloc_pd(e->pd) == 0);
	CHECK(ibv_close_device(e->ctx) == 0);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

static void teardown_pair(void)
{
	barrier();
	DO(A) close_ep(A);
	DO(B) close_ep(B);
	barrier();
}

static void wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, TMO_MS) != 1)
		die("fd %d did not become readable", fd);
}

static void wait_cq_event(struct ep *e)
{
	struct ibv_cq *cq;
	void *cqctx;

	wait_readable(e->ch->fd);
	CHECK(ibv_get_cq_event(e->ch, &cq, &cqctx) == 0);
	CHECK(cq == e->rcq && cqctx == e);
	ibv_ack_cq_events(cq, 1);
}

static void test_data(void)
{
	struct ibv_wc wc;
	int i;

	step = "send-imm";
	DO(B) post_recv(&eps[B], 100, 0, 64);
	barrier();
	DO(A) {
		strcpy(eps[A].buf, "hello");
		post_send(&eps[A], 1, IBV_WR_SEND_WITH_IMM, 0, 6,
			  IBV_SEND_SIGNALED, eps[A].mr->lkey, 0, 0,
			  htonl(0x1234));
		expect_wc(eps[A].scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	DO(B) {
		wait_wc(eps[B].rcq, &wc);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 100);
		CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == 6);
		CHECK((wc.wc_flags & IBV_WC_WITH_IMM) &&
		      wc.imm_data == htonl(0x1234));
		CHECK(wc.src_qp == peer[B].qpn &&
		      wc.qp_num == eps[B].qp->qp_num);
		CHECK(strcmp(eps[B].buf, "hello") == 0);
	}
	barrier();

	step = "send-before-recv";
	DO(A) {
		strcpy(eps[A].buf, "late");
		post_send(&eps[A], 2, IBV_WR_SEND, 0, 5, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey, 0, 0, 0);
	}
	barrier();
	DO(B) {
		post_recv(&eps[B], 101, 64, 64);
		expect_wc(eps[B].rcq, 101, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK(strcmp(eps[B].buf + 64, "late") == 0);
	}
	DO(A) expect_wc(eps[A].scq, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	barrier();

	step = "rdma-write";
	DO(A) {
		for (i = 0; i < 256; i++)
			eps[A].buf[1024 + i] = (char)i;
		post_send(&eps[A], 3, IBV_WR_RDMA_WRITE, 1024, 256,
			  IBV_SEND_SIGNALED, eps[A].mr->lkey,
			  peer[A].addr + 2048, peer[A].rkey, 0);
		expect_wc(eps[A].scq, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	}
	barrier();
	DO(B) {
		/* A's completion means the data is visible here. */
		for (i = 0; i < 256; i++)
			CHECK(eps[B].buf[2048 + i] == (char)i);
		post_recv(&eps[B], 102, 0, 0);
	}
	barrier();
	DO(A) {
		post_send(&eps[A], 4, IBV_WR_RDMA_WRITE_WITH_IMM, 1024, 16,
			  IBV_SEND_SIGNALED, eps[A].mr->lkey,
			  peer[A].addr + 2304, peer[A].rkey, htonl(77));
		expect_wc(eps[A].scq, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	}
	DO(B) {
		wait_wc(eps[B].rcq, &wc);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 102);
		CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
		CHECK(wc.imm_data == htonl(77) && wc.byte_len == 16);
		CHECK(memcmp(eps[B].buf + 2304, eps[B].buf + 2048, 16) == 0);
	}
	barrier();

	step = "rdma-read";
	DO(B) {
		for (i = 0; i < 128; i++)
			eps[B].buf[3072 + i] = (char)(255 - i);
	}
	barrier();
	DO(A) {
		post_send(&eps[A], 5, IBV_WR_RDMA_READ, 512, 128,
			  IBV_SEND_SIGNALED, eps[A].mr->lkey,
			  peer[A].addr + 3072, peer[A].rkey, 0);
		wait_wc(eps[A].scq, &wc);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 5);
		CHECK(wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 128);
		for (i = 0; i < 128; i++)
			CHECK(eps[A].buf[512 + i] == (char)(255 - i));
	}
	barrier();

	step = "atomics";
	DO(B) {
		uint64_t v = 5;

		memcpy(eps[B].buf + 4000, &v, 8);
	}
	barrier();
	DO(A) {
		static const struct {
			enum ibv_wr_opcode op;
			uint64_t cmp_add, swap, old;
			enum ibv_wc_opcode wc;
		} at[] = {
			{ IBV_WR_ATOMIC_FETCH_AND_ADD, 3, 0, 5,
			  IBV_WC_FETCH_ADD },
			{ IBV_WR_ATOMIC_CMP_AND_SWP, 8, 100, 8,
			  IBV_WC_COMP_SWAP },
			{ IBV_WR_ATOMIC_CMP_AND_SWP, 7, 1, 100,
			  IBV_WC_COMP_SWAP },
		};

		for (i = 0; i < 3; i++) {
			struct ibv_sge sge = {
				(uintptr_t)eps[A].buf + 64, 8,
				eps[A].mr->lkey
			};
			struct ibv_send_wr wr = {
				.wr_id = 20 + i, .sg_list = &sge,
				.num_sge = 1, .opcode = at[i].op,
				.send_flags = IBV_SEND_SIGNALED,
			}, *bad;
			uint64_t old;

			wr.wr.atomic.remote_addr = peer[A].addr + 4000;
			wr.wr.atomic.rkey = peer[A].rkey;
			wr.wr.atomic.compare_add = at[i].cmp_add;
			wr.wr.atomic.swap = at[i].swap;
			CHECK(ibv_post_send(eps[A].qp, &wr, &bad) == 0);
			wait_wc(eps[A].scq, &wc);
			CHECK(wc.status == IBV_WC_SUCCESS &&
			      wc.wr_id == 20 + (uint64_t)i);
			CHECK(wc.opcode == at[i].wc && wc.byte_len == 8);
			memcpy(&old, eps[A].buf + 64, 8);
			CHECK(old == at[i].old);
		}
	}
	barrier();
	DO(B) {
		uint64_t v;

		memcpy(&v, eps[B].buf + 4000, 8);
		CHECK(v == 100);
	}

	step = "unsignaled";
	DO(B) {
		for (i = 0; i < 4; i++)
			post_recv(&eps[B], 200 + i, 128 * i, 128);
	}
	barrier();
	DO(A) {
		/* Inline with lkey 0, as rdma_xclient does. */
		for (i = 0; i < 3; i++)
			post_send(&eps[A], 10 + i, IBV_WR_SEND, 0, 32,
				  IBV_SEND_INLINE, 0, 0, 0, 0);
		post_send(&eps[A], 42, IBV_WR_SEND, 0, 32,
			  IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, 0, 0, 0);
		expect_wc(eps[A].scq, 42, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	DO(B) {
		for (i = 0; i < 4; i++)
			expect_wc(eps[B].rcq, 200 + i, IBV_WC_SUCCESS,
				  IBV_WC_RECV);
	}
	barrier();
	DO(A) expect_empty(eps[A].scq);

	step = "comp-channel";
	DO(B) {
		struct ibv_cq *cq;
		void *cqctx;
		int fl = fcntl(eps[B].ch->fd, F_GETFL);

		CHECK(fcntl(eps[B].ch->fd, F_SETFL, fl | O_NONBLOCK) == 0);
		errno = 0;
		CHECK(ibv_get_cq_event(eps[B].ch, &cq, &cqctx) == -1 &&
		      errno == EAGAIN);
		CHECK(fcntl(eps[B].ch->fd, F_SETFL, fl) == 0);
		CHECK(ibv_req_notify_cq(eps[B].rcq, 0) == 0);
		post_recv(&eps[B], 300, 0, 64);
	}
	barrier();
	DO(A) {
		post_send(&eps[A], 6, IBV_WR_SEND, 0, 8, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey, 0, 0, 0);
		expect_wc(eps[A].scq, 6, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	DO(B) {
		wait_cq_event(&eps[B]);
		expect_wc(eps[B].rcq, 300, IBV_WC_SUCCESS, IBV_WC_RECV);
	}
	barrier();

	step = "flush";
	for (i = 0; i < 2; i++) {
		DO(i) {
			post_recv(&eps[i], 400, 0, 64);
			post_recv(&eps[i], 401, 64, 64);
			CHECK(ibv_req_notify_cq(eps[i].rcq, 0) == 0);
		}
	}
	barrier();
	DO(B) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		CHECK(ibv_modify_qp(eps[B].qp, &qa, IBV_QP_STATE) == 0);
	}
	/* B flushes itself; A flushes when B's QP tells it, like a DREQ. */
	for (i = 0; i < 2; i++) {
		DO(i) {
			struct ibv_qp_attr qa;
			struct ibv_qp_init_attr qia;

			wait_cq_event(&eps[i]);
			expect_wc(eps[i].rcq, 400, IBV_WC_WR_FLUSH_ERR, 0);
			expect_wc(eps[i].rcq, 401, IBV_WC_WR_FLUSH_ERR, 0);
			CHECK(ibv_query_qp(eps[i].qp, &qa, IBV_QP_STATE,
					   &qia) == 0);
			CHECK(qa.qp_state == IBV_QPS_ERR);
			post_recv(&eps[i], 402, 0, 64);
			expect_wc(eps[i].rcq, 402, IBV_WC_WR_FLUSH_ERR, 0);
		}
	}
	teardown_pair();
}

#define BIG (8u << 20)
#define REG (BIG / 4)

/*
 * A requester that saw its send complete may tell the responder out of
 * band (librdmacm's DISCONNECT, a TCP socket): the responder must then
 * find the receive's completion already in its CQ, as on rxe, whose
 * responder completes before it acknowledges.  rsockets depend on it: a
 * disconnect seen before the last data's completion is a hang-up.
 */
#define ORDER_ROUNDS 2000

static void test_order(void)
{
	struct ibv_wc wc;
	int i;

	setup_pair();
	step = "recv completion before the requester's";
	for (i = 0; i < ORDER_ROUNDS; i++) {
		DO(A) post_recv(&eps[A], 900 + i, 0, 64);
		barrier();
		DO(B) {
			post_send(&eps[B], 910, IBV_WR_SEND, 0, 64,
				  IBV_SEND_SIGNALED, eps[B].mr->lkey, 0, 0, 0);
			expect_wc(eps[B].scq, 910, IBV_WC_SUCCESS,
				  IBV_WC_SEND);
		}
		/* B's completion is known here, on both sides. */
		barrier();
		DO(A) {
			if (ibv_poll_cq(eps[A].rcq, 1, &wc) != 1)
				die("round %d: the requester's send completed "
				    "before the receive's completion", i);
			CHECK(wc.wr_id == 900 + (uint64_t)i &&
			      wc.status == IBV_WC_SUCCESS);
		}
	}
	teardown_pair();
}

static unsigned char pat(int who, int region, size_t i)
{
	return (unsigned char)(i * (7 + 2 * who) + region * 31 + (i >> 12));
}

/*
 * Megabyte transfers in both directions at once: WRITE my R0 to the
 * peer's R1 and READ the peer's R2 into my R3, then a 1 MiB SEND, then a
 * burst of sends parked until their receives are posted.
 */
static void test_large(void)
{
	static struct info big[2];	/* the peer's big buffer */
	unsigned char *mem[2] = { NULL, NULL };
	struct ibv_mr *mr[2] = { NULL, NULL };
	size_t i;
	int r;

	step = "large";
	for (r = 0; r < 2; r++) {
		DO(r) {
			struct info mine;

			mem[r] = malloc(BIG);
			CHECK(mem[r]);
			mr[r] = ibv_reg_mr(eps[r].pd, mem[r], BIG,
					   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ);
			CHECK(mr[r]);
			for (i = 0; i < REG; i++) {
				mem[r][i] = pat(r, 0, i);
				mem[r][2 * REG + i] = pat(r, 2, i);
			}
			mine.qpn = 0;
			mine.rkey = mr[r]->rkey;
			mine.addr = (uintptr_t)mem[r];
			if (me < 0)
				big[!r] = mine;
			else if (write(sock, &mine, sizeof(mine)) !=
				 sizeof(mine) ||
				 read(sock, &big[r], sizeof(big[r])) !=
				 sizeof(big[r]))
				die("exchange: peer gone");
		}
	}
	barrier();
	for (r = 0; r < 2; r++) {
		DO(r) {
			struct ibv_sge sge[2] = {
				{ (uintptr_t)mem[r], REG, mr[r]->lkey },
				{ (uintptr_t)mem[r] + 3 * REG, REG,
				  mr[r]->lkey },
			};
			struct ibv_send_wr wr[2], *bad;

			memset(wr, 0, sizeof(wr));
			wr[0].wr_id = 500;
			wr[0].sg_list = &sge[0];
			wr[0].num_sge = 1;
			wr[0].opcode = IBV_WR_RDMA_WRITE;
			wr[0].send_flags = IBV_SEND_SIGNALED;
			wr[0].wr.rdma.remote_addr = big[r].addr + REG;
			wr[0].wr.rdma.rkey = big[r].rkey;
			wr[0].next = &wr[1];
			wr[1] = wr[0];
			wr[1].next = NULL;
			wr[1].wr_id = 501;
			wr[1].sg_list = &sge[1];
			wr[1].opcode = IBV_WR_RDMA_READ;
			wr[1].wr.rdma.remote_addr = big[r].addr + 2 * REG;
			CHECK(ibv_post_send(eps[r].qp, wr, &bad) == 0);
		}
	}
	for (r = 0; r < 2; r++) {
		DO(r) {
			expect_wc(eps[r].scq, 500, IBV_WC_SUCCESS,
				  IBV_WC_RDMA_WRITE);
			expect_wc(eps[r].scq, 501, IBV_WC_SUCCESS,
				  IBV_WC_RDMA_READ);
		}
	}
	barrier();
	for (r = 0; r < 2; r++) {
		DO(r) {
			for (i = 0; i < REG; i++) {
				if (mem[r][REG + i] != pat(!r, 0, i) ||
				    mem[r][3 * REG + i] != pat(!r, 2, i))
					die("large mismatch at %zu", i);
			}
		}
	}
	barrier();

	step = "large-send";
	DO(B) {
		struct ibv_sge sge = { (uintptr_t)mem[B] + REG, REG,
				       mr[B]->lkey };
		struct ibv_recv_wr wr = { .wr_id = 600, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		memset(mem[B] + REG, 0, REG);
		CHECK(ibv_post_recv(eps[B].qp, &wr, &bad) == 0);
	}
	barrier();
	DO(A) {
		struct ibv_sge sge = { (uintptr_t)mem[A] + 2 * REG, 1 << 20,
				       mr[A]->lkey };
		struct ibv_send_wr wr = { .wr_id = 601, .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		CHECK(ibv_post_send(eps[A].qp, &wr, &bad) == 0);
		expect_wc(eps[A].scq, 601, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	DO(B) {
		struct ibv_wc wc;

		wait_wc(eps[B].rcq, &wc);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 600);
		CHECK(wc.byte_len == 1 << 20);
		for (i = 0; i < (1 << 20); i++)
			if (mem[B][REG + i] != pat(A, 2, i))
				die("large send mismatch at %zu", i);
	}
	barrier();

	step = "rnr-burst";
	DO(A) {
		for (i = 0; i < 16; i++) {
			eps[A].buf[i * 64] = (char)i;
			post_send(&eps[A], 700 + i, IBV_WR_SEND, i * 64, 64,
				  i == 15 ? IBV_SEND_SIGNALED : 0,
				  eps[A].mr->lkey, 0, 0, 0);
		}
	}
	barrier();
	DO(B) {
		for (i = 0; i < 16; i++)
			post_recv(&eps[B], 800 + i, i * 64, 64);
		for (i = 0; i < 16; i++) {
			expect_wc(eps[B].rcq, 800 + i, IBV_WC_SUCCESS,
				  IBV_WC_RECV);
			CHECK(eps[B].buf[i * 64] == (char)i);
		}
	}
	DO(A) {
		expect_wc(eps[A].scq, 715, IBV_WC_SUCCESS, IBV_WC_SEND);
		expect_empty(eps[A].scq);
	}
	barrier();
	for (r = 0; r < 2; r++) {
		DO(r) {
			CHECK(ibv_dereg_mr(mr[r]) == 0);
			free(mem[r]);
		}
	}
}

static void test_errors(void)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;

	step = "bad-rkey";
	setup_pair();
	DO(A) {
		post_send(&eps[A], 7, IBV_WR_RDMA_WRITE, 0, 64,
			  IBV_SEND_SIGNALED, eps[A].mr->lkey, peer[A].addr,
			  peer[A].rkey ^ 0x5a5a00, 0);
		expect_wc(eps[A].scq, 7, IBV_WC_REM_ACCESS_ERR, 0);
		CHECK(ibv_query_qp(eps[A].qp, &qa, IBV_QP_STATE, &qia) == 0);
		CHECK(qa.qp_state == IBV_QPS_ERR);
	}
	DO(B) {
		struct ibv_async_event ev;

		wait_readable(eps[B].ctx->async_fd);
		CHECK(ibv_get_async_event(eps[B].ctx, &ev) == 0);
		CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR &&
		      ev.element.qp == eps[B].qp);
		ibv_ack_async_event(&ev);
	}
	teardown_pair();

	step = "bad-lkey";
	setup_pair();
	DO(A) {
		post_send(&eps[A], 8, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey ^ 0xff00, 0, 0, 0);
		expect_wc(eps[A].scq, 8, IBV_WC_LOC_PROT_ERR, 0);
		CHECK(eps[A].qp->state == IBV_QPS_ERR);
	}
	teardown_pair();
}

/*
 * What connect_ep sets (timeout 14, retry_cnt 7) gives a transport
 * timeout of 4.096 us * 2^14 * 8, about 537 ms.
 */
#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 5000

static void test_peer_gone(void)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_cq *cq;
	void *cqctx;
	long t0 = 0, dt;

	/* A send posted after the peer QP was destroyed. */
	step = "peer-destroyed";
	setup_pair();
	DO(B) close_ep(B);
	barrier();
	DO(A) {
		CHECK(ibv_req_notify_cq(eps[A].scq, 0) == 0);
		t0 = now_ms();
		post_send(&eps[A], 20, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey, 0, 0, 0);
		expect_empty(eps[A].scq);
		CHECK(eps[A].qp->state == IBV_QPS_RTS);
		wait_readable(eps[A].ch->fd);
		dt = now_ms() - t0;
		if (dt < RETRY_MIN_MS || dt > RETRY_MAX_MS)
			die("RETRY_EXC_ERR after %ld ms", dt);
		CHECK(ibv_get_cq_event(eps[A].ch, &cq, &cqctx) == 0);
		CHECK(cq == eps[A].scq && cqctx == &eps[A]);
		ibv_ack_cq_events(cq, 1);
		expect_wc(eps[A].scq, 20, IBV_WC_RETRY_EXC_ERR, 0);
		expect_empty(eps[A].scq);
		CHECK(ibv_query_qp(eps[A].qp, &qa, IBV_QP_STATE, &qia) == 0);
		CHECK(qa.qp_state == IBV_QPS_ERR);
		post_send(&eps[A], 21, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey, 0, 0, 0);
		expect_wc(eps[A].scq, 21, IBV_WC_WR_FLUSH_ERR, 0);
		close_ep(A);
	}
	barrier();

	/*
	 * Sends in flight when the peer goes: the first completes (it was
	 * acknowledged), the second waits at the peer for a RECV that never
	 * comes and times out, the third (never answered either) is flushed.
	 */
	step = "peer-destroyed-in-flight";
	setup_pair();
	DO(B) post_recv(&eps[B], 30, 0, 64);
	barrier();
	DO(A) {
		t0 = now_ms();
		post_send(&eps[A], 31, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey, 0, 0, 0);
		expect_wc(eps[A].scq, 31, IBV_WC_SUCCESS, IBV_WC_SEND);
		post_send(&eps[A], 32, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey, 0, 0, 0);
		post_send(&eps[A], 33, IBV_WR_SEND, 0, 16, IBV_SEND_SIGNALED,
			  eps[A].mr->lkey, 0, 0, 0);
	}
	barrier();
	DO(B) {
		expect_wc(eps[B].rcq, 30, IBV_WC_SUCCESS, IBV_WC_RECV);
		close_ep(B);
	}
	barrier();
	DO(A) {
		expect_empty(eps[A].scq);
		expect_wc(eps[A].scq, 32, IBV_WC_RETRY_EXC_ERR, 0);
		dt = now_ms() - t0;
		if (dt < RETRY_MIN_MS || dt > RETRY_MAX_MS)
			die("RETRY_EXC_ERR after %ld ms", dt);
		expect_wc(eps[A].scq, 33, IBV_WC_WR_FLUSH_ERR, 0);
		CHECK(eps[A].qp->state == IBV_QPS_ERR);
		close_ep(A);
	}
	barrier();
}

static struct ibv_ah *make_ah(struct ep *e, const union ibv_gid *dgid)
{
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;

	memset(&aa, 0, sizeof(aa));
	aa.port_num = 1;
	aa.is_global = 1;
	aa.grh.hop_limit = 1;
	if (dgid)
		aa.grh.dgid = *dgid;
	else
		CHECK(ibv_query_gid(e->ctx, 1, 0, &aa.grh.dgid) == 0);
	ah = ibv_create_ah(e->pd, &aa);
	CHECK(ah);
	return ah;
}

static void ud_send(struct ep *e, uint64_t wr_id, struct ibv_ah *ah,
		    uint32_t qpn, uint32_t qkey, const char *msg)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)e->buf + 2048,
		.length = strlen(msg) + 1,
		.lkey = e->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(e->qp->qp_num),
	}, *bad;

	strcpy(e->buf + 2048, msg);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	CHECK(ibv_post_send(e->qp, &wr, &bad) == 0);
	expect_wc(e->scq, wr_id, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* The GRH + message that landed at buf+off; returns the completion. */
static struct ibv_wc ud_recv(struct ep *e, uint64_t wr_id, size_t off,
			     const char *msg, uint32_t from)
{
	struct ibv_wc wc;

	wait_wc(e->rcq, &wc);
	if (wc.wr_id != wr_id || wc.status != IBV_WC_SUCCESS)
		die("ud recv wr_id %llu status %s", (unsigned long long)
		    wc.wr_id, ibv_wc_status_str(wc.status));
	CHECK(wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_GRH));
	CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htonl(from));
	CHECK(wc.src_qp == from && wc.byte_len == 40 + strlen(msg) + 1);
	CHECK(strcmp(e->buf + off + 40, msg) == 0);
	return wc;
}

/* UD: unicast with GRH, reply through an AH made from the completion,
 * a wrong Q_Key dropped, multicast to two attached QPs. */
static void test_ud(void)
{
	union ibv_gid mgid;

	step = "ud";
	setup_pair_type(IBV_QPT_UD);
	DO(A) post_recv(&eps[A], 900, 0, 256);
	DO(B) post_recv(&eps[B], 901, 0, 256);
	barrier();
	DO(A) {
		struct ibv_ah *ah = make_ah(&eps[A], NULL);

		ud_send(&eps[A], 1, ah, peer[A].qpn, UD_QKEY, "ping");
		CHECK(ibv_destroy_ah(ah) == 0);
	}
	DO(B) {
		struct ibv_wc wc = ud_recv(&eps[B], 901, 0, "ping",
					   peer[B].qpn);
		struct ibv_ah *ah;

		ah = ibv_create_ah_from_wc(eps[B].pd, &wc,
					   (struct ibv_grh *)eps[B].buf, 1);
		CHECK(ah);
		ud_send(&eps[B], 2, ah, wc.src_qp, UD_QKEY, "pong");
		CHECK(ibv_destroy_ah(ah) == 0);
	}
	DO(A) ud_recv(&eps[A], 900, 0, "pong", peer[A].qpn);
	barrier();

	step = "ud-qkey";
	DO(B) post_recv(&eps[B], 902, 256, 256);
	barrier();
	DO(A) {
		struct ibv_ah *ah = make_ah(&eps[A], NULL);

		ud_send(&eps[A], 3, ah, peer[A].qpn, 0x2222, "dropped");
		ud_send(&eps[A], 4, ah, peer[A].qpn, 0x80000000, "kept");
		CHECK(ibv_destroy_ah(ah) == 0);
	}
	DO(B) ud_recv(&eps[B], 902, 256, "kept", peer[B].qpn);
	barrier();

	step = "ud-mcast";
	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[0] = 0xff;
	mgid.raw[1] = 0x0e;
	mgid.raw[10] = 0xff;
	mgid.raw[11] = 0xff;
	mgid.raw[12] = 239;
	mgid.raw[15] = (unsigned char)getpid();
	if (me >= 0) {
		/* Both processes must agree on the group. */
		if (me == A ? write(sock, &mgid, 16) != 16 :
		    read(sock, &mgid, 16) != 16)
			die("exchange: peer gone");
	}
	DO(A) {
		CHECK(ibv_attach_mcast(eps[A].qp, &mgid, 0) == 0);
		post_recv(&eps[A], 903, 512, 256);
	}
	DO(B) {
		CHECK(ibv_attach_mcast(eps[B].qp, &mgid, 0) == 0);
		post_recv(&eps[B], 904, 512, 256);
	}
	barrier();
	DO(A) {
		struct ibv_ah *ah = make_ah(&eps[A], &mgid);

		ud_send(&eps[A], 5, ah, 0xffffff, UD_QKEY, "to all");
		CHECK(ibv_destroy_ah(ah) == 0);
		/* Not blocked: the sender's own QP gets a copy too. */
		ud_recv(&eps[A], 903, 512, "to all", eps[A].qp->qp_num);
	}
	DO(B) {
		struct ibv_wc wc = ud_recv(&eps[B], 904, 512, "to all",
					   peer[B].qpn);
		struct ibv_grh *g = (struct ibv_grh *)(eps[B].buf + 512);

		(void)wc;
		CHECK(memcmp(&g->dgid, &mgid, 16) == 0);
	}
	barrier();
	DO(A) CHECK(ibv_detach_mcast(eps[A].qp, &mgid, 0) == 0);
	DO(B) CHECK(ibv_detach_mcast(eps[B].qp, &mgid, 0) == 0);
	DO(A) CHECK(ibv_detach_mcast(eps[A].qp, &mgid, 0) == EINVAL);
	teardown_pair();
}

/* A batch of ibv_wr_* WRs on A's QP, posted at wr_complete. */
static int qpx_post(uint64_t wr_id, enum ibv_wr_opcode op, size_t off,
		    size_t len, bool inl)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(eps[A].qp);

	CHECK(qx);
	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	switch (op) {
	case IBV_WR_SEND:
		ibv_wr_send(qx);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(qx, htonl(77));
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(qx, peer[A].rkey, peer[A].addr + off);
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(qx, peer[A].rkey, peer[A].addr + off);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(qx, peer[A].rkey, peer[A].addr + off,
					5);
		break;
	default:
		ibv_wr_bind_mw(qx, NULL, 0, NULL);
		break;
	}
	if (inl)
		ibv_wr_set_inline_data(qx, eps[A].buf + off, len);
	else
		ibv_wr_set_sge(qx, eps[A].mr->lkey,
			       (uintptr_t)eps[A].buf + off, len);
	return ibv_wr_complete(qx);
}

static void test_qpx(void)
{
	struct ibv_qp_ex *qx;
	struct ibv_sge sg[3];
	struct ibv_wc wc;
	uint64_t v;

	qpx_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
		  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		  IBV_QP_EX_WITH_BIND_MW;
	setup_pair();
	qpx_ops = 0;

	step = "qpx-flags";
	DO(A) {
		struct ibv_qp_init_attr_ex ax = {
			.send_cq = eps[A].scq, .recv_cq = eps[A].rcq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1 },
			.qp_type = IBV_QPT_UD, .pd = eps[A].pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE,
		};

		/* As rxe: a UD QP sends only. */
		errno = 0;
		CHECK(!ibv_create_qp_ex(eps[A].ctx, &ax) &&
		      errno == EOPNOTSUPP);
	}

	step = "qpx-send";
	DO(B) post_recv(&eps[B], 200, 0, 64);
	barrier();
	DO(A) {
		qx = ibv_qp_to_qp_ex(eps[A].qp);
		CHECK(qx && &qx->qp_base == eps[A].qp && qx->wr_send &&
		      !qx->wr_atomic_cmp_swp);
		strcpy(eps[A].buf, "qpx");
		CHECK(qpx_post(10, IBV_WR_SEND_WITH_IMM, 0, 4, false) == 0);
		expect_wc(eps[A].scq, 10, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	DO(B) {
		wait_wc(eps[B].rcq, &wc);
		CHECK(wc.wr_id == 200 && wc.status == IBV_WC_SUCCESS &&
		      wc.byte_len == 4 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      wc.imm_data == htonl(77));
		CHECK(strcmp(eps[B].buf, "qpx") == 0);
	}
	barrier();

	step = "qpx-inline";
	DO(B) post_recv(&eps[B], 201, 0, 64);
	barrier();
	DO(A) {
		strcpy(eps[A].buf + 100, "inl");
		CHECK(qpx_post(11, IBV_WR_SEND, 100, 4, true) == 0);
		expect_wc(eps[A].scq, 11, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	DO(B) {
		expect_wc(eps[B].rcq, 201, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK(strcmp(eps[B].buf, "inl") == 0);
	}
	barrier();

	step = "qpx-write-read-atomic";
	DO(A) {
		memset(eps[A].buf + 1024, 0x5a, 64);
		CHECK(qpx_post(12, IBV_WR_RDMA_WRITE, 1024, 64, false) == 0);
		expect_wc(eps[A].scq, 12, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		memset(eps[A].buf + 1024, 0, 64);
		CHECK(qpx_post(13, IBV_WR_RDMA_READ, 1024, 64, false) == 0);
		expect_wc(eps[A].scq, 13, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
		CHECK(eps[A].buf[1024] == 0x5a && eps[A].buf[1087] == 0x5a);
	}
	barrier();
	DO(B) memset(eps[B].buf + 2048, 0, 8);
	barrier();
	DO(A) {
		CHECK(qpx_post(14, IBV_WR_ATOMIC_FETCH_AND_ADD, 2048, 8,
			       false) == 0);
		expect_wc(eps[A].scq, 14, IBV_WC_SUCCESS,
			  IBV_WC_FETCH_ADD);
		memcpy(&v, eps[A].buf + 2048, 8);
		CHECK(v == 0);
	}
	barrier();
	DO(B) {
		memcpy(&v, eps[B].buf + 2048, 8);
		CHECK(v == 5);
	}
	barrier();

	step = "qpx-batch-abort-errors";
	DO(B) {
		post_recv(&eps[B], 202, 0, 64);
		post_recv(&eps[B], 203, 64, 64);
	}
	barrier();
	DO(A) {
		qx = ibv_qp_to_qp_ex(eps[A].qp);
		/* Aborted: nothing posted. */
		ibv_wr_start(qx);
		qx->wr_id = 20;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qx);
		ibv_wr_set_sge(qx, eps[A].mr->lkey, (uintptr_t)eps[A].buf, 8);
		ibv_wr_abort(qx);
		expect_empty(eps[A].scq);
		/* Two in one batch, in order. */
		ibv_wr_start(qx);
		qx->wr_id = 21;
		ibv_wr_send(qx);
		ibv_wr_set_sge(qx, eps[A].mr->lkey, (uintptr_t)eps[A].buf, 8);
		qx->wr_id = 22;
		ibv_wr_send(qx);
		ibv_wr_set_sge(qx, eps[A].mr->lkey, (uintptr_t)eps[A].buf, 8);
		CHECK(ibv_wr_complete(qx) == 0);
		expect_wc(eps[A].scq, 21, IBV_WC_SUCCESS, IBV_WC_SEND);
		expect_wc(eps[A].scq, 22, IBV_WC_SUCCESS, IBV_WC_SEND);
		/* More SGEs than max_send_sge (2): ENOSPC, nothing sent. */
		ibv_wr_start(qx);
		qx->wr_id = 23;
		ibv_wr_send(qx);
		sg[0] = sg[1] = sg[2] = (struct ibv_sge){
			(uintptr_t)eps[A].buf, 1, eps[A].mr->lkey };
		ibv_wr_set_sge_list(qx, 3, sg);
		CHECK(ibv_wr_complete(qx) == ENOSPC);
		/* a bind with no window fails the batch */
		CHECK(qpx_post(24, IBV_WR_BIND_MW, 0, 8, false) == EINVAL);
		expect_empty(eps[A].scq);
	}
	DO(B) {
		expect_wc(eps[B].rcq, 202, IBV_WC_SUCCESS, IBV_WC_RECV);
		expect_wc(eps[B].rcq, 203, IBV_WC_SUCCESS, IBV_WC_RECV);
	}
	barrier();
	teardown_pair();
}

/*
 * Memory windows on B's QP over a second MR of B's (MW_BIND): a type 1
 * window on [1024, 1536) by ibv_bind_mw, a type 2 on [2048, 2304) by
 * IBV_WR_BIND_MW (or ibv_wr_bind_mw on an extended QP); A learns their
 * rkeys (in peer[A].rkey and .qpn).
 */
static struct ibv_mr *mw_mr;
static struct ibv_mw *mws[2];

static void mw_bind2(struct ep *e, uint64_t wr_id, struct ibv_mw *mw,
		     struct ibv_mr *mr, size_t off, size_t len, int acc)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)e->buf + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = acc;
	CHECK(ibv_post_send(e->qp, &wr, &bad) == 0);
	mw->rkey = wr.bind_mw.rkey;
}

static void mw_begin(void)
{
	struct info mine = { 0 };

	setup_pair();
	DO(B) {
		struct ep *e = &eps[B];
		struct ibv_mw_bind bind = {
			.wr_id = 50, .send_flags = IBV_SEND_SIGNALED,
		};
		uint32_t old;

		memset(e->buf + 2048, 0x3d, 256);
		mw_mr = ibv_reg_mr(e->pd, e->buf, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_MW_BIND);
		mws[0] = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
		mws[1] = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
		CHECK(mw_mr && mws[0] && mws[1]);
		bind.bind_info.mr = mw_mr;
		bind.bind_info.addr = (uintptr_t)e->buf + 1024;
		bind.bind_info.length = 512;
		bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_REMOTE_READ;
		old = mws[0]->rkey;
		CHECK(ibv_bind_mw(e->qp, mws[0], &bind) == 0);
		CHECK(mws[0]->rkey == ibv_inc_rkey(old));
		expect_wc(e->scq, 50, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		mw_bind2(e, 51, mws[1], mw_mr, 2048, 256,
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		expect_wc(e->scq, 51, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		/* rxe: not while windows are bound to it */
		CHECK(ibv_dereg_mr(mw_mr) == EINVAL);
		mine.rkey = mws[0]->rkey;
		mine.qpn = mws[1]->rkey;
		mine.addr = (uintptr_t)e->buf;
		exchange(B, &mine);
	}
	DO(A) {
		if (me >= 0)
			exchange(A, &mine);
	}
}

static void mw_end(void)
{
	DO(B) {
		CHECK(ibv_dealloc_mw(mws[0]) == 0);
		CHECK(ibv_dealloc_mw(mws[1]) == 0);
		CHECK(ibv_dereg_mr(mw_mr) == 0);
	}
	teardown_pair();
}

/* B sees the access error its QP raised (QP_ACCESS_ERR). */
static void mw_access_err(void)
{
	DO(B) {
		struct ibv_async_event ev;

		wait_readable(eps[B].ctx->async_fd);
		CHECK(ibv_get_async_event(eps[B].ctx, &ev) == 0);
		CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR &&
		      ev.element.qp == eps[B].qp);
		ibv_ack_async_event(&ev);
	}
}

static void test_mw(void)
{
	struct ep *a = &eps[A];

	step = "mw-rdma";
	mw_begin();
	DO(A) {
		memset(a->buf, 0x5c, 64);
		post_send(a, 60, IBV_WR_RDMA_WRITE, 0, 64, IBV_SEND_SIGNALED,
			  a->mr->lkey, peer[A].addr + 1024 + 448,
			  peer[A].rkey, 0);
		expect_wc(a->scq, 60, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		post_send(a, 61, IBV_WR_RDMA_READ, 512, 256,
			  IBV_SEND_SIGNALED, a->mr->lkey,
			  peer[A].addr + 2048, peer[A].qpn, 0);
		expect_wc(a->scq, 61, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
		CHECK(a->buf[512] == 0x3d && a->buf[767] == 0x3d);
	}
	barrier();
	DO(B) CHECK(eps[B].buf[1472] == 0x5c && eps[B].buf[1535] == 0x5c &&
		    eps[B].buf[1536] == 0);
	DO(A) {
		/* one byte past the type 2 window */
		post_send(a, 62, IBV_WR_RDMA_READ, 512, 8, IBV_SEND_SIGNALED,
			  a->mr->lkey, peer[A].addr + 2304 - 7,
			  peer[A].qpn, 0);
		expect_wc(a->scq, 62, IBV_WC_REM_ACCESS_ERR, 0);
	}
	mw_access_err();
	mw_end();

	step = "mw-local-inv";
	mw_begin();
	DO(B) {
		struct ibv_send_wr wr = {
			.wr_id = 63, .opcode = IBV_WR_LOCAL_INV,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.invalidate_rkey = mws[1]->rkey;
		CHECK(ibv_post_send(eps[B].qp, &wr, &bad) == 0);
		expect_wc(eps[B].scq, 63, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	}
	barrier();
	DO(A) {
		post_send(a, 64, IBV_WR_RDMA_WRITE, 0, 8, IBV_SEND_SIGNALED,
			  a->mr->lkey, peer[A].addr + 2048, peer[A].qpn, 0);
		expect_wc(a->scq, 64, IBV_WC_REM_ACCESS_ERR, 0);
	}
	mw_access_err();
	mw_end();

	step = "mw-send-inv";
	mw_begin();
	DO(B) post_recv(&eps[B], 65, 0, 64);
	barrier();
	DO(A) {
		struct ibv_sge sge = { (uintptr_t)a->buf, 16, a->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 66, .opcode = IBV_WR_SEND_WITH_INV,
			.send_flags = IBV_SEND_SIGNALED,
			.sg_list = &sge, .num_sge = 1,
		}, *bad;

		wr.invalidate_rkey = peer[A].qpn;
		CHECK(ibv_post_send(a->qp, &wr, &bad) == 0);
		expect_wc(a->scq, 66, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	DO(B) {
		struct ibv_wc wc;

		wait_wc(eps[B].rcq, &wc);
		CHECK(wc.wr_id == 65 && wc.status == IBV_WC_SUCCESS &&
		      (wc.wc_flags & IBV_WC_WITH_INV) &&
		      wc.invalidated_rkey == mws[1]->rkey);
	}
	barrier();
	DO(A) {
		post_send(a, 67, IBV_WR_RDMA_READ, 512, 8, IBV_SEND_SIGNALED,
			  a->mr->lkey, peer[A].addr + 2048, peer[A].qpn, 0);
		expect_wc(a->scq, 67, IBV_WC_REM_ACCESS_ERR, 0);
	}
	mw_access_err();
	mw_end();

	step = "mw-refused";
	mw_begin();
	DO(B) {
		struct ep *e = &eps[B];
		struct ibv_mw_bind bind = {
			.wr_id = 68, .send_flags = IBV_SEND_SIGNALED,
		};

		/* a type 1 window is never zero based (rxe's provider) */
		bind.bind_info.mr = mw_mr;
		bind.bind_info.addr = (uintptr_t)e->buf;
		bind.bind_info.length = 64;
		bind.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
		CHECK(ibv_bind_mw(e->qp, mws[0], &bind) == EINVAL);
		/* an MR registered without MW_BIND cannot take one */
		bind.bind_info.mr = e->mr;
		bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
		CHECK(ibv_bind_mw(e->qp, mws[0], &bind) == 0);
		expect_wc(e->scq, 68, IBV_WC_MW_BIND_ERR, 0);
		CHECK(e->qp->state == IBV_QPS_ERR);
	}
	mw_end();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "single";
	pid_t pid = 0;
	int sv[2], st;

	alarm(60);
	if (strcmp(mode, "fork") == 0) {
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		pid = fork();
		CHECK(pid >= 0);
		me = pid ? A : B;
		sock = sv[pid ? 0 : 1];
		close(sv[pid ? 1 : 0]);
	} else if (strcmp(mode, "single") != 0) {
		fprintf(stderr, "usage: rc_test [single|fork]\n");
		return 2;
	}
	setup_pair();
	test_large();
	test_data();
	test_order();
	test_errors();
	test_peer_gone();
	test_ud();
	test_qpx();
	test_mw();
	if (pid) {
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/loopback-cm/cm_qp.c: QPs connected through rdma_cm, as the kernel's
 * CM sets them up.
 *
 *  - access: rdma_init_qp_attr(INIT) gives no remote access before a
 *    connection exists, then REMOTE_WRITE, plus REMOTE_READ and
 *    REMOTE_ATOMIC when the CM's responder resources are not 0; so an
 *    atomic (fetch-and-add, compare-and-swap) over rdma_create_qp's QPs
 *    works, and a READ towards a QP connected with initiator depth 0 is
 *    an invalid request (IBV_WC_REM_INV_REQ_ERR);
 *  - routes: a CONNECT_REQUEST child's route carries the GIDs of both ends
 *    and one path record, so that rdma_init_qp_attr(RTR) on it gives the
 *    initiator's GID as dgid (and the active side the passive's);
 *  - RDMA_OPTION_ID_ACK_TIMEOUT: the RTS timeout rdma_init_qp_attr gives
 *    and the QP gets; RC ids only, one byte; and the transport timeout
 *    it makes: a SEND towards a destroyed QP fails with RETRY_EXC_ERR
 *    within 5 s with 5 (4.096 us * 2^5), not within 1.5 s with 22
 *    (17 s; the default 14 gives 67 ms).
 *
 * Both ends in this process, on 127.0.0.1 and the address of
 * RDMACHECK_TEST_ADDR when set; an alarm turns a hang into a failure.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "../lib/tcheck.h"
#include "../lib/tcm.h"

#define PORT	7493

static struct sockaddr_in server_addr;

/* The RoCE GID of an IPv4 address: ::ffff:a.b.c.d */
static union ibv_gid gid_of(const struct sockaddr *sa)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	memcpy(&g.raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	return g;
}

static int same_gid(const union ibv_gid *a, const union ibv_gid *b)
{
	return !memcmp(a, b, sizeof(*a));
}

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *l, *c, *s;	/* listener, client, server child */
	struct ibv_cq *ccq, *scq;
	struct ibv_mr *cmr, *smr;
	uint64_t cbuf[4], sbuf[4];
};

static void qp_for(struct rdma_cm_id *id, struct ibv_cq **cq)
{
	struct ibv_qp_init_attr attr;

	*cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	REQUIRE(*cq);
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = attr.recv_cq = *cq;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	REQUIRE(rdma_create_qp(id, NULL, &attr) == 0);
}

static int access_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	REQUIRE(ibv_query_qp(qp, &a, IBV_QP_ACCESS_FLAGS, &ia) == 0);
	return a.qp_access_flags;
}

static int access_for(int resp_res)
{
	return IBV_ACCESS_REMOTE_WRITE |
	       (resp_res ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC :
		0);
}

/*
 * A connection from k->c to the listener with rdma_create_qp's QPs: the
 * client connects with initiator depth depth (and responder resources
 * 1), the server accepts with 1 and 1.  ack is the ACK_TIMEOUT option
 * of the client (-1: none).
 */
static void connect_pair(struct conn *k, int port, int depth, int ack)
{
	struct rdma_conn_param param;
	struct sockaddr_in sin = server_addr;
	struct rdma_cm_event *e;
	struct ibv_qp_attr a;
	int mask;

	memset(k, 0, sizeof(*k));
	k->ch = rdma_create_event_channel();
	REQUIRE(k->ch);
	sin.sin_port = htons(port);
	REQUIRE(rdma_create_id(k->ch, &k->l, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_bind_addr(k->l, (struct sockaddr *)&sin) == 0);
	REQUIRE(rdma_listen(k->l, 4) == 0);

	REQUIRE(rdma_create_id(k->ch, &k->c, NULL, RDMA_PS_TCP) == 0);
	if (ack >= 0) {
		uint8_t t = (uint8_t)ack;

		CHECK(rdma_set_option(k->c, RDMA_OPTION_ID,
				      RDMA_OPTION_ID_ACK_TIMEOUT, &t,
				      sizeof(t)) == 0);
	}
	REQUIRE(rdma_resolve_addr(k->c, NULL, (struct sockaddr *)&sin,
				  2000) == 0);
	rdma_ack_cm_event(tcm_expect(k->ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	REQUIRE(rdma_resolve_route(k->c, 2000) == 0);
	rdma_ack_cm_event(tcm_expect(k->ch, RDMA_CM_EVENT_ROUTE_RESOLVED));

	/* before a connection: no remote access (cma_ib_init_qp_attr) */
	a.qp_state = IBV_QPS_INIT;
	REQUIRE(rdma_init_qp_attr(k->c, &a, &mask) == 0);
	CHECK(mask & IBV_QP_ACCESS_FLAGS);
	CHECK(a.qp_access_flags == 0);
	qp_for(k->c, &k->ccq);
	CHECK(access_of(k->c->qp) == 0);

	memset(&param, 0, sizeof(param));
	param.initiator_depth = depth;
	param.responder_resources = 1;
	REQUIRE(rdma_connect(k->c, &param) == 0);
	e = tcm_expect(k->ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	k->s = e->id;
	/* the initiator's view, turned round */
	CHECK(e->param.conn.responder_resources == depth &&
	      e->param.conn.initiator_depth == 1);
	rdma_ack_cm_event(e);
	qp_for(k->s, &k->scq);
	/* the child has a connection: the REQ's depth decides */
	CHECK(access_of(k->s->qp) == access_for(depth));
	param.initiator_depth = param.responder_resources = 1;
	REQUIRE(rdma_accept(k->s, &param) == 0);
	rdma_ack_cm_event(tcm_expect(k->ch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(tcm_expect(k->ch, RDMA_CM_EVENT_ESTABLISHED));
	/* ... still, though the accept gave 1; the REP's for the client */
	CHECK(access_of(k->s->qp) == access_for(depth));
	CHECK(access_of(k->c->qp) == access_for(1));

	k->cmr = ibv_reg_mr(k->c->pd, k->cbuf, sizeof(k->cbuf),
			    IBV_ACCESS_LOCAL_WRITE);
	k->smr = ibv_reg_mr(k->s->pd, k->sbuf, sizeof(k->sbuf),
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC);
	REQUIRE(k->cmr && k->smr);
}

static void teardown(struct conn *k)
{
	CHECK(rdma_disconnect(k->c) == 0);
	rdma_ack_cm_event(tcm_expect(k->ch, RDMA_CM_EVENT_DISCONNECTED));
	CHECK(rdma_disconnect(k->s) == 0);
	rdma_ack_cm_event(tcm_expect(k->ch, RDMA_CM_EVENT_DISCONNECTED));
	CHECK(ibv_dereg_mr(k->cmr) == 0);
	CHECK(ibv_dereg_mr(k->smr) == 0);
	rdma_destroy_qp(k->c);
	if (k->s->qp)
		rdma_destroy_qp(k->s);
	CHECK(ibv_destroy_cq(k->ccq) == 0);
	CHECK(ibv_destroy_cq(k->scq) == 0);
	CHECK(rdma_destroy_id(k->s) == 0);
	CHECK(rdma_destroy_id(k->c) == 0);
	CHECK(rdma_destroy_id(k->l) == 0);
	rdma_destroy_event_channel(k->ch);
}

/* Post one WR from the client towards the server's buffer word i. */
static struct ibv_wc post_wait(struct conn *k, enum ibv_wr_opcode op,
			       int i, uint64_t add, uint64_t swap)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&k->cbuf[i],
		.length = 8,
		.lkey = k->cmr->lkey,
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	int n, tries = 0;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 100 + i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = (uintptr_t)&k->sbuf[i];
		wr.wr.rdma.rkey = k->smr->rkey;
	} else {
		wr.wr.atomic.remote_addr = (uintptr_t)&k->sbuf[i];
		wr.wr.atomic.rkey = k->smr->rkey;
		wr.wr.atomic.compare_add = add;
		wr.wr.atomic.swap = swap;
	}
	REQUIRE(ibv_post_send(k->c->qp, &wr, &bad) == 0);
	while ((n = ibv_poll_cq(k->ccq, 1, &wc)) == 0 && tries++ < 1000000)
		usleep(10);
	REQUIRE(n == 1);
	return wc;
}

static void test_atomics(void)
{
	struct ibv_wc wc;
	struct conn k;

	connect_pair(&k, PORT, 1, -1);
	k.sbuf[0] = 40;
	k.sbuf[1] = 7;
	wc = post_wait(&k, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 2, 0);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD);
	CHECK(k.cbuf[0] == 40 && k.sbuf[0] == 42);
	wc = post_wait(&k, IBV_WR_ATOMIC_CMP_AND_SWP, 1, 7, 9);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP);
	CHECK(k.cbuf[1] == 7 && k.sbuf[1] == 9);
	k.sbuf[2] = 0x1122334455667788ULL;
	wc = post_wait(&k, IBV_WR_RDMA_READ, 2, 0, 0);
	CHECK(wc.status == IBV_WC_SUCCESS &&
	      k.cbuf[2] == 0x1122334455667788ULL);
	teardown(&k);
	printf("cm_qp: atomics over rdma_cm QPs: %s\n",
	       failures ? "FAIL" : "ok");
}

/*
 * Initiator depth 0: the passive QP allows remote writes only, although
 * its accept gave responder resources (the INIT attributes come first).
 */
static void test_no_resources(void)
{
	struct ibv_async_event ev;
	struct pollfd pfd;
	struct ibv_wc wc;
	struct conn k;
	int before = failures;

	connect_pair(&k, PORT + 1, 0, -1);
	wc = post_wait(&k, IBV_WR_RDMA_READ, 0, 0, 0);
	CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR);
	/* the responder's QP went to ERR with an invalid request */
	pfd.fd = k.s->verbs->async_fd;
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 5000) == 1);
	CHECK(ibv_get_async_event(k.s->verbs, &ev) == 0);
	CHECK(ev.event_type == IBV_EVENT_QP_REQ_ERR &&
	      ev.element.qp == k.s->qp);
	ibv_ack_async_event(&ev);
	teardown(&k);
	printf("cm_qp: READ without responder resources: %s\n",
	       failures > before ? "FAIL" : "ok");
}

/* The child's route and RTR attributes name both ends' GIDs. */
static void test_routes(void)
{
	union ibv_gid cgid, sgid;
	struct ibv_qp_attr a;
	struct conn k;
	int mask, before = failures;

	connect_pair(&k, PORT + 2, 1, -1);
	cgid = gid_of(rdma_get_local_addr(k.c));
	sgid = gid_of((struct sockaddr *)&server_addr);
	CHECK(same_gid(&k.c->route.addr.addr.ibaddr.sgid, &cgid));
	CHECK(same_gid(&k.c->route.addr.addr.ibaddr.dgid, &sgid));
	CHECK(same_gid(&k.s->route.addr.addr.ibaddr.sgid, &sgid));
	CHECK(same_gid(&k.s->route.addr.addr.ibaddr.dgid, &cgid));
	CHECK(k.s->route.num_paths == 1 && k.s->route.path_rec);
	if (k.s->route.path_rec) {
		CHECK(same_gid(&k.s->route.path_rec->sgid, &sgid));
		CHECK(same_gid(&k.s->route.path_rec->dgid, &cgid));
	}
	a.qp_state = IBV_QPS_RTR;
	CHECK(rdma_init_qp_attr(k.s, &a, &mask) == 0);
	CHECK((mask & IBV_QP_AV) && a.ah_attr.is_global);
	CHECK(same_gid(&a.ah_attr.grh.dgid, &cgid));
	a.qp_state = IBV_QPS_RTR;
	CHECK(rdma_init_qp_attr(k.c, &a, &mask) == 0);
	CHECK(same_gid(&a.ah_attr.grh.dgid, &sgid));
	teardown(&k);
	printf("cm_qp: routes of both ends: %s\n",
	       failures > before ? "FAIL" : "ok");
}

static void test_ack_timeout(void)
{
	struct rdma_cm_id *ud;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct conn k;
	uint8_t t = 5;
	int big = 5, mask, before = failures;

	connect_pair(&k, PORT + 3, 1, 5);
	a.qp_state = IBV_QPS_RTS;
	CHECK(rdma_init_qp_attr(k.c, &a, &mask) == 0);
	CHECK((mask & IBV_QP_TIMEOUT) && a.timeout == 5);
	CHECK(ibv_query_qp(k.c->qp, &a, IBV_QP_TIMEOUT, &ia) == 0 &&
	      a.timeout == 5);
	/* the passive side keeps the default */
	a.qp_state = IBV_QPS_RTS;
	CHECK(rdma_init_qp_attr(k.s, &a, &mask) == 0 && a.timeout != 5);
	CHECK(rdma_set_option(k.c, RDMA_OPTION_ID,
			      RDMA_OPTION_ID_ACK_TIMEOUT, &big,
			      sizeof(big)) == -1 && errno == EINVAL);
	teardown(&k);
	REQUIRE(rdma_create_id(NULL, &ud, NULL, RDMA_PS_UDP) == 0);
	CHECK(rdma_set_option(ud, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			      &t, sizeof(t)) == -1 && errno == EINVAL);
	CHECK(rdma_destroy_id(ud) == 0);
	printf("cm_qp: RDMA_OPTION_ID_ACK_TIMEOUT: %s\n",
	       failures > before ? "FAIL" : "ok");
}

/* The first completion on cq within ms milliseconds (polled); 0: none. */
static int wc_within(struct ibv_cq *cq, int ms, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		n = ibv_poll_cq(cq, 1, wc);
		REQUIRE(n >= 0);
		if (n)
			return 1;
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return 0;
}

/* A SEND from the client after the server's QP is gone, with ack. */
static void ack_timeout_send(int port, int ack, int fires_ms, int quiet_ms)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct conn k;

	connect_pair(&k, port, 1, ack);
	rdma_destroy_qp(k.s);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)k.cbuf;
	sge.length = 8;
	sge.lkey = k.cmr->lkey;
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	REQUIRE(ibv_post_send(k.c->qp, &wr, &bad) == 0);
	if (fires_ms) {
		CHECK(wc_within(k.ccq, fires_ms, &wc) && wc.wr_id == 7 &&
		      wc.status == IBV_WC_RETRY_EXC_ERR);
	} else {
		int early = wc_within(k.ccq, quiet_ms, &wc);

		CHECK(!early);
		if (early)
			fprintf(stderr, "cm_qp: ack %d: %s within %d ms\n",
				ack, ibv_wc_status_str(wc.status), quiet_ms);
	}
	teardown(&k);
}

static void test_ack_timeout_effect(void)
{
	int before = failures;

	ack_timeout_send(PORT + 4, 5, 5000, 0);
	ack_timeout_send(PORT + 5, 22, 0, 1500);
	printf("cm_qp: ACK_TIMEOUT sets the transport timeout: %s\n",
	       failures > before ? "FAIL" : "ok");
}

int main(void)
{
	const char *a = getenv("RDMACHECK_TEST_ADDR");
	char ns[64];

	alarm(60);
	snprintf(ns, sizeof(ns), "rdmacheck-cmqp-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);
	server_addr.sin_family = AF_INET;
	REQUIRE(inet_pton(AF_INET, a && *a ? a : "127.0.0.1",
			  &server_addr.sin_addr) == 1);
	test_atomics();
	test_no_resources();
	test_routes();
	test_ack_timeout();
	test_ack_timeout_effect();
	if (failures)
		fprintf(stderr, "cm_qp: %d failure(s)\n", failures);
	else
		printf("cm_qp: ok\n");
	return failures ? 1 : 0;
}

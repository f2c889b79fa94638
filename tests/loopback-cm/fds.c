/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/loopback-cm/fds.c: file descriptors an established connection
 * costs on the loopback backend, both ends in this process.
 *
 * N connections through the CM alone (no QPs), then N with the QPs and the
 * CQs and completion channels rdma_create_qp makes when given no CQs (as
 * cmtime does): the count of /proc/self/fd before and after each, per end.
 * The CM itself may cost at most one fd per end (its connection socket),
 * QPs none (the verbs layer's links are per process, made by the first
 * connection, which is not counted); the real stack pays two per end with
 * QPs: the two completion channels.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "../lib/tcheck.h"
#include "../lib/tcm.h"

#define N	200
#define PORT	7490

static int nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	REQUIRE(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own */
}

struct end {
	struct rdma_cm_id *c, *child;
};

static void qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	REQUIRE(rdma_create_qp(id, NULL, &attr) == 0);
}

/* n established connections; with QPs or CM only. */
static void connect_all(struct end *k, int n, int qps,
			struct rdma_event_channel *lch,
			struct rdma_event_channel *cch)
{
	struct sockaddr_in dst;
	struct rdma_conn_param param;
	struct rdma_cm_event *e;
	int i;

	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons(PORT);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	param.qp_num = 0x42;
	for (i = 0; i < n; i++) {
		REQUIRE(rdma_create_id(cch, &k[i].c, NULL, RDMA_PS_TCP) == 0);
		REQUIRE(rdma_resolve_addr(k[i].c, NULL,
					  (struct sockaddr *)&dst, 2000) == 0);
		rdma_ack_cm_event(tcm_expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
		REQUIRE(rdma_resolve_route(k[i].c, 2000) == 0);
		rdma_ack_cm_event(tcm_expect(cch,
					     RDMA_CM_EVENT_ROUTE_RESOLVED));
		if (qps)
			qp(k[i].c);
		REQUIRE(rdma_connect(k[i].c, &param) == 0);
		e = tcm_expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
		k[i].child = e->id;
		rdma_ack_cm_event(e);
		if (qps)
			qp(k[i].child);
		REQUIRE(rdma_accept(k[i].child, &param) == 0);
		if (qps) {
			rdma_ack_cm_event(tcm_expect(cch,
						 RDMA_CM_EVENT_ESTABLISHED));
		} else {
			rdma_ack_cm_event(tcm_expect(cch,
					RDMA_CM_EVENT_CONNECT_RESPONSE));
			REQUIRE(rdma_establish(k[i].c) == 0);
		}
		rdma_ack_cm_event(tcm_expect(lch, RDMA_CM_EVENT_ESTABLISHED));
	}
}

/*
 * One message over k's QPs, so that the links between the QPs' blocks
 * exist on both sides (the accepting side makes its end asynchronously).
 */
static void ping(struct end *k)
{
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 2, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_wc wc;
	int n = 0, spins = 0;

	REQUIRE(ibv_post_recv(k->child->qp, &rwr, &rbad) == 0);
	REQUIRE(ibv_post_send(k->c->qp, &swr, &sbad) == 0);
	while (n == 0 && spins++ < 10000000)
		n = ibv_poll_cq(k->c->send_cq, 1, &wc);
	REQUIRE(n == 1 && wc.status == IBV_WC_SUCCESS);
}

static void destroy_all(struct end *k, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (k[i].c->qp)
			rdma_destroy_qp(k[i].c);
		if (k[i].child->qp)
			rdma_destroy_qp(k[i].child);
		CHECK(rdma_destroy_id(k[i].child) == 0);
		CHECK(rdma_destroy_id(k[i].c) == 0);
	}
}

int main(void)
{
	struct rdma_event_channel *lch, *cch;
	struct sockaddr_in sin;
	struct rdma_cm_id *l;
	static struct end k[N];
	double cm_only, with_qps;
	char ns[64];
	int before;

	alarm(60);
	snprintf(ns, sizeof(ns), "rdmacheck-fds-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);
	lch = rdma_create_event_channel();
	cch = rdma_create_event_channel();
	REQUIRE(lch && cch);
	REQUIRE(rdma_create_id(lch, &l, NULL, RDMA_PS_TCP) == 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(PORT);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	REQUIRE(rdma_bind_addr(l, (struct sockaddr *)&sin) == 0);
	REQUIRE(rdma_listen(l, 0) == 0);
	/* one of each first, so that lazily made fds are not counted */
	connect_all(k, 1, 1, lch, cch);
	ping(&k[0]);
	destroy_all(k, 1);

	before = nfds();
	connect_all(k, N, 0, lch, cch);
	cm_only = (nfds() - before) / (2.0 * N);
	destroy_all(k, N);
	before = nfds();
	connect_all(k, N, 1, lch, cch);
	with_qps = (nfds() - before) / (2.0 * N);
	destroy_all(k, N);
	printf("fds: per connection end: %.2f (CM only), %.2f (with the QP "
	       "and CQs rdma_create_qp makes)\n", cm_only, with_qps);
	CHECK(cm_only <= 1.0);
	CHECK(with_qps <= 3.0);

	CHECK(rdma_destroy_id(l) == 0);
	rdma_destroy_event_channel(lch);
	rdma_destroy_event_channel(cch);
	if (failures)
		fprintf(stderr, "fds: %d failure(s)\n", failures);
	else
		printf("fds: ok\n");
	return failures ? 1 : 0;
}

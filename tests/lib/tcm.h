/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/tcm.h: the rdma_cm helper of the C test programs that drive
 * connections by hand: the next event on a channel, which must come
 * within 10 s and be of the type expected (else the program stops, with
 * what came instead); an id dialled without a QP.  Include after
 * tcheck.h.
 */
#ifndef RDMACHECK_TESTS_TCM_H
#define RDMACHECK_TESTS_TCM_H

#include <poll.h>
#include <string.h>
#include <rdma/rdma_cma.h>

static inline struct rdma_cm_event *
tcm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e;

	REQUIRE(poll(&pfd, 1, 10000) == 1);
	REQUIRE(rdma_get_cm_event(ch, &e) == 0);
	if (e->event != t) {
		fprintf(stderr, "FATAL: got %s (status %d), want %s\n",
			rdma_event_str(e->event), e->status, rdma_event_str(t));
		exit(1);
	}
	return e;
}

/*
 * A new id on ch resolved to dst and connected without a QP (qp_num
 * 0x42): the peer's listener gets the request.
 */
static inline struct rdma_cm_id *
tcm_dial(struct rdma_event_channel *ch, enum rdma_port_space ps,
	 struct sockaddr *dst)
{
	struct rdma_conn_param param;
	struct rdma_cm_id *c;

	REQUIRE(rdma_create_id(ch, &c, NULL, ps) == 0);
	REQUIRE(rdma_resolve_addr(c, NULL, dst, 2000) == 0);
	rdma_ack_cm_event(tcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	REQUIRE(rdma_resolve_route(c, 2000) == 0);
	rdma_ack_cm_event(tcm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	memset(&param, 0, sizeof(param));
	param.qp_num = 0x42;
	REQUIRE(rdma_connect(c, &param) == 0);
	return c;
}

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * errno_keep.c - a successful call returns with the errno the real call
 * left: the shim's own work (first-use initialisation, unwinding, the
 * registry, reports) must never show through.  errno is set to a marker
 * before each call and printed after it; run-scenario.sh runs the program
 * with and without the shim on the same backend and compares the lines
 * (the real librdmacm itself leaves errno changed by some successful
 * calls, e.g. rdma_get_cm_event, so only the comparison is exact).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "scn.h"

#define MAGIC 0x7ead

static void check(const char *call, int ret)
{
	int err = errno;

	if (ret)
		scn_die(call);
	if (err == MAGIC)
		printf("errno_keep: %s: errno kept\n", call);
	else
		printf("errno_keep: %s: errno %d\n", call, err);
	fflush(stdout);
}

#define KEEP(call) do {			\
	errno = MAGIC;			\
	check(#call, (call));		\
} while (0)

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_in sin;

	scn_mode(argc, argv);
	errno = MAGIC;
	ch = rdma_create_event_channel();
	check("rdma_create_event_channel", !ch);
	KEEP(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	scn_addr(&sin, 7471);
	KEEP(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000));
	KEEP(rdma_get_cm_event(ch, &ev));
	KEEP(rdma_ack_cm_event(ev));
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	KEEP(rdma_create_qp(id, NULL, &attr));
	KEEP(rdma_resolve_route(id, 2000));
	KEEP(rdma_get_cm_event(ch, &ev));
	KEEP(rdma_ack_cm_event(ev));
	errno = MAGIC;
	rdma_destroy_qp(id);
	check("rdma_destroy_qp", 0);
	KEEP(rdma_destroy_id(id));
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	KEEP(rdma_getaddrinfo(scn_addr_str(), "7471", &hints, &res));
	errno = MAGIC;
	rdma_freeaddrinfo(res);
	check("rdma_freeaddrinfo", 0);
	errno = MAGIC;
	rdma_destroy_event_channel(ch);
	check("rdma_destroy_event_channel", 0);
	return 0;
}

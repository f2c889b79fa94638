/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * reg_pairs.c - a fixed number of create/destroy or get/ack pairs of one
 * kind, for tests/unit/reg-cost.sh to difference under callgrind (what
 * the shim adds per pair: instructions and registry lock round trips).
 * Built by make check, not run by it (tests/unit/registry.inc).
 *   reg_pairs id|event|cq|mr N
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void cm_pairs(const char *kind, int n)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int i;

	if (!ch)
		die("rdma_create_event_channel");
	sin.sin_port = htons(7471);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!strcmp(kind, "id")) {
		for (i = 0; i < n; i++)
			if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
			    rdma_destroy_id(id))
				die("rdma_create_id/rdma_destroy_id");
		return;
	}
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	for (i = 0; i < n; i++)
		if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) ||
		    rdma_get_cm_event(ch, &ev) || rdma_ack_cm_event(ev))
			die("rdma_resolve_addr/get/ack");
}

static void verbs_pairs(const char *kind, int n)
{
	static char buf[4096];
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	int i, nd;

	list = ibv_get_device_list(&nd);
	ctx = list && nd > 0 ? ibv_open_device(list[0]) : NULL;
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd)
		die("ibv_open_device/ibv_alloc_pd");
	for (i = 0; i < n; i++) {
		if (!strcmp(kind, "cq")) {
			cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
			if (!cq || ibv_destroy_cq(cq))
				die("ibv_create_cq/ibv_destroy_cq");
		} else {
			mr = ibv_reg_mr(pd, buf, sizeof(buf),
					IBV_ACCESS_LOCAL_WRITE);
			if (!mr || ibv_dereg_mr(mr))
				die("ibv_reg_mr/ibv_dereg_mr");
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	if (!strcmp(argv[1], "id") || !strcmp(argv[1], "event"))
		cm_pairs(argv[1], atoi(argv[2]));
	else
		verbs_pairs(argv[1], atoi(argv[2]));
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The quickstart demo: a tiny server and client in one process.  The
 * server forgets to ack the CONNECT_REQUEST it handled, then tears down:
 * rdma_destroy_id on the listener would hang forever in the real library.
 * Run it under rdmacheck to see the report.
 */
#include <stdio.h>
#include "scn.h"

static NOINLINE struct rdma_cm_id *handle_request(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev = scn_get(ch, RDMA_CM_EVENT_CONNECT_REQUEST);

	rdma_reject(ev->id, NULL, 0);
	return ev->id;		/* bug: the event is never acked */
}

static NOINLINE void teardown(struct rdma_cm_id *listener)
{
	if (rdma_destroy_id(listener))
		perror("demo: rdma_destroy_id(listener)");
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *lch = scn_channel(), *cch = scn_channel();
	struct rdma_cm_id *listener = scn_id(lch), *client = scn_id(cch);
	struct rdma_conn_param param = { .responder_resources = 1,
					 .initiator_depth = 1 };
	struct rdma_cm_id *child;

	/* in order with the report's lines, also through a pipe */
	setvbuf(stdout, NULL, _IOLBF, 0);
	scn_bad(argc, argv);
	scn_resolve(client, scn_listen(listener));
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(client, 2000))
		scn_die("rdma_resolve_route");
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (rdma_connect(client, &param))
		scn_die("rdma_connect");
	child = handle_request(lch);
	scn_ack(scn_get(cch, RDMA_CM_EVENT_REJECTED));
	rdma_destroy_id(child);
	rdma_destroy_id(client);
	rdma_destroy_event_channel(cch);
	teardown(listener);
	printf("demo: done (without rdmacheck this would have hung)\n");
	return 0;
}

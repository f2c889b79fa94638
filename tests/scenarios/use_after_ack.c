/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Breaks event-use-after-ack: the server acks a connect request, then
 * rejects it passing the request's private data, which the ack freed.
 * The clean twin copies the private data before the ack.
 */
#include <string.h>
#include "scn.h"

static NOINLINE int reject_with(struct rdma_cm_id *child, const void *pd)
{
	return rdma_reject(child, pd, 8);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *lch = scn_channel(), *cch = scn_channel();
	struct rdma_cm_id *listener = scn_id(lch), *client = scn_id(cch);
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;
	char copy[8];
	const void *pd;

	scn_resolve(client, scn_listen(listener));
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(client, 2000))
		scn_die("rdma_resolve_route");
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	param.private_data = "request";
	param.private_data_len = 8;
	if (rdma_connect(client, &param))
		scn_die("rdma_connect");
	ev = scn_get(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	pd = ev->param.conn.private_data;
	memcpy(copy, pd, sizeof(copy));
	scn_ack(ev);
	reject_with(child, bad ? pd : copy);
	if (rdma_destroy_id(child) || rdma_destroy_id(client) ||
	    rdma_destroy_id(listener))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(lch);
	return 0;
}

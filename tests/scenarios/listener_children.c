/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Clean: an asynchronous listener and its CONNECT_REQUEST children, all
 * released correctly: one child accepted, used and destroyed; one rejected
 * and destroyed before its request was acked (legal: the request is charged
 * to the listener); then the listener, after acking everything.
 */
#include <string.h>
#include <arpa/inet.h>
#include "scn.h"

int main(int argc, char **argv)
{
	struct rdma_event_channel *lch, *cch;
	struct rdma_cm_id *listener, *client, *child, *client2;
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	int port;

	scn_bad(argc, argv);
	lch = scn_channel();
	cch = scn_channel();
	listener = scn_id(lch);
	client = scn_id(cch);
	child = scn_connect(lch, listener, cch, client);
	scn_disconnect(lch, child, cch, client);
	if (rdma_destroy_id(child) || rdma_destroy_id(client))
		scn_die("rdma_destroy_id");

	/* A second request, rejected. */
	port = ntohs(rdma_get_src_port(listener));
	client2 = scn_id(cch);
	scn_resolve(client2, port);
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(client2, 2000))
		scn_die("rdma_resolve_route");
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	if (rdma_connect(client2, &param))
		scn_die("rdma_connect");
	ev = scn_get(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (rdma_reject(ev->id, NULL, 0))
		scn_die("rdma_reject");
	if (rdma_destroy_id(ev->id))
		scn_die("rdma_destroy_id (rejected child)");
	scn_ack(ev);
	scn_ack(scn_get(cch, RDMA_CM_EVENT_REJECTED));
	if (rdma_destroy_id(client2) || rdma_destroy_id(listener))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(lch);
	return 0;
}

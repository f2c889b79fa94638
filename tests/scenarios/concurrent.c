/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Breaks concurrent-calls-on-id: while one thread waits inside
 * rdma_connect on a synchronous id, another destroys that id.  The wait
 * would return into freed memory; rdmacheck refuses the destroy (EBUSY).
 * The clean twin destroys the id after the connect has returned.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "scn.h"

static struct rdma_cm_id *client;

static void *connector(void *arg)
{
	struct rdma_conn_param param;

	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	if (rdma_connect(client, &param) == 0 || errno != ECONNREFUSED)
		scn_die("rdma_connect was not refused");
	return NULL;
}

static NOINLINE int drop_id(struct rdma_cm_id *id)
{
	return rdma_destroy_id(id);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *lch = scn_channel();
	struct rdma_cm_id *listener = scn_id(lch);
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	pthread_t t;

	scn_addr(&sin, scn_listen(listener));
	if (rdma_create_id(NULL, &client, NULL, RDMA_PS_TCP))
		scn_die("rdma_create_id(NULL)");
	if (rdma_resolve_addr(client, NULL, (struct sockaddr *)&sin, 2000) ||
	    rdma_resolve_route(client, 2000))
		scn_die("resolving");
	if (pthread_create(&t, NULL, connector, NULL))
		scn_die("pthread_create");
	/* The request is here: the connector is inside rdma_connect. */
	ev = scn_get(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (bad && (drop_id(client) != -1 || errno != EBUSY))
		exit(98);
	if (rdma_reject(ev->id, NULL, 0) || rdma_destroy_id(ev->id))
		scn_die("rejecting");
	scn_ack(ev);
	pthread_join(t, NULL);
	if (drop_id(client) || rdma_destroy_id(listener))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(lch);
	return 0;
}

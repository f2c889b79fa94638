/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Clean: a synchronous client id (NULL channel) connecting to an
 * asynchronous listener in another thread.  The client's events stay in
 * id->event, owned by librdmacm; nothing may be reported.
 */
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <arpa/inet.h>
#include "scn.h"

static sem_t listening;
static int port;

static void *server(void *arg)
{
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *listener = scn_id(ch), *child;
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;

	port = scn_listen(listener);
	sem_post(&listening);
	ev = scn_get(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	param.qp_num = SCN_SERVER_QPN;	/* QP-less: see scn_connect */
	if (rdma_accept(child, &param))
		scn_die("rdma_accept");
	scn_ack(ev);
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ESTABLISHED));
	scn_ack(scn_get(ch, RDMA_CM_EVENT_DISCONNECTED));
	if (rdma_destroy_id(child) || rdma_destroy_id(listener))
		scn_die("rdma_destroy_id (server)");
	rdma_destroy_event_channel(ch);
	return NULL;
}

int main(int argc, char **argv)
{
	struct rdma_conn_param param;
	struct sockaddr_in sin;
	struct rdma_cm_id *id;
	pthread_t t;

	scn_bad(argc, argv);
	sem_init(&listening, 0, 0);
	if (pthread_create(&t, NULL, server, NULL))
		scn_die("pthread_create");
	sem_wait(&listening);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		scn_die("rdma_create_id(NULL)");
	scn_addr(&sin, port);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000))
		scn_die("rdma_resolve_addr");
	if (rdma_resolve_route(id, 2000))
		scn_die("rdma_resolve_route");
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	param.qp_num = SCN_CLIENT_QPN;
	if (rdma_connect(id, &param))
		scn_die("rdma_connect");
	if (id->event->event != RDMA_CM_EVENT_CONNECT_RESPONSE)
		scn_die("CONNECT_RESPONSE in id->event");
	if (rdma_establish(id))
		scn_die("rdma_establish");
	if (rdma_disconnect(id))
		scn_die("rdma_disconnect");
	pthread_join(t, NULL);
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	return 0;
}

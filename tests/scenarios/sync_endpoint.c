/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Clean: the synchronous endpoint API end to end in one process, as
 * rdma_server/rdma_client do it: rdma_getaddrinfo, rdma_create_ep (passive
 * and active, with QPs), rdma_listen, rdma_get_request, rdma_accept,
 * rdma_connect, rdma_disconnect, rdma_destroy_ep.  librdmacm makes private
 * channels and keeps events in id->event here; none of it may be reported.
 * Bad: the client never calls rdma_destroy_ep (leak-endpoint), as a
 * client that exits on an error path after connecting.
 */
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include "scn.h"

static sem_t listening;
static int port;		/* the listener's, set before listening */

static NOINLINE struct rdma_cm_id *make_ep(struct rdma_addrinfo *res,
					   struct ibv_qp_init_attr *attr)
{
	struct rdma_cm_id *id;

	if (rdma_create_ep(&id, res, NULL, attr))
		scn_die("rdma_create_ep (active)");
	return id;
}

static void qp_attr(struct ibv_qp_init_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->cap.max_send_wr = attr->cap.max_recv_wr = 2;
	attr->cap.max_send_sge = attr->cap.max_recv_sge = 1;
	attr->cap.max_inline_data = 16;
	attr->sq_sig_all = 1;
}

static void *server(void *arg)
{
	struct rdma_cm_id *listen_id, *id;
	struct ibv_qp_init_attr attr;
	struct rdma_addrinfo *res = scn_lookup(true, 0);

	qp_attr(&attr);
	if (rdma_create_ep(&listen_id, res, NULL, &attr))
		scn_die("rdma_create_ep (passive)");
	rdma_freeaddrinfo(res);
	if (rdma_listen(listen_id, 1))
		scn_die("rdma_listen");
	port = ntohs(rdma_get_src_port(listen_id));
	sem_post(&listening);
	if (rdma_get_request(listen_id, &id))
		scn_die("rdma_get_request");
	if (rdma_accept(id, NULL))
		scn_die("rdma_accept");
	if (rdma_disconnect(id))
		scn_die("rdma_disconnect (server)");
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen_id);
	return NULL;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr attr;
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	pthread_t t;
	bool bad = scn_bad(argc, argv);

	sem_init(&listening, 0, 0);
	if (pthread_create(&t, NULL, server, NULL))
		scn_die("pthread_create");
	sem_wait(&listening);
	res = scn_lookup(false, port);
	qp_attr(&attr);
	id = make_ep(res, &attr);
	rdma_freeaddrinfo(res);
	if (rdma_connect(id, NULL))
		scn_die("rdma_connect");
	if (rdma_disconnect(id))
		scn_die("rdma_disconnect (client)");
	pthread_join(t, NULL);
	if (!bad)
		rdma_destroy_ep(id);
	return 0;
}

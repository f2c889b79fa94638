/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Breaks listener-destroy-with-pending-request: a synchronous server takes
 * a request with rdma_get_request, rejects it (which does not release the
 * request the child holds) and destroys its listener before the child.
 * The real call would never return; rdmacheck refuses it (EBUSY), and the
 * server then releases the child and the listener in the right order.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include "scn.h"

static sem_t listening;
static int port;		/* the listener's, set before listening */

static void *client(void *arg)
{
	struct rdma_addrinfo *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;

	sem_wait(&listening);
	res = scn_lookup(false, port);

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	if (rdma_create_ep(&id, res, NULL, &attr))
		scn_die("rdma_create_ep (active)");
	rdma_freeaddrinfo(res);
	if (rdma_connect(id, NULL) == 0 || errno != ECONNREFUSED)
		scn_die("rdma_connect was not refused");
	rdma_destroy_ep(id);
	return NULL;
}

static NOINLINE int close_listener(struct rdma_cm_id *listener)
{
	return rdma_destroy_ep(listener), 0;
}

static NOINLINE int drop_listener(struct rdma_cm_id *listener)
{
	return rdma_destroy_id(listener);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_cm_id *listener, *child;
	struct rdma_addrinfo *res = scn_lookup(true, 0);
	pthread_t t;

	sem_init(&listening, 0, 0);
	if (rdma_create_ep(&listener, res, NULL, NULL))
		scn_die("rdma_create_ep (passive)");
	rdma_freeaddrinfo(res);
	if (rdma_listen(listener, 1))
		scn_die("rdma_listen");
	port = ntohs(rdma_get_src_port(listener));
	if (pthread_create(&t, NULL, client, NULL))
		scn_die("pthread_create");
	sem_post(&listening);
	if (rdma_get_request(listener, &child))
		scn_die("rdma_get_request");
	if (rdma_reject(child, NULL, 0))
		scn_die("rdma_reject");
	pthread_join(t, NULL);
	if (bad && (drop_listener(listener) != -1 || errno != EBUSY))
		exit(98);
	rdma_destroy_ep(child);
	close_listener(listener);
	return 0;
}

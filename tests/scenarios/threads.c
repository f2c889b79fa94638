/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Clean: four threads create ids on one shared channel, resolve, fetch and
 * ack their own events (the channel hands any event to any waiter, so each
 * thread acks what it gets) and destroy their ids concurrently.  Exercises
 * the sharded registry and the ledger under contention; nothing may be
 * reported.
 */
#include <pthread.h>
#include <stdio.h>
#include "scn.h"

#define THREADS 4
#define ROUNDS 200

static struct rdma_event_channel *chs[THREADS];

static void *worker(void *arg)
{
	struct rdma_event_channel *ch = chs[(long)arg];
	struct rdma_cm_id *id;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		id = scn_id(ch);
		scn_resolve(id, 7471);
		scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_destroy_id(id))
			scn_die("rdma_destroy_id");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	long i;

	scn_bad(argc, argv);
	for (i = 0; i < THREADS; i++)
		chs[i] = scn_channel();
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			scn_die("pthread_create");
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < THREADS; i++)
		rdma_destroy_event_channel(chs[i]);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * stress.c THREADS ITERATIONS K [DELAY] - threads churning events and ids
 * while each injects K bugs of each kind at spread-out points: a double
 * ack, an ack of a pointer never fetched, a double destroy and a use
 * after destroy.  Every injected bug must be reported as exactly that (the
 * caller checks the JSON report: THREADS * K findings of each rule, none
 * else), however much the other threads churn meanwhile.  An iteration is
 * four intercepted calls: resolve (an event), fetch, ack, and a create +
 * destroy of a second id.  With DELAY, the second ack and the use after
 * destroy come only after DELAY destroys of the other kind of object (whose
 * addresses the allocator hands out again), as in a program that acks or
 * uses a stale pointer much later.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scn.h"

static unsigned iterations, k, delay;

/* delay destroys of ids (kind 0) or acks of events (kind 3). */
static void churn(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		  unsigned kind)
{
	struct rdma_cm_id *tmp;
	unsigned i;

	for (i = 0; i < delay; i++) {
		if (kind == 0) {
			tmp = scn_id(ch);
			if (rdma_destroy_id(tmp))
				scn_die("rdma_destroy_id");
		} else {
			scn_resolve(id, 7471);
			scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		}
	}
}

static void expect_refused(int ret, const char *what)
{
	if (ret != -1 || errno != EINVAL) {
		fprintf(stderr, "stress: %s was not refused (%d, %s)\n", what,
			ret, strerror(errno));
		exit(98);
	}
}

static void inject(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		   unsigned kind)
{
	struct rdma_cm_event *ev, fake;
	struct rdma_cm_id *tmp;

	switch (kind) {
	case 0:		/* event-double-ack */
		scn_resolve(id, 7471);
		ev = scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		scn_ack(ev);
		churn(ch, id, kind);
		expect_refused(rdma_ack_cm_event(ev), "a double ack");
		break;
	case 1:		/* event-ack-unknown */
		expect_refused(rdma_ack_cm_event(&fake), "an unknown ack");
		break;
	case 2:		/* double-destroy */
		tmp = scn_id(ch);
		if (rdma_destroy_id(tmp))
			scn_die("rdma_destroy_id");
		expect_refused(rdma_destroy_id(tmp), "a double destroy");
		break;
	default:	/* use-after-destroy */
		tmp = scn_id(ch);
		if (rdma_destroy_id(tmp))
			scn_die("rdma_destroy_id");
		churn(ch, id, kind);
		expect_refused(rdma_resolve_route(tmp, 100),
			       "a use after destroy");
		break;
	}
}

static void *worker(void *arg)
{
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch), *tmp;
	unsigned i, every = iterations / (4 * k + 1), injected = 0;

	for (i = 1; i <= iterations; i++) {
		scn_resolve(id, 7471);
		scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		tmp = scn_id(ch);
		if (rdma_destroy_id(tmp))
			scn_die("rdma_destroy_id");
		if (injected < 4 * k && i % every == 0)
			inject(ch, id, injected++ % 4);
	}
	if (injected != 4 * k)
		scn_die("too few iterations for the bugs");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads, i;
	pthread_t *t;

	if (argc != 4 && argc != 5)
		return 2;
	threads = atoi(argv[1]);
	iterations = atoi(argv[2]);
	k = atoi(argv[3]);
	delay = argc == 5 ? atoi(argv[4]) : 0;
	t = calloc(threads, sizeof(*t));
	if (!t || !k || iterations < 8 * k)
		return 2;
	for (i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			scn_die("pthread_create");
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}

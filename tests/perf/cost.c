/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/perf/cost.c: a fixed sequence of intercepted calls for callgrind
 * (tests/perf/cost.sh): each cost_CALL() makes COST_N calls of the
 * function CALL (rdma_connect_pdata: rdma_connect with private data) and
 * nothing else, under a deep stack (tests/lib/pad.h), in COST_ROUNDS
 * rounds.  Under --toggle-collect=cost_* and
 * --dump-after=cost_CALL, each part of the profile is one round of one
 * CALL; the same program without the shim gives what the library itself
 * costs.  "cost leak" leaks one MR made under that stack: its report
 * shows how many frames a capture kept.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <infiniband/verbs.h>

#include "firstpd.h"
#include "flushqp.h"
#include "pad.h"

#define COST_N 200
/*
 * Rounds of every call: cost.sh keeps the lowest count of each call,
 * which leaves out the first round's first-call costs and a round in
 * which a table of the shim happened to grow (when depends on where
 * the heap put the objects, so it moves between runs).
 */
#define COST_ROUNDS 4
#define NOINLINE __attribute__((noinline, noclone))

static struct rdma_event_channel *ch;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static int rs;
static struct pollfd *pfd;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/*
 * Each measured function makes COST_N calls of one function and nothing
 * else; cost_ + the name of that function, which cost.sh dumps after.
 */
#define COST(call, body)						\
	static NOINLINE double cost_##call(void *arg)			\
	{								\
		int i;							\
									\
		for (i = 0; i < COST_N; i++) {				\
			body;						\
		}							\
		return (double)(uintptr_t)arg;				\
	}

static struct rdma_cm_id *ids[COST_N];
static struct rdma_cm_event *evs[COST_N];
static struct ibv_cq *cqs[COST_N];
static struct ibv_mr *mrs[COST_N];
static struct ibv_comp_channel *cch;
static struct ibv_cq *ecq;
static struct ibv_qp *eqp;
static char buf[4096];
static volatile const char *str;
static struct rdma_conn_param conn = { .qp_num = 1, .retry_count = 7 };
static struct rdma_conn_param conn_pdata = {
	.qp_num = 1, .retry_count = 7,
	.private_data = buf, .private_data_len = 8,
};

COST(rdma_create_id,
     if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP))
	die("rdma_create_id"))
COST(rdma_destroy_id,
     if (rdma_destroy_id(ids[i]))
	die("rdma_destroy_id"))
COST(rdma_get_cm_event,
     if (rdma_get_cm_event(ch, &evs[i]))
	die("rdma_get_cm_event"))
COST(rdma_ack_cm_event,
     if (rdma_ack_cm_event(evs[i]))
	die("rdma_ack_cm_event"))
COST(ibv_create_cq,
     if (!(cqs[i] = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
	die("ibv_create_cq"))
COST(ibv_destroy_cq,
     if (ibv_destroy_cq(cqs[i]))
	die("ibv_destroy_cq"))
COST(ibv_reg_mr,
     if (!(mrs[i] = ibv_reg_mr(pd, buf, sizeof(buf),
			       IBV_ACCESS_LOCAL_WRITE)))
	die("ibv_reg_mr"))
COST(ibv_dereg_mr,
     if (ibv_dereg_mr(mrs[i]))
	die("ibv_dereg_mr"))
COST(ibv_get_cq_event,
     void *cq_ctx;
     if (ibv_get_cq_event(cch, &cqs[i], &cq_ctx))
	die("ibv_get_cq_event"))
COST(ibv_ack_cq_events, ibv_ack_cq_events(cqs[i], 1))
/*
 * The shim checks a conn_param, and its private_data when there is one,
 * against the events acked already: the second kind checks one pointer
 * more, and the difference of the two is what one check costs.
 */
COST(rdma_connect,
     if (rdma_connect(ids[i], &conn))
	die("rdma_connect"))
COST(rdma_connect_pdata,
     if (rdma_connect(ids[i], &conn_pdata))
	die("rdma_connect"))
COST(rdma_event_str, str = rdma_event_str(i & 7))
COST(rsend,
     if (rsend(rs, buf, 0, 0))
	die("rsend"))
/* A polling loop's array, in the heap: checked once, then remembered. */
COST(rpoll,
     pfd->fd = rs;
     pfd->events = POLLOUT;
     if (rpoll(pfd, 1, 0) < 0)
	die("rpoll"))

/* n ADDR_RESOLVED events waiting on ch, one per id of ids[]. */
static void resolve_ids(int n)
{
	struct sockaddr_in sin;
	int i;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(7471);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < n; i++)
		if (rdma_resolve_addr(ids[i], NULL, (struct sockaddr *)&sin,
				      2000))
			die("rdma_resolve_addr");
}

static void destroy_ids(int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (rdma_destroy_id(ids[i]))
			die("rdma_destroy_id");
}

/* Get and ack n events of any kind (those connect attempts end in). */
static void drain_events(int n)
{
	struct rdma_cm_event *ev;
	int i;

	for (i = 0; i < n; i++)
		if (rdma_get_cm_event(ch, &ev) || rdma_ack_cm_event(ev))
			die("rdma_get_cm_event/rdma_ack_cm_event");
}

/*
 * n ids with a route to a port nobody listens on, to connect (each
 * attempt ends in an event); the events acked on the way fill the
 * shim's ring of acked events.
 */
static void route_ids(int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP))
			die("rdma_create_id");
	resolve_ids(n);
	drain_events(n);
	for (i = 0; i < n; i++)
		if (rdma_resolve_route(ids[i], 2000))
			die("rdma_resolve_route");
	drain_events(n);
}

/* Each receive posted on eqp is flushed at once, and the armed CQ gets
 * one event per round (flushqp.h). */
static void cq_events_setup(void)
{
	eqp = flush_qp(ctx, pd, &cch, &ecq);
	if (!eqp)
		die("a QP in the error state (flush_qp)");
}

static void cq_events_make(int n)
{
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	int i;

	for (i = 0; i < n; i++) {
		if (ibv_req_notify_cq(ecq, 0) || ibv_post_recv(eqp, &wr, &bad))
			die("ibv_req_notify_cq/ibv_post_recv");
		while (ibv_poll_cq(ecq, 1, &wc) == 0)
			;
	}
}

/*
 * The work between two measured calls, in a part of its own (cost.sh
 * dumps after cost_setup too, and leaves that part out): callgrind counts
 * the calls made where it collects nothing into the next part dumped.
 */
static NOINLINE double cost_setup(void (*fn)(int), int n)
{
	fn(n);
	return 0;
}

/* Every kind once, in an order that leaves each its objects. */
static double round_all(void *arg)
{
	cost_rdma_create_id(arg);
	cost_setup(resolve_ids, COST_N);
	cost_rdma_get_cm_event(arg);
	cost_rdma_ack_cm_event(arg);
	cost_rdma_destroy_id(arg);
	cost_ibv_create_cq(arg);
	cost_ibv_destroy_cq(arg);
	cost_ibv_reg_mr(arg);
	cost_ibv_dereg_mr(arg);
	cost_setup(cq_events_make, COST_N);
	cost_ibv_get_cq_event(arg);
	cost_ibv_ack_cq_events(arg);
	cost_setup(route_ids, COST_N);
	cost_rdma_connect(arg);
	cost_setup(drain_events, COST_N);
	cost_setup(destroy_ids, COST_N);
	cost_setup(route_ids, COST_N);
	cost_rdma_connect_pdata(arg);
	cost_setup(drain_events, COST_N);
	cost_setup(destroy_ids, COST_N);
	cost_rdma_event_str(arg);
	cost_rsend(arg);
	cost_rpoll(arg);
	return 0;
}

/* "cost leak": one MR left registered, made under the same stack. */
static double leak_one(void *arg)
{
	mrs[0] = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	return (double)(uintptr_t)arg;
}

static void *idle(void *arg)
{
	for (;;)
		pause();
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int n;

	/* Both runs multi-threaded, as in bench/bench_shim.c. */
	if (pthread_create(&t, NULL, idle, NULL))
		die("pthread_create");
	ch = rdma_create_event_channel();
	pd = first_pd(&ctx);
	rs = rsocket(AF_INET, SOCK_STREAM, 0);
	pfd = malloc(sizeof(*pfd));
	if (!ch || !pd || rs < 0 || !pfd)
		die("set-up (run on the loopback backend)");
	if (argc > 1 && !strcmp(argv[1], "leak")) {
		pad_call(leak_one, NULL);
		return mrs[0] ? 0 : 1;
	}
	cq_events_setup();
	for (n = 0; n < COST_ROUNDS; n++)
		pad_call(round_all, NULL);
	(void)str;
	if (ibv_destroy_qp(eqp) || ibv_destroy_cq(ecq) ||
	    ibv_destroy_comp_channel(cch))
		die("ibv_destroy_qp/cq/comp_channel");
	rclose(rs);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	rdma_destroy_event_channel(ch);
	return 0;
}

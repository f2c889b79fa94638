/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_shim.c - what rdmacheck adds to each intercepted call, measured on
 * the loopback backend: create/destroy id pairs, get/ack event pairs, and
 * pure pass-through calls of librdmacm; rsocket data calls (one table
 * lookup in the shim, on calls librdmacm answers without a system call:
 * a zero-byte rsend and riowrite, an rpoll of an unconnected rsocket);
 * create/destroy CQ pairs, register/deregister MR pairs and get/ack
 * completion event pairs of libibverbs.  Everything runs under a stack of
 * PAD_FRAMES frames (tests/lib/pad.h), so that each capture keeps a full
 * stack_depth of frames, as in a program whose calls sit deep in its own
 * code.  Run through bench/run-bench.sh, which runs this program without
 * and with the shim, alternately, and prints both times, the ratio and
 * the nanoseconds added.  Not part of make check.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <infiniband/verbs.h>

#include "bench.h"
#include "firstpd.h"
#include "flushqp.h"
#include "pad.h"

/*
 * Time only the get+ack of ADDR_RESOLVED events on one id, each already
 * queued (the channel's fd readable) when the clock starts: the library's
 * thread that resolves is not waited for, so the time is the two calls'.
 */
static double bench_event_pair(struct rdma_event_channel *ch, int n)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct sockaddr_in sin;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	double r[ROUNDS], sum, t;
	int i, k;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(7471);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (k = 0; k < ROUNDS; k++) {
		sum = 0;
		for (i = 0; i < n; i++) {
			if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
				die("rdma_create_id");
			if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
					      2000))
				die("rdma_resolve_addr");
			if (poll(&pfd, 1, 2000) != 1)
				die("poll: no ADDR_RESOLVED event");
			t = now_ns();
			if (rdma_get_cm_event(ch, &ev))
				die("rdma_get_cm_event");
			if (rdma_ack_cm_event(ev))
				die("rdma_ack_cm_event");
			sum += now_ns() - t;
			if (rdma_destroy_id(id))
				die("rdma_destroy_id");
		}
		r[k] = sum / n;
	}
	return median(r, ROUNDS);
}

static double bench_event_str(int n)
{
	volatile const char *s;
	double r[ROUNDS], t;
	int i, k;

	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < n; i++)
			s = rdma_event_str(i & 7);
		r[k] = (now_ns() - t) / n;
	}
	(void)s;
	return median(r, ROUNDS);
}

static double bench_src_port(struct rdma_event_channel *ch, int n)
{
	struct rdma_cm_id *id;
	volatile __be16 p;
	double r[ROUNDS], t;
	int i, k;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < n; i++)
			p = rdma_get_src_port(id);
		r[k] = (now_ns() - t) / n;
	}
	(void)p;
	rdma_destroy_id(id);
	return median(r, ROUNDS);
}

static double bench_cq_pair(struct ibv_context *ctx, int n)
{
	double r[ROUNDS], t;
	struct ibv_cq *cq;
	int i, k;

	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < n; i++) {
			cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
			if (!cq)
				die("ibv_create_cq");
			if (ibv_destroy_cq(cq))
				die("ibv_destroy_cq");
		}
		r[k] = (now_ns() - t) / n;
	}
	return median(r, ROUNDS);
}

static double bench_mr_pair(struct ibv_pd *pd, int n)
{
	static char buf[4096];
	double r[ROUNDS], t;
	struct ibv_mr *mr;
	int i, k;

	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < n; i++) {
			mr = ibv_reg_mr(pd, buf, sizeof(buf),
					IBV_ACCESS_LOCAL_WRITE);
			if (!mr)
				die("ibv_reg_mr");
			if (ibv_dereg_mr(mr))
				die("ibv_dereg_mr");
		}
		r[k] = (now_ns() - t) / n;
	}
	return median(r, ROUNDS);
}

/*
 * Time only ibv_get_cq_event + ibv_ack_cq_events.  The events come from
 * a QP in the error state: each receive posted there completes at once
 * (flushed), and an armed CQ then gets an event.  They are made first,
 * then fetched and acked one by one, as an event loop does.
 */
static double bench_cq_event_pair(struct ibv_context *ctx, struct ibv_pd *pd,
				  int n)
{
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ecq;
	double r[ROUNDS], t;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	void *cq_ctx;
	int i, k;

	qp = flush_qp(ctx, pd, &ch, &cq);
	if (!qp)
		die("a QP in the error state (flush_qp)");
	for (k = 0; k < ROUNDS; k++) {
		for (i = 0; i < n; i++) {
			if (ibv_req_notify_cq(cq, 0) ||
			    ibv_post_recv(qp, &wr, &bad))
				die("ibv_req_notify_cq/ibv_post_recv");
			while (ibv_poll_cq(cq, 1, &wc) == 0)
				;
		}
		t = now_ns();
		for (i = 0; i < n; i++) {
			if (ibv_get_cq_event(ch, &ecq, &cq_ctx))
				die("ibv_get_cq_event");
			ibv_ack_cq_events(ecq, 1);
		}
		r[k] = (now_ns() - t) / n;
	}
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) ||
	    ibv_destroy_comp_channel(ch))
		die("ibv_destroy_qp/cq/comp_channel");
	return median(r, ROUNDS);
}

/* An rsocket data call librdmacm answers at once, timed n times. */
enum rs_op { RS_SEND0, RS_IOWRITE0, RS_POLL1 };

static double bench_rsocket(int s, enum rs_op op, int n)
{
	struct pollfd fd = { .fd = s, .events = POLLIN };
	double r[ROUNDS], t;
	char buf[1];
	int i, k;

	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < n; i++) {
			switch (op) {
			case RS_SEND0:
				if (rsend(s, buf, 0, 0))
					die("rsend");
				break;
			case RS_IOWRITE0:
				if (riowrite(s, buf, 0, 0, 0))
					die("riowrite");
				break;
			case RS_POLL1:
				if (rpoll(&fd, 1, 0))
					die("rpoll");
				break;
			}
		}
		r[k] = (now_ns() - t) / n;
	}
	return median(r, ROUNDS);
}

static void *idle(void *arg)
{
	for (;;)
		pause();
	return arg;
}

static void bench_verbs(int scale)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd = first_pd(&ctx);

	if (!pd)
		die("ibv_open_device/ibv_alloc_pd");
	bench_cq_pair(ctx, 100);
	printf("cq_pair %.1f\n", bench_cq_pair(ctx, 20000 * scale));
	printf("mr_pair %.1f\n", bench_mr_pair(pd, 20000 * scale));
	printf("cq_event_pair %.1f\n", bench_cq_event_pair(ctx, pd,
							   5000 * scale));
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

static double bench_all(void *arg)
{
	int scale = *(int *)arg;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	pthread_t t;
	int s;

	if (!ch)
		die("rdma_create_event_channel (run on the loopback backend)");
	/* Warm up: first captures per thread and lazy set-up are slow. */
	id_pair_ns(ch, 100);
	printf("id_pair %.1f\n", id_pair_ns(ch, 20000 * scale));
	printf("event_pair %.1f\n", bench_event_pair(ch, 5000 * scale));
	printf("event_str %.2f\n", bench_event_str(2000000 * scale));
	printf("src_port %.2f\n", bench_src_port(ch, 2000000 * scale));
	/*
	 * A program with connected rsockets has librdmacm's service
	 * threads; one more thread here makes both runs multi-threaded, so
	 * glibc's single-thread mutex path (which the shim's own service
	 * thread turns off) is not counted as the wrappers' cost.
	 */
	if (pthread_create(&t, NULL, idle, NULL))
		die("pthread_create");
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		die("rsocket");
	printf("rs_send0 %.2f\n", bench_rsocket(s, RS_SEND0, 2000000 * scale));
	printf("rs_iowrite0 %.2f\n",
	       bench_rsocket(s, RS_IOWRITE0, 2000000 * scale));
	printf("rs_poll1 %.2f\n", bench_rsocket(s, RS_POLL1, 2000000 * scale));
	if (rclose(s))
		die("rclose");
	rdma_destroy_event_channel(ch);
	bench_verbs(scale);
	return 0;
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 1;

	pad_call(bench_all, &scale);
	return 0;
}

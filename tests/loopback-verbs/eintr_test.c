/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * eintr_test.c - a signal whose handler was installed without SA_RESTART
 * ends a blocked ibv_get_cq_event() or ibv_get_async_event() with -1 and
 * errno EINTR, as the real library's read() of the uverbs fd does.  qperf
 * stops its test loop this way (SIGALRM, then "Finished && errno ==
 * EINTR"); a library that retries keeps it blocked for good.
 *
 * A waiter thread blocks on an empty channel (or async fd); the main
 * thread signals it every millisecond until it returns, at most 2 s: a
 * signal that lands before the thread is inside read() is simply lost.
 * With SA_RESTART the kernel restarts that read(), so the same signals
 * must leave it blocked until an event arrives (a completion flushed on
 * the channel's CQ, a QP on an SRQ going to ERR).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

static struct ibv_context *ctx;
static struct ibv_comp_channel *ch;
static struct ibv_qp *qp, *srq_qp;
static int use_async;
static int ret, err, done;

static void on_usr1(int sig)
{
	(void)sig;
}

static void *waiter(void *arg)
{
	struct ibv_async_event ev;
	struct ibv_cq *cq;
	void *cq_ctx;

	(void)arg;
	if (use_async)
		ret = ibv_get_async_event(ctx, &ev);
	else
		ret = ibv_get_cq_event(ch, &cq, &cq_ctx);
	err = errno;
	if (!ret && use_async)
		ibv_ack_async_event(&ev);
	else if (!ret)
		ibv_ack_cq_events(cq, 1);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int run(const char *what)
{
	struct timespec ms = { 0, 1000000 };
	pthread_t t;
	int i;

	__atomic_store_n(&done, 0, __ATOMIC_RELEASE);
	if (pthread_create(&t, NULL, waiter, NULL)) {
		fprintf(stderr, "eintr_test: pthread_create failed\n");
		return 1;
	}
	for (i = 0; i < 2000 && !__atomic_load_n(&done, __ATOMIC_ACQUIRE);
	     i++) {
		pthread_kill(t, SIGUSR1);
		nanosleep(&ms, NULL);
	}
	if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		fprintf(stderr, "eintr_test: %s: still blocked after 2000 "
			"signals\n", what);
		return 1;
	}
	pthread_join(t, NULL);
	if (ret != -1 || err != EINTR) {
		fprintf(stderr, "eintr_test: %s: returned %d, errno %s; "
			"want -1, EINTR\n", what, ret, strerror(err));
		return 1;
	}
	printf("eintr_test: %s: -1/EINTR: PASS\n", what);
	return 0;
}

/* Flush a receive through the channel's CQ, or an SRQ QP to ERR. */
static void wake(void)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_recv_wr wr = { .wr_id = 1 }, *bad;

	if (use_async)
		ibv_modify_qp(srq_qp, &qa, IBV_QP_STATE);
	else
		ibv_post_recv(qp, &wr, &bad);
}

/* With SA_RESTART: still blocked after 200 signals, then the event. */
static int run_restart(const char *what)
{
	struct timespec ms = { 0, 1000000 };
	pthread_t t;
	int i;

	__atomic_store_n(&done, 0, __ATOMIC_RELEASE);
	if (pthread_create(&t, NULL, waiter, NULL)) {
		fprintf(stderr, "eintr_test: pthread_create failed\n");
		return 1;
	}
	for (i = 0; i < 200; i++) {
		pthread_kill(t, SIGUSR1);
		nanosleep(&ms, NULL);
	}
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		pthread_join(t, NULL);
		fprintf(stderr, "eintr_test: %s: returned %d (%s) under "
			"SA_RESTART signals\n", what, ret, strerror(err));
		return 1;
	}
	wake();
	for (i = 0; i < 2000 && !__atomic_load_n(&done, __ATOMIC_ACQUIRE);
	     i++)
		nanosleep(&ms, NULL);
	if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		fprintf(stderr, "eintr_test: %s: no event\n", what);
		return 1;
	}
	pthread_join(t, NULL);
	if (ret != 0) {
		fprintf(stderr, "eintr_test: %s: returned %d (%s)\n", what,
			ret, strerror(err));
		return 1;
	}
	printf("eintr_test: %s: restarted under SA_RESTART: PASS\n", what);
	return 0;
}

static struct ibv_qp *err_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			     struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp *q;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = cq;
	ia.srq = srq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	q = ibv_create_qp(pd, &ia);
	/* to INIT first: RESET cannot go to ERR; an SRQ QP waits there */
	if (q && (ibv_modify_qp(q, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
		  (!srq && ibv_modify_qp(q, &qa, IBV_QP_STATE)))) {
		ibv_destroy_qp(q);
		q = NULL;
	}
	return q;
}

int main(void)
{
	struct sigaction sa;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct ibv_device **list;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int n, fail = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	list = ibv_get_device_list(&n);
	if (!list || n < 1 || !(ctx = ibv_open_device(list[0]))) {
		fprintf(stderr, "eintr_test: no device\n");
		return 1;
	}
	ibv_free_device_list(list);
	ch = ibv_create_comp_channel(ctx);
	cq = ch ? ibv_create_cq(ctx, 4, NULL, ch, 0) : NULL;
	if (!cq || ibv_req_notify_cq(cq, 0)) {
		fprintf(stderr, "eintr_test: no CQ\n");
		return 1;
	}
	fail |= run("ibv_get_cq_event");
	use_async = 1;
	fail |= run("ibv_get_async_event");

	pd = ibv_alloc_pd(ctx);
	srq = pd ? ibv_create_srq(pd, &sia) : NULL;
	qp = srq ? err_qp(pd, cq, NULL) : NULL;
	srq_qp = qp ? err_qp(pd, cq, srq) : NULL;
	if (!srq_qp || ibv_req_notify_cq(cq, 0)) {
		fprintf(stderr, "eintr_test: no QPs\n");
		return 1;
	}
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	use_async = 0;
	fail |= run_restart("ibv_get_cq_event");
	use_async = 1;
	fail |= run_restart("ibv_get_async_event");
	if (!fail && (ibv_destroy_qp(srq_qp) || ibv_destroy_qp(qp) ||
		      ibv_destroy_srq(srq) || ibv_dealloc_pd(pd)))
		fail = 1;
	if (!fail && (ibv_destroy_cq(cq) || ibv_destroy_comp_channel(ch) ||
		      ibv_close_device(ctx))) {
		fprintf(stderr, "eintr_test: teardown failed\n");
		fail = 1;
	}
	return fail;
}

// SPDX-License-Identifier: MIT
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

int main(void)
{
	struct sigaction sa;
	struct ibv_device **list;
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
	if (!fail && (ibv_destroy_cq(cq) || ibv_destroy_comp_channel(ch) ||
		      ibv_close_device(ctx))) {
		fprintf(stderr, "eintr_test: teardown failed\n");
		fail = 1;
	}
	return fail;
}

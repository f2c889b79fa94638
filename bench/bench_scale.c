/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_scale.c - what rdmacheck costs as a program grows, on the loopback
 * backend: one mode per run, its results as "KEY VALUE" lines on stdout,
 * for bench/run-bench.sh (which runs each mode without and with the shim
 * and subtracts).  Not part of make check.
 *
 *   scale N...   per-op time of an rdma_create_id/rdma_destroy_id pair
 *                (ns, median of 7 rounds) with N live PDs tracked, for
 *                each N in increasing order; the resident memory the N
 *                PDs took, and what was left after they were freed
 *   threads N    N short threads one after another, each making one
 *                intercepted call under a deep stack (the time of that
 *                call, median, and of the whole thread); then N threads
 *                alive at once after their call (resident memory)
 *   leak SITES N N MRs left registered at exit, made from SITES distinct
 *                stacks; prints the time just before main returns, so
 *                that the caller can time the exit report
 *   first        the time of the first report in the process (an event
 *                acked twice, in a thread, so that the stack has libc's
 *                frames too) and of a second one: under the shim only,
 *                which does not forward the bad call
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "bench.h"
#include "firstpd.h"
#include "pad.h"

static struct rdma_event_channel *ch;
static struct ibv_context *ctx;
static struct ibv_pd *pd;

/* Resident set size in KiB (VmRSS of /proc/self/status). */
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void open_verbs(void)
{
	pd = first_pd(&ctx);
	if (!pd)
		die("ibv_open_device/ibv_alloc_pd (run on the loopback backend)");
}

/* --- scale ------------------------------------------------------------- */

struct scale_arg {
	int argc;
	char **argv;
};

static double run_scale(void *arg)
{
	struct scale_arg *a = arg;
	struct ibv_pd **pds;
	long live = 0, want, rss0, max = 0;
	int i;

	for (i = 0; i < a->argc; i++)
		if (atol(a->argv[i]) > max)
			max = atol(a->argv[i]);
	pds = calloc(max ? max : 1, sizeof(*pds));
	if (!pds)
		die("calloc");
	/*
	 * Warm up as long as a measurement: the shim keeps destroyed
	 * records for a while, and the tables holding them grow to their
	 * steady size in the first hundred thousand pairs.
	 */
	id_pair_ns(ch, 20000);
	rss0 = rss_kib();
	for (i = 0; i < a->argc; i++) {
		want = atol(a->argv[i]);
		for (; live < want; live++)
			if (!(pds[live] = ibv_alloc_pd(ctx)))
				die("ibv_alloc_pd");
		printf("pair_ns@%ld %.1f\n", live, id_pair_ns(ch, 20000));
	}
	printf("rss_kib@%ld %ld\n", live, rss_kib() - rss0);
	while (live > 0)
		if (ibv_dealloc_pd(pds[--live]))
			die("ibv_dealloc_pd");
	printf("rss_kib_after_free %ld\n", rss_kib() - rss0);
	free(pds);
	return 0;
}

/* --- threads ------------------------------------------------------------ */

static pthread_barrier_t all_called;
static int hold;

static double one_call(void *arg)
{
	struct rdma_cm_id *id;
	double t = now_ns();

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	t = now_ns() - t;
	if (rdma_destroy_id(id))
		die("rdma_destroy_id");
	*(double *)arg = t;
	return t;
}

static void *thread_main(void *arg)
{
	pad_call(one_call, arg);
	if (hold)
		pthread_barrier_wait(&all_called);
	return NULL;
}

static void run_threads(int n)
{
	double *call = calloc(n, sizeof(*call));
	double *life = calloc(n, sizeof(*life));
	pthread_t *t = calloc(n, sizeof(*t));
	pthread_attr_t attr;
	double t0;
	long rss0;
	int i;

	if (!call || !life || !t)
		die("calloc");
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	/* Warm up the process-wide part (first capture, lazy set-up). */
	pad_call(one_call, &t0);
	for (i = 0; i < n; i++) {
		t0 = now_ns();
		if (pthread_create(&t[i], &attr, thread_main, &call[i]) ||
		    pthread_join(t[i], NULL))
			die("pthread_create/join");
		life[i] = now_ns() - t0;
	}
	printf("thread_call_ns %.0f\n", median(call, n));
	printf("thread_life_ns %.0f\n", median(life, n));

	hold = 1;
	pthread_barrier_init(&all_called, NULL, n + 1);
	rss0 = rss_kib();
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], &attr, thread_main, &call[i]))
			die("pthread_create");
	pthread_barrier_wait(&all_called);
	printf("thread_rss_kib %ld\n", rss_kib() - rss0);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(call);
	free(life);
	free(t);
}

/* --- leak --------------------------------------------------------------- */

static char leak_buf[4096];

static double leak_one(void *arg)
{
	(void)arg;
	if (!ibv_reg_mr(pd, leak_buf, sizeof(leak_buf),
			IBV_ACCESS_LOCAL_WRITE))
		die("ibv_reg_mr");
	return 0;
}

static void run_leak(unsigned sites, long n)
{
	struct timespec ts;
	long i;

	for (i = 0; i < n; i++)
		pad_site(i % sites, leak_one, NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	/* The caller takes the time again when the process is gone. */
	printf("exit_start_ns %lld%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
	fflush(stdout);
}

/* --- first -------------------------------------------------------------- */

static struct rdma_cm_event *resolved_event(struct rdma_cm_id **id)
{
	struct sockaddr_in sin;
	struct rdma_cm_event *ev;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(7471);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(*id, NULL, (struct sockaddr *)&sin, 2000) ||
	    rdma_get_cm_event(ch, &ev))
		die("rdma_create_id/rdma_resolve_addr/rdma_get_cm_event");
	return ev;
}

static struct rdma_cm_event *first_ev[2];

/*
 * From a thread of its own: its stack ends in libc's start_thread and
 * clone3, named from libc's symbol table (libc's start code gets no
 * file:line: src/symbolize/symbolize.c), and the frame above them in
 * the program.
 */
static void *first_thread(void *arg)
{
	double t;
	int i;

	(void)arg;
	for (i = 0; i < 2; i++) {
		/* The shim reports the second ack and does not forward it. */
		t = now_ns();
		rdma_ack_cm_event(first_ev[i]);
		printf("%s_report_ns %.0f\n", i ? "second" : "first",
		       now_ns() - t);
	}
	return NULL;
}

static void run_first(void)
{
	struct rdma_cm_id *id[2];
	pthread_t t;
	int i;

	for (i = 0; i < 2; i++) {
		first_ev[i] = resolved_event(&id[i]);
		if (rdma_ack_cm_event(first_ev[i]))
			die("rdma_ack_cm_event");
	}
	if (pthread_create(&t, NULL, first_thread, NULL) ||
	    pthread_join(t, NULL))
		die("pthread_create/join");
	for (i = 0; i < 2; i++)
		rdma_destroy_id(id[i]);
}

int main(int argc, char **argv)
{
	struct scale_arg sa = { argc - 2, argv + 2 };

	if (argc < 2)
		goto usage;
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel (run on the loopback backend)");
	open_verbs();
	if (!strcmp(argv[1], "scale") && argc > 2) {
		pad_call(run_scale, &sa);
	} else if (!strcmp(argv[1], "threads") && argc == 3) {
		run_threads(atoi(argv[2]));
	} else if (!strcmp(argv[1], "leak") && argc == 4) {
		run_leak(atoi(argv[2]), atol(argv[3]));
		return 0;	/* everything left for the exit report */
	} else if (!strcmp(argv[1], "first") && argc == 2) {
		run_first();
	} else {
		goto usage;
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	rdma_destroy_event_channel(ch);
	return 0;
usage:
	fprintf(stderr, "usage: bench_scale scale N... | threads N |"
		" leak SITES N | first\n");
	return 2;
}

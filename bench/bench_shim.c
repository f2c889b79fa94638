/*
 * bench_shim.c - what rdmacheck adds to each intercepted call, measured on
 * the loopback backend: create/destroy id pairs, get/ack event pairs,
 * pure pass-through calls, and rsocket data calls (one table lookup in
 * the shim, on calls librdmacm answers without a system call: a zero-byte
 * rsend and riowrite, an rpoll of an unconnected rsocket).  Run through
 * bench/run-bench.sh, which runs this program without and with the shim
 * and prints both times, the ratio and the nanoseconds added.  Not part
 * of make check.
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

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Median of per-round means, to damp this noisy VM. */
static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#define ROUNDS 7

static double median(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp);
	return v[ROUNDS / 2];
}

static double bench_id_pair(struct rdma_event_channel *ch, int n)
{
	double r[ROUNDS], t;
	struct rdma_cm_id *id;
	int i, k;

	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < n; i++) {
			if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
				die("rdma_create_id");
			if (rdma_destroy_id(id))
				die("rdma_destroy_id");
		}
		r[k] = (now_ns() - t) / n;
	}
	return median(r);
}

/* Time only the get+ack of ADDR_RESOLVED events on one id. */
static double bench_event_pair(struct rdma_event_channel *ch, int n)
{
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
	return median(r);
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
	return median(r);
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
	return median(r);
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
	return median(r);
}

static void *idle(void *arg)
{
	for (;;)
		pause();
	return arg;
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 1;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	pthread_t t;
	int s;

	if (!ch)
		die("rdma_create_event_channel (run on the loopback backend)");
	/* Warm up: first captures per thread and lazy set-up are slow. */
	bench_id_pair(ch, 100);
	printf("id_pair %.1f\n", bench_id_pair(ch, 20000 * scale));
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
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/loopback-cm/rdmacm14.c: the RDMACM_1.4 calls of the rdmacm14 build
 * of the loopback librdmacm, as rdma-core 60+ makes them:
 * rdma_resolve_addrinfo (rdma_getaddrinfo through the PLT, the list kept
 * in the id, ADDRINFO_RESOLVED queued, synchronous ids waiting, EBUSY
 * until the list is claimed, RAI_SA refused), rdma_query_addrinfo (hands
 * the list over once, ENOENT otherwise), rdma_destroy_id freeing an
 * unclaimed list through rdma_freeaddrinfo (PLT), and rdma_write_cm_event
 * (USER only, param.arg, acked like any event).
 *
 * Linked against that build, so it cannot start on one without
 * RDMACM_1.4.  It defines rdma_getaddrinfo and rdma_freeaddrinfo itself
 * (exported with -rdynamic) to count the library's calls to them; an
 * alarm turns a hang into a failure.
 */
#include <config.h>

#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "../lib/tcheck.h"

/* rdma-core 60+; the 44.0 headers lack them. */
#define EV_ADDRINFO_RESOLVED	16
#define EV_USER			18
#define RAI_SA			0x00000010
#define RAI_DNS			0x00000020

int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
			  const char *service,
			  const struct rdma_addrinfo *hints);
int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info);
int rdma_write_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type event,
			int status, uint64_t arg);

/* Calls that reach these through the PLT (the library's and ours). */
static int n_getaddrinfo, n_freeaddrinfo;

int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	static int (*real)(const char *, const char *,
			   const struct rdma_addrinfo *,
			   struct rdma_addrinfo **);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "rdma_getaddrinfo");
	REQUIRE(real);
	n_getaddrinfo++;
	return real(node, service, hints, res);
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	static void (*real)(struct rdma_addrinfo *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "rdma_freeaddrinfo");
	REQUIRE(real);
	n_freeaddrinfo++;
	real(res);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, int t)
{
	struct rdma_cm_event *e;

	REQUIRE(rdma_get_cm_event(ch, &e) == 0);
	if ((int)e->event != t) {
		fprintf(stderr, "FAIL: got event %d (status %d), want %d\n",
			e->event, e->status, t);
		exit(1);
	}
	return e;
}

static int nothing_pending(struct rdma_event_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;
}

/* The list of 127.0.0.1:7471 for PS_TCP, as rdma_getaddrinfo makes it. */
static void check_list(struct rdma_addrinfo *ai)
{
	struct sockaddr_in *sin;

	REQUIRE(ai && ai->ai_dst_addr);
	sin = (struct sockaddr_in *)ai->ai_dst_addr;
	CHECK(ai->ai_family == AF_INET && ai->ai_port_space == RDMA_PS_TCP &&
	      ai->ai_qp_type == IBV_QPT_RC);
	CHECK(sin->sin_family == AF_INET && ntohs(sin->sin_port) == 7471 &&
	      sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
}

static struct rdma_addrinfo hints = {
	.ai_flags = RAI_NUMERICHOST,
	.ai_port_space = RDMA_PS_TCP,
};

static void test_resolve(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_addrinfo *ai = NULL, sa;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	int n;

	REQUIRE(ch && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	errno = 0;
	CHECK(rdma_query_addrinfo(id, &ai) == -1 && errno == ENOENT);
	errno = 0;
	CHECK(rdma_query_addrinfo(id, NULL) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(rdma_resolve_addrinfo(NULL, "127.0.0.1", "7471", &hints) == -1 &&
	      errno == EINVAL);

	/* resolved through the PLT, busy until the list is claimed */
	n = n_getaddrinfo;
	REQUIRE(rdma_resolve_addrinfo(id, "127.0.0.1", "7471", &hints) == 0);
	CHECK(n_getaddrinfo == n + 1);
	errno = 0;
	CHECK(rdma_resolve_addrinfo(id, "127.0.0.1", "7471", &hints) == -1 &&
	      errno == EBUSY);
	e = expect(ch, EV_ADDRINFO_RESOLVED);
	CHECK(e->id == id && !e->listen_id && e->status == 0);
	CHECK(!strcmp(rdma_event_str(e->event),
		      "RDMA_CM_EVENT_ADDRINFO_RESOLVED"));
	rdma_ack_cm_event(e);
	errno = 0;
	CHECK(rdma_resolve_addrinfo(id, "127.0.0.1", "7471", &hints) == -1 &&
	      errno == EBUSY);
	REQUIRE(rdma_query_addrinfo(id, &ai) == 0);
	check_list(ai);
	errno = 0;
	CHECK(rdma_query_addrinfo(id, &ai) == -1 && errno == ENOENT);
	rdma_freeaddrinfo(ai);
	CHECK(nothing_pending(ch));

	/* the list is the id's before its event is fetched */
	REQUIRE(rdma_resolve_addrinfo(id, "127.0.0.1", "7471", &hints) == 0);
	REQUIRE(rdma_query_addrinfo(id, &ai) == 0);
	check_list(ai);
	rdma_freeaddrinfo(ai);
	rdma_ack_cm_event(expect(ch, EV_ADDRINFO_RESOLVED));

	/* failures leave the id idle and queue nothing */
	memset(&sa, 0, sizeof(sa));
	sa.ai_flags = RAI_SA;
	errno = 0;
	CHECK(rdma_resolve_addrinfo(id, NULL, "svc", &sa) == -1 &&
	      errno == ENOTSUP);
	sa.ai_flags = RAI_SA | RAI_DNS;
	errno = 0;
	CHECK(rdma_resolve_addrinfo(id, NULL, "svc", &sa) == -1 &&
	      errno == ENOTSUP);
	/* as rdma-core: errno is what rdma_getaddrinfo returned */
	errno = 0;
	CHECK(rdma_resolve_addrinfo(id, "not-an-address", "7471",
				    &hints) == -1 && errno == EAI_NONAME);
	CHECK(nothing_pending(ch));

	/* an unclaimed list goes with the id, through the PLT */
	REQUIRE(rdma_resolve_addrinfo(id, "127.0.0.1", "7471", &hints) == 0);
	rdma_ack_cm_event(expect(ch, EV_ADDRINFO_RESOLVED));
	n = n_freeaddrinfo;
	CHECK(rdma_destroy_id(id) == 0);
	CHECK(n_freeaddrinfo == n + 1);

	/* also with its event never fetched */
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_resolve_addrinfo(id, "127.0.0.1", "7471", &hints) == 0);
	n = n_freeaddrinfo;
	CHECK(rdma_destroy_id(id) == 0);
	CHECK(n_freeaddrinfo == n + 1);
	CHECK(nothing_pending(ch));
	rdma_destroy_event_channel(ch);
}

static void test_sync(void)
{
	struct rdma_addrinfo *ai = NULL;
	struct rdma_cm_id *id;

	REQUIRE(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_resolve_addrinfo(id, "127.0.0.1", "7471", &hints) == 0);
	CHECK(id->event && (int)id->event->event == EV_ADDRINFO_RESOLVED &&
	      id->event->status == 0);
	REQUIRE(rdma_query_addrinfo(id, &ai) == 0);
	check_list(ai);
	rdma_freeaddrinfo(ai);
	CHECK(rdma_destroy_id(id) == 0);
}

struct destroyer {
	struct rdma_cm_id *id;
	int fd;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;
	char c = 1;

	rdma_destroy_id(d->id);
	if (write(d->fd, &c, 1) != 1)
		abort();
	return NULL;
}

static void test_user_event(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	struct destroyer d;
	struct pollfd pfd;
	uint64_t arg;
	pthread_t t;
	int pfds[2];
	char c;

	REQUIRE(ch && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	errno = 0;
	CHECK(rdma_write_cm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, 1) == -1 &&
	      errno == EINVAL);
	CHECK(nothing_pending(ch));
	REQUIRE(rdma_write_cm_event(id, EV_USER, 7,
				    0x1122334455667788ULL) == 0);
	e = expect(ch, EV_USER);
	memcpy(&arg, &e->param, sizeof(arg));
	CHECK(e->id == id && !e->listen_id && e->status == 7 &&
	      arg == 0x1122334455667788ULL);
	CHECK(!strcmp(rdma_event_str(e->event), "UNKNOWN EVENT"));

	/*
	 * Charged to the id: its destroy waits for the ack.  A correct
	 * library can only pass; a wrong one returns within the window.
	 */
	REQUIRE(pipe(pfds) == 0);
	d.id = id;
	d.fd = pfds[1];
	REQUIRE(pthread_create(&t, NULL, destroy_thread, &d) == 0);
	pfd.fd = pfds[0];
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 200) == 0);
	rdma_ack_cm_event(e);
	CHECK(poll(&pfd, 1, 10000) == 1);
	REQUIRE(read(pfds[0], &c, 1) == 1);
	pthread_join(t, NULL);
	close(pfds[0]);
	close(pfds[1]);
	rdma_destroy_event_channel(ch);
}

int main(void)
{
	char ns[64];

	alarm(60);
	snprintf(ns, sizeof(ns), "rdmacheck-cm14-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);

	test_resolve();
	test_sync();
	test_user_event();
	if (failures)
		fprintf(stderr, "rdmacm14: %d failure(s)\n", failures);
	else
		printf("rdmacm14: ok\n");
	return failures ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/loopback-cm/ports.c: port spaces per address family and
 * RDMA_OPTION_ID_AFONLY, as the kernel's cma.c has them (cma_check_port,
 * cma_match_private_data), with net.ipv6.bindv6only 0:
 *
 *  - an IPv4 and an IPv6 listener on the same port and specific
 *    addresses coexist;
 *  - an IPv6 wildcard without AFONLY takes IPv4 too: it conflicts with an
 *    IPv4 bind on its port and gets IPv4 connection requests (the child's
 *    addresses are IPv4);
 *  - with AFONLY it takes IPv6 only, and an IPv4 wildcard listener on the
 *    same port gets the IPv4 requests;
 *  - AFONLY is refused once the id listens, or with a bad length;
 *  - a request no listener of the port takes is rejected by the consumer
 *    (28: a listener of the other family, or bound to another address),
 *    one to a port nobody listens on for the service ID (8).
 *
 * Both ends in this process; an alarm turns a hang into a failure.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "../lib/tcheck.h"
#include "../lib/tcm.h"

#define PORT	7495

static struct rdma_event_channel *ch;

static struct sockaddr_storage addr(const char *ip, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	} else {
		REQUIRE(inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	}
	return ss;
}

/* An id bound to ip:port; afonly -1 leaves the option alone. */
static struct rdma_cm_id *bound(const char *ip, int port, int afonly,
				int *ret)
{
	struct sockaddr_storage ss = addr(ip, port);
	struct rdma_cm_id *id;

	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	if (afonly >= 0)
		CHECK(rdma_set_option(id, RDMA_OPTION_ID,
				      RDMA_OPTION_ID_AFONLY, &afonly,
				      sizeof(afonly)) == 0);
	*ret = rdma_bind_addr(id, (struct sockaddr *)&ss);
	return id;
}

static struct rdma_cm_id *listener(const char *ip, int port, int afonly)
{
	struct rdma_cm_id *id;
	int ret;

	id = bound(ip, port, afonly, &ret);
	REQUIRE(ret == 0);
	REQUIRE(rdma_listen(id, 4) == 0);
	return id;
}

/*
 * Connect to ip:port without a QP: the listener that gets the request
 * (NULL: rejected with *status), its child's source family.
 */
static struct rdma_cm_id *dial(const char *ip, int port, int *status,
			       int *family)
{
	struct sockaddr_storage ss = addr(ip, port);
	struct rdma_cm_event *e;
	struct rdma_cm_id *c, *l;

	c = tcm_dial(ch, RDMA_PS_TCP, (struct sockaddr *)&ss);
	e = NULL;
	REQUIRE(rdma_get_cm_event(ch, &e) == 0);
	if (e->event == RDMA_CM_EVENT_REJECTED) {
		*status = e->status;
		rdma_ack_cm_event(e);
		CHECK(rdma_destroy_id(c) == 0);
		return NULL;
	}
	REQUIRE(e->event == RDMA_CM_EVENT_CONNECT_REQUEST);
	l = e->listen_id;
	*family = rdma_get_local_addr(e->id)->sa_family;
	CHECK(rdma_get_peer_addr(e->id)->sa_family == *family);
	CHECK(rdma_reject(e->id, NULL, 0) == 0);
	CHECK(rdma_destroy_id(e->id) == 0);
	rdma_ack_cm_event(e);
	e = tcm_expect(ch, RDMA_CM_EVENT_REJECTED);
	CHECK(e->status == 28);
	rdma_ack_cm_event(e);
	CHECK(rdma_destroy_id(c) == 0);
	*status = 0;
	return l;
}

int main(void)
{
	struct rdma_cm_id *l4, *l6, *x;
	int ret, st, fam, one = 1;
	char ns[64];

	alarm(60);
	snprintf(ns, sizeof(ns), "rdmacheck-ports-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);
	ch = rdma_create_event_channel();
	REQUIRE(ch);

	/* specific addresses of both families share a port */
	l4 = listener("127.0.0.1", PORT, -1);
	l6 = listener("::1", PORT, -1);
	CHECK(dial("127.0.0.1", PORT, &st, &fam) == l4 && fam == AF_INET);
	CHECK(dial("::1", PORT, &st, &fam) == l6 && fam == AF_INET6);
	/* a listener bound to another address: rejected by the consumer */
	CHECK(!dial("127.0.0.2", PORT, &st, &fam) && st == 28);
	CHECK(rdma_destroy_id(l6) == 0);
	/* only the other family listens on the port: 28 too */
	CHECK(!dial("::1", PORT, &st, &fam) && st == 28);
	CHECK(rdma_destroy_id(l4) == 0);
	/* nobody at all: invalid service ID */
	CHECK(!dial("::1", PORT, &st, &fam) && st == 8);
	printf("ports: specific addresses of both families: %s\n",
	       failures ? "FAIL" : "ok");

	/* an IPv6 wildcard takes IPv4 too ... */
	l6 = listener("::", PORT + 1, -1);
	x = bound("127.0.0.1", PORT + 1, -1, &ret);
	CHECK(ret == -1 && (errno == EADDRINUSE || errno == EADDRNOTAVAIL));
	CHECK(rdma_destroy_id(x) == 0);
	x = bound("0.0.0.0", PORT + 1, -1, &ret);
	CHECK(ret == -1 && errno == EADDRNOTAVAIL);
	CHECK(rdma_destroy_id(x) == 0);
	CHECK(dial("127.0.0.1", PORT + 1, &st, &fam) == l6 && fam == AF_INET);
	CHECK(dial("::1", PORT + 1, &st, &fam) == l6 && fam == AF_INET6);
	CHECK(rdma_set_option(l6, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
			      &one, sizeof(one)) == -1 && errno == EINVAL);
	CHECK(rdma_destroy_id(l6) == 0);
	/* ... and so does an IPv4 bind on the port of an IPv6 one */
	l4 = listener("0.0.0.0", PORT + 1, -1);
	x = bound("::1", PORT + 1, -1, &ret);
	CHECK(ret == -1 && (errno == EADDRINUSE || errno == EADDRNOTAVAIL));
	CHECK(rdma_destroy_id(x) == 0);
	CHECK(rdma_destroy_id(l4) == 0);
	printf("ports: IPv6 wildcard without AFONLY: %s\n",
	       failures ? "FAIL" : "ok");

	/* ... unless AFONLY: then the families are apart */
	l6 = listener("::", PORT + 2, 1);
	l4 = listener("0.0.0.0", PORT + 2, -1);
	CHECK(dial("127.0.0.1", PORT + 2, &st, &fam) == l4 && fam == AF_INET);
	CHECK(dial("::1", PORT + 2, &st, &fam) == l6 && fam == AF_INET6);
	CHECK(rdma_destroy_id(l4) == 0);
	CHECK(!dial("127.0.0.1", PORT + 2, &st, &fam) && st == 28);
	CHECK(rdma_destroy_id(l6) == 0);
	/* AFONLY 0 on IPv4: its wildcard takes IPv6 requests too */
	l4 = listener("0.0.0.0", PORT + 3, 0);
	CHECK(dial("::1", PORT + 3, &st, &fam) == l4 && fam == AF_INET6);
	CHECK(rdma_destroy_id(l4) == 0);
	REQUIRE(rdma_create_id(ch, &x, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_set_option(x, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
			      &one, 1) == -1 && errno == EINVAL);
	CHECK(rdma_destroy_id(x) == 0);
	printf("ports: AFONLY: %s\n", failures ? "FAIL" : "ok");

	rdma_destroy_event_channel(ch);
	if (failures)
		fprintf(stderr, "ports: %d failure(s)\n", failures);
	else
		printf("ports: ok\n");
	return failures ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * scn.c - the scenario programs' helpers (see scn.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scn.h"

const char *scn_mode(int argc, char **argv)
{
	/* A scenario that hangs is a failure, not a stuck suite. */
	alarm(30);
	setvbuf(stdout, NULL, _IONBF, 0);
	return argc < 2 ? "bad" : argv[1];
}

bool scn_bad(int argc, char **argv)
{
	const char *mode = scn_mode(argc, argv);

	if (!strcmp(mode, "bad"))
		return true;
	if (!strcmp(mode, "clean"))
		return false;
	fprintf(stderr, "usage: %s [bad|clean]\n", argv[0]);
	exit(2);
}

void scn_die(const char *what)
{
	fprintf(stderr, "scenario: %s failed: %s\n", what, strerror(errno));
	exit(99);
}

void scn_wait_syscall(int tid, long sysno, long alt, unsigned long lo,
		      unsigned long hi)
{
	unsigned long arg0;
	char path[64], buf[256];
	long nr;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	for (i = 0; i < 100000; i++) {
		f = fopen(path, "r");
		if (!f)
			scn_die("open /proc/self/task/TID/syscall");
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%ld %lx", &nr, &arg0) == 2 &&
		    (nr == sysno || (alt != -1 && nr == alt)) &&
		    (lo == hi || (arg0 >= lo && arg0 < hi))) {
			fclose(f);
			return;
		}
		fclose(f);
		sched_yield();
	}
	errno = ETIMEDOUT;
	scn_die("waiting for a thread to block");
}

struct rdma_event_channel *scn_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		scn_die("rdma_create_event_channel");
	return ch;
}

struct rdma_cm_id *scn_id(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		scn_die("rdma_create_id");
	return id;
}

const char *scn_addr_str(void)
{
	const char *a = getenv("RDMACHECK_TEST_ADDR");

	return a && *a ? a : "127.0.0.1";
}

void scn_addr(struct sockaddr_in *sin, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (inet_pton(AF_INET, scn_addr_str(), &sin->sin_addr) != 1) {
		fprintf(stderr, "scenario: RDMACHECK_TEST_ADDR '%s' is not "
			"an IPv4 address\n", scn_addr_str());
		exit(99);
	}
}

void scn_resolve(struct rdma_cm_id *id, int port)
{
	struct sockaddr_in sin;

	scn_addr(&sin, port);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000))
		scn_die("rdma_resolve_addr");
}

struct rdma_cm_event *scn_get(struct rdma_event_channel *ch, int want)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, 10000) != 1)
		scn_die("waiting for a cm event");
	if (rdma_get_cm_event(ch, &ev))
		scn_die("rdma_get_cm_event");
	if (want >= 0 && (int)ev->event != want) {
		fprintf(stderr, "scenario: got %s (status %d), wanted %s\n",
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(want));
		exit(99);
	}
	return ev;
}

void scn_ack(struct rdma_cm_event *ev)
{
	if (rdma_ack_cm_event(ev))
		scn_die("rdma_ack_cm_event");
}

struct rdma_addrinfo *scn_lookup(bool passive, int port)
{
	struct rdma_addrinfo hints, *res;
	char service[8];

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	snprintf(service, sizeof(service), "%d", port);
	if (rdma_getaddrinfo(scn_addr_str(), service, &hints, &res))
		scn_die("rdma_getaddrinfo");
	return res;
}

int scn_listen(struct rdma_cm_id *id)
{
	struct sockaddr_in sin;

	scn_addr(&sin, 0);
	if (rdma_bind_addr(id, (struct sockaddr *)&sin))
		scn_die("rdma_bind_addr");
	if (rdma_listen(id, 8))
		scn_die("rdma_listen");
	return ntohs(rdma_get_src_port(id));
}

struct rdma_cm_id *scn_connect(struct rdma_event_channel *lch,
			       struct rdma_cm_id *listener,
			       struct rdma_event_channel *cch,
			       struct rdma_cm_id *client)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;
	int port = scn_listen(listener);

	scn_resolve(client, port);
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(client, 2000))
		scn_die("rdma_resolve_route");
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	/*
	 * Neither side has a QP: each names a QP number of its own, or the
	 * real IB CM takes the pair (both QPN 0 on one device) for a stale
	 * connection and rejects it.
	 */
	memset(&param, 0, sizeof(param));
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.qp_num = SCN_CLIENT_QPN;
	if (rdma_connect(client, &param))
		scn_die("rdma_connect");
	ev = scn_get(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	param.qp_num = SCN_SERVER_QPN;
	if (rdma_accept(child, &param))
		scn_die("rdma_accept");
	scn_ack(ev);
	/* No QP on the active side: CONNECT_RESPONSE, then establish. */
	scn_ack(scn_get(cch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	if (rdma_establish(client))
		scn_die("rdma_establish");
	scn_ack(scn_get(lch, RDMA_CM_EVENT_ESTABLISHED));
	return child;
}

void scn_disconnect(struct rdma_event_channel *lch, struct rdma_cm_id *child,
		    struct rdma_event_channel *cch, struct rdma_cm_id *client)
{
	if (rdma_disconnect(client))
		scn_die("rdma_disconnect");
	scn_ack(scn_get(lch, RDMA_CM_EVENT_DISCONNECTED));
	/* the IB CM: the client's DISCONNECTED waits for the child's DREP */
	if (rdma_disconnect(child))
		scn_die("rdma_disconnect (child)");
	scn_ack(scn_get(cch, RDMA_CM_EVENT_DISCONNECTED));
}

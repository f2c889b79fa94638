/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/loopback-cm/peer_death.c: what the survivor of a connection gets
 * when the other process is killed (SIGKILL) at each stage, as from the
 * kernel's CM, which destroys a dead process's cm_ids and sends what
 * cm_destroy_id sends for each state:
 *
 *  - server killed holding a request (REQ_RCVD): REJECTED, 28 (consumer
 *    defined), to the client;
 *  - server killed after its accept (REP_SENT): the client gets its
 *    CONNECT_RESPONSE, then REJECTED 28;
 *  - client killed before the server took its request, or after it
 *    (REQ_SENT): CONNECT_REQUEST, then REJECTED 1 (timeout) on the new
 *    id, and rdma_accept on it fails;
 *  - client killed after the REP, before its RTU (REP_RCVD): REJECTED 28
 *    to the accepting server;
 *  - killed once established: DISCONNECTED (the DREQ);
 *  - killed while it owed the DREP of our rdma_disconnect: DISCONNECTED,
 *    status 0 (the DREP), not the DREQ timeout;
 *  - a UD server killed holding a SIDR request: UNREACHABLE, 1 (the SIDR
 *    REP "reject").
 *
 * One process per side (fork before any rdma_cm call); an alarm turns a
 * hang into a failure.
 */
#include <config.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <rdma/rdma_cma.h>

#include "../lib/tcheck.h"
#include "../lib/tcm.h"

#define PORT	7611

static struct rdma_event_channel *ch;
static int up[2], down[2];

static struct sockaddr_in addr_of(int port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

static struct rdma_cm_id *listener(int port, enum rdma_port_space ps)
{
	struct sockaddr_in sin = addr_of(port);
	struct rdma_cm_id *l;

	REQUIRE(rdma_create_id(ch, &l, NULL, ps) == 0);
	REQUIRE(rdma_bind_addr(l, (struct sockaddr *)&sin) == 0);
	REQUIRE(rdma_listen(l, 4) == 0);
	return l;
}

/* An id with its route to port, connected without a QP. */
static struct rdma_cm_id *dial(int port, enum rdma_port_space ps)
{
	struct sockaddr_in sin = addr_of(port);

	return tcm_dial(ch, ps, (struct sockaddr *)&sin);
}

static void accept_noqp(struct rdma_cm_id *id)
{
	struct rdma_conn_param param;

	memset(&param, 0, sizeof(param));
	param.qp_num = 0x43;
	REQUIRE(rdma_accept(id, &param) == 0);
}

static void say(int fd)
{
	REQUIRE(write(fd, "x", 1) == 1);
}

static void hear(int fd)
{
	char c;

	REQUIRE(read(fd, &c, 1) == 1);
}

static void die(void)
{
	raise(SIGKILL);
	_exit(9);
}

/* The next event, of type t and status st. */
static struct rdma_cm_event *expect(enum rdma_cm_event_type t, int st)
{
	struct rdma_cm_event *e = tcm_expect(ch, t);

	if (e->status != st) {
		fprintf(stderr, "FAIL: %s status %d, want %d\n",
			rdma_event_str(t), e->status, st);
		failures++;
	}
	return e;
}

enum stage {
	SRV_HOLDS_REQ,		/* server dies with the CONNECT_REQUEST */
	SRV_ACCEPTED,		/* server dies after rdma_accept */
	CLI_REQ_QUEUED,		/* client dies before the server takes it */
	CLI_REQ_TAKEN,		/* client dies after the server took it */
	CLI_REP_RCVD,		/* client dies with the REP, before its RTU */
	CLI_ESTABLISHED,	/* client dies once established */
	CLI_OWES_DREP,		/* client dies owing the DREP */
	UD_SRV_HOLDS_REQ,	/* UD server dies with the SIDR request */
};

static const char *const names[] = {
	"server killed holding the request",
	"server killed after accepting",
	"client killed before its request was taken",
	"client killed after its request was taken",
	"client killed before its RTU",
	"client killed once established",
	"client killed owing the DREP",
	"UD server killed holding the SIDR request",
};

/* The process that dies, at stage s. */
static void victim(enum stage s, int port)
{
	enum rdma_port_space ps = s == UD_SRV_HOLDS_REQ ? RDMA_PS_UDP :
		RDMA_PS_TCP;
	struct rdma_cm_event *e;
	struct rdma_cm_id *c;

	ch = rdma_create_event_channel();
	REQUIRE(ch);
	switch (s) {
	case SRV_HOLDS_REQ:
	case SRV_ACCEPTED:
	case UD_SRV_HOLDS_REQ:
		listener(port, ps);
		say(up[1]);
		e = tcm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		if (s == SRV_ACCEPTED)
			accept_noqp(e->id);
		die();
		break;
	default:
		hear(down[0]);		/* the server listens */
		c = dial(port, ps);
		if (s == CLI_REQ_QUEUED)
			die();
		if (s == CLI_REQ_TAKEN) {
			hear(down[0]);
			die();
		}
		tcm_expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE);
		if (s == CLI_REP_RCVD)
			die();
		REQUIRE(rdma_establish(c) == 0);
		if (s == CLI_ESTABLISHED) {
			hear(down[0]);
			die();
		}
		tcm_expect(ch, RDMA_CM_EVENT_DISCONNECTED);
		die();
	}
	_exit(8);
}

static void reap(pid_t pid)
{
	int status;

	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* The survivor of stage s, its peer being pid. */
static void survivor(enum stage s, int port, pid_t pid)
{
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;

	ch = rdma_create_event_channel();
	REQUIRE(ch);
	switch (s) {
	case SRV_HOLDS_REQ:
	case SRV_ACCEPTED:
		hear(up[0]);
		dial(port, RDMA_PS_TCP);
		reap(pid);
		if (s == SRV_ACCEPTED)
			rdma_ack_cm_event(tcm_expect(ch,
					RDMA_CM_EVENT_CONNECT_RESPONSE));
		rdma_ack_cm_event(expect(RDMA_CM_EVENT_REJECTED, 28));
		break;
	case UD_SRV_HOLDS_REQ:
		hear(up[0]);
		dial(port, RDMA_PS_UDP);
		reap(pid);
		rdma_ack_cm_event(expect(RDMA_CM_EVENT_UNREACHABLE, 1));
		break;
	case CLI_REQ_QUEUED:
	case CLI_REQ_TAKEN:
		listener(port, RDMA_PS_TCP);
		say(down[1]);
		if (s == CLI_REQ_QUEUED)
			reap(pid);
		e = tcm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		id = e->id;
		rdma_ack_cm_event(e);
		if (s == CLI_REQ_TAKEN) {
			say(down[1]);
			reap(pid);
		}
		rdma_ack_cm_event(expect(RDMA_CM_EVENT_REJECTED, 1));
		{
			struct rdma_conn_param param;

			memset(&param, 0, sizeof(param));
			param.qp_num = 0x43;
			CHECK(rdma_accept(id, &param) == -1);
		}
		break;
	case CLI_REP_RCVD:
	case CLI_ESTABLISHED:
	case CLI_OWES_DREP:
		listener(port, RDMA_PS_TCP);
		say(down[1]);
		e = tcm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		id = e->id;
		rdma_ack_cm_event(e);
		accept_noqp(id);
		if (s == CLI_REP_RCVD) {
			reap(pid);
			rdma_ack_cm_event(expect(RDMA_CM_EVENT_REJECTED, 28));
			break;
		}
		rdma_ack_cm_event(tcm_expect(ch, RDMA_CM_EVENT_ESTABLISHED));
		if (s == CLI_ESTABLISHED) {
			say(down[1]);
			reap(pid);
		} else {
			REQUIRE(rdma_disconnect(id) == 0);
			reap(pid);
		}
		rdma_ack_cm_event(expect(RDMA_CM_EVENT_DISCONNECTED, 0));
		break;
	}
}

static void run(enum stage s)
{
	int port = PORT + s, before = failures;
	pid_t pid;

	REQUIRE(pipe(up) == 0 && pipe(down) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		victim(s, port);
	survivor(s, port, pid);
	printf("peer_death: %s: %s\n", names[s],
	       failures > before ? "FAIL" : "ok");
	fflush(stdout);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
}

/* argv[1]: only that stage (by number) */
int main(int argc, char **argv)
{
	char ns[64];
	int s;

	alarm(120);
	snprintf(ns, sizeof(ns), "rdmacheck-peerdeath-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);
	for (s = SRV_HOLDS_REQ; s <= UD_SRV_HOLDS_REQ; s++)
		if (argc < 2 || atoi(argv[1]) == s)
			run(s);
	if (failures)
		fprintf(stderr, "peer_death: %d failure(s)\n", failures);
	else
		printf("peer_death: ok\n");
	return failures ? 1 : 0;
}

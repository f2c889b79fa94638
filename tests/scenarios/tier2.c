/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tier2.c - scenarios for the rules beyond the tier-1 ledger that the shim
 * checks today.  argv[1] names the rule to break (the function that breaks
 * it has the same name, with '_' for '-'), or "clean" for the twin that
 * does the same work correctly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/rdma_verbs.h>
#include "scn.h"

static struct rdma_event_channel *ch;

static void qp_attr(struct ibv_qp_init_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_type = IBV_QPT_RC;
	attr->cap.max_send_wr = attr->cap.max_recv_wr = 2;
	attr->cap.max_send_sge = attr->cap.max_recv_sge = 1;
}

/* An id bound to the device (ADDR_RESOLVED acked). */
static struct rdma_cm_id *resolved_id(void)
{
	struct rdma_cm_id *id = scn_id(ch);

	scn_resolve(id, 7471);
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	return id;
}

/* A synchronous id that has resolved an address: id->event is set. */
static struct rdma_cm_id *sync_id(void)
{
	struct sockaddr_in sin;
	struct rdma_cm_id *id;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		scn_die("rdma_create_id(NULL)");
	scn_addr(&sin, 7471);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000))
		scn_die("rdma_resolve_addr (sync)");
	return id;
}

static NOINLINE void ack_library_owned_event(bool bad)
{
	struct rdma_cm_id *id = sync_id();

	if (bad)
		rdma_ack_cm_event(id->event);
	rdma_destroy_id(id);
}

static NOINLINE void get_event_on_private_channel(bool bad)
{
	struct rdma_cm_id *id = sync_id();
	struct rdma_cm_event *ev;

	if (bad) {
		/* Non-blocking, so the stolen wait returns at once. */
		fcntl(id->channel->fd, F_SETFL, O_NONBLOCK);
		if (rdma_get_cm_event(id->channel, &ev) == 0)
			rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);
}

static NOINLINE void destroy_private_channel(bool bad)
{
	struct rdma_cm_id *id = sync_id();

	if (bad)
		rdma_destroy_event_channel(id->channel);
	rdma_destroy_id(id);
}

static NOINLINE void migrate_sync_to_sync(bool bad)
{
	struct rdma_cm_id *id = sync_id();

	if (bad && rdma_migrate_id(id, NULL) != -1)
		exit(98);
	rdma_destroy_id(id);
}

static NOINLINE void get_request_on_async_listener(bool bad)
{
	struct rdma_cm_id *listener = scn_id(ch), *child;

	scn_listen(listener);
	if (bad && rdma_get_request(listener, &child) != -1)
		exit(98);
	rdma_destroy_id(listener);
}

static NOINLINE void create_qp_twice(bool bad)
{
	struct rdma_cm_id *id = resolved_id();
	struct ibv_qp_init_attr attr;

	qp_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
	if (bad && rdma_create_qp(id, NULL, &attr) != -1)
		exit(98);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static NOINLINE void create_qp_unbound(bool bad)
{
	struct rdma_cm_id *id = bad ? scn_id(ch) : resolved_id();
	struct ibv_qp_init_attr attr;

	qp_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr) == 0)
		rdma_destroy_qp(id);
	else if (!bad)
		scn_die("rdma_create_qp");
	rdma_destroy_id(id);
}

static NOINLINE void destroy_qp_without_qp(bool bad)
{
	struct rdma_cm_id *id = resolved_id();
	struct ibv_qp_init_attr attr;

	qp_attr(&attr);
	if (!bad && rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static NOINLINE void endpoint_destroyed_with_destroy_id(bool bad)
{
	struct rdma_addrinfo *res = scn_lookup(true, 0);
	struct rdma_cm_id *id;

	if (rdma_create_ep(&id, res, NULL, NULL))
		scn_die("rdma_create_ep");
	rdma_freeaddrinfo(res);
	if (bad)
		rdma_destroy_id(id);
	else
		rdma_destroy_ep(id);
}

static NOINLINE void library_object_destroyed_by_user(bool bad)
{
	struct rdma_cm_id *id = resolved_id();
	struct ibv_qp_init_attr attr;

	qp_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
	if (bad)
		ibv_destroy_qp(id->qp);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static NOINLINE void request_rejected_not_destroyed(bool bad)
{
	struct rdma_event_channel *cch = scn_channel();
	struct rdma_cm_id *listener = scn_id(ch), *client = scn_id(cch);
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;

	scn_resolve(client, scn_listen(listener));
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(client, 2000))
		scn_die("rdma_resolve_route");
	scn_ack(scn_get(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	if (rdma_connect(client, &param))
		scn_die("rdma_connect");
	ev = scn_get(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (rdma_reject(ev->id, NULL, 0))
		scn_die("rdma_reject");
	if (!bad)
		rdma_destroy_id(ev->id);
	scn_ack(ev);
	scn_ack(scn_get(cch, RDMA_CM_EVENT_REJECTED));
	rdma_destroy_id(client);
	rdma_destroy_event_channel(cch);
	if (!bad)
		rdma_destroy_id(listener);
	/* bad: the rejected id (and so its listener) stays */
}

static NOINLINE void use_after_fork(bool bad)
{
	struct rdma_cm_id *id = scn_id(ch);
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		scn_die("fork");
	if (pid == 0) {
		/* The child's report is the one the test reads. */
		if (bad)
			rdma_resolve_addr(id, NULL, NULL, 0);
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		scn_die("waitpid");
	if (bad)
		_exit(WEXITSTATUS(status));	/* leave the child's report */
	rdma_destroy_id(id);
}

static NOINLINE void double_destroy_qp(bool bad)
{
	struct rdma_cm_id *id = resolved_id();
	struct ibv_qp_init_attr attr;
	struct ibv_qp *qp;

	qp_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
	qp = id->qp;
	if (bad) {
		/* Twice: the second would free freed memory. */
		if (ibv_destroy_qp(qp) || ibv_destroy_qp(qp) != EINVAL)
			exit(98);
	} else {
		rdma_destroy_qp(id);
	}
	rdma_destroy_id(id);
}

static NOINLINE void resolve_route_unbound(bool bad)
{
	struct rdma_cm_id *id = scn_id(ch);

	scn_resolve(id, 7471);
	/* Bad: ADDR_RESOLVED not retrieved yet, the id has no device. */
	if (bad && (rdma_resolve_route(id, 2000) != -1 || errno != EINVAL))
		exit(98);
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		scn_die("rdma_resolve_route");
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	rdma_destroy_id(id);
}

static NOINLINE void connect_unbound(bool bad)
{
	struct rdma_cm_id *id = scn_id(ch);
	struct rdma_conn_param param;

	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	/* Bad: nothing resolved; clean: connect to nobody (REJECTED). */
	if (bad && (rdma_connect(id, &param) != -1 || errno != EINVAL))
		exit(98);
	if (!bad) {
		scn_resolve(id, 7471);
		scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(id, 2000))
			scn_die("rdma_resolve_route");
		scn_ack(scn_get(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
		if (rdma_connect(id, &param))
			scn_die("rdma_connect");
		scn_ack(scn_get(ch, -1));
	}
	rdma_destroy_id(id);
}

/* A listener on ch and a client on its own channel; returns the child. */
static struct rdma_cm_id *request(struct rdma_cm_id **listener,
				  struct rdma_event_channel **cch,
				  struct rdma_cm_id **client)
{
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;
	int port;

	*listener = scn_id(ch);
	port = scn_listen(*listener);
	*cch = scn_channel();
	*client = scn_id(*cch);
	scn_resolve(*client, port);
	scn_ack(scn_get(*cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(*client, 2000))
		scn_die("rdma_resolve_route");
	scn_ack(scn_get(*cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	param.qp_num = SCN_CLIENT_QPN;	/* QP-less: see scn_connect */
	if (rdma_connect(*client, &param))
		scn_die("rdma_connect");
	ev = scn_get(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	scn_ack(ev);
	return child;
}

static NOINLINE void accept_without_qp(bool bad)
{
	struct rdma_cm_id *listener, *client, *child;
	struct rdma_event_channel *cch;
	struct rdma_conn_param param;

	child = request(&listener, &cch, &client);
	memset(&param, 0, sizeof(param));
	param.responder_resources = param.initiator_depth = 1;
	param.qp_num = SCN_SERVER_QPN;
	/* Bad: neither conn_param nor a QP. */
	if (bad && (rdma_accept(child, NULL) != -1 || errno != EINVAL))
		exit(98);
	if (rdma_accept(child, &param))
		scn_die("rdma_accept");
	scn_ack(scn_get(cch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	if (rdma_establish(client))
		scn_die("rdma_establish");
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ESTABLISHED));
	scn_disconnect(ch, child, cch, client);
	rdma_destroy_id(child);
	rdma_destroy_id(client);
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(cch);
}

/*
 * rdma_establish is for an active side that manages its QP itself (no
 * rdma_create_qp): with id->qp set librdmacm refuses it (EINVAL), having
 * already moved the QP to RTS and sent the RTU itself.
 */
static NOINLINE void establish_with_qp(bool bad)
{
	struct rdma_cm_id *id = resolved_id();
	struct ibv_qp_init_attr attr;

	qp_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
	/* Bad: the id has a QP. */
	if (bad && (rdma_establish(id) != -1 || errno != EINVAL))
		exit(98);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

/* The fast path of rdma_get_cm_event checks the owner process too. */
static NOINLINE void get_event_after_fork(bool bad)
{
	struct rdma_cm_id *id = scn_id(ch);
	struct rdma_cm_event *ev;
	int status;
	pid_t pid;

	scn_resolve(id, 7471);	/* ADDR_RESOLVED waits on ch, unfetched */
	pid = fork();
	if (pid < 0)
		scn_die("fork");
	if (pid == 0) {
		/* The child's report is the one the test reads; the kernel
		 * would refuse (EACCES), the loopback hands the event out. */
		if (bad && !rdma_get_cm_event(ch, &ev))
			rdma_ack_cm_event(ev);
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		scn_die("waitpid");
	if (bad)
		_exit(WEXITSTATUS(status));	/* leave the child's report */
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	rdma_destroy_id(id);
}

static void make_srq(struct rdma_cm_id *id)
{
	struct ibv_srq_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.attr.max_wr = 4;
	attr.attr.max_sge = 1;
	if (rdma_create_srq(id, NULL, &attr))
		scn_die("rdma_create_srq");
}

static NOINLINE void id_destroy_with_srq(bool bad)
{
	struct rdma_cm_id *id = resolved_id();

	make_srq(id);
	if (!bad)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

static NOINLINE void destroy_srq_without_srq(bool bad)
{
	struct rdma_cm_id *id = resolved_id();

	if (!bad)
		make_srq(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

static NOINLINE void destroy_srq_before_qp(bool bad)
{
	struct rdma_cm_id *id = resolved_id();
	struct ibv_qp_init_attr attr;

	make_srq(id);
	qp_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
	if (!bad)
		rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	if (bad)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static NOINLINE void leak_srq(bool bad)
{
	struct rdma_cm_id *id = resolved_id();

	make_srq(id);
	if (bad)
		return;		/* id and SRQ stay */
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

static const struct {
	const char *rule;
	void (*run)(bool bad);
} scenarios[] = {
	{ "ack-library-owned-event", ack_library_owned_event },
	{ "get-event-on-private-channel", get_event_on_private_channel },
	{ "destroy-private-channel", destroy_private_channel },
	{ "migrate-sync-to-sync", migrate_sync_to_sync },
	{ "get-request-on-async-listener", get_request_on_async_listener },
	{ "create-qp-twice", create_qp_twice },
	{ "create-qp-unbound", create_qp_unbound },
	{ "destroy-qp-without-qp", destroy_qp_without_qp },
	{ "endpoint-destroyed-with-destroy-id",
	  endpoint_destroyed_with_destroy_id },
	{ "library-object-destroyed-by-user",
	  library_object_destroyed_by_user },
	{ "request-rejected-not-destroyed", request_rejected_not_destroyed },
	{ "use-after-fork", use_after_fork },
	{ "use-after-fork-get-event", get_event_after_fork },
	{ "resolve-route-unbound", resolve_route_unbound },
	{ "double-destroy-qp", double_destroy_qp },
	{ "connect-unbound", connect_unbound },
	{ "accept-without-qp", accept_without_qp },
	{ "establish-with-qp", establish_with_qp },
	{ "id-destroy-with-srq", id_destroy_with_srq },
	{ "destroy-srq-without-srq", destroy_srq_without_srq },
	{ "destroy-srq-before-qp", destroy_srq_before_qp },
	{ "leak-srq", leak_srq },
};

int main(int argc, char **argv)
{
	char *clean[] = { argv[0], "clean" };
	unsigned i;
	bool all;

	if (argc < 2) {
		fprintf(stderr, "usage: %s RULE|clean\n", argv[0]);
		return 2;
	}
	all = !strcmp(argv[1], "clean");
	scn_bad(2, clean);
	ch = scn_channel();
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (all || !strcmp(argv[1], scenarios[i].rule))
			scenarios[i].run(!all);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/loopback-cm/fork.c: fork() under a busy loopback backend.
 *
 * (a) A parent with threads busy in CM calls (connect, accept, disconnect,
 * destroy; resolve and destroy) and in verbs calls (PDs, MRs, CQs, QPs),
 * the progress threads active, forks many children that each use the
 * library a little on their own channel and exit through the library's
 * destructors: every child must finish (none may inherit a lock that some
 * other thread held at fork).
 *
 * (b) As the kernel's ucma refuses a command written to an rdma_cm file
 * opened under other credentials (a fork child's), every call of a child
 * on the parent's channels and ids fails with EACCES, steals none of the
 * parent's events and leaves the parent's ids and connections alone,
 * while the child's own channels and ids work.
 *
 * Runs against the in-tree librdmacm.la; children have a deadline, an
 * alarm bounds the whole test.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <rdma/rdma_cma.h>

#include "../lib/tcheck.h"
#include "../lib/tcm.h"

#define NCHILD		300
#define DEADLINE_S	20

static volatile int stop;

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

static int nothing_pending(struct rdma_event_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;
}

static struct rdma_cm_id *resolved(struct rdma_event_channel *ch, int port)
{
	struct sockaddr_in dst = addr("127.0.0.1", port);
	struct rdma_cm_id *id;

	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst,
				  2000) == 0);
	rdma_ack_cm_event(tcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	REQUIRE(rdma_resolve_route(id, 2000) == 0);
	rdma_ack_cm_event(tcm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	return id;
}

struct conn {
	struct rdma_event_channel *lch, *cch;
	struct rdma_cm_id *l, *c, *child;
	struct rdma_cm_event *req;
};

/* Connect a fresh active id to the listener l, without QPs. */
static void connect_pair(struct conn *k, int port)
{
	struct rdma_conn_param param = { .responder_resources = 1,
					 .initiator_depth = 1,
					 .qp_num = 0x42 };

	k->c = resolved(k->cch, port);
	REQUIRE(rdma_connect(k->c, &param) == 0);
	k->req = tcm_expect(k->lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	k->child = k->req->id;
	REQUIRE(rdma_accept(k->child, &param) == 0);
	rdma_ack_cm_event(tcm_expect(k->cch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	REQUIRE(rdma_establish(k->c) == 0);
	rdma_ack_cm_event(tcm_expect(k->lch, RDMA_CM_EVENT_ESTABLISHED));
}

/* Disconnect as the IB CM wants it: both sides, then destroy. */
static void close_pair(struct conn *k)
{
	REQUIRE(rdma_disconnect(k->c) == 0);
	rdma_ack_cm_event(tcm_expect(k->lch, RDMA_CM_EVENT_DISCONNECTED));
	REQUIRE(rdma_disconnect(k->child) == 0);
	rdma_ack_cm_event(tcm_expect(k->cch, RDMA_CM_EVENT_DISCONNECTED));
	REQUIRE(rdma_destroy_id(k->child) == 0);
	rdma_ack_cm_event(k->req);
	REQUIRE(rdma_destroy_id(k->c) == 0);
}

static void *cm_connect_thread(void *arg)
{
	int port = *(int *)arg;
	struct sockaddr_in sin = addr("127.0.0.1", port);
	struct conn k;

	REQUIRE((k.lch = rdma_create_event_channel()));
	REQUIRE((k.cch = rdma_create_event_channel()));
	REQUIRE(rdma_create_id(k.lch, &k.l, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_bind_addr(k.l, (struct sockaddr *)&sin) == 0);
	REQUIRE(rdma_listen(k.l, 0) == 0);
	while (!stop) {
		connect_pair(&k, port);
		close_pair(&k);
	}
	REQUIRE(rdma_destroy_id(k.l) == 0);
	rdma_destroy_event_channel(k.lch);
	rdma_destroy_event_channel(k.cch);
	return NULL;
}

static void *cm_resolve_thread(void *arg)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	(void)arg;
	REQUIRE(ch);
	while (!stop) {
		id = resolved(ch, 9);
		REQUIRE(rdma_destroy_id(id) == 0);
	}
	rdma_destroy_event_channel(ch);
	return NULL;
}

static void *verbs_thread(void *arg)
{
	struct ibv_context *ctx = arg;
	struct ibv_qp_init_attr qa;
	struct ibv_comp_channel *cc;
	static char buf[4096];
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	while (!stop) {
		REQUIRE((pd = ibv_alloc_pd(ctx)));
		REQUIRE((mr = ibv_reg_mr(pd, buf, sizeof(buf),
					 IBV_ACCESS_LOCAL_WRITE)));
		REQUIRE((cc = ibv_create_comp_channel(ctx)));
		REQUIRE((cq = ibv_create_cq(ctx, 4, NULL, cc, 0)));
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = cq;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		qa.qp_type = IBV_QPT_RC;
		REQUIRE((qp = ibv_create_qp(pd, &qa)));
		REQUIRE(ibv_destroy_qp(qp) == 0);
		REQUIRE(ibv_destroy_cq(cq) == 0);
		REQUIRE(ibv_destroy_comp_channel(cc) == 0);
		REQUIRE(ibv_dereg_mr(mr) == 0);
		REQUIRE(ibv_dealloc_pd(pd) == 0);
	}
	return NULL;
}

/*
 * The child's share: its own channel and id work; the parent's channel
 * pch and id pid are refused with EACCES.  Exits 0 on success.
 */
static void child_main(struct rdma_event_channel *pch,
		       struct rdma_cm_id *pid)
{
	struct sockaddr_in dst = addr("127.0.0.1", 9);
	struct rdma_event_channel *ch;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	int bad = 0;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) ||
	    rdma_get_cm_event(ch, &e) ||
	    e->event != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_ack_cm_event(e) || rdma_destroy_id(id))
		_exit(2);
	rdma_destroy_event_channel(ch);
	errno = 0;
	bad |= rdma_get_cm_event(pch, &e) != -1 || errno != EACCES;
	errno = 0;
	bad |= rdma_create_id(pch, &id, NULL, RDMA_PS_TCP) != -1 ||
	       errno != EACCES;
	errno = 0;
	bad |= rdma_destroy_id(pid) != -1 || errno != EACCES;
	exit(bad ? 3 : 0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_busy_fork(void)
{
	struct rdma_event_channel *pch = rdma_create_event_channel();
	struct ibv_context **devs;
	pthread_t t[4];
	struct rdma_cm_id *pid;
	pid_t kids[NCHILD];
	int port = 7480, i, n, ok = 0, failed = 0, done = 0;
	sigset_t set;
	double end;

	REQUIRE(pch && rdma_create_id(pch, &pid, NULL, RDMA_PS_TCP) == 0);
	devs = rdma_get_devices(&n);
	REQUIRE(devs && n == 1);
	/* children are reaped through SIGCHLD, taken synchronously */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	REQUIRE(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
	REQUIRE(pthread_create(&t[0], NULL, cm_connect_thread, &port) == 0);
	REQUIRE(pthread_create(&t[1], NULL, cm_resolve_thread, NULL) == 0);
	REQUIRE(pthread_create(&t[2], NULL, verbs_thread, devs[0]) == 0);
	REQUIRE(pthread_create(&t[3], NULL, verbs_thread, devs[0]) == 0);

	fflush(stdout);
	for (i = 0; i < NCHILD; i++) {
		kids[i] = fork();
		REQUIRE(kids[i] >= 0);
		if (!kids[i])
			child_main(pch, pid);
	}
	end = now() + DEADLINE_S;
	while (done < NCHILD) {
		struct timespec ts;
		double left = end - now();
		int st;
		pid_t w;

		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			done++;
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
				ok++;
			} else {
				failed++;
				fprintf(stderr, "child %d: status 0x%x\n",
					(int)w, st);
			}
		}
		if (done == NCHILD || left <= 0)
			break;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
		sigtimedwait(&set, NULL, &ts);
	}
	printf("fork: %d of %d children finished (%d ok, %d failed), "
	       "%d hung\n", done, NCHILD, ok, failed, NCHILD - done);
	CHECK(ok == NCHILD);
	for (i = 0; i < NCHILD; i++)
		kill(kids[i], SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	rdma_free_devices(devs);
	CHECK(rdma_destroy_id(pid) == 0);
	rdma_destroy_event_channel(pch);
}

/* Exit status of a child: 0, or the line of the first check failed. */
#define KID_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "child: %s:%d: %s (errno %d)\n",	\
			__FILE__, __LINE__, #cond, errno);		\
		_exit(1);						\
	}								\
} while (0)

#define REFUSED(call) do {						\
	errno = 0;							\
	KID_CHECK((call) == -1 && errno == EACCES);			\
} while (0)

static void inherited_child(struct conn *k, struct rdma_event_channel *pch,
			    struct rdma_cm_id *queued)
{
	struct sockaddr_in dst = addr("127.0.0.1", 9);
	struct sockaddr_in grp = addr("239.1.1.1", 0);
	struct rdma_event_channel *ch;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	struct ibv_qp_attr qa;
	struct conn own;
	int mask, one = 1;

	/* the parent's channels: no event taken, no id made */
	REFUSED(rdma_get_cm_event(pch, &e));
	REFUSED(rdma_get_cm_event(k->lch, &e));
	REFUSED(rdma_create_id(pch, &id, NULL, RDMA_PS_TCP));
	/* the parent's ids: no command reaches them */
	REFUSED(rdma_bind_addr(queued, (struct sockaddr *)&dst));
	REFUSED(rdma_resolve_addr(queued, NULL, (struct sockaddr *)&dst,
				  2000));
	REFUSED(rdma_resolve_route(k->c, 2000));
	REFUSED(rdma_listen(k->l, 0));
	REFUSED(rdma_connect(k->c, NULL));
	REFUSED(rdma_accept(k->child, NULL));
	REFUSED(rdma_reject(k->child, NULL, 0));
	REFUSED(rdma_establish(k->c));
	REFUSED(rdma_notify(k->c, IBV_EVENT_COMM_EST));
	qa.qp_state = IBV_QPS_INIT;
	REFUSED(rdma_init_qp_attr(k->c, &qa, &mask));
	REFUSED(rdma_set_option(k->c, RDMA_OPTION_ID,
				RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	REFUSED(rdma_join_multicast(k->c, (struct sockaddr *)&grp, NULL));
	REFUSED(rdma_disconnect(k->c));
	REFUSED(rdma_disconnect(k->child));
	REFUSED(rdma_destroy_id(k->child));
	REFUSED(rdma_destroy_id(queued));
	/* its own channel and ids work, up to a connection of its own */
	KID_CHECK((ch = rdma_create_event_channel()));
	REFUSED(rdma_migrate_id(k->c, ch));
	KID_CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REFUSED(rdma_migrate_id(id, pch));
	KID_CHECK(rdma_destroy_id(id) == 0);
	rdma_destroy_event_channel(ch);
	own.lch = rdma_create_event_channel();
	own.cch = rdma_create_event_channel();
	KID_CHECK(own.lch && own.cch);
	dst = addr("127.0.0.1", 7482);
	KID_CHECK(rdma_create_id(own.lch, &own.l, NULL, RDMA_PS_TCP) == 0);
	KID_CHECK(rdma_bind_addr(own.l, (struct sockaddr *)&dst) == 0);
	KID_CHECK(rdma_listen(own.l, 0) == 0);
	connect_pair(&own, 7482);
	close_pair(&own);
	KID_CHECK(rdma_destroy_id(own.l) == 0);
	rdma_destroy_event_channel(own.lch);
	rdma_destroy_event_channel(own.cch);
	exit(0);
}

/* (b): a child's calls on the parent's channels and ids. */
static void test_inherited(void)
{
	struct sockaddr_in sin = addr("127.0.0.1", 7481);
	struct sockaddr_in dst = addr("127.0.0.1", 9);
	struct rdma_event_channel *pch = rdma_create_event_channel();
	struct rdma_cm_id *queued;
	struct rdma_cm_event *e;
	struct conn k;
	pid_t kid;
	int st;

	REQUIRE(pch && (k.lch = rdma_create_event_channel()) &&
		(k.cch = rdma_create_event_channel()));
	REQUIRE(rdma_create_id(k.lch, &k.l, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_bind_addr(k.l, (struct sockaddr *)&sin) == 0);
	REQUIRE(rdma_listen(k.l, 0) == 0);
	connect_pair(&k, 7481);
	/* an event waiting on the parent's channel at fork */
	REQUIRE(rdma_create_id(pch, &queued, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_resolve_addr(queued, NULL, (struct sockaddr *)&dst,
				  2000) == 0);

	fflush(stdout);
	kid = fork();
	REQUIRE(kid >= 0);
	if (!kid)
		inherited_child(&k, pch, queued);
	REQUIRE(waitpid(kid, &st, 0) == kid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* the event is still the parent's, its connection still up */
	e = tcm_expect(pch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(e->id == queued);
	rdma_ack_cm_event(e);
	CHECK(nothing_pending(pch));
	CHECK(nothing_pending(k.lch) && nothing_pending(k.cch));
	close_pair(&k);
	connect_pair(&k, 7481);
	close_pair(&k);
	CHECK(rdma_destroy_id(queued) == 0);
	CHECK(rdma_destroy_id(k.l) == 0);
	rdma_destroy_event_channel(pch);
	rdma_destroy_event_channel(k.lch);
	rdma_destroy_event_channel(k.cch);
}

int main(void)
{
	char ns[64];

	alarm(90);
	snprintf(ns, sizeof(ns), "rdmacheck-fork-%d", (int)getpid());
	setenv("RDMACHECK_LOOPBACK_NS", ns, 1);
	test_busy_fork();
	test_inherited();
	if (failures)
		fprintf(stderr, "fork: %d failure(s)\n", failures);
	else
		printf("fork: ok\n");
	return failures ? 1 : 0;
}

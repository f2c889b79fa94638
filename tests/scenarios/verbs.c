/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * verbs.c - scenarios for the libibverbs rules (tier 4, and tier 3's
 * verbs and descriptor rules).  argv[1] names the rule to break (the
 * function that breaks it has the same name, with '_' for '-'), RULE:clean
 * runs that function's clean twin (the same work, correctly), and "clean"
 * runs every clean twin (but those by_name() keeps for their own runs).
 *
 * Completion events come from a QP in the error state: a receive posted
 * there completes at once (flushed), and an armed CQ gets an event.  Async
 * events from a QP on an SRQ going to the error state
 * (IBV_EVENT_QP_LAST_WQE_REACHED).  Objects that have to outlive the
 * scenario's own are made on the device context and PD librdmacm keeps
 * for an id, which are the library's, never the program's leaks.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_verbs.h>
#include "scn.h"

static bool bad;

/* The device cannot make this object: a skip when it is the scenario's
 * point, nothing to do for the clean twins. */
static bool unsupported(const char *what)
{
	if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
		return false;
	fprintf(stderr, "scenario: %s: not supported here\n", what);
	return true;
}

/* An id bound to a device: its id->verbs and id->pd are librdmacm's. */
static struct rdma_cm_id *lib_id(struct rdma_event_channel **ch)
{
	struct rdma_cm_id *id;

	*ch = scn_channel();
	id = scn_id(*ch);
	scn_resolve(id, 7471);
	scn_ack(scn_get(*ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	return id;
}

static void drop_lib_id(struct rdma_event_channel *ch, struct rdma_cm_id *id)
{
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
}

/* The first device, opened by the program itself. */
static struct ibv_context *open_ctx(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		scn_die("ibv_get_device_list");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		scn_die("ibv_open_device");
	return ctx;
}

static void close_ctx(struct ibv_context *ctx)
{
	if (ibv_close_device(ctx))
		scn_die("ibv_close_device");
}

static struct ibv_pd *alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	if (!pd)
		scn_die("ibv_alloc_pd");
	return pd;
}

static struct ibv_cq *make_cq(struct ibv_context *ctx,
			      struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, ch, 0);

	if (!cq)
		scn_die("ibv_create_cq");
	return cq;
}

/*
 * An RC QP on cq (and srq), in the error state: through INIT, as RESET to
 * ERR is not a transition the kernel allows.
 */
static struct ibv_qp *err_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			     struct ibv_srq *srq)
{
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp_init_attr qa;
	struct ibv_qp *qp;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	if (!qp || ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
	    ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		scn_die("ibv_create_qp/ibv_modify_qp(INIT, ERR)");
	return qp;
}

/*
 * One completion event for cq (qp's send CQ; qp in the error state) on
 * its channel: a send, flushed.  Not a receive: rxe's receive queue lives
 * in user space, and its kernel side flushes only what it sees when
 * traffic or a state change wakes it, so a receive posted in ERR never
 * completes there.
 */
static void make_event(struct ibv_qp *qp, struct ibv_cq *cq)
{
	struct ibv_send_wr wr, *badwr;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_req_notify_cq(cq, 0) || ibv_post_send(qp, &wr, &badwr))
		scn_die("ibv_req_notify_cq/ibv_post_send");
	while (ibv_poll_cq(cq, 1, &wc) == 0)
		;
}

static struct ibv_cq *get_event(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(ch, &cq, &ctx))
		scn_die("ibv_get_cq_event");
	return cq;
}

/* A fetched completion event for a CQ on a channel. */
struct evq {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void evq_make(struct evq *e, struct ibv_context *ctx,
		     struct ibv_pd *pd)
{
	e->ctx = ctx;
	e->pd = pd;
	e->ch = ibv_create_comp_channel(ctx);
	if (!e->ch)
		scn_die("ibv_create_comp_channel");
	e->cq = make_cq(ctx, e->ch);
	e->qp = err_qp(pd, e->cq, NULL);
	make_event(e->qp, e->cq);
	if (get_event(e->ch) != e->cq)
		scn_die("ibv_get_cq_event: another CQ");
}

static void evq_drop(struct evq *e)
{
	if (ibv_destroy_qp(e->qp) || ibv_destroy_cq(e->cq) ||
	    ibv_destroy_comp_channel(e->ch))
		scn_die("ibv_destroy_qp/cq/comp_channel");
}

/* ---- tier 4 ------------------------------------------------------------ */

static NOINLINE void comp_channel_destroy_with_cqs(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq;

	if (!ch)
		scn_die("ibv_create_comp_channel");
	cq = make_cq(ctx, ch);
	if (bad && ibv_destroy_comp_channel(ch) != EBUSY)
		exit(98);
	if (ibv_destroy_cq(cq) || ibv_destroy_comp_channel(ch))
		scn_die("ibv_destroy_cq/comp_channel");
	close_ctx(ctx);
}

static NOINLINE void cq_destroy_with_unacked_events(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct evq e;

	evq_make(&e, ctx, pd);
	if (ibv_destroy_qp(e.qp))
		scn_die("ibv_destroy_qp");
	/* Bad: the event this thread fetched is not acked: a certain
	 * hang, refused. */
	if (bad && ibv_destroy_cq(e.cq) != EBUSY)
		exit(98);
	ibv_ack_cq_events(e.cq, 1);
	if (ibv_destroy_cq(e.cq) || ibv_destroy_comp_channel(e.ch))
		scn_die("ibv_destroy_cq/comp_channel");
	ibv_dealloc_pd(pd);
	close_ctx(ctx);
}

/* The event is held by another thread, which acks it once main waits in
 * ibv_destroy_cq: libibverbs' designed wait, a warning only. */
static struct ibv_comp_channel *other_ch;
static struct ibv_cq *other_cq;
static sem_t other_fetched;
static pid_t main_tid;

static void *other_holder(void *arg)
{
	struct ibv_cq *cq = get_event(other_ch);

	sem_post(&other_fetched);
	/* Main's wait in the real ibv_destroy_cq is on cq->cond (both
	 * rdma-core's and the loopback's): a futex on anything else is a
	 * lock on the way there, before rdmacheck has looked.  Clean: main
	 * joins us first. */
	if (bad)
		scn_wait_syscall(main_tid, SYS_futex, -1,
				 (unsigned long)&cq->cond,
				 (unsigned long)(&cq->cond + 1));
	ibv_ack_cq_events(cq, 1);
	return arg;
}

static NOINLINE void cq_destroy_with_unacked_events_other_thread(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct ibv_qp *qp;
	pthread_t t;

	main_tid = (pid_t)syscall(SYS_gettid);
	sem_init(&other_fetched, 0, 0);
	other_ch = ibv_create_comp_channel(ctx);
	if (!other_ch)
		scn_die("ibv_create_comp_channel");
	other_cq = make_cq(ctx, other_ch);
	qp = err_qp(pd, other_cq, NULL);
	make_event(qp, other_cq);
	if (ibv_destroy_qp(qp))
		scn_die("ibv_destroy_qp");
	if (pthread_create(&t, NULL, other_holder, NULL))
		scn_die("pthread_create");
	if (sem_wait(&other_fetched))
		scn_die("sem_wait");
	if (!bad)
		pthread_join(t, NULL);
	if (ibv_destroy_cq(other_cq))
		scn_die("ibv_destroy_cq");
	if (bad)
		pthread_join(t, NULL);
	if (ibv_destroy_comp_channel(other_ch))
		scn_die("ibv_destroy_comp_channel");
	ibv_dealloc_pd(pd);
	close_ctx(ctx);
}

/*
 * A completion thread waits in ibv_get_cq_event on the channel of the
 * only CQ when main destroys that CQ: nothing can wake it any more, so
 * main cancels it afterwards.  Clean: the thread is cancelled and joined
 * first (rping's order).
 */
static struct ibv_comp_channel *wait_ch;

static void *cq_waiter(void *arg)
{
	struct ibv_cq *cq;
	void *ctx;

	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	ibv_get_cq_event(wait_ch, &cq, &ctx);	/* cancelled in there */
	return NULL;
}

static NOINLINE void cq_destroy_while_waiting(void)
{
	struct ibv_context *ctx = open_ctx();
	volatile pid_t tid = 0;
	struct ibv_cq *cq;
	pthread_t t;

	wait_ch = ibv_create_comp_channel(ctx);
	if (!wait_ch)
		scn_die("ibv_create_comp_channel");
	cq = make_cq(ctx, wait_ch);
	if (ibv_req_notify_cq(cq, 0))
		scn_die("ibv_req_notify_cq");
	if (pthread_create(&t, NULL, cq_waiter, (void *)&tid))
		scn_die("pthread_create");
	while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
		sched_yield();
	/* ibv_get_cq_event sleeps in read(2) on the channel's fd */
	scn_wait_syscall(tid, SYS_read, -1, wait_ch->fd, wait_ch->fd + 1);
	if (!bad) {
		pthread_cancel(t);
		pthread_join(t, NULL);
	}
	if (ibv_destroy_cq(cq))
		scn_die("ibv_destroy_cq");
	if (bad) {
		pthread_cancel(t);
		pthread_join(t, NULL);
	}
	if (ibv_destroy_comp_channel(wait_ch))
		scn_die("ibv_destroy_comp_channel");
	close_ctx(ctx);
}

/*
 * A fork child registers memory on its parent's PD (without
 * ibv_fork_init, as most programs): the kernel makes the MR in the
 * parent's context over the child's pages.  Clean: the child opens its
 * own device context and PD.  The child's report is the one read; a
 * clean parent passes on a child's finding through its exit status.
 */
static NOINLINE void reg_in_child(struct ibv_pd *pd)
{
	static char buf[4096];
	struct ibv_mr *mr;

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (mr)
		ibv_dereg_mr(mr);
}

static NOINLINE void use_after_fork_verbs(void)
{
	struct ibv_context *ctx = open_ctx(), *own;
	struct ibv_pd *pd = alloc_pd(ctx), *own_pd;
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		scn_die("fork");
	if (pid == 0) {
		if (bad) {
			reg_in_child(pd);
		} else {
			own = open_ctx();
			own_pd = alloc_pd(own);
			reg_in_child(own_pd);
			ibv_dealloc_pd(own_pd);
			close_ctx(own);
		}
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		scn_die("waitpid");
	if (bad || WEXITSTATUS(status))
		_exit(WEXITSTATUS(status));	/* leave the child's report */
	ibv_dealloc_pd(pd);
	close_ctx(ctx);
}

static NOINLINE void cq_events_over_acked(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct evq e;

	evq_make(&e, ctx, pd);
	/* Bad: two acked, one fetched; only the one is acked (protect=1),
	 * so the destroy below still returns. */
	ibv_ack_cq_events(e.cq, bad ? 2 : 1);
	evq_drop(&e);
	ibv_dealloc_pd(pd);
	close_ctx(ctx);
}

/*
 * An async event for a QP on an SRQ: IBV_EVENT_QP_LAST_WQE_REACHED when
 * it goes to the error state.  Not every device raises it (rxe in Linux
 * 6.1 does not): false, everything freed, when none comes in 5 s.
 */
struct aev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_async_event ev;
};

static void aev_drop(struct aev *a)
{
	if (ibv_destroy_qp(a->qp) || ibv_destroy_srq(a->srq) ||
	    ibv_destroy_cq(a->cq) || ibv_dealloc_pd(a->pd))
		scn_die("ibv_destroy_qp/srq/cq, ibv_dealloc_pd");
	close_ctx(a->ctx);
}

static bool aev_make(struct aev *a)
{
	struct ibv_srq_init_attr sa;
	struct pollfd pfd;

	a->ctx = open_ctx();
	a->pd = alloc_pd(a->ctx);
	a->cq = make_cq(a->ctx, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	a->srq = ibv_create_srq(a->pd, &sa);
	if (!a->srq)
		scn_die("ibv_create_srq");
	a->qp = err_qp(a->pd, a->cq, a->srq);
	do {
		pfd.fd = a->ctx->async_fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 5000) == 0) {
			fprintf(stderr, "scenario: IBV_EVENT_QP_LAST_WQE_REACHED:"
				" not raised here\n");
			aev_drop(a);
			return false;
		}
		if (ibv_get_async_event(a->ctx, &a->ev))
			scn_die("ibv_get_async_event");
		if (a->ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED)
			ibv_ack_async_event(&a->ev);
	} while (a->ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED);
	if (a->ev.element.qp != a->qp)
		scn_die("ibv_get_async_event: another QP");
	return true;
}

static NOINLINE void destroy_with_unacked_async_events(void)
{
	struct aev a;

	if (!aev_make(&a)) {
		if (bad)
			exit(77);
		return;
	}
	/* Bad: a certain hang, refused. */
	if (bad && ibv_destroy_qp(a.qp) != EBUSY)
		exit(98);
	ibv_ack_async_event(&a.ev);
	aev_drop(&a);
}

static NOINLINE void async_event_double_ack(void)
{
	struct aev a;

	if (!aev_make(&a)) {
		if (bad)
			exit(77);
		return;
	}
	ibv_ack_async_event(&a.ev);
	if (bad)
		ibv_ack_async_event(&a.ev);	/* refused */
	aev_drop(&a);
}

static NOINLINE void async_event_ack_unknown(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct ibv_cq *cq = make_cq(ctx, NULL);
	struct ibv_qp *qp = err_qp(pd, cq, NULL);
	struct ibv_async_event ev;

	/* Bad: an event for this QP that ibv_get_async_event never gave. */
	memset(&ev, 0, sizeof(ev));
	ev.event_type = IBV_EVENT_QP_FATAL;
	ev.element.qp = qp;
	if (bad)
		ibv_ack_async_event(&ev);	/* refused */
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		scn_die("ibv_destroy_qp/cq, ibv_dealloc_pd");
	close_ctx(ctx);
}

static NOINLINE void pd_dealloc_with_children(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	static char buf[4096];
	struct ibv_mr *mr;

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		scn_die("ibv_reg_mr");
	/* Bad: the MR is still registered: EBUSY, the PD stays. */
	if (bad && ibv_dealloc_pd(pd) != EBUSY)
		exit(98);
	if (ibv_dereg_mr(mr) || ibv_dealloc_pd(pd))
		scn_die("ibv_dereg_mr/ibv_dealloc_pd");
	close_ctx(ctx);
}

static NOINLINE void cq_destroy_with_qps(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct ibv_cq *cq = make_cq(ctx, NULL);
	struct ibv_qp *qp = err_qp(pd, cq, NULL);

	/* Bad: the QP still uses the CQ: EBUSY, the CQ stays. */
	if (bad && ibv_destroy_cq(cq) != EBUSY)
		exit(98);
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		scn_die("ibv_destroy_qp/cq, ibv_dealloc_pd");
	close_ctx(ctx);
}

static NOINLINE void srq_destroy_with_qps(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct ibv_cq *cq = make_cq(ctx, NULL);
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr qa;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(pd, &sa);
	if (!srq)
		scn_die("ibv_create_srq");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 2;
	qa.cap.max_send_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		scn_die("ibv_create_qp");
	/* Bad: the QP still uses the SRQ: EBUSY, the SRQ stays. */
	if (bad && ibv_destroy_srq(srq) != EBUSY)
		exit(98);
	if (ibv_destroy_qp(qp) || ibv_destroy_srq(srq) ||
	    ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		scn_die("ibv_destroy_qp/srq/cq, ibv_dealloc_pd");
	close_ctx(ctx);
}

static NOINLINE void close_device_with_resources(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);

	/* Bad: the PD is still allocated; it leaks with the context. */
	if (!bad && ibv_dealloc_pd(pd))
		scn_die("ibv_dealloc_pd");
	close_ctx(ctx);
}

/* ---- leaks: each leaks its object (on librdmacm's context and PD) ----- */

static NOINLINE void leak_context(void)
{
	struct ibv_context *ctx = open_ctx();

	if (!bad)
		close_ctx(ctx);
}

static NOINLINE void leak_pd(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_pd *pd = alloc_pd(id->verbs);

	if (!bad)
		ibv_dealloc_pd(pd);
	drop_lib_id(ch, id);
}

/* Six PDs from one line: one leak group, four of them listed. */
static NOINLINE void leak_pd_group(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_pd *pd[6];
	int i;

	for (i = 0; i < 6; i++)
		pd[i] = alloc_pd(id->verbs);
	for (i = 0; i < 6 && !bad; i++)
		ibv_dealloc_pd(pd[i]);
	drop_lib_id(ch, id);
}

static NOINLINE void leak_mr(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	static char buf[4096];
	struct ibv_mr *mr;

	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		scn_die("ibv_reg_mr");
	if (!bad)
		ibv_dereg_mr(mr);
	drop_lib_id(ch, id);
}

static NOINLINE void leak_mw(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_mw *mw = ibv_alloc_mw(id->pd, IBV_MW_TYPE_1);

	if (!mw && unsupported("ibv_alloc_mw")) {
		drop_lib_id(ch, id);
		if (bad)
			exit(77);
		return;
	}
	if (!mw)
		scn_die("ibv_alloc_mw");
	if (!bad)
		ibv_dealloc_mw(mw);
	drop_lib_id(ch, id);
}

static NOINLINE void leak_cq(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_cq *cq = make_cq(id->verbs, NULL);

	if (!bad)
		ibv_destroy_cq(cq);
	drop_lib_id(ch, id);
}

static NOINLINE void leak_comp_channel(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_comp_channel *cch = ibv_create_comp_channel(id->verbs);

	if (!cch)
		scn_die("ibv_create_comp_channel");
	if (!bad)
		ibv_destroy_comp_channel(cch);
	drop_lib_id(ch, id);
}

static NOINLINE void leak_ah(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_ah_attr attr;
	struct ibv_ah *ah;

	/* To our own port's GID: RoCE wants a GRH. */
	memset(&attr, 0, sizeof(attr));
	attr.port_num = id->port_num;
	attr.is_global = 1;
	attr.grh.hop_limit = 1;
	if (ibv_query_gid(id->verbs, id->port_num, 0, &attr.grh.dgid))
		scn_die("ibv_query_gid");
	ah = ibv_create_ah(id->pd, &attr);
	if (!ah)
		scn_die("ibv_create_ah");
	if (!bad)
		ibv_destroy_ah(ah);
	drop_lib_id(ch, id);
}

static NOINLINE void leak_xrcd(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_xrcd_init_attr attr;
	struct ibv_xrcd *x;

	memset(&attr, 0, sizeof(attr));
	attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	attr.fd = -1;
	attr.oflags = O_CREAT;
	x = ibv_open_xrcd(id->verbs, &attr);
	if (!x && unsupported("ibv_open_xrcd")) {
		drop_lib_id(ch, id);
		if (bad)
			exit(77);
		return;
	}
	if (!x)
		scn_die("ibv_open_xrcd");
	if (!bad)
		ibv_close_xrcd(x);
	drop_lib_id(ch, id);
}

/* The generic leak rules on objects made with verbs alone. */
static NOINLINE void leak_qp(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_cq *cq = make_cq(id->verbs, NULL);
	struct ibv_qp *qp = err_qp(id->pd, cq, NULL);

	/* Bad: the QP stays, and with it the CQ it uses. */
	if (!bad && (ibv_destroy_qp(qp) || ibv_destroy_cq(cq)))
		scn_die("ibv_destroy_qp/cq");
	drop_lib_id(ch, id);
}

static NOINLINE void leak_srq(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_srq_init_attr sa;
	struct ibv_srq *srq;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(id->pd, &sa);
	if (!srq)
		scn_die("ibv_create_srq");
	if (!bad && ibv_destroy_srq(srq))
		scn_die("ibv_destroy_srq");
	drop_lib_id(ch, id);
}

static NOINLINE void leak_device_list(void)
{
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		scn_die("ibv_get_device_list");
	if (!bad)
		ibv_free_device_list(list);
}

/* Bad: the fetched event is never acked, so the CQ (and its QP and
 * channel) cannot go either. */
static NOINLINE void leak_cq_events(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct evq e;

	evq_make(&e, id->verbs, id->pd);
	if (!bad) {
		ibv_ack_cq_events(e.cq, 1);
		evq_drop(&e);
	}
	drop_lib_id(ch, id);
}

/* ---- tier 3 ------------------------------------------------------------ */

static void lib_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp_init_attr qa;

	/* No CQs: librdmacm makes them, and their channels. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 2;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa) ||
	    ibv_modify_qp(id->qp, &attr, IBV_QP_STATE))
		scn_die("rdma_create_qp/ibv_modify_qp(ERR)");
}

static NOINLINE void cq_events_unacked_at_destroy_qp(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_cq *cq;

	lib_qp(id);
	make_event(id->qp, id->send_cq);
	cq = get_event(id->send_cq_channel);
	/* Bad: the library's CQ goes with the QP, and its destroy would
	 * wait for the ack forever: refused. */
	if (bad) {
		rdma_destroy_qp(id);
		if (!id->qp)
			exit(98);
	}
	ibv_ack_cq_events(cq, 1);
	rdma_destroy_qp(id);
	drop_lib_id(ch, id);
}

static NOINLINE void library_object_destroyed_by_user_cq(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);

	lib_qp(id);
	/* Bad: rdma_destroy_qp destroys it itself: refused. */
	if (bad && ibv_destroy_cq(id->recv_cq) != EBUSY)
		exit(98);
	rdma_destroy_qp(id);
	drop_lib_id(ch, id);
}

/* A CQ librdmacm made, kept by the program and destroyed after
 * rdma_destroy_qp destroyed it: refused. */
static NOINLINE void double_destroy_lib_cq(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);
	struct ibv_cq *cq;

	lib_qp(id);
	cq = id->recv_cq;
	rdma_destroy_qp(id);
	if (bad && ibv_destroy_cq(cq) != EINVAL)
		exit(98);
	drop_lib_id(ch, id);
}

static NOINLINE void library_object_destroyed_by_user_pd(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = lib_id(&ch);

	/* Bad: librdmacm deallocates its PD itself: refused. */
	if (bad && ibv_dealloc_pd(id->pd) != EBUSY)
		exit(98);
	drop_lib_id(ch, id);
}

static NOINLINE void channel_fd_closed(void)
{
	struct rdma_event_channel *ch = scn_channel();

	/* Bad: refused; the descriptor stays the channel's. */
	if (bad && close(ch->fd))
		exit(98);
	rdma_destroy_event_channel(ch);
}

static NOINLINE void channel_fd_closed_comp(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	int fd = open("/dev/null", O_RDONLY);

	if (!ch || fd < 0)
		scn_die("ibv_create_comp_channel, open");
	/* Bad: dup2 closes the channel's descriptor first: refused. */
	if (bad && (dup2(fd, ch->fd) != -1 || errno != EBUSY))
		exit(98);
	close(fd);
	if (ibv_destroy_comp_channel(ch))
		scn_die("ibv_destroy_comp_channel");
	close_ctx(ctx);
}

static NOINLINE void nonblocking_private_channel(void)
{
	struct rdma_event_channel *ch = bad ? NULL : scn_channel();
	struct rdma_cm_id *id;
	int fd;

	/* Bad: the private channel of a synchronous id; clean: one's own. */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		scn_die("rdma_create_id");
	fd = id->channel->fd;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		scn_die("fcntl");
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	if (ch)
		rdma_destroy_event_channel(ch);
}

/* ---- the generic rules on verbs objects ------------------------------- */

static NOINLINE void use_after_destroy(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx), *other = alloc_pd(ctx);
	static char buf[64];

	if (ibv_dealloc_pd(pd))
		scn_die("ibv_dealloc_pd");
	/* Bad: on the freed PD (or the live one): refused. */
	if (bad && ibv_reg_mr(pd, buf, sizeof(buf), 0))
		exit(98);
	ibv_dealloc_pd(other);
	close_ctx(ctx);
}

static NOINLINE void double_destroy(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), 0);

	if (!mr || ibv_dereg_mr(mr))
		scn_die("ibv_reg_mr/ibv_dereg_mr");
	if (bad && ibv_dereg_mr(mr) != EINVAL)
		exit(98);
	ibv_dealloc_pd(pd);
	close_ctx(ctx);
}

static NOINLINE void unknown_handle(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct ibv_cq *cq = make_cq(ctx, NULL);

	/* Bad: a CQ where a PD belongs: refused. */
	if (bad && ibv_dealloc_pd((struct ibv_pd *)cq) != EINVAL)
		exit(98);
	if (ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		scn_die("ibv_destroy_cq/ibv_dealloc_pd");
	close_ctx(ctx);
}

/*
 * An error path's cleanup of a table of QPs, one of which was never
 * created: ibv_destroy_qp(NULL) crashes libibverbs; refused (EINVAL).
 * Clean: the cleanup skips the empty slot.
 */
static NOINLINE void unknown_handle_null(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct ibv_cq *cq = make_cq(ctx, NULL);
	struct ibv_qp *qps[3] = { NULL };
	unsigned i;

	qps[0] = err_qp(pd, cq, NULL);
	qps[2] = err_qp(pd, cq, NULL);	/* qps[1]: "failed" */
	for (i = 0; i < 3; i++) {
		if (!bad && !qps[i])
			continue;
		if (ibv_destroy_qp(qps[i]) != (qps[i] ? 0 : EINVAL))
			exit(98);
	}
	if (ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		scn_die("ibv_destroy_cq/ibv_dealloc_pd");
	close_ctx(ctx);
}

/*
 * The attributes of ibv_create_qp from a lookup that found none: NULL,
 * which libibverbs dereferences; refused (NULL, EINVAL).  Clean: the
 * attributes in heap memory (read by the shim through the kernel).
 */
static NOINLINE void unreadable_argument(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = alloc_pd(ctx);
	struct ibv_cq *cq = make_cq(ctx, NULL);
	struct ibv_qp_init_attr *qa = NULL;
	struct ibv_qp *qp;

	if (!bad) {
		qa = calloc(1, sizeof(*qa));
		if (!qa)
			scn_die("calloc");
		qa->send_cq = qa->recv_cq = cq;
		qa->qp_type = IBV_QPT_RC;
		qa->cap.max_send_wr = qa->cap.max_recv_wr = 1;
		qa->cap.max_send_sge = qa->cap.max_recv_sge = 1;
	}
	qp = ibv_create_qp(pd, qa);
	if (bad ? qp || errno != EINVAL : !qp || ibv_destroy_qp(qp))
		exit(98);
	free(qa);
	if (ibv_destroy_cq(cq) || ibv_dealloc_pd(pd))
		scn_die("ibv_destroy_cq/ibv_dealloc_pd");
	close_ctx(ctx);
}

/* ---- threads (tests/tsan/tsan.sh) ------------------------------------ */

/*
 * Not a rule: four threads, each fetching and acking completion events on
 * a CQ of its own while making and destroying other CQs, so the shim's
 * lock-free event counts are used while their table grows and its cells
 * are reused.
 */
static struct ibv_context *thr_ctx;
static struct ibv_pd *thr_pd;

static void *cq_events_thread(void *arg)
{
	struct ibv_cq *spare[8];
	struct evq e;
	int i, k;

	evq_make(&e, thr_ctx, thr_pd);
	ibv_ack_cq_events(e.cq, 1);
	for (i = 0; i < 200; i++) {
		make_event(e.qp, e.cq);
		if (get_event(e.ch) != e.cq)
			scn_die("ibv_get_cq_event: another CQ");
		for (k = 0; k < 8; k++)
			spare[k] = make_cq(thr_ctx, NULL);
		ibv_ack_cq_events(e.cq, 1);
		for (k = 0; k < 8; k++)
			if (ibv_destroy_cq(spare[k]))
				scn_die("ibv_destroy_cq");
	}
	evq_drop(&e);
	return arg;
}

static NOINLINE void cq_events_threads(void)
{
	pthread_t t[4];
	unsigned i;

	thr_ctx = open_ctx();
	thr_pd = alloc_pd(thr_ctx);
	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, cq_events_thread, NULL))
			scn_die("pthread_create");
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ibv_dealloc_pd(thr_pd);
	close_ctx(thr_ctx);
}

static const struct {
	const char *rule;
	void (*run)(void);
} scenarios[] = {
	{ "comp-channel-destroy-with-cqs", comp_channel_destroy_with_cqs },
	{ "cq-destroy-with-unacked-events", cq_destroy_with_unacked_events },
	{ "cq-destroy-with-unacked-events-other-thread",
	  cq_destroy_with_unacked_events_other_thread },
	{ "cq-events-over-acked", cq_events_over_acked },
	{ "cq-destroy-while-waiting", cq_destroy_while_waiting },
	{ "use-after-fork-verbs", use_after_fork_verbs },
	{ "destroy-with-unacked-async-events",
	  destroy_with_unacked_async_events },
	{ "async-event-double-ack", async_event_double_ack },
	{ "async-event-ack-unknown", async_event_ack_unknown },
	{ "pd-dealloc-with-children", pd_dealloc_with_children },
	{ "cq-destroy-with-qps", cq_destroy_with_qps },
	{ "srq-destroy-with-qps", srq_destroy_with_qps },
	{ "close-device-with-resources", close_device_with_resources },
	{ "leak-context", leak_context },
	{ "leak-pd", leak_pd },
	{ "leak-pd-group", leak_pd_group },
	{ "leak-mr", leak_mr },
	{ "leak-mw", leak_mw },
	{ "leak-cq", leak_cq },
	{ "leak-comp-channel", leak_comp_channel },
	{ "leak-ah", leak_ah },
	{ "leak-xrcd", leak_xrcd },
	{ "leak-cq-events", leak_cq_events },
	{ "leak-qp", leak_qp },
	{ "leak-srq", leak_srq },
	{ "leak-device-list", leak_device_list },
	{ "cq-events-unacked-at-destroy-qp", cq_events_unacked_at_destroy_qp },
	{ "library-object-destroyed-by-user-cq",
	  library_object_destroyed_by_user_cq },
	{ "library-object-destroyed-by-user-pd",
	  library_object_destroyed_by_user_pd },
	{ "channel-fd-closed", channel_fd_closed },
	{ "channel-fd-closed-comp", channel_fd_closed_comp },
	{ "nonblocking-private-channel", nonblocking_private_channel },
	{ "use-after-destroy", use_after_destroy },
	{ "double-destroy", double_destroy },
	{ "double-destroy-lib-cq", double_destroy_lib_cq },
	{ "unknown-handle", unknown_handle },
	{ "unknown-handle-null", unknown_handle_null },
	{ "unreadable-argument", unreadable_argument },
	{ "cq-events-threads", cq_events_threads },
};

/* Run only when named, not by "clean": it forks, which ThreadSanitizer
 * cannot follow in a threaded process (tests/tsan runs "clean"). */
static bool by_name(const char *rule)
{
	return !strcmp(rule, "use-after-fork-verbs");
}

int main(int argc, char **argv)
{
	char *clean[] = { argv[0], "clean" };
	const char *mode, *colon;
	size_t len;
	unsigned i;
	bool all;

	if (argc < 2) {
		fprintf(stderr, "usage: %s RULE[:clean]|clean\n", argv[0]);
		return 2;
	}
	mode = argv[1];
	all = !strcmp(mode, "clean");
	colon = strchr(mode, ':');
	len = colon ? (size_t)(colon - mode) : strlen(mode);
	bad = !all && !(colon && !strcmp(colon, ":clean"));
	scn_bad(2, clean);
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if ((all && !by_name(scenarios[i].rule)) ||
		    (strlen(scenarios[i].rule) == len &&
		     !strncmp(mode, scenarios[i].rule, len)))
			scenarios[i].run();
	return 0;
}

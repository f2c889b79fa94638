/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/cm/conn.c: the connection protocol of the loopback
 * librdmacm and the calls that drive it: the per-process progress thread
 * (epoll over listening and connection sockets), REQ/REP/RTU/REJ/DREQ/DREP
 * and SIDR REQ/REP (UD port spaces) handling,
 * rdma_connect/accept/reject/establish/disconnect/notify,
 * rdma_init_qp_attr, QP and SRQ creation through the public verbs API,
 * and the ECE calls.
 *
 * The progress thread never blocks on a write: every connection carries at
 * most a handful of small messages, far below the socket buffer, so sends
 * use MSG_DONTWAIT and cannot fail for lack of room.
 *
 * Disconnect follows the IB CM: rdma_disconnect sends a DREQ; the peer
 * gets DISCONNECTED at once but answers with a DREP only when it calls
 * rdma_disconnect or destroys the id (its end of the socket closing, as at
 * its death, counts as that answer).  The side that sent the DREQ gets
 * DISCONNECTED with the DREP, or with -ETIMEDOUT when the DREQ times out.
 * Each side then spends the time wait and gets TIMEWAIT_EXIT if its id
 * still exists.  Both timers run on a timerfd in the progress thread.
 */
#include <config.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include "cm.h"

static int cm_req_pdata_max(enum rdma_port_space ps)
{
	return ps == RDMA_PS_IB ? CM_REQ_PDATA : CM_REQ_PDATA - CM_CMA_HDR;
}

static int cm_is_ud(struct rdma_cm_id *id)
{
	return id->qp_type == IBV_QPT_UD;
}

/* The Q_Key the real stack gives a UD id of this port space. */
uint32_t cm_ud_qkey(struct rdma_cm_id *id)
{
	return id->ps == RDMA_PS_IPOIB ? 0 : RDMA_UDP_QKEY;
}

static int cm_sidr_req_pdata_max(enum rdma_port_space ps)
{
	return ps == RDMA_PS_IB ? CM_SIDR_REQ_PDATA :
	       CM_SIDR_REQ_PDATA - CM_CMA_HDR;
}

int cm_send_msg(struct cm_sock *s, struct cm_msg *m)
{
	ssize_t n;

	if (!s || s->dead)
		return -1;
	m->pid = getpid();
	n = send(s->fd, m, sizeof(*m), MSG_DONTWAIT | MSG_NOSIGNAL);
	return n == sizeof(*m) ? 0 : -1;
}

/* A socket for fd, on cm.socks.  Caller holds cm.lock. */
struct cm_sock *cm_sock_new(int fd)
{
	struct cm_sock *s = calloc(1, sizeof(*s));

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->fd = fd;
	cm_list_init(&s->link);
	cm_list_add_tail(&cm.socks, &s->all);
	return s;
}

/*
 * Caller holds cm.lock.  The memory goes when the progress thread is sure
 * no epoll result still points at it.
 */
void cm_sock_close(struct cm_sock *s)
{
	if (!s || s->dead)
		return;
	if (s->in_epoll)
		epoll_ctl(cm.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->dead = 1;
	s->id = NULL;
	cm_list_del(&s->all);
	cm_list_del(&s->link);
	if (s->in_epoll)
		cm_list_add_tail(&cm.graveyard, &s->link);
	else
		free(s);
}

/* Caller holds cm.lock. */
void cm_close_id_socks(struct cm_id *p)
{
	struct cm_list *l;
	int i;

	while (!cm_list_empty(&p->pending)) {
		struct cm_sock *s;
		struct cm_msg rej;

		l = p->pending.next;
		s = cm_container_of(l, struct cm_sock, link);
		memset(&rej, 0, sizeof(rej));
		rej.type = CM_MSG_REJ;
		rej.reason = CM_REJ_INVALID_SID;
		cm_send_msg(s, &rej);
		cm_sock_close(s);
	}
	cm_sock_close(p->port);
	p->port = NULL;
	for (i = 0; i < 3; i++) {
		cm_sock_close(p->resv[i]);
		p->resv[i] = NULL;
	}
	cm_sock_close(p->conn);
	p->conn = NULL;
}

static struct cm_sock *cm_conn_of(struct cm_id *p)
{
	return p->conn ? p->conn : p->port;
}

void cm_qp_to_err(struct rdma_cm_id *id)
{
	struct ibv_qp_attr attr;

	if (!id->qp)
		return;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	ibv_modify_qp(id->qp, &attr, IBV_QP_STATE);
}

/* The progress thread's timerfd tag in epoll. */
static struct cm_sock cm_timer_tag = { .fd = -1, .in_epoll = 1 };

static uint64_t cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Set the timerfd to the earliest deadline.  Caller holds cm.lock. */
static void cm_tmo_program(void)
{
	struct itimerspec its;
	struct cm_id *p;

	if (cm.timerfd < 0)
		return;
	memset(&its, 0, sizeof(its));
	if (!cm_list_empty(&cm.timers)) {
		p = cm_container_of(cm.timers.next, struct cm_id, tmo_link);
		its.it_value.tv_sec = p->tmo_at / 1000;
		its.it_value.tv_nsec = (p->tmo_at % 1000) * 1000000 + 1;
	}
	timerfd_settime(cm.timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Caller holds cm.lock. */
void cm_tmo_cancel(struct cm_id *p)
{
	int first = cm.timers.next == &p->tmo_link;

	if (p->tmo_kind == CM_TMO_NONE)
		return;
	cm_list_del(&p->tmo_link);
	p->tmo_kind = CM_TMO_NONE;
	if (first)
		cm_tmo_program();
}

/* Caller holds cm.lock. */
static void cm_tmo_arm(struct cm_id *p, enum cm_tmo_kind kind,
		       unsigned int ms)
{
	struct cm_list *l;

	cm_tmo_cancel(p);
	p->tmo_kind = kind;
	p->tmo_at = cm_now_ms() + ms;
	/* timers of one kind expire in the order they started */
	for (l = cm.timers.prev; l != &cm.timers; l = l->prev)
		if (cm_container_of(l, struct cm_id, tmo_link)->tmo_at <=
		    p->tmo_at)
			break;
	cm_list_add_tail(l->next, &p->tmo_link);
	if (cm.timers.next == &p->tmo_link)
		cm_tmo_program();
}

/* One DISCONNECTED per connection.  Caller holds cm.lock. */
static void cm_disc_event(struct cm_id *p, int status)
{
	struct cm_event *e;

	if (p->disc_queued)
		return;
	p->disc_queued = 1;
	e = cm_event_new(p, RDMA_CM_EVENT_DISCONNECTED, status);
	if (e)
		cm_queue_event(p, e);
}

/* The connection is over on our side: time wait.  Caller holds cm.lock. */
static void cm_timewait(struct cm_id *p)
{
	p->state = CM_DISCONNECTED;
	cm_tmo_arm(p, CM_TMO_TIMEWAIT, cm.timewait_ms);
}

/* Our DREQ was answered, or never will be.  Caller holds cm.lock. */
static void cm_disc_done(struct cm_id *p, int status)
{
	cm_disc_event(p, status);
	cm_timewait(p);
}

/* The peer's DREQ: we owe a DREP now.  Caller holds cm.lock. */
static void cm_dreq_rcvd(struct cm_id *p)
{
	cm_tmo_cancel(p);
	p->state = CM_DREQ_RCVD;
	cm_disc_event(p, 0);
}

static int cm_is_connected(struct cm_id *p)
{
	return p->state == CM_ACCEPTED || p->state == CM_REP_RCVD ||
	       p->state == CM_CONNECTED;
}

/* Timers due: in the progress thread, with cm.lock held. */
static void cm_tmo_run(void)
{
	uint64_t now = cm_now_ms(), exp;
	struct cm_event *e;
	ssize_t n;

	n = read(cm.timerfd, &exp, sizeof(exp));
	(void)n;
	while (!cm_list_empty(&cm.timers)) {
		struct cm_id *p = cm_container_of(cm.timers.next,
						  struct cm_id, tmo_link);
		enum cm_tmo_kind kind = p->tmo_kind;

		if (p->tmo_at > now)
			break;
		cm_list_del(&p->tmo_link);
		p->tmo_kind = CM_TMO_NONE;
		if (kind == CM_TMO_DREQ && p->state == CM_DISC_SENT) {
			/* the CM's DREQ_ERROR */
			cm_disc_done(p, -ETIMEDOUT);
		} else if (kind == CM_TMO_TIMEWAIT) {
			e = cm_event_new(p, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
			if (e)
				cm_queue_event(p, e);
		}
	}
	cm_tmo_program();
}

/*
 * The peer's end of the connection closed: its id went, by rdma_destroy_id
 * or with its process.  What the survivor gets is what the kernel's CM
 * sends when it destroys a cm_id in each state (cm_destroy_id): a REJ
 * (timeout, 1, from an active side whose REQ was unanswered; consumer
 * defined, 28, from a passive side, or an active side past the REP), a
 * SIDR REP "reject" (1), a DREQ once established, the DREP it owed.  Like
 * the kernel's CM this never touches the QP: id->qp is the program's,
 * which may already have freed it with ibv_destroy_qp.  A QP whose peer
 * process died learns it from the verbs layer, by its silence.
 */
static void cm_handle_hup(struct cm_sock *s)
{
	struct cm_id *p = s->id;
	struct cm_event *e;

	if (!p && s->listener && !s->queued) {
		/* gone before it asked anything (a probe): forget it */
		cm_sock_close(s);
		return;
	}
	epoll_ctl(cm.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	s->in_epoll = 0;
	/* keep the memory until its owner closes it; mark the loss */
	s->hup = 1;
	if (!p)
		return;
	/* SIDR is one round trip: a UD id owes nothing to its peer after */
	if (cm_is_ud(&p->id) && p->state != CM_CONNECTING)
		return;
	switch (p->state) {
	case CM_CONNECTING:
		if (cm_is_ud(&p->id)) {
			p->state = CM_ERROR;
			e = cm_event_new(p, RDMA_CM_EVENT_UNREACHABLE,
					 CM_SIDR_REJECT);
		} else {
			p->state = CM_REJECTED;
			e = cm_event_new(p, RDMA_CM_EVENT_REJECTED,
					 CM_REJ_CONSUMER);
		}
		if (e)
			cm_queue_event(p, e);
		break;
	case CM_REQ_RCVD:
		/* the active side's REJ "timeout": nothing to accept now */
		p->state = CM_ERROR;
		e = cm_event_new(p, RDMA_CM_EVENT_REJECTED, CM_REJ_TIMEOUT);
		if (e)
			cm_queue_event(p, e);
		break;
	case CM_ACCEPTED:
	case CM_REP_RCVD:
		/* REP sent or received, no RTU yet: a REJ */
		p->state = CM_REJECTED;
		e = cm_event_new(p, RDMA_CM_EVENT_REJECTED, CM_REJ_CONSUMER);
		if (e)
			cm_queue_event(p, e);
		break;
	case CM_CONNECTED:
		/* the peer's id went: its CM sent a DREQ */
		cm_dreq_rcvd(p);
		break;
	case CM_DISC_SENT:
		/* ... or the DREP it owed us */
		cm_tmo_cancel(p);
		cm_disc_done(p, 0);
		break;
	default:
		break;
	}
}

static void cm_copy_pdata(struct cm_event *e, const struct cm_msg *m,
			  int padded)
{
	int len = m->pdata_len;

	if (len > CM_PDATA_MAX)
		len = CM_PDATA_MAX;
	memcpy(e->pdata, m->pdata, len);
	e->ev.param.conn.private_data = e->pdata;
	/* the IB CM hands over the whole zero-padded field */
	e->ev.param.conn.private_data_len = padded;
}

/* The UD ah_attr towards gid, as the kernel builds it from the path. */
static void cm_ud_ah(struct rdma_cm_id *id, struct ibv_ah_attr *ah,
		     const union ibv_gid *gid)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = *gid;
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = 64;
	ah->port_num = id->port_num ? id->port_num : 1;
}

/*
 * Active UD id: the SIDR REP (or a REJ from a CM that had no listener or
 * gave up on the request).  Caller holds cm.lock.
 */
static void cm_handle_sidr_rep(struct cm_id *p, const struct cm_msg *m)
{
	struct cm_event *e;
	int status;

	if (p->state != CM_CONNECTING)
		return;
	if (m->type == CM_MSG_REJ)
		status = m->reason == CM_REJ_INVALID_SID ?
			 CM_SIDR_UNSUPPORTED : CM_SIDR_REJECT;
	else
		status = m->reason;
	if (status != CM_SIDR_SUCCESS) {
		/* the kernel reports a failed SIDR as UNREACHABLE */
		p->state = CM_REJECTED;
		e = cm_event_new(p, RDMA_CM_EVENT_UNREACHABLE, status);
		if (!e)
			return;
		cm_copy_pdata(e, m, CM_SIDR_REP_PDATA);
		cm_queue_event(p, e);
		return;
	}
	p->state = CM_CONNECTED;
	p->remote_qpn = m->qpn;
	p->remote_known = 1;
	e = cm_event_new(p, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (!e)
		return;
	cm_copy_pdata(e, m, CM_SIDR_REP_PDATA);
	cm_ud_ah(&p->id, &e->ev.param.ud.ah_attr,
		 &p->id.route.addr.addr.ibaddr.dgid);
	e->ev.param.ud.qp_num = m->qpn;
	e->ev.param.ud.qkey = m->qkey;
	cm_queue_event(p, e);
}

static void cm_handle_msg(struct cm_sock *s, struct cm_msg *m)
{
	struct cm_id *p = s->id;
	struct cm_event *e;

	if (!p) {
		struct cm_id *l = s->listener;

		if (m->type == CM_MSG_DREQ) {
			/* gave up before an id took the request */
			struct cm_msg drep;

			memset(&drep, 0, sizeof(drep));
			drep.type = CM_MSG_DREP;
			cm_send_msg(s, &drep);
			s->hup = 1;
			return;
		}
		if ((m->type != CM_MSG_REQ && m->type != CM_MSG_SIDR_REQ) ||
		    !l || l->state != CM_LISTEN ||
		    m->ps != (uint32_t)l->id.ps) {
			if (m->type == CM_MSG_REQ ||
			    m->type == CM_MSG_SIDR_REQ) {
				struct cm_msg rej;

				memset(&rej, 0, sizeof(rej));
				rej.type = CM_MSG_REJ;
				rej.reason = CM_REJ_INVALID_SID;
				cm_send_msg(s, &rej);
			}
			return;
		}
		if (!cm_listen_takes(l, (struct sockaddr *)&m->dst)) {
			/* the service ID's listener has no id for it */
			struct cm_msg rej;

			memset(&rej, 0, sizeof(rej));
			rej.type = CM_MSG_REJ;
			rej.reason = CM_REJ_CONSUMER;
			cm_send_msg(s, &rej);
			return;
		}
		s->req = *m;
		e = cm_event_new(l, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
		if (!e)
			return;
		e->kind = CM_EVK_CONN_REQ;
		e->req = s;
		s->queued = 1;
		cm_queue_event(l, e);
		return;
	}

	if (cm_is_ud(&p->id) &&
	    (m->type == CM_MSG_SIDR_REP || m->type == CM_MSG_REJ)) {
		cm_handle_sidr_rep(p, m);
		return;
	}
	switch (m->type) {
	case CM_MSG_REP:
		if (p->state != CM_CONNECTING)
			break;
		p->state = CM_REP_RCVD;
		p->remote_qpn = m->qpn;
		p->remote_psn = m->psn;
		p->remote_known = 1;
		/* the CM's values from now on: the peer's, turned round */
		p->responder_resources = m->init_depth;
		p->initiator_depth = m->resp_res;
		p->remote_ece.vendor_id = m->ece_vendor;
		p->remote_ece.options = m->ece_options;
		e = cm_event_new(p, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		if (!e)
			break;
		e->kind = CM_EVK_CONN_RESP;
		cm_copy_pdata(e, m, CM_REP_PDATA);
		/* the peer's view, turned round as the kernel does */
		e->ev.param.conn.responder_resources = m->init_depth;
		e->ev.param.conn.initiator_depth = m->resp_res;
		e->ev.param.conn.flow_control = m->flow_ctrl;
		e->ev.param.conn.rnr_retry_count = m->rnr_retry;
		e->ev.param.conn.srq = m->srq;
		e->ev.param.conn.qp_num = m->qpn;
		cm_queue_event(p, e);
		break;
	case CM_MSG_RTU:
		if (p->state != CM_ACCEPTED)
			break;
		p->state = CM_CONNECTED;
		e = cm_event_new(p, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (e)
			cm_queue_event(p, e);
		break;
	case CM_MSG_REJ:
		if (p->state != CM_CONNECTING)
			break;
		p->state = CM_REJECTED;
		e = cm_event_new(p, RDMA_CM_EVENT_REJECTED, m->reason);
		if (!e)
			break;
		cm_copy_pdata(e, m, CM_REJ_PDATA);
		cm_queue_event(p, e);
		break;
	case CM_MSG_DREQ:
		if (cm_is_connected(p) || p->state == CM_DISC_SENT) {
			/* the DREP waits for rdma_disconnect or destroy */
			cm_dreq_rcvd(p);
		} else if (p->state != CM_DREQ_RCVD) {
			struct cm_msg drep;

			memset(&drep, 0, sizeof(drep));
			drep.type = CM_MSG_DREP;
			cm_send_msg(s, &drep);
		}
		break;
	case CM_MSG_DREP:
		if (p->state == CM_DISC_SENT) {
			cm_tmo_cancel(p);
			cm_disc_done(p, 0);
		}
		break;
	default:
		break;
	}
}

static void cm_handle_accept(struct cm_sock *ls)
{
	struct cm_id *l = ls->id;

	for (;;) {
		struct epoll_event ev;
		struct cm_sock *s;
		int fd;

		fd = accept4(ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		s = cm_sock_new(fd);
		if (!s) {
			close(fd);
			continue;
		}
		s->listener = l;
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = s;
		if (epoll_ctl(cm.epfd, EPOLL_CTL_ADD, fd, &ev)) {
			cm_sock_close(s);
			continue;
		}
		s->in_epoll = 1;
		cm_list_add_tail(&l->pending, &s->link);
	}
}

static void *cm_progress(void *arg)
{
	struct epoll_event evs[64];
	int epfd = (int)(long)arg;
	struct cm_msg m;
	int i, n;

	for (;;) {
		n = epoll_wait(epfd, evs, 64, -1);
		if (n < 0)
			continue;
		pthread_mutex_lock(&cm.lock);
		for (i = 0; i < n; i++) {
			struct cm_sock *s = evs[i].data.ptr;
			ssize_t r;

			if (s->dead || !s->in_epoll)
				continue;
			if (s == &cm_timer_tag) {
				cm_tmo_run();
				continue;
			}
			if (s->listening) {
				cm_handle_accept(s);
				continue;
			}
			/* drain every message, then look at hang-ups */
			for (;;) {
				r = recv(s->fd, &m, sizeof(m), MSG_DONTWAIT);
				if (r <= 0)
					break;
				if (r == sizeof(m))
					cm_handle_msg(s, &m);
				if (s->dead || !s->in_epoll)
					break;
			}
			if (s->dead || !s->in_epoll)
				continue;
			if (r == 0 || (r < 0 && errno != EAGAIN) ||
			    (evs[i].events & (EPOLLHUP | EPOLLERR)))
				cm_handle_hup(s);
		}
		/* nothing from this batch can point at these any more */
		while (!cm_list_empty(&cm.graveyard)) {
			struct cm_list *l = cm.graveyard.next;

			cm_list_del(l);
			free(cm_container_of(l, struct cm_sock, link));
		}
		pthread_mutex_unlock(&cm.lock);
	}
	return NULL;
}

/*
 * Start the progress thread with the first socket it must watch (again in
 * a fork child, which has none).  Caller holds cm.lock.
 */
static int cm_progress_start(void)
{
	struct epoll_event ev;
	sigset_t all, old;
	pthread_t t;
	int err;

	if (cm.epfd >= 0)
		return 0;
	cm.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (cm.epfd < 0)
		return -1;
	cm.timerfd = timerfd_create(CLOCK_MONOTONIC,
				    TFD_NONBLOCK | TFD_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.ptr = &cm_timer_tag;
	if (cm.timerfd < 0 ||
	    epoll_ctl(cm.epfd, EPOLL_CTL_ADD, cm.timerfd, &ev)) {
		err = errno;
		goto fail;
	}
	cm_tmo_program();
	/* signals belong to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, NULL, cm_progress, (void *)(long)cm.epfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto fail;
	pthread_detach(t);
	return 0;
fail:
	if (cm.timerfd >= 0)
		close(cm.timerfd);
	close(cm.epfd);
	cm.timerfd = cm.epfd = -1;
	errno = err;
	return -1;
}

/*
 * In a fork child, before anything else runs: close our copies of the
 * parent's sockets, so that the child holds none of its ports and
 * connections open.  Never epoll_ctl: the epoll instance is the parent's
 * too, and removing a file from it would blind the parent's progress.
 */
void cm_fork_child_socks(void)
{
	while (!cm_list_empty(&cm.socks)) {
		struct cm_sock *s = cm_container_of(cm.socks.next,
						    struct cm_sock, all);

		cm_list_del(&s->all);
		close(s->fd);
		s->fd = -1;
		s->dead = 1;
		s->in_epoll = 0;
	}
	/* the parent's timers, and its timerfd, are not ours */
	while (!cm_list_empty(&cm.timers)) {
		struct cm_id *p = cm_container_of(cm.timers.next,
						  struct cm_id, tmo_link);

		cm_list_del(&p->tmo_link);
		p->tmo_kind = CM_TMO_NONE;
	}
	if (cm.timerfd >= 0)
		close(cm.timerfd);
	if (cm.epfd >= 0)
		close(cm.epfd);
	cm.timerfd = cm.epfd = -1;
}

/* Caller holds cm.lock. */
int cm_sock_register(struct cm_sock *s)
{
	struct epoll_event ev;

	if (cm_progress_start())
		return -1;
	ev.events = EPOLLIN | (s->listening ? 0 : EPOLLRDHUP);
	ev.data.ptr = s;
	if (epoll_ctl(cm.epfd, EPOLL_CTL_ADD, s->fd, &ev))
		return -1;
	s->in_epoll = 1;
	return 0;
}

static int cm_valid_param(struct cm_id *p, struct rdma_conn_param *param)
{
	if (p->id.ps != RDMA_PS_TCP)
		return 0;
	if (!p->id.qp && !param)
		goto err;
	if (!param)
		return 0;
	if (param->responder_resources != RDMA_MAX_RESP_RES &&
	    param->responder_resources > cm.max_resp_res)
		goto err;
	if (param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    param->initiator_depth > cm.max_init_depth)
		goto err;
	return 0;
err:
	errno = EINVAL;
	return -1;
}

static void cm_fill_msg(struct cm_id *p, struct cm_msg *m, int type,
			struct rdma_conn_param *param, const void *pdata,
			int pdata_len)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->ps = p->id.ps;
	m->qp_type = p->id.qp_type;
	m->psn = p->local_psn;
	m->resp_res = p->responder_resources;
	m->init_depth = p->initiator_depth;
	if (param) {
		m->flow_ctrl = param->flow_control;
		m->retry = param->retry_count;
		m->rnr_retry = param->rnr_retry_count;
		m->srq = param->srq;
		m->qpn = param->qp_num;
	}
	m->ece_vendor = p->local_ece.vendor_id;
	m->ece_options = p->local_ece.options;
	if (pdata && pdata_len > 0) {
		memcpy(m->pdata, pdata, pdata_len);
		m->pdata_len = pdata_len;
	}
}

/*
 * REQ, REP and the SIDR REP of an accept carry the QP number: only the
 * calls that send them read id->qp, as the real library's do.  Other
 * messages (REJ, RTU, DREQ) must not, since the program may have
 * destroyed the QP by then.
 */
static void cm_msg_set_qp(struct cm_id *p, struct cm_msg *m)
{
	if (!p->id.qp)
		return;
	m->qpn = p->id.qp->qp_num;
	m->srq = !!p->id.qp->srq;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *p = cm_id(id);
	struct sockaddr_un sun;
	const void *pdata = NULL;
	struct cm_event *e;
	struct cm_msg m;
	int len = 0, n, fd, kind, other;
	uint16_t port;

	if (cm_inherited(id->channel))
		return -1;

	if (cm_valid_param(p, conn_param))
		return -1;
	if (conn_param) {
		pdata = conn_param->private_data;
		len = conn_param->private_data_len;
	}
	if (!pdata && p->connect_len) {
		pdata = p->connect;
		len = p->connect_len;
	}
	if (!pdata)
		len = 0;
	if (len > (cm_is_ud(id) ? cm_sidr_req_pdata_max(id->ps) :
				  cm_req_pdata_max(id->ps))) {
		errno = EINVAL;
		return -1;
	}
	/* the real library needs the device here (crashes without it) */
	if (!id->verbs || !p->port || p->state != CM_ROUTE_RESOLVED) {
		errno = EINVAL;
		return -1;
	}
	p->initiator_depth = conn_param &&
		conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH ?
		conn_param->initiator_depth : cm.max_init_depth;
	p->responder_resources = conn_param &&
		conn_param->responder_resources != RDMA_MAX_RESP_RES ?
		conn_param->responder_resources : cm.max_resp_res;
	cm_fill_msg(p, &m, cm_is_ud(id) ? CM_MSG_SIDR_REQ : CM_MSG_REQ,
		    conn_param, pdata, len);
	cm_msg_set_qp(p, &m);
	m.qkey = cm_ud_qkey(id);
	memcpy(&m.src, &id->route.addr.src_addr,
	       cm_addr_len(&id->route.addr.src_addr));
	memcpy(&m.dst, &id->route.addr.dst_addr,
	       cm_addr_len(&id->route.addr.dst_addr));

	kind = id->route.addr.dst_addr.sa_family == AF_INET6 ? CM_PN_V6 :
	       CM_PN_V4;
	port = cm_addr_port(&id->route.addr.dst_addr);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	n = cm_sockname(sun.sun_path + 1, sizeof(sun.sun_path) - 1, id->ps,
			port, kind);
	fd = p->port->fd;
	/* outside cm.lock: an in-process listener must be able to accept */
	if (connect(fd, (struct sockaddr *)&sun,
		    offsetof(struct sockaddr_un, sun_path) + 1 + n) ||
	    send(fd, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m)) {
		/*
		 * Nobody listens: the IB CM answers "invalid service ID"; a
		 * SIDR REQ gets a SIDR REP "unsupported", i.e. UNREACHABLE.
		 * A listener of the other family only (the IB CM's listener
		 * is per port) has no id for it: rejected by the consumer.
		 */
		other = kind == CM_PN_V4 &&
			id->route.addr.dst_addr.sa_family != AF_INET ? 0 :
			cm_port_listened(id->ps, port, kind ^ 1);
		pthread_mutex_lock(&cm.lock);
		p->state = CM_REJECTED;
		if (cm_is_ud(id))
			e = cm_event_new(p, RDMA_CM_EVENT_UNREACHABLE,
					 other ? CM_SIDR_REJECT :
					 CM_SIDR_UNSUPPORTED);
		else
			e = cm_event_new(p, RDMA_CM_EVENT_REJECTED,
					 other ? CM_REJ_CONSUMER :
					 CM_REJ_INVALID_SID);
		if (e) {
			memset(&m, 0, sizeof(m));
			cm_copy_pdata(e, &m, cm_is_ud(id) ? CM_SIDR_REP_PDATA :
				      CM_REJ_PDATA);
			cm_queue_event(p, e);
		}
		pthread_mutex_unlock(&cm.lock);
	} else {
		pthread_mutex_lock(&cm.lock);
		p->state = CM_CONNECTING;
		if (cm_sock_register(p->port)) {
			pthread_mutex_unlock(&cm.lock);
			return -1;
		}
		pthread_mutex_unlock(&cm.lock);
	}
	if (p->connect_len) {
		free(p->connect);
		p->connect = NULL;
		p->connect_len = 0;
	}
	return cm_complete(id);
}

/* QP transitions as the real library makes them, through the PLT. */
static int cm_modify_qp_rtr(struct rdma_cm_id *id, uint8_t resp_res)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	if (!id->qp)
		return 0;
	attr.qp_state = IBV_QPS_INIT;
	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	ret = ibv_modify_qp(id->qp, &attr, mask);
	if (ret) {
		errno = ret;
		return -1;
	}
	attr.qp_state = IBV_QPS_RTR;
	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	if (resp_res != RDMA_MAX_RESP_RES)
		attr.max_dest_rd_atomic = resp_res;
	ret = ibv_modify_qp(id->qp, &attr, mask);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

static int cm_modify_qp_rts(struct rdma_cm_id *id, uint8_t init_depth)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	if (!id->qp)
		return 0;
	attr.qp_state = IBV_QPS_RTS;
	ret = rdma_init_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		attr.max_rd_atomic = init_depth;
	ret = ibv_modify_qp(id->qp, &attr, mask);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

/* Inside rdma_get_cm_event: REP arrived on an active id. */
int cm_process_conn_resp(struct cm_event *e)
{
	struct rdma_cm_id *id = e->ev.id;
	struct cm_id *p = cm_id(id);
	struct cm_msg m;

	if (!id->qp)
		return 0;	/* the user calls rdma_establish */
	if (cm_modify_qp_rtr(id, RDMA_MAX_RESP_RES) ||
	    cm_modify_qp_rts(id, RDMA_MAX_INIT_DEPTH)) {
		cm_qp_to_err(id);
		pthread_mutex_lock(&cm.lock);
		p->connect_error = 1;
		pthread_mutex_unlock(&cm.lock);
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		e->ev.status = -errno;
		return -1;
	}
	cm_fill_msg(p, &m, CM_MSG_RTU, NULL, NULL, 0);
	pthread_mutex_lock(&cm.lock);
	if (p->state == CM_REJECTED) {
		/* a REJ came first: the kernel refuses the RTU (EINVAL) */
		p->connect_error = 1;
		pthread_mutex_unlock(&cm.lock);
		cm_qp_to_err(id);
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		e->ev.status = -EINVAL;
		return -1;
	}
	if (p->state == CM_REP_RCVD) {
		p->state = CM_CONNECTED;
		cm_send_msg(cm_conn_of(p), &m);
	}
	pthread_mutex_unlock(&cm.lock);
	e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
	return 0;
}

/*
 * Inside rdma_get_cm_event: a CONNECT_REQUEST becomes a new id that
 * inherits the listener's context, port space, QP type and channel; a
 * synchronous listener's child gets its own channel through the exported
 * rdma_migrate_id, as in the real library.
 */
int cm_process_conn_req(struct cm_event *e)
{
	struct cm_id *l = e->owner, *c;
	struct cm_sock *s = e->req;
	struct rdma_ib_addr *ib;
	struct rdma_cm_id *id;
	int max;

	if (cm_alloc_id(l->id.channel, &c, l->id.context, l->id.ps,
			l->id.qp_type))
		goto fail;
	id = &c->id;
	if ((l->sync && rdma_migrate_id(id, NULL)) || cm_bind_device(id)) {
		rdma_destroy_id(id);
		goto fail;
	}
	memcpy(&id->route.addr.dst_addr, &s->req.src,
	       cm_addr_len((struct sockaddr *)&s->req.src));
	memcpy(&id->route.addr.src_addr, &s->req.dst,
	       cm_addr_len((struct sockaddr *)&s->req.dst));
	if (!cm_addr_len(&id->route.addr.src_addr))
		memcpy(&id->route.addr.src_addr, &l->id.route.addr.src_addr,
		       sizeof(id->route.addr.src_addr));
	/* the GIDs of both ends, and the REQ's path turned round */
	ib = &id->route.addr.addr.ibaddr;
	cm_set_gid(&ib->sgid, &id->route.addr.src_addr);
	cm_set_gid(&ib->dgid, &id->route.addr.dst_addr);
	ib->pkey = htobe16(0xffff);
	if (!cm_is_ud(id)) {
		id->route.path_rec = cm_path_new(&ib->sgid, &ib->dgid);
		id->route.num_paths = id->route.path_rec ? 1 : 0;
	}

	pthread_mutex_lock(&cm.lock);
	c->conn = s;
	s->id = c;
	e->req = NULL;
	c->state = s->hup ? CM_ERROR : CM_REQ_RCVD;
	if (s->hup && !cm_is_ud(id)) {
		/* the active side's REJ, after the request (cm_handle_hup) */
		struct cm_event *rej = cm_event_new(c, RDMA_CM_EVENT_REJECTED,
						    CM_REJ_TIMEOUT);

		if (rej)
			cm_queue_event(c, rej);
	}
	c->remote_qpn = s->req.qpn;
	c->remote_psn = s->req.psn;
	c->remote_known = 1;
	/* the initiator's view, turned round as the kernel does */
	c->initiator_depth = s->req.resp_res;
	c->responder_resources = s->req.init_depth;
	c->retry = s->req.retry;
	c->rnr_retry = s->req.rnr_retry;
	c->remote_ece.vendor_id = s->req.ece_vendor;
	c->remote_ece.options = s->req.ece_options;
	pthread_mutex_unlock(&cm.lock);

	if (cm_is_ud(id)) {
		/* the initiator's QP and Q_Key, and the way back to it */
		cm_copy_pdata(e, &s->req, cm_sidr_req_pdata_max(l->id.ps));
		cm_ud_ah(id, &e->ev.param.ud.ah_attr, &ib->dgid);
		e->ev.param.ud.qp_num = s->req.qpn;
		e->ev.param.ud.qkey = s->req.qkey;
		e->ev.id = id;
		e->ev.listen_id = &l->id;
		return 0;
	}
	max = cm_req_pdata_max(l->id.ps);
	cm_copy_pdata(e, &s->req, max);
	e->ev.param.conn.responder_resources = s->req.init_depth;
	e->ev.param.conn.initiator_depth = s->req.resp_res;
	e->ev.param.conn.flow_control = s->req.flow_ctrl;
	e->ev.param.conn.retry_count = s->req.retry;
	e->ev.param.conn.rnr_retry_count = s->req.rnr_retry;
	e->ev.param.conn.srq = s->req.srq;
	e->ev.param.conn.qp_num = s->req.qpn;
	e->ev.id = id;
	e->ev.listen_id = &l->id;
	return 0;
fail:
	pthread_mutex_lock(&cm.lock);
	if (e->req) {
		struct cm_msg rej;

		memset(&rej, 0, sizeof(rej));
		rej.type = CM_MSG_REJ;
		rej.reason = CM_REJ_CONSUMER;
		cm_send_msg(e->req, &rej);
		cm_sock_close(e->req);
		e->req = NULL;
	}
	pthread_mutex_unlock(&cm.lock);
	return -1;
}

/*
 * Caller holds cm.lock.  The SIDR REP ends the exchange: the passive UD
 * id gets no further event, so the connection socket goes at once.
 */
static int cm_send_sidr_rep(struct cm_id *p, struct cm_msg *m, int state)
{
	int ret;

	if (p->state != CM_REQ_RCVD || !p->conn) {
		errno = p->state == CM_ERROR ? ECONNRESET : EINVAL;
		return -1;
	}
	ret = cm_send_msg(p->conn, m);
	cm_sock_close(p->conn);
	p->conn = NULL;
	if (ret) {
		p->state = CM_ERROR;
		errno = ECONNRESET;
		return -1;
	}
	p->state = state;
	return 0;
}

/* rdma_accept of a UD (SIDR) request: answer with our QPN and Q_Key. */
static int cm_accept_ud(struct cm_id *p, struct rdma_conn_param *param)
{
	struct rdma_cm_id *id = &p->id;
	const void *pdata = NULL;
	struct cm_msg m;
	int len = 0, ret;

	/* the real library reads conn_param->qp_num first and crashes */
	if (!id->qp && !param) {
		errno = EINVAL;
		return -1;
	}
	if (param && param->private_data) {
		pdata = param->private_data;
		len = param->private_data_len;
	}
	if (len > CM_SIDR_REP_PDATA) {
		errno = EINVAL;
		return -1;
	}
	cm_fill_msg(p, &m, CM_MSG_SIDR_REP, param, pdata, len);
	cm_msg_set_qp(p, &m);
	m.reason = CM_SIDR_SUCCESS;
	m.qkey = cm_ud_qkey(id);
	pthread_mutex_lock(&cm.lock);
	ret = cm_send_sidr_rep(p, &m, CM_CONNECTED);
	pthread_mutex_unlock(&cm.lock);
	if (ret)
		cm_qp_to_err(id);
	return ret;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *p = cm_id(id);
	const void *pdata = NULL;
	uint8_t init_depth, resp_res;
	struct cm_msg m;
	int len = 0, ret;

	if (cm_inherited(id->channel))
		return -1;

	if (cm_is_ud(id))
		return cm_accept_ud(p, conn_param);
	/* the real library reads conn_param->qp_num first and crashes */
	if (!id->qp && !conn_param) {
		errno = EINVAL;
		return -1;
	}
	if (cm_valid_param(p, conn_param))
		return -1;
	if (conn_param && conn_param->private_data) {
		pdata = conn_param->private_data;
		len = conn_param->private_data_len;
	}
	if (len > CM_REP_PDATA) {
		errno = EINVAL;
		return -1;
	}
	init_depth = p->initiator_depth;
	resp_res = p->responder_resources;
	if (conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		init_depth = conn_param->initiator_depth;
	if (conn_param &&
	    conn_param->responder_resources != RDMA_MAX_RESP_RES)
		resp_res = conn_param->responder_resources;

	/* the CM's values are the REQ's until the REP goes out */
	if (id->qp_type != IBV_QPT_UD) {
		ret = cm_modify_qp_rtr(id, resp_res);
		if (ret)
			return ret;
		ret = cm_modify_qp_rts(id, init_depth);
		if (ret)
			return ret;
	}
	p->initiator_depth = init_depth;
	p->responder_resources = resp_res;
	cm_fill_msg(p, &m, CM_MSG_REP, conn_param, pdata, len);
	cm_msg_set_qp(p, &m);
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_REQ_RCVD || !p->conn) {
		pthread_mutex_unlock(&cm.lock);
		cm_qp_to_err(id);
		errno = p->state == CM_ERROR ? ECONNRESET : EINVAL;
		return -1;
	}
	p->state = CM_ACCEPTED;
	if (cm_send_msg(p->conn, &m)) {
		p->state = CM_ERROR;
		pthread_mutex_unlock(&cm.lock);
		cm_qp_to_err(id);
		errno = ECONNRESET;
		return -1;
	}
	pthread_mutex_unlock(&cm.lock);
	if (id->qp_type == IBV_QPT_UD)
		return 0;
	return cm_complete(id);
}

static int cm_reject(struct rdma_cm_id *id, const void *pdata,
		     uint8_t len, int reason)
{
	struct cm_id *p = cm_id(id);
	struct cm_msg m;
	int ret;

	if (cm_inherited(id->channel))
		return -1;

	if (len > (cm_is_ud(id) ? CM_SIDR_REP_PDATA : CM_REJ_PDATA)) {
		errno = EINVAL;
		return -1;
	}
	if (cm_is_ud(id)) {
		/* a SIDR REP with status "rejected" */
		cm_fill_msg(p, &m, CM_MSG_SIDR_REP, NULL, pdata,
			    pdata ? len : 0);
		m.reason = CM_SIDR_REJECT;
		pthread_mutex_lock(&cm.lock);
		ret = cm_send_sidr_rep(p, &m, CM_REJECTED);
		pthread_mutex_unlock(&cm.lock);
		return ret;
	}
	cm_fill_msg(p, &m, CM_MSG_REJ, NULL, pdata, pdata ? len : 0);
	m.reason = reason;
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_REQ_RCVD || !p->conn) {
		pthread_mutex_unlock(&cm.lock);
		errno = EINVAL;
		return -1;
	}
	p->state = CM_REJECTED;
	cm_send_msg(p->conn, &m);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	return cm_reject(id, private_data, private_data_len, CM_REJ_CONSUMER);
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len)
{
	return cm_reject(id, private_data, private_data_len,
			 CM_REJ_VENDOR_ECE);
}

int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *p = cm_id(id);
	struct cm_msg m;

	if (cm_inherited(id->channel))
		return -1;

	if (id->qp) {
		errno = EINVAL;
		return -1;
	}
	cm_fill_msg(p, &m, CM_MSG_RTU, NULL, NULL, 0);
	pthread_mutex_lock(&cm.lock);
	if (p->state != CM_REP_RCVD) {
		pthread_mutex_unlock(&cm.lock);
		errno = EINVAL;
		return -1;
	}
	p->state = CM_CONNECTED;
	cm_send_msg(cm_conn_of(p), &m);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *p = cm_id(id);
	struct cm_msg m;
	int wait = 0;

	if (cm_inherited(id->channel))
		return -1;

	if (!id->verbs) {
		errno = EINVAL;
		return -1;
	}
	/* flush first, as ucma_shutdown does for IB/RoCE */
	cm_qp_to_err(id);
	/* a UD id has no connection: the IB CM has nothing to send */
	if (cm_is_ud(id))
		return 0;
	pthread_mutex_lock(&cm.lock);
	switch (p->state) {
	case CM_ACCEPTED:
	case CM_REP_RCVD:
	case CM_CONNECTED:
	case CM_CONNECTING:
		cm_fill_msg(p, &m, CM_MSG_DREQ, NULL, NULL, 0);
		p->state = CM_DISC_SENT;
		if (!cm_conn_of(p) || cm_conn_of(p)->hup ||
		    cm_send_msg(cm_conn_of(p), &m))
			cm_disc_done(p, 0);	/* nobody left to answer */
		else
			cm_tmo_arm(p, CM_TMO_DREQ, cm.dreq_ms[!!p->conn]);
		wait = 1;
		break;
	case CM_DREQ_RCVD:
		/* answer the peer's DREQ */
		cm_fill_msg(p, &m, CM_MSG_DREP, NULL, NULL, 0);
		if (cm_conn_of(p) && !cm_conn_of(p)->hup)
			cm_send_msg(cm_conn_of(p), &m);
		cm_timewait(p);
		wait = !p->disc_fetched;
		break;
	case CM_DISC_SENT:
	case CM_DISCONNECTED:
		/* a second disconnect succeeds quietly */
		wait = !p->disc_fetched;
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&cm.lock);
	return wait ? cm_complete(id) : 0;
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cm_id *p = cm_id(id);

	if (cm_inherited(id->channel))
		return -1;

	if (p->state != CM_ACCEPTED && p->state != CM_CONNECTED &&
	    p->state != CM_REP_RCVD) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/*
 * The INIT access flags of an RC/UC QP, as the kernel's CM gives them:
 * none before the id has a connection (cma_ib_init_qp_attr), then remote
 * write, and remote read and atomics when the CM's responder resources
 * are not 0 (cm_init_qp_init_attr): the REQ's initiator depth on the
 * passive side, the REP's on the active side.
 */
static int cm_qp_access(struct cm_id *p)
{
	switch (p->state) {
	case CM_IDLE:
	case CM_BOUND:
	case CM_ADDR_RESOLVED:
	case CM_ROUTE_RESOLVED:
	case CM_LISTEN:
		return 0;
	default:
		return IBV_ACCESS_REMOTE_WRITE |
		       (p->responder_resources ? IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC : 0);
	}
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask)
{
	struct cm_id *p = cm_id(id);
	enum ibv_qp_state state;

	if (cm_inherited(id->channel))
		return -1;

	if (!qp_attr || !qp_attr_mask || !id->verbs) {
		errno = EINVAL;
		return -1;
	}
	state = qp_attr->qp_state;
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		qp_attr->pkey_index = 0;
		qp_attr->port_num = id->port_num ? id->port_num : 1;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			qp_attr->qkey = cm_ud_qkey(id);
			*qp_attr_mask |= IBV_QP_QKEY;
		} else {
			qp_attr->qp_access_flags = cm_qp_access(p);
			*qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (cm_is_ud(id)) {
			/* UD needs nothing beyond INIT's attributes */
			*qp_attr_mask = IBV_QP_STATE;
			return 0;
		}
		if (!p->remote_known)
			break;
		qp_attr->path_mtu = IBV_MTU_4096;
		qp_attr->dest_qp_num = p->remote_qpn;
		qp_attr->rq_psn = p->remote_psn;
		qp_attr->max_dest_rd_atomic = p->responder_resources;
		qp_attr->min_rnr_timer = 12;
		qp_attr->ah_attr.is_global = 1;
		qp_attr->ah_attr.port_num = id->port_num ? id->port_num : 1;
		qp_attr->ah_attr.grh.dgid = id->route.addr.addr.ibaddr.dgid;
		qp_attr->ah_attr.grh.hop_limit = 64;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		if (cm_is_ud(id)) {
			qp_attr->sq_psn = 0;
			*qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
			return 0;
		}
		if (!p->remote_known)
			break;
		qp_attr->sq_psn = p->local_psn;
		qp_attr->timeout = p->ack_timeout >= 0 ? p->ack_timeout : 14;
		qp_attr->retry_cnt = 7;
		qp_attr->rnr_retry = 7;
		qp_attr->max_rd_atomic = p->initiator_depth;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_TIMEOUT |
				IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		break;
	}
	errno = EINVAL;
	return -1;
}

/* Destroy the CQs and channels the library made for the id. */
static void cm_destroy_cqs(struct cm_id *p)
{
	struct rdma_cm_id *id = &p->id;

	if (p->own_recv_cq && id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->recv_cq_channel)
			ibv_destroy_comp_channel(id->recv_cq_channel);
	}
	if (p->own_send_cq && id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		if (id->send_cq_channel)
			ibv_destroy_comp_channel(id->send_cq_channel);
	}
	if (p->own_recv_cq) {
		id->recv_cq = NULL;
		id->recv_cq_channel = NULL;
	}
	if (p->own_send_cq) {
		id->send_cq = NULL;
		id->send_cq_channel = NULL;
	}
	p->own_recv_cq = p->own_send_cq = 0;
}

static int cm_create_cq(struct cm_id *p, int send, int cqe)
{
	struct rdma_cm_id *id = &p->id;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;

	ch = ibv_create_comp_channel(id->verbs);
	if (!ch)
		return -1;
	cq = ibv_create_cq(id->verbs, cqe > 0 ? cqe : 1, id, ch, 0);
	if (!cq) {
		ibv_destroy_comp_channel(ch);
		return -1;
	}
	if (send) {
		id->send_cq_channel = ch;
		id->send_cq = cq;
		p->own_send_cq = 1;
	} else {
		id->recv_cq_channel = ch;
		id->recv_cq = cq;
		p->own_recv_cq = 1;
	}
	return 0;
}

int rdma_create_qp_ex(struct rdma_cm_id *id,
		      struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *p = cm_id(id);
	struct ibv_qp_attr qattr;
	struct ibv_qp *qp;
	int mask, ret;

	if (cm_inherited(id->channel))
		return -1;

	if (!attr || id->qp) {
		errno = EINVAL;
		return -1;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	}
	/* the real library crashes on an unbound id; fail cleanly */
	if (!attr->pd || !id->verbs || attr->pd->context != id->verbs) {
		errno = EINVAL;
		return -1;
	}
	if ((id->send_cq && attr->send_cq && attr->send_cq != id->send_cq) ||
	    (id->recv_cq && attr->recv_cq && attr->recv_cq != id->recv_cq)) {
		errno = EINVAL;
		return -1;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV ||
	    attr->qp_type == IBV_QPT_XRC_SEND) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (!attr->recv_cq && !id->recv_cq &&
	    cm_create_cq(p, 0, attr->cap.max_recv_wr))
		goto err;
	if (!attr->send_cq && !id->send_cq &&
	    cm_create_cq(p, 1, attr->cap.max_send_wr))
		goto err;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (!attr->srq && id->srq) {
		attr->srq = id->srq;
		attr->recv_cq = id->recv_cq;
	}

	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp)
		goto err;

	/* RC/UC to INIT; UD all the way to RTS */
	qattr.qp_state = IBV_QPS_INIT;
	ret = rdma_init_qp_attr(id, &qattr, &mask);
	if (!ret)
		ret = ibv_modify_qp(qp, &qattr, mask);
	if (!ret && id->qp_type == IBV_QPT_UD) {
		memset(&qattr, 0, sizeof(qattr));
		qattr.qp_state = IBV_QPS_RTR;
		ret = ibv_modify_qp(qp, &qattr, IBV_QP_STATE);
		if (!ret) {
			qattr.qp_state = IBV_QPS_RTS;
			qattr.sq_psn = 0;
			ret = ibv_modify_qp(qp, &qattr,
					    IBV_QP_STATE | IBV_QP_SQ_PSN);
		}
	}
	if (ret) {
		ibv_destroy_qp(qp);
		errno = ret > 0 ? ret : errno;
		goto err;
	}
	id->pd = qp->pd;
	pthread_mutex_lock(&cm.lock);
	id->qp = qp;
	pthread_mutex_unlock(&cm.lock);
	return 0;
err:
	ret = errno;
	cm_destroy_cqs(p);
	errno = ret;
	return -1;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!qp_init_attr) {
		errno = EINVAL;
		return -1;
	}
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &ex);
	if (ret)
		return ret;
	memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct ibv_qp *qp;

	pthread_mutex_lock(&cm.lock);
	qp = id->qp;
	id->qp = NULL;
	pthread_mutex_unlock(&cm.lock);
	/* the real library crashes on a NULL QP; do nothing */
	if (!qp)
		return;
	ibv_destroy_qp(qp);
	if (!(id->srq && id->qp_type == IBV_QPT_XRC_RECV))
		cm_destroy_cqs(cm_id(id));
}

int rdma_create_srq_ex(struct rdma_cm_id *id,
		       struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr sattr;
	struct ibv_srq *srq;
	struct ibv_pd *pd;

	if (!attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) {
		errno = EINVAL;
		return -1;
	}
	if (attr->srq_type != IBV_SRQT_BASIC) {
		errno = EOPNOTSUPP;	/* XRC comes with a later issue */
		return -1;
	}
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ?
	     attr->pd : id->pd;
	if (!pd) {
		errno = EINVAL;
		return -1;
	}
	memset(&sattr, 0, sizeof(sattr));
	sattr.srq_context = attr->srq_context;
	sattr.attr = attr->attr;
	srq = ibv_create_srq(pd, &sattr);
	if (!srq)
		return -1;
	attr->attr = sattr.attr;
	id->srq = srq;
	if (!id->pd)
		id->pd = pd;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (!attr) {
		errno = EINVAL;
		return -1;
	}
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC :
			IBV_SRQT_BASIC;
	ex.pd = pd ? pd : id->pd;
	ret = rdma_create_srq_ex(id, &ex);
	if (!ret)
		attr->attr = ex.attr;
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	struct ibv_srq *srq = id->srq;

	if (!srq)
		return;
	ibv_destroy_srq(srq);
	id->srq = NULL;
	cm_destroy_cqs(cm_id(id));
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask) {
		errno = EINVAL;
		return -1;
	}
	cm_id(id)->local_ece = *ece;
	return 0;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece) {
		errno = EINVAL;
		return -1;
	}
	*ece = cm_id(id)->remote_ece;
	return 0;
}

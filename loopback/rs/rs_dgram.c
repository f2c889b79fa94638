/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/rs/rs_dgram.c: datagram rsockets, as rdma-core 44.0 makes
 * them.  The rsocket is a UDP socket (its fd is the socket number, its
 * port the rsocket's) plus, per local address it sends from, a UD QP on a
 * synchronous cm id of RDMA_PS_UDP bound to that address.  The first
 * datagram to a destination goes over UDP with our QP number; the peer's
 * UDP service answers over UDP with its own, makes an address handle
 * (resolving a temporary id: rdma_create_id, rdma_resolve_addr,
 * rdma_resolve_route, rdma_destroy_id) and hands the payload to its own
 * QP, so that every datagram reaches the program through a UD receive.
 * Later datagrams go QP to QP.  Each carries its sender's address in a
 * header of ours.  As on UD, a datagram finding no receive posted is
 * dropped.
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <infiniband/verbs.h>

#include "rs.h"

#define DS_UDP_TAG	0x55555555
#define DS_GRH		40

/* The header of a datagram sent over UDP. */
struct ds_udp_hdr {
	uint32_t tag;			/* network order */
	uint8_t version;		/* 4 or 6 */
	uint8_t op;			/* RS_OP_DATA or RS_OP_CTRL */
	uint8_t len;			/* of this header */
	uint8_t pad;
	uint32_t qpn;			/* the sender's QP, network order */
	union {
		uint32_t v4;
		uint8_t v6[16];
	} addr;
};
#define DS_UDP_V4	16
#define DS_UDP_V6	28

static int ds_addr_cmp(const void *a, const void *b)
{
	const struct sockaddr *x = a, *y = b;
	size_t len = x->sa_family == AF_INET6 && y->sa_family == AF_INET6 ?
		     sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	return memcmp(a, b, len);
}

int ds_init(struct rs *rs, int domain)
{
	rs->udp_sock = socket(domain, SOCK_DGRAM, 0);
	if (rs->udp_sock < 0)
		return rs->udp_sock;
	rs->epfd = epoll_create(2);
	if (rs->epfd < 0)
		return rs->epfd;
	return 0;
}

static int ds_max_qpsize(void)
{
	struct ibv_device_attr attr;

	if (cm.verbs && !ibv_query_device(cm.verbs, &attr))
		return attr.max_qp_wr;
	return RS_QP_MAX;
}

/* Queues no longer than the buffers allow, and buffers to match. */
static void ds_set_qp_size(struct rs *rs)
{
	uint32_t max = ds_max_qpsize();

	if (max > RS_QP_MAX)
		max = RS_QP_MAX;
	if (rs->sq_size > max)
		rs->sq_size = max;
	if (rs->rq_size > max)
		rs->rq_size = max;
	if (rs->rq_size > rs->rbuf_size / RS_SNDLOWAT)
		rs->rq_size = rs->rbuf_size / RS_SNDLOWAT;
	else
		rs->rbuf_size = rs->rq_size * RS_SNDLOWAT;
	if (rs->sq_size > rs->sbuf_size / RS_SNDLOWAT)
		rs->sq_size = rs->sbuf_size / RS_SNDLOWAT;
	else
		rs->sbuf_size = rs->sq_size * RS_SNDLOWAT;
}

/* Send slots, the receive queue and the UDP service, at first use. */
int ds_init_ep(struct rs *rs)
{
	uint8_t *msg;
	int i, ret;

	ds_set_qp_size(rs);
	if (!rs->sq_size || !rs->rq_size)
		return rs_seterr(EINVAL);
	rs->sbuf = calloc(rs->sq_size, RS_SNDLOWAT);
	if (!rs->sbuf)
		return rs_seterr(ENOMEM);
	rs->dmsg = calloc(rs->rq_size + 1, sizeof(*rs->dmsg));
	if (!rs->dmsg)
		return rs_seterr(ENOMEM);
	rs->sqe_avail = rs->sq_size;
	rs->rqe_avail = rs->rq_size;
	rs->smsg_free = rs->sbuf;
	for (i = 0, msg = rs->sbuf; i < rs->sq_size - 1; i++) {
		*(void **)msg = msg + RS_SNDLOWAT;
		msg += RS_SNDLOWAT;
	}
	*(void **)msg = NULL;
	ret = rs_notify_svc(RS_SVC_UDP, rs, RS_SVC_ADD);
	if (ret)
		return ret;
	rs->state = RS_READABLE | RS_WRITABLE;
	return 0;
}

static int ds_post_recv(struct rs *rs, struct rs_dqp *qp, uint32_t offset)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge[2];

	sge[0].addr = (uintptr_t)qp->rbuf + rs->rbuf_size;
	sge[0].length = DS_GRH;
	sge[0].lkey = qp->rmr->lkey;
	sge[1].addr = (uintptr_t)qp->rbuf + offset;
	sge[1].length = RS_SNDLOWAT;
	sge[1].lkey = qp->rmr->lkey;
	wr.wr_id = RS_WR_RECV | offset;
	wr.next = NULL;
	wr.sg_list = sge;
	wr.num_sge = 2;
	return rs_seterr(ibv_post_recv(qp->cm_id->qp, &wr, &bad));
}

static void ds_format_hdr(struct rs_dhdr *h, const struct sockaddr *sa)
{
	memset(h, 0, sizeof(*h));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		h->version = 4;
		h->len = RS_DHDR_V4;
		h->port = s->sin_port;
		h->a.v4 = s->sin_addr.s_addr;
	} else {
		const struct sockaddr_in6 *s = (const void *)sa;

		h->version = 6;
		h->len = RS_DHDR_V6;
		h->port = s->sin6_port;
		h->a.v6.flowinfo = s->sin6_flowinfo;
		memcpy(h->a.v6.addr, &s->sin6_addr, 16);
	}
}

static void ds_dest_link(struct rs *rs, struct rs_dest *d)
{
	d->next = rs->dests;
	rs->dests = d;
}

static void ds_dest_unlink(struct rs *rs, struct rs_dest *d)
{
	struct rs_dest **p;

	for (p = &rs->dests; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			return;
		}
}

static struct rs_dest *ds_dest_find(struct rs *rs, const void *addr)
{
	struct rs_dest *d;

	for (d = rs->dests; d; d = d->next)
		if (!ds_addr_cmp(addr, &d->addr))
			return d;
	return NULL;
}

/* The QP's own destination: an address handle to itself. */
static int ds_add_qp_dest(struct rs_dqp *qp, const struct sockaddr *addr,
			  socklen_t len)
{
	struct ibv_port_attr port;
	struct ibv_ah_attr attr;

	memcpy(&qp->self.addr, addr, len);
	qp->self.qp = qp;
	qp->self.qpn = qp->cm_id->qp->qp_num;
	if (ibv_query_port(qp->cm_id->verbs, qp->cm_id->port_num, &port))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.dlid = port.lid;
	attr.port_num = qp->cm_id->port_num;
	qp->self.ah = ibv_create_ah(qp->cm_id->pd, &attr);
	if (!qp->self.ah)
		return rs_seterr(ENOMEM);
	ds_dest_link(qp->rs, &qp->self);
	return 0;
}

static void ds_free_qp(struct rs_dqp *qp)
{
	struct rdma_cm_id *id = qp->cm_id;
	struct rs *rs = qp->rs;

	if (qp->smr)
		ibv_dereg_mr(qp->smr);
	if (qp->rbuf) {
		if (qp->rmr)
			ibv_dereg_mr(qp->rmr);
		free(qp->rbuf);
	}
	if (id) {
		if (id->qp) {
			ds_dest_unlink(rs, &qp->self);
			epoll_ctl(rs->epfd, EPOLL_CTL_DEL,
				  id->recv_cq_channel->fd, NULL);
			rdma_destroy_qp(id);
		}
		if (qp->self.ah)
			ibv_destroy_ah(qp->self.ah);
		if (id->recv_cq) {
			ibv_destroy_cq(id->recv_cq);
			id->recv_cq = id->send_cq = NULL;
		}
		if (id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->recv_cq_channel);
			id->recv_cq_channel = id->send_cq_channel = NULL;
		}
		rdma_destroy_id(id);
	}
	free(qp);
}

static void ds_insert_qp(struct rs *rs, struct rs_dqp *qp)
{
	if (!rs->qps) {
		qp->next = qp;
	} else {
		qp->next = rs->qps->next;
		rs->qps->next = qp;
	}
	rs->qps = qp;
}

/* A UD QP for one local address, bound to it on the CM. */
static int ds_create_qp(struct rs *rs, const struct sockaddr *src,
			socklen_t len, struct rs_dqp **out)
{
	struct ibv_qp_init_attr attr;
	struct epoll_event ev;
	struct rs_dqp *qp;
	int i, ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return rs_seterr(ENOMEM);
	qp->rs = rs;
	ret = rdma_create_id(NULL, &qp->cm_id, qp, RDMA_PS_UDP);
	if (ret)
		goto err;
	ds_format_hdr(&qp->hdr, src);
	ret = rdma_bind_addr(qp->cm_id, (struct sockaddr *)src);
	if (ret)
		goto err;
	ret = -1;
	qp->rbuf = calloc(1, rs->rbuf_size + DS_GRH);
	if (!qp->rbuf) {
		errno = ENOMEM;
		goto err;
	}
	qp->smr = ibv_reg_mr(qp->cm_id->pd, rs->sbuf, rs->sbuf_size,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!qp->smr)
		goto err;
	qp->rmr = ibv_reg_mr(qp->cm_id->pd, qp->rbuf, rs->rbuf_size + DS_GRH,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!qp->rmr)
		goto err;
	ret = rs_create_cq(rs, qp->cm_id);
	if (ret)
		goto err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_context = qp;
	attr.send_cq = qp->cm_id->send_cq;
	attr.recv_cq = qp->cm_id->recv_cq;
	attr.qp_type = IBV_QPT_UD;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 2;
	attr.cap.max_inline_data = rs->sq_inline;
	ret = rdma_create_qp(qp->cm_id, NULL, &attr);
	if (ret)
		goto err;
	rs->sq_inline = attr.cap.max_inline_data;
	ret = ds_add_qp_dest(qp, src, len);
	if (ret)
		goto err;
	ev.events = EPOLLIN;
	ev.data.ptr = qp;
	ret = epoll_ctl(rs->epfd, EPOLL_CTL_ADD,
			qp->cm_id->recv_cq_channel->fd, &ev);
	if (ret)
		goto err;
	for (i = 0; i < rs->rq_size; i++) {
		ret = ds_post_recv(rs, qp, i * RS_SNDLOWAT);
		if (ret)
			goto err;
	}
	ds_insert_qp(rs, qp);
	*out = qp;
	return 0;
err:
	ds_free_qp(qp);
	return ret;
}

static int ds_is_any(const struct sockaddr *sa)
{
	const struct sockaddr_in *s4 = (const void *)sa;
	const struct sockaddr_in6 *s6 = (const void *)sa;

	if (sa->sa_family == AF_INET)
		return s4->sin_addr.s_addr == htonl(INADDR_ANY) ||
		       s4->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	return !memcmp(&s6->sin6_addr, &in6addr_any, 16) ||
	       !memcmp(&s6->sin6_addr, &in6addr_loopback, 16);
}

/*
 * The local address datagrams to dst leave from: the socket's, or when
 * it is a wildcard (or loopback: 44.0 counts it as one) the one the
 * kernel routes dst from, on the socket's port.
 */
static int ds_get_src_addr(struct rs *rs, const struct sockaddr *dst,
			   socklen_t dst_len, struct sockaddr_storage *src,
			   socklen_t *src_len)
{
	uint16_t port;
	int sock, ret;

	*src_len = sizeof(*src);
	ret = getsockname(rs->udp_sock, (struct sockaddr *)src, src_len);
	if (ret || !ds_is_any((struct sockaddr *)src))
		return ret;
	port = ((struct sockaddr_in *)src)->sin_port;
	sock = socket(dst->sa_family, SOCK_DGRAM, 0);
	if (sock < 0)
		return sock;
	ret = connect(sock, dst, dst_len);
	if (!ret) {
		*src_len = sizeof(*src);
		ret = getsockname(sock, (struct sockaddr *)src, src_len);
		((struct sockaddr_in *)src)->sin_port = port;
	}
	close(sock);
	return ret;
}

static int ds_get_qp(struct rs *rs, const struct sockaddr_storage *src,
		     socklen_t len, struct rs_dqp **qp)
{
	struct rs_dqp *q = rs->qps;

	if (q) {
		do {
			if (!ds_addr_cmp(rdma_get_local_addr(q->cm_id), src)) {
				*qp = q;
				return 0;
			}
			q = q->next;
		} while (q != rs->qps);
	}
	return ds_create_qp(rs, (const struct sockaddr *)src, len, qp);
}

/* The destination record of addr, with our QP for it. */
static int ds_get_dest(struct rs *rs, const struct sockaddr *addr,
		       socklen_t len, struct rs_dest **out)
{
	struct sockaddr_storage src;
	struct rs_dest *d;
	struct rs_dqp *qp = NULL;
	socklen_t slen;
	int ret = 0;

	if (len > sizeof(d->addr))
		return rs_seterr(EINVAL);
	pthread_mutex_lock(&rs->map_lock);
	d = ds_dest_find(rs, addr);
	if (d)
		goto found;
	ret = ds_get_src_addr(rs, addr, len, &src, &slen);
	if (ret)
		goto out;
	ret = ds_get_qp(rs, &src, slen, &qp);
	if (ret)
		goto out;
	d = ds_dest_find(rs, addr);
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			ret = rs_seterr(ENOMEM);
			goto out;
		}
		memcpy(&d->addr, addr, len);
		d->qp = qp;
		ds_dest_link(rs, d);
	}
found:
	*out = d;
out:
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

int ds_connect(struct rs *rs, const struct sockaddr *addr, socklen_t len)
{
	int ret;

	if (rs->state == RS_IDLE) {
		ret = ds_init_ep(rs);
		if (ret)
			return ret;
	}
	pthread_mutex_lock(&rs->slock);
	ret = connect(rs->udp_sock, addr, len);
	if (!ret)
		ret = ds_get_dest(rs, addr, len, &rs->conn_dest);
	pthread_mutex_unlock(&rs->slock);
	return ret;
}

/* Over UDP, to conn_dest: our QP number and address first. */
static ssize_t ds_send_udp(struct rs *rs, const void *buf, size_t len,
			   int flags, uint8_t op)
{
	struct rs_dqp *qp = rs->conn_dest->qp;
	struct ds_udp_hdr h;
	struct iovec iov[2];
	struct msghdr msg;
	ssize_t ret;

	memset(&h, 0, sizeof(h));
	h.tag = htobe32(DS_UDP_TAG);
	h.version = qp->hdr.version;
	h.op = op;
	h.qpn = htobe32(qp->cm_id->qp->qp_num & 0xffffff);
	if (qp->hdr.version == 4) {
		h.len = DS_UDP_V4;
		h.addr.v4 = qp->hdr.a.v4;
	} else {
		h.len = DS_UDP_V6;
		memcpy(h.addr.v6, qp->hdr.a.v6.addr, 16);
	}
	iov[0].iov_base = &h;
	iov[0].iov_len = h.len;
	iov[1].iov_base = (void *)buf;
	iov[1].iov_len = len;
	memset(&msg, 0, sizeof(msg));
	msg.msg_name = &rs->conn_dest->addr;
	msg.msg_namelen = rs_addrlen((struct sockaddr *)&rs->conn_dest->addr);
	msg.msg_iov = iov;
	msg.msg_iovlen = buf && len ? 2 : 1;
	ret = sendmsg(rs->udp_sock, &msg, flags);
	return ret > 0 ? ret - h.len : ret;
}

static int ds_post_send(struct rs *rs, struct ibv_sge *sge, uint32_t wr_data)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_data;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge->length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = rs->conn_dest->ah;
	wr.wr.ud.remote_qpn = rs->conn_dest->qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	return rs_seterr(ibv_post_send(rs->conn_dest->qp->cm_id->qp, &wr,
				       &bad));
}

int ds_can_send(struct rs *rs)
{
	return rs->sqe_avail;
}

static int ds_all_sends_done(struct rs *rs)
{
	return rs->sqe_avail == rs->sq_size;
}

static int ds_have_rdata(struct rs *rs)
{
	return rs->dmsg_head != rs->dmsg_tail;
}

static int ds_valid_recv(struct rs_dqp *qp, struct ibv_wc *wc)
{
	struct rs_dhdr *h = (void *)(qp->rbuf + (uint32_t)wc->wr_id);

	return wc->byte_len >= DS_GRH + RS_DHDR_V4 &&
	       ((h->version == 4 && h->len == RS_DHDR_V4) ||
		(h->version == 6 && h->len == RS_DHDR_V6));
}

/*
 * Poll every QP's CQ, round robin, only while there is room for what
 * comes in (a receive with no room is reposted: the datagram is lost).
 */
static void ds_poll_cqs(struct rs *rs)
{
	struct rs_dqp *qp = rs->qps;
	struct rs_dmsg *m;
	struct ibv_wc wc;
	int ret, cnt;

	if (!qp)
		return;
	do {
		cnt = 0;
		do {
			ret = ibv_poll_cq(qp->cm_id->recv_cq, 1, &wc);
			if (ret <= 0) {
				qp = qp->next;
				continue;
			}
			if (wc.wr_id & RS_WR_RECV) {
				if (rs->rqe_avail &&
				    wc.status == IBV_WC_SUCCESS &&
				    ds_valid_recv(qp, &wc)) {
					rs->rqe_avail--;
					m = &rs->dmsg[rs->dmsg_tail];
					m->qp = qp;
					m->offset = (uint32_t)wc.wr_id;
					m->len = wc.byte_len - DS_GRH;
					if (++rs->dmsg_tail == rs->rq_size + 1)
						rs->dmsg_tail = 0;
				} else if (wc.status == IBV_WC_SUCCESS) {
					ds_post_recv(rs, qp,
						     (uint32_t)wc.wr_id);
				}
			} else {
				void *msg = rs->sbuf + (uint32_t)wc.wr_id;

				*(void **)msg = rs->smsg_free;
				rs->smsg_free = msg;
				rs->sqe_avail++;
			}
			qp = qp->next;
			if (!rs->rqe_avail && rs->sqe_avail) {
				rs->qps = qp;
				return;
			}
			cnt++;
		} while (qp != rs->qps);
	} while (cnt);
}

static void ds_req_notify_cqs(struct rs *rs)
{
	struct rs_dqp *qp = rs->qps;

	if (!qp)
		return;
	do {
		if (!qp->cq_armed) {
			ibv_req_notify_cq(qp->cm_id->recv_cq, 0);
			qp->cq_armed = 1;
		}
		qp = qp->next;
	} while (qp != rs->qps);
}

int ds_get_cq_event(struct rs *rs)
{
	struct epoll_event ev;
	struct rs_dqp *qp;
	struct ibv_cq *cq;
	void *ctx;
	int ret;

	if (!rs->cq_armed)
		return 0;
	/* with no QP yet this waits for ever, as 44.0's does */
	ret = epoll_wait(rs->epfd, &ev, 1, -1);
	if (ret <= 0)
		return ret;
	qp = ev.data.ptr;
	ret = ibv_get_cq_event(qp->cm_id->recv_cq_channel, &cq, &ctx);
	if (!ret) {
		ibv_ack_cq_events(qp->cm_id->recv_cq, 1);
		qp->cq_armed = 0;
		rs->cq_armed = 0;
	}
	return ret;
}

int ds_process_cqs(struct rs *rs, int nonblock, int (*test)(struct rs *rs))
{
	int ret = 0;

	pthread_mutex_lock(&rs->cq_lock);
	do {
		ds_poll_cqs(rs);
		if (test(rs)) {
			ret = 0;
			break;
		} else if (nonblock) {
			ret = rs_seterr(EWOULDBLOCK);
		} else if (!rs->cq_armed) {
			ds_req_notify_cqs(rs);
			rs->cq_armed = 1;
		} else {
			pthread_mutex_lock(&rs->cq_wait_lock);
			pthread_mutex_unlock(&rs->cq_lock);
			ret = ds_get_cq_event(rs);
			pthread_mutex_unlock(&rs->cq_wait_lock);
			pthread_mutex_lock(&rs->cq_lock);
		}
	} while (!ret);
	pthread_mutex_unlock(&rs->cq_lock);
	return ret;
}

static int ds_get_comp(struct rs *rs, int nonblock,
		       int (*test)(struct rs *rs))
{
	uint64_t start = 0;
	int ret;

	do {
		ret = ds_process_cqs(rs, 1, test);
		if (!ret || nonblock || errno != EWOULDBLOCK)
			return ret;
		if (!start)
			start = rs_now_us();
	} while (rs_now_us() - start <= rs_conf.polling_us);
	return ds_process_cqs(rs, 0, test);
}

/* One datagram to conn_dest through our QP; slock held. */
static ssize_t ds_post_msg(struct rs *rs, const struct rs_dhdr *hdr,
			   const void *buf, size_t len, int nonblock)
{
	struct ibv_sge sge;
	uint8_t *msg;
	int ret;

	if (len > (size_t)(RS_SNDLOWAT - hdr->len))
		return rs_seterr(EMSGSIZE);	/* 44.0 overruns the slot */
	if (!ds_can_send(rs)) {
		ret = ds_get_comp(rs, nonblock, ds_can_send);
		if (ret)
			return ret;
	}
	msg = rs->smsg_free;
	rs->smsg_free = *(void **)msg;
	rs->sqe_avail--;
	memcpy(msg, hdr, hdr->len);
	memcpy(msg + hdr->len, buf, len);
	sge.addr = (uintptr_t)msg;
	sge.length = hdr->len + len;
	sge.lkey = rs->conn_dest->qp->smr->lkey;
	ret = ds_post_send(rs, &sge, msg - rs->sbuf);
	return ret ? ret : (ssize_t)len;
}

/* rsend on a datagram rsocket, slock held. */
ssize_t ds_send(struct rs *rs, const void *buf, size_t len, int flags)
{
	if (!rs->conn_dest)
		return rs_seterr(EDESTADDRREQ);	/* 44.0 crashes */
	if (!rs->conn_dest->ah)
		return ds_send_udp(rs, buf, len, flags, RS_OP_DATA);
	return ds_post_msg(rs, &rs->conn_dest->qp->hdr, buf, len,
			   rs_nonblocking(rs, flags));
}

ssize_t ds_sendto(struct rs *rs, const void *buf, size_t len, int flags,
		  const struct sockaddr *addr, socklen_t addrlen)
{
	ssize_t ret;

	if (rs->state == RS_IDLE) {
		ret = ds_init_ep(rs);
		if (ret)
			return ret;
	}
	if (!addr)
		return rs_seterr(EDESTADDRREQ);
	pthread_mutex_lock(&rs->slock);
	if (!rs->conn_dest || ds_addr_cmp(addr, &rs->conn_dest->addr)) {
		ret = ds_get_dest(rs, addr, addrlen, &rs->conn_dest);
		if (ret)
			goto out;
	}
	ret = ds_send(rs, buf, len, flags);
out:
	pthread_mutex_unlock(&rs->slock);
	return ret;
}

static void ds_set_src(struct sockaddr *addr, socklen_t *addrlen,
		       const struct rs_dhdr *h)
{
	struct sockaddr_in6 sa;
	socklen_t n;

	memset(&sa, 0, sizeof(sa));
	if (h->version == 4) {
		struct sockaddr_in *s = (void *)&sa;

		n = sizeof(*s);
		s->sin_family = AF_INET;
		s->sin_port = h->port;
		s->sin_addr.s_addr = h->a.v4;
	} else {
		n = sizeof(sa);
		sa.sin6_family = AF_INET6;
		sa.sin6_port = h->port;
		sa.sin6_flowinfo = h->a.v6.flowinfo;
		memcpy(&sa.sin6_addr, h->a.v6.addr, 16);
	}
	if (*addrlen > n)
		*addrlen = n;
	memcpy(addr, &sa, *addrlen);
}

ssize_t ds_recvfrom(struct rs *rs, void *buf, size_t len, int flags,
		    struct sockaddr *src, socklen_t *srclen)
{
	struct rs_dmsg *m;
	struct rs_dhdr *h;
	int ret;

	if (!(rs->state & RS_READABLE))
		return rs_seterr(EINVAL);
	if (!ds_have_rdata(rs)) {
		ret = ds_get_comp(rs, rs_nonblocking(rs, flags),
				  ds_have_rdata);
		if (ret)
			return ret;
	}
	m = &rs->dmsg[rs->dmsg_head];
	h = (void *)(m->qp->rbuf + m->offset);
	if (len > m->len - h->len)
		len = m->len - h->len;
	memcpy(buf, (uint8_t *)h + h->len, len);
	if (srclen)
		ds_set_src(src, srclen, h);
	if (!(flags & MSG_PEEK)) {
		ds_post_recv(rs, m->qp, m->offset);
		if (++rs->dmsg_head == rs->rq_size + 1)
			rs->dmsg_head = 0;
		rs->rqe_avail++;
	}
	return len;
}

int ds_set_nonblocking(struct rs *rs, int arg)
{
	struct rs_dqp *qp = rs->qps;
	int ret;

	ret = fcntl(rs->epfd, F_SETFL, arg);
	if (!ret && qp) {
		do {
			ret = fcntl(qp->cm_id->recv_cq_channel->fd, F_SETFL,
				    arg);
			qp = qp->next;
		} while (qp != rs->qps && !ret);
	}
	return ret;
}

/* rclose: out of the UDP service, then wait for our sends (blocking). */
void ds_shutdown(struct rs *rs)
{
	if (rs->svcs & RS_IN_UDP)
		rs_notify_svc(RS_SVC_UDP, rs, RS_SVC_REM);
	if (rs->fd_flags & O_NONBLOCK)
		rs_set_nonblocking(rs, 0);
	rs->state &= ~(RS_READABLE | RS_WRITABLE);
	ds_process_cqs(rs, 0, ds_all_sends_done);
	if (rs->fd_flags & O_NONBLOCK)
		rs_set_nonblocking(rs, rs->fd_flags);
}

void ds_free(struct rs *rs)
{
	struct rs_dest *d, *n;
	struct rs_dqp *qp;

	if (rs->udp_sock >= 0)
		close(rs->udp_sock);
	if (rs->index >= 0)
		rs_remove(rs);
	free(rs->dmsg);
	while ((qp = rs->qps)) {
		if (qp->next == qp) {
			rs->qps = NULL;
		} else {
			struct rs_dqp *p = qp;

			while (p->next != qp)
				p = p->next;
			p->next = qp->next;
			rs->qps = qp->next;
		}
		ds_free_qp(qp);
	}
	if (rs->epfd >= 0)
		close(rs->epfd);
	free(rs->sbuf);
	for (d = rs->dests; d; d = n) {
		n = d->next;
		if (d->ah)
			ibv_destroy_ah(d->ah);
		free(d);
	}
}

/* The UDP service: an address handle towards a peer's QP. */
static uint8_t ds_sgid_index(struct rs_dest *d, const union ibv_gid *sgid)
{
	union ibv_gid gid;
	int i;

	for (i = 0; i < 16; i++) {
		memset(&gid, 0, sizeof(gid));
		if (ibv_query_gid(d->qp->cm_id->verbs, d->qp->cm_id->port_num,
				  i, &gid))
			continue;
		if (!memcmp(sgid, &gid, sizeof(gid)))
			return i;
	}
	return 0;
}

static uint8_t ds_path_bits(struct rs_dest *d)
{
	struct ibv_port_attr attr;

	if (!ibv_query_port(d->qp->cm_id->verbs, d->qp->cm_id->port_num, &attr))
		return (uint8_t)((1 << attr.lmc) - 1);
	return 0x7f;
}

static void ds_create_ah(struct rs *rs, struct rs_dest *d, uint32_t qpn)
{
	struct sockaddr_storage src;
	struct ibv_sa_path_rec *path;
	struct rdma_cm_id *id;
	struct ibv_ah_attr attr;
	struct sockaddr *local = rdma_get_local_addr(d->qp->cm_id);

	if (d->ah) {
		pthread_mutex_lock(&rs->slock);
		ibv_destroy_ah(d->ah);
		d->ah = NULL;
		pthread_mutex_unlock(&rs->slock);
	}
	if (rdma_create_id(NULL, &id, NULL, d->qp->cm_id->ps))
		return;
	memcpy(&src, local, rs_addrlen(local));
	((struct sockaddr_in *)&src)->sin_port = 0;
	if (rdma_resolve_addr(id, (struct sockaddr *)&src,
			      (struct sockaddr *)&d->addr, 2000) ||
	    rdma_resolve_route(id, 2000))
		goto out;
	path = id->route.path_rec;
	memset(&attr, 0, sizeof(attr));
	if (path->hop_limit > 1) {
		attr.is_global = 1;
		attr.grh.dgid = path->dgid;
		attr.grh.flow_label = be32toh(path->flow_label);
		attr.grh.sgid_index = ds_sgid_index(d, &path->sgid);
		attr.grh.hop_limit = path->hop_limit;
		attr.grh.traffic_class = path->traffic_class;
	}
	attr.dlid = be16toh(path->dlid);
	attr.sl = path->sl;
	attr.src_path_bits = be16toh(path->slid) & ds_path_bits(d);
	attr.static_rate = path->rate;
	attr.port_num = id->port_num;
	pthread_mutex_lock(&rs->slock);
	d->qpn = qpn;
	d->ah = ibv_create_ah(d->qp->cm_id->pd, &attr);
	pthread_mutex_unlock(&rs->slock);
out:
	rdma_destroy_id(id);
}

static int ds_valid_udp_hdr(const struct ds_udp_hdr *h,
			    const struct sockaddr *addr)
{
	return h->tag == htobe32(DS_UDP_TAG) &&
	       ((h->version == 4 && addr->sa_family == AF_INET &&
		 h->len == DS_UDP_V4) ||
		(h->version == 6 && addr->sa_family == AF_INET6 &&
		 h->len == DS_UDP_V6));
}

/* Hand a UDP arrival to our own QP, with its sender's address. */
static void ds_forward(struct rs *rs, const void *buf, size_t len,
		       const struct sockaddr *from)
{
	struct rs_dhdr h;

	ds_format_hdr(&h, from);
	ds_post_msg(rs, &h, buf, len, 0);
}

/* The UDP service thread: one datagram arrived on the UDP socket. */
void ds_udp_input(struct rs *rs)
{
	static uint8_t buf[RS_SNDLOWAT];
	struct sockaddr_storage addr;
	socklen_t addrlen = sizeof(addr);
	struct rs_dest *d, *cur;
	struct ds_udp_hdr *h;
	ssize_t n;
	uint32_t qpn;

	n = recvfrom(rs->udp_sock, buf, sizeof(buf), 0,
		     (struct sockaddr *)&addr, &addrlen);
	if (n < DS_UDP_V4)
		return;
	h = (struct ds_udp_hdr *)buf;
	if (!ds_valid_udp_hdr(h, (struct sockaddr *)&addr))
		return;
	qpn = be32toh(h->qpn) & 0xffffff;
	if (ds_get_dest(rs, (struct sockaddr *)&addr, addrlen, &d))
		return;
	if (h->op == RS_OP_DATA) {
		/* tell the sender our QP, so it stops using UDP */
		pthread_mutex_lock(&rs->slock);
		cur = rs->conn_dest;
		rs->conn_dest = d;
		ds_send_udp(rs, NULL, 0, 0, RS_OP_CTRL);
		rs->conn_dest = cur;
		pthread_mutex_unlock(&rs->slock);
	}
	if (!d->ah || d->qpn != qpn)
		ds_create_ah(rs, d, qpn);
	if (h->op == RS_OP_DATA) {
		pthread_mutex_lock(&rs->slock);
		cur = rs->conn_dest;
		rs->conn_dest = &d->qp->self;
		ds_forward(rs, buf + h->len, n - h->len,
			   (struct sockaddr *)&addr);
		rs->conn_dest = cur;
		pthread_mutex_unlock(&rs->slock);
	}
}

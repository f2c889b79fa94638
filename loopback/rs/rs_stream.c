/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/rs/rs_stream.c: stream rsockets: the endpoint (CQ, RC QP,
 * registered buffers), the connect state machine (blocking and not), the
 * listen service's accept, completions and credits, the data calls
 * (rsend/rrecv and friends), riomap/riounmap/riowrite, rshutdown and the
 * release of a stream rsocket.
 *
 * The protocol: each side registers a ring that the peer fills with RDMA
 * writes with immediate data (the immediate says how many bytes came),
 * and returns room with zero-length RDMA writes with immediate (credits)
 * once the program has read half the ring.  Control messages
 * (disconnect, shutdown, keepalive) are zero-length writes too, at most
 * RS_CTRL_SLOTS in flight.  riomap() announces a buffer by an RDMA write
 * into the peer's iomap table; riowrite() writes straight into it.  Every
 * write is signaled; a send completion gives its room back.  Counters
 * that two threads change (the room, the credits) are kept as totals each
 * thread only adds to, so rsend and rrecv may run at once without a lock
 * between them, as in 44.0.
 */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "rs.h"

static uint32_t rs_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Totals one side adds to and the other reads. */
static uint32_t rs_ld(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void rs_add(uint32_t *p, uint32_t v)
{
	__atomic_add_fetch(p, v, __ATOMIC_ACQ_REL);
}

static void rs_sub(uint32_t *p, uint32_t v)
{
	__atomic_sub_fetch(p, v, __ATOMIC_ACQ_REL);
}

static int rs_ldi(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void rs_addi(int *p, int v)
{
	__atomic_add_fetch(p, v, __ATOMIC_ACQ_REL);
}

/*
 * The counters behind the stream, as totals (mod 2^32) so that each has
 * one writer: r_avail counts bytes received (completions), r_head bytes
 * read (the reader), r_freed bytes returned to the peer (credits sent);
 * the peer's room: window counts credits received, peer_pos bytes
 * written (the sender), both against peer_ring_len.
 */
static uint32_t rs_rdata(struct rs *rs)
{
	return rs_ld(&rs->r_avail) - rs_ld(&rs->r_head);
}

static uint32_t rs_room(struct rs *rs)
{
	return rs->peer_ring_len + rs_ld(&rs->window) - rs_ld(&rs->peer_pos);
}

static void *rs_alloc_buf(size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	/* whole pages, as 44.0 (fork-safe registration) */
	len = (len + pg - 1) / pg * pg;
	if (posix_memalign(&p, pg, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* The device's largest queue, once (44.0 caches it at init). */
static int rs_max_qpsize(struct rdma_cm_id *id)
{
	static int max;
	struct ibv_device_attr attr;

	if (!__atomic_load_n(&max, __ATOMIC_RELAXED) && id->verbs &&
	    !ibv_query_device(id->verbs, &attr))
		__atomic_store_n(&max, attr.max_qp_wr, __ATOMIC_RELAXED);
	return max ? max : RS_QP_MAX;
}

static void rs_set_qp_size(struct rs *rs)
{
	uint16_t max = rs_min(rs_max_qpsize(rs->cm_id), RS_QP_MAX);

	if (rs->sq_size > max)
		rs->sq_size = max;
	else if (rs->sq_size < RS_QP_MIN)
		rs->sq_size = RS_QP_MIN;
	if (rs->rq_size > max)
		rs->rq_size = max;
	else if (rs->rq_size < RS_QP_MIN)
		rs->rq_size = RS_QP_MIN;
}

/*
 * One CQ for both directions, on a channel of its own (set in the id as
 * 44.0 does), armed from the start so that rpoll sees the first
 * completion.
 */
int rs_create_cq(struct rs *rs, struct rdma_cm_id *id)
{
	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	if (!id->recv_cq_channel)
		return -1;
	id->recv_cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, id,
				    id->recv_cq_channel, 0);
	if (!id->recv_cq)
		goto err_ch;
	if ((rs->fd_flags & O_NONBLOCK) &&
	    fcntl(id->recv_cq_channel->fd, F_SETFL, O_NONBLOCK))
		goto err_cq;
	ibv_req_notify_cq(id->recv_cq, 0);
	id->send_cq_channel = id->recv_cq_channel;
	id->send_cq = id->recv_cq;
	return 0;
err_cq:
	ibv_destroy_cq(id->recv_cq);
	id->recv_cq = NULL;
err_ch:
	ibv_destroy_comp_channel(id->recv_cq_channel);
	id->recv_cq_channel = NULL;
	return -1;
}

static int rs_init_bufs(struct rs *rs)
{
	struct ibv_pd *pd = rs->cm_id->pd;
	size_t tlen;

	if (rs->rbuf_size < RS_SNDLOWAT)
		rs->rbuf_size = RS_SNDLOWAT;
	rs->sbuf = rs_alloc_buf(rs->sbuf_size);
	if (!rs->sbuf)
		return rs_seterr(ENOMEM);
	rs->smr = ibv_reg_mr(pd, rs->sbuf, rs->sbuf_size,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!rs->smr)
		return -1;
	tlen = sizeof(*rs->table) * (rs->iomap_size ? rs->iomap_size : 1);
	rs->table = rs_alloc_buf(tlen);
	if (!rs->table)
		return rs_seterr(ENOMEM);
	rs->tmr = ibv_reg_mr(pd, rs->table, tlen, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE);
	if (!rs->tmr)
		return -1;
	rs->rbuf = rs_alloc_buf(rs->rbuf_size);
	if (!rs->rbuf)
		return rs_seterr(ENOMEM);
	rs->rmr = ibv_reg_mr(pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->rmr)
		return -1;
	rs->sbuf_free = rs->sbuf_size;
	rs->sqe_avail = rs->sq_size - RS_CTRL_SLOTS;
	rs->ctrl_avail = RS_CTRL_SLOTS;
	return 0;
}

/* A receive without buffers: every message is a write with immediate. */
static int rs_post_recv(struct rs *rs)
{
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV }, *bad;

	return rs_seterr(ibv_post_recv(rs->cm_id->qp, &wr, &bad));
}

int rs_create_ep(struct rs *rs)
{
	struct ibv_qp_init_attr attr;
	int i, ret;

	rs_set_qp_size(rs);
	ret = rs_create_cq(rs, rs->cm_id);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_context = rs;
	attr.send_cq = rs->cm_id->send_cq;
	attr.recv_cq = rs->cm_id->recv_cq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size;
	attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rs->sq_inline;
	ret = rdma_create_qp(rs->cm_id, NULL, &attr);
	if (ret)
		return ret;
	rs->sq_inline = attr.cap.max_inline_data;
	ret = rs_init_bufs(rs);
	if (ret)
		return ret;
	for (i = 0; i < rs->rq_size; i++) {
		ret = rs_post_recv(rs);
		if (ret)
			return ret;
	}
	return 0;
}

void rs_format_hello(struct rs *rs, struct rs_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->version = RS_HELLO_VERSION;
	h->iomap_slots = rs->iomap_size;
	h->ring = (uintptr_t)rs->rbuf;
	h->ring_rkey = rs->rmr->rkey;
	h->ring_len = rs->rbuf_size;
	h->table = (uintptr_t)rs->table;
	h->table_rkey = rs->tmr->rkey;
	h->table_len = rs->tmr->length;
}

int rs_save_hello(struct rs *rs, const void *pdata, size_t len)
{
	struct rs_hello h;

	if (!pdata || len < sizeof(h))
		return rs_seterr(ENOTSUP);
	memcpy(&h, pdata, sizeof(h));
	if (h.version != RS_HELLO_VERSION)
		return rs_seterr(ENOTSUP);
	rs->peer_ring = h.ring;
	rs->peer_ring_rkey = h.ring_rkey;
	rs->peer_ring_len = h.ring_len;
	rs->peer_table = h.table;
	rs->peer_table_rkey = h.table_rkey;
	rs->peer_slots = h.iomap_slots;
	return 0;
}

/*
 * The connect state machine of 44.0's rs_do_connect: each step through
 * the synchronous id's calls; a non-blocking rsocket's private fd makes a
 * step return EAGAIN (EINPROGRESS to the caller), and the next call (the
 * connect service, rpoll, rsend, rrecv) finishes it with the library's
 * synchronous wait (cm_complete: rdma_get_cm_event through the PLT).
 */
int rs_do_connect(struct rs *rs)
{
	struct rdma_conn_param param;
	struct rdma_cm_id *id = rs->cm_id;
	struct rs_hello hello;
	int to, ret;

	pthread_mutex_lock(&rs->slock);
	switch (rs->state) {
	case RS_IDLE:
	case RS_BOUND:
resolve_addr:
		to = 1000 << rs->retries++;
		ret = rdma_resolve_addr(id, NULL, &id->route.addr.dst_addr, to);
		if (!ret)
			goto resolve_route;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = RS_RESOLVING_ADDR;
		break;
	case RS_RESOLVING_ADDR:
		ret = cm_complete(id);
		if (ret) {
			if (errno == ETIMEDOUT && rs->retries <= RS_CONN_RETRIES)
				goto resolve_addr;
			break;
		}
		rs->retries = 0;
resolve_route:
		to = 1000 << rs->retries++;
		if (rs->route) {
			ret = rdma_set_option(id, RDMA_OPTION_IB,
					      RDMA_OPTION_IB_PATH, rs->route,
					      rs->route_len);
			free(rs->route);
			rs->route = NULL;
			if (!ret) {
				rs->state = RS_RESOLVING_ROUTE;
				goto resolving_route;
			}
		} else {
			ret = rdma_resolve_route(id, to);
			if (!ret)
				goto do_connect;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = RS_RESOLVING_ROUTE;
		break;
	case RS_RESOLVING_ROUTE:
resolving_route:
		ret = cm_complete(id);
		if (ret) {
			if (errno == ETIMEDOUT && rs->retries <= RS_CONN_RETRIES)
				goto resolve_route;
			break;
		}
do_connect:
		ret = rs_create_ep(rs);
		if (ret)
			break;
		rs_format_hello(rs, &hello);
		memset(&param, 0, sizeof(param));
		param.private_data = &hello;
		param.private_data_len = sizeof(hello);
		param.flow_control = 1;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		rs->retries = 0;
		ret = rdma_connect(id, &param);
		if (!ret)
			goto connected;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = RS_CONNECTING;
		break;
	case RS_CONNECTING:
		ret = cm_complete(id);
		if (ret)
			break;
connected:
		ret = rs_save_hello(rs, id->event->param.conn.private_data,
				    id->event->param.conn.private_data_len);
		if (ret)
			break;
		rs->state = RS_OPEN_RDWR;
		break;
	case RS_ACCEPTING:
		if (!(rs->fd_flags & O_NONBLOCK))
			fcntl(id->channel->fd, F_SETFL, O_NONBLOCK);
		ret = cm_complete(id);
		if (ret)
			break;
		rs->state = RS_OPEN_RDWR;
		break;
	case RS_CONNECT_ERROR:
	case RS_DISCONNECTED:
	case RS_ERROR:
		ret = rs_seterr(ENOTCONN);
		goto unlock;
	default:
		ret = (rs->state & RS_CONNECTED) ? 0 : rs_seterr(EINVAL);
		goto unlock;
	}
	if (ret) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			errno = EINPROGRESS;
		} else {
			rs->state = RS_CONNECT_ERROR;
			rs->err = errno;
		}
	}
unlock:
	pthread_mutex_unlock(&rs->slock);
	return ret;
}

/*
 * The listen service's accept (44.0: a blocking operation on the service
 * thread): take the request, make the endpoint, accept with our ring's
 * address and queue the new rsocket for raccept.
 */
void rs_accept(struct rs *rs)
{
	struct rdma_conn_param param;
	struct rdma_cm_id *id;
	struct rs_hello hello;
	struct rs *nrs = NULL;
	ssize_t n;
	int ret;

	ret = rdma_get_request(rs->cm_id, &id);
	if (ret)
		return;
	nrs = rs_alloc(rs, rs->type);
	if (!nrs)
		goto err;
	nrs->cm_id = id;
	if (rs_insert(nrs, id->channel->fd) < 0)
		goto err;
	if (rs_save_hello(nrs, id->event->param.conn.private_data,
			  id->event->param.conn.private_data_len))
		goto err;
	if (rs_create_ep(nrs))
		goto err;
	param = id->event->param.conn;
	rs_format_hello(nrs, &hello);
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	ret = rdma_accept(id, &param);
	if (!ret)
		nrs->state = RS_OPEN_RDWR;
	else if (errno == EAGAIN || errno == EWOULDBLOCK)
		nrs->state = RS_ACCEPTING;
	else
		goto err;
	n = write(rs->accept_q[1], &nrs, sizeof(nrs));
	(void)n;
	return;
err:
	rdma_reject(id, NULL, 0);
	if (nrs)
		rs_free(nrs);
}

/* The connect service: a CM event on the rsocket's private channel. */
void rs_handle_cm_event(struct rs *rs)
{
	int ret;

	if (rs->state & RS_OPENING) {
		rs_do_connect(rs);
	} else {
		ret = cm_complete(rs->cm_id);
		if (!ret && rs->cm_id->event && (rs->state & RS_CONNECTED) &&
		    rs->cm_id->event->event == RDMA_CM_EVENT_DISCONNECTED)
			rs->state = RS_DISCONNECTED;
	}
	if (!(rs->state & RS_OPENING))
		rs_poll_signal();
}

/* Post one write (signaled: sq_sig_all), with immediate or plain. */
static int rs_post_write(struct rs *rs, struct ibv_sge *sgl, int nsge,
			 int flags, uint32_t wr_msg, int with_imm,
			 uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_msg;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.send_flags = flags;
	wr.imm_data = htobe32(wr_msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return rs_seterr(ibv_post_send(rs->cm_id->qp, &wr, &bad));
}

int rs_ctrl_free(struct rs *rs)
{
	return rs_ldi(&rs->ctrl_avail) > 0;
}

/* A control message in a free control slot (the caller checked). */
int rs_post_ctrl(struct rs *rs, enum rs_ctrl ctrl, int rdma_write)
{
	rs_addi(&rs->ctrl_avail, -1);
	return rs_post_write(rs, NULL, 0, 0, RS_MSG(RS_OP_CTRL, ctrl),
			     !rdma_write, 0, 0);
}

/* Give the peer its room back once the program read half our ring. */
static void rs_update_credits(struct rs *rs)
{
	uint32_t n = rs_ld(&rs->r_head) - rs->r_freed;

	if (!n || n < (rs->rbuf_size >> 1) || !rs_ctrl_free(rs) ||
	    !(rs->state & RS_CONNECTED))
		return;
	if (n >= RS_MSG_MAX)
		n = RS_MSG_MAX - 1;
	rs_addi(&rs->ctrl_avail, -1);
	if (rs_post_write(rs, NULL, 0, 0, RS_MSG(RS_OP_CREDIT, n), 1, 0, 0))
		rs_addi(&rs->ctrl_avail, 1);
	else
		rs->r_freed += n;
}

static int rs_poll_cq(struct rs *rs)
{
	struct ibv_wc wc;
	uint32_t msg;
	int ret, rcnt = 0;

	while ((ret = ibv_poll_cq(rs->cm_id->recv_cq, 1, &wc)) > 0) {
		if (wc.wr_id & RS_WR_RECV) {
			if (wc.status != IBV_WC_SUCCESS)
				continue;
			rcnt++;
			msg = be32toh(wc.imm_data);
			switch (RS_MSG_OP(msg)) {
			case RS_OP_DATA:
				rs_add(&rs->r_avail, RS_MSG_ARG(msg));
				break;
			case RS_OP_CREDIT:
				rs_add(&rs->window, RS_MSG_ARG(msg));
				break;
			case RS_OP_CTRL:
				if (RS_MSG_ARG(msg) == RS_CTRL_DISCONNECT) {
					rs->state = RS_DISCONNECTED;
					return 0;
				}
				if (RS_MSG_ARG(msg) == RS_CTRL_SHUTDOWN) {
					if (!(rs->state & RS_WRITABLE)) {
						rs->state = RS_DISCONNECTED;
						return 0;
					}
					rs->state &= ~RS_READABLE;
				}
				break;
			default:	/* an iomap entry: nothing to do */
				break;
			}
			continue;
		}
		msg = (uint32_t)wc.wr_id;
		switch (RS_MSG_OP(msg)) {
		case RS_OP_DATA:
		case RS_OP_WRITE:
			rs_addi(&rs->sqe_avail, 1);
			rs_add(&rs->sbuf_free, RS_MSG_ARG(msg));
			break;
		case RS_OP_IOMAP:
			rs_addi(&rs->sqe_avail, 1);
			rs_add(&rs->sbuf_free, sizeof(struct rs_iomap_ent));
			break;
		case RS_OP_CREDIT:
			rs_addi(&rs->ctrl_avail, 1);
			break;
		case RS_OP_CTRL:
			rs_addi(&rs->ctrl_avail, 1);
			if (RS_MSG_ARG(msg) == RS_CTRL_DISCONNECT)
				rs->state = RS_DISCONNECTED;
			break;
		}
		if (wc.status != IBV_WC_SUCCESS && (rs->state & RS_CONNECTED)) {
			rs->state = RS_ERROR;
			rs->err = EIO;
		}
	}
	if (rs->state & RS_CONNECTED) {
		while (!ret && rcnt--)
			ret = rs_post_recv(rs);
		if (ret) {
			rs->state = RS_ERROR;
			rs->err = errno;
		}
	}
	return ret;
}

int rs_get_cq_event(struct rs *rs)
{
	struct ibv_cq *cq;
	void *ctx;
	int ret;

	if (!rs->cq_armed)
		return 0;
	ret = ibv_get_cq_event(rs->cm_id->recv_cq_channel, &cq, &ctx);
	if (!ret) {
		if (++rs->unack_cqe >= rs->sq_size + rs->rq_size) {
			ibv_ack_cq_events(rs->cm_id->recv_cq, rs->unack_cqe);
			rs->unack_cqe = 0;
		}
		rs->cq_armed = 0;
	} else if (errno != EAGAIN && errno != EINTR) {
		rs->state = RS_ERROR;
	}
	return ret;
}

/*
 * Process completions until test holds.  cq_lock guards the processing,
 * cq_wait_lock the wait, so a sender blocked for room never keeps a
 * receiver from taking data (44.0's two-lock scheme).
 */
int rs_process_cq(struct rs *rs, int nonblock, int (*test)(struct rs *rs))
{
	int ret;

	pthread_mutex_lock(&rs->cq_lock);
	do {
		rs_update_credits(rs);
		ret = rs_poll_cq(rs);
		if (test(rs)) {
			ret = 0;
			break;
		} else if (ret) {
			break;
		} else if (nonblock) {
			ret = rs_seterr(EWOULDBLOCK);
		} else if (!rs->cq_armed) {
			ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
			rs->cq_armed = 1;
		} else {
			rs_update_credits(rs);
			pthread_mutex_lock(&rs->cq_wait_lock);
			pthread_mutex_unlock(&rs->cq_lock);
			ret = rs_get_cq_event(rs);
			pthread_mutex_unlock(&rs->cq_wait_lock);
			pthread_mutex_lock(&rs->cq_lock);
		}
	} while (!ret);
	rs_update_credits(rs);
	pthread_mutex_unlock(&rs->cq_lock);
	return ret;
}

/* Busy-poll for a while, then block (unless non-blocking). */
static int rs_get_comp(struct rs *rs, int nonblock,
		       int (*test)(struct rs *rs))
{
	uint64_t start = 0;
	int ret;

	do {
		ret = rs_process_cq(rs, 1, test);
		if (!ret || nonblock || errno != EWOULDBLOCK)
			return ret;
		if (!start)
			start = rs_now_us();
	} while (rs_now_us() - start <= rs_conf.polling_us);
	return rs_process_cq(rs, 0, test);
}

int rs_can_send(struct rs *rs)
{
	return rs_ldi(&rs->sqe_avail) > 0 &&
	       rs_ld(&rs->sbuf_free) >= RS_SNDLOWAT && rs_room(rs) > 0;
}

static int rs_conn_can_send(struct rs *rs)
{
	return rs_can_send(rs) || !(rs->state & RS_WRITABLE);
}

static int rs_conn_can_send_ctrl(struct rs *rs)
{
	return rs_ctrl_free(rs) || !(rs->state & RS_CONNECTED);
}

int rs_have_rdata(struct rs *rs)
{
	return rs_rdata(rs) != 0;
}

int rs_conn_have_rdata(struct rs *rs)
{
	return rs_have_rdata(rs) || !(rs->state & RS_READABLE);
}

static int rs_conn_all_sends_done(struct rs *rs)
{
	return rs_ldi(&rs->sqe_avail) + rs_ldi(&rs->ctrl_avail) ==
	       rs->sq_size || !(rs->state & RS_CONNECTED);
}

/* A call that needs the connection: finish connecting first. */
static int rs_finish_connect(struct rs *rs)
{
	int ret;

	if (!(rs->state & RS_OPENING))
		return 0;
	ret = rs_do_connect(rs);
	if (ret && errno == EINPROGRESS)
		errno = EAGAIN;
	return ret;
}

/* 44.0 dereferences the CQ of an unconnected rsocket; fail instead. */
static int rs_need_qp(struct rs *rs)
{
	return rs->cm_id->qp ? 0 : rs_seterr(ENOTCONN);
}

/* Copy up to len received bytes out of the ring. */
static size_t rs_copy_out(struct rs *rs, void *buf, size_t len, int peek)
{
	uint32_t avail = rs_rdata(rs), head, n, first;

	n = len < avail ? (uint32_t)len : avail;
	head = rs->r_off;
	first = rs_min(n, rs->rbuf_size - head);
	memcpy(buf, rs->rbuf + head, first);
	if (n > first)
		memcpy((uint8_t *)buf + first, rs->rbuf, n - first);
	if (peek)
		return n;
	rs->r_off = head + n >= rs->rbuf_size ? head + n - rs->rbuf_size :
		    head + n;
	__atomic_store_n(&rs->r_head, rs->r_head + n, __ATOMIC_RELEASE);
	return n;
}

/* Queued data is still delivered after the peer disconnected (44.0). */
ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct rs *rs = rs_lookup(socket);
	size_t left = len;
	int ret = 0;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM) {
		pthread_mutex_lock(&rs->rlock);
		ret = ds_recvfrom(rs, buf, len, flags, NULL, NULL);
		pthread_mutex_unlock(&rs->rlock);
		return ret;
	}
	ret = rs_finish_connect(rs);
	if (ret)
		return ret;
	pthread_mutex_lock(&rs->rlock);
	do {
		if (!rs_have_rdata(rs)) {
			ret = rs_need_qp(rs);
			if (!ret)
				ret = rs_get_comp(rs, rs_nonblocking(rs, flags),
						  rs_conn_have_rdata);
			if (ret)
				break;
		}
		if (flags & MSG_PEEK) {
			left -= rs_copy_out(rs, buf, left, 1);
			break;
		}
		left -= rs_copy_out(rs, (uint8_t *)buf + (len - left), left, 0);
	} while (left && (flags & MSG_WAITALL) && (rs->state & RS_READABLE));
	pthread_mutex_unlock(&rs->rlock);
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket);
	ssize_t ret;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM) {
		pthread_mutex_lock(&rs->rlock);
		ret = ds_recvfrom(rs, buf, len, flags, src_addr, addrlen);
		pthread_mutex_unlock(&rs->rlock);
		return ret;
	}
	ret = rrecv(socket, buf, len, flags);
	if (ret > 0 && src_addr)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

/* Only the first vector, as 44.0's rrecvv. */
ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return rs_seterr(ENOTSUP);
	return rrecv(socket, msg->msg_iov[0].iov_base,
		     msg->msg_iov[0].iov_len, msg->msg_flags);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rrecv(socket, iov[0].iov_base, iov[0].iov_len, 0);
}

/* Copy len bytes at the iovec cursor to dst, advancing the cursor. */
static void rs_copy_iov(void *dst, const struct iovec **iov, size_t *off,
			size_t len)
{
	size_t n;

	while (len) {
		n = (*iov)->iov_len - *off;
		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)(*iov)->iov_base + *off, n);
		dst = (uint8_t *)dst + n;
		len -= n;
		*off += n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

/* Stage len bytes in the send buffer (wrapping: two SGEs). */
static int rs_stage(struct rs *rs, const struct iovec **iov, size_t *off,
		    uint32_t len, struct ibv_sge *sge)
{
	uint32_t first = rs_min(len, rs->sbuf_size - rs->sbuf_pos);

	sge[0].addr = (uintptr_t)rs->sbuf + rs->sbuf_pos;
	sge[0].length = first;
	sge[0].lkey = rs->smr->lkey;
	rs_copy_iov(rs->sbuf + rs->sbuf_pos, iov, off, first);
	rs->sbuf_pos += first;
	if (rs->sbuf_pos == rs->sbuf_size)
		rs->sbuf_pos = 0;
	if (first == len)
		return 1;
	sge[1].addr = (uintptr_t)rs->sbuf;
	sge[1].length = len - first;
	sge[1].lkey = rs->smr->lkey;
	rs_copy_iov(rs->sbuf, iov, off, len - first);
	rs->sbuf_pos = len - first;
	return 2;
}

/* Wait for room to send; 0 when there is, else the call's result. */
static int rs_wait_room(struct rs *rs, int flags)
{
	int ret;

	if (rs_can_send(rs))
		return 0;
	ret = rs_get_comp(rs, rs_nonblocking(rs, flags), rs_conn_can_send);
	if (ret)
		return ret;
	if (!(rs->state & RS_WRITABLE))
		return rs_seterr(ECONNRESET);
	return 0;
}

/* Announce the queued riomap()s: write each into the peer's table. */
static int rs_send_iomaps(struct rs *rs, int flags)
{
	struct rs_iomap_ent ent;
	struct ibv_sge sge[2];
	struct rs_iomr *m;
	struct iovec v = { &ent, sizeof(ent) };
	const struct iovec *iov;
	size_t off;
	int nsge, ret = 0;

	pthread_mutex_lock(&rs->map_lock);
	while (!cm_list_empty(&rs->iomap_queue)) {
		ret = rs_wait_room(rs, flags);
		if (ret)
			break;
		m = cm_container_of(rs->iomap_queue.next, struct rs_iomr,
				    link);
		ent.offset = m->offset;
		ent.addr = (uintptr_t)m->mr->addr;
		ent.len = m->mr->length;
		ent.rkey = m->mr->rkey;
		rs_addi(&rs->sqe_avail, -1);
		rs_sub(&rs->sbuf_free, sizeof(ent));
		if (rs->sq_inline >= sizeof(ent)) {
			sge[0].addr = (uintptr_t)&ent;
			sge[0].length = sizeof(ent);
			sge[0].lkey = 0;
			ret = rs_post_write(rs, sge, 1, IBV_SEND_INLINE,
					    RS_MSG(RS_OP_IOMAP, m->slot), 1,
					    rs->peer_table + m->slot *
					    sizeof(ent), rs->peer_table_rkey);
		} else {
			iov = &v;
			off = 0;
			nsge = rs_stage(rs, &iov, &off, sizeof(ent), sge);
			ret = rs_post_write(rs, sge, nsge, 0,
					    RS_MSG(RS_OP_IOMAP, m->slot), 1,
					    rs->peer_table + m->slot *
					    sizeof(ent), rs->peer_table_rkey);
		}
		cm_list_del(&m->link);
		cm_list_add_tail(&rs->iomaps, &m->link);
		if (ret)
			break;
	}
	rs->iomap_pending = !cm_list_empty(&rs->iomap_queue);
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/*
 * The send loop of rsend, rsendv and riowrite: small first chunks that
 * double (so the first bytes go out while the rest is copied), each
 * limited by our send buffer and the room at the peer.  dest: NULL for
 * the peer's ring, else the peer's iomap entry at offset.
 */
static ssize_t rs_send_loop(struct rs *rs, const struct iovec *iov,
			    size_t len, int flags, int copy_all,
			    uint64_t offset, int direct)
{
	const struct rs_iomap_ent *dst = NULL;
	uint32_t xfer, olen = RS_OLAP_START;
	struct ibv_sge sge[2];
	size_t left = len, off = 0;
	uint64_t addr;
	uint32_t rkey;
	int nsge, sflags, ret = 0, i;

	for (; left; left -= xfer, offset += xfer) {
		if (direct && (!dst || offset >= dst->offset + dst->len)) {
			dst = NULL;
			for (i = 0; i < rs->iomap_size; i++) {
				const struct rs_iomap_ent *e = &rs->table[i];

				if (e->len && offset >= e->offset &&
				    offset < e->offset + e->len) {
					dst = e;
					break;
				}
			}
			if (!dst)
				break;
		}
		ret = rs_wait_room(rs, flags);
		if (ret)
			break;
		if (olen < left) {
			xfer = olen;
			if (olen < RS_MAX_XFER)
				olen <<= 1;
		} else {
			xfer = left;
		}
		xfer = rs_min(xfer, rs_ld(&rs->sbuf_free));
		if (direct) {
			xfer = rs_min(xfer, dst->offset + dst->len - offset);
			addr = dst->addr + (offset - dst->offset);
			rkey = dst->rkey;
		} else {
			xfer = rs_min(xfer, rs_room(rs));
			xfer = rs_min(xfer, rs->peer_ring_len - rs->peer_off);
			addr = rs->peer_ring + rs->peer_off;
			rkey = rs->peer_ring_rkey;
		}
		sflags = xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0;
		if (sflags && !copy_all) {
			sge[0].addr = (uintptr_t)iov->iov_base + off;
			sge[0].length = xfer;
			sge[0].lkey = 0;
			nsge = 1;
			off += xfer;
		} else {
			nsge = rs_stage(rs, &iov, &off, xfer, sge);
		}
		rs_addi(&rs->sqe_avail, -1);
		rs_sub(&rs->sbuf_free, xfer);
		if (direct) {
			ret = rs_post_write(rs, sge, nsge, sflags,
					    RS_MSG(RS_OP_WRITE, xfer), 0,
					    addr, rkey);
		} else {
			rs->peer_off += xfer;
			if (rs->peer_off == rs->peer_ring_len)
				rs->peer_off = 0;
			__atomic_store_n(&rs->peer_pos, rs->peer_pos + xfer,
					 __ATOMIC_RELEASE);
			ret = rs_post_write(rs, sge, nsge, sflags,
					    RS_MSG(RS_OP_DATA, xfer), 1,
					    addr, rkey);
		}
		if (ret)
			break;
	}
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

static ssize_t rs_sendv(struct rs *rs, const struct iovec *iov, int iovcnt,
			int flags, int copy_all)
{
	size_t len = 0;
	ssize_t ret;
	int i;

	ret = rs_finish_connect(rs);
	if (ret)
		return ret;
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	pthread_mutex_lock(&rs->slock);
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	ret = len ? rs_need_qp(rs) : 0;
	if (!ret)
		ret = rs_send_loop(rs, iov, len, flags, copy_all, 0, 0);
out:
	pthread_mutex_unlock(&rs->slock);
	return ret;
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct rs *rs = rs_lookup(socket);
	struct iovec v = { (void *)buf, len };
	ssize_t ret;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM) {
		pthread_mutex_lock(&rs->slock);
		ret = ds_send(rs, buf, len, flags);
		pthread_mutex_unlock(&rs->slock);
		return ret;
	}
	return rs_sendv(rs, &v, 1, flags, 0);
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_STREAM) {
		if (dest_addr || addrlen)
			return rs_seterr(EISCONN);
		return rsend(socket, buf, len, flags);
	}
	return ds_sendto(rs, buf, len, flags, dest_addr, addrlen);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct rs *rs = rs_lookup(socket);

	if (msg->msg_control && msg->msg_controllen)
		return rs_seterr(ENOTSUP);
	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM)
		return rs_seterr(ENOTSUP);	/* 44.0 mixes up the fields */
	return rs_sendv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags, 1);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM)
		return rs_seterr(ENOTSUP);
	return rs_sendv(rs, iov, iovcnt, 0, 1);
}

static struct rs_iomr *rs_get_slot(struct rs *rs)
{
	int i;

	if (!rs->slots) {
		rs->slots = calloc(rs->peer_slots ? rs->peer_slots : 1,
				   sizeof(*rs->slots));
		if (!rs->slots)
			return NULL;
		for (i = 0; i < rs->peer_slots; i++)
			rs->slots[i].slot = i;
	}
	for (i = 0; i < rs->peer_slots; i++)
		if (!rs->slots[i].mr)
			return &rs->slots[i];
	return NULL;
}

/*
 * Map buf for the peer's riowrite (PROT_WRITE: announced with the next
 * send; the peer's table decides how many fit) or locally only.  offset
 * -1 maps at the buffer's address.
 */
off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset)
{
	struct rs *rs = rs_lookup(socket);
	int access = IBV_ACCESS_LOCAL_WRITE;
	struct rs_iomr *m;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type != SOCK_STREAM || !rs->cm_id->pd ||
	    (prot & ~(PROT_WRITE | PROT_NONE)))
		return rs_seterr(EINVAL);
	pthread_mutex_lock(&rs->map_lock);
	if (prot & PROT_WRITE) {
		m = rs_get_slot(rs);
		access |= IBV_ACCESS_REMOTE_WRITE;
	} else {
		m = calloc(1, sizeof(*m));
		if (m)
			m->slot = -1;
	}
	if (!m) {
		offset = rs_seterr(ENOMEM);
		goto out;
	}
	m->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!m->mr) {
		if (m->slot < 0)
			free(m);
		offset = -1;
		goto out;
	}
	if (offset == -1)
		offset = (uintptr_t)buf;
	m->offset = offset;
	if (m->slot >= 0) {
		cm_list_add_tail(&rs->iomap_queue, &m->link);
		rs->iomap_pending = 1;
	} else {
		cm_list_add_tail(&rs->iomaps, &m->link);
	}
out:
	pthread_mutex_unlock(&rs->map_lock);
	return offset;
}

static struct rs_iomr *rs_find_iomr(struct cm_list *l, void *buf, size_t len)
{
	struct cm_list *i;

	for (i = l->next; i != l; i = i->next) {
		struct rs_iomr *m = cm_container_of(i, struct rs_iomr, link);

		if (m->mr->addr == buf && m->mr->length == len)
			return m;
	}
	return NULL;
}

int riounmap(int socket, void *buf, size_t len)
{
	struct rs *rs = rs_lookup(socket);
	struct rs_iomr *m;
	int ret = 0;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type != SOCK_STREAM)
		return rs_seterr(EINVAL);
	pthread_mutex_lock(&rs->map_lock);
	m = rs_find_iomr(&rs->iomaps, buf, len);
	if (!m)
		m = rs_find_iomr(&rs->iomap_queue, buf, len);
	if (m) {
		cm_list_del(&m->link);
		ibv_dereg_mr(m->mr);
		m->mr = NULL;
		if (m->slot < 0)
			free(m);
	} else {
		ret = rs_seterr(EINVAL);
	}
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/* Write into the peer's riomap()ed memory at offset (no notice). */
size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags)
{
	struct rs *rs = rs_lookup(socket);
	struct iovec v = { (void *)buf, count };
	ssize_t ret = 0;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type != SOCK_STREAM)
		return rs_seterr(EINVAL);
	pthread_mutex_lock(&rs->slock);
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	ret = count ? rs_need_qp(rs) : 0;
	if (!ret)
		ret = rs_send_loop(rs, &v, count, flags, 0, offset, 1);
out:
	pthread_mutex_unlock(&rs->slock);
	return (size_t)ret;
}

/*
 * rshutdown: tell the peer (disconnect, or shutdown of our sending half)
 * and wait until everything we sent completed, blocking even on a
 * non-blocking rsocket (44.0).  A disconnected rsocket's QP goes to the
 * error state, which flushes its receives and wakes rpoll.
 */
int rs_stream_shutdown(struct rs *rs, int how)
{
	enum rs_ctrl ctrl;
	int ret = 0;

	if (rs->svcs & RS_IN_KEEPALIVE)
		rs_notify_svc(RS_SVC_KEEPALIVE, rs, RS_SVC_REM);
	if (rs->fd_flags & O_NONBLOCK)
		rs_set_nonblocking(rs, 0);
	if (rs->state & RS_CONNECTED) {
		if (how == SHUT_RDWR) {
			ctrl = RS_CTRL_DISCONNECT;
			rs->state &= ~(RS_READABLE | RS_WRITABLE);
		} else if (how == SHUT_WR) {
			rs->state &= ~RS_WRITABLE;
			ctrl = (rs->state & RS_READABLE) ? RS_CTRL_SHUTDOWN :
			       RS_CTRL_DISCONNECT;
		} else {
			rs->state &= ~RS_READABLE;
			if (rs->state & RS_WRITABLE)
				goto out;
			ctrl = RS_CTRL_DISCONNECT;
		}
		if (!rs_ctrl_free(rs)) {
			ret = rs_process_cq(rs, 0, rs_conn_can_send_ctrl);
			if (ret)
				goto out;
		}
		if ((rs->state & RS_CONNECTED) && rs_ctrl_free(rs))
			ret = rs_post_ctrl(rs, ctrl, 0);
	}
	if (rs->state & RS_CONNECTED)
		rs_process_cq(rs, 0, rs_conn_all_sends_done);
out:
	if ((rs->fd_flags & O_NONBLOCK) && (rs->state & RS_CONNECTED))
		rs_set_nonblocking(rs, rs->fd_flags);
	if (rs->state & RS_DISCONNECTED) {
		ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
		cm_qp_to_err(rs->cm_id);
	}
	return ret;
}

/*
 * 44.0's rs_free takes the rsocket out of the index before it unmaps what
 * is still riomap()ed, with riounmap() on its number: that call fails
 * (EBADF) and the loop retrying it never ends.  rclose of an rsocket with
 * a mapping left never returns, here as there (we sleep instead of
 * spinning).
 */
static void rs_free_iomappings(struct rs *rs)
{
	struct rs_iomr *m;

	if (cm_list_empty(&rs->iomaps) && cm_list_empty(&rs->iomap_queue))
		return;
	m = cm_container_of(cm_list_empty(&rs->iomaps) ?
			    rs->iomap_queue.next : rs->iomaps.next,
			    struct rs_iomr, link);
	if (!riounmap(rs->index, m->mr->addr, m->mr->length))
		return;
	for (;;)
		pause();
}

void rs_free_stream(struct rs *rs)
{
	struct rdma_cm_id *id = rs->cm_id;

	if (rs->sbuf) {
		if (rs->smr)
			ibv_dereg_mr(rs->smr);
		free(rs->sbuf);
	}
	if (rs->rbuf) {
		if (rs->rmr)
			ibv_dereg_mr(rs->rmr);
		free(rs->rbuf);
	}
	if (rs->table) {
		if (rs->tmr)
			ibv_dereg_mr(rs->tmr);
		free(rs->table);
	}
	if (rs->index >= 0)
		rs_remove(rs);
	if (id) {
		rs_free_iomappings(rs);
		if (id->qp) {
			ibv_ack_cq_events(id->recv_cq, rs->unack_cqe);
			rdma_destroy_qp(id);
		}
		/* 44.0's rdma_destroy_qp frees them; ours keeps what it did
		 * not make */
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
	if (rs->accept_q[0] >= 0) {
		close(rs->accept_q[0]);
		close(rs->accept_q[1]);
	}
	free(rs->slots);
}

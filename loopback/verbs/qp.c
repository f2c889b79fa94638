/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * qp.c - queue pairs and shared receive queues: creation with machine-wide
 * QPN reservation, the RESET/INIT/RTR/RTS/SQD/ERR state machine, query,
 * flush, the post_send/post_recv/post_srq_recv data path (requester side,
 * which places RDMA WRITE/READ data itself when dma.c can) and the
 * handling of inbound frames (responder side and completions), which the
 * progress thread in wire.c feeds in order, per stream.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

#include "lo_verbs.h"

enum { LO_DONE, LO_RNR };

/* Bounds of the emulated transport timeout (attr.timeout 0: infinite). */
#define LO_TMO_MIN_NS	1000000ULL		/* 1 ms */
#define LO_TMO_MAX_NS	10000000000ULL		/* 10 s */

static uint32_t lo_srq_next;

/* --- helpers ------------------------------------------------------------- */

bool lo_cqe(struct ibv_cq *cq, struct lo_qp *qp, uint64_t wr_id,
	    enum ibv_wc_status st, enum ibv_wc_opcode op, uint32_t len,
	    uint32_t src_qp, uint32_t imm, unsigned int flags, bool solicited)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = st;
	wc.opcode = op;
	wc.vendor_err = 0;
	wc.byte_len = len;
	wc.imm_data = imm;
	wc.qp_num = qp->qp.qp_num;
	wc.src_qp = src_qp;
	wc.wc_flags = flags;
	return lo_cq_push(lo_cq(cq), &wc, solicited);
}

bool lo_qp_rx_active(struct lo_qp *qp)
{
	enum ibv_qp_state s = qp->qp.state;

	return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD ||
	       s == IBV_QPS_SQE;
}

/* Types whose QPs dial their peer at RTR. */
static bool lo_qp_connected_type(struct lo_qp *qp)
{
	return qp->qp.qp_type != IBV_QPT_UD;
}

/* Types that acknowledge, answer READs and atomics. */
static bool lo_qp_reliable(struct lo_qp *qp)
{
	return qp->qp.qp_type == IBV_QPT_RC ||
	       qp->qp.qp_type == IBV_QPT_XRC_SEND ||
	       qp->qp.qp_type == IBV_QPT_XRC_RECV;
}

/* Scatter len bytes into a local SGE list; returns a wc status. */
static enum ibv_wc_status lo_scatter(struct ibv_pd *pd,
				     const struct ibv_sge *sg, int n,
				     const unsigned char *data, size_t len)
{
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	size_t total = 0, off = 0;
	int i;

	for (i = 0; i < n; i++)
		total += sg[i].length;
	if (len > total)
		return IBV_WC_LOC_LEN_ERR;
	lo_mr_rdlock();
	for (i = 0; i < n && off < len; i++) {
		size_t k = sg[i].length;
		void *p;

		if (k > len - off)
			k = len - off;
		if (!k)
			continue;
		p = lo_key_ptr(pd, sg[i].lkey, sg[i].addr, k,
			       IBV_ACCESS_LOCAL_WRITE);
		if (!p) {
			st = IBV_WC_LOC_PROT_ERR;
			break;
		}
		memcpy(p, data + off, k);
		off += k;
	}
	lo_mr_unlock();
	return st;
}

/*
 * The link to our peer's block, dialling now (without waiting) if RTR
 * found nobody there yet.  NULL if there is nobody to talk to.
 */
static struct lo_conn *lo_qp_tx(struct lo_qp *qp)
{
	if (!qp->tx && !qp->peer_gone && lo_qp_connected_type(qp) &&
	    lo_qp_rx_active(qp))
		lo_qp_attach_tx(qp, true);
	return qp->peer_gone ? NULL : qp->tx;
}

/* Send a response frame to the peer on our dialled stream. */
static void lo_qp_respond(struct lo_qp *qp, uint8_t op, uint64_t seq,
			  uint16_t status, const void *pay, size_t len)
{
	struct lo_conn *tx = lo_qp_tx(qp);
	struct lo_wire_hdr h;
	struct lo_txbuf *b;

	if (!tx)
		return;
	memset(&h, 0, sizeof(h));
	h.op = op;
	h.status = status;
	h.src_qpn = qp->qp.qp_num;
	h.dst_qpn = qp->attr.dest_qp_num;
	h.seq = seq;
	h.len = len;
	b = lo_txbuf_new(&h, len);
	if (!b)
		return;
	if (len)
		memcpy(b->data + sizeof(h), pay, len);
	lo_conn_queue(tx, b);
}

static void lo_free_list_recvs(struct lo_list *l)
{
	while (!lo_list_empty(l)) {
		struct lo_recv *r = lo_list_first(l, struct lo_recv, link);

		lo_list_del(&r->link);
		free(r);
	}
}

static void lo_free_msgs(struct lo_list *l)
{
	while (!lo_list_empty(l)) {
		struct lo_inmsg *m = lo_list_first(l, struct lo_inmsg, link);

		lo_list_del(&m->link);
		free(m->pay);
		free(m);
	}
}

/* Parked inbound data: RNR-delayed requests and frames before RTR. */
static void lo_free_inq(struct lo_qp *qp)
{
	lo_free_msgs(&qp->inq);
	lo_free_msgs(&qp->early);
}

/*
 * Move to ERR: flush every posted receive and every unfinished send WR,
 * tell the peer (it flushes too, as the CM's DREQ handling would), drop
 * parked inbound data.  Caller holds the QP lock (and may hold prog lock).
 */
void lo_qp_to_err_locked(struct lo_qp *qp)
{
	lo_qp_to_err_bye_locked(qp, 1);
}

/*
 * The same, the peer told bye (lo_qp_close_conns): 0 when we go silent,
 * as a responder whose receive CQ overran does on rxe: no ACK, nothing
 * said, the requester retries until its transport timeout.
 */
void lo_qp_to_err_bye_locked(struct lo_qp *qp, int bye)
{
	bool was_err = qp->qp.state == IBV_QPS_ERR;

	lo_tmo_cancel(qp);
	qp->qp.state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	/* no peer places data in our memory from here on */
	lo_dma_qp_pub(qp, false);
	while (!lo_list_empty(&qp->recvs)) {
		struct lo_recv *r = lo_list_first(&qp->recvs, struct lo_recv,
						  link);

		lo_list_del(&r->link);
		qp->nrecv--;
		lo_cqe(qp->qp.recv_cq, qp, r->wr_id, IBV_WC_WR_FLUSH_ERR,
		       IBV_WC_RECV, 0, 0, 0, 0, false);
		free(r);
	}
	while (!lo_list_empty(&qp->swrs)) {
		struct lo_swr *w = lo_list_first(&qp->swrs, struct lo_swr,
						 link);

		lo_list_del(&w->link);
		qp->nswr--;
		lo_cqe(qp->qp.send_cq, qp, w->wr_id,
		       w->done && w->status != IBV_WC_SUCCESS ?
		       w->status : IBV_WC_WR_FLUSH_ERR,
		       w->opcode, 0, 0, 0, 0, false);
		free(w);
	}
	qp->pending = 0;
	qp->unplaced = 0;
	lo_free_inq(qp);
	lo_qp_close_conns(qp, bye);
	/* An SRQ user learns that nothing more will be consumed for it. */
	if (qp->qp.srq && !was_err)
		lo_async_event(qp->qp.context, IBV_EVENT_QP_LAST_WQE_REACHED,
			       &qp->qp);
}

/* Complete finished send WRs in order; an error completion ends the QP. */
static void lo_sq_progress_locked(struct lo_qp *qp)
{
	while (!lo_list_empty(&qp->swrs)) {
		struct lo_swr *w = lo_list_first(&qp->swrs, struct lo_swr,
						 link);

		if (!w->done)
			break;
		lo_list_del(&w->link);
		qp->nswr--;
		if (w->status != IBV_WC_SUCCESS) {
			lo_cqe(qp->qp.send_cq, qp, w->wr_id, w->status,
			       w->opcode, 0, 0, 0, 0, false);
			free(w);
			lo_qp_to_err_locked(qp);
			return;
		}
		if (w->signaled)
			lo_cqe(qp->qp.send_cq, qp, w->wr_id, IBV_WC_SUCCESS,
			       w->opcode, w->byte_len, 0, 0, 0, false);
		free(w);
	}
}

/*
 * How long a requester retries before giving up: 4.096 us * 2^timeout per
 * try, retry_cnt + 1 tries (IBTA 9.7.6.1.3), within sane bounds.
 */
static uint64_t lo_qp_tmo_ns(struct lo_qp *qp)
{
	unsigned int t = qp->attr.timeout;
	uint64_t ns;

	if (!t || t > 31)
		return LO_TMO_MAX_NS;
	ns = (4096ULL << t) * ((qp->attr.retry_cnt & 7) + 1);
	if (ns < LO_TMO_MIN_NS)
		return LO_TMO_MIN_NS;
	return ns > LO_TMO_MAX_NS ? LO_TMO_MAX_NS : ns;
}

/*
 * Nobody will answer our outstanding requests (the peer QP is gone): the
 * transport timeout starts, as retries would go unanswered on a wire.
 */
void lo_qp_peer_lost_locked(struct lo_qp *qp)
{
	struct lo_list *l;

	if (!lo_qp_rx_active(qp))
		return;
	for (l = qp->swrs.next; l != &qp->swrs; l = l->next) {
		if (!lo_container_of(l, struct lo_swr, link)->done) {
			lo_tmo_arm(qp, lo_qp_tmo_ns(qp));
			return;
		}
	}
}

/*
 * The transport timeout expired (progress thread or a polling thread,
 * under the progress lock): the oldest unfinished send WR fails with
 * RETRY_EXC_ERR, after every earlier one completed, and the QP goes to
 * ERR, flushing the rest.
 */
void lo_qp_timeout_locked(struct lo_qp *qp)
{
	struct lo_list *l;

	if (!lo_qp_rx_active(qp))
		return;
	for (l = qp->swrs.next; l != &qp->swrs; l = l->next) {
		struct lo_swr *w = lo_container_of(l, struct lo_swr, link);

		if (!w->done) {
			w->done = true;
			w->status = IBV_WC_RETRY_EXC_ERR;
			qp->pending--;
			qp->unplaced -= w->hazard;
			break;
		}
	}
	lo_sq_progress_locked(qp);
}

static struct lo_swr *lo_swr_find(struct lo_qp *qp, uint64_t seq)
{
	struct lo_list *l;

	for (l = qp->swrs.next; l != &qp->swrs; l = l->next) {
		struct lo_swr *w = lo_container_of(l, struct lo_swr, link);

		if (w->seq == seq)
			return w;
	}
	return NULL;
}

/* Where an inbound request's receive comes from and completes. */
struct lo_rq {
	struct lo_srq *srq;	/* NULL: the QP's own receive queue */
	struct ibv_cq *cq;
	struct ibv_pd *pd;
};

/*
 * Find the receive queue for inbound request h (NULL for UD): the QP's
 * RQ, its SRQ, or for an XRC_RECV QP the SRQ of its domain that h names.
 * false: no such SRQ.
 */
static bool lo_rq_for(struct lo_qp *qp, struct lo_wire_hdr *h,
		      struct lo_rq *rq)
{
	rq->cq = qp->qp.recv_cq;
	rq->pd = qp->qp.pd;
	rq->srq = qp->qp.srq ? lo_srq(qp->qp.srq) : NULL;
	if (qp->qp.qp_type == IBV_QPT_XRC_RECV) {
		struct lo_xrcd *x = qp->xrcd;
		struct lo_list *l;

		rq->srq = NULL;
		for (l = x->srqs.next; l != &x->srqs; l = l->next) {
			struct lo_srq *sq = lo_container_of(l, struct lo_srq,
							    xrcd_link);

			if (h && sq->srq_num == h->srqn) {
				rq->srq = sq;
				rq->cq = sq->cq;
				rq->pd = sq->srq.pd;
				break;
			}
		}
		return rq->srq != NULL;
	}
	return true;
}

/*
 * Take (or with peek, look for) one receive buffer for request h.  *bad
 * is set when h names no SRQ we have.  XRC SRQ lists are guarded by the
 * domain's srq_lock, held across the take so the SRQ cannot go away.
 */
static struct lo_recv *lo_take_recv(struct lo_qp *qp, struct lo_wire_hdr *h,
				    struct lo_rq *rq, bool peek, bool *bad)
{
	struct lo_xrcd *x = qp->qp.qp_type == IBV_QPT_XRC_RECV ?
			    qp->xrcd : NULL;
	struct lo_recv *r = NULL;
	bool limit = false;

	if (bad)
		*bad = false;
	if (x)
		pthread_mutex_lock(&x->srq_lock);
	if (!lo_rq_for(qp, h, rq)) {
		if (bad)
			*bad = true;
	} else if (rq->srq) {
		struct lo_srq *sq = rq->srq;

		pthread_mutex_lock(&sq->lock);
		if (!lo_list_empty(&sq->recvs)) {
			r = lo_list_first(&sq->recvs, struct lo_recv, link);
			if (!peek) {
				lo_list_del(&r->link);
				sq->nrecv--;
				if (sq->limit && sq->nrecv < sq->limit) {
					sq->limit = 0;
					limit = true;
				}
			}
		}
		pthread_mutex_unlock(&sq->lock);
		if (limit)
			lo_async_event(qp->qp.context,
				       IBV_EVENT_SRQ_LIMIT_REACHED, &sq->srq);
	} else if (!lo_list_empty(&qp->recvs)) {
		r = lo_list_first(&qp->recvs, struct lo_recv, link);
		if (!peek) {
			lo_list_del(&r->link);
			qp->nrecv--;
		}
	}
	if (x)
		pthread_mutex_unlock(&x->srq_lock);
	return r;
}

/* A responder-side error: NAK the requester, then this QP goes to ERR. */
static void lo_resp_error(struct lo_qp *qp, uint64_t seq,
			  enum ibv_wc_status req_status,
			  enum ibv_event_type ev)
{
	if (lo_qp_reliable(qp))
		lo_qp_respond(qp, LO_OP_NAK, seq, req_status, NULL, 0);
	lo_async_event(qp->qp.context, ev, &qp->qp);
	lo_qp_to_err_locked(qp);
}

/* Check an inbound RDMA access against our MRs; NULL if not allowed. */
static void *lo_remote_ptr(struct lo_qp *qp, struct lo_wire_hdr *h,
			   uint32_t len, int access)
{
	return lo_rkey_ptr(&qp->qp, h->rkey, h->raddr, len, access);
}

/*
 * Place an RDMA write's bytes in our memory as an HCA's DMA does: each
 * byte stored once, the last one last.  memcpy may store a byte twice
 * (for 64 bytes glibc's AVX-512 copy writes the same vector twice), so a
 * program that polls the last byte (riostream) could see it, write the
 * buffer, and have its write undone by the copy's second store.
 */
static void lo_write_mem(unsigned char *p, const unsigned char *pay,
			 uint32_t len)
{
	memcpy(p, pay, len - 1);
	__atomic_store_n(&p[len - 1], pay[len - 1], __ATOMIC_RELEASE);
}

/*
 * An RDMA operation the QP does not allow (qp_access_flags) is an invalid
 * request, not an access error: NAK "invalid request" for the requester
 * (IBV_WC_REM_INV_REQ_ERR), as rxe's check_op_valid does; UC drops it.
 */
static bool lo_op_refused(struct lo_qp *qp, struct lo_wire_hdr *h, int access)
{
	if (qp->attr.qp_access_flags & access)
		return false;
	/* UC has nobody to tell: the message is dropped */
	if (lo_qp_reliable(qp))
		lo_resp_error(qp, h->seq, IBV_WC_REM_INV_REQ_ERR,
			      IBV_EVENT_QP_REQ_ERR);
	return true;
}

/* An 8-byte atomic on our memory; the original value goes back. */
static void lo_do_atomic(struct lo_qp *qp, struct lo_wire_hdr *h,
			 unsigned char *pay)
{
	uint64_t args[2], old;
	uint64_t *p;

	if (!lo_qp_reliable(qp) || h->len != sizeof(args)) {
		lo_resp_error(qp, h->seq, IBV_WC_REM_INV_REQ_ERR,
			      IBV_EVENT_QP_REQ_ERR);
		return;
	}
	if (lo_op_refused(qp, h, IBV_ACCESS_REMOTE_ATOMIC))
		return;
	memcpy(args, pay, sizeof(args));
	if (h->raddr & 7) {
		lo_resp_error(qp, h->seq, IBV_WC_REM_INV_REQ_ERR,
			      IBV_EVENT_QP_REQ_ERR);
		return;
	}
	lo_mr_rdlock();
	p = lo_remote_ptr(qp, h, 8, IBV_ACCESS_REMOTE_ATOMIC);
	if (p && (h->flags & LO_WF_CMP_SWAP)) {
		old = args[0];
		__atomic_compare_exchange_n(p, &old, args[1], false,
					    __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else if (p) {
		old = __atomic_fetch_add(p, args[0], __ATOMIC_SEQ_CST);
	}
	lo_mr_unlock();
	if (!p) {
		lo_resp_error(qp, h->seq, IBV_WC_REM_ACCESS_ERR,
			      IBV_EVENT_QP_ACCESS_ERR);
		return;
	}
	lo_qp_respond(qp, LO_OP_READ_RESP, h->seq, 0, &old, sizeof(old));
}

/* Execute one inbound request; LO_RNR if it needs a RECV we lack. */
static int lo_process_req(struct lo_qp *qp, struct lo_wire_hdr *h,
			  unsigned char *pay)
{
	bool rc = lo_qp_reliable(qp);
	bool imm = h->op == LO_OP_SEND_IMM || h->op == LO_OP_WRITE_IMM;
	bool inv;
	enum ibv_wc_status st;
	struct lo_recv *r;
	struct lo_rq rq;
	bool bad, ok;
	void *p;

	switch (h->op) {
	case LO_OP_SEND:
	case LO_OP_SEND_IMM:
		r = lo_take_recv(qp, h, &rq, false, &bad);
		if (bad) {
			lo_resp_error(qp, h->seq, IBV_WC_REM_INV_REQ_ERR,
				      IBV_EVENT_QP_REQ_ERR);
			return LO_DONE;
		}
		if (!r)
			return LO_RNR;
		st = lo_scatter(rq.pd, r->sg, r->num_sge, pay, h->len);
		/* an rkey it cannot invalidate: an invalid request */
		if (st == IBV_WC_SUCCESS && (h->flags & LO_WF_INV) &&
		    lo_mw_invalidate(&qp->qp, h->imm))
			st = IBV_WC_LOC_QP_OP_ERR;
		if (st != IBV_WC_SUCCESS) {
			lo_cqe(rq.cq, qp, r->wr_id, st, IBV_WC_RECV,
			       0, h->src_qpn, 0, 0, false);
			free(r);
			lo_resp_error(qp, h->seq, st == IBV_WC_LOC_LEN_ERR ||
				      st == IBV_WC_LOC_QP_OP_ERR ?
				      IBV_WC_REM_INV_REQ_ERR :
				      IBV_WC_REM_OP_ERR,
				      IBV_EVENT_QP_REQ_ERR);
			return LO_DONE;
		}
		/*
		 * Complete, then acknowledge (rxe's responder order): once
		 * the requester saw its send complete, anything it tells us
		 * out of band (a disconnect) finds our CQE already there.
		 */
		inv = h->flags & LO_WF_INV;
		ok = lo_cqe(rq.cq, qp, r->wr_id, IBV_WC_SUCCESS,
			    IBV_WC_RECV, h->len, h->src_qpn,
			    imm || inv ? h->imm : 0,
			    imm ? IBV_WC_WITH_IMM : inv ? IBV_WC_WITH_INV : 0,
			    h->flags & LO_WF_SOLICITED);
		free(r);
		if (!ok) {
			/* the CQ overran (rxe: RESPST_ERR_CQ_OVERFLOW) */
			lo_qp_to_err_bye_locked(qp, 0);
			return LO_DONE;
		}
		if (rc)
			lo_qp_respond(qp, LO_OP_ACK, h->seq, 0, NULL, 0);
		return LO_DONE;
	case LO_OP_WRITE:
	case LO_OP_WRITE_IMM:
		if (imm && !lo_take_recv(qp, h, &rq, true, &bad)) {
			if (!bad)
				return LO_RNR;
			lo_resp_error(qp, h->seq, IBV_WC_REM_INV_REQ_ERR,
				      IBV_EVENT_QP_REQ_ERR);
			return LO_DONE;
		}
		/* PLACED: the requester checked and wrote, as an HCA does */
		if (!(h->flags & LO_WF_PLACED) &&
		    lo_op_refused(qp, h, IBV_ACCESS_REMOTE_WRITE))
			return LO_DONE;
		if (h->len) {
			lo_mr_rdlock();
			p = lo_remote_ptr(qp, h, h->len,
					  IBV_ACCESS_REMOTE_WRITE);
			if (p)
				lo_write_mem(p, pay, h->len);
			lo_mr_unlock();
			if (!p) {
				lo_resp_error(qp, h->seq, IBV_WC_REM_ACCESS_ERR,
					      IBV_EVENT_QP_ACCESS_ERR);
				return LO_DONE;
			}
		}
		r = imm ? lo_take_recv(qp, h, &rq, false, NULL) : NULL;
		if (r) {
			ok = lo_cqe(rq.cq, qp, r->wr_id, IBV_WC_SUCCESS,
				    IBV_WC_RECV_RDMA_WITH_IMM,
				    (h->flags & LO_WF_PLACED) ? h->rdlen :
				    h->len, h->src_qpn, h->imm,
				    IBV_WC_WITH_IMM,
				    h->flags & LO_WF_SOLICITED);
			free(r);
			if (!ok) {
				lo_qp_to_err_bye_locked(qp, 0);
				return LO_DONE;
			}
		}
		if (rc)
			lo_qp_respond(qp, LO_OP_ACK, h->seq, 0, NULL, 0);
		return LO_DONE;
	case LO_OP_READ_REQ: {
		struct lo_wire_hdr rh;
		struct lo_txbuf *b;

		if (!rc) {
			lo_resp_error(qp, h->seq, IBV_WC_REM_INV_REQ_ERR,
				      IBV_EVENT_QP_REQ_ERR);
			return LO_DONE;
		}
		if (lo_op_refused(qp, h, IBV_ACCESS_REMOTE_READ))
			return LO_DONE;
		memset(&rh, 0, sizeof(rh));
		rh.op = LO_OP_READ_RESP;
		rh.src_qpn = qp->qp.qp_num;
		rh.dst_qpn = qp->attr.dest_qp_num;
		rh.seq = h->seq;
		rh.len = h->rdlen;
		b = lo_txbuf_new(&rh, h->rdlen);
		if (!b)
			return LO_DONE;
		lo_mr_rdlock();
		p = h->rdlen ? lo_remote_ptr(qp, h, h->rdlen,
					     IBV_ACCESS_REMOTE_READ) : b;
		if (p && h->rdlen)
			memcpy(b->data + sizeof(rh), p, h->rdlen);
		lo_mr_unlock();
		if (!p) {
			free(b);
			lo_resp_error(qp, h->seq, IBV_WC_REM_ACCESS_ERR,
				      IBV_EVENT_QP_ACCESS_ERR);
			return LO_DONE;
		}
		if (lo_qp_tx(qp))
			lo_conn_queue(qp->tx, b);
		else
			free(b);
		return LO_DONE;
	}
	case LO_OP_ATOMIC:
		lo_do_atomic(qp, h, pay);
		return LO_DONE;
	default:
		lo_resp_error(qp, h->seq, IBV_WC_REM_INV_REQ_ERR,
			      IBV_EVENT_QP_REQ_ERR);
		return LO_DONE;
	}
}

/* Deliver parked inbound requests now that receives may exist. */
static void lo_drain_inq_locked(struct lo_qp *qp)
{
	while (lo_qp_rx_active(qp) && !lo_list_empty(&qp->inq)) {
		struct lo_inmsg *m = lo_list_first(&qp->inq, struct lo_inmsg,
						   link);

		if (lo_process_req(qp, &m->hdr, m->pay) == LO_RNR)
			break;
		/* ERR may have emptied the queue under us. */
		if (lo_list_empty(&qp->inq) ||
		    lo_list_first(&qp->inq, struct lo_inmsg, link) != m)
			break;
		lo_list_del(&m->link);
		free(m->pay);
		free(m);
	}
}

/* Completion-side frames (ACK, NAK, READ_RESP) for our send queue. */
static void lo_handle_resp(struct lo_qp *qp, struct lo_wire_hdr *h,
			   unsigned char *pay)
{
	struct lo_swr *w = lo_swr_find(qp, h->seq);

	if (!w || w->done)
		return;
	w->done = true;
	qp->pending--;
	qp->unplaced -= w->hazard;
	switch (h->op) {
	case LO_OP_ACK:
		w->status = IBV_WC_SUCCESS;
		break;
	case LO_OP_NAK:
		w->status = h->status ? h->status : IBV_WC_REM_OP_ERR;
		break;
	case LO_OP_READ_RESP:
		w->status = lo_scatter(qp->qp.pd, w->sg, w->num_sge, pay,
				       h->len);
		if (w->status == IBV_WC_LOC_LEN_ERR)
			w->status = IBV_WC_LOC_PROT_ERR;
		w->byte_len = h->len;
		break;
	}
	lo_sq_progress_locked(qp);
}

/*
 * Every frame from our peer QP, in order (lo_qp_rx_frame_locked).  Owns
 * pay.
 */
void lo_qp_handle_msg_locked(struct lo_qp *qp, struct lo_wire_hdr *h,
			     unsigned char *pay)
{
	switch (h->op) {
	case LO_OP_ACK:
	case LO_OP_NAK:
	case LO_OP_READ_RESP:
		if (lo_qp_rx_active(qp))
			lo_handle_resp(qp, h, pay);
		free(pay);
		return;
	case LO_OP_BYE:
		if (h->status && lo_qp_rx_active(qp)) {
			lo_qp_to_err_locked(qp);
		} else {
			/* Its ACKs came before this: the rest never will. */
			qp->peer_gone = true;
			lo_qp_peer_lost_locked(qp);
		}
		free(pay);
		return;
	}
	if (!lo_qp_rx_active(qp)) {
		free(pay);
		return;
	}
	/* The IBA's Communication Established: a request reached a QP
	 * still in RTR (rxe never reports it, HCAs such as mlx5 do). */
	if (qp->qp.state == IBV_QPS_RTR && !qp->comm_est) {
		qp->comm_est = true;
		lo_dma_qp_pub(qp, false);	/* no more notices needed */
		lo_async_event(qp->qp.context, IBV_EVENT_COMM_EST, &qp->qp);
	}
	if (lo_list_empty(&qp->inq) && lo_process_req(qp, h, pay) == LO_DONE) {
		free(pay);
		return;
	}
	if (!lo_qp_rx_active(qp)) {
		free(pay);
		return;
	}
	/* No receive posted: hold it (an infinite RNR retry). */
	{
		struct lo_inmsg *m = malloc(sizeof(*m));

		if (!m) {
			free(pay);
			return;
		}
		m->hdr = *h;
		m->pay = pay;
		lo_list_add_tail(&qp->inq, &m->link);
	}
}

/*
 * Entry point from the progress thread for every frame a link brings this
 * QP (QP lock held).  Owns pay.  Before RTR frames wait (the peer may
 * reach RTR first); from RTR on, frames from anyone but the peer get a
 * goodbye back, as from a QP that is not there.
 */
void lo_qp_rx_frame_locked(struct lo_qp *qp, struct lo_wire_hdr *h,
			   unsigned char *pay)
{
	enum ibv_qp_state s = qp->qp.state;
	struct lo_inmsg *m;

	if (!lo_qp_connected_type(qp)) {
		free(pay);
		return;
	}
	if (s == IBV_QPS_RESET || s == IBV_QPS_INIT) {
		m = malloc(sizeof(*m));
		if (!m) {
			free(pay);
			return;
		}
		m->hdr = *h;
		m->pay = pay;
		lo_list_add_tail(&qp->early, &m->link);
		return;
	}
	if (!lo_qp_rx_active(qp)) {
		free(pay);
		return;
	}
	if (h->src_qpn != qp->attr.dest_qp_num) {
		if (lo_op_is_request(h->op))
			lo_send_bye(qp->qp.qp_num, h->src_qpn, 0);
		free(pay);
		return;
	}
	lo_qp_handle_msg_locked(qp, h, pay);
}

/* At RTR: the frames that came before, in order. */
static void lo_qp_early_locked(struct lo_qp *qp)
{
	while (!lo_list_empty(&qp->early)) {
		struct lo_inmsg *m = lo_list_first(&qp->early, struct lo_inmsg,
						   link);

		lo_list_del(&m->link);
		lo_qp_rx_frame_locked(qp, &m->hdr, m->pay);
		free(m);
	}
}

/*
 * A datagram for this UD QP (progress thread, QP lock held): drop it if
 * the QP cannot receive, the Q_Key differs or no receive is posted (UD
 * semantics); otherwise place a synthesized GRH and the payload.
 */
void lo_qp_ud_deliver_locked(struct lo_qp *qp, struct lo_ud_hdr *uh,
			     const unsigned char *pay)
{
	bool imm = uh->h.op == LO_OP_SEND_IMM;
	struct lo_rq rq;
	unsigned char *buf;
	struct ibv_grh *g;
	enum ibv_wc_status st;
	struct lo_recv *r;
	uint32_t len = uh->h.len;

	if (!lo_qp_rx_active(qp) || uh->h.rkey != qp->attr.qkey ||
	    (uh->h.dst_qpn != qp->qp.qp_num &&
	     uh->h.dst_qpn != LO_MCAST_QPN))
		return;
	buf = malloc(LO_GRH_LEN + len);
	if (!buf)
		return;
	r = lo_take_recv(qp, NULL, &rq, false, NULL);
	if (!r) {
		free(buf);
		return;
	}
	g = (struct ibv_grh *)buf;
	memset(g, 0, sizeof(*g));
	g->version_tclass_flow = htobe32(6U << 28 | uh->tclass_flow);
	g->paylen = htobe16(len);
	g->next_hdr = 0x1b;
	g->hop_limit = uh->hop_limit;
	g->sgid.raw[10] = 0xff;
	g->sgid.raw[11] = 0xff;
	g->sgid.raw[12] = 127;
	g->sgid.raw[15] = 1;
	memcpy(g->dgid.raw, uh->dgid, sizeof(g->dgid.raw));
	if (len)
		memcpy(buf + LO_GRH_LEN, pay, len);
	st = lo_scatter(qp->qp.pd, r->sg, r->num_sge, buf, LO_GRH_LEN + len);
	free(buf);
	lo_cqe(qp->qp.recv_cq, qp, r->wr_id, st, IBV_WC_RECV,
	       st == IBV_WC_SUCCESS ? LO_GRH_LEN + len : 0, uh->h.src_qpn,
	       imm ? uh->h.imm : 0,
	       IBV_WC_GRH | (imm ? IBV_WC_WITH_IMM : 0),
	       uh->h.flags & LO_WF_SOLICITED);
	free(r);
}

/*
 * The peer process vanished without a goodbye.  On a wire nothing tells
 * us: its QPs are destroyed, and packets to them are dropped (rxe_rcv
 * finds no QP), so only a request of ours notices, by going unanswered
 * for the transport timeout (RETRY_EXC_ERR, then ERR and flushes).  A QP
 * that only waits for receives waits on, as it does over a NIC.
 */
void lo_qp_peer_died_locked(struct lo_qp *qp)
{
	qp->peer_gone = true;
	lo_qp_peer_lost_locked(qp);
}

/* --- QP creation ---------------------------------------------------------- */

static void lo_cq_ref(struct ibv_cq *cq, int d)
{
	if (!cq)
		return;
	pthread_mutex_lock(&lo_cq(cq)->lock);
	lo_cq(cq)->nqp += d;
	pthread_mutex_unlock(&lo_cq(cq)->lock);
}

static struct ibv_qp *lo_qp_create(struct ibv_context *ctx, struct ibv_pd *pd,
				   struct ibv_qp_init_attr *ia,
				   uint32_t create_flags, struct ibv_xrcd *xrcd)
{
	struct lo_qp *qp;
	struct ibv_qp_cap *cap = &ia->cap;
	bool xrc_recv = ia->qp_type == IBV_QPT_XRC_RECV;

	if (!lo_is_our_ctx(ctx) || (!xrc_recv && (!pd || pd->context != ctx))) {
		errno = EINVAL;
		return NULL;
	}
	switch (ia->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		break;
	case IBV_QPT_XRC_SEND:
		/* Send side only: no receive queue of its own. */
		if (!ia->send_cq || ia->srq) {
			errno = EINVAL;
			return NULL;
		}
		if (!ia->recv_cq)
			ia->recv_cq = ia->send_cq;
		cap->max_recv_wr = cap->max_recv_sge = 0;
		break;
	case IBV_QPT_XRC_RECV:
		/* Receive side of a domain: no PD, CQs or queues. */
		if (!xrcd || xrcd->context != ctx) {
			errno = EINVAL;
			return NULL;
		}
		pd = NULL;
		ia->send_cq = ia->recv_cq = NULL;
		ia->srq = NULL;
		memset(cap, 0, sizeof(*cap));
		break;
	default:
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((!xrc_recv && (!ia->send_cq || !ia->recv_cq ||
			   ia->send_cq->context != ctx ||
			   ia->recv_cq->context != ctx)) ||
	    (ia->srq && ia->srq->context != ctx) ||
	    cap->max_send_wr > LO_MAX_WR || cap->max_send_sge > LO_MAX_SGE ||
	    cap->max_inline_data > LO_MAX_INLINE ||
	    (!ia->srq && (cap->max_recv_wr > LO_MAX_WR ||
			  cap->max_recv_sge > LO_MAX_SGE))) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&qp->lock, NULL);
	pthread_mutex_init(&qp->xlock, NULL);
	lo_list_init(&qp->recvs);
	lo_list_init(&qp->inq);
	lo_list_init(&qp->early);
	lo_list_init(&qp->srq_link);
	lo_list_init(&qp->swrs);
	lo_list_init(&qp->mcast);
	lo_list_init(&qp->xrcd_link);
	lo_list_init(&qp->tmo_link);
	qp->ud_tx_fd = -1;
	qp->block_self_mc = create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	qp->qp.context = ctx;
	qp->qp.qp_context = ia->qp_context;
	qp->qp.pd = pd;
	qp->qp.send_cq = ia->send_cq;
	qp->qp.recv_cq = ia->recv_cq;
	qp->qp.srq = ia->srq;
	qp->qp.handle = lo_new_handle();
	qp->qp.state = IBV_QPS_RESET;
	qp->qp.qp_type = ia->qp_type;
	pthread_mutex_init(&qp->qp.mutex, NULL);
	pthread_cond_init(&qp->qp.cond, NULL);

	/* What we grant; reported back like a provider would. */
	if (xrc_recv)
		;
	else if (!cap->max_send_wr)
		cap->max_send_wr = 1;
	if (!xrc_recv && !cap->max_send_sge)
		cap->max_send_sge = 1;
	if (ia->srq || ia->qp_type == IBV_QPT_XRC_SEND || xrc_recv) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	} else {
		if (!cap->max_recv_wr)
			cap->max_recv_wr = 1;
		if (!cap->max_recv_sge)
			cap->max_recv_sge = 1;
	}
	if (!xrc_recv && cap->max_inline_data < 256)
		cap->max_inline_data = 256;
	qp->cap = *cap;
	qp->sq_sig_all = ia->sq_sig_all;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.port_num = 1;
	qp->attr.path_mtu = IBV_MTU_4096;

	if (lo_qpn_alloc(qp) ||
	    (ia->qp_type == IBV_QPT_UD && lo_ud_open(qp))) {
		int e = errno;

		lo_prog_lock();
		pthread_mutex_lock(&qp->lock);
		lo_ud_close(qp);
		lo_qpn_free(qp);
		pthread_mutex_unlock(&qp->lock);
		lo_prog_unlock();
		pthread_mutex_destroy(&qp->lock);
		pthread_mutex_destroy(&qp->xlock);
		free(qp);
		errno = e;
		return NULL;
	}
	if (pd)
		lo_pd_get(pd);
	lo_cq_ref(ia->send_cq, 1);
	lo_cq_ref(ia->recv_cq, 1);
	if (xrc_recv) {
		struct lo_xrcd *x = lo_container_of(xrcd, struct lo_xrcd,
						    xrcd);

		qp->xrcd = x;
		pthread_mutex_lock(&x->lock);
		lo_list_add_tail(&x->qps, &qp->xrcd_link);
		x->refcnt++;
		pthread_mutex_unlock(&x->lock);
	}
	if (ia->srq) {
		struct lo_srq *s = lo_srq(ia->srq);

		pthread_mutex_lock(&s->qps_lock);
		lo_list_add_tail(&s->qps, &qp->srq_link);
		s->nqp++;
		pthread_mutex_unlock(&s->qps_lock);
	}
	return &qp->qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	if (!pd || !qp_init_attr) {
		errno = EINVAL;
		return NULL;
	}
	if (qp_init_attr->qp_type == IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return NULL;
	}
	return lo_qp_create(pd->context, pd, qp_init_attr, 0, NULL);
}

/* ---- the ibv_wr_* posting API ------------------------------------------
 * As rxe: the builders and setters fill a batch under the QP's wr lock
 * (taken at wr_start), wr_complete hands it to lo_post_send; an error met
 * while building is returned by wr_complete and nothing is posted.
 */
static struct lo_qp *lo_qpx(struct ibv_qp_ex *qx)
{
	return lo_container_of(qx, struct lo_qp, qpx);
}

/* The next WR of the batch; NULL (and the batch failed) when full. */
static struct ibv_send_wr *lo_x_new(struct ibv_qp_ex *qx,
				    enum ibv_wr_opcode op)
{
	struct lo_qp *qp = lo_qpx(qx);
	struct lo_xwr *b;
	unsigned int n;

	if (qp->xerr)
		return NULL;
	if (qp->xn >= qp->cap.max_send_wr) {
		qp->xerr = ENOSPC;
		return NULL;
	}
	if (qp->xn == qp->xcap) {
		n = qp->xcap ? qp->xcap * 2 : 4;
		b = realloc(qp->xb, n * sizeof(*b));
		if (!b) {
			qp->xerr = ENOMEM;
			return NULL;
		}
		memset(b + qp->xcap, 0, (n - qp->xcap) * sizeof(*b));
		qp->xb = b;
		qp->xcap = n;
	}
	b = &qp->xb[qp->xn++];
	memset(&b->wr, 0, sizeof(b->wr));
	b->wr.wr_id = qx->wr_id;
	b->wr.send_flags = qx->wr_flags;
	b->wr.opcode = op;
	return &b->wr;
}

/* The WR the setters change: the last one built. */
static struct lo_xwr *lo_x_last(struct ibv_qp_ex *qx)
{
	struct lo_qp *qp = lo_qpx(qx);

	if (qp->xerr)
		return NULL;
	if (!qp->xn) {
		qp->xerr = EINVAL;
		return NULL;
	}
	return &qp->xb[qp->xn - 1];
}

static void lo_x_rdma(struct ibv_qp_ex *qx, enum ibv_wr_opcode op,
		      uint32_t rkey, uint64_t raddr, __be32 imm)
{
	struct ibv_send_wr *wr = lo_x_new(qx, op);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = raddr;
	wr->imm_data = imm;
}

static void lo_x_atomic(struct ibv_qp_ex *qx, enum ibv_wr_opcode op,
			uint32_t rkey, uint64_t raddr, uint64_t cmp_add,
			uint64_t swap)
{
	struct ibv_send_wr *wr = lo_x_new(qx, op);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.compare_add = cmp_add;
	wr->wr.atomic.swap = swap;
}

static void lo_wr_send(struct ibv_qp_ex *qx)
{
	lo_x_new(qx, IBV_WR_SEND);
}

static void lo_wr_send_imm(struct ibv_qp_ex *qx, __be32 imm)
{
	struct ibv_send_wr *wr = lo_x_new(qx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void lo_wr_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey,
			     uint64_t raddr)
{
	lo_x_rdma(qx, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}

static void lo_wr_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey,
				 uint64_t raddr, __be32 imm)
{
	lo_x_rdma(qx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void lo_wr_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey,
			    uint64_t raddr)
{
	lo_x_rdma(qx, IBV_WR_RDMA_READ, rkey, raddr, 0);
}

static void lo_wr_atomic_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey,
				 uint64_t raddr, uint64_t compare,
				 uint64_t swap)
{
	lo_x_atomic(qx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, compare,
		    swap);
}

static void lo_wr_atomic_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey,
				   uint64_t raddr, uint64_t add)
{
	lo_x_atomic(qx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0);
}

/* Accepted at create as rxe does, not emulated (as ibv_bind_mw). */
static void lo_x_unsup(struct ibv_qp_ex *qx)
{
	struct lo_qp *qp = lo_qpx(qx);

	if (!qp->xerr)
		qp->xerr = EOPNOTSUPP;
}

static void lo_wr_bind_mw(struct ibv_qp_ex *qx, struct ibv_mw *mw,
			  uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct ibv_send_wr *wr;

	if (!mw || !bi) {
		if (!lo_qpx(qx)->xerr)
			lo_qpx(qx)->xerr = EINVAL;
		return;
	}
	wr = lo_x_new(qx, IBV_WR_BIND_MW);
	if (!wr)
		return;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *bi;
}

static void lo_wr_local_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	struct ibv_send_wr *wr = lo_x_new(qx, IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

static void lo_wr_send_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	struct ibv_send_wr *wr = lo_x_new(qx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

static void lo_wr_atomic_write(struct ibv_qp_ex *qx, uint32_t rkey,
			       uint64_t raddr, const void *data)
{
	(void)rkey, (void)raddr, (void)data;
	lo_x_unsup(qx);
}

static void lo_wr_set_ud_addr(struct ibv_qp_ex *qx, struct ibv_ah *ah,
			      uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct lo_xwr *b = lo_x_last(qx);

	if (!b)
		return;
	b->wr.wr.ud.ah = ah;
	b->wr.wr.ud.remote_qpn = remote_qpn;
	b->wr.wr.ud.remote_qkey = remote_qkey;
}

static void lo_wr_set_sge_list(struct ibv_qp_ex *qx, size_t n,
			       const struct ibv_sge *sg)
{
	struct lo_xwr *b = lo_x_last(qx);

	if (!b)
		return;
	if (n > lo_qpx(qx)->cap.max_send_sge) {
		lo_qpx(qx)->xerr = ENOSPC;
		return;
	}
	memcpy(b->sg, sg, n * sizeof(*sg));
	b->wr.num_sge = n;
	b->wr.send_flags &= ~IBV_SEND_INLINE;
}

static void lo_wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey,
			  uint64_t addr, uint32_t length)
{
	struct ibv_sge s = { .addr = addr, .length = length, .lkey = lkey };

	lo_wr_set_sge_list(qx, length ? 1 : 0, &s);
}

/* Inline data is copied now: the caller may reuse its buffers. */
static void lo_wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t n,
				       const struct ibv_data_buf *d)
{
	struct lo_xwr *b = lo_x_last(qx);
	size_t i, len = 0;

	if (!b)
		return;
	for (i = 0; i < n; i++)
		len += d[i].length;
	if (len > lo_qpx(qx)->cap.max_inline_data) {
		lo_qpx(qx)->xerr = ENOSPC;
		return;
	}
	if (!b->inl && !(b->inl = malloc(LO_MAX_INLINE))) {
		lo_qpx(qx)->xerr = ENOMEM;
		return;
	}
	for (len = 0, i = 0; i < n; i++) {
		memcpy(b->inl + len, d[i].addr, d[i].length);
		len += d[i].length;
	}
	b->sg[0].addr = (uintptr_t)b->inl;
	b->sg[0].length = len;
	b->sg[0].lkey = 0;
	b->wr.num_sge = 1;
	b->wr.send_flags |= IBV_SEND_INLINE;
}

static void lo_wr_set_inline_data(struct ibv_qp_ex *qx, void *addr,
				  size_t length)
{
	struct ibv_data_buf d = { .addr = addr, .length = length };

	lo_wr_set_inline_data_list(qx, 1, &d);
}

static void lo_wr_start(struct ibv_qp_ex *qx)
{
	struct lo_qp *qp = lo_qpx(qx);

	pthread_mutex_lock(&qp->xlock);
	qp->xn = 0;
	qp->xerr = 0;
}

static int lo_wr_complete(struct ibv_qp_ex *qx)
{
	struct lo_qp *qp = lo_qpx(qx);
	struct ibv_send_wr *bad;
	unsigned int i;
	int ret = qp->xerr;

	if (!ret && qp->xn) {
		for (i = 0; i < qp->xn; i++) {
			qp->xb[i].wr.sg_list = qp->xb[i].sg;
			qp->xb[i].wr.next = i + 1 < qp->xn ?
					    &qp->xb[i + 1].wr : NULL;
		}
		ret = lo_post_send(&qp->qp, &qp->xb[0].wr, &bad);
	}
	qp->xn = 0;
	pthread_mutex_unlock(&qp->xlock);
	return ret;
}

static void lo_wr_abort(struct ibv_qp_ex *qx)
{
	struct lo_qp *qp = lo_qpx(qx);

	qp->xn = 0;
	pthread_mutex_unlock(&qp->xlock);
}

/* rxe's: which send_ops_flags each QP type takes. */
#define LO_RC_SEND_OPS \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV | \
	 IBV_QP_EX_WITH_ATOMIC_WRITE)
#define LO_UC_SEND_OPS \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV)
#define LO_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

static bool lo_send_ops_ok(enum ibv_qp_type t, uint64_t f)
{
	switch (t) {
	case IBV_QPT_RC:
		return !(f & ~(uint64_t)LO_RC_SEND_OPS);
	case IBV_QPT_UC:
		return !(f & ~(uint64_t)LO_UC_SEND_OPS);
	case IBV_QPT_UD:
		return !(f & ~(uint64_t)LO_UD_SEND_OPS);
	default:
		return false;
	}
}

static void lo_set_send_ops(struct lo_qp *qp, uint64_t f)
{
	struct ibv_qp_ex *x = &qp->qpx;

#define LO_OP(flag, field, fn) \
	if (f & IBV_QP_EX_WITH_##flag) \
		x->field = fn;
	LO_OP(SEND, wr_send, lo_wr_send)
	LO_OP(SEND_WITH_IMM, wr_send_imm, lo_wr_send_imm)
	LO_OP(RDMA_WRITE, wr_rdma_write, lo_wr_rdma_write)
	LO_OP(RDMA_WRITE_WITH_IMM, wr_rdma_write_imm, lo_wr_rdma_write_imm)
	LO_OP(RDMA_READ, wr_rdma_read, lo_wr_rdma_read)
	LO_OP(ATOMIC_CMP_AND_SWP, wr_atomic_cmp_swp, lo_wr_atomic_cmp_swp)
	LO_OP(ATOMIC_FETCH_AND_ADD, wr_atomic_fetch_add,
	      lo_wr_atomic_fetch_add)
	LO_OP(BIND_MW, wr_bind_mw, lo_wr_bind_mw)
	LO_OP(LOCAL_INV, wr_local_inv, lo_wr_local_inv)
	LO_OP(SEND_WITH_INV, wr_send_inv, lo_wr_send_inv)
	LO_OP(ATOMIC_WRITE, wr_atomic_write, lo_wr_atomic_write)
#undef LO_OP
	x->wr_set_ud_addr = lo_wr_set_ud_addr;
	x->wr_set_inline_data = lo_wr_set_inline_data;
	x->wr_set_inline_data_list = lo_wr_set_inline_data_list;
	x->wr_set_sge = lo_wr_set_sge;
	x->wr_set_sge_list = lo_wr_set_sge_list;
	x->wr_start = lo_wr_start;
	x->wr_complete = lo_wr_complete;
	x->wr_abort = lo_wr_abort;
}

struct ibv_qp *lo_create_qp_ex(struct ibv_context *ctx,
			       struct ibv_qp_init_attr_ex *ax)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			 IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

	if (!ax || (ax->comp_mask & ~known) ||
	    !(ax->comp_mask & (ax->qp_type == IBV_QPT_XRC_RECV ?
			       IBV_QP_INIT_ATTR_XRCD : IBV_QP_INIT_ATTR_PD))) {
		errno = (ax && (ax->comp_mask & ~known)) ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	if ((ax->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    (ax->create_flags & ~IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    !lo_send_ops_ok(ax->qp_type, ax->send_ops_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = ax->qp_context;
	ia.send_cq = ax->send_cq;
	ia.recv_cq = ax->recv_cq;
	ia.srq = ax->srq;
	ia.cap = ax->cap;
	ia.qp_type = ax->qp_type;
	ia.sq_sig_all = ax->sq_sig_all;
	qp = lo_qp_create(ctx, (ax->comp_mask & IBV_QP_INIT_ATTR_PD) ?
			  ax->pd : NULL, &ia,
			  (ax->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) ?
			  ax->create_flags : 0,
			  (ax->comp_mask & IBV_QP_INIT_ATTR_XRCD) ?
			  ax->xrcd : NULL);
	if (!qp)
		return NULL;
	ax->cap = ia.cap;
	/* As rxe: every QP made here has a qp_ex, its ops as asked. */
	lo_qp(qp)->has_qpx = true;
	if (ax->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		lo_set_send_ops(lo_qp(qp), ax->send_ops_flags);
	return qp;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (qp && lo_qp(qp)->has_qpx)
		return &lo_qp(qp)->qpx;
	return NULL;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct lo_qp *qp;

	if (!ibqp)
		return EINVAL;
	qp = lo_qp(ibqp);
	if (ibqp->srq) {
		struct lo_srq *s = lo_srq(ibqp->srq);

		pthread_mutex_lock(&s->qps_lock);
		lo_list_del(&qp->srq_link);
		s->nqp--;
		pthread_mutex_unlock(&s->qps_lock);
	}
	if (qp->xrcd) {
		pthread_mutex_lock(&qp->xrcd->lock);
		lo_list_del(&qp->xrcd_link);
		qp->xrcd->refcnt--;
		pthread_mutex_unlock(&qp->xrcd->lock);
	}
	lo_prog_lock();
	pthread_mutex_lock(&qp->lock);
	lo_tmo_cancel(qp);
	lo_ud_close(qp);
	lo_qp_close_conns(qp, 0);
	lo_qpn_free(qp);
	lo_dma_qp_pub(qp, true);
	pthread_mutex_unlock(&qp->lock);
	lo_prog_unlock();

	/* Like the real library: async events taken must be acked. */
	lo_async_forget(ibqp->context, ibqp);
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->async_reported)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);

	lo_free_list_recvs(&qp->recvs);
	lo_free_inq(qp);
	while (!lo_list_empty(&qp->swrs)) {
		struct lo_swr *w = lo_list_first(&qp->swrs, struct lo_swr,
						 link);

		lo_list_del(&w->link);
		free(w);
	}
	lo_cq_ref(ibqp->send_cq, -1);
	lo_cq_ref(ibqp->recv_cq, -1);
	if (ibqp->pd)
		lo_pd_put(ibqp->pd);
	pthread_mutex_destroy(&qp->lock);
	pthread_mutex_destroy(&qp->xlock);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	while (qp->xcap)
		free(qp->xb[--qp->xcap].inl);
	free(qp->xb);
	free(qp);
	return 0;
}

/* --- modify / query ------------------------------------------------------- */

static bool lo_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state nxt,
			     enum ibv_qp_type type)
{
	if (nxt == IBV_QPS_RESET)
		return true;
	/* As the kernel's table (ib_modify_qp_is_ok): not from RESET. */
	if (nxt == IBV_QPS_ERR)
		return cur != IBV_QPS_RESET;
	switch (cur) {
	case IBV_QPS_RESET:
		return nxt == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return nxt == IBV_QPS_INIT || nxt == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return nxt == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		return nxt == IBV_QPS_RTS || nxt == IBV_QPS_SQD;
	case IBV_QPS_SQD:
		return nxt == IBV_QPS_RTS || nxt == IBV_QPS_SQD;
	case IBV_QPS_SQE:
		return nxt == IBV_QPS_RTS && type != IBV_QPT_RC;
	default:
		return false;
	}
}

static void lo_store_attr(struct lo_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *s = &qp->attr;

	if (mask & IBV_QP_ACCESS_FLAGS)
		s->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		s->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		s->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		s->qkey = a->qkey;
	if (mask & IBV_QP_AV)
		s->ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		s->path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		s->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		s->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		s->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		s->rq_psn = a->rq_psn;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		s->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		s->alt_ah_attr = a->alt_ah_attr;
		s->alt_pkey_index = a->alt_pkey_index;
		s->alt_port_num = a->alt_port_num;
		s->alt_timeout = a->alt_timeout;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		s->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		s->sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		s->path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_DEST_QPN)
		s->dest_qp_num = a->dest_qp_num;
}

/* Drop everything without completions (RESET semantics). */
static void lo_qp_reset_locked(struct lo_qp *qp)
{
	lo_tmo_cancel(qp);
	lo_qp_close_conns(qp, 0);
	while (!lo_list_empty(&qp->recvs)) {
		struct lo_recv *r = lo_list_first(&qp->recvs, struct lo_recv,
						  link);

		lo_list_del(&r->link);
		free(r);
	}
	qp->nrecv = 0;
	while (!lo_list_empty(&qp->swrs)) {
		struct lo_swr *w = lo_list_first(&qp->swrs, struct lo_swr,
						 link);

		lo_list_del(&w->link);
		free(w);
	}
	qp->nswr = 0;
	qp->pending = 0;
	qp->unplaced = 0;
	lo_free_inq(qp);
	qp->sq_error = false;
	qp->peer_gone = false;
	qp->comm_est = false;
	__atomic_store_n(&qp->dma_peer_seen, false, __ATOMIC_RELAXED);
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask)
{
	enum ibv_qp_state cur, nxt;
	struct lo_qp *qp;

	if (!ibqp || !attr)
		return EINVAL;
	qp = lo_qp(ibqp);
	if ((attr_mask & IBV_QP_PORT) && attr->port_num != 1)
		return EINVAL;
	if ((attr_mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return EINVAL;
	if ((attr_mask & IBV_QP_PATH_MTU) &&
	    (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((attr_mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > LO_MAX_RD_ATOM)
		return EINVAL;
	if ((attr_mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > LO_MAX_RD_ATOM)
		return EINVAL;
	if ((attr_mask & IBV_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff)
		return EINVAL;
	/* RoCE: an address vector needs a GRH (rdma_check_ah_attr) */
	if (((attr_mask & IBV_QP_AV) && (!attr->ah_attr.is_global ||
	     attr->ah_attr.grh.sgid_index >= LO_GID_TBL_LEN)) ||
	    ((attr_mask & IBV_QP_ALT_PATH) && (!attr->alt_ah_attr.is_global ||
	     attr->alt_ah_attr.grh.sgid_index >= LO_GID_TBL_LEN))) {
		if (((attr_mask & IBV_QP_AV) && !attr->ah_attr.is_global) ||
		    ((attr_mask & IBV_QP_ALT_PATH) &&
		     !attr->alt_ah_attr.is_global))
			lo_hint_no_grh("ibv_modify_qp");
		return EINVAL;
	}

	pthread_mutex_lock(&qp->lock);
	cur = ibqp->state;
	nxt = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur &&
	    !(cur == IBV_QPS_SQD || cur == IBV_QPS_SQE ||
	      cur == IBV_QPS_RTS)) {
		pthread_mutex_unlock(&qp->lock);
		return EINVAL;
	}
	if (!lo_transition_ok(cur, nxt, ibqp->qp_type) ||
	    (nxt == IBV_QPS_RTR && cur == IBV_QPS_INIT &&
	     lo_qp_connected_type(qp) && !(attr_mask & IBV_QP_DEST_QPN))) {
		pthread_mutex_unlock(&qp->lock);
		return EINVAL;
	}
	pthread_mutex_unlock(&qp->lock);

	/* Dial outside every lock: connect() may wait for the accept. */
	if (nxt == IBV_QPS_RTR && cur == IBV_QPS_INIT &&
	    lo_qp_connected_type(qp))
		lo_link_dial(attr->dest_qp_num);

	lo_prog_lock();
	pthread_mutex_lock(&qp->lock);
	if (ibqp->state != cur && nxt != IBV_QPS_ERR &&
	    nxt != IBV_QPS_RESET) {
		/* Raced with an error transition (peer died). */
		pthread_mutex_unlock(&qp->lock);
		lo_prog_unlock();
		return EINVAL;
	}
	lo_store_attr(qp, attr, attr_mask);
	if (nxt == IBV_QPS_ERR) {
		lo_qp_to_err_locked(qp);
	} else if (nxt == IBV_QPS_RESET) {
		lo_qp_reset_locked(qp);
		ibqp->state = IBV_QPS_RESET;
	} else {
		ibqp->state = nxt;
		if (nxt == IBV_QPS_RTR && cur == IBV_QPS_INIT &&
		    lo_qp_connected_type(qp)) {
			lo_qp_attach_tx(qp, false);
			lo_qp_early_locked(qp);
		}
		if (nxt == IBV_QPS_RTR || nxt == IBV_QPS_RTS)
			lo_drain_inq_locked(qp);
	}
	qp->attr.qp_state = ibqp->state;
	/* peers place data while we can take it (RTS, SQD) */
	lo_dma_qp_pub(qp, false);
	pthread_mutex_unlock(&qp->lock);
	lo_prog_unlock();
	return 0;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		 int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct lo_qp *qp;

	if (!ibqp || !attr)
		return EINVAL;
	qp = lo_qp(ibqp);
	pthread_mutex_lock(&qp->lock);
	*attr = qp->attr;
	attr->qp_state = ibqp->state;
	attr->cur_qp_state = ibqp->state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	attr->en_sqd_async_notify = 0;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		init_attr->cap = qp->cap;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = qp->sq_sig_all;
	}
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			       uint32_t flags)
{
	/* One ordered stream per direction: always in order. */
	return 1;
}

/* --- posting ------------------------------------------------------------ */

static enum ibv_wc_opcode lo_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

/* Queue a WR that will never be transmitted but completes with st. */
static int lo_swr_fail(struct lo_qp *qp, struct ibv_send_wr *wr,
		       enum ibv_wc_status st)
{
	struct lo_swr *w = calloc(1, sizeof(*w));

	if (!w)
		return ENOMEM;
	w->wr_id = wr->wr_id;
	w->seq = ++qp->next_seq;
	w->opcode = lo_wc_opcode(wr->opcode);
	w->signaled = true;
	w->done = true;
	w->status = st;
	lo_list_add_tail(&qp->swrs, &w->link);
	qp->nswr++;
	qp->sq_error = true;
	return 0;
}

/*
 * Copy a send WR's payload to dst: inline data straight from the
 * application's addresses (lkey ignored), otherwise through lkey-checked
 * MRs.  Returns the end of the copied data, or NULL with *st set.
 */
void *lo_gather(struct lo_qp *qp, struct ibv_send_wr *wr, void *dst,
		enum ibv_wc_status *st)
{
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	unsigned char *d = dst;
	int i;

	if (!inl)
		lo_mr_rdlock();
	for (i = 0; i < wr->num_sge; i++) {
		struct ibv_sge *s = &wr->sg_list[i];
		void *p;

		if (!s->length)
			continue;
		p = inl ? (void *)(uintptr_t)s->addr :
			lo_key_ptr(qp->qp.pd, s->lkey, s->addr, s->length, 0);
		if (!p) {
			d = NULL;
			*st = IBV_WC_LOC_PROT_ERR;
			break;
		}
		memcpy(d, p, s->length);
		d += s->length;
	}
	if (!inl)
		lo_mr_unlock();
	return d;
}

/*
 * A local operation (BIND_MW, LOCAL_INV) done at post time, in order with
 * the WRs before it; an error completes it with st and ends the QP, as
 * rxe's requester does.
 */
static int lo_local_op(struct lo_qp *qp, struct ibv_send_wr *wr)
{
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	struct lo_swr *w;

	if (wr->opcode == IBV_WR_BIND_MW) {
		if (wr->num_sge || qp->qp.qp_type == IBV_QPT_XRC_SEND)
			return EINVAL;
		if (lo_mw_bind_wr(&qp->qp, wr->bind_mw.mw, wr->bind_mw.rkey,
				  &wr->bind_mw.bind_info))
			st = IBV_WC_MW_BIND_ERR;
	} else if (lo_mw_invalidate(&qp->qp, wr->invalidate_rkey)) {
		st = IBV_WC_LOC_QP_OP_ERR;
	}
	if (st != IBV_WC_SUCCESS)
		return lo_swr_fail(qp, wr, st);
	w = calloc(1, sizeof(*w));
	if (!w)
		return ENOMEM;
	w->wr_id = wr->wr_id;
	w->seq = ++qp->next_seq;
	w->opcode = lo_wc_opcode(wr->opcode);
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->done = true;
	w->status = IBV_WC_SUCCESS;
	lo_list_add_tail(&qp->swrs, &w->link);
	qp->nswr++;
	return 0;
}

/* Build the frame for one send WR (gathering now, as the HCA would). */
static int lo_post_one(struct lo_qp *qp, struct ibv_send_wr *wr)
{
	bool atomic = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		      wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	bool read = wr->opcode == IBV_WR_RDMA_READ || atomic;
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	uint64_t args[2];
	struct lo_wire_hdr h;
	struct lo_txbuf *b = NULL;
	struct lo_conn *tx;
	struct lo_swr *w;
	uint64_t total = 0;
	bool notify = false;
	int i;

	if (wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV)
		return lo_local_op(qp, wr);
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (inl && (read || total > qp->cap.max_inline_data))
		return EINVAL;
	if (atomic && (wr->num_sge != 1 || total != 8))
		return EINVAL;
	if (total > LO_MAX_MSG)
		return lo_swr_fail(qp, wr, IBV_WC_LOC_LEN_ERR);

	memset(&h, 0, sizeof(h));
	h.src_qpn = qp->qp.qp_num;
	h.dst_qpn = qp->attr.dest_qp_num;
	if (qp->qp.qp_type == IBV_QPT_XRC_SEND)
		h.srqn = wr->qp_type.xrc.remote_srqn;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		h.flags |= LO_WF_SOLICITED;
	switch (wr->opcode) {
	case IBV_WR_SEND:
		h.op = LO_OP_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		h.op = LO_OP_SEND_IMM;
		h.imm = wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
		h.op = LO_OP_SEND;
		h.flags |= LO_WF_INV;
		h.imm = wr->invalidate_rkey;
		break;
	case IBV_WR_RDMA_WRITE:
		h.op = LO_OP_WRITE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		h.op = LO_OP_WRITE_IMM;
		h.imm = wr->imm_data;
		break;
	case IBV_WR_RDMA_READ:
		h.op = LO_OP_READ_REQ;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		h.flags |= LO_WF_CMP_SWAP;
		/* fall through */
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		h.op = LO_OP_ATOMIC;
		break;
	default:
		return EINVAL;
	}
	if (atomic) {
		h.raddr = wr->wr.atomic.remote_addr;
		h.rkey = wr->wr.atomic.rkey;
		args[0] = wr->wr.atomic.compare_add;
		args[1] = wr->wr.atomic.swap;
		h.len = sizeof(args);
	} else if (h.op >= LO_OP_WRITE) {
		h.raddr = wr->wr.rdma.remote_addr;
		h.rkey = wr->wr.rdma.rkey;
	}
	if (wr->opcode == IBV_WR_RDMA_READ)
		h.rdlen = total;
	else if (!atomic)
		h.len = total;

	w = calloc(1, sizeof(*w) + (read ? wr->num_sge : 0) *
		   sizeof(struct ibv_sge));
	if (!w)
		return ENOMEM;
	w->wr_id = wr->wr_id;
	w->opcode = lo_wc_opcode(wr->opcode);
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->byte_len = total;

	if (read) {
		/* Check the scatter list now; re-checked when data lands. */
		bool bad = false;

		lo_mr_rdlock();
		for (i = 0; i < wr->num_sge; i++) {
			struct ibv_sge *s = &wr->sg_list[i];

			w->sg[i] = *s;
			if (s->length &&
			    !lo_key_ptr(qp->qp.pd, s->lkey, s->addr,
					s->length, IBV_ACCESS_LOCAL_WRITE))
				bad = true;
		}
		lo_mr_unlock();
		w->num_sge = wr->num_sge;
		if (bad) {
			free(w);
			return lo_swr_fail(qp, wr, IBV_WC_LOC_PROT_ERR);
		}
	}
	/*
	 * Place the data in the target ourselves, as a NIC does, when no
	 * data of ours is still on its way there by the stream (RC places
	 * a request after every earlier one).  A WRITE or READ is then
	 * done: its completion follows the placement, as an ACK would; a
	 * WRITE_WITH_IMM still sends its immediate by the stream, and so
	 * does a WRITE to a target in RTR that has yet to see a request
	 * (a PLACED frame: it raises COMM_EST there).  Ordering waits only
	 * for unplaced data: a bandwidth test keeps WRs pending for ever.
	 */
	if (!qp->sq_error && !qp->unplaced && qp->qp.qp_type == IBV_QPT_RC &&
	    !qp->peer_gone &&
	    (h.op == LO_OP_WRITE || h.op == LO_OP_READ_REQ ||
	     (h.op == LO_OP_WRITE_IMM && total)) &&
	    lo_dma_post(qp, wr, &h, total, &notify)) {
		if (h.op != LO_OP_WRITE_IMM && !notify) {
			w->seq = ++qp->next_seq;
			w->done = true;
			w->status = IBV_WC_SUCCESS;
			lo_list_add_tail(&qp->swrs, &w->link);
			qp->nswr++;
			return 0;
		}
		h.flags |= LO_WF_PLACED;
		h.rdlen = total;
		h.len = 0;
	}

	if (!qp->sq_error) {
		b = lo_txbuf_new(&h, h.len);
		if (!b) {
			free(w);
			return ENOMEM;
		}
	}
	if (b && atomic) {
		memcpy(b->data + sizeof(h), args, sizeof(args));
	} else if (b && h.len) {
		enum ibv_wc_status st;

		if (!lo_gather(qp, wr, b->data + sizeof(h), &st)) {
			free(b);
			free(w);
			return lo_swr_fail(qp, wr, st);
		}
	}

	w->seq = ++qp->next_seq;
	if (b)
		((struct lo_wire_hdr *)b->data)->seq = w->seq;
	lo_list_add_tail(&qp->swrs, &w->link);
	qp->nswr++;
	qp->pending++;
	if (!b)
		return 0;	/* behind a local error: will be flushed */
	/* a PLACED WRITE's frame carries no data a later one could pass */
	w->hazard = h.op != LO_OP_WRITE || !(h.flags & LO_WF_PLACED);
	qp->unplaced += w->hazard;

	tx = lo_qp_tx(qp);
	if (!tx && qp->qp.qp_type == IBV_QPT_UC && qp->peer_gone) {
		/* unreliable: the packet is lost, the sender never knows */
		free(b);
		w->done = true;
		qp->pending--;
		qp->unplaced -= w->hazard;
		lo_sq_progress_locked(qp);
		return 0;
	}
	if (!tx || lo_conn_queue(tx, b)) {
		if (!tx)
			free(b);
		/*
		 * Nobody answers: the WR fails with RETRY_EXC_ERR when the
		 * transport timeout expires (lo_qp_timeout_locked), not now;
		 * later WRs are not sent and get flushed then.
		 */
		qp->sq_error = true;
		lo_tmo_arm(qp, lo_qp_tmo_ns(qp));
		return 0;
	}
	if (qp->qp.qp_type == IBV_QPT_UC) {
		w->done = true;		/* unreliable: no ACK coming */
		qp->pending--;
		qp->unplaced -= w->hazard;
	}
	return 0;
}

int lo_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr)
{
	struct lo_qp *qp = lo_qp(ibqp);
	int ret = 0;

	if (ibqp->qp_type == IBV_QPT_UD)
		return lo_ud_post_send(ibqp, wr, bad_wr);
	if (ibqp->qp_type == IBV_QPT_RC &&
	    !__atomic_load_n(&qp->dma_peer_seen, __ATOMIC_RELAXED))
		lo_dma_await_peer(qp);
	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next) {
		if (ibqp->state == IBV_QPS_ERR) {
			/* Posting to an ERR QP completes with a flush. */
			lo_cqe(ibqp->send_cq, qp, wr->wr_id,
			       IBV_WC_WR_FLUSH_ERR, lo_wc_opcode(wr->opcode),
			       0, 0, 0, 0, false);
			continue;
		}
		if ((ibqp->state != IBV_QPS_RTS &&
		     ibqp->state != IBV_QPS_SQD) ||
		    ibqp->qp_type == IBV_QPT_XRC_RECV) {
			ret = EINVAL;
			break;
		}
		if (wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
			break;
		}
		if ((wr->opcode == IBV_WR_RDMA_READ ||
		     wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		     wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) &&
		    ibqp->qp_type == IBV_QPT_UC) {
			ret = EINVAL;
			break;
		}
		if (qp->nswr >= qp->cap.max_send_wr) {
			ret = ENOMEM;
			break;
		}
		ret = lo_post_one(qp, wr);
		if (ret)
			break;
	}
	if (ret && bad_wr)
		*bad_wr = wr;
	lo_sq_progress_locked(qp);
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

static struct lo_recv *lo_recv_new(struct ibv_recv_wr *wr)
{
	struct lo_recv *r = malloc(sizeof(*r) +
				   wr->num_sge * sizeof(struct ibv_sge));

	if (!r)
		return NULL;
	lo_list_init(&r->link);
	r->wr_id = wr->wr_id;
	r->num_sge = wr->num_sge;
	if (wr->num_sge)
		memcpy(r->sg, wr->sg_list, wr->num_sge * sizeof(*r->sg));
	return r;
}

int lo_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	struct lo_qp *qp = lo_qp(ibqp);
	int ret = 0;

	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next) {
		struct lo_recv *r;

		if (ibqp->srq || ibqp->state == IBV_QPS_RESET ||
		    ibqp->qp_type == IBV_QPT_XRC_SEND ||
		    ibqp->qp_type == IBV_QPT_XRC_RECV ||
		    wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
			break;
		}
		if (ibqp->state == IBV_QPS_ERR) {
			lo_cqe(ibqp->recv_cq, qp, wr->wr_id,
			       IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0, 0,
			       false);
			continue;
		}
		if (qp->nrecv >= qp->cap.max_recv_wr) {
			ret = ENOMEM;
			break;
		}
		r = lo_recv_new(wr);
		if (!r) {
			ret = ENOMEM;
			break;
		}
		lo_list_add_tail(&qp->recvs, &r->link);
		qp->nrecv++;
	}
	if (ret && bad_wr)
		*bad_wr = wr;
	lo_drain_inq_locked(qp);
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

/* --- SRQ ----------------------------------------------------------------- */

static struct ibv_srq *lo_srq_create(struct ibv_pd *pd,
				     struct ibv_srq_init_attr *ia)
{
	struct lo_srq *s;

	if (!pd || !ia || !lo_is_our_ctx(pd->context) ||
	    ia->attr.max_wr > LO_MAX_WR || ia->attr.max_sge > LO_MAX_SGE ||
	    ia->attr.srq_limit > ia->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->qps_lock, NULL);
	lo_list_init(&s->recvs);
	lo_list_init(&s->qps);
	lo_list_init(&s->xrcd_link);
	if (!ia->attr.max_wr)
		ia->attr.max_wr = 1;
	if (!ia->attr.max_sge)
		ia->attr.max_sge = 1;
	s->max_wr = ia->attr.max_wr;
	s->max_sge = ia->attr.max_sge;
	s->limit = ia->attr.srq_limit;
	s->srq_num = __atomic_add_fetch(&lo_srq_next, 1, __ATOMIC_RELAXED);
	s->srq.context = pd->context;
	s->srq.srq_context = ia->srq_context;
	s->srq.pd = pd;
	s->srq.handle = lo_new_handle();
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	lo_pd_get(pd);
	return &s->srq;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *srq_init_attr)
{
	return lo_srq_create(pd, srq_init_attr);
}

struct ibv_srq *lo_create_srq_ex(struct ibv_context *ctx,
				 struct ibv_srq_init_attr_ex *ax)
{
	struct ibv_srq_init_attr ia;
	struct ibv_srq *srq;

	if (!ax || !(ax->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !ax->pd ||
	    ax->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	bool xrc = (ax->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
		   ax->srq_type == IBV_SRQT_XRC;

	if ((ax->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    ax->srq_type != IBV_SRQT_BASIC && !xrc) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (ax->comp_mask & ~(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
			      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* An XRC SRQ needs its domain and the CQ its receives go to. */
	if (xrc && (!(ax->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
		    !(ax->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !ax->xrcd ||
		    !ax->cq || ax->xrcd->context != ctx ||
		    ax->cq->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	ia.srq_context = ax->srq_context;
	ia.attr = ax->attr;
	srq = lo_srq_create(ax->pd, &ia);
	if (!srq)
		return NULL;
	ax->attr = ia.attr;
	if (xrc) {
		struct lo_xrcd *x = lo_container_of(ax->xrcd, struct lo_xrcd,
						    xrcd);
		struct lo_srq *s = lo_srq(srq);

		s->xrcd = x;
		s->cq = ax->cq;
		lo_cq_ref(ax->cq, 1);
		pthread_mutex_lock(&x->lock);
		x->refcnt++;
		pthread_mutex_lock(&x->srq_lock);
		lo_list_add_tail(&x->srqs, &s->xrcd_link);
		pthread_mutex_unlock(&x->srq_lock);
		pthread_mutex_unlock(&x->lock);
	}
	return srq;
}

int lo_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	if (!srq || !srq_num)
		return EINVAL;
	*srq_num = lo_srq(srq)->srq_num;
	return 0;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		   int attr_mask)
{
	struct lo_srq *s;
	int ret = 0;

	if (!srq || !attr)
		return EINVAL;
	s = lo_srq(srq);
	pthread_mutex_lock(&s->lock);
	if ((attr_mask & IBV_SRQ_MAX_WR) &&
	    (attr->max_wr > LO_MAX_WR || attr->max_wr < s->nrecv))
		ret = EINVAL;
	else if ((attr_mask & IBV_SRQ_LIMIT) &&
		 attr->srq_limit > ((attr_mask & IBV_SRQ_MAX_WR) ?
				    attr->max_wr : s->max_wr))
		ret = EINVAL;
	if (!ret && (attr_mask & IBV_SRQ_MAX_WR))
		s->max_wr = attr->max_wr;
	if (!ret && (attr_mask & IBV_SRQ_LIMIT))
		s->limit = attr->srq_limit;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct lo_srq *s;

	if (!srq || !attr)
		return EINVAL;
	s = lo_srq(srq);
	pthread_mutex_lock(&s->lock);
	attr->max_wr = s->max_wr;
	attr->max_sge = s->max_sge;
	attr->srq_limit = s->limit;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct lo_srq *s;

	if (!srq)
		return EINVAL;
	s = lo_srq(srq);
	pthread_mutex_lock(&s->qps_lock);
	if (s->nqp) {
		pthread_mutex_unlock(&s->qps_lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&s->qps_lock);
	lo_async_forget(srq->context, srq);
	pthread_mutex_lock(&srq->mutex);
	while (srq->events_completed != s->async_reported)
		pthread_cond_wait(&srq->cond, &srq->mutex);
	pthread_mutex_unlock(&srq->mutex);
	if (s->xrcd) {
		pthread_mutex_lock(&s->xrcd->lock);
		pthread_mutex_lock(&s->xrcd->srq_lock);
		lo_list_del(&s->xrcd_link);
		pthread_mutex_unlock(&s->xrcd->srq_lock);
		s->xrcd->refcnt--;
		pthread_mutex_unlock(&s->xrcd->lock);
		lo_cq_ref(s->cq, -1);
	}
	lo_free_list_recvs(&s->recvs);
	lo_pd_put(srq->pd);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->qps_lock);
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(s);
	return 0;
}

int lo_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	struct lo_srq *s = lo_srq(srq);
	struct lo_list *l;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	for (; wr; wr = wr->next) {
		struct lo_recv *r;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > s->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
			break;
		}
		if (s->nrecv >= s->max_wr) {
			ret = ENOMEM;
			break;
		}
		r = lo_recv_new(wr);
		if (!r) {
			ret = ENOMEM;
			break;
		}
		lo_list_add_tail(&s->recvs, &r->link);
		s->nrecv++;
	}
	pthread_mutex_unlock(&s->lock);
	if (ret && bad_wr)
		*bad_wr = wr;

	/* Messages parked on any QP of this SRQ may now be deliverable. */
	pthread_mutex_lock(&s->qps_lock);
	for (l = s->qps.next; l != &s->qps; l = l->next) {
		struct lo_qp *qp = lo_container_of(l, struct lo_qp, srq_link);

		pthread_mutex_lock(&qp->lock);
		lo_drain_inq_locked(qp);
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_unlock(&s->qps_lock);
	if (s->xrcd) {
		/* XRC: any receive QP of the domain may be waiting. */
		pthread_mutex_lock(&s->xrcd->lock);
		for (l = s->xrcd->qps.next; l != &s->xrcd->qps; l = l->next) {
			struct lo_qp *qp = lo_container_of(l, struct lo_qp,
							   xrcd_link);

			pthread_mutex_lock(&qp->lock);
			lo_drain_inq_locked(qp);
			pthread_mutex_unlock(&qp->lock);
		}
		pthread_mutex_unlock(&s->xrcd->lock);
	}
	return ret;
}

/* --- XRC domains ---------------------------------------------------------- */

struct ibv_xrcd *lo_open_xrcd(struct ibv_context *ctx,
			      struct ibv_xrcd_init_attr *attr)
{
	struct lo_xrcd *x;

	/* Sharing a domain through a file only matters across processes,
	 * and each process reaches its peers through QPs anyway. */
	if (!lo_is_our_ctx(ctx) || !attr ||
	    (attr->comp_mask & ~(IBV_XRCD_INIT_ATTR_FD |
				 IBV_XRCD_INIT_ATTR_OFLAGS |
				 IBV_XRCD_INIT_ATTR_RESERVED))) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->xrcd.context = ctx;
	pthread_mutex_init(&x->lock, NULL);
	pthread_mutex_init(&x->srq_lock, NULL);
	lo_list_init(&x->srqs);
	lo_list_init(&x->qps);
	return &x->xrcd;
}

int lo_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct lo_xrcd *x;

	if (!xrcd)
		return EINVAL;
	x = lo_container_of(xrcd, struct lo_xrcd, xrcd);
	pthread_mutex_lock(&x->lock);
	if (x->refcnt) {
		pthread_mutex_unlock(&x->lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&x->lock);
	pthread_mutex_destroy(&x->lock);
	pthread_mutex_destroy(&x->srq_lock);
	free(x);
	return 0;
}

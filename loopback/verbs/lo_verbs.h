/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lo_verbs.h - internal interfaces of the loopback libibverbs replacement.
 *
 * Owns the private object layouts (every public verbs struct is embedded
 * first so the public pointer and the private one are the same address),
 * the wire format of the RC streams, the layout of the table a process
 * publishes for direct placement (dma.c) and the prototypes shared
 * between device.c, mem.c, cq.c, qp.c, wire.c, ud.c and dma.c.  Nothing
 * here is exported: the version script keeps every lo_* symbol local.
 */
#ifndef LO_VERBS_H
#define LO_VERBS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define LO_DEV_NAME		"rdmalo0"
#define LO_NS_ENV		"RDMACHECK_LOOPBACK_NS"
#define LO_NS_DEFAULT		"rdmacheck"

/* Limits reported by ibv_query_device and enforced at create time. */
#define LO_MAX_QP		65536	/* CQs, SRQs */
/* A process owns one block of QPNs: 2^14 of them, 2^10 blocks (not 0). */
#define LO_QPN_BLK_BITS		14
#define LO_QPN_PER_BLK		(1U << LO_QPN_BLK_BITS)
#define LO_QPN_BLKS		(1U << (24 - LO_QPN_BLK_BITS))
#define LO_MAX_QPS		(LO_QPN_PER_BLK - 1)
#define LO_MAX_WR		16384
#define LO_MAX_SGE		32
#define LO_MAX_CQE		(1 << 20)
#define LO_MAX_INLINE		1024
#define LO_MAX_MSG		(1U << 30)
#define LO_MAX_RD_ATOM		16
#define LO_GID_TBL_LEN		1

#define lo_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * The backend's own AF_UNIX sockets, made by the system call: a socket()
 * interposer such as librspreload (which tries rsocket() first for every
 * socket) must not see them, as it sees none of the real library's.
 */
static inline int lo_socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}

/* Simple intrusive doubly linked list. */
struct lo_list {
	struct lo_list *next, *prev;
};

static inline void lo_list_init(struct lo_list *l)
{
	l->next = l->prev = l;
}

static inline bool lo_list_empty(const struct lo_list *l)
{
	return l->next == l;
}

static inline void lo_list_add_tail(struct lo_list *l, struct lo_list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static inline void lo_list_del(struct lo_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define lo_list_first(l, type, member) \
	lo_container_of((l)->next, type, member)

/*
 * An eventfd in semaphore mode plus a FIFO of records behind it: one token
 * per record, so that poll() says readable exactly while records wait.
 */
struct lo_evq {
	int fd;
	pthread_mutex_t lock;
	struct lo_list items;
	unsigned int owed;	/* tokens read for records withdrawn since */
};

struct lo_context {
	struct verbs_context vctx;	/* must stay first */
	struct lo_evq async;
};

struct lo_async_item {
	struct lo_list link;
	struct ibv_async_event ev;
};

struct lo_pd {
	struct ibv_pd pd;
	int refcnt;			/* MRs, QPs, SRQs, AHs */
};

struct lo_mr {
	struct ibv_mr mr;
	struct lo_mr *hnext;		/* key hash chain */
	int access;
	/* in the padding: an MR costs the heap what it did without them */
	uint16_t dma_slot;		/* its entry in our table, or NONE */
	uint16_t dma_gen;		/* lo_fork_gen (low bits) then */
	uint64_t iova;			/* address the keys refer to */
};

#define LO_DMA_NONE		0xffff

/* A memory window (mem.c): what it is bound to, under lo_mr_lock. */
struct lo_mw {
	struct ibv_mw mw;		/* must stay first */
	struct lo_mw *hnext;		/* rkey hash chain */
	struct lo_mr *mr;		/* bound to; NULL: unbound */
	struct ibv_qp *qp;		/* type 2: the QP it was bound on */
	uint64_t addr, length;
	int access;
	bool valid;			/* type 1: bindable; 2: bound */
};

struct lo_channel {
	struct ibv_comp_channel ch;
	struct lo_evq evq;
	int ncq;			/* CQs using this channel */
};

/* A CQ sitting on a channel's event queue. */
struct lo_cq_event {
	struct lo_list link;
	struct ibv_cq *cq;
};

struct lo_cq {
	struct ibv_cq cq;
	pthread_mutex_t lock;		/* ring and arming */
	struct ibv_wc *ring;
	unsigned int cap, head, count;
	int armed;			/* 0, 1 = any, 2 = solicited only */
	int nqp;			/* QPs/SRQs referencing it */
	uint32_t events_reported;	/* taken by ibv_get_cq_event */
};

/* A posted receive buffer (QP receive queue or SRQ). */
struct lo_recv {
	struct lo_list link;
	uint64_t wr_id;
	int num_sge;
	struct ibv_sge sg[];
};

/* An XRC domain: its XRC SRQs (found by number) and XRC_RECV QPs. */
struct lo_xrcd {
	struct ibv_xrcd xrcd;
	pthread_mutex_t lock;		/* qps; taken before QP locks */
	pthread_mutex_t srq_lock;	/* srqs; taken last but SRQ locks */
	struct lo_list srqs;
	struct lo_list qps;
	int refcnt;
};

struct lo_srq {
	struct ibv_srq srq;
	pthread_mutex_t lock;
	struct lo_list recvs;
	unsigned int nrecv;
	uint32_t max_wr, max_sge, limit;
	struct lo_list qps;		/* attached QPs (parked data) */
	int nqp;
	uint32_t srq_num;
	pthread_mutex_t qps_lock;	/* order: qps_lock, qp lock, lock */
	struct lo_xrcd *xrcd;		/* XRC SRQ: its domain, */
	struct ibv_cq *cq;		/* and where its receives complete */
	struct lo_list xrcd_link;
	uint32_t async_reported;	/* async events taken by the app */
};

struct lo_ah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
};

/* Wire protocol of the RC streams. */
enum {
	LO_OP_HELLO = 1,	/* first frame on a link: src_qpn's block */
	LO_OP_SEND,
	LO_OP_SEND_IMM,
	LO_OP_WRITE,
	LO_OP_WRITE_IMM,
	LO_OP_READ_REQ,
	LO_OP_READ_RESP,
	LO_OP_ACK,
	LO_OP_NAK,
	LO_OP_BYE,	/* status 0: QP destroyed, 1: QP moved to ERR */
	LO_OP_ATOMIC,	/* payload compare_add, swap; reply READ_RESP */
};

/* LO_OP_ATOMIC flags */
#define LO_WF_CMP_SWAP		0x02

#define LO_WF_SOLICITED		0x01
/* WRITE_IMM: the requester placed the rdlen bytes itself (dma.c) */
#define LO_WF_PLACED		0x04
/* SEND: imm carries the rkey to invalidate (SEND_WITH_INV) */
#define LO_WF_INV		0x08

struct lo_wire_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t status;	/* NAK: enum ibv_wc_status for the requester */
	uint32_t src_qpn;
	uint32_t dst_qpn;
	uint32_t imm;		/* network order, as posted */
	uint64_t seq;		/* requester's WR sequence number */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t len;		/* payload bytes following the header */
	uint32_t rdlen;		/* READ_REQ: bytes to read; PLACED: written */
	uint32_t srqn;		/* XRC: the target's SRQ number */
};

/* A UD datagram: the frame header plus what the receiver's GRH needs. */
#define LO_UD_MTU		4096
#define LO_MCAST_QPN		0xffffff
#define LO_GRH_LEN		40

struct lo_ud_hdr {
	struct lo_wire_hdr h;	/* SEND/SEND_IMM; rkey = the Q_Key */
	uint8_t dgid[16];
	uint32_t tclass_flow;	/* traffic class << 20 | flow label */
	uint8_t hop_limit;
	uint8_t sl;
	uint8_t pad[2];
};

/* A multicast group this UD QP is attached to. */
struct lo_mcast {
	struct lo_list link;
	union ibv_gid gid;
};

/* One queued outbound frame. */
struct lo_txbuf {
	struct lo_list link;
	size_t len, off;
	unsigned char data[];
};

enum lo_conn_kind {
	LO_CONN_LISTEN,		/* our QPN block's listener */
	LO_CONN_TX,		/* dialled link: our frames to a block */
	LO_CONN_RX,		/* link we accepted: frames to our QPs */
	LO_CONN_WAKE,
	LO_CONN_UD,		/* a UD QP's datagram socket */
	LO_CONN_TIMER,		/* timerfd: transport timeouts due */
};

struct lo_qp;

struct lo_conn {
	struct lo_list link;		/* unused list node */
	enum lo_conn_kind kind;
	int fd;
	bool dead;
	bool in_epoll;
	uint32_t events;		/* current epoll mask */
	struct lo_qp *qp;		/* UD: its QP */
	uint32_t blk;			/* TX: block dialled; RX: HELLO's */
	bool hello;
	int tbl_fd;			/* RX: the table HELLO passed, or -1 */
	/* TX side */
	pthread_mutex_t tx_lock;
	struct lo_list txq;
	bool broken;			/* write failed: peer gone */
	struct lo_list all_link;	/* every live conn, for fork */
	/* RX side: header then payload reassembly */
	struct lo_wire_hdr hdr;
	size_t hdr_got;
	unsigned char *pay;
	size_t pay_got;
};

/* An inbound request waiting for its turn (no RECV posted yet, RNR). */
struct lo_inmsg {
	struct lo_list link;
	struct lo_wire_hdr hdr;
	unsigned char *pay;
};

/* An outstanding send-queue work request. */
struct lo_swr {
	struct lo_list link;
	uint64_t wr_id;
	uint64_t seq;
	enum ibv_wc_opcode opcode;
	bool signaled;
	bool done;
	bool hazard;			/* its data on the stream, unplaced */
	enum ibv_wc_status status;
	uint32_t byte_len;
	int num_sge;			/* READ: local scatter list */
	struct ibv_sge sg[];
};

/* One WR built through the ibv_wr_* API, posted at wr_complete. */
struct lo_xwr {
	struct ibv_send_wr wr;
	struct ibv_sge sg[LO_MAX_SGE];
	unsigned char *inl;		/* LO_MAX_INLINE bytes, kept */
};

struct lo_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qpx;	/* made by ibv_create_qp_ex */
	};
	pthread_mutex_t lock;
	/* ibv_wr_*: the batch between wr_start and wr_complete */
	bool has_qpx;
	pthread_mutex_t xlock;		/* held from wr_start on */
	struct lo_xwr *xb;
	unsigned int xn, xcap;
	int xerr;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	struct ibv_qp_attr attr;	/* last values set by modify */
	/* receive side */
	struct lo_list recvs;
	unsigned int nrecv;
	struct lo_list inq;		/* parked inbound requests */
	struct lo_list early;		/* frames before RTR (lo_inmsg) */
	struct lo_list srq_link;
	struct lo_xrcd *xrcd;		/* XRC_RECV */
	struct lo_list xrcd_link;
	/* send side */
	struct lo_list swrs;
	unsigned int nswr;
	unsigned int pending;		/* send WRs not done: answers due */
	unsigned int unplaced;		/* of those, data still on the stream */
	uint64_t next_seq;
	bool sq_error;			/* local error: stop sending */
	bool comm_est;			/* first request seen (COMM_EST) */
	bool peer_gone;			/* peer QP destroyed */
	/* transport timeout running (guarded by the timer list's lock) */
	struct lo_list tmo_link;	/* on the timer list while armed */
	uint64_t tmo_deadline;		/* CLOCK_MONOTONIC, ns */
	uint32_t async_reported;	/* async events taken by the app */
	/* transport */
	struct lo_conn *tx;		/* link to the peer's block */
	unsigned int gen;		/* lo_fork_gen it was made in */
	bool dma_pub;			/* its entry in our table is valid */
	bool dma_peer_seen;		/* atomic: its peer's HELLO was read */
	/* UD */
	struct lo_conn *ud;		/* bound @<ns>/ud/<qpn> */
	int ud_tx_fd;			/* unbound, blocking: for sendto */
	bool block_self_mc;
	struct lo_list mcast;
};

/* Frames that ask for an answer (not responses, not goodbyes). */
static inline bool lo_op_is_request(uint8_t op)
{
	return op != LO_OP_ACK && op != LO_OP_NAK && op != LO_OP_READ_RESP &&
	       op != LO_OP_BYE && op != LO_OP_HELLO;
}

/* Checked without locks by the dispatcher; set once by lo_conn_kill. */
static inline bool lo_dead(struct lo_conn *c)
{
	return __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE);
}

static inline struct lo_qp *lo_qp(struct ibv_qp *qp)
{
	return lo_container_of(qp, struct lo_qp, qp);
}

static inline struct lo_cq *lo_cq(struct ibv_cq *cq)
{
	return lo_container_of(cq, struct lo_cq, cq);
}

static inline struct lo_srq *lo_srq(struct ibv_srq *srq)
{
	return lo_container_of(srq, struct lo_srq, srq);
}

static inline struct lo_pd *lo_pd(struct ibv_pd *pd)
{
	return lo_container_of(pd, struct lo_pd, pd);
}

static inline struct lo_context *lo_ctx(struct ibv_context *ctx)
{
	return lo_container_of(ctx, struct lo_context, vctx.context);
}

/* device.c */
extern struct ibv_device lo_device;
bool lo_is_our_ctx(struct ibv_context *ctx);
/*
 * An address vector without a GRH on our RoCE port: the call fails with
 * EINVAL as on the real stack, which says nothing; say once per process
 * why, and what the usual programs take to fix it.
 */
void lo_hint_no_grh(const char *fn);
void lo_async_event(struct ibv_context *ctx, enum ibv_event_type type,
		    void *elem);
void lo_async_forget(struct ibv_context *ctx, void *elem);
int lo_evq_init(struct lo_evq *q);
void lo_evq_destroy(struct lo_evq *q);
void lo_evq_push(struct lo_evq *q, struct lo_list *item);
int lo_evq_pop(struct lo_evq *q, struct lo_list **item);
void lo_evq_withdrawn_locked(struct lo_evq *q, unsigned int n);
const char *lo_ns(void);
int lo_query_port(struct ibv_context *ctx, uint8_t port,
		  struct ibv_port_attr *attr, size_t len);

/* mem.c */
struct lo_mr *lo_mr_find(uint32_t key);
void lo_mr_rdlock(void);
void lo_mr_unlock(void);
void *lo_key_ptr(struct ibv_pd *pd, uint32_t key, uint64_t va, uint64_t len,
		 int access);
void lo_pd_get(struct ibv_pd *pd);
void lo_pd_put(struct ibv_pd *pd);
uint32_t lo_new_handle(void);
struct ibv_mw *lo_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int lo_dealloc_mw(struct ibv_mw *mw);
int lo_mw_bind_wr(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		  const struct ibv_mw_bind_info *bi);
int lo_mw_invalidate(struct ibv_qp *qp, uint32_t rkey);
void *lo_rkey_ptr(struct ibv_qp *qp, uint32_t key, uint64_t va, uint64_t len,
		  int access);
int lo_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
	       struct ibv_mw_bind *mw_bind);

/* cq.c */
bool lo_cq_push(struct lo_cq *cq, const struct ibv_wc *wc, bool solicited);
int lo_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int lo_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* qp.c */
int lo_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr);
int lo_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr);
int lo_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
struct ibv_qp *lo_create_qp_ex(struct ibv_context *ctx,
			       struct ibv_qp_init_attr_ex *attr);
struct ibv_srq *lo_create_srq_ex(struct ibv_context *ctx,
				 struct ibv_srq_init_attr_ex *attr);
int lo_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_xrcd *lo_open_xrcd(struct ibv_context *ctx,
			      struct ibv_xrcd_init_attr *attr);
int lo_close_xrcd(struct ibv_xrcd *xrcd);
void lo_qp_to_err_locked(struct lo_qp *qp);
void lo_qp_to_err_bye_locked(struct lo_qp *qp, int bye);
bool lo_qp_rx_active(struct lo_qp *qp);
void lo_qp_handle_msg_locked(struct lo_qp *qp, struct lo_wire_hdr *h,
			     unsigned char *pay);
void lo_qp_rx_frame_locked(struct lo_qp *qp, struct lo_wire_hdr *h,
			   unsigned char *pay);
void lo_qp_peer_died_locked(struct lo_qp *qp);
void lo_qp_timeout_locked(struct lo_qp *qp);
void lo_qp_peer_lost_locked(struct lo_qp *qp);
void lo_qp_ud_deliver_locked(struct lo_qp *qp, struct lo_ud_hdr *uh,
			     const unsigned char *pay);
bool lo_cqe(struct ibv_cq *cq, struct lo_qp *qp, uint64_t wr_id,
	    enum ibv_wc_status st, enum ibv_wc_opcode op, uint32_t len,
	    uint32_t src_qp, uint32_t imm, unsigned int flags, bool solicited);
void *lo_gather(struct lo_qp *qp, struct ibv_send_wr *wr, void *dst,
		enum ibv_wc_status *st);

/* ud.c */
int lo_ud_open(struct lo_qp *qp);
void lo_ud_close(struct lo_qp *qp);
void lo_ud_rx(struct lo_conn *c);
int lo_ud_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);

/*
 * The table each process publishes (a sealed memfd it passes with the
 * HELLO of every link it dials) so that its peers can place RDMA data in
 * its memory themselves: its RC QPs that can take requests now and its
 * MRs.  Only the owner writes the entries; a peer counts itself in
 * busy[its block] around every access, and the owner, after it withdrew
 * an entry, waits for every count to drop before it changes the memory's
 * fate (dma.c).
 */
#define LO_DMA_MAGIC		0x6c6f646dU	/* "lodm" */
#define LO_DMA_VERSION		2
#define LO_DMA_MRS		16384		/* MR entries (by key) */

struct lo_dma_qp {
	uint32_t valid;			/* 0: use the stream */
	uint32_t qpn;
	uint32_t dest_qpn;
	uint32_t access;		/* qp_access_flags */
	uint32_t pd;			/* the PD's handle */
	uint32_t rtr;			/* in RTR, no COMM_EST raised yet */
};

struct lo_dma_mr {
	uint32_t valid;
	uint32_t key;
	uint32_t access;
	uint32_t pd;
	uint64_t iova;
	uint64_t addr;
	uint64_t length;
};

struct lo_dma_tbl {
	uint32_t magic;
	uint32_t version;
	uint64_t size;
	uint32_t busy[LO_QPN_BLKS];	/* accesses in flight, by block */
	struct lo_dma_qp qp[LO_QPN_PER_BLK];
	struct lo_dma_mr mr[LO_DMA_MRS];
};

/* dma.c */
int lo_dma_own_fd(void);
void lo_dma_blk_reset(uint32_t blk);
void lo_dma_peer_hello(uint32_t blk, struct lo_conn *c);
void lo_dma_peer_gone(uint32_t blk, struct lo_conn *c);
void lo_dma_qp_pub(struct lo_qp *qp, bool withdraw);
void lo_dma_mr_pub(struct lo_mr *m);
void lo_dma_mr_unpub(struct lo_mr *m);
bool lo_dma_post(struct lo_qp *qp, struct ibv_send_wr *wr,
		 const struct lo_wire_hdr *h, uint64_t total, bool *notify);
void lo_dma_await_peer(struct lo_qp *qp);
void lo_dma_fork_prepare(void);
void lo_dma_fork_parent(void);
void lo_dma_fork_child(void);

/* wire.c */
void lo_atfork_init(void);
uint32_t lo_own_blk(void);
bool lo_blk_alive(uint32_t blk);
struct lo_conn *lo_conn_add(enum lo_conn_kind kind, int fd, struct lo_qp *qp,
			    uint32_t events);
void lo_conn_kill(struct lo_conn *c);
socklen_t lo_addr(struct sockaddr_un *sa, const char *kind, uint32_t qpn);
void lo_prog_lock(void);
void lo_prog_unlock(void);
void lo_progress_poll(void);
void lo_progress_poll_wait(void);
int lo_qpn_alloc(struct lo_qp *qp);
void lo_qpn_free(struct lo_qp *qp);
void lo_link_dial(uint32_t dest_qpn);
void lo_qp_attach_tx(struct lo_qp *qp, bool dial);
void lo_send_bye(uint32_t src_qpn, uint32_t dst_qpn, int status);
void lo_qp_close_conns(struct lo_qp *qp, int bye);
struct lo_txbuf *lo_txbuf_new(const struct lo_wire_hdr *h, size_t paylen);
int lo_conn_queue(struct lo_conn *c, struct lo_txbuf *b);
void lo_tmo_arm(struct lo_qp *qp, uint64_t delay_ns);
void lo_tmo_cancel(struct lo_qp *qp);
extern unsigned int lo_fork_gen;

#endif /* LO_VERBS_H */

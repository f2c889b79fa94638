/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/rs/rs.h: rsockets of the loopback librdmacm, built as
 * rdma-core 44.0 builds them: a stream rsocket is a synchronous cm id
 * (its private channel's fd is the socket number), one RC QP on a CQ of
 * its own, and registered rings that the peers fill with RDMA writes; a
 * datagram rsocket is a UDP socket (its fd is the number) plus one UD QP
 * per local address, reached over UDP until the peer knows its QP.
 *
 * Owns the private rsocket layout and what rs_core.c (numbers, creation,
 * options, close, the service-thread framework), rs_stream.c (stream
 * endpoints, connect, data path, credits, iomaps), rs_dgram.c (datagram
 * rsockets), rs_poll.c (rpoll, rselect) and rs_svc.c (the service
 * threads) share.  The wire protocol is ours: loopback peers only talk to
 * loopback peers.  What a program or an interposer can observe is 44.0's:
 * return values, errno, blocking, the exports called through the PLT and
 * the threads that call them.
 *
 * Locking, as in 44.0: slock serialises senders, rlock receivers, cq_lock
 * the CQ processing and cq_wait_lock the wait for a completion event (so
 * that a blocked sender never stops a receiver from making progress);
 * map_lock guards the iomaps (after slock).  rs_map_lock guards the socket
 * numbers.  No rsocket lock is ever needed by the CM's or the verbs'
 * progress threads.
 */
#ifndef LOOPBACK_RS_H
#define LOOPBACK_RS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "../cm/cm.h"

/* Sizes and timings of rdma-core 44.0 (its defaults, without config). */
#define RS_OLAP_START		2048	/* first chunk of a large send */
#define RS_MAX_XFER		65536	/* ... doubling up to this */
#define RS_SNDLOWAT		2048	/* send room needed to be writable */
#define RS_QP_MIN		16
#define RS_QP_MAX		0xfffe
#define RS_CTRL_SLOTS		4	/* control messages in flight */
#define RS_CONN_RETRIES		6
#define RS_MSG_MAX		(1U << 29)	/* data bits of an immediate */

/* Configuration, as 44.0 reads it from RS_CONF_DIR (rs_core.c). */
struct rs_config {
	uint16_t iomap_size;
	uint16_t inline_size;
	uint16_t sq_size;
	uint16_t rq_size;
	uint32_t mem;			/* receive buffer */
	uint32_t wmem;			/* send buffer */
	uint32_t polling_us;		/* busy polling before blocking */
	int wake_ms;			/* rpoll's longest sleep */
};
extern struct rs_config rs_conf;

/*
 * States, ordered as in 44.0 (passive < opening < connected <
 * disconnected), which comparisons like "state >= RS_OPENING" rely on.
 */
enum {
	RS_IDLE = 0,
	RS_BOUND = 0x0001,
	RS_LISTENING = 0x0002,
	RS_OPENING = 0x0004,
	RS_RESOLVING_ADDR = RS_OPENING | 0x0010,
	RS_RESOLVING_ROUTE = RS_OPENING | 0x0020,
	RS_CONNECTING = RS_OPENING | 0x0040,
	RS_ACCEPTING = RS_OPENING | 0x0080,
	RS_CONNECTED = 0x0100,
	RS_WRITABLE = 0x0200,
	RS_READABLE = 0x0400,
	RS_OPEN_RDWR = RS_CONNECTED | RS_READABLE | RS_WRITABLE,
	RS_CONNECT_ERROR = 0x0800,
	RS_DISCONNECTED = 0x1000,
	RS_ERROR = 0x2000,
};

/* Which service threads hold the rsocket (rs->svcs). */
enum {
	RS_IN_UDP = 1 << 0,
	RS_IN_KEEPALIVE = 1 << 1,
	RS_IN_CM = 1 << 2,		/* listen or connect service */
};

/*
 * Immediate data and send work request ids: the operation in the top
 * three bits, its argument below.
 */
enum rs_op {
	RS_OP_DATA,		/* bytes written into the peer's ring */
	RS_OP_CREDIT,		/* bytes of our ring the peer may fill again */
	RS_OP_IOMAP,		/* a target table entry was written: index */
	RS_OP_WRITE,		/* riowrite (send side only, no immediate) */
	RS_OP_CTRL,		/* one of enum rs_ctrl */
};
#define RS_MSG(op, arg)		(((uint32_t)(op) << 29) | (uint32_t)(arg))
#define RS_MSG_OP(m)		((uint32_t)(m) >> 29)
#define RS_MSG_ARG(m)		((uint32_t)(m) & (RS_MSG_MAX - 1))
#define RS_WR_RECV		(1ULL << 63)

enum rs_ctrl {
	RS_CTRL_DISCONNECT,
	RS_CTRL_KEEPALIVE,
	RS_CTRL_SHUTDOWN,
};

/* Where the peer may write: its ring and its iomap table (private data). */
struct rs_hello {
	uint8_t version;		/* RS_HELLO_VERSION */
	uint8_t pad;
	uint16_t iomap_slots;		/* entries of the table */
	uint32_t pad2;
	uint64_t ring;
	uint32_t ring_rkey;
	uint32_t ring_len;
	uint64_t table;
	uint32_t table_rkey;
	uint32_t table_len;
};
#define RS_HELLO_VERSION	1

/* One entry of an iomap table: a peer's riomap()ed buffer. */
struct rs_iomap_ent {
	uint64_t offset;
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* One riomap() of ours. */
struct rs_iomr {
	struct cm_list link;		/* rs->iomaps or rs->iomap_queue */
	struct ibv_mr *mr;
	uint64_t offset;
	int slot;			/* entry in the peer's table; -1: local */
};

struct rs_dqp;

/* A datagram destination (or a QP's own address). */
struct rs_dest {
	struct sockaddr_storage addr;
	struct rs_dqp *qp;		/* our QP for it */
	struct ibv_ah *ah;		/* NULL: not known yet, use UDP */
	uint32_t qpn;
	struct rs_dest *next;		/* rs->dests */
};

/* The address header a datagram carries in front of its payload. */
struct rs_dhdr {
	uint8_t version;		/* 4 or 6 */
	uint8_t len;			/* RS_DHDR_V4 or RS_DHDR_V6 */
	uint16_t port;			/* network order */
	union {
		uint32_t v4;
		struct {
			uint32_t flowinfo;
			uint8_t addr[16];
		} v6;
	} a;
};
#define RS_DHDR_V4		8
#define RS_DHDR_V6		24

/* One UD QP of a datagram rsocket, for one local address. */
struct rs_dqp {
	struct rs_dqp *next;		/* rs->qps, a ring */
	struct rs *rs;
	struct rdma_cm_id *cm_id;
	struct rs_dhdr hdr;		/* our address, sent with each message */
	struct rs_dest self;		/* ourselves: where UDP arrivals go */
	struct ibv_mr *smr, *rmr;
	uint8_t *rbuf;
	int cq_armed;
};

/* A received datagram waiting for rrecv. */
struct rs_dmsg {
	struct rs_dqp *qp;
	uint32_t offset;
	uint32_t len;
};

struct rs {
	int type;			/* SOCK_STREAM or SOCK_DGRAM */
	int index;			/* the socket number, -1 before */
	int state;
	int svcs;			/* RS_IN_* */
	int fd_flags;			/* rfcntl F_SETFL */
	int err;			/* SO_ERROR */
	int retries;
	pthread_mutex_t slock, rlock, cq_lock, cq_wait_lock, map_lock;

	/* options */
	uint64_t so_opts, tcp_opts, ipv6_opts;
	void *route;			/* RDMA_ROUTE */
	size_t route_len;
	unsigned int keepalive_time;
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline, iomap_size;

	/* completions */
	int cq_armed, unack_cqe;
	int sqe_avail;			/* send WRs we may still post */
	uint8_t *sbuf;

	/* stream */
	struct rdma_cm_id *cm_id;
	int accept_q[2];		/* listener: new rsockets, by pointer */
	struct ibv_mr *smr, *rmr, *tmr;
	uint8_t *rbuf;			/* our ring */
	struct rs_iomap_ent *table;	/* our iomap table, the peer writes */
	uint32_t sbuf_free, sbuf_pos;
	int ctrl_avail;
	uint64_t peer_ring;
	uint32_t peer_ring_rkey, peer_ring_len, peer_pos;
	uint32_t peer_off;		/* where the next write goes */
	uint32_t window;		/* credits received, in bytes */
	uint64_t peer_table;
	uint32_t peer_table_rkey;
	uint16_t peer_slots;
	uint32_t r_head, r_avail, r_freed;	/* totals, see rs_stream.c */
	uint32_t r_off;			/* where the next read starts */
	struct rs_iomr *slots;		/* by entry in the peer's table */
	struct cm_list iomaps;		/* mapped and announced (or local) */
	struct cm_list iomap_queue;	/* mapped, not yet announced */
	int iomap_pending;

	/* datagram */
	struct rs_dqp *qps;
	struct rs_dest *dests;
	struct rs_dest *conn_dest;
	int udp_sock, epfd;
	int rqe_avail;
	void *smsg_free;
	struct rs_dmsg *dmsg;
	int dmsg_head, dmsg_tail;
};

/* rs_core.c */
void rs_configure(void);
struct rs *rs_lookup(int index);
int rs_insert(struct rs *rs, int index);
void rs_remove(struct rs *rs);
struct rs *rs_alloc(struct rs *parent, int type);
void rs_free(struct rs *rs);
int rs_set_nonblocking(struct rs *rs, int arg);
uint64_t rs_now_us(void);
int rs_seterr(int err);
socklen_t rs_addrlen(const struct sockaddr *sa);

/* rs_svc.c */
enum rs_svc_kind {
	RS_SVC_UDP,
	RS_SVC_KEEPALIVE,
	RS_SVC_LISTEN,
	RS_SVC_CONNECT,
	RS_SVC_KINDS,
};
enum rs_svc_cmd {
	RS_SVC_ADD,
	RS_SVC_REM,
	RS_SVC_MOD,		/* keepalive: the time changed */
};
int rs_notify_svc(enum rs_svc_kind kind, struct rs *rs, enum rs_svc_cmd cmd);

/* rs_stream.c */
int rs_create_cq(struct rs *rs, struct rdma_cm_id *id);
int rs_create_ep(struct rs *rs);
int rs_do_connect(struct rs *rs);
void rs_format_hello(struct rs *rs, struct rs_hello *h);
int rs_save_hello(struct rs *rs, const void *pdata, size_t len);
int rs_process_cq(struct rs *rs, int nonblock, int (*test)(struct rs *rs));
int rs_get_cq_event(struct rs *rs);
int rs_can_send(struct rs *rs);
int rs_conn_have_rdata(struct rs *rs);
int rs_have_rdata(struct rs *rs);
int rs_ctrl_free(struct rs *rs);
int rs_post_ctrl(struct rs *rs, enum rs_ctrl ctrl, int rdma_write);
void rs_free_stream(struct rs *rs);
void rs_handle_cm_event(struct rs *rs);
void rs_accept(struct rs *rs);
int rs_stream_shutdown(struct rs *rs, int how);

/* rs_dgram.c */
int ds_init(struct rs *rs, int domain);
int ds_init_ep(struct rs *rs);
void ds_free(struct rs *rs);
void ds_shutdown(struct rs *rs);
int ds_connect(struct rs *rs, const struct sockaddr *addr, socklen_t len);
ssize_t ds_send(struct rs *rs, const void *buf, size_t len, int flags);
ssize_t ds_sendto(struct rs *rs, const void *buf, size_t len, int flags,
		  const struct sockaddr *addr, socklen_t addrlen);
ssize_t ds_recvfrom(struct rs *rs, void *buf, size_t len, int flags,
		    struct sockaddr *src, socklen_t *srclen);
int ds_process_cqs(struct rs *rs, int nonblock, int (*test)(struct rs *rs));
int ds_get_cq_event(struct rs *rs);
int ds_can_send(struct rs *rs);
int ds_set_nonblocking(struct rs *rs, int arg);
void ds_udp_input(struct rs *rs);

/* rs_poll.c */
int rs_poll_signal(void);
int rs_nonblocking(struct rs *rs, int flags);

#endif

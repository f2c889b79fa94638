/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/cm/cm.h: internal state of the loopback librdmacm.
 *
 * Owns the private id, channel, event and connection structures shared by
 * channel.c (channels, events, sync waits, migrate), id.c (init, devices,
 * ids, addressing, endpoints), conn.c (wire protocol incl. SIDR, progress
 * thread, connection calls, QPs), mcast.c (multicast joins), the
 * rsockets in ../rs (which use cm_init, cm_complete and cm_qp_to_err
 * as 44.0's use ucma_init, ucma_complete and ucma_shutdown) and, in the
 * rdmacm14 build only (LO_RDMACM_1_4), rdmacm14.c (the RDMACM_1.4 calls).
 *
 * Locking: one process-wide mutex (cm.lock) guards every id's state, every
 * channel queue, the joins and the event accounting; cm.cond wakes
 * destroy/migrate/leave waiters.  It is never held across a call to an
 * exported rdmacm or verbs function, so an interposer may re-enter
 * anything.
 *
 * Fork: the atfork handlers (id.c) take every lock, so a child never
 * inherits one held by another thread.  The child closes its copies of
 * the CM sockets and starts a progress thread of its own when it needs
 * one; channels made before the fork belong to the parent (cm_inherited).
 */
#ifndef LOOPBACK_CM_H
#define LOOPBACK_CM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

struct cm_list {
	struct cm_list *next, *prev;
};

static inline void cm_list_init(struct cm_list *l)
{
	l->next = l->prev = l;
}

static inline int cm_list_empty(const struct cm_list *l)
{
	return l->next == l;
}

static inline void cm_list_add_tail(struct cm_list *l, struct cm_list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static inline void cm_list_del(struct cm_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	cm_list_init(n);
}

#define cm_container_of(p, type, member) \
	((type *)((char *)(p) - __builtin_offsetof(type, member)))

/*
 * The backend's own AF_UNIX sockets, made by the system call: a socket()
 * interposer such as librspreload (which tries rsocket() first for every
 * socket) must not see them, as it sees none of the real library's.
 */
static inline int cm_socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}

/* Real IB CM private data sizes, and the CMA header taken from the REQ. */
#define CM_REQ_PDATA	92
#define CM_CMA_HDR	36
#define CM_REP_PDATA	196
#define CM_REJ_PDATA	148
#define CM_PDATA_MAX	256
/* SIDR: the REQ loses the CMA header too; the REP is all the user's. */
#define CM_SIDR_REQ_PDATA	216
#define CM_SIDR_REP_PDATA	136

/* SIDR REP status, reported as UNREACHABLE status on the active side. */
#define CM_SIDR_SUCCESS		0
#define CM_SIDR_REJECT		1
#define CM_SIDR_UNSUPPORTED	2

/* Multicast: QPN of every group, and the loopback device's MLID. */
#define CM_MC_QPN		0xffffff

/* IB CM reject reasons reported as REJECTED status. */
#define CM_REJ_TIMEOUT		1
#define CM_REJ_INVALID_SID	8
#define CM_REJ_CONSUMER		28
#define CM_REJ_VENDOR_ECE	35

struct cm_channel {
	struct rdma_event_channel pub;	/* fd: eventfd in semaphore mode */
	struct cm_list queue;		/* events not yet fetched */
	struct cm_list ids;		/* ids whose channel this is */
	int nids;
	int readers;			/* between their read and dequeue */
	int calls;			/* threads in rdma_get_cm_event */
	int dead;			/* the program destroyed it */
	int closed;			/* ... and it is closed (no calls) */
	unsigned int gen;		/* cm.fork_gen when it was made */
	struct cm_list live_link;	/* in cm_live until destroyed */
};

enum cm_state {
	CM_IDLE,
	CM_BOUND,
	CM_ADDR_RESOLVED,
	CM_ROUTE_RESOLVED,
	CM_LISTEN,
	CM_CONNECTING,		/* active: REQ sent */
	CM_REQ_RCVD,		/* passive child before accept/reject */
	CM_ACCEPTED,		/* passive: REP sent, waiting for RTU */
	CM_REP_RCVD,		/* active: REP in, RTU not yet sent */
	CM_CONNECTED,
	CM_DISC_SENT,		/* DREQ sent, waiting for DREP */
	CM_DREQ_RCVD,		/* DREQ in, DREP owed */
	CM_DISCONNECTED,	/* time wait, then nothing */
	CM_REJECTED,
	CM_ERROR,
};

/* Wire messages over the SOCK_SEQPACKET CM sockets. */
enum cm_msg_type {
	CM_MSG_REQ = 1,
	CM_MSG_REP,
	CM_MSG_RTU,
	CM_MSG_REJ,
	CM_MSG_DREQ,
	CM_MSG_DREP,
	CM_MSG_SIDR_REQ,	/* UD: REQ and REP in one round trip */
	CM_MSG_SIDR_REP,	/* reason carries the SIDR status */
};

struct cm_msg {
	uint8_t type;
	uint8_t resp_res;
	uint8_t init_depth;
	uint8_t flow_ctrl;
	uint8_t retry;
	uint8_t rnr_retry;
	uint8_t srq;
	uint8_t qp_type;
	uint16_t reason;
	uint16_t pdata_len;
	uint32_t qpn;
	uint32_t psn;
	uint32_t ps;
	uint32_t pid;
	uint32_t ece_vendor;
	uint32_t ece_options;
	uint32_t qkey;			/* SIDR */
	struct sockaddr_storage src;	/* REQ: initiator's address */
	struct sockaddr_storage dst;	/* REQ: address it dialled */
	uint8_t pdata[CM_PDATA_MAX];
};

#ifdef LO_RDMACM_1_4
/*
 * RDMACM_1.4 (rdma-core 60 and later): what the 44.0 headers lack.  The
 * event numbers follow RDMA_CM_EVENT_TIMEWAIT_EXIT (15).
 */
#define CM_EVENT_ADDRINFO_RESOLVED	16
#define CM_EVENT_ADDRINFO_ERROR		17
#define CM_EVENT_USER			18
#define CM_RAI_SA			0x00000010
#define CM_RAI_DNS			0x00000020

int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
			  const char *service,
			  const struct rdma_addrinfo *hints);
int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info);
int rdma_write_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type event,
			int status, uint64_t arg);
#endif

struct cm_id;

/* One CM socket: a bound/listening port, or a connection. */
struct cm_sock {
	int fd;
	int listening;
	int in_epoll;
	int dead;		/* closed; freed by the progress thread */
	int hup;		/* peer gone before an id owned it */
	struct cm_id *id;	/* owner (NULL while a request is pending) */
	struct cm_id *listener;	/* accepted, REQ not yet fetched */
	struct cm_list link;	/* listener's pending list, or graveyard */
	struct cm_list all;	/* cm.socks while its fd is open */
	struct cm_msg req;	/* the REQ, for a pending request */
	int queued;		/* its CONNECT_REQUEST is queued */
};

/* Internal event kinds that need work inside rdma_get_cm_event. */
enum cm_ev_kind {
	CM_EVK_PLAIN,
	CM_EVK_CONN_REQ,
	CM_EVK_CONN_RESP,
	CM_EVK_ADDR,
	CM_EVK_MC_JOIN,
};

/* One rdma_join_multicast record (the real library's cma_multicast). */
struct cm_mc {
	struct cm_list link;		/* in its id's mcs */
	void *context;
	struct sockaddr_storage addr;
	uint16_t join_flags;
	union ibv_gid mgid;
	unsigned int reported;		/* its events given to the user */
	unsigned int completed;		/* ... and acked */
};

struct cm_event {
	struct rdma_cm_event ev;
	uint8_t pdata[CM_PDATA_MAX];	/* param private data points here */
	struct cm_list link;
	struct cm_id *owner;		/* id it is about (listener for REQ) */
	struct cm_id *charged;		/* set when fetched */
	enum cm_ev_kind kind;
	struct cm_sock *req;		/* CONNECT_REQUEST: pending connection */
	struct cm_mc *mc;		/* MULTICAST_JOIN/ERROR: its join */
};

/* The one timer an id may have running (cm.timers). */
enum cm_tmo_kind {
	CM_TMO_NONE,
	CM_TMO_DREQ,		/* no DREP: DISCONNECTED -ETIMEDOUT */
	CM_TMO_TIMEWAIT,	/* TIMEWAIT_EXIT */
};

struct cm_id {
	struct rdma_cm_id id;
	struct cm_list chan_link;	/* its channel's ids */
	struct cm_list tmo_link;	/* cm.timers, by deadline */
	uint64_t tmo_at;		/* CLOCK_MONOTONIC, ms */
	enum cm_tmo_kind tmo_kind;
	int sync;
	int state;
	unsigned int reported;		/* events handed to the user */
	unsigned int completed;		/* ... and acked (or dropped) */
	int connect_error;
	int disc_fetched;		/* its DISCONNECTED was fetched */
	int disc_queued;
	int destroying;
	struct cm_sock *port;		/* bound/listening socket, becomes
					 * the connection on the active side */
	struct cm_sock *conn;		/* connection (passive child) */
	struct cm_sock *resv[3];	/* more names of the bound port */
	struct cm_list pending;		/* listener: requests not fetched */
	struct cm_list mcs;		/* joined groups (struct cm_mc) */
	int own_send_cq, own_recv_cq;	/* CQs the library made */
	uint32_t remote_qpn;
	uint32_t remote_psn;
	uint32_t local_psn;
	int remote_known;
	uint8_t initiator_depth;
	uint8_t responder_resources;
	uint8_t retry, rnr_retry;
	int afonly;			/* -1: not set (RDMA_OPTION_ID_AFONLY) */
	int ack_timeout;		/* -1: not set (..._ACK_TIMEOUT) */
	void *connect;			/* ai_connect copy (endpoints) */
	size_t connect_len;
	struct ibv_qp_init_attr *qp_init_attr;	/* passive endpoint */
	struct ibv_ece local_ece, remote_ece;
#ifdef LO_RDMACM_1_4
	struct rdma_addrinfo *resolved_ai;	/* not yet claimed */
	int resolving_ai;		/* from resolve until query claims */
#endif
};

static inline struct cm_id *cm_id(struct rdma_cm_id *id)
{
	return cm_container_of(id, struct cm_id, id);
}

static inline struct cm_channel *cm_chan(struct rdma_event_channel *ch)
{
	return cm_container_of(ch, struct cm_channel, pub);
}

struct cm_global {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t dev_lock;
	struct ibv_context *verbs;	/* the loopback device */
	struct ibv_pd *pd;		/* its default PD */
	uint8_t max_resp_res;		/* device max_qp_rd_atom */
	uint8_t max_init_depth;		/* device max_qp_init_rd_atom */
	int epfd;			/* the progress thread's; -1: none */
	int timerfd;			/* in epfd: the earliest of timers */
	struct cm_list timers;		/* ids with a timer, soonest first */
	unsigned int dreq_ms[2];	/* DREQ timeout: active, passive */
	unsigned int timewait_ms;
	struct cm_list graveyard;	/* dead sockets to free */
	struct cm_list socks;		/* every open socket (fork) */
	unsigned int fork_gen;		/* forks this process descends by */
	char ns[108];
};

extern struct cm_global cm;

/* id.c */
int cm_init(void);
int cm_bind_device(struct rdma_cm_id *id);
int cm_addr_is_local(const struct sockaddr *sa);
socklen_t cm_addr_len(const struct sockaddr *sa);
void cm_set_gid(union ibv_gid *gid, const struct sockaddr *sa);
uint16_t cm_addr_port(const struct sockaddr *sa);
void cm_addr_set_port(struct sockaddr *sa, uint16_t port);
int cm_bind_port(struct cm_id *p, const struct sockaddr *addr);
/* The names a bound port holds (id.c, cm_bind_names). */
enum cm_pname { CM_PN_V4, CM_PN_V6, CM_PN_X1, CM_PN_X2, CM_PN_NUM };
int cm_sockname(char *buf, size_t len, enum rdma_port_space ps,
		uint16_t port, int kind);
int cm_listen_takes(struct cm_id *l, const struct sockaddr *dst);
int cm_port_listened(enum rdma_port_space ps, uint16_t port, int kind);
struct ibv_sa_path_rec *cm_path_new(const union ibv_gid *sgid,
				    const union ibv_gid *dgid);
int cm_alloc_id(struct rdma_event_channel *channel, struct cm_id **out,
		void *context, enum rdma_port_space ps,
		enum ibv_qp_type qp_type);
void cm_free_id(struct cm_id *p);
int cm_do_bind(struct rdma_cm_id *id, struct sockaddr *addr);
int cm_do_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
		       struct sockaddr *dst);

/* channel.c */
int cm_inherited(struct rdma_event_channel *ch);
struct cm_channel *cm_chan_live(struct rdma_event_channel *ch);
struct cm_event *cm_event_new(struct cm_id *owner, enum rdma_cm_event_type t,
			      int status);
void cm_queue_event(struct cm_id *p, struct cm_event *e);
void cm_purge_events(struct cm_id *p);
void cm_purge_mc_events(struct cm_id *p, struct cm_mc *mc);
int cm_complete(struct rdma_cm_id *id);
void cm_wait_acked(struct cm_id *p);
int cm_chan_close(struct cm_channel *ch);

/* conn.c */
struct cm_sock *cm_sock_new(int fd);
void cm_fork_child_socks(void);
int cm_sock_register(struct cm_sock *s);
void cm_sock_close(struct cm_sock *s);
int cm_send_msg(struct cm_sock *s, struct cm_msg *m);
void cm_close_id_socks(struct cm_id *p);
void cm_tmo_cancel(struct cm_id *p);
int cm_process_conn_req(struct cm_event *e);
int cm_process_conn_resp(struct cm_event *e);
void cm_qp_to_err(struct rdma_cm_id *id);
uint32_t cm_ud_qkey(struct rdma_cm_id *id);

/* mcast.c */
int cm_process_join(struct cm_event *e);
void cm_free_mcs(struct cm_id *p);

#endif

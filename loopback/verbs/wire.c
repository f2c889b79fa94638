/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wire.c - the transport: each process owns a block of 2^14 QPNs,
 * reserved machine wide by its SOCK_STREAM listener "@<ns>/qpb/<block>";
 * a link is a stream dialled to a block's listener, one per block this
 * process sends to, carrying every frame of its QPs to QPs of that block
 * (requests and responses, each naming its source and destination QPN);
 * the links it accepted carry the other processes' frames to its QPs.  So
 * QPs cost no file descriptors: a process pays one for its block and two
 * for each process it talks to.  The per-process progress thread is epoll
 * driven, reads and dispatches frames in order, drains TX queues on
 * EPOLLOUT, never blocks on a write.
 *
 * A link breaks only when a process dies (nothing closes one before):
 * the frames each side sent are all delivered first, so a peer QP's
 * goodbye (BYE: destroyed, or moved to ERR) always comes before its
 * process's death is seen on the link it used.
 *
 * Connection objects are never freed while the progress thread may still
 * hold an event for them: killing one marks it dead, removes it from epoll
 * and shuts the socket down; the progress thread closes and frees it after
 * the current batch of events.
 *
 * Transport timeouts: a QP whose peer can no longer answer sits on the
 * timer list with a deadline; a timerfd in the epoll set wakes whoever
 * makes progress when the earliest one is due, and the QP's oldest
 * outstanding send then completes with IBV_WC_RETRY_EXC_ERR.
 *
 * The HELLO of a link we dial carries our direct-placement table
 * (SCM_RIGHTS, dma.c), so the block's process can write into our memory
 * itself; the HELLO of a link we accepted gives us the dialler's.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include "lo_verbs.h"

#define LO_RX_BUDGET	64

static pthread_mutex_t lo_prog_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lo_start_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lo_conns_mtx = PTHREAD_MUTEX_INITIALIZER;
/* The timer list; taken last, under QP locks. */
static pthread_mutex_t lo_tmo_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct lo_list lo_tmo_qps = { &lo_tmo_qps, &lo_tmo_qps };
static int lo_timerfd = -1;
static pthread_once_t lo_atfork_once = PTHREAD_ONCE_INIT;
static struct lo_list lo_all_conns = { &lo_all_conns, &lo_all_conns };
static struct lo_list lo_zombies = { &lo_zombies, &lo_zombies };
static int lo_epfd = -1;
static int lo_wakefd = -1;		/* tells the thread to reap zombies */
static int lo_prog_waiters;	/* threads queueing for lo_prog_mtx */

/* Our QPN block and its QPs (guarded by lo_prog_mtx). */
static uint32_t lo_blk;			/* 0: none yet */
static struct lo_conn *lo_blk_listener;
static struct lo_qp **lo_blk_qps;	/* LO_QPN_PER_BLK entries */
static uint32_t lo_blk_next, lo_blk_used;
unsigned int lo_fork_gen;
/* Links to other blocks, by block number (guarded by lo_link_mtx). */
static pthread_mutex_t lo_link_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct lo_conn *lo_links[LO_QPN_BLKS];

void lo_prog_lock(void)
{
	__atomic_add_fetch(&lo_prog_waiters, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&lo_prog_mtx);
	__atomic_sub_fetch(&lo_prog_waiters, 1, __ATOMIC_SEQ_CST);
}

void lo_prog_unlock(void)
{
	pthread_mutex_unlock(&lo_prog_mtx);
}

/* --- fork: the child gets no progress thread and none of our sockets --- */

static void lo_fork_prepare(void)
{
	pthread_mutex_lock(&lo_start_mtx);
	pthread_mutex_lock(&lo_prog_mtx);
	pthread_mutex_lock(&lo_link_mtx);
	pthread_mutex_lock(&lo_conns_mtx);
	pthread_mutex_lock(&lo_tmo_mtx);
	lo_dma_fork_prepare();
}

static void lo_fork_parent(void)
{
	lo_dma_fork_parent();
	pthread_mutex_unlock(&lo_tmo_mtx);
	pthread_mutex_unlock(&lo_conns_mtx);
	pthread_mutex_unlock(&lo_link_mtx);
	pthread_mutex_unlock(&lo_prog_mtx);
	pthread_mutex_unlock(&lo_start_mtx);
}

static void lo_fork_child(void)
{
	struct lo_list *l;

	/*
	 * Inherited QPs are unusable in the child (as with real verbs), but
	 * their sockets must not keep the parent's names and streams alive.
	 */
	for (l = lo_all_conns.next; l != &lo_all_conns; l = l->next) {
		struct lo_conn *c = lo_container_of(l, struct lo_conn,
						    all_link);

		close(c->fd);
		c->fd = -1;
		if (c->tbl_fd >= 0)
			close(c->tbl_fd);
		c->tbl_fd = -1;
		__atomic_store_n(&c->dead, true, __ATOMIC_RELEASE);
		c->in_epoll = false;
	}
	lo_list_init(&lo_all_conns);
	lo_list_init(&lo_zombies);
	/* Inherited QPs are off the timer list, so destroying one is safe. */
	while (!lo_list_empty(&lo_tmo_qps))
		lo_list_del(lo_tmo_qps.next);
	if (lo_epfd >= 0)
		close(lo_epfd);
	lo_epfd = -1;
	lo_wakefd = -1;
	lo_timerfd = -1;
	lo_prog_waiters = 0;
	/* the parent's block and links are the parent's: start afresh */
	__atomic_store_n(&lo_blk, 0, __ATOMIC_RELAXED);
	lo_blk_listener = NULL;
	free(lo_blk_qps);
	lo_blk_qps = NULL;
	lo_blk_next = lo_blk_used = 0;
	lo_fork_gen++;
	memset(lo_links, 0, sizeof(lo_links));
	pthread_mutex_init(&lo_tmo_mtx, NULL);
	pthread_mutex_init(&lo_link_mtx, NULL);
	pthread_mutex_init(&lo_conns_mtx, NULL);
	pthread_mutex_init(&lo_prog_mtx, NULL);
	pthread_mutex_init(&lo_start_mtx, NULL);
	lo_dma_fork_child();
}

static void lo_atfork_register(void)
{
	pthread_atfork(lo_fork_prepare, lo_fork_parent, lo_fork_child);
}

/*
 * Before this process has state a fork() child must not inherit: a
 * progress thread, or a direct-placement table (whose entries the child
 * would otherwise fill with its own addresses).
 */
void lo_atfork_init(void)
{
	pthread_once(&lo_atfork_once, lo_atfork_register);
}

/* --- connections --------------------------------------------------------- */

static struct lo_conn *lo_conn_new(enum lo_conn_kind kind, int fd,
				   struct lo_qp *qp)
{
	struct lo_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->kind = kind;
	c->fd = fd;
	c->tbl_fd = -1;
	c->qp = qp;
	lo_list_init(&c->link);
	lo_list_init(&c->txq);
	pthread_mutex_init(&c->tx_lock, NULL);
	pthread_mutex_lock(&lo_conns_mtx);
	lo_list_add_tail(&lo_all_conns, &c->all_link);
	pthread_mutex_unlock(&lo_conns_mtx);
	return c;
}

static int lo_conn_epoll(struct lo_conn *c, int op, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	if (lo_epfd < 0)
		return -1;
	if (epoll_ctl(lo_epfd, op, c->fd, &ev))
		return -1;
	c->events = events;
	c->in_epoll = true;
	return 0;
}

static void lo_txq_free(struct lo_conn *c)
{
	while (!lo_list_empty(&c->txq)) {
		struct lo_txbuf *b = lo_list_first(&c->txq, struct lo_txbuf,
						   link);

		lo_list_del(&b->link);
		free(b);
	}
}

/*
 * Retire a connection: no more events, the peer sees EOF now, the memory
 * goes when the progress thread is done with the current batch.  Callers
 * that keep c on a QP list hold that QP's lock.
 */
void lo_conn_kill(struct lo_conn *c)
{
	if (__atomic_exchange_n(&c->dead, true, __ATOMIC_ACQ_REL))
		return;
	lo_list_del(&c->link);
	if (c->in_epoll && lo_epfd >= 0)
		epoll_ctl(lo_epfd, EPOLL_CTL_DEL, c->fd, NULL);
	c->in_epoll = false;
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_lock(&c->tx_lock);
	lo_txq_free(c);
	pthread_mutex_unlock(&c->tx_lock);
	pthread_mutex_lock(&lo_conns_mtx);
	lo_list_del(&c->all_link);
	lo_list_add_tail(&lo_zombies, &c->all_link);
	pthread_mutex_unlock(&lo_conns_mtx);
	if (lo_wakefd >= 0) {
		uint64_t one = 1;

		if (write(lo_wakefd, &one, sizeof(one)) < 0)
			return;	/* counter full: a wake-up is pending */
	}
}

static void lo_reap_zombies(void)
{
	struct lo_list z;

	pthread_mutex_lock(&lo_conns_mtx);
	if (lo_list_empty(&lo_zombies)) {
		pthread_mutex_unlock(&lo_conns_mtx);
		return;
	}
	z = lo_zombies;
	z.next->prev = &z;
	z.prev->next = &z;
	lo_list_init(&lo_zombies);
	pthread_mutex_unlock(&lo_conns_mtx);
	while (!lo_list_empty(&z)) {
		struct lo_conn *c = lo_list_first(&z, struct lo_conn,
						  all_link);

		lo_list_del(&c->all_link);
		if (c->fd >= 0)
			close(c->fd);
		if (c->tbl_fd >= 0)
			close(c->tbl_fd);
		free(c->pay);
		pthread_mutex_destroy(&c->tx_lock);
		free(c);
	}
}

struct lo_txbuf *lo_txbuf_new(const struct lo_wire_hdr *h, size_t paylen)
{
	struct lo_txbuf *b = malloc(sizeof(*b) + sizeof(*h) + paylen);

	if (!b)
		return NULL;
	lo_list_init(&b->link);
	b->len = sizeof(*h) + paylen;
	b->off = 0;
	memcpy(b->data, h, sizeof(*h));
	return b;
}

/* Write what the socket takes now.  Caller holds tx_lock.  <0: broken. */
static int lo_txq_push(struct lo_conn *c)
{
	while (!lo_list_empty(&c->txq)) {
		struct lo_txbuf *b = lo_list_first(&c->txq, struct lo_txbuf,
						   link);
		ssize_t n = send(c->fd, b->data + b->off, b->len - b->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			c->broken = true;
			lo_txq_free(c);
			return -1;
		}
		b->off += n;
		if (b->off == b->len) {
			lo_list_del(&b->link);
			free(b);
		}
	}
	return 0;
}

/*
 * Queue one frame and push it out as far as the socket allows; the rest
 * is left to the progress thread (EPOLLOUT).  Takes ownership of b.
 */
int lo_conn_queue(struct lo_conn *c, struct lo_txbuf *b)
{
	int ret = 0;

	pthread_mutex_lock(&c->tx_lock);
	if (lo_dead(c) || c->broken) {
		pthread_mutex_unlock(&c->tx_lock);
		free(b);
		return -1;
	}
	lo_list_add_tail(&c->txq, &b->link);
	if (c->txq.next == &b->link)
		ret = lo_txq_push(c);
	if (!ret && !lo_list_empty(&c->txq) && !(c->events & EPOLLOUT))
		lo_conn_epoll(c, EPOLL_CTL_MOD, c->events | EPOLLOUT);
	pthread_mutex_unlock(&c->tx_lock);
	return ret;
}

/* --- names ---------------------------------------------------------------- */

socklen_t lo_addr(struct sockaddr_un *sa, const char *kind, uint32_t qpn)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "%s/%s/%u",
		     lo_ns(), kind, qpn);
	return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

static uint32_t lo_blk_of(uint32_t qpn)
{
	return qpn >> LO_QPN_BLK_BITS;
}

static socklen_t lo_blk_addr(struct sockaddr_un *sa, uint32_t blk)
{
	return lo_addr(sa, "qpb", blk);
}

/* Track fd as a connection of qp and watch it for events. */
struct lo_conn *lo_conn_add(enum lo_conn_kind kind, int fd, struct lo_qp *qp,
			    uint32_t events)
{
	struct lo_conn *c = lo_conn_new(kind, fd, qp);

	if (!c)
		return NULL;
	if (lo_conn_epoll(c, EPOLL_CTL_ADD, events)) {
		pthread_mutex_lock(&lo_conns_mtx);
		lo_list_del(&c->all_link);
		pthread_mutex_unlock(&lo_conns_mtx);
		pthread_mutex_destroy(&c->tx_lock);
		free(c);
		return NULL;
	}
	return c;
}

/* --- transport timeouts ------------------------------------------------- */

static uint64_t lo_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Set the timerfd to the earliest deadline, or disarm it.  Holds tmo. */
static void lo_tmo_program(void)
{
	struct itimerspec its;
	uint64_t first = 0;
	struct lo_list *l;

	if (lo_timerfd < 0)
		return;
	for (l = lo_tmo_qps.next; l != &lo_tmo_qps; l = l->next) {
		struct lo_qp *qp = lo_container_of(l, struct lo_qp, tmo_link);

		if (!first || qp->tmo_deadline < first)
			first = qp->tmo_deadline;
	}
	memset(&its, 0, sizeof(its));
	if (first) {
		its.it_value.tv_sec = first / 1000000000ULL;
		its.it_value.tv_nsec = first % 1000000000ULL;
	}
	timerfd_settime(lo_timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/*
 * Start qp's transport timeout (delay_ns from now) unless it is already
 * running.  Caller holds the QP lock.
 */
void lo_tmo_arm(struct lo_qp *qp, uint64_t delay_ns)
{
	pthread_mutex_lock(&lo_tmo_mtx);
	if (lo_list_empty(&qp->tmo_link)) {
		qp->tmo_deadline = lo_now_ns() + delay_ns;
		lo_list_add_tail(&lo_tmo_qps, &qp->tmo_link);
		lo_tmo_program();
	}
	pthread_mutex_unlock(&lo_tmo_mtx);
}

/* Stop qp's transport timeout.  Caller holds the QP lock. */
void lo_tmo_cancel(struct lo_qp *qp)
{
	pthread_mutex_lock(&lo_tmo_mtx);
	if (!lo_list_empty(&qp->tmo_link)) {
		lo_list_del(&qp->tmo_link);
		lo_tmo_program();
	}
	pthread_mutex_unlock(&lo_tmo_mtx);
}

/*
 * Fire every timeout that is due.  Caller holds lo_prog_mtx, which keeps
 * the QPs on the list alive: destroying one takes it off under that lock.
 */
static void lo_tmo_run(void)
{
	uint64_t v, now = lo_now_ns();

	if (read(lo_timerfd, &v, sizeof(v)) < 0)
		v = 0;	/* not expired yet, or already read */
	for (;;) {
		struct lo_qp *qp = NULL;
		struct lo_list *l;

		pthread_mutex_lock(&lo_tmo_mtx);
		for (l = lo_tmo_qps.next; l != &lo_tmo_qps; l = l->next) {
			struct lo_qp *q = lo_container_of(l, struct lo_qp,
							  tmo_link);

			if (q->tmo_deadline <= now) {
				qp = q;
				lo_list_del(&q->tmo_link);
				break;
			}
		}
		if (!qp)
			lo_tmo_program();
		pthread_mutex_unlock(&lo_tmo_mtx);
		if (!qp)
			return;
		pthread_mutex_lock(&qp->lock);
		lo_qp_timeout_locked(qp);
		pthread_mutex_unlock(&qp->lock);
	}
}

/* --- progress thread ------------------------------------------------------ */

static void lo_accept(struct lo_conn *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct lo_conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		c = lo_conn_new(LO_CONN_RX, fd, NULL);
		if (!c) {
			close(fd);
			continue;
		}
		if (lo_conn_epoll(c, EPOLL_CTL_ADD, EPOLLIN | EPOLLRDHUP))
			lo_conn_kill(c);
	}
}

/* Our QP of that number, if any.  Caller holds lo_prog_mtx. */
static struct lo_qp *lo_qpn_lookup(uint32_t qpn)
{
	if (!lo_blk || lo_blk_of(qpn) != lo_blk)
		return NULL;
	return lo_blk_qps[qpn & (LO_QPN_PER_BLK - 1)];
}

/*
 * The process owning block blk died (its link to us broke): our QPs
 * connected to one of its QPs that did not say goodbye lose their peer,
 * as on a wire (lo_qp_peer_died_locked).  Caller holds lo_prog_mtx.
 */
static void lo_blk_died(uint32_t blk)
{
	uint32_t i;

	for (i = 0; lo_blk_qps && i < LO_QPN_PER_BLK; i++) {
		struct lo_qp *qp = lo_blk_qps[i];

		if (!qp)
			continue;
		pthread_mutex_lock(&qp->lock);
		if (qp->qp.qp_type != IBV_QPT_UD && !qp->peer_gone &&
		    lo_blk_of(qp->attr.dest_qp_num) == blk)
			lo_qp_peer_died_locked(qp);
		pthread_mutex_unlock(&qp->lock);
	}
}

static void lo_rx_eof(struct lo_conn *c)
{
	uint32_t blk = c->hello ? c->blk : 0;

	if (blk)
		lo_dma_peer_gone(blk, c);
	lo_conn_kill(c);
	if (blk)
		lo_blk_died(blk);
}

/* One complete frame from an accepted link.  Owns pay. */
static void lo_rx_frame(struct lo_conn *c, struct lo_wire_hdr *h,
			unsigned char *pay)
{
	struct lo_qp *qp;

	if (h->op == LO_OP_HELLO) {
		c->hello = true;
		c->blk = lo_blk_of(h->src_qpn);
		lo_dma_peer_hello(c->blk, c);
		free(pay);
		return;
	}
	qp = lo_qpn_lookup(h->dst_qpn);
	if (!qp) {
		/* a QP gone (or never here): like a wire, nobody answers */
		if (lo_op_is_request(h->op))
			lo_send_bye(h->dst_qpn, h->src_qpn, 0);
		free(pay);
		return;
	}
	pthread_mutex_lock(&qp->lock);
	lo_qp_rx_frame_locked(qp, h, pay);
	pthread_mutex_unlock(&qp->lock);
}

/* Until its HELLO is in, a link may bring the dialler's table along. */
static ssize_t lo_rx_hello(struct lo_conn *c, void *buf, size_t len)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec v = { buf, len };
	struct msghdr mh = {
		.msg_iov = &v, .msg_iovlen = 1,
		.msg_control = u.b, .msg_controllen = sizeof(u.b),
	};
	struct cmsghdr *cm;
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n <= 0)
		return n;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int fd;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS ||
		    cm->cmsg_len < CMSG_LEN(sizeof(int)))
			continue;
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
		if (c->tbl_fd >= 0)
			close(fd);
		else
			c->tbl_fd = fd;
	}
	return n;
}

static void lo_rx(struct lo_conn *c)
{
	int budget = LO_RX_BUDGET;

	while (budget > 0 && !lo_dead(c)) {
		ssize_t n;

		if (c->hdr_got < sizeof(c->hdr) && !c->hello) {
			n = lo_rx_hello(c, (char *)&c->hdr + c->hdr_got,
					sizeof(c->hdr) - c->hdr_got);
		} else if (c->hdr_got < sizeof(c->hdr)) {
			n = recv(c->fd, (char *)&c->hdr + c->hdr_got,
				 sizeof(c->hdr) - c->hdr_got, MSG_DONTWAIT);
		} else {
			n = recv(c->fd, c->pay + c->pay_got,
				 c->hdr.len - c->pay_got, MSG_DONTWAIT);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			lo_rx_eof(c);
			return;
		}
		if (c->hdr_got < sizeof(c->hdr)) {
			c->hdr_got += n;
			if (c->hdr_got < sizeof(c->hdr))
				continue;
			if (c->hdr.op < LO_OP_HELLO ||
			    c->hdr.op > LO_OP_ATOMIC ||
			    c->hdr.len > LO_MAX_MSG) {
				lo_rx_eof(c);
				return;
			}
			if (c->hdr.len) {
				c->pay = malloc(c->hdr.len);
				if (!c->pay) {
					lo_rx_eof(c);
					return;
				}
				c->pay_got = 0;
				continue;
			}
		} else {
			c->pay_got += n;
			if (c->pay_got < c->hdr.len)
				continue;
		}
		/* A whole frame. */
		{
			struct lo_wire_hdr h = c->hdr;
			unsigned char *pay = c->pay;

			c->hdr_got = 0;
			c->pay = NULL;
			c->pay_got = 0;
			budget--;
			lo_rx_frame(c, &h, pay);
		}
	}
}

/* The process at the other end of c closed it: it is gone. */
static bool lo_peer_closed(struct lo_conn *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLRDHUP };

	return c->fd >= 0 && poll(&pfd, 1, 0) > 0;
}

/*
 * A link we dialled broke: the block's process is gone.  Its QPs' deaths
 * show on the links they dialled to us (lo_rx_eof, in order with their
 * goodbyes); here our QPs stop using this one, and requests they still
 * wait for will never be answered.  Caller holds lo_prog_mtx.
 */
static void lo_link_broke(struct lo_conn *c)
{
	uint32_t i;

	pthread_mutex_lock(&lo_link_mtx);
	if (lo_links[c->blk] == c) {
		/* before a new link to the block can hand our table out */
		if (lo_peer_closed(c))
			lo_dma_blk_reset(c->blk);
		lo_links[c->blk] = NULL;
	}
	pthread_mutex_unlock(&lo_link_mtx);
	for (i = 0; lo_blk_qps && i < LO_QPN_PER_BLK; i++) {
		struct lo_qp *qp = lo_blk_qps[i];

		if (!qp)
			continue;
		pthread_mutex_lock(&qp->lock);
		if (qp->tx == c) {
			qp->tx = NULL;
			lo_qp_peer_lost_locked(qp);
		}
		pthread_mutex_unlock(&qp->lock);
	}
	lo_conn_kill(c);
}

static void lo_tx_event(struct lo_conn *c, uint32_t events)
{
	bool broke = false;

	pthread_mutex_lock(&c->tx_lock);
	if (events & EPOLLOUT) {
		lo_txq_push(c);
		if (lo_list_empty(&c->txq) && (c->events & EPOLLOUT) &&
		    !c->broken)
			lo_conn_epoll(c, EPOLL_CTL_MOD,
				      c->events & ~EPOLLOUT);
	}
	if ((events & (EPOLLHUP | EPOLLERR)) || c->broken) {
		/* The peer closed its end: later sends fail. */
		c->broken = true;
		lo_txq_free(c);
		broke = true;
	}
	pthread_mutex_unlock(&c->tx_lock);
	if (broke)
		lo_link_broke(c);
}

/*
 * Handle a batch of events.  Caller holds lo_prog_mtx.  Only the progress
 * thread consumes wake-ups: it is the one that must run to reap.
 */
static void lo_dispatch(struct epoll_event *ev, int n, bool thread)
{
	int i;

	for (i = 0; i < n; i++) {
		struct lo_conn *c = ev[i].data.ptr;

		if (lo_dead(c))
			continue;
		switch (c->kind) {
		case LO_CONN_LISTEN:
			lo_accept(c);
			break;
		case LO_CONN_TX:
			lo_tx_event(c, ev[i].events);
			break;
		case LO_CONN_RX:
			lo_rx(c);
			break;
		case LO_CONN_UD:
			lo_ud_rx(c);
			break;
		case LO_CONN_TIMER:
			lo_tmo_run();
			break;
		case LO_CONN_WAKE: {
			uint64_t v;

			if (thread && read(c->fd, &v, sizeof(v)) < 0)
				break;
			break;
		}
		default:
			break;
		}
	}
}

static void *lo_prog_main(void *arg)
{
	int epfd = (int)(intptr_t)arg;
	struct epoll_event ev[64];

	for (;;) {
		int n = epoll_wait(epfd, ev, 64, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		lo_prog_lock();
		if (epfd != lo_epfd) {
			pthread_mutex_unlock(&lo_prog_mtx);
			return NULL;
		}
		lo_dispatch(ev, n, true);
		/* Only here: nobody can hold an event for these any more. */
		lo_reap_zombies();
		pthread_mutex_unlock(&lo_prog_mtx);
	}
	return NULL;
}

/* What is ready now, dispatched here.  Caller holds lo_prog_mtx. */
static void lo_progress_now(void)
{
	struct epoll_event ev[16];
	int n;

	if (lo_epfd < 0)
		return;
	n = epoll_wait(lo_epfd, ev, 16, 0);
	if (n > 0)
		lo_dispatch(ev, n, false);
}

/*
 * Called by an application thread that finds its CQ empty: make progress
 * in this thread instead of waiting for the progress thread to be
 * scheduled (busy pollers would otherwise compete with it for the CPU).
 * Never waits for the lock, and yields it to anyone queueing for it.
 */
void lo_progress_poll(void)
{
	if (__atomic_load_n(&lo_prog_waiters, __ATOMIC_RELAXED) ||
	    lo_epfd < 0 || pthread_mutex_trylock(&lo_prog_mtx))
		return;
	lo_progress_now();
	pthread_mutex_unlock(&lo_prog_mtx);
}

/*
 * The same, waiting for the lock: what has arrived is dispatched once by
 * the time this returns, by us or by the thread that held it.  Caller
 * holds no lock of ours.
 */
void lo_progress_poll_wait(void)
{
	if (lo_epfd < 0)
		return;
	lo_prog_lock();
	lo_progress_now();
	lo_prog_unlock();
}

static int lo_start_wake(void)
{
	struct lo_conn *c;
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	if (fd < 0)
		return -1;
	c = lo_conn_new(LO_CONN_WAKE, fd, NULL);
	if (!c) {
		close(fd);
		return -1;
	}
	if (lo_conn_epoll(c, EPOLL_CTL_ADD, EPOLLIN))
		return -1;
	lo_wakefd = fd;
	return 0;
}

static int lo_start_timer(void)
{
	struct lo_conn *c;
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -1;
	c = lo_conn_new(LO_CONN_TIMER, fd, NULL);
	if (!c) {
		close(fd);
		return -1;
	}
	if (lo_conn_epoll(c, EPOLL_CTL_ADD, EPOLLIN))
		return -1;
	pthread_mutex_lock(&lo_tmo_mtx);
	lo_timerfd = fd;
	lo_tmo_program();
	pthread_mutex_unlock(&lo_tmo_mtx);
	return 0;
}

/* Start this process's progress thread if it is not running. */
static int lo_start(void)
{
	pthread_attr_t pa;
	sigset_t all, old;
	pthread_t t;
	int epfd, err;

	lo_atfork_init();
	pthread_mutex_lock(&lo_start_mtx);
	if (lo_epfd >= 0) {
		pthread_mutex_unlock(&lo_start_mtx);
		return 0;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0) {
		pthread_mutex_unlock(&lo_start_mtx);
		return -1;
	}
	lo_epfd = epfd;
	if (lo_start_wake() || lo_start_timer()) {
		close(epfd);
		lo_epfd = -1;
		pthread_mutex_unlock(&lo_start_mtx);
		return -1;
	}
	pthread_attr_init(&pa);
	pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &pa, lo_prog_main, (void *)(intptr_t)epfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&pa);
	if (err) {
		close(epfd);
		lo_epfd = -1;
		pthread_mutex_unlock(&lo_start_mtx);
		errno = err;
		return -1;
	}
	pthread_mutex_unlock(&lo_start_mtx);
	return 0;
}

/* --- QP-facing API ------------------------------------------------------ */

/*
 * Reserve a block of QPNs for this process: bind "@<ns>/qpb/<b>" for a
 * free b, from a random start.  Caller holds lo_prog_mtx.
 */
static int lo_blk_reserve(void)
{
	struct sockaddr_un sa;
	struct lo_conn *c;
	uint32_t r = 0, b = 0, tries;
	int fd;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)getpid() * 2654435761U;
	fd = lo_socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* block 0 holds the reserved QPNs below 0x100 */
	for (tries = 0; tries < LO_QPN_BLKS - 1; tries++) {
		b = 1 + (r + tries) % (LO_QPN_BLKS - 1);
		if (!bind(fd, (struct sockaddr *)&sa, lo_blk_addr(&sa, b)))
			break;
		if (errno != EADDRINUSE) {
			close(fd);
			return -1;
		}
	}
	if (tries == LO_QPN_BLKS - 1 || listen(fd, SOMAXCONN)) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	lo_blk_qps = calloc(LO_QPN_PER_BLK, sizeof(*lo_blk_qps));
	c = lo_blk_qps ? lo_conn_new(LO_CONN_LISTEN, fd, NULL) : NULL;
	if (!c || lo_conn_epoll(c, EPOLL_CTL_ADD, EPOLLIN)) {
		if (c) {
			pthread_mutex_lock(&lo_conns_mtx);
			lo_list_del(&c->all_link);
			pthread_mutex_unlock(&lo_conns_mtx);
			pthread_mutex_destroy(&c->tx_lock);
			free(c);
		}
		free(lo_blk_qps);
		lo_blk_qps = NULL;
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	lo_blk_listener = c;
	__atomic_store_n(&lo_blk, b, __ATOMIC_RELAXED);
	lo_blk_next = r;
	lo_blk_used = 0;
	return 0;
}

/* Give qp a QPN of our block (reserving the block first). */
int lo_qpn_alloc(struct lo_qp *qp)
{
	uint32_t i, n;
	int ret = -1;

	if (lo_start())
		return -1;
	lo_prog_lock();
	if (!lo_blk && lo_blk_reserve())
		goto out;
	for (i = 0; i < LO_QPN_PER_BLK; i++) {
		n = (lo_blk_next + i) & (LO_QPN_PER_BLK - 1);
		/* 0xffffff is the multicast QPN */
		if (lo_blk_qps[n] ||
		    ((lo_blk << LO_QPN_BLK_BITS) | n) == LO_MCAST_QPN)
			continue;
		lo_blk_qps[n] = qp;
		lo_blk_next = n + 1;
		lo_blk_used++;
		qp->qp.qp_num = (lo_blk << LO_QPN_BLK_BITS) | n;
		qp->gen = lo_fork_gen;
		ret = 0;
		goto out;
	}
	errno = ENOMEM;	/* LO_MAX_QPS live QPs */
out:
	lo_prog_unlock();
	return ret;
}

/* qp's number is free again.  Caller holds lo_prog_mtx. */
void lo_qpn_free(struct lo_qp *qp)
{
	uint32_t n = qp->qp.qp_num & (LO_QPN_PER_BLK - 1);

	/* a QP inherited over fork() is not in this process's block */
	if (qp->gen != lo_fork_gen || !lo_blk_qps ||
	    lo_blk_of(qp->qp.qp_num) != lo_blk || lo_blk_qps[n] != qp)
		return;
	lo_blk_qps[n] = NULL;
	lo_blk_used--;
}

uint32_t lo_own_blk(void)
{
	return __atomic_load_n(&lo_blk, __ATOMIC_RELAXED);
}

/*
 * For a fence waiting on a block's count: false once the block's process
 * is seen gone (no link to it, or its end closed).  Our link to it is the
 * one that gave it our table, so this is the process that counts there.
 */
bool lo_blk_alive(uint32_t blk)
{
	struct lo_conn *c;
	bool alive = false;

	pthread_mutex_lock(&lo_link_mtx);
	c = blk < LO_QPN_BLKS ? lo_links[blk] : NULL;
	if (c) {
		pthread_mutex_lock(&c->tx_lock);
		alive = !c->broken;
		pthread_mutex_unlock(&c->tx_lock);
	}
	alive = c && alive && !lo_dead(c) && !lo_peer_closed(c);
	pthread_mutex_unlock(&lo_link_mtx);
	return alive;
}

/* Connect to a block's listener; the result is a non-blocking stream. */
static int lo_dial_blk(uint32_t blk, bool nonblock)
{
	struct sockaddr_un sa;
	socklen_t len = lo_blk_addr(&sa, blk);
	int fd, r;

	fd = lo_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
		       (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -1;
	do {
		r = connect(fd, (struct sockaddr *)&sa, len);
	} while (r && errno == EINTR);
	if (r) {
		close(fd);
		return -1;
	}
	if (!nonblock)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/*
 * The first frame on a link we dialled, naming our block, with our table
 * attached when we have one (the bytes go at once: the link is new and
 * empty).  Caller holds lo_link_mtx, before anyone else may use c.
 */
static void lo_link_hello(struct lo_conn *c)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct lo_wire_hdr h;
	struct iovec v = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &v, .msg_iovlen = 1 };
	struct lo_txbuf *b;
	ssize_t n = -1;
	int fd = lo_dma_own_fd();

	memset(&h, 0, sizeof(h));
	h.op = LO_OP_HELLO;
	h.src_qpn = lo_blk << LO_QPN_BLK_BITS;
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof(u.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
		do {
			n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		} while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof(h))
			return;
	}
	b = lo_txbuf_new(&h, 0);
	if (!b)
		return;
	if (n > 0)
		b->off = n;	/* the table went with the first bytes */
	lo_conn_queue(c, b);
}

/*
 * The link to blk, dialling it if there is none (without waiting with
 * nonblock: a full backlog then fails).  NULL: nobody owns blk.
 */
static struct lo_conn *lo_link_get(uint32_t blk, bool dial, bool nonblock)
{
	struct lo_conn *c;
	int fd;

	if (!blk || blk >= LO_QPN_BLKS)
		return NULL;
	pthread_mutex_lock(&lo_link_mtx);
	c = lo_links[blk];
	pthread_mutex_unlock(&lo_link_mtx);
	if (c || !dial)
		return c;
	fd = lo_dial_blk(blk, nonblock);
	if (fd < 0)
		return NULL;
	c = lo_conn_new(LO_CONN_TX, fd, NULL);
	if (!c) {
		close(fd);
		return NULL;
	}
	c->blk = blk;
	if (lo_conn_epoll(c, EPOLL_CTL_ADD, 0))
		c->broken = true;
	pthread_mutex_lock(&lo_link_mtx);
	if (lo_links[blk]) {
		/* another thread dialled it meanwhile: use that one */
		struct lo_conn *o = lo_links[blk];

		pthread_mutex_unlock(&lo_link_mtx);
		lo_conn_kill(c);
		return o;
	}
	/* the acceptor learns which block we are: our QPs' process */
	lo_link_hello(c);
	lo_links[blk] = c;
	pthread_mutex_unlock(&lo_link_mtx);
	return c;
}

/*
 * At INIT->RTR, outside every lock: make sure there is a link to the
 * destination's block (connect() may wait for the listener's backlog).
 */
void lo_link_dial(uint32_t dest_qpn)
{
	lo_link_get(lo_blk_of(dest_qpn), true, false);
}

/* Use the link to qp's peer (dialling now if dial).  Holds the QP lock. */
void lo_qp_attach_tx(struct lo_qp *qp, bool dial)
{
	if (!qp->tx)
		qp->tx = lo_link_get(lo_blk_of(qp->attr.dest_qp_num), dial,
				     true);
}

/* A goodbye from src_qpn (which we have no QP state for) to dst_qpn. */
void lo_send_bye(uint32_t src_qpn, uint32_t dst_qpn, int status)
{
	struct lo_conn *c = lo_link_get(lo_blk_of(dst_qpn), true, true);
	struct lo_wire_hdr h;
	struct lo_txbuf *b;

	if (!c)
		return;
	memset(&h, 0, sizeof(h));
	h.op = LO_OP_BYE;
	h.status = status;
	h.src_qpn = src_qpn;
	h.dst_qpn = dst_qpn;
	b = lo_txbuf_new(&h, 0);
	if (b)
		lo_conn_queue(c, b);
}

/*
 * qp stops talking to its peer; bye tells the peer why: 1 = we went to
 * ERR (it flushes too), 0 = we are gone.  Caller holds the QP lock.
 */
void lo_qp_close_conns(struct lo_qp *qp, int bye)
{
	struct lo_wire_hdr h;
	struct lo_txbuf *b;

	if (!qp->tx)
		return;
	memset(&h, 0, sizeof(h));
	h.op = LO_OP_BYE;
	h.status = bye;
	h.src_qpn = qp->qp.qp_num;
	h.dst_qpn = qp->attr.dest_qp_num;
	b = lo_txbuf_new(&h, 0);
	if (b)
		lo_conn_queue(qp->tx, b);
	qp->tx = NULL;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * device.c - the single loopback device "rdmalo0": device list, contexts,
 * device/port/GID/P_Key queries, async events, the *_str helpers, rate
 * conversions, fork and sysfs helpers.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <arpa/inet.h>

#include "lo_verbs.h"

/* verbs.h turns these into macros; we define the real functions. */
#undef ibv_get_device_list
#undef ibv_query_port

#define LO_GUID 0x0200a0fffe000001ULL

struct ibv_device lo_device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = LO_DEV_NAME,
	.dev_name = "uverbs0",
	.dev_path = "/sys/class/infiniband_verbs/uverbs0",
	.ibdev_path = "/sys/class/infiniband/" LO_DEV_NAME,
};

const char *lo_ns(void)
{
	const char *ns = getenv(LO_NS_ENV);

	if (!ns || !*ns || strlen(ns) > 64)
		ns = LO_NS_DEFAULT;
	return ns;
}

/* --- event queues: semaphore eventfd + list ---------------------------- */

int lo_evq_init(struct lo_evq *q)
{
	q->fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (q->fd < 0)
		return -1;
	pthread_mutex_init(&q->lock, NULL);
	lo_list_init(&q->items);
	return 0;
}

void lo_evq_destroy(struct lo_evq *q)
{
	close(q->fd);
	pthread_mutex_destroy(&q->lock);
}

/* Called with the item already linked by the caller's rules: just queue. */
void lo_evq_push(struct lo_evq *q, struct lo_list *item)
{
	uint64_t one = 1;
	ssize_t r;

	pthread_mutex_lock(&q->lock);
	lo_list_add_tail(&q->items, item);
	pthread_mutex_unlock(&q->lock);
	do {
		r = write(q->fd, &one, sizeof(one));
	} while (r < 0 && errno == EINTR);
}

/*
 * Take one token without waiting, whatever the fd's mode: preadv2's
 * RWF_NOWAIT, or where the kernel lacks it for eventfds a moment of
 * O_NONBLOCK (lo_evq_pop tells that EAGAIN from the application's own).
 * Caller holds q->lock.
 */
static bool lo_evq_take_token(struct lo_evq *q)
{
	uint64_t v;
	struct iovec io = { &v, sizeof(v) };
	int err = errno, fl;
	ssize_t r;

	r = preadv2(q->fd, &io, 1, -1, RWF_NOWAIT);
	if (r < 0 && (errno == EOPNOTSUPP || errno == EINVAL ||
		      errno == ENOSYS)) {
		fl = fcntl(q->fd, F_GETFL);
		if (fl >= 0 && !fcntl(q->fd, F_SETFL, fl | O_NONBLOCK)) {
			r = read(q->fd, &v, sizeof(v));
			fcntl(q->fd, F_SETFL, fl);
		}
	}
	errno = err;
	return r == sizeof(v);
}

/*
 * The caller (holding q->lock) took n records off the queue that nobody
 * will read: take their tokens back, so that the fd stops polling
 * readable, as the kernel's event file does when it drops an object's
 * events.  A token a reader has already consumed for one of them (it
 * waits for q->lock) is owed: that reader goes back to waiting.
 */
void lo_evq_withdrawn_locked(struct lo_evq *q, unsigned int n)
{
	while (n--)
		if (!lo_evq_take_token(q))
			q->owed++;
}

/*
 * Take one token (blocking unless the application made the fd
 * non-blocking) and then one record.  A signal handler installed without
 * SA_RESTART makes the wait fail with EINTR, as the real library's read()
 * of the uverbs fd does: programs such as qperf end a blocked
 * ibv_get_cq_event() with an alarm.
 */
int lo_evq_pop(struct lo_evq *q, struct lo_list **item)
{
	uint64_t v;
	int nb;

	for (;;) {
		if (read(q->fd, &v, sizeof(v)) < 0) {
			if (errno != EAGAIN)
				return -1;
			/* ours (lo_evq_take_token), or the program's? */
			pthread_mutex_lock(&q->lock);
			nb = fcntl(q->fd, F_GETFL);
			pthread_mutex_unlock(&q->lock);
			if (nb < 0 || (nb & O_NONBLOCK)) {
				errno = EAGAIN;
				return -1;
			}
			continue;
		}
		pthread_mutex_lock(&q->lock);
		if (q->owed) {
			q->owed--;
		} else if (!lo_list_empty(&q->items)) {
			*item = q->items.next;
			lo_list_del(*item);
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		pthread_mutex_unlock(&q->lock);
	}
}

/* --- device list --------------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **l = calloc(2, sizeof(*l));

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l[0] = &lo_device;
	if (num_devices)
		*num_devices = 1;
	return l;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	if (!device)
		return NULL;
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	if (device != &lo_device)
		return 0;
	return htobe64(LO_GUID);
}

int ibv_get_device_index(struct ibv_device *device)
{
	return device == &lo_device ? 0 : -1;
}

void lo_hint_no_grh(const char *fn)
{
	static const char tail[] = ": the address vector has no GRH "
		"(is_global = 0), which a RoCE port needs: EINVAL, as on the "
		"real stack.  Give the program a GID index (ibv_*_pingpong: "
		"-g 0; perftest: -x 0).\n";
	static bool told;
	char msg[320];
	size_t len;
	int n;

	if (__atomic_exchange_n(&told, true, __ATOMIC_RELAXED))
		return;
	n = snprintf(msg, sizeof(msg),
		     "libibverbs (rdmacheck loopback): %s%s", fn, tail);
	if (n <= 0)
		return;
	len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
	if (write(STDERR_FILENO, msg, len) < 0)
		return;
}

/* --- contexts ------------------------------------------------------------ */

bool lo_is_our_ctx(struct ibv_context *ctx)
{
	return ctx && ctx->device == &lo_device &&
	       ctx->abi_compat == (void *)UINTPTR_MAX;
}

static int lo_query_device_ex(struct ibv_context *ctx,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t len);

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct lo_context *lc;
	struct ibv_context *ctx;

	if (device != &lo_device) {
		errno = ENODEV;
		return NULL;
	}
	lc = calloc(1, sizeof(*lc));
	if (!lc) {
		errno = ENOMEM;
		return NULL;
	}
	if (lo_evq_init(&lc->async)) {
		free(lc);
		return NULL;
	}
	ctx = &lc->vctx.context;
	ctx->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (ctx->cmd_fd < 0) {
		lo_evq_destroy(&lc->async);
		free(lc);
		return NULL;
	}
	ctx->device = device;
	ctx->async_fd = lc->async.fd;
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->abi_compat = (void *)UINTPTR_MAX;
	ctx->ops.poll_cq = lo_poll_cq;
	ctx->ops.req_notify_cq = lo_req_notify_cq;
	ctx->ops.post_send = lo_post_send;
	ctx->ops.post_recv = lo_post_recv;
	ctx->ops.post_srq_recv = lo_post_srq_recv;
	ctx->ops.alloc_mw = lo_alloc_mw;
	ctx->ops.dealloc_mw = lo_dealloc_mw;
	ctx->ops.bind_mw = lo_bind_mw;
	lc->vctx.sz = sizeof(struct verbs_context);
	lc->vctx.query_port = lo_query_port;
	lc->vctx.query_device_ex = lo_query_device_ex;
	lc->vctx.create_qp_ex = lo_create_qp_ex;
	lc->vctx.create_srq_ex = lo_create_srq_ex;
	lc->vctx.get_srq_num = lo_get_srq_num;
	lc->vctx.open_xrcd = lo_open_xrcd;
	lc->vctx.close_xrcd = lo_close_xrcd;
	return ctx;
}

int ibv_close_device(struct ibv_context *ctx)
{
	struct lo_context *lc;

	if (!lo_is_our_ctx(ctx))
		return -1;
	lc = lo_ctx(ctx);
	while (!lo_list_empty(&lc->async.items)) {
		struct lo_list *l = lc->async.items.next;

		lo_list_del(l);
		free(lo_container_of(l, struct lo_async_item, link));
	}
	close(ctx->cmd_fd);
	lo_evq_destroy(&lc->async);
	pthread_mutex_destroy(&ctx->mutex);
	ctx->abi_compat = NULL;
	free(lc);
	return 0;
}

/* --- queries ------------------------------------------------------------- */

static void lo_fill_device_attr(struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "44.0-loopback");
	a->node_guid = htobe64(LO_GUID);
	a->sys_image_guid = htobe64(LO_GUID);
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = ~(uint64_t)0xfff;
	/* as rxe, the other software RoCE device (IBTA A3.3.1: no OUI) */
	a->vendor_id = 0xffffff;
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = LO_MAX_QPS;
	a->max_qp_wr = LO_MAX_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_SRQ_RESIZE |
			      IBV_DEVICE_CURR_QP_STATE_MOD |
			      IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_RESIZE_MAX_WR;
	a->max_sge = LO_MAX_SGE;
	a->max_sge_rd = LO_MAX_SGE;
	a->max_cq = LO_MAX_QP;
	a->max_cqe = LO_MAX_CQE;
	a->max_mr = 1 << 20;
	a->max_pd = 1 << 16;
	a->max_mw = 1 << 16;
	a->max_qp_rd_atom = LO_MAX_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = LO_MAX_RD_ATOM * LO_MAX_QP;
	a->max_qp_init_rd_atom = LO_MAX_RD_ATOM;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mcast_grp = 1024;
	a->max_mcast_qp_attach = 64;
	a->max_total_mcast_qp_attach = 1024 * 64;
	a->max_ah = 1 << 20;
	a->max_srq = LO_MAX_QP;
	a->max_srq_wr = LO_MAX_WR;
	a->max_srq_sge = LO_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 0;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	if (!lo_is_our_ctx(ctx) || !attr)
		return EINVAL;
	lo_fill_device_attr(attr);
	return 0;
}

static int lo_query_device_ex(struct ibv_context *ctx,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t len)
{
	struct ibv_device_attr_ex a;

	if (!lo_is_our_ctx(ctx) || !attr)
		return EINVAL;
	if (input && input->comp_mask)
		return EINVAL;
	if (len < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	lo_fill_device_attr(&a.orig_attr);
	a.max_dm_size = 0;
	a.phys_port_cnt_ex = 1;
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

int lo_query_port(struct ibv_context *ctx, uint8_t port,
		  struct ibv_port_attr *attr, size_t len)
{
	struct ibv_port_attr a;

	if (!lo_is_our_ctx(ctx) || !attr)
		return EINVAL;
	if (port != 1)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	a.state = IBV_PORT_ACTIVE;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = IBV_MTU_4096;
	a.gid_tbl_len = LO_GID_TBL_LEN;
	a.port_cap_flags = IBV_PORT_CM_SUP;
	a.max_msg_sz = LO_MAX_MSG;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.active_width = 2;	/* 4X */
	a.active_speed = 32;	/* EDR */
	a.phys_state = 5;	/* LinkUp */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

/* The exported symbol only knows the pre-port_cap_flags2 layout. */
int ibv_query_port(struct ibv_context *ctx, uint8_t port,
		   struct _compat_ibv_port_attr *attr)
{
	return lo_query_port(ctx, port, (struct ibv_port_attr *)attr,
			     offsetof(struct ibv_port_attr, port_cap_flags2));
}

static void lo_gid0(union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	gid->raw[12] = 127;
	gid->raw[15] = 1;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index,
		  union ibv_gid *gid)
{
	if (!lo_is_our_ctx(ctx) || !gid || port != 1 || index < 0 ||
	    index >= LO_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	lo_gid0(gid);
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (!lo_is_our_ctx(ctx) || !entry || flags || port_num != 1 ||
	    entry_size < sizeof(e))
		return EINVAL;
	if (gid_index >= LO_GID_TBL_LEN)
		return EINVAL;
	memset(&e, 0, sizeof(e));
	lo_gid0(&e.gid);
	e.gid_index = gid_index;
	e.port_num = port_num;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	e.ndev_ifindex = 1;	/* lo */
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ctx,
			     struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags,
			     size_t entry_size)
{
	if (!lo_is_our_ctx(ctx) || !entries || flags ||
	    entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < 1)
		return -EINVAL;
	_ibv_query_gid_ex(ctx, 1, 0, entries, 0, sizeof(*entries));
	return 1;
}

/* driver.h (not installed): enum ibv_gid_type_sysfs, 1 = RoCE v2. */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port_num,
		       unsigned int index, int *type)
{
	if (!lo_is_our_ctx(ctx) || !type || port_num != 1 ||
	    index >= LO_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	*type = 1;
	return 0;
}

int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index,
		   __be16 *pkey)
{
	if (!lo_is_our_ctx(ctx) || !pkey || port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	if (!lo_is_our_ctx(ctx) || port != 1) {
		errno = EINVAL;
		return -1;
	}
	if ((be16toh(pkey) & 0x7fff) == 0x7fff)
		return 0;
	errno = ENOENT;
	return -1;
}

/* --- async events -------------------------------------------------------- */

enum { LO_EV_DEV, LO_EV_QP, LO_EV_SRQ, LO_EV_CQ };

/* Which member of ibv_async_event.element an event type uses. */
static int lo_ev_kind(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return LO_EV_CQ;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return LO_EV_SRQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return LO_EV_QP;
	default:
		return LO_EV_DEV;
	}
}

static void *lo_ev_elem(const struct ibv_async_event *ev)
{
	switch (lo_ev_kind(ev->event_type)) {
	case LO_EV_QP:
		return ev->element.qp;
	case LO_EV_SRQ:
		return ev->element.srq;
	case LO_EV_CQ:
		return ev->element.cq;
	default:
		return NULL;
	}
}

void lo_async_event(struct ibv_context *ctx, enum ibv_event_type type,
		    void *elem)
{
	struct lo_async_item *it = calloc(1, sizeof(*it));

	if (!it)
		return;
	it->ev.event_type = type;
	switch (lo_ev_kind(type)) {
	case LO_EV_CQ:
		it->ev.element.cq = elem;
		break;
	case LO_EV_SRQ:
		it->ev.element.srq = elem;
		break;
	case LO_EV_QP:
		it->ev.element.qp = elem;
		break;
	default:
		it->ev.element.port_num = 1;
		break;
	}
	lo_evq_push(&lo_ctx(ctx)->async, &it->link);
}

/* Drop not-yet-read events of an object being destroyed. */
void lo_async_forget(struct ibv_context *ctx, void *elem)
{
	struct lo_evq *q = &lo_ctx(ctx)->async;
	struct lo_list *l, *n;

	unsigned int k = 0;

	pthread_mutex_lock(&q->lock);
	for (l = q->items.next; l != &q->items; l = n) {
		struct lo_async_item *it;

		n = l->next;
		it = lo_container_of(l, struct lo_async_item, link);
		if (lo_ev_elem(&it->ev) == elem) {
			lo_list_del(l);
			free(it);
			k++;
		}
	}
	lo_evq_withdrawn_locked(q, k);
	pthread_mutex_unlock(&q->lock);
}

int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct lo_async_item *it;
	struct lo_list *l;

	if (!lo_is_our_ctx(ctx) || !ev) {
		errno = EINVAL;
		return -1;
	}
	if (lo_evq_pop(&lo_ctx(ctx)->async, &l))
		return -1;
	it = lo_container_of(l, struct lo_async_item, link);
	*ev = it->ev;
	free(it);
	/* Taken events must be acked before their object is destroyed. */
	if (lo_ev_kind(ev->event_type) == LO_EV_QP) {
		pthread_mutex_lock(&ev->element.qp->mutex);
		lo_qp(ev->element.qp)->async_reported++;
		pthread_mutex_unlock(&ev->element.qp->mutex);
	} else if (lo_ev_kind(ev->event_type) == LO_EV_SRQ) {
		pthread_mutex_lock(&ev->element.srq->mutex);
		lo_srq(ev->element.srq)->async_reported++;
		pthread_mutex_unlock(&ev->element.srq->mutex);
	}
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *ev)
{
	pthread_mutex_t *m = NULL;
	pthread_cond_t *c = NULL;
	uint32_t *cnt = NULL;

	if (!ev)
		return;
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		if (ev->element.cq) {
			m = &ev->element.cq->mutex;
			c = &ev->element.cq->cond;
			cnt = &ev->element.cq->async_events_completed;
		}
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		if (ev->element.srq) {
			m = &ev->element.srq->mutex;
			c = &ev->element.srq->cond;
			cnt = &ev->element.srq->events_completed;
		}
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		if (ev->element.qp) {
			m = &ev->element.qp->mutex;
			c = &ev->element.qp->cond;
			cnt = &ev->element.qp->events_completed;
		}
		break;
	default:
		break;
	}
	if (!m)
		return;
	pthread_mutex_lock(m);
	++*cnt;
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(m);
}

/* --- strings ------------------------------------------------------------- */

const char *ibv_node_type_str(enum ibv_node_type t)
{
	static const char *const s[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	if ((unsigned int)t < sizeof(s) / sizeof(s[0]) && s[t])
		return s[t];
	return "unknown";
}

const char *ibv_port_state_str(enum ibv_port_state s)
{
	static const char *const n[] = {
		"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
		"PORT_ACTIVE", "PORT_ACTIVE_DEFER",
	};

	if ((unsigned int)s < sizeof(n) / sizeof(n[0]))
		return n[s];
	return "unknown";
}

const char *ibv_event_type_str(enum ibv_event_type e)
{
	static const char *const n[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] =
			"invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] =
			"local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	if ((unsigned int)e < sizeof(n) / sizeof(n[0]) && n[e])
		return n[e];
	return "unknown";
}

const char *ibv_wc_status_str(enum ibv_wc_status s)
{
	static const char *const n[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	if ((unsigned int)s < sizeof(n) / sizeof(n[0]) && n[s])
		return n[s];
	return "unknown";
}

/* --- rates --------------------------------------------------------------- */

static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} lo_rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },
	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, 5, 14062 },
	{ IBV_RATE_56_GBPS, 22, 56250 },
	{ IBV_RATE_112_GBPS, 45, 112500 },
	{ IBV_RATE_168_GBPS, 67, 168750 },
	{ IBV_RATE_25_GBPS, 10, 25781 },
	{ IBV_RATE_100_GBPS, 40, 103125 },
	{ IBV_RATE_200_GBPS, 80, 206250 },
	{ IBV_RATE_300_GBPS, 120, 309375 },
	{ IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },
	{ IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
};

#define LO_NRATES (sizeof(lo_rates) / sizeof(lo_rates[0]))

int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < LO_NRATES; i++)
		if (lo_rates[i].rate == rate)
			return lo_rates[i].mult;
	return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < LO_NRATES; i++)
		if (lo_rates[i].mult == mult)
			return lo_rates[i].rate;
	return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < LO_NRATES; i++)
		if (lo_rates[i].rate == rate)
			return lo_rates[i].mbps;
	return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < LO_NRATES; i++)
		if (lo_rates[i].mbps == mbps)
			return lo_rates[i].rate;
	return IBV_RATE_MAX;
}

/* --- fork and sysfs ------------------------------------------------------ */

int ibv_fork_init(void)
{
	/* Registered memory is never pinned here, so fork is always safe. */
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

const char *ibv_get_sysfs_path(void)
{
	const char *p = getenv("SYSFS_PATH");

	return p && *p ? p : "/sys";
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	else if ((size_t)n < size)
		buf[n] = '\0';
	else
		buf[size - 1] = '\0';
	return n;
}

int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev,
			      const char *fnfmt, ...)
{
	errno = ENOENT;
	return -1;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *ctx,
				struct ibv_ah_attr *attr, uint8_t eth_mac[6],
				uint16_t *vid)
{
	if (!lo_is_our_ctx(ctx) || !attr || !eth_mac) {
		errno = EINVAL;
		return -1;
	}
	memset(eth_mac, 0, 6);
	if (vid)
		*vid = 0xffff;
	return 0;
}

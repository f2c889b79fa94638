/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/cm/mcast.c: multicast joins of the loopback librdmacm:
 * rdma_join_multicast, rdma_join_multicast_ex and rdma_leave_multicast.
 *
 * A join needs no peer: the group lives in the verbs layer's membership
 * registry, so the library queues MULTICAST_JOIN at once and attaches the
 * id's QP to the MGID when the event is fetched, as the real library does
 * in rdma_get_cm_event.  The MGID of an IPv4 group is the kernel's RoCE v2
 * mapping ::ffff:a.b.c.d (the device's GIDs are RoCE v2 ones, as rxe's
 * are by default: mckey prints "joined dgid: ::ffff:239.0.0.1" there); an
 * IPv6 group is its own MGID, an AF_IB one its GID.  Every process maps
 * an address the same way, so members meet.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/ib.h>

#include "cm.h"

static int cm_mc_mgid(union ibv_gid *mgid, const struct sockaddr *sa)
{
	memset(mgid, 0, sizeof(*mgid));
	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *sin = (const void *)sa;

		if (sin->sin_addr.s_addr == htonl(INADDR_ANY))
			return -1;
		mgid->raw[10] = 0xff;
		mgid->raw[11] = 0xff;
		memcpy(&mgid->raw[12], &sin->sin_addr, 4);
		return 0;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		if (IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
			return -1;
		memcpy(mgid->raw, &sin6->sin6_addr, 16);
		return 0;
	}
	case AF_IB:
		memcpy(mgid->raw, &((const struct sockaddr_ib *)sa)->sib_addr,
		       16);
		return 0;
	default:
		return -1;
	}
}

/*
 * Inside rdma_get_cm_event: attach the QP unless the join is send-only.
 * A failure turns the event into MULTICAST_ERROR with status -1, as the
 * real library's rdma_seterrno does.
 */
int cm_process_join(struct cm_event *e)
{
	struct rdma_cm_id *id = e->ev.id;
	struct cm_mc *mc = e->mc;
	int ret;

	if (!id->qp ||
	    mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return 0;
	ret = ibv_attach_mcast(id->qp, &mc->mgid,
			       e->ev.param.ud.ah_attr.dlid);
	if (!ret)
		return 0;
	errno = ret;
	e->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
	e->ev.status = -1;
	return -1;
}

static int cm_join(struct rdma_cm_id *id, struct sockaddr *addr,
		   socklen_t addrlen, uint16_t join_flags, void *context)
{
	struct cm_id *p = cm_id(id);
	struct ibv_ah_attr *ah;
	struct cm_event *e;
	struct cm_mc *mc;

	if (cm_inherited(id->channel))
		return -1;
	mc = calloc(1, sizeof(*mc));
	if (!mc) {
		errno = ENOMEM;
		return -1;
	}
	mc->context = context;
	mc->join_flags = join_flags;
	memcpy(&mc->addr, addr, addrlen);
	cm_list_init(&mc->link);

	pthread_mutex_lock(&cm.lock);
	/* the kernel's checks: a device-bound id, a usable group address */
	if (!id->verbs ||
	    (p->state != CM_BOUND && p->state != CM_ADDR_RESOLVED) ||
	    cm_mc_mgid(&mc->mgid, addr)) {
		pthread_mutex_unlock(&cm.lock);
		free(mc);
		errno = EINVAL;
		return -1;
	}
	if (cm_chan(id->channel)->dead) {
		pthread_mutex_unlock(&cm.lock);
		free(mc);
		errno = EBADF;
		return -1;
	}
	e = cm_event_new(p, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (!e) {
		pthread_mutex_unlock(&cm.lock);
		free(mc);
		errno = ENOMEM;
		return -1;
	}
	e->kind = CM_EVK_MC_JOIN;
	e->mc = mc;
	ah = &e->ev.param.ud.ah_attr;
	ah->is_global = 1;
	ah->grh.dgid = mc->mgid;
	ah->grh.hop_limit = 1;
	ah->port_num = id->port_num ? id->port_num : 1;
	e->ev.param.ud.qp_num = CM_MC_QPN;
	e->ev.param.ud.qkey = cm_ud_qkey(id);
	/* not data: the user's join context, handed back */
	e->ev.param.ud.private_data = context;
	e->ev.param.ud.private_data_len = 0;
	cm_list_add_tail(&p->mcs, &mc->link);
	cm_queue_event(p, e);
	pthread_mutex_unlock(&cm.lock);
	/* sync ids wait here, through the PLT like the real library */
	return cm_complete(id);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id,
			   struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	socklen_t len;

	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED) {
		errno = ENOTSUP;
		return -1;
	}
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED) {
		errno = EINVAL;
		return -1;
	}
	len = mc_join_attr->addr ? cm_addr_len(mc_join_attr->addr) : 0;
	if (!len) {
		errno = EINVAL;
		return -1;
	}
	return cm_join(id, mc_join_attr->addr, len,
		       mc_join_attr->join_flags, context);
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
			void *context)
{
	socklen_t len = addr ? cm_addr_len(addr) : 0;

	if (cm_inherited(id->channel))
		return -1;
	if (!len) {
		errno = EINVAL;
		return -1;
	}
	return cm_join(id, addr, len, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

/*
 * Find the join by its address, detach, drop its events not yet fetched
 * and wait until every one that was fetched has been acked.
 */
int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *p = cm_id(id);
	struct cm_mc *mc = NULL;
	struct cm_list *l;
	socklen_t len = addr ? cm_addr_len(addr) : 0;

	if (cm_inherited(id->channel))
		return -1;
	if (!len) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	for (l = p->mcs.next; l != &p->mcs; l = l->next) {
		struct cm_mc *m = cm_container_of(l, struct cm_mc, link);

		if (!memcmp(&m->addr, addr, len)) {
			mc = m;
			break;
		}
	}
	if (!mc) {
		pthread_mutex_unlock(&cm.lock);
		errno = EADDRNOTAVAIL;
		return -1;
	}
	cm_list_del(&mc->link);
	pthread_mutex_unlock(&cm.lock);

	if (id->qp &&
	    mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		ibv_detach_mcast(id->qp, &mc->mgid, 0);

	pthread_mutex_lock(&cm.lock);
	if (cm_chan(id->channel)->dead) {
		/* the real library's LEAVE write fails; it frees the mc */
		pthread_mutex_unlock(&cm.lock);
		free(mc);
		errno = EBADF;
		return -1;
	}
	cm_purge_mc_events(p, mc);
	while (mc->completed < mc->reported)
		pthread_cond_wait(&cm.cond, &cm.lock);
	pthread_mutex_unlock(&cm.lock);
	free(mc);
	return 0;
}

/*
 * rdma_destroy_id: the real library leaks the joins still on the id; the
 * destroy already waited for every event, so they can go.
 */
void cm_free_mcs(struct cm_id *p)
{
	while (!cm_list_empty(&p->mcs)) {
		struct cm_list *l = p->mcs.next;

		cm_list_del(l);
		free(cm_container_of(l, struct cm_mc, link));
	}
}

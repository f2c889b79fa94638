/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/cm/rdmacm14.c: the RDMACM_1.4 calls of rdma-core 60 and
 * later, built only into loopback/rdmacm14 (-DLO_RDMACM_1_4, with
 * librdmacm-1.4.map): rdma_resolve_addrinfo, rdma_query_addrinfo and
 * rdma_write_cm_event, as rdma-core does them.
 *
 * rdma-core resolves a name with rdma_getaddrinfo (through the PLT),
 * keeps the list in the id and has the kernel queue an event that
 * rdma_get_cm_event reports as ADDRINFO_RESOLVED; here the event is
 * queued directly.  The id stays busy until rdma_query_addrinfo claims
 * the list; rdma_destroy_id frees an unclaimed one (id.c).  IB service
 * lookups (RAI_SA) need an SA, which the loopback fabric lacks, so
 * ADDRINFO_ERROR never happens.
 */
#include <config.h>

#include <errno.h>
#include <string.h>

#include "cm.h"

/* rdma-core's ERR(ret): errno becomes the inner return value itself. */
static int cm_ai_fail(struct cm_id *p, int ret)
{
	pthread_mutex_lock(&cm.lock);
	p->resolving_ai = 0;
	pthread_mutex_unlock(&cm.lock);
	errno = ret;
	return -1;
}

int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
			  const char *service,
			  const struct rdma_addrinfo *hints)
{
	struct rdma_addrinfo *rai = NULL;
	struct cm_event *e = NULL;
	struct cm_id *p;
	int ret;

	if (!id) {
		errno = EINVAL;
		return -1;
	}
	if (cm_inherited(id->channel))
		return -1;
	p = cm_id(id);
	pthread_mutex_lock(&cm.lock);
	if (p->resolving_ai) {
		pthread_mutex_unlock(&cm.lock);
		errno = EBUSY;
		return -1;
	}
	p->resolving_ai = 1;
	pthread_mutex_unlock(&cm.lock);

	if (hints && (hints->ai_flags & CM_RAI_SA))
		return cm_ai_fail(p, ENOTSUP);
	/* -1 (errno set) or an EAI_* code, which becomes errno */
	ret = rdma_getaddrinfo(node, service, hints, &rai);
	if (ret)
		return cm_ai_fail(p, ret);

	pthread_mutex_lock(&cm.lock);
	/* the kernel's write fails on a destroyed channel */
	if (!cm_chan(id->channel)->dead)
		e = cm_event_new(p, CM_EVENT_ADDRINFO_RESOLVED, 0);
	if (e) {
		p->resolved_ai = rai;
		cm_queue_event(p, e);
	}
	pthread_mutex_unlock(&cm.lock);
	if (!e) {
		rdma_freeaddrinfo(rai);
		return cm_ai_fail(p, -1);
	}
	/* synchronous ids wait for the event, through the PLT */
	ret = cm_complete(id);
	if (ret)
		return cm_ai_fail(p, ret);
	return 0;
}

int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info)
{
	struct cm_id *p;

	if (!id || !info) {
		errno = EINVAL;
		return -1;
	}
	p = cm_id(id);
	pthread_mutex_lock(&cm.lock);
	if (!p->resolving_ai || !p->resolved_ai) {
		pthread_mutex_unlock(&cm.lock);
		errno = ENOENT;
		return -1;
	}
	/* the caller frees it with rdma_freeaddrinfo */
	*info = p->resolved_ai;
	p->resolved_ai = NULL;
	p->resolving_ai = 0;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

/* A user event on the id's channel; fetched, acked and counted as any. */
int rdma_write_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type event,
			int status, uint64_t arg)
{
	struct cm_event *e = NULL;
	int dead;

	if (!id || event != CM_EVENT_USER) {
		errno = EINVAL;
		return -1;
	}
	if (cm_inherited(id->channel))
		return -1;
	pthread_mutex_lock(&cm.lock);
	dead = cm_chan(id->channel)->dead;
	if (!dead)
		e = cm_event_new(cm_id(id), event, status);
	if (e) {
		/* param.arg of newer headers overlays the start of param */
		memcpy(&e->ev.param, &arg, sizeof(arg));
		cm_queue_event(cm_id(id), e);
	}
	pthread_mutex_unlock(&cm.lock);
	if (!e) {
		errno = dead ? EBADF : ENOMEM;
		return -1;
	}
	return 0;
}

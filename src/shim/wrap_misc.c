/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_misc.c - the lists librdmacm hands out (the addrinfo lists of
 * rdma_getaddrinfo and rdma_query_addrinfo, rdma_get_devices' arrays).
 */
#include <errno.h>
#include <stdio.h>
#include <rdma/rdma_cma.h>

#include "shim/rc_newer.h"

#include "core/options.h"
#include "shim/call.h"

int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	RC_CALL(c);
	int ret;

	RC_ENTER(c, rdma_getaddrinfo);
	ret = RC_FWD(&c, RC_REAL(rdma_getaddrinfo)(node, service, hints, res));
	if (ret == 0 && !c.skip && res && *res) {
		if (c.internal)
			rc_track_unstacked(&c, RC_K_ADDRINFO, *res, RC_F_LIB);
		else
			rc_track(&c, RC_K_ADDRINFO, *res, 0, NULL);
	}
	return ret;
}

/* The list resolved by rdma_resolve_addrinfo is the caller's now. */
int RC_NAME(rdma_query_addrinfo) RC_PARAMS(rdma_query_addrinfo,
	(struct rdma_cm_id *id, struct rdma_addrinfo **info))
{
	RC_CALL(c);
	int ret;

	RC_NEED_REAL(rdma_query_addrinfo);
	if (!rc_check_id_call(RC_FN_rdma_query_addrinfo, id, NULL,
			      RC_RA(rdma_query_addrinfo), &c))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_query_addrinfo)(id, info));
	rc_inside_end(&c);
	if (ret == 0 && !c.skip && info && *info)
		rc_track(&c, RC_K_ADDRINFO, *info, c.internal ? RC_F_LIB : 0,
			 NULL);
	return ret;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	RC_CALL(c);
	struct rc_obj o;

	RC_ENTER(c, rdma_freeaddrinfo);
	if (!c.skip && res) {	/* NULL is a documented no-op */
		if (c.internal) {
			/* Its own list, if we saw it made: one lookup. */
			rc_reg_take((uintptr_t)res, RC_K_ADDRINFO, 0, c.tid, 0,
				    &o);
		} else {
			if (!rc_require(&c, RC_K_ADDRINFO, res, RC_DESTROY,
					&o))
				return;
			if (o.handle)
				rc_untrack(&c, &o);
		}
	}
	RC_FWDV(&c, RC_REAL(rdma_freeaddrinfo)(res));
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	RC_CALL(c);

	if (!RC_REAL(rdma_get_devices)) {
		if (num_devices)
			*num_devices = 0;
		errno = ENOSYS;
		return NULL;
	}
	rc_call_begin(&c, RC_FN_rdma_get_devices,
		      (uintptr_t)__builtin_return_address(0));
	list = RC_FWD(&c, RC_REAL(rdma_get_devices)(num_devices));
	if (list && !c.skip)
		rc_track(&c, RC_K_DEVLIST, list, c.internal ? RC_F_LIB : 0,
			 NULL);
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	RC_CALL(c);
	struct rc_obj o;

	RC_ENTER(c, rdma_free_devices);
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_DEVLIST, list, RC_DESTROY, &o))
			return;
		if (o.handle)
			rc_untrack(&c, &o);
	}
	RC_FWDV(&c, RC_REAL(rdma_free_devices)(list));
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_mcast.c - multicast joins: rdma_join_multicast[_ex] registers one
 * record per (id, group address), the ledger charges MULTICAST_JOIN/ERROR
 * events to it as well as to the id, and rdma_leave_multicast checks
 * leave-multicast-not-joined and leave-multicast-with-unacked-events (the
 * real call waits for the group's events).  The record's handle is our
 * copy of the address, kept for the life of the process: joins are rare,
 * and reports may still name a group after it was left.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/watchdog.h"
#include "shim/settle.h"
#include "shim/cm.h"

/*
 * How many bytes of the address librdmacm compares to find a group; 0
 * when the address cannot be read.
 */
static unsigned addr_len(const struct sockaddr *a)
{
	sa_family_t family;

	if (!rc_peek(&family, &a->sa_family, sizeof(family)))
		return 0;
	switch (family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return sizeof(struct sockaddr);
	}
}

struct find_ctx {
	uintptr_t id;
	const void *addr;
	unsigned len;
	const void *context;
	bool by_context;
	struct rc_obj found;
};

static void find_fn(const struct rc_obj *o, void *arg)
{
	struct find_ctx *x = arg;
	const struct rc_mc_key *k = o->u.mc.key;

	if (o->kind != RC_K_MCAST || o->destroyed || !k || k->id != x->id)
		return;
	if (x->by_context ? k->context == x->context :
	    k->len == x->len && !memcmp(k->addr, x->addr, x->len))
		x->found = *o;
}

/* The live join of id for addr (or, for an event, with this context). */
static bool find_join(uintptr_t id, const struct sockaddr *addr,
		      const void *context, struct rc_obj *out)
{
	unsigned char copy[sizeof(((struct rc_mc_key *)0)->addr)];
	struct find_ctx x;

	memset(&x, 0, sizeof(x));
	x.id = id;
	x.context = context;
	x.by_context = addr == NULL;
	if (addr) {
		/* Compared with our copies: read the program's once, safely. */
		x.len = addr_len(addr);
		if (x.len > sizeof(copy) || !rc_peek(copy, addr, x.len))
			x.len = 0;
		x.addr = copy;
	}
	rc_reg_foreach(find_fn, &x);
	*out = x.found;
	return x.found.handle != 0;
}

struct rc_ref rc_mcast_of_event(uintptr_t id, const void *context)
{
	struct rc_obj mc;

	if (find_join(id, NULL, context, &mc))
		return rc_ref_of(&mc);
	return (struct rc_ref){ 0, 0 };
}

/* Register the join before forwarding: its event may come at once. */
static void track_join(struct rc_call *c, const struct rc_obj *id,
		       const struct sockaddr *addr, void *context,
		       struct rc_obj *mc)
{
	struct rc_mc_key *k = calloc(1, sizeof(*k));

	mc->handle = 0;
	if (!k || !addr)
		goto out;
	k->id = id->handle;
	k->context = context;
	k->len = addr_len(addr);
	if (k->len > sizeof(k->addr))
		k->len = sizeof(k->addr);
	if (!k->len || !rc_peek(k->addr, addr, k->len))
		goto out;	/* the library will refuse it */
	rc_obj_init(c, RC_K_MCAST, k, id->flags & RC_F_LIB, mc);
	mc->u.mc.id = rc_ref_of(id);
	mc->u.mc.key = k;
	if (rc_reg_insert(mc)) {
		RC_REG_ADD(rc_ref_of(id), u.id.joins, 1);
		return;
	}
out:
	free(k);
	mc->handle = 0;
}

static void join_done(struct rc_call *c, const struct rc_obj *mc, int ret)
{
	if (!mc->handle || ret == 0)
		return;
	/* Failed: the group was never joined. */
	if (rc_reg_destroy(mc->handle, mc->gen, c->tid, rc_call_stack(c)))
		RC_REG_ADD(mc->u.mc.id, u.id.joins, -1);
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
			void *context)
{
	struct rc_obj o, mc = { .handle = 0 };
	RC_CALL(c);
	int ret;

	RC_ENTER(c, rdma_join_multicast);
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o) ||
		    !rc_arg_readable(&c, "addr", addr, sizeof(*addr), true))
			return -1;
		if (o.handle)
			track_join(&c, &o, addr, context, &mc);
	}
	ret = RC_FWD(&c, RC_REAL(rdma_join_multicast)(id, addr, context));
	join_done(&c, &mc, ret);
	if (!c.skip && !c.internal && o.handle && (o.flags & RC_F_SYNC))
		rc_settle_id(&c, id);
	return ret;
}

int rdma_join_multicast_ex(struct rdma_cm_id *id,
			   struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	struct rdma_cm_join_mc_attr_ex attr;
	struct rc_obj o, mc = { .handle = 0 };
	RC_CALL(c);
	int ret;

	RC_ENTER(c, rdma_join_multicast_ex);
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o))
			return -1;
		if (!rc_peek(&attr, mc_join_attr, sizeof(attr))) {
			if (!rc_arg_readable(&c, "mc_join_attr", mc_join_attr,
					     sizeof(attr), false))
				return -1;
		} else if ((attr.comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) &&
			   !rc_arg_readable(&c, "mc_join_attr->addr",
					    attr.addr, sizeof(*attr.addr),
					    true)) {
			return -1;
		} else if (o.handle &&
			   (attr.comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS)) {
			/* Only what comp_mask declares valid is read. */
			track_join(&c, &o, attr.addr, context, &mc);
		}
	}
	ret = RC_FWD(&c, RC_REAL(rdma_join_multicast_ex)(id, mc_join_attr,
							 context));
	join_done(&c, &mc, ret);
	if (!c.skip && !c.internal && o.handle && (o.flags & RC_F_SYNC))
		rc_settle_id(&c, id);
	return ret;
}

/* Returns false when the leave must be refused. */
static bool check_leave(struct rc_call *c, const struct rc_obj *id,
			const struct sockaddr *addr, struct rc_obj *mc)
{
	struct rc_finding f;

	if (addr && find_join(id->handle, addr, NULL, mc))
		return rc_ledger_check_unacked(c, mc,
				RC_R_LEAVE_MULTICAST_WITH_UNACKED_EVENTS);
	mc->handle = 0;
	rc_finding_init(&f, RC_R_LEAVE_MULTICAST_NOT_JOINED, c,
			"rdma_leave_multicast(%p): this id has not joined "
			"that group (EADDRNOTAVAIL)", (void *)id->handle);
	rc_finding_add(&f, id, NULL);
	rc_report(&f);
	return true;
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct rc_obj o, mc = { .handle = 0 };
	RC_CALL(c);
	int ret, slot = -1;

	RC_ENTER(c, rdma_leave_multicast);
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o) ||
		    !rc_arg_readable(&c, "addr", addr, sizeof(*addr), true))
			return -1;
		if (o.handle && !check_leave(&c, &o, addr, &mc))
			return -1;
		if (o.handle)
			slot = rc_watch_begin(&c, &o);
	}
	ret = RC_FWD(&c, RC_REAL(rdma_leave_multicast)(id, addr));
	rc_watch_end(slot);
	if (ret == 0 && mc.handle &&
	    rc_reg_destroy(mc.handle, mc.gen, c.tid, rc_call_stack(&c)))
		RC_REG_ADD(mc.u.mc.id, u.id.joins, -1);
	return ret;
}

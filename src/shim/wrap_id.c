/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_id.c - cm ids: creation (user, synchronous, endpoint), migration
 * between channels, rdma_get_request's children, and destruction with its
 * checks (id-destroy-with-unacked-events, migrate-with-unacked-events,
 * id-destroy-with-qp, id-destroy-with-srq,
 * listener-destroy-with-pending-request,
 * endpoint-destroyed-with-destroy-id).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/watchdog.h"
#include "shim/settle.h"
#include "shim/cm.h"
#include "shim/fd.h"

/* The channel record an id points at, as a reference (0 if untracked). */
static struct rc_ref channel_ref(struct rdma_event_channel *ch)
{
	struct rc_obj o;

	if (ch && rc_reg_get((uintptr_t)ch, &o) && o.kind == RC_K_CHANNEL &&
	    !o.destroyed)
		return rc_ref_of(&o);
	return (struct rc_ref){ 0, 0 };
}

/* Register an id this call produced; it joins its channel's id count. */
void rc_track_id(struct rc_call *c, struct rdma_cm_id *id, unsigned flags,
		 const struct rc_obj *parent, struct rc_obj *out)
{
	struct rc_obj o;

	struct rc_obj ch;

	rc_obj_init(c, RC_K_ID, id, flags, &o);
	/* Join the channel's id count as we look it up; undone on failure. */
	if (id->channel && RC_REG_GET_ADD((uintptr_t)id->channel, RC_K_CHANNEL,
					  u.ch.nids, 1, &ch))
		o.u.id.channel = rc_ref_of(&ch);
	if (parent)
		o.u.id.parent = rc_ref_of(parent);
	if (!rc_reg_insert(&o))
		RC_REG_ADD(o.u.id.channel, u.ch.nids, -1);
	if (out)
		*out = o;
}

void rc_track_id_counted(struct rc_call *c, struct rdma_cm_id *id,
			 unsigned flags, struct rc_ref ch)
{
	struct rc_obj o;

	rc_obj_init(c, RC_K_ID, id, flags, &o);
	o.u.id.channel = ch;
	if (!rc_reg_insert(&o))
		RC_REG_ADD(ch, u.ch.nids, -1);
}

void rc_id_left_channel(struct rc_call *c, struct rc_ref channel)
{
	struct rc_obj ch;
	int now;

	/* One id fewer: an atomic in the channel's cell. */
	if (!channel.h ||
	    !rc_tally_add(channel, RC_T_CH_NIDS, -1, &now) || now > 0)
		return;
	/* librdmacm frees a private channel with its id (or when the id
	 * migrates away from it): it goes whether or not we saw the call. */
	if (rc_reg_get(channel.h, &ch) && ch.gen == channel.gen &&
	    !ch.destroyed && (ch.flags & RC_F_LIB) && ch.u.ch.nids <= 0) {
		rc_fd_untrack(ch.u.ch.fd, channel.h);
		rc_reg_destroy(channel.h, channel.gen, c->tid,
			       rc_call_stack(c));
	}
}

static bool id_destroyed(struct rc_call *c, const struct rc_obj *o)
{
	if (!rc_reg_destroy(o->handle, o->gen, c->tid, rc_call_stack(c)))
		return false;
	rc_id_left_channel(c, o->u.id.channel);
	return true;
}

int rdma_create_id(struct rdma_event_channel *channel,
		   struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	RC_CALL(c);
	struct rc_obj ch;
	bool counted = false;
	unsigned flags;
	int ret;

	RC_ENTER(c, rdma_create_id);
	/* The channel's id count is taken with the check: one lookup. */
	if (!c.skip && !c.internal && channel &&
	    !rc_require_count(&c, RC_K_CHANNEL, channel, RC_USE,
			      RC_T_CH_NIDS, 1, &ch, &counted))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_create_id)(channel, id, context, ps));
	flags = (channel ? 0 : RC_F_SYNC) | (c.internal ? RC_F_LIB : 0);
	if (ret == 0 && !c.skip && id && *id) {
		if (counted && (*id)->channel == channel)
			rc_track_id_counted(&c, *id, flags, rc_ref_of(&ch));
		else
			rc_track_id(&c, *id, flags, NULL, NULL);
		if (!channel && !c.internal)
			rc_settle_id(&c, *id);
	}
	if (counted && (ret != 0 || !id || !*id || (*id)->channel != channel))
		RC_REG_ADD(rc_ref_of(&ch), u.ch.nids, -1);
	return ret;
}

struct pending_ctx {
	struct rc_ref listener;
	struct rc_finding *f;
	pid_t caller;
	unsigned n, mine;
};

/* A library-held CONNECT_REQUEST charged to the listener: whose is it? */
static void pending_fn(const struct rc_obj *o, void *arg)
{
	struct pending_ctx *x = arg;
	struct rc_obj child;

	if (o->kind != RC_K_EVENT || o->destroyed || !(o->flags & RC_F_LIB) ||
	    o->u.ev.type != RDMA_CM_EVENT_CONNECT_REQUEST ||
	    o->u.ev.id.h != x->listener.h || o->u.ev.id.gen != x->listener.gen)
		return;
	x->n++;
	if (rc_reg_get(o->u.ev.ev_id, &child) && child.kind == RC_K_ID &&
	    !child.destroyed) {
		x->mine += child.created_tid == x->caller;
		rc_finding_add(x->f, &child, "holds its CONNECT_REQUEST "
			       "(neither accepted nor destroyed)");
	}
}

/*
 * A synchronous listener's requests are released only when their
 * children (from rdma_get_request) are accepted or destroyed: destroying
 * it before waits for that.  When the calling thread made those children,
 * nobody else will: refuse.
 */
static __attribute__((noinline)) bool pending_requests(struct rc_call *c,
							const struct rc_obj *o)
{
	struct pending_ctx x = { rc_ref_of(o), NULL, c->tid, 0, 0 };
	struct rc_finding f;
	bool refuse;

	rc_finding_init(&f, RC_R_LISTENER_DESTROY_WITH_PENDING_REQUEST, c, "x");
	rc_finding_add(&f, o, NULL);
	x.f = &f;
	rc_reg_foreach(pending_fn, &x);
	if (!x.n)
		return true;
	refuse = x.mine && rc_opt.protect;
	snprintf(f.message, sizeof(f.message),
		 "%s(%p): %u connect request%s from rdma_get_request %s "
		 "still held by %s child; the call waits until %s accepted or "
		 "destroyed%s", rc_fn_info[c->fn].name, (void *)o->handle,
		 x.n, x.n == 1 ? "" : "s", x.n == 1 ? "is" : "are",
		 x.n == 1 ? "its" : "their", x.n == 1 ? "it is" : "they are",
		 refuse ? " (not forwarded: the calling thread made the "
		 "child, so the call would never return; returns -1/EBUSY)" :
		 "");
	rc_report(&f);
	if (refuse)
		errno = EBUSY;
	return !refuse;
}

static inline bool check_pending_requests(struct rc_call *c,
					  const struct rc_obj *o)
{
	if (o->u.id.lib_held <= 0 || !(o->flags & RC_F_SYNC))
		return true;
	return pending_requests(c, o);
}

/* id->srq still set: the SRQ rdmacm made for the id leaks. */
static void check_srq(struct rc_call *c, const struct rc_obj *o)
{
	struct ibv_srq *srq = RC_ID(o)->srq;
	struct rc_finding f;
	struct rc_obj q;

	if (!srq || !rc_reg_get((uintptr_t)srq, &q) || q.kind != RC_K_SRQ ||
	    q.destroyed)
		return;
	rc_finding_init(&f, RC_R_ID_DESTROY_WITH_SRQ, c,
			"%s(%p): the cm id still has SRQ %p, which leaks "
			"(call rdma_destroy_srq first)",
			rc_fn_info[c->fn].name, (void *)o->handle, (void *)srq);
	rc_finding_add(&f, o, NULL);
	rc_finding_add(&f, &q, NULL);
	rc_report(&f);
}

/* Groups still joined: the kernel leaves them, our records would leak. */
static void check_joins(struct rc_call *c, const struct rc_obj *o)
{
	struct rc_finding f;

	if (o->u.id.joins <= 0)
		return;
	rc_finding_init(&f, RC_R_ID_DESTROY_WITH_MULTICAST, c,
			"%s(%p): %d multicast group%s still joined; "
			"librdmacm's join records leak (call "
			"rdma_leave_multicast first)", rc_fn_info[c->fn].name,
			(void *)o->handle, o->u.id.joins,
			o->u.id.joins == 1 ? "" : "s");
	rc_finding_add(&f, o, NULL);
	rc_report(&f);
}

/* Append ", what %p" to buf for each non-NULL object; returns the count. */
static unsigned list_objs(char *buf, size_t len, const char *const *what,
			  void *const *ptr, unsigned n)
{
	unsigned i, found = 0;
	size_t used = strlen(buf);

	for (i = 0; i < n; i++) {
		if (!ptr[i])
			continue;
		snprintf(buf + used, len - used, "%s%s %p",
			 found ? ", " : "", what[i], ptr[i]);
		used = strlen(buf);
		found++;
	}
	return found;
}

/*
 * id->qp still set.  rdma_destroy_id frees none of the id's verbs objects,
 * and once the id is gone only the program's own pointers reach them:
 * - CQs and completion channels librdmacm made for the QP (the program gave
 *   no send_cq/recv_cq) are freed only by rdma_destroy_qp: they leak now;
 * - an endpoint's QP was the endpoint's to free (rdma_destroy_ep): leaks;
 * - a QP on the program's own CQs can still go with ibv_destroy_qp (rping
 *   does that after rdma_destroy_id): only the man page's order is broken,
 *   a warning; if it is never destroyed, leak-qp says so at exit.
 */
static __attribute__((noinline)) void qp_left(struct rc_call *c,
					      const struct rc_obj *o)
{
	static const char *const what[] = {
		"send CQ", "receive CQ", "send completion channel",
		"receive completion channel",
	};
	struct rdma_cm_id *id = RC_ID(o);
	void *const lib[] = { id->send_cq,
			      id->recv_cq != id->send_cq ? id->recv_cq : NULL,
			      id->send_cq_channel,
			      id->recv_cq_channel != id->send_cq_channel ?
			      id->recv_cq_channel : NULL };
	char objs[200] = "";
	struct rc_finding f;
	struct rc_obj q;
	bool live, ep;

	/*
	 * A QP rdmacm made for the id (a program may put its own there);
	 * ibv_destroy_qp marks ours destroyed.
	 */
	live = rc_reg_get((uintptr_t)id->qp, &q) && q.kind == RC_K_QP &&
	       !q.destroyed;
	ep = live && (o->flags & RC_F_EP);
	if (list_objs(objs, sizeof(objs), what, lib, RC_ARRAY_SIZE(lib))) {
		rc_finding_init(&f, RC_R_ID_DESTROY_WITH_QP, c,
				"%s(%p): %s QP %p; the %s that librdmacm made "
				"for it leak%s (call rdma_destroy_qp %s)",
				rc_fn_info[c->fn].name, (void *)o->handle,
				live ? "the cm id still has" :
				"ibv_destroy_qp freed the cm id's",
				(void *)id->qp, objs,
				ep ? ", and so does the endpoint's QP" : "",
				live ? "first" : "instead");
	} else if (ep) {
		rc_finding_init(&f, RC_R_ID_DESTROY_WITH_QP, c,
				"%s(%p): the endpoint's QP %p leaks (release "
				"the endpoint with rdma_destroy_ep, or call "
				"rdma_destroy_qp first)",
				rc_fn_info[c->fn].name, (void *)o->handle,
				(void *)id->qp);
	} else if (live) {
		rc_finding_init(&f, RC_R_ID_DESTROY_WITH_QP, c,
				"%s(%p): the cm id still has QP %p; nothing "
				"leaks if the program destroys it later with "
				"ibv_destroy_qp, but rdma_destroy_id(3) asks "
				"for the QP to be freed first",
				rc_fn_info[c->fn].name, (void *)o->handle,
				(void *)id->qp);
		f.as_warning = true;
	} else {
		return;
	}
	rc_finding_add(&f, o, NULL);
	if (live)
		rc_finding_add(&f, &q, NULL);
	rc_report(&f);
}

static inline void check_qp(struct rc_call *c, const struct rc_obj *o)
{
	if (RC_ID(o)->qp)
		qp_left(c, o);
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct rc_lib_state lib;
	struct rc_enter e;
	struct rc_finding f;
	RC_CALL(c);
	struct rc_obj o;
	int ret, slot;

	RC_ENTER(c, rdma_destroy_id);
	if (c.skip)
		return RC_FWD_CLOSING(&c, RC_REAL(rdma_destroy_id)(id));
	if (c.internal) {
		if (!rc_reg_get((uintptr_t)id, &o) || o.kind != RC_K_ID ||
		    o.destroyed)
			o.handle = 0;
	} else {
		if (!rc_require_enter(&c, id, RC_DESTROY, &o, &e))
			return -1;
		if (o.handle && (!rc_ledger_check_unacked(&c, &o,
				RC_R_ID_DESTROY_WITH_UNACKED_EVENTS) ||
				 !check_pending_requests(&c, &o))) {
			rc_enter_undo(&c, &o, &e);
			return -1;
		}
		if (o.handle && !rc_inside_enter(&c, &o, &e))
			return -1;
		if (o.handle) {
			check_qp(&c, &o);
			check_srq(&c, &o);
			check_joins(&c, &o);
		}
		if (o.handle && (o.flags & RC_F_EP)) {
			rc_finding_init(&f,
				RC_R_ENDPOINT_DESTROYED_WITH_DESTROY_ID, &c,
				"rdma_destroy_id(%p): this id was made by "
				"rdma_create_ep; release it with "
				"rdma_destroy_ep", (void *)id);
			rc_finding_add(&f, &o, NULL);
			rc_report(&f);
		}
	}
	if (o.handle)
		rc_lib_snapshot(&o, &lib);
	slot = c.internal ? -1 : rc_watch_begin(&c, &o);
	ret = RC_FWD_CLOSING(&c, RC_REAL(rdma_destroy_id)(id));
	rc_watch_end(slot);
	if (ret == 0 && o.handle) {
		/* It acked id->event and freed a private channel.  Marked
		 * destroyed, the id is nobody's to be inside any more: no
		 * rc_inside_end (it would find the record destroyed). */
		lib.qp = lib.srq = (struct rc_ref){ 0, 0 };
		rc_lib_release(&c, &lib);
		if (!id_destroyed(&c, &o))
			rc_inside_end(&c);
	} else {
		rc_inside_end(&c);
	}
	return ret;
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	RC_CALL(c);
	struct rc_obj ai;
	int ret;

	RC_ENTER(c, rdma_create_ep);
	/*
	 * Only a freed list is an error: programs may build an
	 * rdma_addrinfo of their own, which we never saw created.
	 */
	if (!c.skip && !c.internal && res &&
	    rc_reg_get((uintptr_t)res, &ai) && ai.kind == RC_K_ADDRINFO &&
	    ai.destroyed && !rc_require(&c, RC_K_ADDRINFO, res, RC_USE, &ai))
		return -1;
	if (!c.skip && !rc_arg_readable(&c, "res", res, sizeof(*res), true))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_create_ep)(id, res, pd, qp_init_attr));
	if (ret == 0 && !c.skip && id && *id) {
		rc_track_id(&c, *id, RC_F_SYNC | RC_F_EP |
			    (c.internal ? RC_F_LIB : 0), NULL, &ai);
		rc_qp_set_owner(&ai);
		rc_settle_id(&c, *id);
	}
	return ret;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	struct rc_lib_state lib;
	RC_CALL(c);
	struct rc_obj o;
	int slot = -1;

	RC_ENTER(c, rdma_destroy_ep);
	o.handle = 0;
	if (c.internal && (!rc_reg_get((uintptr_t)id, &o) ||
			   o.kind != RC_K_ID || o.destroyed))
		o.handle = 0;
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_DESTROY, &o))
			return;
		if (o.handle && !rc_ledger_check_unacked(&c, &o,
				RC_R_ID_DESTROY_WITH_UNACKED_EVENTS))
			return;
		if (o.handle && !check_pending_requests(&c, &o))
			return;
		if (o.handle && !rc_inside_begin(&c, &o))
			return;
		if (o.handle && RC_ID(&o)->qp &&
		    !rc_qp_check_destroy(&c, RC_ID(&o), NULL)) {
			rc_inside_end(&c);
			return;
		}
	}
	if (c.skip)
		o.handle = 0;
	if (o.handle)
		rc_lib_snapshot(&o, &lib);
	if (!c.skip && !c.internal)
		slot = rc_watch_begin(&c, &o);
	RC_FWDV_CLOSING(&c, RC_REAL(rdma_destroy_ep)(id));
	rc_watch_end(slot);
	rc_inside_end(&c);
	/*
	 * The QP, SRQ and id go in nested calls, seen only when the library
	 * makes them through the PLT: whatever is still recorded goes now.
	 */
	if (o.handle) {
		rc_lib_release(&c, &lib);
		id_destroyed(&c, &o);
	}
}

struct move_arg {
	struct rc_ref channel;
	bool sync;
	bool user;
};

static void move_fn(struct rc_obj *o, void *arg)
{
	struct move_arg *a = arg;

	o->u.id.channel = a->channel;
	if (a->sync)
		o->flags |= RC_F_SYNC;
	else
		o->flags &= ~RC_F_SYNC;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct rc_finding f;
	struct move_arg a;
	RC_CALL(c);
	struct rc_obj o, ch;
	int ret, slot;

	RC_ENTER(c, rdma_migrate_id);
	if (c.skip)
		return RC_FWD_CLOSING(&c,
				      RC_REAL(rdma_migrate_id)(id, channel));
	if (c.internal) {
		if (!rc_reg_get((uintptr_t)id, &o) || o.kind != RC_K_ID ||
		    o.destroyed)
			o.handle = 0;
	} else {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o))
			return -1;
		if (channel &&
		    !rc_require(&c, RC_K_CHANNEL, channel, RC_USE, &ch))
			return -1;
		if (o.handle && !channel && (o.flags & RC_F_SYNC)) {
			rc_finding_init(&f, RC_R_MIGRATE_SYNC_TO_SYNC, &c,
					"rdma_migrate_id(%p, NULL): the id is "
					"already synchronous (EINVAL)",
					(void *)id);
			rc_finding_add(&f, &o, NULL);
			rc_report(&f);
		}
		if (o.handle && !rc_ledger_check_unacked(&c, &o,
				RC_R_MIGRATE_WITH_UNACKED_EVENTS))
			return -1;
		if (o.handle && !rc_inside_begin(&c, &o))
			return -1;
	}
	slot = c.internal ? -1 : rc_watch_begin(&c, &o);
	ret = RC_FWD_CLOSING(&c, RC_REAL(rdma_migrate_id)(id, channel));
	rc_watch_end(slot);
	rc_inside_end(&c);
	if (ret)
		return ret;
	if (!o.handle) {
		/*
		 * librdmacm migrates a connect request's new id to a private
		 * channel before handing the event out: first sight of it.
		 */
		rc_track_id(&c, id, RC_F_SYNC | RC_F_LIB, NULL, NULL);
		return ret;
	}
	a.channel = channel_ref(id->channel);
	a.sync = channel == NULL;
	if (rc_reg_update(o.handle, o.gen, move_fn, &a)) {
		RC_REG_ADD(a.channel, u.ch.nids, 1);
		rc_id_left_channel(&c, o.u.id.channel);
	}
	if (!c.internal)
		rc_settle_id(&c, id);
	return ret;
}

struct adopt_arg {
	struct rc_ref parent;
};

/* A child of rdma_get_request now belongs to the user. */
static void adopt_fn(struct rc_obj *o, void *arg)
{
	struct adopt_arg *a = arg;

	o->flags &= ~RC_F_LIB;
	o->flags |= RC_F_CHILD | RC_F_SYNC;
	o->u.id.parent = a->parent;
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rc_finding f;
	struct adopt_arg a;
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	RC_ENTER(c, rdma_get_request);
	o.handle = 0;
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, listen, RC_USE, &o))
			return -1;
		if (o.handle && !(o.flags & RC_F_SYNC)) {
			rc_finding_init(&f, RC_R_GET_REQUEST_ON_ASYNC_LISTENER,
					&c, "rdma_get_request(%p): the listener "
					"has a user event channel (EINVAL); "
					"use rdma_get_cm_event",
					(void *)listen);
			rc_finding_add(&f, &o, NULL);
			rc_report(&f);
		}
	}
	if (o.handle && !rc_inside_begin(&c, &o))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_get_request)(listen, id));
	rc_inside_end(&c);
	/* rsocket's listen thread keeps its children: library-owned. */
	if (c.skip || c.internal)
		return ret;
	/* A failure leaves its event in listen->event. */
	if (o.handle)
		rc_settle_id(&c, listen);
	if (ret || !id || !*id)
		return ret;
	a.parent = o.handle ? rc_ref_of(&o) : (struct rc_ref){ 0, 0 };
	if (!rc_update_live(*id, RC_K_ID, adopt_fn, &a))
		rc_track_id(&c, *id, RC_F_CHILD | RC_F_SYNC,
			    o.handle ? &o : NULL, NULL);
	/* Its private channel, its CONNECT_REQUEST (charged to the
	 * listener) and, on a passive endpoint, its QP. */
	rc_settle_id(&c, *id);
	return ret;
}

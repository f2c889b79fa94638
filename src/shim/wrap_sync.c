/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_sync.c - what librdmacm keeps for an id, derived from the state a
 * user call leaves behind: the private channel of a synchronous id, the
 * event the library keeps in id->event (acked by the library itself at the
 * next synchronous call or at destroy), and the QP and SRQ it made for the
 * id (rdma_create_ep, rdma_get_request on a passive endpoint).
 *
 * Where the library's calls to its own exports go through the PLT, the
 * wrappers see them and record the same objects first; settling then only
 * confirms.  A librdmacm linked with -Bsymbolic-functions (Ubuntu's) makes
 * those calls directly, and this is then the only record of them, so the
 * findings are the same on both kinds of build.
 */
#include <string.h>
#include <rdma/rdma_cma.h>

#include "shim/call.h"
#include "shim/settle.h"
#include "shim/cm.h"
#include "shim/verbs.h"
#include "shim/fd.h"

/* The id a library-held event is charged to: CONNECT_REQUEST the listener. */
static uintptr_t charged_to(const struct rdma_cm_event *ev, uintptr_t self)
{
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->listen_id)
		return (uintptr_t)ev->listen_id;
	return self;
}

static struct rc_ref live_ref(uintptr_t h, enum rc_kind kind)
{
	struct rc_obj o;

	if (h && rc_reg_get(h, &o) && o.kind == kind && !o.destroyed)
		return rc_ref_of(&o);
	return (struct rc_ref){ 0, 0 };
}

static bool ref_live(struct rc_ref r, enum rc_kind kind, struct rc_obj *o)
{
	return r.h && rc_reg_get(r.h, o) && o->gen == r.gen &&
	       o->kind == kind && !o->destroyed;
}

/* A library-held event the library has acked (or is about to free). */
static void drop_lib_event(struct rc_call *c, struct rc_ref r)
{
	struct rc_obj e;

	if (!r.h)
		return;
	if (rc_reg_get(r.h, &e) && e.gen == r.gen && e.kind == RC_K_EVENT &&
	    !e.destroyed && (e.flags & RC_F_LIB) &&
	    rc_reg_destroy(e.handle, e.gen, c->tid, rc_call_stack(c)))
		rc_event_settle(&e, -1);
}

struct lib_event_arg {
	struct rc_ref ev;
};

static void set_lib_event_fn(struct rc_obj *o, void *arg)
{
	if (!o->destroyed)
		o->u.id.lib_event = ((struct lib_event_arg *)arg)->ev;
}

/* id->event now holds ev (or nothing): make the ledger say so. */
static void settle_event(struct rc_call *c, const struct rc_obj *o,
			 struct rdma_cm_event *ev)
{
	struct lib_event_arg a = { { 0, 0 } };
	struct rc_obj e, charged;
	uintptr_t to;

	if (ev && rc_reg_get((uintptr_t)ev, &e) && e.kind == RC_K_EVENT &&
	    !e.destroyed) {
		to = charged_to(ev, o->handle);
		/* Already recorded by the library's own (visible) fetch, or by
		 * an earlier settle; a reused address holds a new event. */
		if ((e.flags & RC_F_LIB) && e.u.ev.type == (int)ev->event &&
		    e.u.ev.id.h == to) {
			a.ev = rc_ref_of(&e);
			goto done;
		}
		if (!(e.flags & RC_F_LIB))
			goto done;	/* the user's own: not ours to keep */
		drop_lib_event(c, rc_ref_of(&e));
	}
	if (ev) {
		rc_obj_init(c, RC_K_EVENT, ev, RC_F_LIB, &e);
		to = charged_to(ev, o->handle);
		if (RC_REG_GET_ADD(to, RC_K_ID, u.id.lib_held, 1, &charged))
			e.u.ev.id = rc_ref_of(&charged);
		e.u.ev.channel = o->u.id.channel;
		e.u.ev.ev_id = (uintptr_t)ev->id;
		e.u.ev.type = ev->event;
		e.u.ev.holder = c->tid;
		if (rc_reg_insert(&e))
			a.ev = rc_ref_of(&e);
		else
			RC_REG_ADD(e.u.ev.id, u.id.lib_held, -1);
	}
done:
	if (o->u.id.lib_event.h != a.ev.h || o->u.id.lib_event.gen != a.ev.gen)
		drop_lib_event(c, o->u.id.lib_event);
	rc_reg_update(o->handle, o->gen, set_lib_event_fn, &a);
}

struct channel_arg {
	struct rc_ref channel;
};

static void set_channel_fn(struct rc_obj *o, void *arg)
{
	if (!o->destroyed)
		o->u.id.channel = ((struct channel_arg *)arg)->channel;
}

/* A synchronous id's private channel: librdmacm made it for the id. */
static void settle_channel(struct rc_call *c, const struct rc_obj *o,
			   struct rdma_event_channel *ch)
{
	struct channel_arg a;
	struct rc_obj rec;

	if (o->u.id.channel.h == (uintptr_t)ch &&
	    ref_live(o->u.id.channel, RC_K_CHANNEL, &rec))
		return;
	a.channel = live_ref((uintptr_t)ch, RC_K_CHANNEL);
	if (a.channel.h) {
		RC_REG_ADD(a.channel, u.ch.nids, 1);
	} else {
		rc_obj_init(c, RC_K_CHANNEL, ch, RC_F_LIB, &rec);
		rec.u.ch.nids = 1;
		rec.u.ch.fd = ch->fd;
		if (rc_reg_insert(&rec)) {
			a.channel = rc_ref_of(&rec);
			rc_fd_track(ch->fd, &rec);
		}
	}
	rc_reg_update(o->handle, o->gen, set_channel_fn, &a);
	rc_id_left_channel(c, o->u.id.channel);
}

void rc_settle_id(struct rc_call *c, struct rdma_cm_id *id)
{
	struct rc_obj o;

	if (!id || !rc_reg_get((uintptr_t)id, &o) || o.kind != RC_K_ID ||
	    o.destroyed)
		return;
	if ((o.flags & RC_F_SYNC) && id->channel)
		settle_channel(c, &o, id->channel);
	/* The id's channel reference may have changed: read it again. */
	if (!rc_reg_get((uintptr_t)id, &o) || o.kind != RC_K_ID ||
	    o.destroyed)
		return;
	if ((o.flags & RC_F_SYNC) || o.u.id.lib_event.h)
		settle_event(c, &o, (o.flags & RC_F_SYNC) ? id->event : NULL);
	if (id->qp)
		rc_track_owned(c, id, &o, RC_K_QP, id->qp);
	if (id->srq)
		rc_track_owned(c, id, &o, RC_K_SRQ, id->srq);
}

void rc_lib_snapshot(const struct rc_obj *o, struct rc_lib_state *s)
{
	struct rdma_cm_id *id = RC_ID(o);

	memset(s, 0, sizeof(*s));
	s->lib_event = o->u.id.lib_event;
	s->qp = live_ref((uintptr_t)id->qp, RC_K_QP);
	s->srq = live_ref((uintptr_t)id->srq, RC_K_SRQ);
}

void rc_lib_release(struct rc_call *c, const struct rc_lib_state *s)
{
	struct rc_obj q;

	drop_lib_event(c, s->lib_event);
	if (ref_live(s->qp, RC_K_QP, &q))
		rc_v_gone(c, &q);
	if (ref_live(s->srq, RC_K_SRQ, &q))
		rc_v_gone(c, &q);
}

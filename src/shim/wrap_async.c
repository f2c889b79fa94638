/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_async.c - async events (ibv_get_async_event, ibv_ack_async_event):
 * async-event-double-ack and async-event-ack-unknown; the counts that
 * destroy-with-unacked-async-events reads.
 *
 * An ack in libibverbs is by content, not by address: it adds one to the
 * events_completed count of the QP, CQ, SRQ or WQ the event names (port
 * and device events need no ack), and the destroy of that object waits
 * until the count equals the kernel's count of events read for it.  So
 * the events are counted per object, as the library does: an ack with
 * nothing left to ack is one too many, and the destroy then never returns.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/threads.h"
#include "shim/verbs.h"
#include "shim/wr.h"

enum rc_kind rc_v_async_kind(int type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return RC_K_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return RC_K_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return RC_K_SRQ;
	case IBV_EVENT_WQ_FATAL:
		return RC_K_WQ;
	default:
		return RC_K_COUNT;
	}
}

static const char *event_name(int type)
{
	static const char *const names[] = {
		"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR",
		"COMM_EST", "SQ_DRAINED", "PATH_MIG", "PATH_MIG_ERR",
		"DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR", "LID_CHANGE",
		"PKEY_CHANGE", "SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED",
		"QP_LAST_WQE_REACHED", "CLIENT_REREGISTER", "GID_CHANGE",
		"WQ_FATAL",
	};

	if (type >= 0 && type < (int)RC_ARRAY_SIZE(names))
		return names[type];
	return "UNKNOWN";
}

struct fetch_arg {
	enum rc_kind kind;
	pid_t tid;
	uint32_t tgen;
	bool user;
	bool found;
	uint32_t gen;
	bool want_stack;
};

static void fetch_fn(struct rc_obj *o, void *arg)
{
	struct fetch_arg *a = arg;
	struct rc_evhold *e = &o->u.vb.async_ev;

	if (o->kind != a->kind || o->destroyed)
		return;
	a->found = true;
	a->gen = o->gen;
	o->u.vb.async_seen++;
	if (o->u.vb.async_unacked++ == 0) {
		e->tid = a->tid;
		e->tgen = a->tgen;
		e->multi = 0;
		e->user = a->user;
		a->want_stack = true;	/* rare: always capture */
	} else {
		e->multi |= e->tid != a->tid;
		e->user |= a->user;
	}
}

static void stack_fn(struct rc_obj *o, void *arg)
{
	o->u.vb.async_ev.stack = *(rc_stack_id *)arg;
}

int ibv_get_async_event(struct ibv_context *context,
			struct ibv_async_event *event)
{
	struct fetch_arg a;
	struct rc_obj o;
	rc_stack_id st;
	void *elem;
	RC_CALL(c);
	int ret;

	RC_V_ENTER(c, ibv_get_async_event);
	/* A closed context: its fd number may be another file's by now. */
	if (!c.internal && !rc_v_require(&c, RC_K_CONTEXT, context, RC_USE,
					 &o)) {
		errno = EINVAL;
		return -1;
	}
	ret = RC_FWD(&c, RC_REAL(ibv_get_async_event)(context, event));
	if (ret || !event)
		return ret;
	if (event->event_type == IBV_EVENT_CQ_ERR)
		rc_wr_cq_lost(event->element.cq);
	a.kind = rc_v_async_kind(event->event_type);
	if (a.kind == RC_K_COUNT)
		return ret;
	elem = a.kind == RC_K_CQ ? (void *)event->element.cq :
	       a.kind == RC_K_QP ? (void *)event->element.qp :
	       a.kind == RC_K_SRQ ? (void *)event->element.srq :
	       (void *)event->element.wq;
	a.tid = c.tid;
	a.tgen = c.internal ? 0 : rc_thread_self(&c);
	a.user = !c.internal;
	a.found = a.want_stack = false;
	rc_reg_update((uintptr_t)elem, 0, fetch_fn, &a);
	if (!a.found) {
		/* Made where we could not see: known from now on. */
		rc_v_track(&c, a.kind, elem, NULL, RC_F_SEEN, &o);
		rc_reg_update((uintptr_t)elem, 0, fetch_fn, &a);
	}
	if (a.want_stack) {
		st = rc_call_stack(&c);
		rc_reg_update((uintptr_t)elem, a.gen, stack_fn, &st);
	}
	return ret;
}

struct ack_arg {
	enum rc_kind kind;
	bool found;
	bool took;
	int seen;
};

static void ack_fn(struct rc_obj *o, void *arg)
{
	struct ack_arg *a = arg;

	if (o->kind != a->kind || o->destroyed)
		return;
	a->found = true;
	a->seen = o->u.vb.async_seen;
	if (o->u.vb.async_unacked > 0 || !rc_opt.protect) {
		a->took = o->u.vb.async_unacked > 0;
		if (--o->u.vb.async_unacked <= 0)
			o->u.vb.async_ev.tid = 0;
	}
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct ibv_async_event ev;
	struct rc_finding f;
	struct ack_arg a;
	struct rc_obj o;
	RC_CALL(c);
	void *elem;

	RC_V_ENTER(c, ibv_ack_async_event);
	if (!rc_peek(&ev, event, sizeof(ev))) {
		/* The library reads its type and element: it would crash. */
		if (!c.internal) {
			rc_finding_init(&f, RC_R_ASYNC_EVENT_ACK_UNKNOWN, &c,
					"ibv_ack_async_event(%p): not an "
					"event: %s%s", (void *)event,
					event ? "the memory is not mapped" :
					"NULL", rc_opt.protect ?
					"; not forwarded" : "");
			rc_report(&f);
			if (rc_opt.protect)
				return;
		}
		RC_FWDV(&c, RC_REAL(ibv_ack_async_event)(event));
		return;
	}
	a.kind = rc_v_async_kind(ev.event_type);
	if (a.kind == RC_K_COUNT) {	/* port and device events: no-op */
		RC_FWDV(&c, RC_REAL(ibv_ack_async_event)(event));
		return;
	}
	elem = a.kind == RC_K_CQ ? (void *)ev.element.cq :
	       a.kind == RC_K_QP ? (void *)ev.element.qp :
	       a.kind == RC_K_SRQ ? (void *)ev.element.srq :
	       (void *)ev.element.wq;
	/* Settled first: the object may go as soon as the ack is in. */
	a.found = a.took = false;
	a.seen = 0;
	rc_reg_update((uintptr_t)elem, 0, ack_fn, &a);
	if (c.internal || (a.found && a.took)) {
		RC_FWDV(&c, RC_REAL(ibv_ack_async_event)(event));
		return;
	}
	if (!a.found && !rc_v_require(&c, a.kind, elem, RC_USE, &o))
		return;		/* destroyed: reported, refused */
	if (a.found && a.seen > 0)
		rc_finding_init(&f, RC_R_ASYNC_EVENT_DOUBLE_ACK, &c,
				"ibv_ack_async_event(%p): %s event for %s %p "
				"acked again: every async event fetched for it "
				"was acked already, and its destroy would wait "
				"forever%s", (void *)event,
				event_name(ev.event_type),
				rc_kind_text(a.kind), elem,
				rc_opt.protect ? "; not forwarded" : "");
	else
		rc_finding_init(&f, RC_R_ASYNC_EVENT_ACK_UNKNOWN, &c,
				"ibv_ack_async_event(%p): no %s event for %s "
				"%p was returned by ibv_get_async_event%s",
				(void *)event, event_name(ev.event_type),
				rc_kind_text(a.kind), elem,
				rc_opt.protect ? "; not forwarded" : "");
	if (a.found && rc_v_live(elem, a.kind, &o))
		rc_finding_add(&f, &o, NULL);
	rc_report(&f);
	if (!rc_opt.protect)
		RC_FWDV(&c, RC_REAL(ibv_ack_async_event)(event));
}

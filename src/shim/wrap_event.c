/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_event.c - the event ledger's entries: rdma_get_cm_event charges
 * each event to an id (CONNECT_REQUEST to the listener) and to its channel,
 * records who fetched it, and registers the new id a CONNECT_REQUEST
 * carries; rdma_ack_cm_event checks event-double-ack, event-ack-unknown
 * and ack-library-owned-event, settles the accounts and leaves the
 * event's parameter pointers with the ledger (event-use-after-ack).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/threads.h"
#include "shim/settle.h"
#include "shim/cm.h"

struct child_arg {
	struct rc_ref parent;
	bool user;
};

static void child_fn(struct rc_obj *o, void *arg)
{
	struct child_arg *a = arg;

	o->flags |= RC_F_CHILD;
	o->u.id.parent = a->parent;
	if (a->user)
		o->flags &= ~RC_F_LIB;
}

/*
 * The new id of a CONNECT_REQUEST: known already if its migration was
 * seen.  A synchronous listener's child is synchronous too, with a
 * private channel of its own.
 */
static void track_child(struct rc_call *c, struct rdma_cm_event *ev,
			const struct rc_obj *listener)
{
	struct child_arg a = { { 0, 0 }, !c->internal };
	bool sync = listener && (listener->flags & RC_F_SYNC);

	if (listener)
		a.parent = rc_ref_of(listener);
	if (!rc_update_live(ev->id, RC_K_ID, child_fn, &a))
		rc_track_id(c, ev->id, RC_F_CHILD | (sync ? RC_F_SYNC : 0) |
			    (c->internal ? RC_F_LIB : 0), listener, NULL);
	if (sync && !c->internal)
		rc_settle_id(c, ev->id);
}

/*
 * A waiter cancelled inside the blocking call no longer waits.  It never
 * comes back to fetched(), and a cleanup handler would cost every call a
 * setjmp: the channel it waits on is in thread-local storage, and the
 * thread's key destructor takes it out of the waiters (before
 * pthread_join returns, as cqcount.c does for completion channels).
 */
static RC_TLS struct {
	uintptr_t h;		/* 0: not waiting */
	uint32_t gen;
	struct rc_tally_cell *cell;
} waiting_on;
static RC_TLS bool wait_keyed;
static pthread_key_t wait_key;
static pthread_once_t wait_once = PTHREAD_ONCE_INIT;

static void waiter_exit(void *arg)
{
	struct rc_obj ch;

	(void)arg;
	if (!waiting_on.h)
		return;
	memset(&ch, 0, sizeof(ch));
	ch.handle = waiting_on.h;
	ch.gen = waiting_on.gen;
	ch.kind = RC_K_CHANNEL;
	ch.u.ch.cell = waiting_on.cell;
	waiting_on.h = 0;
	rc_tally_add_obj(&ch, RC_T_CH_WAITERS, -1, NULL);
}

static void wait_make_key(void)
{
	if (pthread_key_create(&wait_key, waiter_exit))
		wait_key = (pthread_key_t)-1;
}

/* Once per thread.  Without a key (none left) a cancelled waiter stays
 * counted, as it would without the shim seeing the cancel. */
static __attribute__((noinline)) void wait_key_thread(void)
{
	pthread_once(&wait_once, wait_make_key);
	if (wait_key != (pthread_key_t)-1 &&
	    !pthread_setspecific(wait_key, (void *)1))
		wait_keyed = true;
}

/*
 * rdma_get_cm_event came back after another thread destroyed the channel
 * it was blocked on: with an event for ids the program gave up on, or with
 * an error from the library working on the freed channel (the real stack
 * fails with EBADF when the request it read cannot be set up on the closed
 * fd).  Either way the library ran on freed memory.
 */
static void report_returned_into(struct rc_call *c, const struct rc_obj *ch,
				 struct rdma_cm_event *ev)
{
	struct rc_finding f;
	struct rc_obj now;

	if (!rc_reg_get(ch->handle, &now) || now.gen != ch->gen)
		now = *ch;	/* forgotten already: no destroy stack */
	if (ev)
		rc_finding_init(&f, RC_R_USE_AFTER_DESTROY, c,
				"rdma_get_cm_event(%p): returned a %s event "
				"after the channel was destroyed while this "
				"thread was blocked in it", (void *)ch->handle,
				rc_event_name(ev->event));
	else
		rc_finding_init(&f, RC_R_USE_AFTER_DESTROY, c,
				"rdma_get_cm_event(%p): failed (errno %d) after "
				"the channel was destroyed while this thread "
				"was blocked in it", (void *)ch->handle, c->err);
	rc_finding_add(&f, &now, NULL);
	rc_report(&f);
}

/* An interrupted or non-blocking wait never touched the channel's state. */
static bool failed_on_channel(int err)
{
	return err != EINTR && err != EAGAIN && err != EWOULDBLOCK;
}

/* The counts an event charges: atomics in the records' cells (those
 * the fetch found: no lookup), no lock. */
void rc_event_settle(const struct rc_obj *e, int delta)
{
	if (e->flags & RC_F_LIB) {
		rc_tally_add_cell(e->u.ev.id, e->u.ev.id_cell,
				  RC_T_ID_LIB_HELD, delta, NULL);
	} else {
		rc_tally_add_cell(e->u.ev.id, e->u.ev.id_cell,
				  RC_T_ID_UNACKED, delta, NULL);
		rc_tally_add_cell(e->u.ev.channel, e->u.ev.ch_cell,
				  RC_T_CH_UNACKED, delta, NULL);
		if (e->u.ev.mc.h)	/* a multicast event's group */
			rc_tally_add(e->u.ev.mc, RC_T_MC_UNACKED, delta,
				     NULL);
	}
}

/* After the real call: the channel's waiters, the event's charges. */
static int fetched(struct rc_call *c, const struct rc_obj *ch, int ret,
		   struct rdma_cm_event **event)
{
	struct rc_ref idref = { 0, 0 };
	struct rc_tally_cell *idcell = NULL;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *charged;
	struct rc_obj id, e;
	bool gone = false;

	/* Out of the waiters (gone: the channel was destroyed meanwhile). */
	if (ch->handle &&
	    !rc_tally_add_obj(ch, RC_T_CH_WAITERS, -1, NULL))
		gone = true;
	if (gone && !c->internal && ret && failed_on_channel(c->err))
		report_returned_into(c, ch, NULL);
	if (ret || !event || !*event)
		return ret;
	ev = *event;
	if (gone && !c->internal)
		report_returned_into(c, ch, ev);

	/*
	 * The charges: one more event on the id (CONNECT_REQUEST: on the
	 * listener, whose record the child's needs) and, the user's, on the
	 * channel; atomics in the records' cells.
	 */
	charged = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ?
		  ev->listen_id : ev->id;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (c->internal ?
		    RC_REG_GET_ADD((uintptr_t)charged, RC_K_ID, u.id.lib_held,
				   1, &id) :
		    RC_REG_GET_ADD((uintptr_t)charged, RC_K_ID, u.id.unacked,
				   1, &id)) {
			idref = rc_ref_of(&id);
			idcell = id.u.id.cell;
		}
		if (ev->id)
			track_child(c, ev, idref.h ? &id : NULL);
	} else {
		rc_tally_find_add((uintptr_t)charged, RC_K_ID,
				  c->internal ? RC_T_ID_LIB_HELD :
				  RC_T_ID_UNACKED, 1, &idref, &idcell);
	}
	if (ch->handle && !c->internal && !gone)
		rc_tally_add_obj(ch, RC_T_CH_UNACKED, 1, NULL);

	rc_obj_init(c, RC_K_EVENT, ev, c->internal ? RC_F_LIB : 0, &e);
	e.u.ev.id = idref;
	e.u.ev.id_cell = idcell;
	if (ch->handle) {
		e.u.ev.channel = rc_ref_of(ch);
		e.u.ev.ch_cell = ch->u.ch.cell;
	}
	e.u.ev.ev_id = (uintptr_t)ev->id;
	e.u.ev.type = ev->event;
	e.u.ev.holder = c->tid;
	if (!c->internal)
		e.u.ev.holder_gen = rc_thread_self(c);
	/* A multicast event also counts for its group (rare: a scan). */
	if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN ||
	    ev->event == RDMA_CM_EVENT_MULTICAST_ERROR)
		e.u.ev.mc = rc_mcast_of_event((uintptr_t)ev->id,
					      ev->param.ud.private_data);
	if (!c->internal && e.u.ev.mc.h)
		rc_tally_add(e.u.ev.mc, RC_T_MC_UNACKED, 1, NULL);
	/* Untracked after all: take the counts back. */
	if (!rc_reg_insert(&e))
		rc_event_settle(&e, -1);
	return ret;
}


/* The forward, a cancellation point: the channel waited on is this
 * thread's (see waiter_exit), the previous one's again after (nested: a
 * handler's call). */
static inline int get_blocking(struct rc_call *c,
			       struct rdma_event_channel *channel,
			       struct rdma_cm_event **event,
			       const struct rc_obj *ch)
{
	__typeof__(waiting_on) prev = waiting_on;
	int ret;

	if (ch->handle) {
		if (RC_UNLIKELY(!wait_keyed))
			wait_key_thread();
		waiting_on.h = ch->handle;
		waiting_on.gen = ch->gen;
		waiting_on.cell = ch->u.ch.cell;
	}
	ret = RC_FWD(c, RC_REAL(rdma_get_cm_event)(channel, event));
	waiting_on = prev;
	return ret;
}

int rdma_get_cm_event(struct rdma_event_channel *channel,
		      struct rdma_cm_event **event)
{
	struct rc_finding f;
	struct rc_obj ch;
	RC_CALL(c);
	int ret;

	RC_ENTER(c, rdma_get_cm_event);
	if (c.skip)
		return RC_FWD(&c, RC_REAL(rdma_get_cm_event)(channel, event));
	/* Look the channel up and count this thread in: in its cell, one
	 * atomic operation (ch then has the header only). */
	if (!rc_count_live(&c, RC_K_CHANNEL, channel, RC_T_CH_WAITERS, 1,
			   &ch)) {
		ch.handle = 0;
		if (!c.internal &&
		    !rc_require(&c, RC_K_CHANNEL, channel, RC_USE, &ch))
			return -1;
		if (ch.handle)	/* created meanwhile: count us in now */
			RC_REG_ADD(rc_ref_of(&ch), u.ch.waiters, 1);
	}
	if (!c.internal && ch.handle && (ch.flags & RC_F_LIB)) {
		struct rc_obj rec;

		rc_finding_init(&f, RC_R_GET_EVENT_ON_PRIVATE_CHANNEL, &c,
				"rdma_get_cm_event(%p): this is the private "
				"channel of a synchronous cm id; the event "
				"belongs to librdmacm", (void *)channel);
		/* The whole record: where it was made. */
		if (!rc_reg_get(ch.handle, &rec) || rec.gen != ch.gen)
			rec = ch;
		rc_finding_add(&f, &rec, NULL);
		rc_report(&f);
	}
	ret = get_blocking(&c, channel, event, &ch);
	return fetched(&c, &ch, ret, event);
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct rc_ack a = { event, 0, 0, 0 };
	enum rc_take took;
	struct rc_finding f;
	RC_CALL(c);
	struct rc_obj e;
	bool lib;

	RC_ENTER(c, rdma_ack_cm_event);
	if (c.skip)
		return RC_FWD(&c, RC_REAL(rdma_ack_cm_event)(event));
	/*
	 * Mark it acked before forwarding: once freed, the address may come
	 * back from another thread's rdma_get_cm_event at once.  A user's
	 * ack of the library's event is refused with protect=1: keep those.
	 */
	lib = !c.internal && rc_opt.protect;
	took = rc_reg_take_fn((uintptr_t)event, RC_K_EVENT,
			      lib ? RC_F_LIB : 0, c.tid, rc_call_stack(&c),
			      c.internal ? NULL : rc_ledger_note, &a, &e);
	if (took == RC_TAKE_TAKEN) {
		if (!c.internal)
			rc_ledger_index(&e, &a);
		rc_event_settle(&e, -1);
	}
	if (c.internal)
		return RC_FWD(&c, RC_REAL(rdma_ack_cm_event)(event));
	if (took == RC_TAKE_DESTROYED) {
		rc_finding_init(&f, RC_R_EVENT_DOUBLE_ACK, &c,
				"rdma_ack_cm_event(%p): event already acked "
				"(a double free)%s", (void *)event,
				rc_opt.protect ? "; not forwarded" : "");
		rc_finding_add(&f, &e, "%s event", rc_event_name(e.u.ev.type));
		rc_report(&f);
		if (rc_opt.protect) {
			errno = EINVAL;
			return -1;
		}
	} else if (took == RC_TAKE_NONE && !rc_reg_degraded()) {
		rc_finding_init(&f, RC_R_EVENT_ACK_UNKNOWN, &c,
				"rdma_ack_cm_event(%p): not an event from "
				"rdma_get_cm_event%s", (void *)event,
				event && rc_opt.protect ?
				"; not forwarded" : "");
		rc_report(&f);
		/* NULL is harmless: the library answers EINVAL. */
		if (event && rc_opt.protect) {
			errno = EINVAL;
			return -1;
		}
	} else if (took == RC_TAKE_KEPT ||
		   (took == RC_TAKE_TAKEN && (e.flags & RC_F_LIB))) {
		rc_finding_init(&f, RC_R_ACK_LIBRARY_OWNED_EVENT, &c,
				"rdma_ack_cm_event(%p): librdmacm fetched this "
				"event and will ack it itself%s",
				(void *)event,
				rc_opt.protect ? "; not forwarded" : "");
		rc_finding_add(&f, &e, "%s event", rc_event_name(e.u.ev.type));
		rc_report(&f);
		if (rc_opt.protect)
			return 0;
	}
	return RC_FWD(&c, RC_REAL(rdma_ack_cm_event)(event));
}

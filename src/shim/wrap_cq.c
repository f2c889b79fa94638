/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_cq.c - completion channels, CQs and their completion events:
 * comp-channel-destroy-with-cqs, cq-destroy-with-qps,
 * cq-destroy-with-unacked-events, cq-events-over-acked and
 * cq-destroy-while-waiting.
 *
 * ibv_destroy_cq waits until every event ibv_get_cq_event returned for the
 * CQ was acked with ibv_ack_cq_events (libibverbs compares its count of
 * acks with the kernel's count of events read), so one ack missing, or one
 * too many, is a hang.  The events are only counted, per CQ, without a
 * lock (cqcount.c): a get or an ack is one lookup, one atomic and no stack
 * capture (event-driven programs make them once per completion).  Who
 * fetched the first of the events still unacked, and where, is kept; the
 * stack only when that happens at a new call site.
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
#include "shim/cqcount.h"
#include "shim/fd.h"

/* ---- completion channels ---------------------------------------------- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch;
	struct rc_v_links l;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_create_comp_channel);
	if (!c.internal && !rc_v_require(&c, RC_K_CONTEXT, context, RC_USE,
					 &o)) {
		errno = EINVAL;
		return NULL;
	}
	ch = RC_FWD(&c, RC_REAL(ibv_create_comp_channel)(context));
	if (!ch)
		return NULL;
	memset(&l, 0, sizeof(l));
	l.parent = context;
	l.pkind = RC_K_CONTEXT;
	rc_v_track(&c, RC_K_COMP_CHANNEL, ch, &l, 0, &o);
	if (o.gen)
		rc_fd_track(ch->fd, &o);
	return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	RC_NEED_REAL(ibv_destroy_comp_channel);
	if (!rc_v_begin(&c, RC_FN_ibv_destroy_comp_channel,
			(uintptr_t)__builtin_return_address(0)))
		return RC_FWD_CLOSING(&c,
				RC_REAL(ibv_destroy_comp_channel)(channel));
	if (c.internal) {
		if (!rc_v_live(channel, RC_K_COMP_CHANNEL, &o))
			o.handle = 0;
	} else {
		if (!rc_v_require(&c, RC_K_COMP_CHANNEL, channel, RC_DESTROY,
				  &o))
			return EINVAL;
		if (o.handle && !rc_v_check_lib(&c, &o))
			return EBUSY;
		if (o.handle && o.u.vb.nusers > 0)
			rc_v_report_related(&c,
				RC_R_COMP_CHANNEL_DESTROY_WITH_CQS, &o, true,
				"CQ", "CQs", "libibverbs fails with EBUSY and the "
				"channel stays open");
	}
	ret = RC_FWD_CLOSING(&c, RC_REAL(ibv_destroy_comp_channel)(channel));
	if (ret == 0 && o.handle) {
		rc_fd_untrack(o.u.vb.fd, o.handle);
		rc_v_gone(&c, &o);
	}
	return ret;
}

/* ---- CQs -------------------------------------------------------------- */

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct rc_v_links l;
	struct ibv_cq *cq;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_create_cq);
	if (!c.internal &&
	    (!rc_v_require_parent(&c, RC_K_CONTEXT, context, &o) ||
	     (channel && !rc_v_require(&c, RC_K_COMP_CHANNEL, channel,
				       RC_USE, &o)))) {
		errno = EINVAL;
		return NULL;
	}
	cq = RC_FWD(&c, RC_REAL(ibv_create_cq)(context, cqe, cq_context,
					       channel, comp_vector));
	if (cq) {
		memset(&l, 0, sizeof(l));
		l.parent = context;
		l.pkind = RC_K_CONTEXT;
		l.use[0] = channel;
		l.ukind[0] = RC_K_COMP_CHANNEL;
		rc_v_track(&c, RC_K_CQ, cq, &l, 0, &o);
	}
	return cq;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct rc_obj o;
	RC_CALL(c);

	RC_NEED_REAL(ibv_resize_cq);
	if (rc_v_begin(&c, RC_FN_ibv_resize_cq,
		       (uintptr_t)__builtin_return_address(0)) &&
	    !c.internal && !rc_v_require(&c, RC_K_CQ, cq, RC_USE, &o))
		return EINVAL;
	return RC_FWD(&c, RC_REAL(ibv_resize_cq)(cq, cqe));
}

static const char *const holder_note[] = {
	[RC_HOLDER_CALLER] = "the calling thread",
	[RC_HOLDER_LIVE] = "another thread, still running",
	[RC_HOLDER_EXITED] = "a thread that has exited",
	[RC_HOLDER_UNKNOWN] = "a thread",
};

/*
 * n events of what (completion or async events) of o are unacked: report
 * rule, an error when the hang is certain (only the calling thread, or
 * one that has exited, fetched them), a warning when another live thread
 * may still ack them.  Returns true when the hang is certain.
 */
static bool report_unacked(struct rc_call *c, const struct rc_obj *o,
			   enum rc_rule rule, int n, const struct rc_evhold *e,
			   bool async, const char *consequence)
{
	enum rc_holder h = rc_thread_state(e->tid, e->tgen, c->tid);
	bool certain = !e->multi &&
		       (h == RC_HOLDER_CALLER || h == RC_HOLDER_EXITED);
	bool refuse = certain && rc_opt.protect;
	struct rc_finding f;
	struct rc_obj ev;

	rc_finding_init(&f, rule, c,
			"%s(%p): %d %s event%s fetched for %s %p %s not "
			"acked; %s%s", rc_fn_info[c->fn].name,
			(void *)o->handle, n, async ? "async" : "completion",
			n == 1 ? "" : "s", rc_kind_text(o->kind),
			(void *)o->handle, n == 1 ? "is" : "are",
			certain ? consequence : "the call waits until another "
			"thread acks them", refuse ?
			" (not forwarded: it would never return; returns "
			"EBUSY)" : "");
	f.as_warning = !certain;
	rc_finding_add(&f, o, NULL);
	/* The events as an object: created where the first was fetched. */
	memset(&ev, 0, sizeof(ev));
	ev.kind = async ? RC_K_ASYNC_EVENTS : RC_K_CQ_EVENTS;
	ev.handle = o->handle;
	ev.created_tid = e->tid;
	ev.created_stack = e->stack;
	rc_finding_add(&f, &ev, "the first fetched by %s%s (thread %d)",
		       holder_note[h], e->multi ? " (and others by other "
		       "threads)" : "", e->tid);
	rc_report(&f);
	return certain;
}

bool rc_v_check_cq_events(struct rc_call *c, const struct rc_obj *o,
			  enum rc_rule rule)
{
	struct rc_cq_state st;
	struct rc_finding f;
	bool refuse;
	int n;

	if (!rc_cq_count_get(o->handle, o->gen, &st))
		return true;
	n = st.unacked;
	if (n > 0)
		return !(report_unacked(c, o, rule, n, &st.hold, false,
				"the destroy waits for them forever") &&
			 rc_opt.protect);
	if (n == 0)
		return true;
	/* Over-acked before (with protect=0): nothing can fix that. */
	refuse = rc_opt.protect;
	rc_finding_init(&f, RC_R_CQ_EVENTS_OVER_ACKED, c,
			"%s(%p): %d more completion event%s %s acked than "
			"were fetched for CQ %p; the destroy waits forever%s",
			rc_fn_info[c->fn].name, (void *)o->handle, -n,
			n == -1 ? "" : "s", n == -1 ? "was" : "were",
			(void *)o->handle, refuse ? " (not forwarded; "
			"returns EBUSY)" : "");
	rc_finding_add(&f, o, NULL);
	rc_report(&f);
	return !refuse;
}

bool rc_v_check_async(struct rc_call *c, const struct rc_obj *o)
{
	int n = o->u.vb.async_unacked;

	if (n <= 0)
		return true;
	return !(report_unacked(c, o, RC_R_DESTROY_WITH_UNACKED_ASYNC_EVENTS,
				n, &o->u.vb.async_ev, true,
				"the destroy waits for them forever") &&
		 rc_opt.protect);
}

/*
 * The channel's last CQ goes while threads wait in ibv_get_cq_event on
 * it: no completion can wake them any more (and one taken just now names
 * a freed CQ).  A warning: the program may still cancel or signal them.
 */
static void check_waiters(struct rc_call *c, const struct rc_obj *o)
{
	const struct rc_ref *chr = &o->u.vb.use[0];
	struct rc_finding f;
	struct rc_obj ch;
	unsigned n;

	if (!chr->h || !rc_reg_get(chr->h, &ch) || ch.gen != chr->gen ||
	    ch.destroyed || ch.u.vb.nusers > 1)
		return;
	n = rc_cq_waiters(chr->h);
	if (!n)
		return;
	rc_finding_init(&f, RC_R_CQ_DESTROY_WHILE_WAITING, c,
			"ibv_destroy_cq(%p): %u thread%s %s blocked in "
			"ibv_get_cq_event on completion channel %p, and this "
			"is the channel's last CQ: no completion can wake %s "
			"any more", (void *)o->handle, n, n == 1 ? "" : "s",
			n == 1 ? "is" : "are", (void *)chr->h,
			n == 1 ? "it" : "them");
	rc_finding_add(&f, o, NULL);
	rc_finding_add(&f, &ch, "with %u thread%s in ibv_get_cq_event", n,
		       n == 1 ? "" : "s");
	rc_report(&f);
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	RC_V_ENTER(c, ibv_destroy_cq);
	if (c.internal) {
		if (!rc_v_live(cq, RC_K_CQ, &o))
			o.handle = 0;
	} else {
		if (!rc_v_require(&c, RC_K_CQ, cq, RC_DESTROY, &o))
			return EINVAL;
		if (o.handle && !rc_v_check_lib(&c, &o))
			return EBUSY;
		/* The kernel refuses first: then nothing waits. */
		if (o.handle && o.u.vb.nusers > 0)
			rc_v_report_related(&c, RC_R_CQ_DESTROY_WITH_QPS, &o,
				true, "QP or SRQ", "QPs or SRQs", "libibverbs "
				"fails with EBUSY and the CQ stays");
		else if (o.handle &&
			 (!rc_v_check_cq_events(&c, &o,
				RC_R_CQ_DESTROY_WITH_UNACKED_EVENTS) ||
			  !rc_v_check_async(&c, &o)))
			return EBUSY;
	}
	if (o.handle && !c.internal)
		check_waiters(&c, &o);
	ret = RC_FWD(&c, RC_REAL(ibv_destroy_cq)(cq));
	if (ret == 0) {
		rc_wr_cq_gone(cq);
		rc_v_gone(&c, &o);
	}
	return ret;
}

/* ---- completion events ------------------------------------------------ */

/* A CQ we never saw made (a provider's own call, a context whose
 * operations we could not follow): known from now on. */
static struct rc_cqcount *adopt_cq(struct rc_call *c, struct ibv_cq *cq)
{
	struct rc_obj o;

	rc_v_track(c, RC_K_CQ, cq, NULL, RC_F_SEEN, &o);
	return rc_cq_count((uintptr_t)cq);
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct rc_cqcount *p;
	struct rc_obj o;
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	RC_CALL(c);
	int ret, slot;

	RC_NEED_REAL(ibv_get_cq_event);
	rc_call_begin(&c, RC_FN_ibv_get_cq_event, ra);
	if (c.skip || c.mod == RC_MOD_VERBS || c.mod == RC_MOD_SELF)
		return RC_FWD(&c, RC_REAL(ibv_get_cq_event)(channel, cq,
							     cq_context));
	slot = c.internal ? -1 : rc_cq_wait_begin((uintptr_t)channel, c.tid);
	ret = RC_FWD(&c, RC_REAL(ibv_get_cq_event)(channel, cq, cq_context));
	rc_cq_wait_end(slot);
	if (RC_UNLIKELY(ret)) {
		/* A destroyed channel's stale fd, not an interrupted wait. */
		if (!c.internal && c.err != EINTR && c.err != EAGAIN)
			rc_v_require(&c, RC_K_COMP_CHANNEL, channel, RC_USE,
				     &o);
		return ret;
	}
	p = rc_cq_count((uintptr_t)*cq);
	if (RC_UNLIKELY(!p) && !(p = adopt_cq(&c, *cq)))
		return ret;
	if (RC_UNLIKELY(rc_cq_fetched(p, c.tid,
				      c.internal ? 0 : rc_thread_self(&c), ra,
				      !c.internal)))
		rc_cq_set_stack(p, ra, rc_call_stack(&c));
	return ret;
}

static void report_over_ack(struct rc_call *c, struct ibv_cq *cq, int n,
			    int before, int took, bool clamp)
{
	struct rc_finding f;
	struct rc_obj o;

	if (!rc_v_live(cq, RC_K_CQ, &o))
		return;
	if (before < 0)
		before = 0;
	rc_finding_init(&f, RC_R_CQ_EVENTS_OVER_ACKED, c,
			"ibv_ack_cq_events(%p, %d): only %d completion "
			"event%s fetched for this CQ %s unacked; "
			"ibv_destroy_cq would wait forever%s", (void *)cq,
			n, before, before == 1 ? "" : "s",
			before == 1 ? "is" : "are",
			clamp ? took ? "; only those were acked" :
			"; not forwarded" : "");
	rc_finding_add(&f, &o, NULL);
	rc_report(&f);
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct rc_cqcount *p;
	struct rc_obj o;
	int before, took;
	bool clamp;
	RC_CALL(c);

	RC_NEED_REAL(ibv_ack_cq_events);
	rc_call_begin(&c, RC_FN_ibv_ack_cq_events,
			  (uintptr_t)__builtin_return_address(0));
	if (c.skip || c.mod == RC_MOD_VERBS || c.mod == RC_MOD_SELF ||
	    !nevents || nevents > INT32_MAX) {
		RC_FWDV(&c, RC_REAL(ibv_ack_cq_events)(cq, nevents));
		return;
	}
	/* Settled first: once acked, the CQ may be destroyed and its
	 * address reused at once. */
	p = rc_cq_count((uintptr_t)cq);
	if (RC_UNLIKELY(!p)) {
		if (!c.internal &&
		    !rc_v_require(&c, RC_K_CQ, cq, RC_USE, &o))
			return;
		RC_FWDV(&c, RC_REAL(ibv_ack_cq_events)(cq, nevents));
		return;
	}
	clamp = !c.internal && rc_opt.protect;
	took = rc_cq_acked(p, (int)nevents, clamp, &before);
	if (RC_UNLIKELY(before < (int)nevents)) {
		if (!c.internal)
			report_over_ack(&c, cq, (int)nevents, before, took,
					clamp);
		if (!took)
			return;
		nevents = (unsigned)took;
	}
	RC_FWDV(&c, RC_REAL(ibv_ack_cq_events)(cq, nevents));
}

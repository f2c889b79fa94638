/*
 * wrap_cq.c - completion channels, CQs and their completion events:
 * comp-channel-destroy-with-cqs, cq-destroy-with-qps,
 * cq-destroy-with-unacked-events and cq-events-over-acked.
 *
 * ibv_destroy_cq waits until every event ibv_get_cq_event returned for the
 * CQ was acked with ibv_ack_cq_events (libibverbs compares its count of
 * acks with the kernel's count of events read), so one ack missing, or one
 * too many, is a hang.  The events are only counted, per CQ, in its
 * record: a get or an ack is one registry update and no stack capture
 * (event-driven programs make them once per completion).  Who fetched the
 * first of the events still unacked, and where, is kept; the stack only
 * when that happens at a new call site.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "options.h"
#include "wrap.h"

/* ---- completion channels ---------------------------------------------- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch;
	struct rc_v_links l;
	struct rc_obj o;
	RC_CALL(c);

	if (!RC_REAL(ibv_create_comp_channel)) {
		errno = ENOSYS;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_create_comp_channel,
			(uintptr_t)__builtin_return_address(0)))
		return RC_FWD(&c, RC_REAL(ibv_create_comp_channel)(context));
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

	if (!RC_REAL(ibv_destroy_comp_channel))
		return ENOSYS;
	if (!rc_v_begin(&c, RC_FN_ibv_destroy_comp_channel,
			(uintptr_t)__builtin_return_address(0)))
		return RC_FWD(&c, RC_REAL(ibv_destroy_comp_channel)(channel));
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
	ret = RC_FWD(&c, RC_REAL(ibv_destroy_comp_channel)(channel));
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

	if (!RC_REAL(ibv_create_cq)) {
		errno = ENOSYS;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_create_cq,
			(uintptr_t)__builtin_return_address(0)))
		return RC_FWD(&c, RC_REAL(ibv_create_cq)(context, cqe,
				cq_context, channel, comp_vector));
	if (!c.internal &&
	    (!rc_v_require(&c, RC_K_CONTEXT, context, RC_USE, &o) ||
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

	if (!RC_REAL(ibv_resize_cq))
		return ENOSYS;
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
	struct rc_finding f;
	int n = o->u.vb.cq_unacked;
	bool refuse;

	if (n > 0)
		return !(report_unacked(c, o, rule, n, &o->u.vb.cq_ev, false,
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

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	if (!RC_REAL(ibv_destroy_cq))
		return ENOSYS;
	if (!rc_v_begin(&c, RC_FN_ibv_destroy_cq,
			(uintptr_t)__builtin_return_address(0)))
		return RC_FWD(&c, RC_REAL(ibv_destroy_cq)(cq));
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
	ret = RC_FWD(&c, RC_REAL(ibv_destroy_cq)(cq));
	if (ret == 0)
		rc_v_gone(&c, &o);
	return ret;
}

/* ---- completion events ------------------------------------------------ */

struct fetch_arg {
	pid_t tid;
	uint32_t tgen;
	uintptr_t ra;
	bool user;
	bool found;
	bool want_stack;
	uint32_t gen;
};

static void fetch_fn(struct rc_obj *o, void *arg)
{
	struct fetch_arg *a = arg;
	struct rc_evhold *e = &o->u.vb.cq_ev;

	if (o->kind != RC_K_CQ || o->destroyed)
		return;
	a->found = true;
	a->gen = o->gen;
	if (o->u.vb.cq_unacked++ == 0) {
		e->tid = a->tid;
		e->tgen = a->tgen;
		e->multi = 0;
		e->user = a->user;
		/* One stack per call site: a get loop captures once. */
		if (e->ra != a->ra || !e->stack) {
			e->ra = a->ra;
			a->want_stack = true;
		}
	} else {
		e->multi |= e->tid != a->tid;
		e->user |= a->user;
	}
}

struct stack_arg {
	uintptr_t ra;
	rc_stack_id stack;
};

static void stack_fn(struct rc_obj *o, void *arg)
{
	struct stack_arg *a = arg;

	if (o->u.vb.cq_ev.ra == a->ra)
		o->u.vb.cq_ev.stack = a->stack;
}

/* A CQ we never saw made (ibv_create_cq_ex on a context whose operations
 * we could not wrap, a provider's own call): known from now on. */
static void adopt_cq(struct rc_call *c, struct ibv_cq *cq)
{
	struct rc_obj o;

	rc_v_track(c, RC_K_CQ, cq, NULL, RC_F_SEEN, &o);
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct fetch_arg a;
	struct stack_arg s;
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	if (!RC_REAL(ibv_get_cq_event)) {
		errno = ENOSYS;
		return -1;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_get_cq_event,
			(uintptr_t)__builtin_return_address(0)))
		return RC_FWD(&c, RC_REAL(ibv_get_cq_event)(channel, cq,
							     cq_context));
	ret = RC_FWD(&c, RC_REAL(ibv_get_cq_event)(channel, cq, cq_context));
	if (ret) {
		/* A destroyed channel's stale fd, not an interrupted wait. */
		if (!c.internal && c.err != EINTR && c.err != EAGAIN)
			rc_v_require(&c, RC_K_COMP_CHANNEL, channel, RC_USE,
				     &o);
		return ret;
	}
	a.tid = c.tid;
	a.tgen = c.internal ? 0 : rc_thread_self(&c);
	a.ra = (uintptr_t)__builtin_return_address(0);
	a.user = !c.internal;
	a.found = a.want_stack = false;
	rc_reg_update((uintptr_t)*cq, 0, fetch_fn, &a);
	if (RC_UNLIKELY(!a.found)) {
		adopt_cq(&c, *cq);
		rc_reg_update((uintptr_t)*cq, 0, fetch_fn, &a);
	}
	if (RC_UNLIKELY(a.want_stack)) {
		s.ra = a.ra;
		s.stack = rc_call_stack(&c);
		rc_reg_update((uintptr_t)*cq, a.gen, stack_fn, &s);
	}
	return ret;
}

struct ack_arg {
	int n;
	bool clamp;		/* protect=1: ack no more than fetched */
	bool found;
	int before;
	int took;
};

static void ack_fn(struct rc_obj *o, void *arg)
{
	struct ack_arg *a = arg;

	if (o->kind != RC_K_CQ || o->destroyed)
		return;
	a->found = true;
	a->before = o->u.vb.cq_unacked;
	a->took = a->n;
	if (a->clamp && a->took > a->before)
		a->took = a->before > 0 ? a->before : 0;
	o->u.vb.cq_unacked -= a->took;
	if (o->u.vb.cq_unacked <= 0)
		o->u.vb.cq_ev.tid = 0;
}

static void report_over_ack(struct rc_call *c, struct ibv_cq *cq,
			    const struct ack_arg *a)
{
	struct rc_finding f;
	struct rc_obj o;

	if (!rc_v_live(cq, RC_K_CQ, &o))
		return;
	rc_finding_init(&f, RC_R_CQ_EVENTS_OVER_ACKED, c,
			"ibv_ack_cq_events(%p, %d): only %d completion "
			"event%s fetched for this CQ %s unacked; "
			"ibv_destroy_cq would wait forever%s", (void *)cq,
			a->n, a->before > 0 ? a->before : 0,
			a->before == 1 ? "" : "s",
			a->before == 1 ? "is" : "are",
			a->clamp ? a->took ? "; only those were acked" :
			"; not forwarded" : "");
	rc_finding_add(&f, &o, NULL);
	rc_report(&f);
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct ack_arg a;
	struct rc_obj o;
	RC_CALL(c);

	if (!RC_REAL(ibv_ack_cq_events))
		return;
	if (!rc_v_begin(&c, RC_FN_ibv_ack_cq_events,
			(uintptr_t)__builtin_return_address(0)) ||
	    !nevents || nevents > INT32_MAX) {
		RC_FWDV(&c, RC_REAL(ibv_ack_cq_events)(cq, nevents));
		return;
	}
	/* Settled first: once acked, the CQ may be destroyed and its
	 * address reused at once. */
	a.n = (int)nevents;
	a.clamp = !c.internal && rc_opt.protect;
	a.found = false;
	rc_reg_update((uintptr_t)cq, 0, ack_fn, &a);
	if (RC_UNLIKELY(!a.found)) {
		if (!c.internal &&
		    !rc_v_require(&c, RC_K_CQ, cq, RC_USE, &o))
			return;
	} else if (RC_UNLIKELY(a.took < a.n || a.before < a.n)) {
		if (!c.internal)
			report_over_ack(&c, cq, &a);
		if (!a.took)
			return;
		nevents = (unsigned)a.took;
	}
	RC_FWDV(&c, RC_REAL(ibv_ack_cq_events)(cq, nevents));
}

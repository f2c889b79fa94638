/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_ctxops.c - the inline functions of verbs.h that make or free
 * objects (ibv_create_cq_ex, ibv_create_qp_ex, ibv_open_qp,
 * ibv_create_srq_ex, ibv_open_xrcd, ibv_alloc_mw, ibv_create_wq,
 * ibv_create_flow, ibv_alloc_dm, ibv_create_counters, ...).  They are
 * compiled into the program (or into librdmacm) and call the context's
 * operations, which libibverbs copies from the provider into each context
 * it opens.  When ibv_open_device (or ibv_import_device) returns a
 * context, before anyone else has it, those operations are replaced by
 * the functions here, which follow the call as a wrapper does and call
 * the provider's.  The data-path operations (post, poll, notify, bind_mw)
 * are not touched here: with track_wr=1, wrap_wr.c follows post, poll and
 * bind_mw, and the ibv_wr_* operations of a QP made with send_ops_flags.
 *
 * Contexts we never see opened (a provider's own open, such as
 * mlx5dv_open_device) keep their operations: objects made on them are
 * known only from the exported calls they later show up in.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/cm.h"
#include "shim/verbs.h"
#include "shim/wr.h"

/* The operations followed: field of struct verbs_context (V) or of
 * struct ibv_context_ops (C). */
#define RC_CTXOPS(X) \
	X(create_cq_ex, V) X(create_qp_ex, V) X(open_qp, V) \
	X(create_srq_ex, V) X(open_xrcd, V) X(close_xrcd, V) \
	X(alloc_parent_domain, V) X(alloc_td, V) X(dealloc_td, V) \
	X(create_wq, V) X(destroy_wq, V) X(create_rwq_ind_table, V) \
	X(destroy_rwq_ind_table, V) X(ibv_create_flow, V) \
	X(ibv_destroy_flow, V) X(alloc_dm, V) X(free_dm, V) \
	X(create_counters, V) X(destroy_counters, V) X(alloc_null_mr, V) \
	X(reg_dm_mr, V) X(alloc_mw, C) X(dealloc_mw, C)

enum {
#define X(f, w) OP_##f,
	RC_CTXOPS(X)
#undef X
	NOPS
};

/* The provider's operations of each context we changed. */
#define MAX_CTX 64
static struct {
	const struct ibv_context *ctx;	/* published last (release) */
	void *orig[NOPS];
} ctxs[MAX_CTX];
static void *last_orig[NOPS];	/* any context's: contexts of one provider
				 * share them */
static pthread_mutex_t ctxs_lock = PTHREAD_MUTEX_INITIALIZER;

static void *orig_of(const struct ibv_context *ctx, unsigned op)
{
	unsigned i;

	for (i = 0; i < MAX_CTX; i++)
		if (__atomic_load_n(&ctxs[i].ctx, __ATOMIC_ACQUIRE) == ctx)
			return ctxs[i].orig[op];
	return __atomic_load_n(&last_orig[op], __ATOMIC_RELAXED);
}

#define ORIG(ctx, f) \
	((__typeof__(((struct verbs_context *)0)->f))orig_of(ctx, OP_##f))
#define ORIGC(ctx, f) \
	((__typeof__(((struct ibv_context_ops *)0)->f))orig_of(ctx, OP_##f))
#define RA ((uintptr_t)__builtin_return_address(0))

/* ---- what the operations share ---------------------------------------- */

static void links(struct rc_v_links *l, const void *parent, enum rc_kind pk,
		  const void *u0, enum rc_kind k0, const void *u1,
		  enum rc_kind k1)
{
	memset(l, 0, sizeof(*l));
	l->parent = parent;
	l->pkind = pk;
	l->use[0] = u0;
	l->ukind[0] = k0;
	l->use[1] = u1;
	l->ukind[1] = k1;
}

static void *made(struct rc_call *c, enum rc_kind kind, void *h,
		  const struct rc_v_links *l)
{
	struct rc_obj o;

	if (h)
		rc_v_track(c, kind, h, l, 0, &o);
	return h;
}

/* Before a destroy operation on h: false when it must be refused. */
static bool may_destroy(struct rc_call *c, enum rc_kind kind, void *h,
			struct rc_obj *o)
{
	if (c->internal) {
		if (!rc_v_live(h, kind, o))
			o->handle = 0;
		return true;
	}
	if (!rc_v_require(c, kind, h, RC_DESTROY, o))
		return false;
	if (o->handle && !rc_v_check_lib(c, o))
		return false;
	return !o->handle || kind != RC_K_WQ || rc_v_check_async(c, o);
}

static int destroyed(struct rc_call *c, int ret, const struct rc_obj *o)
{
	if (ret == 0)
		rc_v_gone(c, o);
	return ret;
}

/* A create whose first argument is the context. */
#define CREATE_ON_CTX(f, kind, type, ctx, attr, l)			\
	RC_CALL(c);							\
	__typeof__(ORIG(ctx, f)) fn = ORIG(ctx, f);			\
									\
	if (!fn) {							\
		errno = EOPNOTSUPP;					\
		return NULL;						\
	}								\
	if (!rc_v_begin(&c, RC_FN_ibv_##f, RA))				\
		return RC_FWD(&c, fn(ctx, attr));			\
	return made(&c, kind, RC_FWD(&c, fn(ctx, attr)), l)

/* A destroy of an object whose context is obj->context. */
#define DESTROY(name, f, kind, obj, orig)				\
	RC_CALL(c);							\
	struct rc_obj o;						\
	__typeof__(orig) fn = orig;					\
									\
	if (!fn)							\
		return EOPNOTSUPP;					\
	if (!rc_v_begin(&c, RC_FN_##name, RA))				\
		return RC_FWD(&c, fn(obj));				\
	if (!may_destroy(&c, kind, obj, &o))				\
		return o.handle ? EBUSY : EINVAL;			\
	return destroyed(&c, RC_FWD(&c, fn(obj)), &o)

/* ---- the operations --------------------------------------------------- */

static struct ibv_cq_ex *t_create_cq_ex(struct ibv_context *context,
					struct ibv_cq_init_attr_ex *attr)
{
	__typeof__(ORIG(context, create_cq_ex)) fn =
		ORIG(context, create_cq_ex);
	struct ibv_cq_init_attr_ex a;
	struct rc_v_links l;
	struct ibv_cq_ex *cq;
	struct rc_obj o;
	RC_CALL(c);

	if (!fn) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_create_cq_ex, RA))
		return RC_FWD(&c, fn(context, attr));
	if (!c.internal && rc_peek(&a, attr, sizeof(a)) && a.channel &&
	    !rc_v_require(&c, RC_K_COMP_CHANNEL, a.channel, RC_USE, &o)) {
		errno = EINVAL;
		return NULL;
	}
	cq = RC_FWD(&c, fn(context, attr));
	if (cq) {
		links(&l, context, RC_K_CONTEXT, ibv_cq_ex_to_cq(cq)->channel,
		      RC_K_COMP_CHANNEL, NULL, 0);
		made(&c, RC_K_CQ, ibv_cq_ex_to_cq(cq), &l);
	}
	return cq;
}

static struct ibv_qp *t_create_qp_ex(struct ibv_context *context,
				     struct ibv_qp_init_attr_ex *attr)
{
	__typeof__(ORIG(context, create_qp_ex)) fn =
		ORIG(context, create_qp_ex);
	struct ibv_qp_init_attr_ex a;
	struct rc_v_links l;
	struct ibv_qp *qp;
	RC_CALL(c);

	if (!fn) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_create_qp_ex, RA)) {
		qp = RC_FWD(&c, fn(context, attr));
		goto out;
	}
	qp = RC_FWD(&c, fn(context, attr));
	if (!qp)
		return NULL;
	rc_qp_links(RC_K_QP, qp, &l);
	/* An XRC target QP is made on its XRC domain, not on a PD. */
	if (!l.parent && rc_peek(&a, attr, sizeof(a)) &&
	    (a.comp_mask & IBV_QP_INIT_ATTR_XRCD)) {
		l.parent = a.xrcd;
		l.pkind = RC_K_XRCD;
	}
	qp = made(&c, RC_K_QP, qp, &l);
out:
	if (qp && rc_wr_on())
		rc_wr_qp_made(qp, rc_peek(&a, attr, sizeof(a)) &&
			      (a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS));
	return qp;
}

static struct ibv_qp *t_open_qp(struct ibv_context *context,
				struct ibv_qp_open_attr *attr)
{
	struct ibv_qp_open_attr a;
	struct rc_v_links l;

	links(&l, rc_peek(&a, attr, sizeof(a)) ? a.xrcd : NULL, RC_K_XRCD,
	      NULL, 0, NULL, 0);
	CREATE_ON_CTX(open_qp, RC_K_QP, struct ibv_qp, context, attr, &l);
}

static struct ibv_srq *t_create_srq_ex(struct ibv_context *context,
				       struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr_ex a;
	struct rc_v_links l;

	if (!rc_peek(&a, attr, sizeof(a)))
		memset(&a, 0, sizeof(a));
	links(&l, (a.comp_mask & IBV_SRQ_INIT_ATTR_PD) ? a.pd : NULL,
	      RC_K_PD, (a.comp_mask & IBV_SRQ_INIT_ATTR_CQ) ? a.cq : NULL,
	      RC_K_CQ, (a.comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ? a.xrcd : NULL,
	      RC_K_XRCD);
	CREATE_ON_CTX(create_srq_ex, RC_K_SRQ, struct ibv_srq, context, attr,
		      &l);
}

static struct ibv_xrcd *t_open_xrcd(struct ibv_context *context,
				    struct ibv_xrcd_init_attr *attr)
{
	struct rc_v_links l;

	links(&l, context, RC_K_CONTEXT, NULL, 0, NULL, 0);
	CREATE_ON_CTX(open_xrcd, RC_K_XRCD, struct ibv_xrcd, context, attr,
		      &l);
}

static int t_close_xrcd(struct ibv_xrcd *xrcd)
{
	DESTROY(ibv_close_xrcd, close_xrcd, RC_K_XRCD, xrcd,
		ORIG(xrcd->context, close_xrcd));
}

static struct ibv_pd *t_alloc_parent_domain(struct ibv_context *context,
				struct ibv_parent_domain_init_attr *attr)
{
	struct ibv_parent_domain_init_attr a;
	struct rc_v_links l;

	if (!rc_peek(&a, attr, sizeof(a)))
		memset(&a, 0, sizeof(a));
	/* Made on its protection domain, which must outlive it. */
	links(&l, a.pd, RC_K_PD, a.td, RC_K_TD, NULL, 0);
	CREATE_ON_CTX(alloc_parent_domain, RC_K_PD, struct ibv_pd, context,
		      attr, &l);
}

static struct ibv_td *t_alloc_td(struct ibv_context *context,
				 struct ibv_td_init_attr *attr)
{
	struct rc_v_links l;

	links(&l, context, RC_K_CONTEXT, NULL, 0, NULL, 0);
	CREATE_ON_CTX(alloc_td, RC_K_TD, struct ibv_td, context, attr, &l);
}

static int t_dealloc_td(struct ibv_td *td)
{
	DESTROY(ibv_dealloc_td, dealloc_td, RC_K_TD, td,
		ORIG(td->context, dealloc_td));
}

static struct ibv_wq *t_create_wq(struct ibv_context *context,
				  struct ibv_wq_init_attr *attr)
{
	struct ibv_wq_init_attr a;
	struct rc_v_links l;

	if (!rc_peek(&a, attr, sizeof(a)))
		memset(&a, 0, sizeof(a));
	links(&l, a.pd, RC_K_PD, a.cq, RC_K_CQ, NULL, 0);
	CREATE_ON_CTX(create_wq, RC_K_WQ, struct ibv_wq, context, attr, &l);
}

static int t_destroy_wq(struct ibv_wq *wq)
{
	DESTROY(ibv_destroy_wq, destroy_wq, RC_K_WQ, wq,
		ORIG(wq->context, destroy_wq));
}

static struct ibv_rwq_ind_table *
t_create_rwq_ind_table(struct ibv_context *context,
		       struct ibv_rwq_ind_table_init_attr *attr)
{
	struct rc_v_links l;

	links(&l, context, RC_K_CONTEXT, NULL, 0, NULL, 0);
	CREATE_ON_CTX(create_rwq_ind_table, RC_K_RWQ_IND_TABLE,
		      struct ibv_rwq_ind_table, context, attr, &l);
}

static int t_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t)
{
	DESTROY(ibv_destroy_rwq_ind_table, destroy_rwq_ind_table,
		RC_K_RWQ_IND_TABLE, t,
		ORIG(t->context, destroy_rwq_ind_table));
}

static struct ibv_flow *t_ibv_create_flow(struct ibv_qp *qp,
					  struct ibv_flow_attr *attr)
{
	__typeof__(ORIG(qp->context, ibv_create_flow)) fn =
		ORIG(qp->context, ibv_create_flow);
	struct rc_v_links l;
	RC_CALL(c);

	if (!fn) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_create_flow, RA))
		return RC_FWD(&c, fn(qp, attr));
	links(&l, qp->context, RC_K_CONTEXT, qp, RC_K_QP, NULL, 0);
	return made(&c, RC_K_FLOW, RC_FWD(&c, fn(qp, attr)), &l);
}

static int t_ibv_destroy_flow(struct ibv_flow *flow)
{
	DESTROY(ibv_destroy_flow, ibv_destroy_flow, RC_K_FLOW, flow,
		ORIG(flow->context, ibv_destroy_flow));
}

static struct ibv_dm *t_alloc_dm(struct ibv_context *context,
				 struct ibv_alloc_dm_attr *attr)
{
	struct rc_v_links l;

	links(&l, context, RC_K_CONTEXT, NULL, 0, NULL, 0);
	CREATE_ON_CTX(alloc_dm, RC_K_DM, struct ibv_dm, context, attr, &l);
}

static int t_free_dm(struct ibv_dm *dm)
{
	DESTROY(ibv_free_dm, free_dm, RC_K_DM, dm, ORIG(dm->context, free_dm));
}

static struct ibv_counters *t_create_counters(struct ibv_context *context,
				struct ibv_counters_init_attr *attr)
{
	struct rc_v_links l;

	links(&l, context, RC_K_CONTEXT, NULL, 0, NULL, 0);
	CREATE_ON_CTX(create_counters, RC_K_COUNTERS, struct ibv_counters,
		      context, attr, &l);
}

static int t_destroy_counters(struct ibv_counters *counters)
{
	DESTROY(ibv_destroy_counters, destroy_counters, RC_K_COUNTERS,
		counters, ORIG(counters->context, destroy_counters));
}

static struct ibv_mr *t_alloc_null_mr(struct ibv_pd *pd)
{
	__typeof__(ORIG(pd->context, alloc_null_mr)) fn =
		ORIG(pd->context, alloc_null_mr);
	struct rc_v_links l;
	struct ibv_mr *mr;
	RC_CALL(c);

	if (!fn) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_alloc_null_mr, RA))
		return RC_FWD(&c, fn(pd));
	links(&l, pd, RC_K_PD, NULL, 0, NULL, 0);
	mr = made(&c, RC_K_MR, RC_FWD(&c, fn(pd)), &l);
	rc_wr_mr_made(mr, pd, 0, ~0u, true);
	return mr;
}

static struct ibv_mr *t_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
				  uint64_t dm_offset, size_t length,
				  unsigned int access)
{
	__typeof__(ORIG(pd->context, reg_dm_mr)) fn =
		ORIG(pd->context, reg_dm_mr);
	struct rc_v_links l;
	struct ibv_mr *mr;
	RC_CALL(c);

	if (!fn) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_reg_dm_mr, RA))
		return RC_FWD(&c, fn(pd, dm, dm_offset, length, access));
	links(&l, pd, RC_K_PD, dm, RC_K_DM, NULL, 0);
	mr = made(&c, RC_K_MR, RC_FWD(&c, fn(pd, dm, dm_offset, length,
					      access)), &l);
	/* Device memory: its SGEs' addresses are offsets, not checked. */
	rc_wr_mr_made(mr, pd, 0, access, true);
	return mr;
}

static struct ibv_mw *t_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	__typeof__(ORIGC(pd->context, alloc_mw)) fn =
		ORIGC(pd->context, alloc_mw);
	struct rc_v_links l;
	struct rc_obj o;
	RC_CALL(c);

	if (!fn) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!rc_v_begin(&c, RC_FN_ibv_alloc_mw, RA))
		return RC_FWD(&c, fn(pd, type));
	if (!c.internal && !rc_v_require(&c, RC_K_PD, pd, RC_USE, &o)) {
		errno = EINVAL;
		return NULL;
	}
	links(&l, pd, RC_K_PD, NULL, 0, NULL, 0);
	return made(&c, RC_K_MW, RC_FWD(&c, fn(pd, type)), &l);
}

static int t_dealloc_mw(struct ibv_mw *mw)
{
	/* Its rkey names nothing from now on (a dealloc that fails loses
	 * the window's bind: a finding missed, never a false one). */
	rc_wr_mw_gone(mw);
	DESTROY(ibv_dealloc_mw, dealloc_mw, RC_K_MW, mw,
		ORIGC(mw->context, dealloc_mw));
}

/* ---- putting them in -------------------------------------------------- */

/* Where each operation lives in a context, NULL when it has none. */
#define SLOT_C(f)							\
	case OP_##f:							\
		return (void **)&ctx->ops.f;
#define SLOT_V(f)							\
	case OP_##f:							\
		off = offsetof(struct verbs_context, f);		\
		break;
static void **slot_of(struct ibv_context *ctx, unsigned op)
{
	struct verbs_context *v = (struct verbs_context *)
		((char *)ctx - offsetof(struct verbs_context, context));
	size_t off = 0;

	switch (op) {
#define X(f, w) SLOT_##w(f)
	RC_CTXOPS(X)
#undef X
	default:
		return NULL;
	}
	/* As verbs_get_ctx_op: an extended context large enough. */
	if (ctx->abi_compat != __VERBS_ABI_IS_EXTENDED ||
	    v->sz < sizeof(*v) - off)
		return NULL;
	return (void **)((char *)v + off);
}

static void *const ours[NOPS] = {
#define X(f, w) [OP_##f] = (void *)t_##f,
	RC_CTXOPS(X)
#undef X
};

void rc_ctxops_wrap(struct rc_call *c, struct ibv_context *ctx)
{
	unsigned i, op;
	void **slot;

	(void)c;
	pthread_mutex_lock(&ctxs_lock);
	for (i = 0; i < MAX_CTX && ctxs[i].ctx; i++)
		;
	if (i == MAX_CTX) {
		/* Unfollowed, but working: the provider's stay. */
		pthread_mutex_unlock(&ctxs_lock);
		return;
	}
	for (op = 0; op < NOPS; op++) {
		slot = slot_of(ctx, op);
		ctxs[i].orig[op] = NULL;
		if (!slot || !*slot || *slot == ours[op])
			continue;
		ctxs[i].orig[op] = *slot;
		__atomic_store_n(&last_orig[op], *slot, __ATOMIC_RELAXED);
		*slot = ours[op];
	}
	__atomic_store_n(&ctxs[i].ctx, ctx, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctxs_lock);
}

void rc_ctxops_forget(struct ibv_context *ctx)
{
	unsigned i;

	if (!ctx)
		return;
	pthread_mutex_lock(&ctxs_lock);
	for (i = 0; i < MAX_CTX; i++)
		if (ctxs[i].ctx == ctx)
			__atomic_store_n(&ctxs[i].ctx, NULL,
					 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctxs_lock);
}

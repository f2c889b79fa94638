/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * verbs.h - libibverbs objects (wrap_verbs.c): the verbs wrappers' entry,
 * handle validation and records with their parent and user links, the
 * checks before a QP, CQ, SRQ or WQ goes; the kinds async events name
 * (wrap_async.c); the context operations followed (wrap_ctxops.c).
 */
#ifndef RC_SHIM_VERBS_H
#define RC_SHIM_VERBS_H

#include "shim/call.h"

struct ibv_context;

/*
 * A verbs wrapper starts with rc_v_begin, which is false when the call is
 * not to be followed: our own code re-entered, or a call libibverbs makes
 * to its own exports (the IBVERBS_1.0 compatibility functions, ibv_reg_mr
 * calling ibv_reg_mr_iova2), which the outer wrapper follows.  Calls from
 * librdmacm are followed and make library-owned objects (c->internal).
 */
bool rc_v_begin(struct rc_call *c, enum rc_fn fn, uintptr_t ret_addr);

/* The entry of a verbs wrapper (RC_ENTER's): a call not to be followed is
 * forwarded untouched (RC_PASS_name, generated from the table). */
#define RC_V_ENTER(c, name) do {					\
	RC_NEED_REAL(name);						\
	if (!rc_v_begin(&(c), RC_FN_##name, RC_RA(name)))		\
		RC_PASS_##name(c);					\
} while (0)

/* The live record of this kind at h, or false. */
bool rc_v_live(const void *h, enum rc_kind kind, struct rc_obj *o);
/* Could d be a device of ibv_get_device_list?  (read, never trusted) */
bool rc_v_plausible_device(const void *d);

/*
 * Validate a verbs handle a user call passes.  A handle no create call
 * returned is not an error for kinds that can also be made where the
 * shim does not see (provider-specific calls, contexts opened by a
 * provider library): o->handle is then 0 and the call goes on.  Reports
 * use-after-destroy, double-destroy or unknown-handle (a live object of
 * another kind) otherwise; false when the call must be refused
 * (protect=1).
 */
bool rc_v_require(struct rc_call *c, enum rc_kind kind, const void *h,
		  enum rc_handle_use use, struct rc_obj *o);

/*
 * Record a verbs object this call made: on parent (made on it: counted in
 * its nchild), using the objects in use[] (counted in their nusers).
 * Unknown parents and users are not linked.  o is filled (o->gen 0 when
 * it could not be stored).
 */
struct rc_v_links {
	const void *parent;
	enum rc_kind pkind;
	const void *use[3];
	enum rc_kind ukind[3];
};
void rc_v_track(struct rc_call *c, enum rc_kind kind, const void *h,
		const struct rc_v_links *l, unsigned flags, struct rc_obj *o);
/* The cm id that owns a QP (SRQ) librdmacm makes for it, and whether the
 * id is the library's (RC_F_LIB follows the id's). */
struct rc_v_owner {
	struct rc_ref id;
	bool lib;
};
/* rc_v_track of an object owned by a cm id: recorded with its owner in
 * the one insert (rdma_create_qp's QP, no update after). */
void rc_v_track_owned(struct rc_call *c, enum rc_kind kind, const void *h,
		      const struct rc_v_links *l, const struct rc_v_owner *w,
		      struct rc_obj *o);

/*
 * rc_v_require(..., RC_USE, ...) of the parent an object is about to be
 * made on, counting the child under the same lock; rc_v_track uses that
 * count, and rc_call_end gives it back when nothing was tracked.
 */
bool rc_v_require_parent(struct rc_call *c, enum rc_kind kind, const void *h,
			 struct rc_obj *o);
void rc_v_unlink_pre(struct rc_call *c);

/*
 * o (a copy taken before the destroy) is gone: mark it destroyed and take
 * it out of its parent's and users' counts, once, however many paths
 * learn of it (ibv_destroy_qp inside rdma_destroy_qp).
 */
void rc_v_gone(struct rc_call *c, const struct rc_obj *o);

/* librdmacm made or now owns a verbs object for an id (wrap_qp.c,
 * wrap_sync.c): record it as the library's, unless it is known. */
void rc_v_lib_object(struct rc_call *c, enum rc_kind kind, const void *h,
		     const struct rc_v_links *l);

/*
 * The checks before a QP, CQ, SRQ or WQ goes, by ibv_destroy_* or inside
 * rdma_destroy_qp: destroy-with-unacked-async-events, and for a CQ
 * cq-destroy-with-unacked-events (rule: which one the caller reports).
 * Return false when the destroy would certainly hang and must be refused.
 */
bool rc_v_check_async(struct rc_call *c, const struct rc_obj *o);
bool rc_v_check_cq_events(struct rc_call *c, const struct rc_obj *o,
			  enum rc_rule rule);

/* The kind a QP/CQ/SRQ/WQ async event names, RC_K_COUNT for others. */
enum rc_kind rc_v_async_kind(int event_type);

/* Records of these kinds keep u.vb. */
static inline bool rc_kind_is_verbs(unsigned kind)
{
	return kind == RC_K_QP || kind == RC_K_SRQ ||
	       (kind >= RC_K_CONTEXT && kind <= RC_K_TD);
}

/* librdmacm made o for its cm ids: a user's destroy is
 * library-object-destroyed-by-user; false when it must be refused. */
bool rc_v_check_lib(struct rc_call *c, const struct rc_obj *o);

/* Report rule at this call: o still has live children (or users),
 * named in the finding. */
void rc_v_report_related(struct rc_call *c, enum rc_rule rule,
			 const struct rc_obj *o, bool users, const char *one,
			 const char *many, const char *consequence);

/* wrap_ctxops.c: a new context's control operations (the ones inline
 * functions call) are wrapped; forgotten when it is closed. */
void rc_ctxops_wrap(struct rc_call *c, struct ibv_context *ctx);
void rc_ctxops_forget(struct ibv_context *ctx);

#endif

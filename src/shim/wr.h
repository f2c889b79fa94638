/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wr.h - the data path (wrap_wr.c): what the control-path wrappers tell
 * it.  Each hook is one load of an option when track_wr (and, for MRs,
 * track_buffers) is off.
 */
#ifndef RC_SHIM_WR_H
#define RC_SHIM_WR_H

#include <stdint.h>

#include "core/options.h"
#include "shim/call.h"

struct ibv_context;
struct ibv_mr;
struct ibv_pd;
struct ibv_qp;
struct ibv_cq;
struct ibv_srq;
struct ibv_mw;

void rc_wr_wrap_(struct ibv_context *ctx);
void rc_wr_forget_(struct ibv_context *ctx);
void rc_wr_mr_made_(struct ibv_mr *mr, struct ibv_pd *pd, uint64_t iova,
		    unsigned access, bool any_range);
void rc_wr_mr_check_(struct rc_call *c, struct ibv_mr *mr, const char *why);
void rc_wr_mr_gone_(struct ibv_mr *mr);
void rc_wr_qp_made_(struct ibv_qp *qp, bool send_ops);
void rc_wr_qp_check_(struct rc_call *c, struct ibv_qp *qp);
void rc_wr_qp_gone_(struct ibv_qp *qp);
unsigned rc_wr_unpolled_(const struct ibv_qp *qp);
void rc_wr_srq_gone_(struct ibv_srq *srq);
void rc_wr_cq_gone_(struct ibv_cq *cq);
void rc_wr_cq_lost_(struct ibv_cq *cq);
void rc_wr_mw_gone_(struct ibv_mw *mw);

static inline bool rc_wr_on(void)
{
	return RC_UNLIKELY(rc_opt.track_wr);
}

static inline bool rc_wr_mr_on(void)
{
	return RC_UNLIKELY(rc_opt.track_wr || rc_opt.track_buffers);
}

/* A context opened: its data-path operations are replaced (track_wr=1);
 * forgotten when it is closed. */
static inline void rc_wr_wrap(struct ibv_context *ctx)
{
	if (rc_wr_on())
		rc_wr_wrap_(ctx);
}

static inline void rc_wr_forget(struct ibv_context *ctx)
{
	if (rc_wr_on())
		rc_wr_forget_(ctx);
}

/* An MR made on pd: SGEs inside [iova, iova + length) may use its lkey
 * (any address when any_range: null and device-memory MRs). */
static inline void rc_wr_mr_made(struct ibv_mr *mr, struct ibv_pd *pd,
				 uint64_t iova, unsigned access,
				 bool any_range)
{
	if (rc_wr_mr_on() && mr)
		rc_wr_mr_made_(mr, pd, iova, access, any_range);
}

/* Before mr is deregistered or its translation or PD changes:
 * mr-dereg-with-wr-in-flight. */
static inline void rc_wr_mr_check(struct rc_call *c, struct ibv_mr *mr,
				  const char *why)
{
	if (rc_wr_on())
		rc_wr_mr_check_(c, mr, why);
}

/* mr is deregistered (or about to be made again by ibv_rereg_mr); only
 * its address is used. */
static inline void rc_wr_mr_gone(struct ibv_mr *mr)
{
	if (rc_wr_mr_on())
		rc_wr_mr_gone_(mr);
}

/* A QP made (send_ops: with send_ops_flags, its ibv_wr_* operations are
 * followed). */
static inline void rc_wr_qp_made(struct ibv_qp *qp, bool send_ops)
{
	if (rc_wr_on())
		rc_wr_qp_made_(qp, send_ops);
}

/* Before ibv_destroy_qp: destroy-qp-with-unpolled-completions. */
static inline void rc_wr_qp_check(struct rc_call *c, struct ibv_qp *qp)
{
	if (rc_wr_on())
		rc_wr_qp_check_(c, qp);
}

/* The leak report: how many completions of qp's WRs were never polled
 * (signaled sends, receives flushed in ERR); 0 with track_wr=0. */
static inline unsigned rc_wr_unpolled(const struct ibv_qp *qp)
{
	return rc_wr_on() ? rc_wr_unpolled_(qp) : 0;
}

static inline void rc_wr_qp_gone(struct ibv_qp *qp)
{
	if (rc_wr_on())
		rc_wr_qp_gone_(qp);
}

static inline void rc_wr_srq_gone(struct ibv_srq *srq)
{
	if (rc_wr_on())
		rc_wr_srq_gone_(srq);
}

static inline void rc_wr_cq_gone(struct ibv_cq *cq)
{
	if (rc_wr_on())
		rc_wr_cq_gone_(cq);
}

static inline void rc_wr_cq_lost(struct ibv_cq *cq)
{
	if (rc_wr_on())
		rc_wr_cq_lost_(cq);
}

/* Before ibv_dealloc_mw: the window's rkey no longer names its MR. */
static inline void rc_wr_mw_gone(struct ibv_mw *mw)
{
	if (rc_wr_on())
		rc_wr_mw_gone_(mw);
}

/* track_buffers (wrap_wr.c): is [p, p + len) covered by a live MR?  Fills
 * *mr with one that covers it. */
bool rc_wr_mr_covers(uintptr_t p, size_t len, const struct ibv_mr **mr);
/* The registry's live record of mr (wrap_wr.c, for wrap_buf.c). */
bool rc_v_live_mr(const struct ibv_mr *mr, struct rc_obj *o);

#endif

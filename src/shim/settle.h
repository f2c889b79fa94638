/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * settle.h - what librdmacm keeps for an id (wrap_sync.c), derived after
 * a user call from the state the call left, and released with the id.
 */
#ifndef RC_SHIM_SETTLE_H
#define RC_SHIM_SETTLE_H

#include "shim/call.h"

struct rdma_cm_id;

/*
 * What librdmacm keeps for an id, derived after a user call from the
 * state the call left (its private channel, id->event, the QP and SRQ it
 * made), whether or not the library's own calls were seen.
 */
void rc_settle_id(struct rc_call *c, struct rdma_cm_id *id);
struct rc_lib_state {
	struct rc_ref lib_event, qp, srq;
};
/* Before a destroy: what the library will free with the id ... */
void rc_lib_snapshot(const struct rc_obj *o, struct rc_lib_state *s);
/* ... and after it succeeded: mark those gone. */
void rc_lib_release(struct rc_call *c, const struct rc_lib_state *s);

#endif

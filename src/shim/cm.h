/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cm.h - what the rdmacm wrappers share across files: ids and their
 * channels (wrap_id.c), the QPs and SRQs librdmacm makes for them
 * (wrap_qp.c), event names and counts (wrap_event.c), the join of a
 * multicast event (wrap_mcast.c).
 */
#ifndef RC_SHIM_CM_H
#define RC_SHIM_CM_H

#include "shim/call.h"

struct rdma_cm_id;
struct rc_v_links;

/* wrap_id.c: register an id this call produced (joins its channel). */
void rc_track_id(struct rc_call *c, struct rdma_cm_id *id, unsigned flags,
		 const struct rc_obj *parent, struct rc_obj *out);
/* The same, when the id's channel count was taken already (ch). */
void rc_track_id_counted(struct rc_call *c, struct rdma_cm_id *id,
			 unsigned flags, struct rc_ref ch);
/* An id no longer uses this channel; a private one goes with its id. */
void rc_id_left_channel(struct rc_call *c, struct rc_ref channel);

/* wrap_qp.c: the QP or SRQ librdmacm made for id joins the registry;
 * idrec: id's live record as the call found it (NULL: look it up). */
void rc_track_owned(struct rc_call *c, struct rdma_cm_id *id,
		    const struct rc_obj *idrec, enum rc_kind kind, void *h);
void rc_qp_set_owner(const struct rc_obj *id);
/* Before id's QP goes with rdma_destroy_qp or rdma_destroy_ep: the
 * events it (and the CQs librdmacm made for it) still owes.  qp: the
 * QP's record as the call found it (NULL: look it up). */
bool rc_qp_check_destroy(struct rc_call *c, struct rdma_cm_id *id,
			 const struct rc_obj *qp);
/* What a QP (SRQ) was made on and uses, read from the object. */
void rc_qp_links(enum rc_kind kind, void *h, struct rc_v_links *l);

/* wrap_event.c: add delta to the counts an event is charged to. */
void rc_event_settle(const struct rc_obj *e, int delta);

/* wrap_mcast.c: the join a multicast event belongs to (0 if none). */
struct rc_ref rc_mcast_of_event(uintptr_t id, const void *context);

/* Our own event names: a wrapper must not call rdma_event_str. */
const char *rc_event_name(int type);

#endif

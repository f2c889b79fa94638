/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ledger.h - the event ledger (ledger.c): the cm events charged to an
 * id or fetched from a channel and not acked, the unacked-events check of
 * destroys, and the pointers an acked event leaves behind.
 */
#ifndef RC_SHIM_LEDGER_H
#define RC_SHIM_LEDGER_H

#include "shim/call.h"

struct rdma_cm_event;

/* Events charged to an id or fetched from a channel. */
struct rc_ledger_scan {
	unsigned n;		/* user-held events found */
	unsigned by_caller;	/* of those, held by the calling thread */
	unsigned by_exited;	/* and held by threads that have exited */
	unsigned by_waiting;	/* and by live threads joining the caller */
	struct rc_finding *f;	/* events are added to it, may be NULL */
};
void rc_ledger_scan_id(const struct rc_obj *id, pid_t caller,
		       struct rc_ledger_scan *s);
void rc_ledger_scan_channel(const struct rc_obj *ch, pid_t caller,
			    struct rc_ledger_scan *s);
void rc_ledger_ids_on_channel(const struct rc_obj *ch, struct rc_finding *f);

/*
 * The unacked-events check of rdma_destroy_id/_ep, rdma_migrate_id (o is
 * the id) and rdma_leave_multicast (o is the join): reported only when the
 * hang is certain (the caller, or a thread that has exited, holds one of
 * the events) or, for a destroy, when a live holder sleeps joining the
 * caller.
 * Returns false when the call must then be refused.
 */
bool rc_ledger_check_unacked(struct rc_call *c, const struct rc_obj *o,
			     enum rc_rule rule);

/* Remember an acked event's parameter pointers (before the
 * ack is forwarded), and check a pointer a user call passes. */
/*
 * An ack as the ledger notes it: rc_ledger_note runs on the event's
 * record as the ack takes it (rc_reg_take_fn), rc_ledger_index after.
 */
struct rc_ack {
	struct rdma_cm_event *ev;
	uint32_t seq;		/* the ack's number, filled by the note */
	uintptr_t conn, pdata;	/* the pointers it leaves */
};
void rc_ledger_note(struct rc_obj *o, void *arg);
void rc_ledger_index(const struct rc_obj *e, const struct rc_ack *a);
/* Both, for an event destroyed already. */
void rc_ledger_acked(const struct rc_obj *e, struct rdma_cm_event *ev);
void rc_check_use_after_ack(struct rc_call *c, const void *ptr,
			    const char *what);

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cqcount.h - a CQ's completion events fetched and not acked
 * (cqcount.c), counted without a lock (the hot path of event-driven
 * programs), and the threads inside ibv_get_cq_event.
 */
#ifndef RC_SHIM_CQCOUNT_H
#define RC_SHIM_CQCOUNT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/registry.h"

/* A cell per CQ record (add when made, del when gone, by generation). */
struct rc_cqcount;
struct rc_cq_state {
	int unacked;
	struct rc_evhold hold;
};
void rc_cq_count_add(uintptr_t cq, uint32_t gen);
void rc_cq_count_del(uintptr_t cq, uint32_t gen);
/* A fork child: no doubling under way (another thread's stopped at fork). */
void rc_cq_count_atfork_child(void);
struct rc_cqcount *rc_cq_count(uintptr_t cq);
bool rc_cq_count_get(uintptr_t cq, uint32_t gen, struct rc_cq_state *s);
/* One more fetched; true when the caller should capture the stack (the
 * first unacked event, at a new call site) for rc_cq_set_stack. */
bool rc_cq_fetched(struct rc_cqcount *p, pid_t tid, uint32_t tgen,
		   uintptr_t ra, bool user);
void rc_cq_set_stack(struct rc_cqcount *p, uintptr_t ra, rc_stack_id st);
/* n acked (no more than were fetched with clamp): how many were taken;
 * *before is the count there was. */
int rc_cq_acked(struct rc_cqcount *p, int n, bool clamp, int *before);
/* The threads inside ibv_get_cq_event, by completion channel: a slot for
 * the call (-1: none free, not counted), freed at its end. */
int rc_cq_wait_begin(uintptr_t channel, pid_t tid);
void rc_cq_wait_end(int slot);
unsigned rc_cq_waiters(uintptr_t channel);

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * kinds.h - the kinds of tracked objects (their JSON and text names),
 * and the id of a stored stack, which records of every layer keep: the
 * words the registry, the report model and the report tool share.
 */
#ifndef RC_KINDS_H
#define RC_KINDS_H

#include <stdint.h>

/* An id of the stack depot (unwind/stack.h); 0 means "no stack". */
typedef uint32_t rc_stack_id;

/* Kinds of tracked objects; the names are the JSON "kind" strings. */
#define RC_KINDS(X) \
	X(CHANNEL, "channel", "event channel") \
	X(ID, "id", "cm id") \
	X(EVENT, "event", "cm event") \
	X(QP, "qp", "QP") \
	X(SRQ, "srq", "SRQ") \
	X(MCAST, "multicast", "multicast join") \
	X(ADDRINFO, "addrinfo", "addrinfo list") \
	X(DEVLIST, "device_list", "device list") \
	X(IBV_DEVLIST, "ibv_device_list", "verbs device list") \
	X(CONTEXT, "context", "device context") \
	X(PD, "pd", "PD") \
	X(MR, "mr", "MR") \
	X(MW, "mw", "MW") \
	X(COMP_CHANNEL, "comp_channel", "completion channel") \
	X(CQ, "cq", "CQ") \
	X(AH, "ah", "AH") \
	X(XRCD, "xrcd", "XRC domain") \
	X(WQ, "wq", "WQ") \
	X(RWQ_IND_TABLE, "rwq_ind_table", "RWQ indirection table") \
	X(FLOW, "flow", "flow") \
	X(DM, "dm", "device memory") \
	X(COUNTERS, "counters", "counters object") \
	X(TD, "td", "thread domain") \
	X(CQ_EVENTS, "cq_events", "completion events") \
	X(ASYNC_EVENTS, "async_events", "async events") \
	X(THREAD, "thread", "thread") \
	X(RSOCKET, "rsocket", "rsocket")

enum rc_kind {
#define X(e, json, text) RC_K_##e,
	RC_KINDS(X)
#undef X
	RC_K_COUNT
};

const char *rc_kind_json(enum rc_kind k);	/* "channel", ... */
const char *rc_kind_text(enum rc_kind k);	/* "event channel", ... */

#endif

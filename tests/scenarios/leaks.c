/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks the leak rules (leak-channel, leak-id, leak-event, leak-qp):
 * "bad" exits with a channel, an id, an unacked event and a QP alive, each
 * made in its own function so the report can name it. */
#include <string.h>
#include "scn.h"

static NOINLINE struct rdma_event_channel *make_channel(void)
{
	return scn_channel();
}

static NOINLINE struct rdma_cm_id *make_id(struct rdma_event_channel *ch)
{
	return scn_id(ch);
}

static NOINLINE struct rdma_cm_event *fetch_event(struct rdma_event_channel *ch)
{
	return scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
}

static NOINLINE void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = make_channel();
	struct rdma_cm_id *id = make_id(ch), *id2 = make_id(ch);
	struct rdma_cm_event *ev;

	scn_resolve(id, 7471);
	scn_ack(fetch_event(ch));
	make_qp(id);
	scn_resolve(id2, 7471);
	ev = fetch_event(ch);
	if (bad)
		return 0;
	scn_ack(ev);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(id2);
	rdma_destroy_event_channel(ch);
	return 0;
}

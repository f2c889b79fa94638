/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks channel-destroy-with-unacked-events: an event fetched from the
 * channel is still unacked when the channel goes. */
#include "scn.h"

static NOINLINE void close_channel(struct rdma_event_channel *ch)
{
	rdma_destroy_event_channel(ch);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);
	struct rdma_cm_event *ev;

	scn_resolve(id, 7471);
	ev = scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (bad) {
		close_channel(ch);
		return 0;
	}
	scn_ack(ev);
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	close_channel(ch);
	return 0;
}

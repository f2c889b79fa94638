/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks event-double-ack: the same event is acked twice. */
#include <errno.h>
#include <stdlib.h>
#include "scn.h"

static NOINLINE int ack_again(struct rdma_cm_event *ev)
{
	return rdma_ack_cm_event(ev);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);
	struct rdma_cm_event *ev;

	scn_resolve(id, 7471);
	ev = scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	scn_ack(ev);
	if (bad && (ack_again(ev) != -1 || errno != EINVAL))
		exit(98);
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}

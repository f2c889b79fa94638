/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks id-destroy-with-unacked-events: the id is destroyed while the
 * calling thread still holds its ADDR_RESOLVED event.  The real call would
 * never return; with protect=1 rdmacheck refuses it with EBUSY. */
#include <errno.h>
#include <stdlib.h>
#include "scn.h"

static NOINLINE int drop_id(struct rdma_cm_id *id)
{
	return rdma_destroy_id(id);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);
	struct rdma_cm_event *ev;

	scn_resolve(id, 7471);
	ev = scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (bad && (drop_id(id) != -1 || errno != EBUSY))
		exit(98);	/* the protected call must be refused */
	scn_ack(ev);
	if (drop_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}

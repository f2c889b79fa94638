/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks migrate-with-unacked-events: the id moves to another channel
 * while the caller holds its event (a self-deadlock in the real call). */
#include <errno.h>
#include <stdlib.h>
#include "scn.h"

static NOINLINE int move_id(struct rdma_cm_id *id,
			    struct rdma_event_channel *to)
{
	return rdma_migrate_id(id, to);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = scn_channel(), *ch2 = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);
	struct rdma_cm_event *ev;

	scn_resolve(id, 7471);
	ev = scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (bad && (move_id(id, ch2) != -1 || errno != EBUSY))
		exit(98);
	scn_ack(ev);
	if (move_id(id, ch2))
		scn_die("rdma_migrate_id");
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
	return 0;
}

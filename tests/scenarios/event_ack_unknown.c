/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks event-ack-unknown: acks memory rdma_get_cm_event never returned. */
#include <errno.h>
#include <stdlib.h>
#include "scn.h"

static NOINLINE int ack_bogus(void)
{
	static struct rdma_cm_event fake;

	return rdma_ack_cm_event(&fake);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);

	scn_resolve(id, 7471);
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (bad && (ack_bogus() != -1 || errno != EINVAL))
		exit(98);
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* A plugin linked against librdmacm, loaded late with dlopen(RTLD_LOCAL):
 * its rdmacm calls must still be checked. */
#include "scn.h"

NOINLINE int plugin_run(int bad)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return 99;
	if (rdma_destroy_id(id))
		return 99;
	if (bad)
		rdma_destroy_id(id);	/* double-destroy */
	rdma_destroy_event_channel(ch);
	return 0;
}

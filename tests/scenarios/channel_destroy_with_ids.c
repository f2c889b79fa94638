/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks channel-destroy-with-ids: the channel goes while a cm id uses it. */
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

	if (!bad && rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	close_channel(ch);
	return 0;
}

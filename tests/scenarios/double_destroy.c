/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks double-destroy: destroys the same cm id twice. */
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

	if (drop_id(id))
		scn_die("rdma_destroy_id");
	if (bad && (drop_id(id) != -1 || errno != EINVAL))
		exit(98);
	rdma_destroy_event_channel(ch);
	return 0;
}

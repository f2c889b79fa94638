/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks unknown-handle: destroys a pointer no create call returned. */
#include <errno.h>
#include <stdlib.h>
#include "scn.h"

static NOINLINE int drop_bogus(void)
{
	struct rdma_cm_id *bogus = calloc(1, sizeof(*bogus));
	int ret = rdma_destroy_id(bogus);

	free(bogus);
	return ret;
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);

	if (bad && (drop_bogus() != -1 || errno != EINVAL))
		exit(98);
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}

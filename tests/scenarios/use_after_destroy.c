/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Breaks use-after-destroy: resolves an address on a destroyed id. */
#include <errno.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include "scn.h"

static NOINLINE int resolve_again(struct rdma_cm_id *id)
{
	struct sockaddr_in sin;

	scn_addr(&sin, 0);
	return rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000);
}

int main(int argc, char **argv)
{
	bool bad = scn_bad(argc, argv);
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_cm_id *id = scn_id(ch);

	if (bad) {
		if (rdma_destroy_id(id))
			scn_die("rdma_destroy_id");
		if (resolve_again(id) != -1 || errno != EINVAL)
			exit(98);
	} else {
		if (resolve_again(id))
			scn_die("rdma_resolve_addr");
		scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_destroy_id(id))
			scn_die("rdma_destroy_id");
	}
	rdma_destroy_event_channel(ch);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/loopback-asan/canary.c: a deliberate use after free inside the
 * loopback librdmacm (an event acked twice: the second ack reads the
 * freed event, as the real library's does), which the ASan build must
 * report.  asan.sh runs it to prove that a report would not go unnoticed.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

int main(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin;
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) ||
	    rdma_get_cm_event(ch, &e)) {
		perror("canary: setting up an event");
		return 2;
	}
	rdma_ack_cm_event(e);
	rdma_ack_cm_event(e);
	printf("canary: not caught\n");
	return 0;
}

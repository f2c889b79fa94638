/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mcast.c - multicast rules: argv[1] is leave-multicast-with-unacked-events,
 * id-destroy-with-multicast, leave-multicast-not-joined, leak-multicast, or
 * clean (join, ack, leave, destroy in order).  A UD id bound to the test
 * address with a UD QP joins 239.0.0.1, as mckey does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "scn.h"

static struct rdma_event_channel *ch;
static struct sockaddr_in group;
static int ctx;

static struct rdma_cm_id *ud_id(void)
{
	struct ibv_qp_init_attr attr;
	struct sockaddr_in sin;
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		scn_die("rdma_create_id(PS_UDP)");
	scn_addr(&sin, 0);
	if (rdma_bind_addr(id, (struct sockaddr *)&sin))
		scn_die("rdma_bind_addr");
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_UD;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp(UD)");
	return id;
}

static NOINLINE struct rdma_cm_event *join_group(struct rdma_cm_id *id)
{
	if (rdma_join_multicast(id, (struct sockaddr *)&group, &ctx))
		scn_die("rdma_join_multicast");
	return scn_get(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
}

static NOINLINE int leave_group(struct rdma_cm_id *id)
{
	return rdma_leave_multicast(id, (struct sockaddr *)&group);
}

static NOINLINE int drop_id(struct rdma_cm_id *id)
{
	return rdma_destroy_id(id);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "clean";
	char *clean[] = { argv[0], "clean" };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	scn_bad(2, clean);
	memset(&group, 0, sizeof(group));
	group.sin_family = AF_INET;
	inet_pton(AF_INET, "239.0.0.1", &group.sin_addr);
	ch = scn_channel();
	id = ud_id();
	if (!strcmp(mode, "leave-multicast-not-joined")) {
		if (leave_group(id) != -1)
			exit(98);
		goto out;
	}
	ev = join_group(id);
	if (ev->param.ud.private_data != &ctx)
		scn_die("MULTICAST_JOIN without the join context");
	if (!strcmp(mode, "leave-multicast-with-unacked-events") &&
	    (leave_group(id) != -1 || errno != EBUSY))
		exit(98);
	scn_ack(ev);
	if (!strcmp(mode, "leak-multicast"))
		return 0;
	if (!strcmp(mode, "id-destroy-with-multicast")) {
		rdma_destroy_qp(id);
		if (drop_id(id))
			scn_die("rdma_destroy_id");
		rdma_destroy_event_channel(ch);
		return 0;
	}
	if (leave_group(id))
		scn_die("rdma_leave_multicast");
out:
	rdma_destroy_qp(id);
	if (drop_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}

/* Breaks id-destroy-with-qp: the id goes while it still has its QP. */
#include <string.h>
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
	struct ibv_qp_init_attr attr;

	scn_resolve(id, 7471);
	scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &attr))
		scn_die("rdma_create_qp");
	if (!bad)
		rdma_destroy_qp(id);
	if (drop_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}

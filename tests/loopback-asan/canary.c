/*
 * tests/loopback-asan/canary.c: a deliberate use after free inside the
 * loopback librdmacm (an event channel destroyed twice: the second call
 * reads the freed channel), which the ASan build must report.  asan.sh
 * runs it to prove that a report would not go unnoticed.
 */
#include <config.h>

#include <stdio.h>
#include <rdma/rdma_cma.h>

int main(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch) {
		perror("rdma_create_event_channel");
		return 2;
	}
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch);
	printf("canary: not caught\n");
	return 0;
}

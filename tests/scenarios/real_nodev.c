/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Over the real librdmacm on a machine without RDMA devices every call
 * fails; run with and without the shim, the printed results (return
 * values and errno) must be identical and rdmacheck must report nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#define SHOW(expr) do {							\
	long r_;							\
	errno = 0;							\
	r_ = (long)(expr);						\
	printf("%-44s -> %s (errno %d)\n", #expr,			\
	       r_ == 0 ? "0/NULL" : r_ == -1 ? "-1" : "value", errno);	\
} while (0)

int main(void)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_cm_id *id = NULL;
	int n = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	SHOW(rdma_create_event_channel());
	SHOW(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
	SHOW(rdma_get_devices(&n));
	printf("num_devices %d\n", n);
	SHOW(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res));
	rdma_freeaddrinfo(NULL);
	SHOW(rsocket(AF_INET, SOCK_STREAM, 0));
	SHOW(rpoll(NULL, 0, 0));
	printf("%s\n", rdma_event_str(RDMA_CM_EVENT_ESTABLISHED));
	return 0;
}

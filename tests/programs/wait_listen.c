/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wait_listen.c - preloaded into the qperf 0.4.11 client only: its
 * rdma_connect waits (bounded, by polling /proc/net/unix) until the
 * loopback listener of the destination port exists.  qperf 0.4.11's
 * server sends its port before it calls rdma_listen, so a fast client is
 * rejected (upstream qperf 118a571 "Fix rdmacm race" makes the server
 * listen first); this readiness wait gives the test the order the fixed
 * qperf has, without changing anything else.  Exported as
 * rdma_connect@RDMACM_1.0 (wait_listen.map), so that a shim preloaded
 * before it, which looks up the next rdma_connect by version, finds it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

/* A listening abstract socket named @NS/cm/tcp/PORT. */
static int listening(const char *name)
{
	char line[512], path[256];
	unsigned flags;
	FILE *f = fopen("/proc/net/unix", "r");
	int found = 0;

	if (!f)
		return 1;	/* cannot tell: do not wait */
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %*s %*s %x %*s %*s %*s %255s",
			       &flags, path) == 2 && flags == 0x10000 &&
			!strcmp(path, name);
	fclose(f);
	return found;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	int (*real)(struct rdma_cm_id *, struct rdma_conn_param *) =
		(int (*)(struct rdma_cm_id *, struct rdma_conn_param *))
		dlvsym(RTLD_NEXT, "rdma_connect", "RDMACM_1.0");
	struct sockaddr_in *dst = (struct sockaddr_in *)&id->route.addr.dst_addr;
	const char *ns = getenv("RDMACHECK_LOOPBACK_NS");
	struct timespec nap = { 0, 10000000 };
	char name[256];
	int i;

	if (ns && dst->sin_family == AF_INET && id->ps == RDMA_PS_TCP) {
		snprintf(name, sizeof(name), "@%s/cm/tcp/%u", ns,
			 ntohs(dst->sin_port));
		for (i = 0; i < 500 && !listening(name); i++)
			nanosleep(&nap, NULL);
	}
	return real(id, param);
}

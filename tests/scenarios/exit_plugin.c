/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * exit_plugin.c - a library that, like libfabric, keeps an rdma_getaddrinfo
 * list for its whole life and frees it in its ELF destructor; dlopen()ed
 * by exit_main.  The list must not be reported as leaked: the leak check
 * runs after every destructor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scn.h"

static struct rdma_addrinfo *kept;

NOINLINE void plugin_lookup(void)
{
	const char *addr = getenv("RDMACHECK_TEST_ADDR");
	struct rdma_addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr && *addr ? addr : "127.0.0.1", "7471",
			     &hints, &kept)) {
		perror("exit_plugin: rdma_getaddrinfo");
		exit(99);
	}
}

__attribute__((destructor)) static void plugin_fini(void)
{
	static const char msg[] = "plugin destructor ran\n";

	rdma_freeaddrinfo(kept);
	if (write(STDOUT_FILENO, msg, strlen(msg)) < 0)
		_exit(96);
}

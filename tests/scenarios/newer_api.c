/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * newer_api.c - the librdmacm functions newer than 44.0 (RDMACM_1.4),
 * which programs probe for before they use them (weak symbols, dlsym).
 * argv[1]:
 *   absent      on a 44.0 library: the probe must find none of them, or
 *               the program would take a path the library cannot serve
 *   present     on a library with RDMACM_1.4 (through the launcher, which
 *               adds the shim's extension object): found, and used as
 *               rdma-core 60+ programs do; the list is freed: clean
 *   query-leak  the same, but the list rdma_query_addrinfo hands over is
 *               never freed: leak-addrinfo
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scn.h"

#define EV_ADDRINFO_RESOLVED 16	/* rdma-core 60+; 44.0's headers lack it */

int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
			  const char *service,
			  const struct rdma_addrinfo *hints)
	__attribute__((weak));
int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info)
	__attribute__((weak));

static bool have(const char *name, void *weak)
{
	bool found = dlsym(RTLD_DEFAULT, name) != NULL;

	if (found != (weak != NULL)) {
		fprintf(stderr, "newer_api: dlsym and the weak symbol disagree "
			"about %s\n", name);
		exit(97);
	}
	printf("%s: %s\n", name, found ? "present" : "absent");
	return found;
}

static NOINLINE struct rdma_addrinfo *query_list(struct rdma_cm_id *id)
{
	struct rdma_addrinfo *ai;

	if (rdma_query_addrinfo(id, &ai))
		scn_die("rdma_query_addrinfo");
	return ai;
}

int main(int argc, char **argv)
{
	const char *mode = scn_mode(argc, argv);
	struct rdma_event_channel *ch = scn_channel();
	struct rdma_addrinfo hints, *ai;
	struct rdma_cm_id *id;
	bool found;

	found = have("rdma_resolve_addrinfo", (void *)rdma_resolve_addrinfo);
	found &= have("rdma_query_addrinfo", (void *)rdma_query_addrinfo);
	if (!strcmp(mode, "absent")) {
		rdma_destroy_event_channel(ch);
		return found ? 97 : 0;
	}
	if (!found)
		return 97;
	id = scn_id(ch);
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_resolve_addrinfo(id, scn_addr_str(), "7471", &hints))
		scn_die("rdma_resolve_addrinfo");
	scn_ack(scn_get(ch, EV_ADDRINFO_RESOLVED));
	ai = query_list(id);
	if (strcmp(mode, "query-leak"))
		rdma_freeaddrinfo(ai);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Built with -fsanitize=address (tests/launcher/asan-first.sh): prints
 * its LD_PRELOAD, then leaks an event channel for the shim to report.
 * It only starts at all when ASan's runtime comes first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <rdma/rdma_cma.h>

int main(void)
{
	const char *p = getenv("LD_PRELOAD");

	printf("LD_PRELOAD=%s\n", p ? p : "");
	if (!rdma_create_event_channel()) {
		perror("rdma_create_event_channel");
		return 1;
	}
	return 0;
}

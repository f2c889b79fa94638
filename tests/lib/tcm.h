/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/tcm.h: the rdma_cm helper of the C test programs that drive
 * connections by hand: the next event on a channel, which must come
 * within 10 s and be of the type expected (else the program stops, with
 * what came instead).  Include after tcheck.h.
 */
#ifndef RDMACHECK_TESTS_TCM_H
#define RDMACHECK_TESTS_TCM_H

#include <poll.h>
#include <rdma/rdma_cma.h>

static inline struct rdma_cm_event *
tcm_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e;

	REQUIRE(poll(&pfd, 1, 10000) == 1);
	REQUIRE(rdma_get_cm_event(ch, &e) == 0);
	if (e->event != t) {
		fprintf(stderr, "FATAL: got %s (status %d), want %s\n",
			rdma_event_str(e->event), e->status, rdma_event_str(t));
		exit(1);
	}
	return e;
}

#endif

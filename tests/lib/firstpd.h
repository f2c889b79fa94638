/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * firstpd.h - the first verbs device's context and a protection domain on
 * it, for the programs that time or count verbs calls
 * (bench/bench_shim.c, bench/bench_scale.c, tests/perf/cost.c).
 */
#ifndef RC_FIRSTPD_H
#define RC_FIRSTPD_H

#include <infiniband/verbs.h>

/* The PD, its context in *ctx; NULL (and *ctx perhaps NULL) on a failure. */
static inline struct ibv_pd *first_pd(struct ibv_context **ctx)
{
	struct ibv_device **list;
	struct ibv_pd *pd;
	int n;

	list = ibv_get_device_list(&n);
	*ctx = list && n > 0 ? ibv_open_device(list[0]) : NULL;
	pd = *ctx ? ibv_alloc_pd(*ctx) : NULL;
	/* An open device outlives its list (ibv_get_device_list(3)). */
	if (list)
		ibv_free_device_list(list);
	return pd;
}

#endif

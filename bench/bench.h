/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench.h - what the benchmark programs (bench_shim.c, bench_scale.c)
 * share: a monotonic clock in ns, dying on a failed call, the median of
 * rounds, and the create/destroy pair of cm ids both time.
 */
#ifndef RC_BENCH_H
#define RC_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <rdma/rdma_cma.h>

/* Rounds per measure: the median damps other load on the machine. */
#define ROUNDS 7

static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline void die(const char *what)
{
	perror(what);
	exit(1);
}

/* For qsort of doubles (medians: other load only ever adds time). */
static inline int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

/* ns per rdma_create_id + rdma_destroy_id on ch, median of ROUNDS. */
static inline double id_pair_ns(struct rdma_event_channel *ch, int n)
{
	double r[ROUNDS], t;
	struct rdma_cm_id *id;
	int i, k;

	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < n; i++) {
			if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
				die("rdma_create_id");
			if (rdma_destroy_id(id))
				die("rdma_destroy_id");
		}
		r[k] = (now_ns() - t) / n;
	}
	return median(r, ROUNDS);
}

#endif

/*
 * bench.h - what the benchmark programs (bench_shim.c, bench_scale.c)
 * share: a monotonic clock in ns, dying on a failed call, and the double
 * comparison for qsort that their medians use.
 */
#ifndef RC_BENCH_H
#define RC_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

#endif

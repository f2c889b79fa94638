/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * reg_scale.c - the registry alone at scale: n live records, then m
 * insert + get + take triples (in bench_loop, for callgrind's
 * --toggle-collect), at fresh addresses or cycling over `reuse' of them
 * as an allocator hands memory out again.  Prints the time per triple
 * and the slowest one.  Built by make check, not run by it.
 *   reg_scale N REUSE M    (REUSE 0: every address fresh)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/registry.h"

static char *base;
static unsigned long n, reuse;
static double slowest;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void mk(struct rc_obj *o, uintptr_t h)
{
	memset(o, 0, sizeof(*o));
	o->handle = h;
	o->kind = RC_K_ID;
}

__attribute__((noinline)) void bench_loop(unsigned long m)
{
	struct rc_obj o, out;
	unsigned long i;
	uintptr_t h;
	double t;

	for (i = 0; i < m; i++) {
		h = (uintptr_t)(base + 16 * (n + (reuse ? i % reuse : i)));
		t = now_ns();
		mk(&o, h);
		rc_reg_insert(&o);
		rc_reg_get(h, &out);
		rc_reg_take(h, RC_K_ID, 0, 1, 1, &out);
		t = now_ns() - t;
		if (t > slowest)
			slowest = t;
	}
}

int main(int argc, char **argv)
{
	unsigned long i, m;
	struct rc_obj o;
	double t;

	if (argc != 4)
		return 2;
	n = strtoul(argv[1], NULL, 0);
	reuse = strtoul(argv[2], NULL, 0);
	m = strtoul(argv[3], NULL, 0);
	base = malloc(16 * (n + m + 1));
	if (!base)
		return 1;
	rc_reg_init();
	for (i = 0; i < n; i++) {
		mk(&o, (uintptr_t)(base + 16 * i));
		rc_reg_insert(&o);
	}
	t = now_ns();
	bench_loop(m);
	printf("%lu live: %.1f ns per triple, slowest %.1f us\n", n,
	       m ? (now_ns() - t) / m : 0, slowest / 1000);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/pad.h: run a function under a deep stack of real frames, so
 * that a capture in the shim always finds more frames than stack_depth
 * (at most RC_STACK_MAX_DEPTH, 64) and its unwinder never stops early at
 * main(): the cost measured is that of a full-depth capture, as in a
 * program whose RDMA calls sit deep in its own code.  pad_call() adds the
 * same frames each time (one stack, a depot hit after the first call);
 * pad_site() picks one of two functions per frame by the bits of a site
 * number, so that each site is a distinct stack.  Used by bench/ and
 * tests/perf/; single-file programs only.
 */
#ifndef RDMACHECK_TESTS_PAD_H
#define RDMACHECK_TESTS_PAD_H

/* Frames added below the caller: above the 64 a capture can keep. */
#define PAD_FRAMES 72

typedef double (*pad_fn)(void *arg);

/*
 * Each level is its own frame: noinline, and the barrier after the call
 * keeps it from being a tail call (which would reuse the frame).
 */
static __attribute__((noinline, noclone)) double pad_rec(int n, pad_fn fn,
							void *arg)
{
	double r;

	if (n <= 0)
		return fn(arg);
	r = pad_rec(n - 1, fn, arg);
	__asm__ __volatile__("" : "+g"(r) : : "memory");
	return r;
}

static inline double pad_call(pad_fn fn, void *arg)
{
	return pad_rec(PAD_FRAMES, fn, arg);
}

static __attribute__((noinline, noclone)) double pad_b(unsigned site, int n,
						      pad_fn fn, void *arg);

/* Bit n of site chooses pad_a or pad_b for frame n: 2^n distinct stacks. */
static __attribute__((noinline, noclone)) double pad_a(unsigned site, int n,
						      pad_fn fn, void *arg)
{
	double r;

	if (n <= 0)
		return fn(arg);
	r = (site >> (n - 1) & 1) ? pad_b(site, n - 1, fn, arg) :
				    pad_a(site, n - 1, fn, arg);
	__asm__ __volatile__("" : "+g"(r) : : "memory");
	return r;
}

static __attribute__((noinline, noclone)) double pad_b(unsigned site, int n,
						      pad_fn fn, void *arg)
{
	double r;

	if (n <= 0)
		return fn(arg);
	r = (site >> (n - 1) & 1) ? pad_b(site, n - 1, fn, arg) :
				    pad_a(site, n - 1, fn, arg);
	__asm__ __volatile__("" : "+g"(r) : : "memory");
	return r;
}

struct pad_site_arg {
	unsigned site;
	pad_fn fn;
	void *arg;
};

static double pad_site_start(void *arg)
{
	struct pad_site_arg *a = arg;

	return pad_a(a->site, 14, a->fn, a->arg);
}

/*
 * Call fn under a deep stack whose 14 frames nearest to fn differ from
 * every other site's: up to 16384 sites, each within stack_depth=16.
 */
static inline double pad_site(unsigned site, pad_fn fn, void *arg)
{
	struct pad_site_arg a = { site, fn, arg };

	return pad_rec(PAD_FRAMES - 14, pad_site_start, &a);
}

#endif

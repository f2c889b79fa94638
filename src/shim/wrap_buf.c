/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_buf.c - free, realloc and munmap, for track_buffers=1
 * (free-registered-memory: memory freed while a live MR covers it, which
 * wrap_wr.c's MR table tells).  Off, each is one indirect call to the
 * next definition: the pointer starts at a resolver, which once the
 * options are known points it at the real function or at the check.
 * The resolver runs inside dlsym too (the loader frees its scratch
 * memory): a free the lookup itself makes is dropped, never recursed on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/wr.h"

static RC_TLS int buf_busy;	/* inside a lookup or a check */

/* ra: where the program called, which the check classifies. */
static void free_first(void *p, uintptr_t ra);
static void *realloc_first(void *p, size_t n, uintptr_t ra);
static int munmap_first(void *p, size_t n, uintptr_t ra);

static void (*free_fn)(void *, uintptr_t) = free_first;
static void *(*realloc_fn)(void *, size_t, uintptr_t) = realloc_first;
static int (*munmap_fn)(void *, size_t, uintptr_t) = munmap_first;
static void (*real_free)(void *);
static void *(*real_realloc)(void *, size_t);
static int (*real_munmap)(void *, size_t);

static void *next_fn(const char *name)
{
	void *p;
	int e = errno;

	buf_busy++;
	p = dlsym(RTLD_NEXT, name);
	buf_busy--;
	errno = e;
	return p;
}

/* Report a range a live MR covers that fn is about to release. */
static void __attribute__((noinline)) check(enum rc_fn fn, uintptr_t ra,
					    const void *p, size_t len)
{
	const struct ibv_mr *mr;
	struct rc_finding f;
	struct rc_obj o;
	RC_CALL(c);

	if (buf_busy || !p || !rc_wr_mr_covers((uintptr_t)p, len, &mr))
		return;
	buf_busy++;
	rc_call_begin(&c, fn, ra);
	if (!c.skip && !c.internal) {
		rc_finding_init(&f, RC_R_FREE_REGISTERED_MEMORY, &c,
				"%s(%p) of %zu bytes that MR %p still covers: "
				"the NIC keeps reading and writing those pages "
				"while they are given out again",
				rc_fn_info[fn].name, p, len, (void *)mr);
		if (rc_v_live_mr(mr, &o))
			rc_finding_add(&f, &o, "the MR");
		rc_report(&f);
	}
	buf_busy--;
}

static void free_real(void *p, uintptr_t ra)
{
	(void)ra;
	real_free(p);
}

static void *realloc_real(void *p, size_t n, uintptr_t ra)
{
	(void)ra;
	return real_realloc(p, n);
}

static int munmap_real(void *p, size_t n, uintptr_t ra)
{
	(void)ra;
	return real_munmap(p, n);
}

static void free_check(void *p, uintptr_t ra)
{
	if (p && !buf_busy)
		check(RC_FN_free, ra, p, malloc_usable_size(p));
	real_free(p);
}

static void *realloc_check(void *p, size_t n, uintptr_t ra)
{
	if (p && !buf_busy)
		check(RC_FN_realloc, ra, p, malloc_usable_size(p));
	return real_realloc(p, n);
}

static int munmap_check(void *p, size_t n, uintptr_t ra)
{
	if (!buf_busy)
		check(RC_FN_munmap, ra, p, n);
	return real_munmap(p, n);
}

static bool options_known(void)
{
	return __atomic_load_n(&rc_init_state, __ATOMIC_ACQUIRE) ==
	       RC_INIT_DONE;
}

static void free_first(void *p, uintptr_t ra)
{
	if (!real_free) {
		if (buf_busy)
			return;	/* the loader's, during our lookup */
		*(void **)&real_free = next_fn("free");
		if (!real_free)
			return;
	}
	if (options_known())
		free_fn = rc_opt.track_buffers ? free_check : free_real;
	free_fn == free_check ? free_check(p, ra) : real_free(p);
}

static void *realloc_first(void *p, size_t n, uintptr_t ra)
{
	if (!real_realloc && !(*(void **)&real_realloc = next_fn("realloc"))) {
		errno = ENOMEM;
		return NULL;
	}
	if (options_known())
		realloc_fn = rc_opt.track_buffers ? realloc_check :
			     realloc_real;
	return realloc_fn == realloc_check ? realloc_check(p, n, ra) :
	       real_realloc(p, n);
}

static int munmap_first(void *p, size_t n, uintptr_t ra)
{
	if (!real_munmap && !(*(void **)&real_munmap = next_fn("munmap"))) {
		errno = ENOSYS;
		return -1;
	}
	if (options_known())
		munmap_fn = rc_opt.track_buffers ? munmap_check : munmap_real;
	return munmap_fn == munmap_check ? munmap_check(p, n, ra) :
	       real_munmap(p, n);
}

#define RA ((uintptr_t)__builtin_return_address(0))

void free(void *p)
{
	free_fn(p, RA);
}

void *realloc(void *p, size_t n)
{
	return realloc_fn(p, n, RA);
}

int munmap(void *p, size_t n)
{
	return munmap_fn(p, n, RA);
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * interpose.h - how a wrapper reaches the real function and tells who
 * called it.  Generated from rdmacm_api.def.
 */
#ifndef RC_INTERPOSE_H
#define RC_INTERPOSE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rdmacheck.h"

enum rc_fn {
#define RC_API(how, ret, name, ...) RC_FN_##name,
#include "shim/rdmacm_api.def"
#undef RC_API
	RC_FN_COUNT
};

struct rc_fn_info {
	const char *name;
	const char *version;
	const char *effect;	/* "" when the call changes no ownership */
	bool ext;		/* exported by an extension object */
};

extern const struct rc_fn_info rc_fn_info[RC_FN_COUNT];
extern void *rc_real[RC_FN_COUNT];
extern int rc_verbosity;	/* copy of rc_opt.verbosity for hot paths */

void *rc_resolve(enum rc_fn fn);

/* Note our own text as library code; from the constructor. */
void rc_interpose_init(void);

/* The real function, resolved once (dlvsym), NULL when missing. */
static inline void *rc_real_fn(enum rc_fn fn)
{
	void *p = __atomic_load_n(&rc_real[fn], __ATOMIC_ACQUIRE);

	return RC_LIKELY(p) ? p : rc_resolve(fn);
}

#define RC_REAL(name) \
	((__typeof__(&name))rc_real_fn(RC_FN_##name))

/*
 * A wrapper's own name and parameters.  Functions of a librdmacm version
 * node newer than the library we were configured against are built as
 * rc_ext_NAME(uintptr_t rc_ra, ...), called by an extension object with
 * the return address of the program's call (gen-api.sh); RC_RA is that
 * address either way.
 */
#include "src/rc_nodes.h"
#define RC_CAT_(a, b) a##b
#define RC_CAT(a, b) RC_CAT_(a, b)
#define RC_UNPAREN(...) __VA_ARGS__
#define RC_NAME(name) RC_CAT(RC_NAME_, RC_IN_BASE_##name)(name)
#define RC_NAME_1(name) name
#define RC_NAME_0(name) rc_ext_##name
#define RC_PARAMS(name, params) \
	RC_CAT(RC_PARAMS_, RC_IN_BASE_##name)(params)
#define RC_PARAMS_1(params) params
#define RC_PARAMS_0(params) (uintptr_t rc_ra, RC_UNPAREN params)
#define RC_RA(name) RC_CAT(RC_RA_, RC_IN_BASE_##name)
#define RC_RA_1 ((uintptr_t)__builtin_return_address(0))
#define RC_RA_0 rc_ra

/*
 * Whose text a return address lies in: librdmacm's, libibverbs' or our
 * own (a library-internal call through the PLT), or anyone else's (the
 * program, and the libraries it uses that are not ours to follow).  Our
 * own text counts because librdmacm tail-calls some exports
 * (rdma_destroy_ep ends in a jump to rdma_destroy_id), which then return
 * into the wrapper that called it.
 */
enum rc_module {
	RC_MOD_USER,
	RC_MOD_SELF,
	RC_MOD_RDMACM,
	RC_MOD_VERBS,
};
enum rc_module rc_caller_module(uintptr_t ret_addr);
/* Not RC_MOD_USER. */
bool rc_caller_internal(uintptr_t ret_addr);

/* Log a line for verbosity >= 1 (ownership) or 2 (every call). */
void rc_trace_call(enum rc_fn fn, unsigned mod, const void *arg0);

/*
 * Recursion guard: set while our own bookkeeping runs; a wrapper entered
 * while it is set forwards untouched.
 */
extern RC_TLS int rc_busy;

#endif

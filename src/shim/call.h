/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * call.h - the call protocol every hand-written wrapper follows
 * (wrap_common.c): the per-call context, forwarding with the caller's
 * errno, the entry prologue, handle validation with its standard
 * findings, finding builders, and the records a call makes or ends.
 * A wrapper reads as: enter -> check rules -> forward (or refuse) ->
 * record the outcome.
 */
#ifndef RC_SHIM_CALL_H
#define RC_SHIM_CALL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/interpose.h"
#include "core/registry.h"
#include "report/report.h"

struct rc_call {
	enum rc_fn fn;
	bool internal;		/* made by librdmacm itself */
	uint8_t mod;		/* whose text called (enum rc_module) */
	bool skip;		/* our own code re-entered: track nothing */
	bool fwd;		/* forwarded: err is what the real call left */
	int err;		/* the caller's errno, then the real call's */
	pid_t tid;
	rc_stack_id stack;	/* captured on first use */
	struct rc_ref inside;	/* the id this call is inside, if any */
	struct rc_tally_cell *inside_cell; /* its cell (NULL: none), set
					    * with inside */
	uint16_t id_flags;	/* CHECK wrappers: the id's flags */
	const void *frame;	/* the wrapper's frame: fast_unwind starts here */
	struct rc_ref pre_link;	/* verbs parent whose child count this call
				 * took with its check (rc_v_require_parent),
				 * given back at the end unless tracked */
};

/*
 * A wrapper's call context.  When the wrapper returns, errno is what the
 * real call left (our own bookkeeping never shows through); a refused call
 * keeps the errno the wrapper set.
 */
#define RC_CALL(c) \
	struct rc_call c __attribute__((cleanup(rc_call_end))) = {	\
		.fwd = false, .frame = __builtin_frame_address(0) }
void rc_call_end(struct rc_call *c);

/* Forward to the real function with the caller's errno; keep what the
 * real function leaves. */
#define RC_FWD(c, call) ({						\
	errno = (c)->err;						\
	__typeof__(call) rc_fwd_ret_ = (call);				\
	(c)->err = errno;						\
	(c)->fwd = true;						\
	rc_fwd_ret_;							\
})
#define RC_FWDV(c, call) do {						\
	errno = (c)->err;						\
	call;								\
	(c)->err = errno;						\
	(c)->fwd = true;						\
} while (0)

/*
 * What the lifecycle does at a call, reached only through these hooks:
 * lifecycle.c defines rc_lifecycle_hooks, and the call protocol's weak
 * default does nothing, so that it links without the lifecycle (the unit
 * tests).  A definition, not a registration at run time: a wrapper may
 * run before any constructor of ours.
 */
struct rc_lifecycle_hooks {
	void (*init)(void);	/* until the constructor has run */
	void (*first_use)(void);	/* the process's first call */
	void (*alt_stack)(void);	/* a thread's first call */
};
extern const struct rc_lifecycle_hooks rc_lifecycle_hooks;

/* Make sure the constructor ran (wrappers may run before it); inline:
 * one load on every call once it has. */
enum { RC_INIT_NONE, RC_INIT_RUNNING, RC_INIT_DONE };
extern int rc_init_state;
static inline void rc_ensure_init(void)
{
	if (RC_LIKELY(__atomic_load_n(&rc_init_state, __ATOMIC_ACQUIRE) ==
		      RC_INIT_DONE))
		return;
	rc_lifecycle_hooks.init();
}

/* The process has made an intercepted call (set by the first_use hook). */
extern bool rc_used;

/* An alternate signal stack for the calling thread, once (the alt_stack
 * hook): a stack overflow still leaves a crash report. */
extern RC_TLS bool rc_alt_done;
static inline void rc_thread_alt_stack(void)
{
	if (RC_UNLIKELY(!rc_alt_done))
		rc_lifecycle_hooks.alt_stack();
}

/*
 * Start a call: init check, recursion guard, classification.  Once the
 * shim is set up and this thread has made a call, what is left is
 * classification and the thread id: inline, the rest (the first call of
 * the process or of a thread, tracing, re-entry) in rc_call_begin_slow.
 */
extern bool rc_hot_ok;			/* set up, used, verbosity 0 */
extern RC_TLS bool rc_hot_thread;	/* this thread has been set up */
extern RC_TLS pid_t rc_hot_tid;		/* its id, 0 after a fork */
void rc_call_begin_slow(struct rc_call *c, enum rc_fn fn, uintptr_t ret_addr);
static inline void rc_call_begin(struct rc_call *c, enum rc_fn fn,
				 uintptr_t ret_addr)
{
	if (RC_UNLIKELY(!__atomic_load_n(&rc_hot_ok, __ATOMIC_RELAXED) ||
			!rc_hot_thread || !rc_hot_tid || rc_busy)) {
		rc_call_begin_slow(c, fn, ret_addr);
		return;
	}
	c->err = errno;
	c->fwd = false;
	c->fn = fn;
	c->skip = false;
	c->mod = rc_caller_module(ret_addr);
	c->internal = c->mod != RC_MOD_USER;
	c->tid = rc_hot_tid;
	c->stack = 0;
	c->inside = (struct rc_ref){ 0, 0 };
}

/*
 * A hand-written wrapper's entry: when the real function is missing, fail
 * as the .def table says (RC_MISSING_name, generated: ENOSYS), else start
 * the call.  Macros, so that the return address is the wrapper's.
 */
#define RC_NEED_REAL(name) do {						\
	if (!RC_REAL(name))					\
		RC_MISSING_##name;					\
} while (0)
#define RC_ENTER(c, name) do {						\
	RC_NEED_REAL(name);						\
	rc_call_begin(&(c), RC_FN_##name, RC_RA(name));			\
} while (0)

/*
 * The call's stack, captured once.  Inline: a frame less between the
 * capture and the caller is a frame less to unwind.
 */
static inline rc_stack_id rc_call_stack(struct rc_call *c)
{
	if (!c->stack) {
		rc_busy++;
		c->stack = rc_stack_capture_at(c->fn, c->frame);
		rc_busy--;
	}
	return c->stack;
}

/* The cached pid of this process (updated in fork children). */
pid_t rc_pid(void);

/* What a handle argument turned out to be. */
enum rc_handle_state {
	RC_H_LIVE,		/* a live object of the expected kind */
	RC_H_UNKNOWN,		/* never returned by a create call */
	RC_H_DESTROYED,		/* destroyed or freed earlier */
};

enum rc_handle_use {
	RC_USE,			/* any call that takes the handle */
	RC_DESTROY,		/* a destroy or free */
};

/*
 * Validate a handle a user call passes.  Reports use-after-destroy,
 * double-destroy or unknown-handle when it is not live.  Returns true when
 * the call may go on (o filled when live; o->handle 0 otherwise), false
 * when it must be refused (protect=1; errno is set to EINVAL).
 */
bool rc_require(struct rc_call *c, enum rc_kind kind, const void *h,
		enum rc_handle_use use, struct rc_obj *o);

/* use-after-fork: o, a live object of the parent, used in a fork child. */
void rc_report_fork(struct rc_call *c, const struct rc_obj *o);

/*
 * The generated CHECK wrappers: the first argument must be a live id; for
 * CHECKP (rdma_connect, rdma_accept, rdma_reject) arg, the connection
 * parameters or rdma_reject's private data, must not point into an acked
 * event.
 */
bool rc_check_id_call(enum rc_fn fn, const void *id, const void *arg,
		      uintptr_t ret_addr, struct rc_call *c);

/*
 * concurrent-calls-on-id: note that the calling thread is inside a call on
 * the live id o, and report when another thread already is and one of the
 * two calls is a destroy or a synchronous operation.  Returns false when
 * the call must be refused: a destroy or migrate while another thread is
 * inside a blocking synchronous call on the id (it would use freed memory
 * when it returns).  rc_inside_end when the call returns.
 */
bool rc_inside_begin(struct rc_call *c, const struct rc_obj *o);

/*
 * A whole copy of the record o names, into *buf, when o is a copy of its
 * header only (rc_require_enter, rc_count_live: no creating thread): what
 * a report shows of it; o itself when it is whole or no longer live.
 */
const struct rc_obj *rc_obj_whole(const struct rc_obj *o, struct rc_obj *buf);
void rc_inside_end(struct rc_call *c);

/*
 * rc_require and the bookkeeping of rc_inside_begin for a cm id, under
 * one lock: rc_inside_enter then reports what rc_inside_begin would, in
 * its place; a call refused in between leaves with rc_enter_undo.
 */
struct rc_enter {
	bool done;		/* went in under the lookup's lock */
	bool in;		/* counted inside (not refused) */
	bool conflict, other_excl;
	pid_t other;
	uint16_t other_fn;
};
bool rc_require_enter(struct rc_call *c, const void *h,
		      enum rc_handle_use use, struct rc_obj *o,
		      struct rc_enter *e);
bool rc_inside_enter(struct rc_call *c, const struct rc_obj *o,
		     const struct rc_enter *e);
void rc_enter_undo(struct rc_call *c, const struct rc_obj *o,
		   const struct rc_enter *e);

/* rc_require, adding delta to the int field at offset of a live record
 * under the same lock; *added says whether it was added. */
bool rc_require_add(struct rc_call *c, enum rc_kind kind, const void *h,
		    enum rc_handle_use use, unsigned offset, int delta,
		    struct rc_obj *o, bool *added);

/*
 * Add delta to counter t of the live record of this kind at h, without a
 * lock when its cell is known, and fill o: its header only then (flags
 * as inserted: for a kind whose flags never change, a channel; pid ours;
 * tids and stacks 0), else all of it.  Reports use-after-fork for a user
 * call.  False, nothing counted, when there is no such record.
 */
bool rc_count_live(struct rc_call *c, enum rc_kind kind, const void *h,
		   enum rc_tally t, int delta, struct rc_obj *o);

/* rc_require for a handle counted by rc_count_live; *added: counted. */
bool rc_require_count(struct rc_call *c, enum rc_kind kind, const void *h,
		      enum rc_handle_use use, enum rc_tally t, int delta,
		      struct rc_obj *o, bool *added);

/* NULL (unless may_be_null) or unmapped struct argument of len bytes:
 * reported as unreadable-argument; false when the call is refused. */
bool rc_arg_readable(struct rc_call *c, const char *arg, const void *p,
		     size_t len, bool may_be_null);

/* Finding builders. */
void rc_finding_init(struct rc_finding *f, enum rc_rule rule,
		     struct rc_call *c, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rc_finding_add(struct rc_finding *f, const struct rc_obj *o,
		    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A reference to o (for cross links between records). */
static inline struct rc_ref rc_ref_of(const struct rc_obj *o)
{
	return (struct rc_ref){ o->handle, o->gen };
}

/* A fresh record for an object this call created (not yet inserted). */
void rc_obj_init(struct rc_call *c, enum rc_kind kind, const void *h,
		 unsigned flags, struct rc_obj *o);

/* Register a new object created by this call. */
uint32_t rc_track(struct rc_call *c, enum rc_kind kind, const void *h,
		  unsigned flags, struct rc_obj *out);

/* Run fn on the live record of this kind at h; false if there is none. */
bool rc_update_live(const void *h, enum rc_kind kind,
		    void (*fn)(struct rc_obj *o, void *arg), void *arg);

/* Mark o destroyed by this call. */
void rc_untrack(struct rc_call *c, const struct rc_obj *o);

/*
 * rc_track without a stack, for what librdmacm makes (and frees: its
 * destroy has none either) inside a call of its own (the loopback's
 * rdma_resolve_route resolves through rdma_getaddrinfo): never reported,
 * and a walk of the library's stack costs more than the rest of the call.
 */
uint32_t rc_track_unstacked(struct rc_call *c, enum rc_kind kind,
			    const void *h, unsigned flags);

/* Read a field of a cm id we know is live. */
#define RC_ID(o) ((struct rdma_cm_id *)(o)->handle)

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap.h - what the hand-written wrappers share: the per-call context,
 * handle validation with its standard findings, and finding builders.
 * Every wrapper reads as: classify -> check rules -> forward (or refuse)
 * -> record the outcome.
 */
#ifndef RC_WRAP_H
#define RC_WRAP_H

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

/* Start a call: init check, recursion guard, classification. */
void rc_call_begin(struct rc_call *c, enum rc_fn fn, uintptr_t ret_addr);

/*
 * The same for the calls made once per completion (ibv_get_cq_event,
 * ibv_ack_cq_events): once the shim is set up and this thread has made a
 * call, what is left is classification and the thread id.
 */
extern bool rc_hot_ok;			/* set up, used, verbosity 0 */
extern RC_TLS bool rc_hot_thread;	/* this thread has been set up */
extern RC_TLS pid_t rc_hot_tid;		/* its id, 0 after a fork */
static inline void rc_call_begin_hot(struct rc_call *c, enum rc_fn fn,
				     uintptr_t ret_addr)
{
	if (RC_UNLIKELY(!__atomic_load_n(&rc_hot_ok, __ATOMIC_RELAXED) ||
			!rc_hot_thread || !rc_hot_tid || rc_busy)) {
		rc_call_begin(c, fn, ret_addr);
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

/* ledger.c: events charged to an id or fetched from a channel. */
struct rc_ledger_scan {
	unsigned n;		/* user-held events found */
	unsigned by_caller;	/* of those, held by the calling thread */
	unsigned by_exited;	/* and held by threads that have exited */
	unsigned by_waiting;	/* and by live threads joining the caller */
	struct rc_finding *f;	/* events are added to it, may be NULL */
};
void rc_ledger_scan_id(const struct rc_obj *id, pid_t caller,
		       struct rc_ledger_scan *s);
void rc_ledger_scan_channel(const struct rc_obj *ch, pid_t caller,
			    struct rc_ledger_scan *s);
void rc_ledger_ids_on_channel(const struct rc_obj *ch, struct rc_finding *f);

/*
 * The unacked-events check of rdma_destroy_id/_ep, rdma_migrate_id (o is
 * the id) and rdma_leave_multicast (o is the join): reported only when the
 * hang is certain (the caller, or a thread that has exited, holds one of
 * the events) or, for a destroy, when a live holder sleeps joining the
 * caller.
 * Returns false when the call must then be refused.
 */
bool rc_ledger_check_unacked(struct rc_call *c, const struct rc_obj *o,
			     enum rc_rule rule);

/* ledger.c: remember an acked event's parameter pointers (before the
 * ack is forwarded), and check a pointer a user call passes. */
struct rdma_cm_event;
/*
 * An ack as the ledger notes it: rc_ledger_note runs on the event's
 * record as the ack takes it (rc_reg_take_fn), rc_ledger_index after.
 */
struct rc_ack {
	struct rdma_cm_event *ev;
	uint32_t seq;		/* the ack's number, filled by the note */
	uintptr_t conn, pdata;	/* the pointers it leaves */
};
void rc_ledger_note(struct rc_obj *o, void *arg);
void rc_ledger_index(const struct rc_obj *e, const struct rc_ack *a);
/* Both, for an event destroyed already. */
void rc_ledger_acked(const struct rc_obj *e, struct rdma_cm_event *ev);
void rc_check_use_after_ack(struct rc_call *c, const void *ptr,
			    const char *what);

/* wrap_mcast.c: the join a multicast event belongs to (0 if none). */
struct rc_ref rc_mcast_of_event(uintptr_t id, const void *context);

/* Our own event names: a wrapper must not call rdma_event_str. */
const char *rc_event_name(int type);

/* watchdog.c: watch a forwarded call that may block on id's events. */
int rc_watch_begin(struct rc_call *c, const struct rc_obj *id);
void rc_watch_end(int slot);
void rc_watch_atfork_child(void);

/* threads.c: the calling thread's record (registered on first use; 0
 * when it cannot be tracked), and what became of an event's holder. */
enum rc_holder {
	RC_HOLDER_CALLER,	/* the calling thread itself */
	RC_HOLDER_LIVE,		/* another thread, still running */
	RC_HOLDER_EXITED,	/* a thread that has exited */
	RC_HOLDER_UNKNOWN,	/* not tracked */
};
uint32_t rc_thread_self(struct rc_call *c);
enum rc_holder rc_thread_state(pid_t tid, uint32_t gen, pid_t caller);
/* Thread tid sleeps in pthread_join(target) (or a robust lock it owns). */
bool rc_thread_waits_for(pid_t tid, pid_t target);
void rc_thread_atfork_child(void);

struct rdma_cm_id;
struct ibv_context;
struct rc_v_links;

/*
 * wrap_sync.c: what librdmacm keeps for an id, derived after a user call
 * from the state the call left (its private channel, id->event, the QP
 * and SRQ it made), whether or not the library's own calls were seen.
 */
void rc_settle_id(struct rc_call *c, struct rdma_cm_id *id);
struct rc_lib_state {
	struct rc_ref lib_event, qp, srq;
};
/* Before a destroy: what the library will free with the id ... */
void rc_lib_snapshot(const struct rc_obj *o, struct rc_lib_state *s);
/* ... and after it succeeded: mark those gone. */
void rc_lib_release(struct rc_call *c, const struct rc_lib_state *s);

/* wrap_id.c: register an id this call produced (joins its channel). */
void rc_track_id(struct rc_call *c, struct rdma_cm_id *id, unsigned flags,
		 const struct rc_obj *parent, struct rc_obj *out);
/* The same, when the id's channel count was taken already (ch). */
void rc_track_id_counted(struct rc_call *c, struct rdma_cm_id *id,
			 unsigned flags, struct rc_ref ch);
/* An id no longer uses this channel; a private one goes with its id. */
void rc_id_left_channel(struct rc_call *c, struct rc_ref channel);

/* wrap_qp.c: the QP or SRQ librdmacm made for id joins the registry;
 * idrec: id's live record as the call found it (NULL: look it up). */
void rc_track_owned(struct rc_call *c, struct rdma_cm_id *id,
		    const struct rc_obj *idrec, enum rc_kind kind, void *h);
void rc_qp_set_owner(const struct rc_obj *id);
/* Before id's QP goes with rdma_destroy_qp or rdma_destroy_ep: the
 * events it (and the CQs librdmacm made for it) still owes. */
bool rc_qp_check_destroy(struct rc_call *c, struct rdma_cm_id *id);
/* What a QP (SRQ) was made on and uses, read from the object. */
void rc_qp_links(enum rc_kind kind, void *h, struct rc_v_links *l);

/* wrap_event.c: add delta to the counts an event is charged to. */
void rc_event_settle(const struct rc_obj *e, int delta);

/*
 * wrap_verbs.c: libibverbs objects.  A verbs wrapper starts with
 * rc_v_begin, which is false when the call is not to be followed: our own
 * code re-entered, or a call libibverbs makes to its own exports (the
 * IBVERBS_1.0 compatibility functions, ibv_reg_mr calling
 * ibv_reg_mr_iova2), which the outer wrapper follows.  Calls from
 * librdmacm are followed and make library-owned objects (c->internal).
 */
bool rc_v_begin(struct rc_call *c, enum rc_fn fn, uintptr_t ret_addr);

/* The live record of this kind at h, or false. */
bool rc_v_live(const void *h, enum rc_kind kind, struct rc_obj *o);
/* Could d be a device of ibv_get_device_list?  (read, never trusted) */
bool rc_v_plausible_device(const void *d);

/*
 * Validate a verbs handle a user call passes.  A handle no create call
 * returned is not an error for kinds that can also be made where the
 * shim does not see (provider-specific calls, contexts opened by a
 * provider library): o->handle is then 0 and the call goes on.  Reports
 * use-after-destroy, double-destroy or unknown-handle (a live object of
 * another kind) otherwise; false when the call must be refused
 * (protect=1).
 */
bool rc_v_require(struct rc_call *c, enum rc_kind kind, const void *h,
		  enum rc_handle_use use, struct rc_obj *o);

/*
 * Record a verbs object this call made: on parent (made on it: counted in
 * its nchild), using the objects in use[] (counted in their nusers).
 * Unknown parents and users are not linked.  o is filled (o->gen 0 when
 * it could not be stored).
 */
struct rc_v_links {
	const void *parent;
	enum rc_kind pkind;
	const void *use[3];
	enum rc_kind ukind[3];
};
void rc_v_track(struct rc_call *c, enum rc_kind kind, const void *h,
		const struct rc_v_links *l, unsigned flags, struct rc_obj *o);

/*
 * rc_v_require(..., RC_USE, ...) of the parent an object is about to be
 * made on, counting the child under the same lock; rc_v_track uses that
 * count, and rc_call_end gives it back when nothing was tracked.
 */
bool rc_v_require_parent(struct rc_call *c, enum rc_kind kind, const void *h,
			 struct rc_obj *o);
void rc_v_unlink_pre(struct rc_call *c);

/*
 * o (a copy taken before the destroy) is gone: mark it destroyed and take
 * it out of its parent's and users' counts, once, however many paths
 * learn of it (ibv_destroy_qp inside rdma_destroy_qp).
 */
void rc_v_gone(struct rc_call *c, const struct rc_obj *o);

/* librdmacm made or now owns a verbs object for an id (wrap_qp.c,
 * wrap_sync.c): record it as the library's, unless it is known. */
void rc_v_lib_object(struct rc_call *c, enum rc_kind kind, const void *h,
		     const struct rc_v_links *l);

/*
 * The checks before a QP, CQ, SRQ or WQ goes, by ibv_destroy_* or inside
 * rdma_destroy_qp: destroy-with-unacked-async-events, and for a CQ
 * cq-destroy-with-unacked-events (rule: which one the caller reports).
 * Return false when the destroy would certainly hang and must be refused.
 */
bool rc_v_check_async(struct rc_call *c, const struct rc_obj *o);
bool rc_v_check_cq_events(struct rc_call *c, const struct rc_obj *o,
			  enum rc_rule rule);

/*
 * cqcount.c: a CQ's completion events fetched and not acked, counted
 * without a lock (the hot path of event-driven programs).  A cell per CQ
 * record (add when made, del when gone, by generation).
 */
struct rc_cqcount;
struct rc_cq_state {
	int unacked;
	struct rc_evhold hold;
};
void rc_cq_count_add(uintptr_t cq, uint32_t gen);
void rc_cq_count_del(uintptr_t cq, uint32_t gen);
/* A fork child: no doubling under way (another thread's stopped at fork). */
void rc_cq_count_atfork_child(void);
struct rc_cqcount *rc_cq_count(uintptr_t cq);
bool rc_cq_count_get(uintptr_t cq, uint32_t gen, struct rc_cq_state *s);
/* One more fetched; true when the caller should capture the stack (the
 * first unacked event, at a new call site) for rc_cq_set_stack. */
bool rc_cq_fetched(struct rc_cqcount *p, pid_t tid, uint32_t tgen,
		   uintptr_t ra, bool user);
void rc_cq_set_stack(struct rc_cqcount *p, uintptr_t ra, rc_stack_id st);
/* n acked (no more than were fetched with clamp): how many were taken;
 * *before is the count there was. */
int rc_cq_acked(struct rc_cqcount *p, int n, bool clamp, int *before);
/* The threads inside ibv_get_cq_event, by completion channel: a slot for
 * the call (-1: none free, not counted), freed at its end. */
int rc_cq_wait_begin(uintptr_t channel, pid_t tid);
void rc_cq_wait_end(int slot);
unsigned rc_cq_waiters(uintptr_t channel);

/* The kind a QP/CQ/SRQ/WQ async event names, RC_K_COUNT for others. */
enum rc_kind rc_v_async_kind(int event_type);

/* Records of these kinds keep u.vb. */
static inline bool rc_kind_is_verbs(unsigned kind)
{
	return kind == RC_K_QP || kind == RC_K_SRQ ||
	       (kind >= RC_K_CONTEXT && kind <= RC_K_TD);
}

/* librdmacm made o for its cm ids: a user's destroy is
 * library-object-destroyed-by-user; false when it must be refused. */
bool rc_v_check_lib(struct rc_call *c, const struct rc_obj *o);

/* Report rule at this call: o still has live children (or users),
 * named in the finding. */
void rc_v_report_related(struct rc_call *c, enum rc_rule rule,
			 const struct rc_obj *o, bool users, const char *one,
			 const char *many, const char *consequence);

/* wrap_ctxops.c: a new context's control operations (the ones inline
 * functions call) are wrapped; forgotten when it is closed. */
void rc_ctxops_wrap(struct rc_call *c, struct ibv_context *ctx);
void rc_ctxops_forget(struct ibv_context *ctx);

/* wrap_fd.c: the descriptors of channels, for close/dup2/fcntl. */
void rc_fd_track(int fd, const struct rc_obj *o);
void rc_fd_untrack(int fd, uintptr_t h);
/*
 * Set while this thread is inside a real call that may close channel
 * descriptors (the destroys of ids, endpoints, event and completion
 * channels, a migrate away from a private channel): a close() there is the
 * library's own even when an interposer (a sanitizer's runtime) calls
 * close for it, so that its return address is not in the library, or when
 * a -Bsymbolic-functions librdmacm destroys a private channel without
 * calling our wrapper.  Neither library calls back into the program.
 */
extern RC_TLS int rc_lib_closing;
#define RC_FWD_CLOSING(c, call) ({					\
	rc_lib_closing++;						\
	__typeof__(call) rc_fwdc_ret_ = RC_FWD(c, call);		\
	rc_lib_closing--;						\
	rc_fwdc_ret_;							\
})
#define RC_FWDV_CLOSING(c, call) do {					\
	rc_lib_closing++;						\
	RC_FWDV(c, call);						\
	rc_lib_closing--;						\
} while (0)
/* wrap_rsocket.c: the registry handle of the rsocket numbered fd (odd,
 * so never an address; threads.c's are (tid << 3) | 1). */
#define RC_RS_HANDLE(fd) (((uintptr_t)(unsigned)(fd) << 3) | 3)
bool rc_rs_check(enum rc_fn fn, int s, uintptr_t ra);

/* Read a field of a cm id we know is live. */
#define RC_ID(o) ((struct rdma_cm_id *)(o)->handle)

#endif

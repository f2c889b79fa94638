/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_common.c - the machinery every wrapper uses: the call context,
 * handle validation and its standard findings (use-after-destroy,
 * double-destroy, unknown-handle), the builders for findings and
 * records, and rc_peek, which reads what the program points the shim at.
 */
#include "config.h"	/* _GNU_SOURCE: process_vm_readv */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include <rdma/rdma_cma.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/verbs.h"

bool rc_peek(void *dst, const void *src, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)src, len };
	ssize_t n;

	if (!src)
		return false;
	/* In the caller's stack (a local struct, as most are): readable. */
	if (rc_stack_holds(src, len)) {
		memcpy(dst, src, len);
		return true;
	}
	/* The kernel checks the range: EFAULT instead of a SIGSEGV. */
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return true;
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		/* Not allowed here (seccomp): trust the pointer. */
		memcpy(dst, src, len);
		return true;
	}
	return false;
}

/*
 * A struct the library reads as soon as it is called (an attribute
 * struct, an address): NULL where the call needs one, or memory that is
 * not mapped, is reported (unreadable-argument) and, with protect=1,
 * refused, where the library would crash.  The bytes are not judged:
 * only the library knows which of them it reads.  True: forward.
 */
bool rc_arg_readable(struct rc_call *c, const char *arg, const void *p,
		     size_t len, bool may_be_null)
{
	unsigned char tmp[512];
	struct rc_finding f;

	if (c->internal || (!p && may_be_null))
		return true;
	if (p && rc_peek(tmp, p, len < sizeof(tmp) ? len : sizeof(tmp)))
		return true;
	rc_finding_init(&f, RC_R_UNREADABLE_ARGUMENT, c,
			"%s(): its %s %p is %s%s", rc_fn_info[c->fn].name,
			arg, p, p ? "not mapped" : "NULL",
			rc_opt.protect ? "; the call was not forwarded" : "");
	rc_report(&f);
	if (!rc_opt.protect)
		return true;
	errno = EINVAL;
	return false;
}

static pid_t cached_pid;

pid_t rc_pid(void)
{
	pid_t pid = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);

	if (RC_UNLIKELY(!pid)) {
		pid = getpid();
		__atomic_store_n(&cached_pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

/* A fork child: records may be the parent's (use-after-fork). */
static bool forked;

void rc_pid_atfork_child(void)
{
	__atomic_store_n(&cached_pid, getpid(), __ATOMIC_RELAXED);
	__atomic_store_n(&forked, true, __ATOMIC_RELAXED);
}

bool rc_hot_ok;
RC_TLS bool rc_hot_thread;
RC_TLS pid_t rc_hot_tid;

int rc_init_state;
bool rc_used;
RC_TLS bool rc_alt_done;

static void no_hook(void)
{
}

/* Overridden by lifecycle.c's definition in the shim. */
__attribute__((weak)) const struct rc_lifecycle_hooks rc_lifecycle_hooks = {
	.init = no_hook,
	.first_use = no_hook,
	.alt_stack = no_hook,
};

void rc_call_begin_slow(struct rc_call *c, enum rc_fn fn, uintptr_t ret_addr)
{
	c->err = errno;
	c->fwd = false;
	rc_ensure_init();
	if (RC_UNLIKELY(!__atomic_load_n(&rc_used, __ATOMIC_RELAXED)) &&
	    !rc_busy)
		rc_lifecycle_hooks.first_use();
	if (!c->skip)
		rc_thread_alt_stack();
	c->fn = fn;
	c->skip = rc_busy != 0;
	c->mod = rc_caller_module(ret_addr);
	c->internal = c->mod != RC_MOD_USER;
	c->tid = rc_gettid();
	c->stack = 0;
	c->inside = (struct rc_ref){ 0, 0 };
	if (RC_UNLIKELY(rc_verbosity) && !c->skip &&
	    (rc_verbosity >= 2 || rc_fn_info[fn].effect[0]))
		rc_trace_call(fn, c->mod, NULL);
	if (!c->skip) {
		rc_hot_thread = true;
		rc_hot_tid = c->tid;
		if (!rc_verbosity &&
		    __atomic_load_n(&rc_used, __ATOMIC_RELAXED))
			__atomic_store_n(&rc_hot_ok, true, __ATOMIC_RELAXED);
	}
}

void rc_call_end(struct rc_call *c)
{
	if (RC_UNLIKELY(c->pre_link.h))
		rc_v_unlink_pre(c);
	if (c->fwd)
		errno = c->err;
}

void rc_finding_init(struct rc_finding *f, enum rc_rule rule,
		     struct rc_call *c, const char *fmt, ...)
{
	va_list ap;

	memset(f, 0, sizeof(*f));
	f->rule = rule;
	f->count = 1;
	if (c) {
		f->call = rc_fn_info[c->fn].name;
		f->tid = c->tid;
		f->stack = rc_call_stack(c);
	}
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
}

void rc_finding_add(struct rc_finding *f, const struct rc_obj *o,
		    const char *fmt, ...)
{
	unsigned max = f->max_objs ? f->max_objs : RC_MAX_OBJS;
	struct rc_objref *r;
	va_list ap;

	if (f->nobjs >= max || f->nobjs >= RC_MAX_OBJS) {
		f->more_objs++;
		return;
	}
	r = &f->objs[f->nobjs++];
	r->kind = o->kind;
	/* an rsocket is known by its number */
	r->handle = o->kind == RC_K_RSOCKET ? (uintptr_t)o->u.rs.fd :
		    o->handle;
	r->created_tid = o->created_tid;
	r->created_stack = o->created_stack;
	r->destroyed = o->destroyed;
	r->destroyed_tid = o->destroyed_tid;
	r->destroyed_stack = o->destroyed_stack;
	r->note[0] = 0;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(r->note, sizeof(r->note), fmt, ap);
		va_end(ap);
	}
}

/* The kernel refuses the parent's objects in a child (EACCES). */
void rc_report_fork(struct rc_call *c, const struct rc_obj *o)
{
	struct rc_finding f;

	rc_finding_init(&f, RC_R_USE_AFTER_FORK, c,
			"%s(%p): this %s belongs to process %d; a forked child "
			"cannot use it", rc_fn_info[c->fn].name,
			(void *)o->handle, rc_kind_text(o->kind), o->pid);
	rc_finding_add(&f, o, NULL);
	rc_report(&f);
}

static const char *const use_verb[] = {
	[RC_USE] = "use", [RC_DESTROY] = "destroy",
};

bool rc_require(struct rc_call *c, enum rc_kind kind, const void *h,
		enum rc_handle_use use, struct rc_obj *o)
{
	struct rc_finding f;
	const char *name = rc_fn_info[c->fn].name;
	bool known;

	known = rc_reg_get((uintptr_t)h, o);
	/* The memory may be another kind's now: a stale pointer of ours? */
	if (!(known && o->kind == kind) && !rc_reg_degraded() &&
	    rc_reg_get_kind((uintptr_t)h, kind, o))
		known = true;
	if (known && o->kind == kind && !o->destroyed) {
		if (RC_UNLIKELY(o->pid != rc_pid()))
			rc_report_fork(c, o);
		return true;
	}
	if (known && o->kind == kind) {
		if (use == RC_DESTROY)
			rc_finding_init(&f, RC_R_DOUBLE_DESTROY, c,
					"%s(%p): %s already destroyed",
					name, h, rc_kind_text(kind));
		else
			rc_finding_init(&f, RC_R_USE_AFTER_DESTROY, c,
					"%s(%p): %s used after it was destroyed",
					name, h, rc_kind_text(kind));
		rc_finding_add(&f, o, NULL);
	} else {
		if (rc_reg_degraded())
			goto pass;	/* we may have missed its creation */
		if (known && !o->destroyed)
			rc_finding_init(&f, RC_R_UNKNOWN_HANDLE, c,
					"%s(%p): not a %s but a live %s",
					name, h, rc_kind_text(kind),
					rc_kind_text(o->kind));
		else
			rc_finding_init(&f, RC_R_UNKNOWN_HANDLE, c,
					"%s(%p): %s that no create call returned",
					name, h, rc_kind_text(kind));
		if (known)
			rc_finding_add(&f, o, "what this address was");
	}
	if (rc_opt.protect)
		snprintf(f.message + strlen(f.message),
			 sizeof(f.message) - strlen(f.message),
			 "; the %s was not forwarded", use_verb[use]);
	rc_report(&f);
pass:
	memset(o, 0, sizeof(*o));
	if (!rc_opt.protect)
		return true;
	errno = EINVAL;
	return false;
}

bool rc_require_add(struct rc_call *c, enum rc_kind kind, const void *h,
		    enum rc_handle_use use, unsigned offset, int delta,
		    struct rc_obj *o, bool *added)
{
	*added = rc_reg_get_add((uintptr_t)h, kind, offset, delta, o);
	if (!*added)
		return rc_require(c, kind, h, use, o);
	if (RC_UNLIKELY(o->pid != rc_pid()))
		rc_report_fork(c, o);
	return true;
}

bool rc_count_live(struct rc_call *c, enum rc_kind kind, const void *h,
		   enum rc_tally t, int delta, struct rc_obj *o)
{
	bool full = true, found;

	/* Until a fork, every record is this process's: no pid to read. */
	if (RC_LIKELY(!__atomic_load_n(&forked, __ATOMIC_RELAXED))) {
		found = rc_tally_get_add((uintptr_t)h, kind, t, delta, o,
					 &full);
		if (found && !full)
			o->pid = rc_pid();
	} else {
		found = rc_reg_get_add((uintptr_t)h, kind,
				       __builtin_offsetof(struct rc_obj, u) +
				       sizeof(void *) + t * sizeof(int), delta,
				       o);
	}
	if (found && !c->internal && RC_UNLIKELY(o->pid != rc_pid()))
		rc_report_fork(c, o);
	return found;
}

bool rc_require_count(struct rc_call *c, enum rc_kind kind, const void *h,
		      enum rc_handle_use use, enum rc_tally t, int delta,
		      struct rc_obj *o, bool *added)
{
	*added = rc_count_live(c, kind, h, t, delta, o);
	return *added || rc_require(c, kind, h, use, o);
}

static void rejected_fn(struct rc_obj *o, void *arg)
{
	o->flags |= RC_F_REJECTED;
}

/*
 * What a call needs of the id before librdmacm may touch it; 44.0 crashes
 * without (rdma_resolve_route and rdma_connect dereference the device of
 * an unbound id, rdma_accept reads conn_param->qp_num when the id has no
 * QP).  The loopback backend only fails these with EINVAL, so refuse them
 * by our own rule, not by what the library underneath happens to do.
 * rdma_establish on an id with a QP is only refused by librdmacm: warned.
 */
static bool check_ready(struct rc_call *c, const struct rc_obj *o,
			const void *arg)
{
	struct rdma_cm_id *id = RC_ID(o);
	struct rc_finding f;
	struct rc_obj buf;
	enum rc_rule rule;
	const char *why;

	switch (c->fn) {
	case RC_FN_rdma_resolve_route:
		if (id->verbs)
			return true;
		rule = RC_R_RESOLVE_ROUTE_UNBOUND;
		why = "the address is not resolved yet (ADDR_RESOLVED not "
		      "retrieved), and librdmacm dereferences id->verbs";
		break;
	case RC_FN_rdma_connect:
		if (id->verbs)
			return true;
		rule = RC_R_CONNECT_UNBOUND;
		why = "the cm id is not bound to a device (resolve the address "
		      "and the route first)";
		break;
	case RC_FN_rdma_accept:
		if (arg || id->qp)
			return true;
		rule = RC_R_ACCEPT_WITHOUT_QP;
		why = "no conn_param and no QP, and librdmacm reads "
		      "conn_param->qp_num";
		break;
	case RC_FN_rdma_establish:
		if (!id->qp)
			return true;
		/* Harmless (librdmacm refuses it): a warning, forwarded. */
		rc_finding_init(&f, RC_R_ESTABLISH_WITH_QP, c, "%s(%p): the "
				"cm id has a QP (rdma_create_qp), which "
				"librdmacm moves to RTS itself, sending the RTU; "
				"rdma_establish is for an id whose QP the "
				"program manages, and fails with EINVAL",
				rc_fn_info[c->fn].name, (void *)o->handle);
		rc_finding_add(&f, rc_obj_whole(o, &buf), NULL);
		rc_report(&f);
		return true;
	default:
		return true;
	}
	rc_finding_init(&f, rule, c, "%s(%p): %s%s", rc_fn_info[c->fn].name,
			(void *)o->handle, why, rc_opt.protect ?
			"; not forwarded (returns -1/EINVAL)" : "");
	rc_finding_add(&f, rc_obj_whole(o, &buf), NULL);
	rc_report(&f);
	if (!rc_opt.protect)
		return true;
	errno = EINVAL;
	return false;
}

static bool check_id(struct rc_call *c, enum rc_fn fn, const void *id,
		     const void *arg)
{
	const struct rdma_conn_param *param = arg;
	const void *pdata;
	struct rc_obj o;
	bool has_pdata = false;

	struct rc_enter e;

	/* The read of its private data tells whether conn_param is mapped.
	 * rdma_reject's private data may be anything when its length is 0,
	 * which this wrapper does not see. */
	if (arg && fn != RC_FN_rdma_reject) {
		has_pdata = rc_peek(&pdata, &param->private_data,
				    sizeof(pdata));
		if (!has_pdata && !rc_arg_readable(c, "conn_param", arg,
						   sizeof(*param), true))
			return false;
	}
	if (!rc_require_enter(c, id, RC_USE, &o, &e))
		return false;
	c->id_flags = o.flags;
	if (o.handle && !check_ready(c, &o, arg)) {
		rc_enter_undo(c, &o, &e);
		return false;
	}
	if (!rc_inside_enter(c, &o, &e))
		return false;
	if (arg && fn == RC_FN_rdma_reject) {
		rc_check_use_after_ack(c, arg, "private data");
	} else if (arg) {
		rc_check_use_after_ack(c, param, "conn_param");
		if (has_pdata)
			rc_check_use_after_ack(c, pdata,
					       "conn_param->private_data");
	}
	/* A rejected request's id must still be destroyed: remember it. */
	if (o.handle && (fn == RC_FN_rdma_reject ||
			 fn == RC_FN_rdma_reject_ece))
		rc_reg_update(o.handle, o.gen, rejected_fn, NULL);
	return true;
}

bool rc_check_id_call(enum rc_fn fn, const void *id, const void *arg,
		      uintptr_t ret_addr, struct rc_call *c)
{
	rc_call_begin(c, fn, ret_addr);
	if (c->skip || c->internal)
		return true;
	return check_id(c, fn, id, arg);
}

/* A destroy, or an operation a synchronous id waits in. */
static bool exclusive_call(enum rc_fn fn, const struct rc_obj *o)
{
	switch (fn) {
	case RC_FN_rdma_destroy_id:
	case RC_FN_rdma_destroy_ep:
	case RC_FN_rdma_migrate_id:
		return true;
	case RC_FN_rdma_resolve_addr:
	case RC_FN_rdma_resolve_route:
	case RC_FN_rdma_connect:
	case RC_FN_rdma_accept:
	case RC_FN_rdma_disconnect:
	case RC_FN_rdma_join_multicast:
	case RC_FN_rdma_join_multicast_ex:
	case RC_FN_rdma_get_request:
		return o->flags & RC_F_SYNC;
	default:
		return false;
	}
}

static bool destroys(enum rc_fn fn)
{
	return fn == RC_FN_rdma_destroy_id || fn == RC_FN_rdma_destroy_ep ||
	       fn == RC_FN_rdma_migrate_id;
}

/*
 * Who is inside calls on an id, in one 32-bit word (u.id.inside, in the
 * id's cell while it has one: rc_aux_update, no lock): how many user
 * threads are inside (saturating: a call beyond that is not counted),
 * whether the first of them is in a destroy or synchronous operation,
 * and its thread id (0 once it has left; a Linux tid is below 2^22).
 * That thread's call is a note beside the word (u.id.inside_fn without
 * a cell), read racily: only the report names it.
 */
#define IN_COUNT_BITS 9
#define IN_COUNT_MAX ((1u << IN_COUNT_BITS) - 1)
#define IN_EXCL (1u << IN_COUNT_BITS)
#define IN_TID_SHIFT (IN_COUNT_BITS + 1)
#define IN_TID_MAX (1u << (32 - IN_TID_SHIFT))
_Static_assert(RC_FN_COUNT <= UINT16_MAX, "a call in the note");

struct inside_arg {
	pid_t tid;
	enum rc_fn fn;
	bool excl;
	bool conflict;
	pid_t other;
	bool other_excl;
	bool in;
	bool first;		/* the first inside now: the note is its */
	bool find_excl;		/* excl from the record's own flags */
};

/* Going in, on the word v of the id o (fn of rc_aux_update). */
static bool inside_word_begin(uint32_t *v, const struct rc_obj *o, void *arg)
{
	struct inside_arg *a = arg;
	uint32_t n = *v & IN_COUNT_MAX;
	pid_t first = (pid_t)(*v >> IN_TID_SHIFT);
	bool first_excl = *v & IN_EXCL;

	a->conflict = a->in = a->first = false;
	if (a->find_excl)
		a->excl = exclusive_call(a->fn, o);
	if (n > 0 && first && first != a->tid && (a->excl || first_excl)) {
		a->conflict = true;
		a->other = first;
		a->other_excl = first_excl;
		/* Refused calls do not go in. */
		if (destroys(a->fn) && first_excl && rc_opt.protect)
			return false;
	}
	if (n == IN_COUNT_MAX || (uint32_t)a->tid >= IN_TID_MAX)
		return false;
	a->in = true;
	if (n == 0 || !first) {
		a->first = true;
		*v = (uint32_t)a->tid << IN_TID_SHIFT |
		     (a->excl ? IN_EXCL : 0) | (n + 1);
	} else {
		*v = (*v & ~IN_COUNT_MAX) | (n + 1);
	}
	return true;
}

/* Coming out, tid's call (fn of rc_aux_update). */
static bool inside_word_end(uint32_t *v, const struct rc_obj *o, void *arg)
{
	pid_t tid = *(pid_t *)arg;
	uint32_t n = *v & IN_COUNT_MAX;

	(void)o;
	if (!n)
		return false;
	if ((pid_t)(*v >> IN_TID_SHIFT) == tid)
		*v = (*v & IN_EXCL) | (n - 1);
	else
		*v = (*v & ~IN_COUNT_MAX) | (n - 1);
	return true;
}

/* The call the first thread inside o is in, if the note still says. */
static enum rc_fn inside_other_fn(const struct rc_obj *o, pid_t other)
{
	uint64_t note;

	if (!o->u.id.cell)
		return (enum rc_fn)o->u.id.inside_fn;
	note = rc_aux_note(o->u.id.cell);
	if ((pid_t)(note >> 32) != other || (uint16_t)note >= RC_FN_COUNT)
		return RC_FN_COUNT;
	return (enum rc_fn)(uint16_t)note;
}

/*
 * Going in through the id's cell (generation gen; a cell never moves, its
 * generation check is the rest); the first one in notes with which call.
 * false: the cell no longer names that record.
 */
static inline bool inside_cell_begin(struct rc_tally_cell *cell, uint32_t gen,
				     const struct rc_obj *o,
				     struct inside_arg *a)
{
	if (!rc_aux_update(cell, gen, o, inside_word_begin, a))
		return false;
	if (a->first)
		rc_aux_note_set(cell, (uint64_t)(uint32_t)a->tid << 32 |
				(uint16_t)a->fn);
	return true;
}

/* The live record o, under the lock: through its cell if it has one. */
static void inside_begin_fn(struct rc_obj *o, void *arg)
{
	if (o->destroyed)
		return;
	if (o->u.id.cell)
		inside_cell_begin(o->u.id.cell, o->gen, o, arg);
	else if (inside_word_begin(&o->u.id.inside, o, arg) &&
		   ((struct inside_arg *)arg)->first)
		o->u.id.inside_fn = (uint16_t)((struct inside_arg *)arg)->fn;
}

const struct rc_obj *rc_obj_whole(const struct rc_obj *o, struct rc_obj *buf)
{
	if (o->created_tid || !o->handle || !rc_reg_get(o->handle, buf) ||
	    buf->gen != o->gen)
		return o;
	return buf;
}

/* Report (and refuse, for a destroy) what going in found. */
static bool inside_report(struct rc_call *c, const struct rc_obj *o,
			  const struct inside_arg *a)
{
	struct rc_finding f;
	struct rc_obj buf;
	enum rc_fn other_fn;
	bool refuse;

	refuse = a->conflict && destroys(c->fn) && a->other_excl &&
		 rc_opt.protect;
	if (a->in) {
		c->inside = rc_ref_of(o);
		c->inside_cell = o->u.id.cell;
	}
	if (!a->conflict)
		return true;
	other_fn = inside_other_fn(o, a->other);
	o = rc_obj_whole(o, &buf);
	rc_finding_init(&f, RC_R_CONCURRENT_CALLS_ON_ID, c,
			"%s(%p) while thread %d is inside %s on the same cm id"
			"%s", rc_fn_info[c->fn].name, (void *)o->handle,
			a->other, other_fn < RC_FN_COUNT ?
			rc_fn_info[other_fn].name : "a call",
			refuse ? "; not forwarded: that call would use the "
			"freed id when it returns (returns -1/EBUSY)" : "");
	rc_finding_add(&f, o, NULL);
	rc_report(&f);
	if (refuse)
		errno = EBUSY;
	return !refuse;
}

bool rc_inside_begin(struct rc_call *c, const struct rc_obj *o)
{
	struct inside_arg a = { c->tid, c->fn, exclusive_call(c->fn, o),
				false, 0, false, false, false, false };

	c->inside = (struct rc_ref){ 0, 0 };
	if (!o->handle || o->kind != RC_K_ID)
		return true;
	if (o->u.id.cell)
		inside_cell_begin(o->u.id.cell, o->gen, o, &a);
	else
		rc_reg_update(o->handle, o->gen, inside_begin_fn, &a);
	return inside_report(c, o, &a);
}

bool rc_require_enter(struct rc_call *c, const void *h,
		      enum rc_handle_use use, struct rc_obj *o,
		      struct rc_enter *e)
{
	struct inside_arg a = { c->tid, c->fn, false, false, 0, false, false,
				false, true };
	enum rc_aux r = RC_AUX_LOCK;

	/*
	 * A use needs the header only: without the lock, through the id's
	 * cell (until a fork: no pid to read).  A destroy reads the rest.
	 */
	if (use == RC_USE &&
	    RC_LIKELY(!__atomic_load_n(&forked, __ATOMIC_RELAXED))) {
		while ((r = rc_aux_get((uintptr_t)h, RC_K_ID, o)) ==
		       RC_AUX_DONE &&
		       !inside_cell_begin(o->u.id.cell, o->gen, o, &a))
			;
		if (r == RC_AUX_DONE) {
			o->pid = rc_pid();
			e->done = true;
		}
	}
	if (r == RC_AUX_LOCK)
		e->done = rc_reg_get_update((uintptr_t)h, RC_K_ID,
					    inside_begin_fn, &a, o);
	else if (r == RC_AUX_NONE)
		e->done = false;
	if (!e->done)
		return rc_require(c, RC_K_ID, h, use, o);
	e->in = a.in;
	e->conflict = a.conflict;
	e->other = a.other;
	e->other_excl = a.other_excl;
	if (RC_UNLIKELY(o->pid != rc_pid()))
		rc_report_fork(c, o);
	return true;
}

bool rc_inside_enter(struct rc_call *c, const struct rc_obj *o,
		     const struct rc_enter *e)
{
	struct inside_arg a = { c->tid, c->fn, false, e->conflict, e->other,
				e->other_excl, e->in, false, false };

	if (!e->done)
		return rc_inside_begin(c, o);
	c->inside = (struct rc_ref){ 0, 0 };
	return inside_report(c, o, &a);
}

static void inside_end_fn(struct rc_obj *o, void *arg)
{
	if (o->destroyed)
		return;
	if (o->u.id.cell)
		rc_aux_update(o->u.id.cell, o->gen, o, inside_word_end, arg);
	else
		inside_word_end(&o->u.id.inside, o, arg);
}

/* Out of the id at ref, whose cell is cell (NULL: under the lock). */
static void inside_leave(struct rc_ref ref, struct rc_tally_cell *cell,
			 pid_t *tid)
{
	if (cell)
		rc_aux_update(cell, ref.gen, NULL, inside_word_end, tid);
	else
		rc_reg_update(ref.h, ref.gen, inside_end_fn, tid);
}

void rc_enter_undo(struct rc_call *c, const struct rc_obj *o,
		   const struct rc_enter *e)
{
	if (e->done && e->in)
		inside_leave(rc_ref_of(o), o->u.id.cell, &c->tid);
}

void rc_inside_end(struct rc_call *c)
{
	if (c->inside.h)
		inside_leave(c->inside, c->inside_cell, &c->tid);
}

static inline void obj_init(struct rc_call *c, enum rc_kind kind,
			    const void *h, unsigned flags, rc_stack_id st,
			    struct rc_obj *o)
{
	/*
	 * The header and the kind's part of the union: all a record of the
	 * cm kinds keeps and its makers read (the registry copies in only
	 * those bytes); the verbs kinds' part is the whole union.
	 */
	memset(o, 0, __builtin_offsetof(struct rc_obj, u));
	switch (kind) {
	case RC_K_CHANNEL:
		memset(&o->u.ch, 0, sizeof(o->u.ch));
		break;
	case RC_K_ID:
		memset(&o->u.id, 0, sizeof(o->u.id));
		break;
	case RC_K_EVENT:
		memset(&o->u.ev, 0, sizeof(o->u.ev));
		break;
	default:
		memset(&o->u, 0, sizeof(o->u));
		break;
	}
	o->handle = (uintptr_t)h;
	o->kind = kind;
	o->flags = flags;
	o->pid = rc_pid();
	o->created_tid = c->tid;
	o->created_stack = st;
}

void rc_obj_init(struct rc_call *c, enum rc_kind kind, const void *h,
		 unsigned flags, struct rc_obj *o)
{
	obj_init(c, kind, h, flags, rc_call_stack(c), o);
}

uint32_t rc_track(struct rc_call *c, enum rc_kind kind, const void *h,
		  unsigned flags, struct rc_obj *out)
{
	struct rc_obj o;

	rc_obj_init(c, kind, h, flags, &o);
	rc_reg_insert(&o);
	if (out)
		*out = o;
	return o.gen;
}

void rc_untrack(struct rc_call *c, const struct rc_obj *o)
{
	rc_reg_destroy(o->handle, o->gen, c->tid, rc_call_stack(c));
}

uint32_t rc_track_unstacked(struct rc_call *c, enum rc_kind kind,
			    const void *h, unsigned flags)
{
	struct rc_obj o;

	obj_init(c, kind, h, flags, 0, &o);
	return rc_reg_insert(&o);
}

bool rc_update_live(const void *h, enum rc_kind kind,
		    void (*fn)(struct rc_obj *o, void *arg), void *arg)
{
	/* The address may still hold a destroyed object of another kind:
	 * only a live one of this kind is changed (one lookup, one lock). */
	return rc_reg_get_update((uintptr_t)h, kind, fn, arg, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_verbs.c - libibverbs objects: what every verbs wrapper shares
 * (classification, handle validation, records linked to the object they
 * were made on and the objects they use, the single way an object goes)
 * and the wrappers of device lists, contexts, PDs, MRs, AHs and imported
 * device memory, with close-device-with-resources, pd-dealloc-with-children
 * and library-object-destroyed-by-user.  Completion channels, CQs and
 * their events are in wrap_cq.c, async events in wrap_async.c, QPs and
 * SRQs in wrap_qp.c.
 *
 * Counts make the checks O(1): per object its live children (nchild) and
 * the live objects that use it (nusers), counted up under the object's
 * lock with the lookup that checks it, down without a lock (registry.h's
 * counter cells); the registry is scanned only to name them in a
 * finding.  A record is destroyed only after the real destroy succeeded:
 * libibverbs refuses to free an object still in use (EBUSY), which then
 * stays alive.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/verbs.h"
#include "shim/cqcount.h"
#include "shim/wr.h"

bool rc_v_begin(struct rc_call *c, enum rc_fn fn, uintptr_t ret_addr)
{
	rc_call_begin(c, fn, ret_addr);
	return !c->skip && c->mod != RC_MOD_VERBS && c->mod != RC_MOD_SELF;
}

bool rc_v_live(const void *h, enum rc_kind kind, struct rc_obj *o)
{
	return h && rc_reg_get((uintptr_t)h, o) && o->kind == kind &&
	       !o->destroyed && o->pid == rc_pid();
}

/*
 * Kinds that may also be made where we do not look (mlx5dv_create_qp,
 * a context a provider library opened): a destroyed record there may be a
 * new object at the same address.  Their identity (QP number, kernel
 * handle, command fd) tells: what the record kept must still be in the
 * memory.  Other kinds are made only by calls we see.
 */
static bool ident_of(enum rc_kind kind, const void *h, uint32_t *id)
{
	const void *p;
	int fd;

	switch (kind) {
	case RC_K_QP:
		p = &((const struct ibv_qp *)h)->qp_num;
		break;
	case RC_K_CQ:
		p = &((const struct ibv_cq *)h)->handle;
		break;
	case RC_K_SRQ:
		p = &((const struct ibv_srq *)h)->handle;
		break;
	case RC_K_WQ:
		p = &((const struct ibv_wq *)h)->wq_num;
		break;
	case RC_K_CONTEXT:
		if (!rc_peek(&fd, &((const struct ibv_context *)h)->cmd_fd,
			     sizeof(fd)))
			return false;
		*id = (uint32_t)fd;
		return true;
	default:
		return false;
	}
	return rc_peek(id, p, sizeof(*id));
}

static bool has_ident(enum rc_kind kind)
{
	return kind == RC_K_QP || kind == RC_K_CQ || kind == RC_K_SRQ ||
	       kind == RC_K_WQ || kind == RC_K_CONTEXT || kind == RC_K_FLOW ||
	       kind == RC_K_DM;
}

/* A destroyed record of kind at h: is h still that object? */
static bool same_dead(enum rc_kind kind, const void *h, const struct rc_obj *o)
{
	uint32_t id;

	if (!has_ident(kind))
		return true;
	return ident_of(kind, h, &id) && id == o->u.vb.ident;
}

/* Kinds only ever made by exported calls we wrap: an unknown handle is
 * certainly not one. */
static bool all_visible(enum rc_kind kind)
{
	return kind == RC_K_IBV_DEVLIST || kind == RC_K_COMP_CHANNEL ||
	       kind == RC_K_AH;
}

/*
 * An unknown handle of a kind that may be made where we do not look can
 * still be told from garbage: every verbs object holds the context it was
 * made on (first; a flow's second), that context is open, and a context's
 * first field is a device of ibv_get_device_list.  NULL, freed or
 * unmapped memory and stray bytes fail this, where the library would
 * crash on them; a provider's object passes.  Read with rc_peek only: the
 * pointers may be anything.
 */
_Static_assert(offsetof(struct ibv_pd, context) == 0 &&
	       offsetof(struct ibv_mr, context) == 0 &&
	       offsetof(struct ibv_cq, context) == 0 &&
	       offsetof(struct ibv_srq, context) == 0 &&
	       offsetof(struct ibv_qp, context) == 0 &&
	       offsetof(struct ibv_ah, context) == 0 &&
	       offsetof(struct ibv_comp_channel, context) == 0 &&
	       offsetof(struct ibv_dm, context) == 0 &&
	       offsetof(struct ibv_xrcd, context) == 0 &&
	       offsetof(struct ibv_wq, context) == 0 &&
	       offsetof(struct ibv_mw, context) == 0 &&
	       offsetof(struct ibv_rwq_ind_table, context) == 0 &&
	       offsetof(struct ibv_counters, context) == 0 &&
	       offsetof(struct ibv_td, context) == 0,
	       "a verbs object starts with its context");

bool rc_v_plausible_device(const void *d)
{
	struct ibv_device dev;

	if (!rc_peek(&dev, d, offsetof(struct ibv_device, dev_path)))
		return false;
	return (dev.node_type == IBV_NODE_UNKNOWN ||
		(dev.node_type >= IBV_NODE_CA &&
		 dev.node_type <= IBV_NODE_UNSPECIFIED)) &&
	       dev.transport_type >= IBV_TRANSPORT_UNKNOWN &&
	       dev.transport_type <= IBV_TRANSPORT_UNSPECIFIED &&
	       dev.name[0] && memchr(dev.name, 0, sizeof(dev.name));
}

static bool plausible_context(const void *ctx, bool known_ok)
{
	struct ibv_context hdr;
	struct rc_obj o;

	if (known_ok && rc_v_live(ctx, RC_K_CONTEXT, &o))
		return true;
	return rc_peek(&hdr, ctx, offsetof(struct ibv_context, mutex)) &&
	       hdr.cmd_fd >= 0 && rc_v_plausible_device(hdr.device);
}

static const char *implausible(enum rc_kind kind, const void *h)
{
	size_t at = kind == RC_K_FLOW ? offsetof(struct ibv_flow, context) :
					0;
	const void *ctx;

	if (!h)
		return "NULL";
	if (kind == RC_K_CONTEXT)
		return plausible_context(h, false) ? NULL :
		       "its device field holds no device";
	if (!rc_peek(&ctx, (const char *)h + at, sizeof(ctx)))
		return "not mapped";
	return plausible_context(ctx, true) ? NULL :
	       "its context field holds no open device context";
}

static const char *const use_verb[] = {
	[RC_USE] = "use", [RC_DESTROY] = "destroy",
};

bool rc_v_require(struct rc_call *c, enum rc_kind kind, const void *h,
		  enum rc_handle_use use, struct rc_obj *o)
{
	const char *name = rc_fn_info[c->fn].name;
	struct rc_finding f;
	bool known, live_other = false;
	const char *why;

	known = rc_reg_get((uintptr_t)h, o);
	if (known && o->kind == kind && !o->destroyed) {
		/* A fork child on its parent's object: the kernel acts on
		 * the parent's (the command file is shared), with the
		 * child's memory.  Forwarded, as for cm objects. */
		if (RC_UNLIKELY(o->pid != rc_pid()))
			rc_report_fork(c, o);
		return true;
	}
	if (known && !o->destroyed && o->kind != RC_K_THREAD)
		live_other = true;
	else if (!(known && o->kind == kind) &&
		 !rc_reg_get_kind((uintptr_t)h, kind, o))
		known = false;
	else
		known = true;
	if (rc_reg_degraded())
		goto unknown;
	if (live_other) {
		rc_finding_init(&f, RC_R_UNKNOWN_HANDLE, c,
				"%s(%p): not a %s but a live %s", name, h,
				rc_kind_text(kind), rc_kind_text(o->kind));
		rc_finding_add(&f, o, "what this address is");
	} else if (known && o->pid == rc_pid() && same_dead(kind, h, o)) {
		if (use == RC_DESTROY)
			rc_finding_init(&f, RC_R_DOUBLE_DESTROY, c,
					"%s(%p): %s already destroyed", name,
					h, rc_kind_text(kind));
		else
			rc_finding_init(&f, RC_R_USE_AFTER_DESTROY, c,
					"%s(%p): %s used after it was destroyed",
					name, h, rc_kind_text(kind));
		rc_finding_add(&f, o, NULL);
	} else if (!known && all_visible(kind) && h) {
		rc_finding_init(&f, RC_R_UNKNOWN_HANDLE, c,
				"%s(%p): %s that no create call returned",
				name, h, rc_kind_text(kind));
	} else if ((why = implausible(kind, h))) {
		rc_finding_init(&f, RC_R_UNKNOWN_HANDLE, c,
				"%s(%p): not a %s: %s", name, h,
				rc_kind_text(kind), why);
	} else {
		goto unknown;
	}
	if (rc_opt.protect)
		snprintf(f.message + strlen(f.message),
			 sizeof(f.message) - strlen(f.message),
			 "; the %s was not forwarded", use_verb[use]);
	rc_report(&f);
	memset(o, 0, sizeof(*o));
	return !rc_opt.protect;
unknown:
	memset(o, 0, sizeof(*o));
	return true;
}

#define NCHILD offsetof(struct rc_obj, u.vb.nchild)
#define NUSERS offsetof(struct rc_obj, u.vb.nusers)

/* Give back a count (one atomic, no lock); most objects leave most of
 * their uses unlinked: no call for those. */
static inline void unlink_ref(struct rc_ref ref, enum rc_tally t)
{
	if (ref.h)
		rc_tally_add(ref, t, -1, NULL);
}

/*
 * Count one more child (t: RC_T_VB_NCHILD) or user (RC_T_VB_NUSERS) of
 * the live object of kind at h, under its lock: the first makes its
 * counter cell, so that each count given back later is one atomic
 * operation without a lock (rc_tally_add).
 */
static struct rc_ref link_to(const void *h, enum rc_kind kind,
			     enum rc_tally t)
{
	struct rc_obj p;

	if (h && rc_reg_get_add((uintptr_t)h, kind,
				t == RC_T_VB_NCHILD ? NCHILD : NUSERS, 1, &p)) {
		if (p.pid == rc_pid())
			return rc_ref_of(&p);
		unlink_ref(rc_ref_of(&p), t);	/* our parent's */
	}
	return (struct rc_ref){ 0, 0 };
}

bool rc_v_require_parent(struct rc_call *c, enum rc_kind kind, const void *h,
			 struct rc_obj *o)
{
	if (h && rc_reg_get_add((uintptr_t)h, kind, NCHILD, 1, o)) {
		if (o->pid == rc_pid()) {
			c->pre_link = rc_ref_of(o);
			return true;
		}
		unlink_ref(rc_ref_of(o), RC_T_VB_NCHILD);
	}
	return rc_v_require(c, kind, h, RC_USE, o);
}

void rc_v_unlink_pre(struct rc_call *c)
{
	unlink_ref(c->pre_link, RC_T_VB_NCHILD);
	c->pre_link = (struct rc_ref){ 0, 0 };
}

static inline void v_track(struct rc_call *c, enum rc_kind kind,
			   const void *h, const struct rc_v_links *l,
			   unsigned flags, const struct rc_v_owner *w,
			   struct rc_obj *o)
{
	unsigned i;

	if (w)
		flags = (flags & ~RC_F_LIB) | (w->lib ? RC_F_LIB : 0);
	else if (c->internal)
		flags |= RC_F_LIB;
	rc_obj_init(c, kind, h, flags, o);
	if (w)
		o->u.vb.id = w->id;
	/* Just made: read as is (rc_peek is a system call). */
	switch (kind) {
	case RC_K_QP:
		o->u.vb.ident = ((const struct ibv_qp *)h)->qp_num;
		break;
	case RC_K_CQ:
		o->u.vb.ident = ((const struct ibv_cq *)h)->handle;
		break;
	case RC_K_SRQ:
		o->u.vb.ident = ((const struct ibv_srq *)h)->handle;
		break;
	case RC_K_WQ:
		o->u.vb.ident = ((const struct ibv_wq *)h)->wq_num;
		break;
	case RC_K_CONTEXT:
		o->u.vb.ident = (uint32_t)((const struct ibv_context *)h)->cmd_fd;
		break;
	case RC_K_COMP_CHANNEL:
		o->u.vb.fd = ((const struct ibv_comp_channel *)h)->fd;
		break;
	default:
		break;
	}
	if (l && l->parent && c->pre_link.h == (uintptr_t)l->parent) {
		o->u.vb.parent = c->pre_link;	/* counted by the check */
		c->pre_link = (struct rc_ref){ 0, 0 };
	} else if (l) {
		o->u.vb.parent = link_to(l->parent, l->pkind,
					 RC_T_VB_NCHILD);
	}
	if (l) {
		for (i = 0; i < RC_ARRAY_SIZE(l->use); i++)
			o->u.vb.use[i] = link_to(l->use[i], l->ukind[i],
						 RC_T_VB_NUSERS);
	}
	if (rc_reg_insert(o)) {
		if (kind == RC_K_CQ)
			rc_cq_count_add(o->handle, o->gen);
		return;
	}
	unlink_ref(o->u.vb.parent, RC_T_VB_NCHILD);
	for (i = 0; i < RC_ARRAY_SIZE(o->u.vb.use); i++)
		unlink_ref(o->u.vb.use[i], RC_T_VB_NUSERS);
}

void rc_v_track(struct rc_call *c, enum rc_kind kind, const void *h,
		const struct rc_v_links *l, unsigned flags, struct rc_obj *o)
{
	v_track(c, kind, h, l, flags, NULL, o);
}

void rc_v_track_owned(struct rc_call *c, enum rc_kind kind, const void *h,
		      const struct rc_v_links *l, const struct rc_v_owner *w,
		      struct rc_obj *o)
{
	v_track(c, kind, h, l, 0, w, o);
}

void rc_v_gone(struct rc_call *c, const struct rc_obj *o)
{
	struct rc_obj now;
	unsigned i;

	if (!o->handle)
		return;
	if (o->kind == RC_K_CQ)
		rc_cq_count_del(o->handle, o->gen);
	/*
	 * Unlinked by whoever marks it destroyed; also when a new object took
	 * the address before we could (its record replaced ours), since the
	 * real destroy succeeded.
	 */
	if (!rc_reg_destroy(o->handle, o->gen, c->tid, rc_call_stack(c)) &&
	    rc_reg_get(o->handle, &now) && now.gen == o->gen)
		return;
	unlink_ref(o->u.vb.parent, RC_T_VB_NCHILD);
	for (i = 0; i < RC_ARRAY_SIZE(o->u.vb.use); i++)
		unlink_ref(o->u.vb.use[i], RC_T_VB_NUSERS);
}

void rc_v_lib_object(struct rc_call *c, enum rc_kind kind, const void *h,
		     const struct rc_v_links *l)
{
	struct rc_obj o;
	bool internal = c->internal;

	if (!h || (rc_reg_get((uintptr_t)h, &o) && o.kind == kind &&
		   !o.destroyed))
		return;
	c->internal = true;
	rc_v_track(c, kind, h, l, 0, &o);
	c->internal = internal;
}

/* The live objects made on (or using) o, named in f. */
struct scan_arg {
	struct rc_ref ref;
	bool users;
	struct rc_finding *f;
	unsigned n;
};

static void scan_fn(const struct rc_obj *o, void *arg)
{
	struct scan_arg *a = arg;
	unsigned i;
	bool hit = false;

	if (o->destroyed || !rc_kind_is_verbs(o->kind) || o->pid != rc_pid())
		return;
	if (!a->users)
		hit = o->u.vb.parent.h == a->ref.h &&
		      o->u.vb.parent.gen == a->ref.gen;
	for (i = 0; a->users && i < RC_ARRAY_SIZE(o->u.vb.use); i++)
		hit |= o->u.vb.use[i].h == a->ref.h &&
		       o->u.vb.use[i].gen == a->ref.gen;
	if (!hit)
		return;
	a->n++;
	rc_finding_add(a->f, o, a->users ? "still uses it" :
		       "still made on it");
}

static unsigned name_related(struct rc_finding *f, const struct rc_obj *o,
			     bool users)
{
	struct scan_arg a = { rc_ref_of(o), users, f, 0 };

	rc_reg_foreach(scan_fn, &a);
	return a.n;
}

void rc_v_report_related(struct rc_call *c, enum rc_rule rule,
			 const struct rc_obj *o, bool users, const char *one,
			 const char *many, const char *consequence)
{
	struct rc_finding f;
	unsigned n;

	rc_finding_init(&f, rule, c, "x");
	rc_finding_add(&f, o, NULL);
	n = name_related(&f, o, users);
	if (!n)
		n = users ? o->u.vb.nusers : o->u.vb.nchild;
	if (users)
		snprintf(f.message, sizeof(f.message),
			 "%s(%p): %u %s still use%s this %s; %s",
			 rc_fn_info[c->fn].name, (void *)o->handle, n,
			 n == 1 ? one : many, n == 1 ? "s" : "",
			 rc_kind_text(o->kind), consequence);
	else
		snprintf(f.message, sizeof(f.message),
			 "%s(%p): %u %s made on this %s %s still alive; %s",
			 rc_fn_info[c->fn].name, (void *)o->handle, n,
			 n == 1 ? one : many, rc_kind_text(o->kind),
			 n == 1 ? "is" : "are", consequence);
	rc_report(&f);
}

/*
 * The user destroys what librdmacm made for an id: librdmacm frees it
 * again later.  Returns false when the destroy must be refused.
 */
bool rc_v_check_lib(struct rc_call *c, const struct rc_obj *o)
{
	struct rc_finding f;

	if (c->internal || !(o->flags & RC_F_LIB))
		return true;
	rc_finding_init(&f, RC_R_LIBRARY_OBJECT_DESTROYED_BY_USER, c,
			"%s(%p): librdmacm made this %s for its cm ids and "
			"frees it itself%s", rc_fn_info[c->fn].name,
			(void *)o->handle, rc_kind_text(o->kind),
			rc_opt.protect ? "; not forwarded (returns EBUSY)" :
			"");
	rc_finding_add(&f, o, NULL);
	rc_report(&f);
	return !rc_opt.protect;
}

/* ---- device lists ----------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_get_device_list);
	list = RC_FWD(&c, RC_REAL(ibv_get_device_list)(num_devices));
	if (list)
		rc_v_track(&c, RC_K_IBV_DEVLIST, list, NULL, 0, &o);
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_free_device_list);
	if (c.internal) {
		if (!rc_v_live(list, RC_K_IBV_DEVLIST, &o))
			o.handle = 0;
	} else if (!rc_v_require(&c, RC_K_IBV_DEVLIST, list, RC_DESTROY,
				 &o)) {
		return;
	}
	/* Before: the array's address may come back at once. */
	rc_v_gone(&c, &o);
	RC_FWDV(&c, RC_REAL(ibv_free_device_list)(list));
}

/* ---- contexts --------------------------------------------------------- */

static void track_context(struct rc_call *c, struct ibv_context *ctx,
			  unsigned flags)
{
	struct rc_obj o;

	rc_v_track(c, RC_K_CONTEXT, ctx, NULL, flags, &o);
	rc_ctxops_wrap(c, ctx);
	rc_wr_wrap(ctx);
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_open_device);
	if (!c.internal && !rc_v_plausible_device(device)) {
		struct rc_finding f;

		rc_finding_init(&f, RC_R_UNKNOWN_HANDLE, &c,
				"ibv_open_device(%p): not a device of "
				"ibv_get_device_list%s", (void *)device,
				rc_opt.protect ? "; the open was not forwarded" :
				"");
		rc_report(&f);
		if (rc_opt.protect) {
			errno = EINVAL;
			return NULL;
		}
	}
	ctx = RC_FWD(&c, RC_REAL(ibv_open_device)(device));
	if (ctx)
		track_context(&c, ctx, 0);
	return ctx;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_context *ctx;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_import_device);
	ctx = RC_FWD(&c, RC_REAL(ibv_import_device)(cmd_fd));
	if (ctx)
		track_context(&c, ctx, RC_F_IMPORTED);
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	RC_V_ENTER(c, ibv_close_device);
	if (c.internal) {
		if (!rc_v_live(context, RC_K_CONTEXT, &o))
			o.handle = 0;
	} else {
		if (!rc_v_require(&c, RC_K_CONTEXT, context, RC_DESTROY, &o))
			return EINVAL;
		if (o.handle && !rc_v_check_lib(&c, &o))
			return EBUSY;
		if (o.handle && o.u.vb.nchild > 0)
			rc_v_report_related(&c,
				RC_R_CLOSE_DEVICE_WITH_RESOURCES, &o, false,
				"object", "objects", "the kernel frees them with the "
				"context, their memory leaks and any later "
				"call on them uses the freed context");
	}
	rc_ctxops_forget(context);
	rc_wr_forget(context);
	ret = RC_FWD(&c, RC_REAL(ibv_close_device)(context));
	if (ret == 0)
		rc_v_gone(&c, &o);
	return ret;
}

/* ---- protection domains ----------------------------------------------- */

static const struct rc_v_links *on_context(struct rc_v_links *l,
					   const void *ctx)
{
	memset(l, 0, sizeof(*l));
	l->parent = ctx;
	l->pkind = RC_K_CONTEXT;
	return l;
}

static const struct rc_v_links *on_pd(struct rc_v_links *l, const void *pd)
{
	memset(l, 0, sizeof(*l));
	l->parent = pd;
	l->pkind = RC_K_PD;
	return l;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct rc_v_links l;
	struct ibv_pd *pd;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_alloc_pd);
	if (!c.internal && !rc_v_require(&c, RC_K_CONTEXT, context, RC_USE,
					 &o)) {
		errno = EINVAL;
		return NULL;
	}
	pd = RC_FWD(&c, RC_REAL(ibv_alloc_pd)(context));
	if (pd)
		rc_v_track(&c, RC_K_PD, pd, on_context(&l, context), 0, &o);
	return pd;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	struct rc_v_links l;
	struct ibv_pd *pd;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_import_pd);
	pd = RC_FWD(&c, RC_REAL(ibv_import_pd)(context, pd_handle));
	if (pd)
		rc_v_track(&c, RC_K_PD, pd, on_context(&l, context),
			   RC_F_IMPORTED, &o);
	return pd;
}

/* Shared by ibv_dealloc_pd and ibv_unimport_pd: false to refuse. */
static bool check_pd_goes(struct rc_call *c, struct ibv_pd *pd,
			  struct rc_obj *o)
{
	if (c->internal) {
		if (!rc_v_live(pd, RC_K_PD, o))
			o->handle = 0;
		return true;
	}
	if (!rc_v_require(c, RC_K_PD, pd, RC_DESTROY, o))
		return false;
	if (!o->handle)
		return true;
	if (!rc_v_check_lib(c, o))
		return false;
	if (o->u.vb.nchild > 0 && c->fn == RC_FN_ibv_dealloc_pd)
		rc_v_report_related(c, RC_R_PD_DEALLOC_WITH_CHILDREN, o, false,
				    "object", "objects", "libibverbs fails "
				    "with EBUSY and the PD stays allocated");
	return true;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	RC_V_ENTER(c, ibv_dealloc_pd);
	if (!check_pd_goes(&c, pd, &o))
		return o.handle ? EBUSY : EINVAL;
	ret = RC_FWD(&c, RC_REAL(ibv_dealloc_pd)(pd));
	if (ret == 0)
		rc_v_gone(&c, &o);
	return ret;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_unimport_pd);
	if (!check_pd_goes(&c, pd, &o))
		return;
	rc_v_gone(&c, &o);
	RC_FWDV(&c, RC_REAL(ibv_unimport_pd)(pd));
}

/* ---- memory regions --------------------------------------------------- */

/* Before a registration on pd: a live PD, if we know it. */
static bool check_on_pd(struct rc_call *c, struct ibv_pd *pd)
{
	struct rc_obj o;

	return c->internal || rc_v_require_parent(c, RC_K_PD, pd, &o);
}

/* iova: where its SGEs start (the MR's address unless given). */
static struct ibv_mr *track_mr(struct rc_call *c, struct ibv_mr *mr,
			       struct ibv_pd *pd, unsigned flags,
			       uint64_t iova, unsigned access)
{
	struct rc_v_links l;
	struct rc_obj o;

	if (mr) {
		rc_v_track(c, RC_K_MR, mr, on_pd(&l, pd), flags, &o);
		rc_wr_mr_made(mr, pd, iova, access, false);
	}
	return mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	RC_CALL(c);

	RC_V_ENTER(c, ibv_reg_mr);
	if (!check_on_pd(&c, pd)) {
		errno = EINVAL;
		return NULL;
	}
	return track_mr(&c, RC_FWD(&c, RC_REAL(ibv_reg_mr)(pd, addr, length,
							    access)), pd, 0,
			(uintptr_t)addr, access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	RC_CALL(c);

	RC_V_ENTER(c, ibv_reg_mr_iova);
	if (!check_on_pd(&c, pd)) {
		errno = EINVAL;
		return NULL;
	}
	return track_mr(&c, RC_FWD(&c, RC_REAL(ibv_reg_mr_iova)(pd, addr,
			length, iova, access)), pd, 0, iova, access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	RC_CALL(c);

	RC_V_ENTER(c, ibv_reg_mr_iova2);
	if (!check_on_pd(&c, pd)) {
		errno = EINVAL;
		return NULL;
	}
	return track_mr(&c, RC_FWD(&c, RC_REAL(ibv_reg_mr_iova2)(pd, addr,
			length, iova, access)), pd, 0, iova, access);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				 size_t length, uint64_t iova, int fd,
				 int access)
{
	RC_CALL(c);

	RC_V_ENTER(c, ibv_reg_dmabuf_mr);
	if (!check_on_pd(&c, pd)) {
		errno = EINVAL;
		return NULL;
	}
	return track_mr(&c, RC_FWD(&c, RC_REAL(ibv_reg_dmabuf_mr)(pd, offset,
			length, iova, fd, access)), pd, 0, iova, access);
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct ibv_mr *mr;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_import_mr);
	mr = RC_FWD(&c, RC_REAL(ibv_import_mr)(pd, mr_handle));
	/* Its access flags are not told: any. */
	return track_mr(&c, mr, pd, RC_F_IMPORTED,
			mr ? (uintptr_t)mr->addr : 0, ~0u);
}

/* The data path's record of mr after ibv_rereg_mr changed it (keys,
 * range, PD or access). */
static void rereg_made(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
		       int access)
{
	if (!rc_wr_mr_on())
		return;
	rc_wr_mr_gone(mr);
	if (!(flags & IBV_REREG_MR_CHANGE_ACCESS))
		access = ~0;
	rc_wr_mr_made(mr, (flags & IBV_REREG_MR_CHANGE_PD) ? pd : mr->pd,
		      (uintptr_t)mr->addr, (unsigned)access, false);
}

struct move_arg {
	struct rc_ref pd;
};

static void move_fn(struct rc_obj *o, void *arg)
{
	if (!o->destroyed)
		o->u.vb.parent = ((struct move_arg *)arg)->pd;
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t length, int access)
{
	struct move_arg a;
	struct rc_obj o, p;
	RC_CALL(c);
	int ret;

	RC_V_ENTER(c, ibv_rereg_mr);
	if (!c.internal) {
		if (!rc_v_require(&c, RC_K_MR, mr, RC_USE, &o) ||
		    ((flags & IBV_REREG_MR_CHANGE_PD) &&
		     !rc_v_require(&c, RC_K_PD, pd, RC_USE, &p))) {
			errno = EINVAL;
			return IBV_REREG_MR_ERR_INPUT;
		}
	} else if (!rc_v_live(mr, RC_K_MR, &o)) {
		o.handle = 0;
	}
	if (flags & (IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD))
		rc_wr_mr_check(&c, mr, "ibv_rereg_mr");
	ret = RC_FWD(&c, RC_REAL(ibv_rereg_mr)(mr, flags, pd, addr, length,
						access));
	if (ret == 0 && flags)
		rereg_made(mr, flags, pd, access);
	/* On another PD now, even when only the fork bookkeeping failed. */
	if ((ret == 0 || ret == IBV_REREG_MR_ERR_DO_FORK_OLD) && o.handle &&
	    (flags & IBV_REREG_MR_CHANGE_PD)) {
		a.pd = link_to(pd, RC_K_PD, RC_T_VB_NCHILD);
		if (rc_reg_update(o.handle, o.gen, move_fn, &a))
			unlink_ref(o.u.vb.parent, RC_T_VB_NCHILD);
		else
			unlink_ref(a.pd, RC_T_VB_NCHILD);
	}
	return ret;
}

/* ibv_dereg_mr and ibv_unimport_mr: false to refuse. */
static bool check_mr_goes(struct rc_call *c, struct ibv_mr *mr,
			  struct rc_obj *o)
{
	if (c->internal) {
		if (!rc_v_live(mr, RC_K_MR, o))
			o->handle = 0;
		return true;
	}
	return rc_v_require(c, RC_K_MR, mr, RC_DESTROY, o);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	RC_V_ENTER(c, ibv_dereg_mr);
	if (!check_mr_goes(&c, mr, &o))
		return EINVAL;
	if (o.handle)
		rc_wr_mr_check(&c, mr, "ibv_dereg_mr");
	ret = RC_FWD(&c, RC_REAL(ibv_dereg_mr)(mr));
	if (ret == 0) {
		if (o.handle)
			rc_wr_mr_gone(mr);
		rc_v_gone(&c, &o);
	}
	return ret;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_unimport_mr);
	if (!check_mr_goes(&c, mr, &o))
		return;
	rc_v_gone(&c, &o);
	RC_FWDV(&c, RC_REAL(ibv_unimport_mr)(mr));
}

/* ---- address handles -------------------------------------------------- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct rc_v_links l;
	struct ibv_ah *ah;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_create_ah);
	if (!check_on_pd(&c, pd) ||
	    !rc_arg_readable(&c, "attr", attr, sizeof(*attr), false)) {
		errno = EINVAL;
		return NULL;
	}
	ah = RC_FWD(&c, RC_REAL(ibv_create_ah)(pd, attr));
	if (ah)
		rc_v_track(&c, RC_K_AH, ah, on_pd(&l, pd), 0, &o);
	return ah;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
				     struct ibv_grh *grh, uint8_t port_num)
{
	struct rc_v_links l;
	struct ibv_ah *ah;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_create_ah_from_wc);
	if (!check_on_pd(&c, pd)) {
		errno = EINVAL;
		return NULL;
	}
	ah = RC_FWD(&c, RC_REAL(ibv_create_ah_from_wc)(pd, wc, grh,
						       port_num));
	/* Its nested ibv_create_ah was not followed: record it here. */
	if (ah)
		rc_v_track(&c, RC_K_AH, ah, on_pd(&l, pd), 0, &o);
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct rc_obj o;
	RC_CALL(c);
	int ret;

	RC_V_ENTER(c, ibv_destroy_ah);
	if (c.internal) {
		if (!rc_v_live(ah, RC_K_AH, &o))
			o.handle = 0;
	} else if (!rc_v_require(&c, RC_K_AH, ah, RC_DESTROY, &o)) {
		return EINVAL;
	}
	ret = RC_FWD(&c, RC_REAL(ibv_destroy_ah)(ah));
	if (ret == 0)
		rc_v_gone(&c, &o);
	return ret;
}

/* ---- imported device memory ------------------------------------------- */

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	struct rc_v_links l;
	struct ibv_dm *dm;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_import_dm);
	dm = RC_FWD(&c, RC_REAL(ibv_import_dm)(context, dm_handle));
	if (dm)
		rc_v_track(&c, RC_K_DM, dm, on_context(&l, context),
			   RC_F_IMPORTED, &o);
	return dm;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_unimport_dm);
	if (c.internal) {
		if (!rc_v_live(dm, RC_K_DM, &o))
			o.handle = 0;
	} else if (!rc_v_require(&c, RC_K_DM, dm, RC_DESTROY, &o)) {
		return;
	}
	rc_v_gone(&c, &o);
	RC_FWDV(&c, RC_REAL(ibv_unimport_dm)(dm));
}

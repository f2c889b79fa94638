/*
 * wrap_qp.c - QPs made through rdmacm: creation (rdma_create_qp and the
 * _ex variant it calls), destruction with rdma_destroy_qp, and QPs taken
 * away behind rdmacm's back with ibv_destroy_qp (rping does that before
 * rdma_destroy_id).  Checks create-qp-twice, create-qp-unbound,
 * destroy-qp-without-qp and library-object-destroyed-by-user.  SRQs made
 * through rdmacm likewise: destroy-srq-without-srq, destroy-srq-before-qp.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "options.h"
#include "wrap.h"

/* rdma_create_qp_ex's attributes name a PD (read safely: any pointer). */
static bool has_pd(const struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex a;

	return rc_peek(&a, attr, sizeof(a)) &&
	       (a.comp_mask & IBV_QP_INIT_ATTR_PD) && a.pd;
}

/* Before forwarding a user's create: the id must be able to take a QP. */
static bool check_create(struct rc_call *c, struct rdma_cm_id *id,
			 const struct rc_obj *o, bool have_pd)
{
	struct rc_finding f;

	if (id->qp) {
		rc_finding_init(&f, RC_R_CREATE_QP_TWICE, c,
				"%s(%p): the cm id already has QP %p (EINVAL)",
				rc_fn_info[c->fn].name, (void *)id,
				(void *)id->qp);
		rc_finding_add(&f, o, NULL);
		rc_report(&f);
		return true;
	}
	if (id->verbs)
		return true;
	rc_finding_init(&f, RC_R_CREATE_QP_UNBOUND, c,
			"%s(%p): the cm id is not bound to a device yet "
			"(resolve or bind an address first)%s",
			rc_fn_info[c->fn].name, (void *)id,
			!have_pd && rc_opt.protect ?
			"; not forwarded: librdmacm would crash" : "");
	rc_finding_add(&f, o, NULL);
	rc_report(&f);
	if (!have_pd && rc_opt.protect) {
		errno = EINVAL;
		return false;
	}
	return true;
}

/*
 * After a successful create, or when a call is seen to have left a QP or
 * SRQ in the id: it joins the registry, unless it is known already (also
 * when the program took it away with ibv_destroy_qp: id->qp still points
 * at it).
 */
void rc_track_owned(struct rc_call *c, struct rdma_cm_id *id,
		    enum rc_kind kind, void *h)
{
	struct rc_obj q, o;

	if (!h)
		return;
	if (rc_reg_get((uintptr_t)h, &q) && q.kind == kind &&
	    (!q.destroyed || (q.flags & RC_F_VERBS_GONE)))
		return;
	rc_obj_init(c, kind, h, 0, &q);
	if (kind == RC_K_QP)
		q.u.qp.qpn = ((struct ibv_qp *)h)->qp_num;
	if (rc_reg_get((uintptr_t)id, &o) && o.kind == RC_K_ID &&
	    !o.destroyed) {
		q.u.qp.id = rc_ref_of(&o);
		q.flags |= o.flags & RC_F_LIB;
	}
	rc_reg_insert(&q);
}

struct owner_arg {
	struct rc_ref id;
};

static void owner_fn(struct rc_obj *q, void *arg)
{
	q->u.qp.id = ((struct owner_arg *)arg)->id;
}

/* rdma_create_ep makes the QP before we learn of the id: link them. */
void rc_qp_set_owner(const struct rc_obj *id)
{
	struct owner_arg a = { rc_ref_of(id) };
	struct ibv_qp *qp = RC_ID(id)->qp;

	if (qp)
		rc_update_live(qp, RC_K_QP, owner_fn, &a);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	if (!RC_REAL(rdma_create_qp)) {
		errno = ENOSYS;
		return -1;
	}
	rc_call_begin(&c, RC_FN_rdma_create_qp,
		      (uintptr_t)__builtin_return_address(0));
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o))
			return -1;
		if (o.handle && !check_create(&c, id, &o, pd != NULL))
			return -1;
	}
	ret = RC_FWD(&c, RC_REAL(rdma_create_qp)(id, pd, qp_init_attr));
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, RC_K_QP, id->qp);
	return ret;
}

int rdma_create_qp_ex(struct rdma_cm_id *id,
		      struct ibv_qp_init_attr_ex *qp_init_attr)
{
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	if (!RC_REAL(rdma_create_qp_ex)) {
		errno = ENOSYS;
		return -1;
	}
	rc_call_begin(&c, RC_FN_rdma_create_qp_ex,
		      (uintptr_t)__builtin_return_address(0));
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o))
			return -1;
		if (o.handle && !check_create(&c, id, &o, has_pd(qp_init_attr)))
			return -1;
	}
	ret = RC_FWD(&c, RC_REAL(rdma_create_qp_ex)(id, qp_init_attr));
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, RC_K_QP, id->qp);
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct rc_finding f;
	RC_CALL(c);
	struct rc_obj o, q;
	bool known = false;

	o.handle = 0;
	if (!RC_REAL(rdma_destroy_qp))
		return;
	rc_call_begin(&c, RC_FN_rdma_destroy_qp,
		      (uintptr_t)__builtin_return_address(0));
	if (c.skip) {
		RC_FWDV(&c, RC_REAL(rdma_destroy_qp)(id));
		return;
	}
	if (!c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o))
			return;
		if (o.handle && !id->qp) {
			rc_finding_init(&f, RC_R_DESTROY_QP_WITHOUT_QP, &c,
					"rdma_destroy_qp(%p): the cm id has no "
					"QP%s", (void *)id, rc_opt.protect ?
					"; not forwarded: librdmacm would "
					"crash" : "");
			rc_finding_add(&f, &o, NULL);
			rc_report(&f);
			if (rc_opt.protect)
				return;
		}
	}
	if (id && id->qp && rc_reg_get((uintptr_t)id->qp, &q) &&
	    q.kind == RC_K_QP)
		known = true;
	if (!c.internal && known && (q.flags & RC_F_VERBS_GONE)) {
		rc_finding_init(&f, RC_R_LIBRARY_OBJECT_DESTROYED_BY_USER, &c,
				"rdma_destroy_qp(%p): QP %p was already "
				"destroyed with ibv_destroy_qp%s", (void *)id,
				(void *)q.handle, rc_opt.protect ?
				"; not forwarded" : "");
		rc_finding_add(&f, &q, NULL);
		rc_report(&f);
		if (rc_opt.protect)
			return;
	}
	if (known && !q.destroyed)
		rc_untrack(&c, &q);
	RC_FWDV(&c, RC_REAL(rdma_destroy_qp)(id));
}

static void verbs_gone_fn(struct rc_obj *q, void *arg)
{
	q->flags |= RC_F_VERBS_GONE;
}

/*
 * A QP we saw destroyed, passed again: the same QP if its memory still
 * holds its number (a new QP at that address, made where we cannot see,
 * has another).
 */
static bool same_dead_qp(const struct ibv_qp *qp, const struct rc_obj *q)
{
	uint32_t qpn;

	return q->destroyed && rc_peek(&qpn, &qp->qp_num, sizeof(qpn)) &&
	       qpn == q->u.qp.qpn;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct rc_finding f;
	RC_CALL(c);
	struct rc_obj q;

	if (!RC_REAL(ibv_destroy_qp))
		return ENOSYS;
	rc_call_begin(&c, RC_FN_ibv_destroy_qp,
		      (uintptr_t)__builtin_return_address(0));
	if (c.skip || c.internal || !rc_reg_get((uintptr_t)qp, &q) ||
	    q.kind != RC_K_QP)
		return RC_FWD(&c, RC_REAL(ibv_destroy_qp)(qp));
	if (!q.destroyed) {
		rc_reg_update(q.handle, q.gen, verbs_gone_fn, NULL);
		rc_untrack(&c, &q);
	} else if (same_dead_qp(qp, &q)) {
		rc_finding_init(&f, RC_R_DOUBLE_DESTROY, &c,
				"ibv_destroy_qp(%p): QP %u was destroyed "
				"already%s", (void *)qp, q.u.qp.qpn,
				rc_opt.protect ? "; not forwarded (returns "
				"EINVAL)" : "");
		rc_finding_add(&f, &q, NULL);
		rc_report(&f);
		if (rc_opt.protect)
			return EINVAL;
	}
	return RC_FWD(&c, RC_REAL(ibv_destroy_qp)(qp));
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	if (!RC_REAL(rdma_create_srq)) {
		errno = ENOSYS;
		return -1;
	}
	rc_call_begin(&c, RC_FN_rdma_create_srq,
		      (uintptr_t)__builtin_return_address(0));
	if (!c.skip && !c.internal &&
	    !rc_require(&c, RC_K_ID, id, RC_USE, &o))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_create_srq)(id, pd, attr));
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, RC_K_SRQ, id->srq);
	return ret;
}

int rdma_create_srq_ex(struct rdma_cm_id *id,
		       struct ibv_srq_init_attr_ex *attr)
{
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	if (!RC_REAL(rdma_create_srq_ex)) {
		errno = ENOSYS;
		return -1;
	}
	rc_call_begin(&c, RC_FN_rdma_create_srq_ex,
		      (uintptr_t)__builtin_return_address(0));
	if (!c.skip && !c.internal &&
	    !rc_require(&c, RC_K_ID, id, RC_USE, &o))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_create_srq_ex)(id, attr));
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, RC_K_SRQ, id->srq);
	return ret;
}

/* Before a user's rdma_destroy_srq; false when it must be refused. */
static bool check_destroy_srq(struct rc_call *c, struct rdma_cm_id *id,
			      const struct rc_obj *o)
{
	struct rc_finding f;

	if (!id->srq) {
		rc_finding_init(&f, RC_R_DESTROY_SRQ_WITHOUT_SRQ, c,
				"rdma_destroy_srq(%p): the cm id has no SRQ%s",
				(void *)id, rc_opt.protect ?
				"; not forwarded: librdmacm would crash" : "");
		rc_finding_add(&f, o, NULL);
		rc_report(&f);
		return !rc_opt.protect;
	}
	if (id->qp) {
		rc_finding_init(&f, RC_R_DESTROY_SRQ_BEFORE_QP, c,
				"rdma_destroy_srq(%p): the cm id still has QP "
				"%p; the SRQ and the QP's CQs leak (call "
				"rdma_destroy_qp first)", (void *)id,
				(void *)id->qp);
		rc_finding_add(&f, o, NULL);
		rc_report(&f);
	}
	return true;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	RC_CALL(c);
	struct rc_obj o, q;

	if (!RC_REAL(rdma_destroy_srq))
		return;
	rc_call_begin(&c, RC_FN_rdma_destroy_srq,
		      (uintptr_t)__builtin_return_address(0));
	if (c.skip) {
		RC_FWDV(&c, RC_REAL(rdma_destroy_srq)(id));
		return;
	}
	if (!c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o))
			return;
		if (o.handle && !check_destroy_srq(&c, id, &o))
			return;
	}
	if (id && id->srq && rc_reg_get((uintptr_t)id->srq, &q) &&
	    q.kind == RC_K_SRQ && !q.destroyed)
		rc_untrack(&c, &q);
	RC_FWDV(&c, RC_REAL(rdma_destroy_srq)(id));
}

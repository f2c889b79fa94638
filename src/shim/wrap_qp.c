/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_qp.c - QPs and SRQs: made through rdmacm (rdma_create_qp and the
 * _ex variant it calls, rdma_create_srq) and destroyed with
 * rdma_destroy_qp / rdma_destroy_srq, or made and destroyed with
 * libibverbs directly (ibv_create_qp, ibv_destroy_qp, ibv_create_srq,
 * ibv_destroy_srq; QPs librdmacm made can be taken away behind its back
 * with ibv_destroy_qp, as rping does before rdma_destroy_id).  Checks
 * create-qp-twice, create-qp-unbound, destroy-qp-without-qp,
 * library-object-destroyed-by-user, cq-events-unacked-at-destroy-qp,
 * destroy-srq-without-srq, destroy-srq-before-qp and, for the verbs
 * destroys, destroy-with-unacked-async-events and srq-destroy-with-qps.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/cm.h"
#include "shim/verbs.h"
#include "shim/wr.h"

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

/* The cm id's QP (SRQ) is the id owner's to free, with the id's calls. */
static void owner_fn(struct rc_obj *q, void *arg)
{
	struct rc_v_owner *a = arg;

	q->u.vb.id = a->id;
	if (a->lib)
		q->flags |= RC_F_LIB;
	else
		q->flags &= ~RC_F_LIB;
}

/* What librdmacm made the QP (SRQ) from: its PD, CQs, SRQ. */
void rc_qp_links(enum rc_kind kind, void *h, struct rc_v_links *l)
{
	struct ibv_qp *qp = h;
	struct ibv_srq *srq = h;

	memset(l, 0, sizeof(*l));
	l->pkind = RC_K_PD;
	if (kind == RC_K_SRQ) {
		l->parent = srq->pd;
		return;
	}
	l->parent = qp->pd;
	l->use[0] = qp->send_cq;
	l->use[1] = qp->recv_cq;
	l->use[2] = qp->srq;
	l->ukind[0] = l->ukind[1] = RC_K_CQ;
	l->ukind[2] = RC_K_SRQ;
}

void rc_track_owned(struct rc_call *c, struct rdma_cm_id *id,
		    const struct rc_obj *idrec, enum rc_kind kind, void *h)
{
	struct rc_v_owner a = { { 0, 0 }, false };
	struct rc_v_links l;
	struct rc_obj q, o;

	if (!h)
		return;
	if (idrec && idrec->handle == (uintptr_t)id) {
		a.id = rc_ref_of(idrec);
		a.lib = idrec->flags & RC_F_LIB;
	} else if (rc_reg_get((uintptr_t)id, &o) && o.kind == RC_K_ID &&
		   !o.destroyed) {
		a.id = rc_ref_of(&o);
		a.lib = o.flags & RC_F_LIB;
	}
	/* Made by a verbs call we saw: now the id's (one lookup). */
	if (rc_update_live(h, kind, owner_fn, &a))
		return;
	/* Taken away with ibv_destroy_qp: id->qp still points at it. */
	if (rc_reg_get((uintptr_t)h, &q) && q.kind == kind && q.destroyed &&
	    (q.flags & RC_F_VERBS_GONE))
		return;
	/* Made where we could not see (an inline call of librdmacm's). */
	rc_qp_links(kind, h, &l);
	rc_v_lib_object(c, kind, h, &l);
	rc_update_live(h, kind, owner_fn, &a);
}

/* rdma_create_ep makes the QP before we learn of the id: link them. */
void rc_qp_set_owner(const struct rc_obj *id)
{
	struct rc_v_owner a = { rc_ref_of(id), (id->flags & RC_F_LIB) != 0 };
	struct ibv_qp *qp = RC_ID(id)->qp;

	if (qp)
		rc_update_live(qp, RC_K_QP, owner_fn, &a);
}

/*
 * The QP a user's rdma_create_qp(_ex) is making for a known id, on this
 * thread while it forwards (NULL: none): the library's own ibv_create_qp
 * inside records the QP with its owner in the one insert, and says so in
 * made (the QP's handle), so that no update follows.
 */
struct qp_making {
	const struct rdma_cm_id *id;
	struct rc_v_owner w;
	uintptr_t made;
};
static RC_TLS struct qp_making *qp_making;

/* rdma_create_qp's and _ex's way: prev, the outer one's (restored). */
static inline void making_begin(struct qp_making *m, struct qp_making **prev,
				const struct rdma_cm_id *id,
				const struct rc_obj *o)
{
	*prev = qp_making;
	m->id = id;
	m->w.id = rc_ref_of(o);
	m->w.lib = o->flags & RC_F_LIB;
	m->made = 0;
	qp_making = o->handle ? m : NULL;
}

/* After the forward: was id's QP recorded with its owner already? */
static inline bool making_end(const struct qp_making *m,
			      struct qp_making *prev,
			      const struct rdma_cm_id *id)
{
	qp_making = prev;
	return m->made && m->made == (uintptr_t)id->qp;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct qp_making m, *prev = NULL;
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	RC_ENTER(c, rdma_create_qp);
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o) ||
		    !rc_arg_readable(&c, "qp_init_attr", qp_init_attr,
				     sizeof(*qp_init_attr), false))
			return -1;
		if (o.handle && !check_create(&c, id, &o, pd != NULL))
			return -1;
		making_begin(&m, &prev, id, &o);
	}
	ret = RC_FWD(&c, RC_REAL(rdma_create_qp)(id, pd, qp_init_attr));
	if (!c.skip && !c.internal && making_end(&m, prev, id))
		return ret;
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, c.internal ? NULL : &o, RC_K_QP,
			       id->qp);
	return ret;
}

int rdma_create_qp_ex(struct rdma_cm_id *id,
		      struct ibv_qp_init_attr_ex *qp_init_attr)
{
	struct qp_making m, *prev = NULL;
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	RC_ENTER(c, rdma_create_qp_ex);
	if (!c.skip && !c.internal) {
		if (!rc_require(&c, RC_K_ID, id, RC_USE, &o) ||
		    !rc_arg_readable(&c, "qp_init_attr", qp_init_attr,
				     sizeof(*qp_init_attr), false))
			return -1;
		if (o.handle && !check_create(&c, id, &o, has_pd(qp_init_attr)))
			return -1;
		making_begin(&m, &prev, id, &o);
	} else if (!c.skip && qp_making && qp_making->id == id) {
		/* Inside the user's rdma_create_qp: its QP is the outer's. */
		ret = RC_FWD(&c, RC_REAL(rdma_create_qp_ex)(id, qp_init_attr));
		if (ret == 0 && qp_making->made != (uintptr_t)id->qp)
			rc_track_owned(&c, id, NULL, RC_K_QP, id->qp);
		return ret;
	}
	ret = RC_FWD(&c, RC_REAL(rdma_create_qp_ex)(id, qp_init_attr));
	if (!c.skip && !c.internal && making_end(&m, prev, id))
		return ret;
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, c.internal ? NULL : &o, RC_K_QP,
			       id->qp);
	return ret;
}

/*
 * Before the QP of id goes (rdma_destroy_qp, rdma_destroy_ep): its async
 * events, and the completion events of the CQs librdmacm made for it,
 * which go with it (ibv_destroy_cq waits for their acks).  False when the
 * call would certainly hang and must be refused.
 */
bool rc_qp_check_destroy(struct rc_call *c, struct rdma_cm_id *id,
			 const struct rc_obj *qp)
{
	struct ibv_cq *cqs[2] = { id->send_cq, id->recv_cq };
	struct rc_obj q, cq;
	bool ok = true;
	unsigned i;

	if (qp) {
		if (qp->kind == RC_K_QP && !qp->destroyed &&
		    qp->pid == rc_pid())
			ok = rc_v_check_async(c, qp);
	} else if (id->qp && rc_v_live(id->qp, RC_K_QP, &q)) {
		ok = rc_v_check_async(c, &q);
	}
	for (i = 0; ok && i < 2; i++) {
		if (!cqs[i] || (i == 1 && cqs[1] == cqs[0]) ||
		    !rc_v_live(cqs[i], RC_K_CQ, &cq) ||
		    !(cq.flags & RC_F_LIB))
			continue;
		ok = rc_v_check_cq_events(c, &cq,
					  RC_R_CQ_EVENTS_UNACKED_AT_DESTROY_QP) &&
		     rc_v_check_async(c, &cq);
	}
	return ok;
}

/* The QP rdma_destroy_qp has marked gone on this thread, while it
 * forwards (0: none). */
static RC_TLS uintptr_t qp_gone;

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	uintptr_t prev = qp_gone;
	struct rc_finding f;
	RC_CALL(c);
	struct rc_obj o, q;
	bool known = false;

	o.handle = 0;
	RC_ENTER(c, rdma_destroy_qp);
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
	if (!c.internal && o.handle &&
	    !rc_qp_check_destroy(&c, id, known ? &q : NULL))
		return;
	/* Before forwarding: the address may be reused at once. */
	if (known && !q.destroyed) {
		rc_v_gone(&c, &q);
		/* The library's ibv_destroy_qp of it has nothing to do. */
		qp_gone = q.handle;
	}
	RC_FWDV(&c, RC_REAL(rdma_destroy_qp)(id));
	qp_gone = prev;
}

/* ibv_create_qp's attributes: the CQs and SRQ must be live ones. */
static bool check_qp_attr(struct rc_call *c, struct ibv_pd *pd,
			  const struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr a;
	struct rc_obj o;

	if (!rc_v_require(c, RC_K_PD, pd, RC_USE, &o))
		return false;
	if (!rc_peek(&a, attr, sizeof(a)))
		return rc_arg_readable(c, "qp_init_attr", attr, sizeof(a),
				       false);
	return (!a.send_cq ||
		rc_v_require(c, RC_K_CQ, a.send_cq, RC_USE, &o)) &&
	       (!a.recv_cq || a.recv_cq == a.send_cq ||
		rc_v_require(c, RC_K_CQ, a.recv_cq, RC_USE, &o)) &&
	       (!a.srq || rc_v_require(c, RC_K_SRQ, a.srq, RC_USE, &o));
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct rc_v_links l;
	struct ibv_qp *qp;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_create_qp);
	if (!c.internal && !check_qp_attr(&c, pd, qp_init_attr)) {
		errno = EINVAL;
		return NULL;
	}
	qp = RC_FWD(&c, RC_REAL(ibv_create_qp)(pd, qp_init_attr));
	if (qp) {
		rc_qp_links(RC_K_QP, qp, &l);
		if (c.internal && qp_making && !qp_making->made) {
			/* librdmacm's, for the id rdma_create_qp names. */
			rc_v_track_owned(&c, RC_K_QP, qp, &l, &qp_making->w,
					 &o);
			if (o.gen)
				qp_making->made = (uintptr_t)qp;
		} else {
			rc_v_track(&c, RC_K_QP, qp, &l, 0, &o);
		}
		rc_wr_qp_made(qp, false);
	}
	return qp;
}

static void verbs_gone_fn(struct rc_obj *q, void *arg)
{
	q->flags |= RC_F_VERBS_GONE;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	RC_CALL(c);
	struct rc_obj q;
	int ret;

	RC_V_ENTER(c, ibv_destroy_qp);
	if (c.internal) {
		if ((uintptr_t)qp == qp_gone || !rc_v_live(qp, RC_K_QP, &q))
			q.handle = 0;
	} else {
		if (!rc_v_require(&c, RC_K_QP, qp, RC_DESTROY, &q))
			return EINVAL;
		if (q.handle && !rc_v_check_lib(&c, &q))
			return EBUSY;
		if (q.handle && !rc_v_check_async(&c, &q))
			return EBUSY;
	}
	rc_wr_qp_check(&c, qp);
	ret = RC_FWD(&c, RC_REAL(ibv_destroy_qp)(qp));
	if (ret == 0)
		rc_wr_qp_gone(qp);
	if (ret || !q.handle)
		return ret;
	/* A QP a cm id still points at: rdma_destroy_qp must not follow. */
	if (!c.internal && q.u.vb.id.h)
		rc_reg_update(q.handle, q.gen, verbs_gone_fn, NULL);
	rc_v_gone(&c, &q);
	return ret;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *srq_init_attr)
{
	struct rc_v_links l;
	struct ibv_srq *srq;
	struct rc_obj o;
	RC_CALL(c);

	RC_V_ENTER(c, ibv_create_srq);
	if (!c.internal && (!rc_v_require(&c, RC_K_PD, pd, RC_USE, &o) ||
			    !rc_arg_readable(&c, "srq_init_attr", srq_init_attr,
					     sizeof(*srq_init_attr), false))) {
		errno = EINVAL;
		return NULL;
	}
	srq = RC_FWD(&c, RC_REAL(ibv_create_srq)(pd, srq_init_attr));
	if (srq) {
		rc_qp_links(RC_K_SRQ, srq, &l);
		l.parent = pd;
		rc_v_track(&c, RC_K_SRQ, srq, &l, 0, &o);
	}
	return srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	RC_CALL(c);
	struct rc_obj q;
	int ret;

	RC_V_ENTER(c, ibv_destroy_srq);
	if (c.internal) {
		if (!rc_v_live(srq, RC_K_SRQ, &q))
			q.handle = 0;
	} else {
		if (!rc_v_require(&c, RC_K_SRQ, srq, RC_DESTROY, &q))
			return EINVAL;
		if (q.handle && !rc_v_check_lib(&c, &q))
			return EBUSY;
		/* The kernel refuses first: then nothing waits. */
		if (q.handle && q.u.vb.nusers > 0)
			rc_v_report_related(&c, RC_R_SRQ_DESTROY_WITH_QPS, &q,
				true, "QP", "QPs", "libibverbs fails with EBUSY "
				"and the SRQ stays");
		else if (q.handle && !rc_v_check_async(&c, &q))
			return EBUSY;
	}
	ret = RC_FWD(&c, RC_REAL(ibv_destroy_srq)(srq));
	if (ret == 0) {
		rc_wr_srq_gone(srq);
		rc_v_gone(&c, &q);
	}
	return ret;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	RC_ENTER(c, rdma_create_srq);
	if (!c.skip && !c.internal &&
	    (!rc_require(&c, RC_K_ID, id, RC_USE, &o) ||
	     !rc_arg_readable(&c, "attr", attr, sizeof(*attr), false)))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_create_srq)(id, pd, attr));
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, c.internal ? NULL : &o, RC_K_SRQ,
			       id->srq);
	return ret;
}

int rdma_create_srq_ex(struct rdma_cm_id *id,
		       struct ibv_srq_init_attr_ex *attr)
{
	RC_CALL(c);
	struct rc_obj o;
	int ret;

	RC_ENTER(c, rdma_create_srq_ex);
	if (!c.skip && !c.internal &&
	    (!rc_require(&c, RC_K_ID, id, RC_USE, &o) ||
	     !rc_arg_readable(&c, "attr", attr, sizeof(*attr), false)))
		return -1;
	ret = RC_FWD(&c, RC_REAL(rdma_create_srq_ex)(id, attr));
	if (ret == 0 && !c.skip)
		rc_track_owned(&c, id, c.internal ? NULL : &o, RC_K_SRQ,
			       id->srq);
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

	RC_ENTER(c, rdma_destroy_srq);
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
	if (id && id->srq && rc_v_live(id->srq, RC_K_SRQ, &q) &&
	    !c.internal && !rc_v_check_async(&c, &q))
		return;
	if (id && id->srq && rc_reg_get((uintptr_t)id->srq, &q) &&
	    q.kind == RC_K_SRQ && !q.destroyed)
		rc_v_gone(&c, &q);
	RC_FWDV(&c, RC_REAL(rdma_destroy_srq)(id));
}

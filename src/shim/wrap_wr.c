/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_wr.c - the data path, opt-in (track_wr=1): each opened context's
 * post_send, post_recv, post_srq_recv and poll_cq operations are replaced
 * by the ones here, which keep, per QP and SRQ, the work requests posted
 * and not yet seen completed (wr_id, the MRs their SGEs use), and per CQ
 * how many completions are owed to it.  The rules checked at the call:
 * wr-sge-outside-mr, post-in-wrong-qp-state, cq-overrun-possible (at the
 * post), mr-dereg-with-wr-in-flight (at ibv_dereg_mr/ibv_rereg_mr),
 * the same for WRs built through a QP's ibv_wr_* operations (replaced in
 * its struct ibv_qp_ex when it is made with send_ops_flags; checked at
 * wr_complete),
 * memory windows bound (ibv_bind_mw, IBV_WR_BIND_MW, ibv_wr_bind_mw) so
 * that an RDMA WR through a window's rkey holds the MR it is bound to,
 * destroy-qp-with-unpolled-completions (at ibv_destroy_qp).  The MR table
 * (live MRs by lkey, with their ranges) also serves track_buffers=1
 * (wrap_buf.c).  With both options off nothing here runs: the operations
 * stay the provider's.
 *
 * One lock guards the tables; it is never held across a provider call
 * or a report.  Findings are composed under it and reported after.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "core/lock.h"
#include "core/options.h"
#include "shim/call.h"
#include "shim/verbs.h"
#include "shim/wr.h"

#define NB 4096			/* buckets of each table */
#define NOINLINE __attribute__((noinline))

struct mr_rec {
	struct mr_rec *next;		/* chain of its bucket */
	struct mr_rec *next_r;		/* chain by rkey (remote access) */
	const struct ibv_mr *mr;
	const struct ibv_context *ctx;
	const void *pd;			/* a parent domain's own PD */
	uint64_t start, end;		/* [iova, iova + length) */
	uintptr_t va, va_end;		/* the memory it covers */
	uint32_t lkey, rkey;
	unsigned access;
	unsigned inflight;		/* WRs not retired that use it */
	unsigned rinflight;		/* of those, by its rkey */
	unsigned mwinflight;		/* of those, through a window */
	uint32_t mw_rkey;		/* the last window's rkey, range */
	uint64_t mw_addr, mw_len;
	bool rhashed;
	bool dead;			/* deregistered, kept for them */
};

struct cq_rec {
	struct cq_rec *next;
	const struct ibv_cq *cq;
	int outstanding;		/* completions owed, not polled */
	unsigned refs;			/* QP records pointing here */
	bool dead, reported;
	bool lost;			/* CQ_ERR seen: what it owed is gone */
};

enum { E_SIG = 1, E_CNT = 2, E_MW = 4 };

struct ent {
	uint64_t wr_id;
	uint8_t flags;
	uint8_t nmr;
	struct mr_rec *mr0;		/* nmr == 1 */
	struct mr_rec **mrs;		/* nmr > 1 */
	struct mr_rec *rmr;		/* the MR of ours its rkey names */
};

/*
 * A memory window of ours seen bound: while bound, its rkey names
 * [addr, addr + length) of the MR (ctx, lkey) that was mr at the bind.
 * A bind counts from its post (in order with the WRs after it, as the
 * HCA executes it); an unbind, a rebind, a LOCAL_INV or SEND_WITH_INV
 * of its rkey, or ibv_dealloc_mw ends it.
 */
struct mw_rec {
	struct mw_rec *next_h;		/* chain by window */
	struct mw_rec *next_r;		/* chain by rkey, while bound */
	const struct ibv_mw *mw;
	const struct ibv_context *ctx;
	const void *pd;			/* its MR's (the window's) PD */
	const void *qp;			/* type 2: the QP it is bound on */
	const struct ibv_mr *mr;
	uint32_t lkey, rkey;
	uint64_t addr, length;
	bool type2, bound;
};

struct ring {
	struct ent *e;
	uint32_t head, tail, mask;	/* free-running head and tail */
};

enum { B_SGE = 1, B_STATE = 2, B_UNPOLLED = 4 };

struct wq_rec {
	struct wq_rec *next_h, *next_n;	/* chains: by handle, by number */
	const void *h;			/* the QP or SRQ */
	const struct ibv_context *ctx;
	uint32_t qpn;
	bool is_srq, sig_all;
	bool dest_done;			/* dest_qpn learnt (RC/UC in RTR+) */
	uint32_t dest_qpn;		/* UINT32_MAX: none */
	uint8_t reported;		/* B_* reported on it */
	const void *pd;
	struct cq_rec *scq, *rcq;
	struct wq_rec *srq;		/* a QP's SRQ */
	unsigned refs;			/* SRQ: QP records pointing here */
	struct ring sq, rq;		/* an SRQ has rq only */
	struct xq *x;			/* its ibv_wr_* ops, when followed */
};

/* A WR built through the ibv_wr_* API, checked at wr_complete. */
struct xwr {
	struct ibv_send_wr wr;
	struct ibv_sge *sgl;		/* its SGEs (kept for reuse) */
	unsigned sgl_cap;
};

/* A QP's ibv_wr_* operations: the provider's, and the batch built since
 * wr_start. */
struct xq {
	struct ibv_qp_ex o;		/* only its operations are used */
	struct xwr *b;
	unsigned n, cap;
};

/* rc_lock, not a pthread mutex: ~40 Ir less on every post and poll. */
static struct rc_lock wr_lock = RC_LOCK_INIT;
/* This thread holds wr_lock: a free() it makes meanwhile (track_buffers)
 * must not look at the tables. */
static RC_TLS int wr_held;
static uintptr_t va_lo = UINTPTR_MAX, va_hi;	/* bounds of MRs' memory */
static struct mr_rec *mr_tab[NB];
static struct mr_rec *mr_rtab[NB];	/* MRs with remote access, by rkey */
static struct cq_rec *cq_tab[NB];
static struct wq_rec *wq_by_h[NB], *wq_by_n[NB];
static struct wq_rec *last_wq;		/* the last poll's QP */
static unsigned live_mrs;		/* rc_wr_mr_covers' fast answer */
static struct mw_rec *mw_tab[NB];	/* windows seen bound, by handle */
static struct mw_rec *mw_rtab[NB];	/* bound windows, by rkey */
static unsigned bound_mws;		/* rkey_use's fast answer */
/* The window this thread's ibv_bind_mw is binding: the provider's BIND
 * WR (posted through the context's post_send, as the loopback does) is
 * the one t_bind_mw recorded. */
static RC_TLS const struct ibv_mw *binding;

static inline void wr_take(void)
{
	rc_lock(&wr_lock);
	wr_held++;
}

static inline void wr_drop(void)
{
	wr_held--;
	rc_unlock(&wr_lock);
}

static inline unsigned hptr(const void *p)
{
	return (unsigned)((((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull)
			  >> 52) & (NB - 1);
}

static inline unsigned hkey(const void *ctx, uint32_t k)
{
	return (hptr(ctx) ^ (unsigned)(k * 0x9e3779b1u >> 20)) & (NB - 1);
}

/* ---- the provider's operations ---------------------------------------- */

#define MAX_CTX 64
struct wops {
	const struct ibv_context *ctx;	/* published last (release) */
	int (*post_send)(struct ibv_qp *, struct ibv_send_wr *,
			 struct ibv_send_wr **);
	int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *,
			 struct ibv_recv_wr **);
	int (*post_srq_recv)(struct ibv_srq *, struct ibv_recv_wr *,
			     struct ibv_recv_wr **);
	int (*poll_cq)(struct ibv_cq *, int, struct ibv_wc *);
	int (*bind_mw)(struct ibv_qp *, struct ibv_mw *,
		       struct ibv_mw_bind *);
};
static struct wops wctx[MAX_CTX];
static struct wops last_ops;		/* contexts of one provider share */
static pthread_mutex_t wctx_lock = PTHREAD_MUTEX_INITIALIZER;

static inline const struct wops *ops_of(const struct ibv_context *ctx)
{
	unsigned i;

	for (i = 0; i < MAX_CTX; i++)
		if (__atomic_load_n(&wctx[i].ctx, __ATOMIC_ACQUIRE) == ctx)
			return &wctx[i];
	return &last_ops;
}

/* ---- records ----------------------------------------------------------- */

static struct mr_rec *mr_find(const struct ibv_context *ctx, uint32_t lkey)
{
	struct mr_rec *m;

	for (m = mr_tab[hkey(ctx, lkey)]; m; m = m->next)
		if (m->lkey == lkey && m->ctx == ctx)
			return m;
	return NULL;
}

static struct mr_rec *mr_find_r(const struct ibv_context *ctx,
				 uint32_t rkey)
{
	struct mr_rec *m;

	for (m = mr_rtab[hkey(ctx, rkey)]; m; m = m->next_r)
		if (m->rkey == rkey && m->ctx == ctx)
			return m;
	return NULL;
}

static void mr_unhash(struct mr_rec *m)
{
	struct mr_rec **pp = &mr_tab[hkey(m->ctx, m->lkey)];

	for (; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	for (pp = &mr_rtab[hkey(m->ctx, m->rkey)]; m->rhashed && *pp;
	     pp = &(*pp)->next_r)
		if (*pp == m) {
			*pp = m->next_r;
			break;
		}
	m->rhashed = false;
	m->dead = true;
	__atomic_sub_fetch(&live_mrs, 1, __ATOMIC_RELAXED);
}

static void mr_put(struct mr_rec *m)
{
	if (--m->inflight == 0 && m->dead)
		free(m);
}

static void mr_rput(struct mr_rec *m)
{
	m->rinflight--;
	mr_put(m);
}

static struct cq_rec *cq_get(const struct ibv_cq *cq)
{
	struct cq_rec *r;
	unsigned b = hptr(cq);

	if (!cq)
		return NULL;
	for (r = cq_tab[b]; r; r = r->next)
		if (r->cq == cq)
			break;
	if (!r && (r = calloc(1, sizeof(*r)))) {
		r->cq = cq;
		r->next = cq_tab[b];
		cq_tab[b] = r;
	}
	if (r)
		r->refs++;
	return r;
}

static void cq_put(struct cq_rec *r)
{
	if (r && --r->refs == 0 && r->dead)
		free(r);
}

static struct wq_rec *wq_find(const void *h)
{
	struct wq_rec *w;

	for (w = wq_by_h[hptr(h)]; w; w = w->next_h)
		if (w->h == h)
			return w;
	return NULL;
}

static struct wq_rec *wq_find_num(const struct ibv_context *ctx,
				  uint32_t qpn)
{
	struct wq_rec *w;

	for (w = wq_by_n[hkey(ctx, qpn)]; w; w = w->next_n)
		if (w->qpn == qpn && w->ctx == ctx && !w->is_srq)
			return w;
	return NULL;
}

static void ent_release(struct ent *e, struct cq_rec *cq)
{
	unsigned i;

	if (e->nmr == 1) {
		mr_put(e->mr0);
	} else if (e->nmr > 1) {
		for (i = 0; i < e->nmr; i++)
			mr_put(e->mrs[i]);
		free(e->mrs);
	}
	if (RC_UNLIKELY(e->rmr != NULL)) {
		if (e->flags & E_MW)
			e->rmr->mwinflight--;
		mr_rput(e->rmr);
	}
	if ((e->flags & E_CNT) && cq)
		cq->outstanding--;
}

/* A new entry at the tail, NULL when memory ran out. */
static struct ent *ring_push(struct ring *r)
{
	struct ent *e;
	uint32_t n, i;

	if (r->tail - r->head > r->mask || !r->e) {
		n = r->e ? (r->mask + 1) * 2 : 64;
		e = malloc(n * sizeof(*e));
		if (!e)
			return NULL;
		for (i = r->head; i != r->tail; i++)
			e[(i - r->head) & (n - 1)] = r->e[i & r->mask];
		free(r->e);
		r->e = e;
		r->tail -= r->head;
		r->head = 0;
		r->mask = n - 1;
	}
	e = &r->e[r->tail++ & r->mask];
	memset(e, 0, sizeof(*e));
	return e;
}

static inline uint32_t ring_len(const struct ring *r)
{
	return r->tail - r->head;
}

static inline struct ent *ring_at(const struct ring *r, uint32_t i)
{
	return &r->e[(r->head + i) & r->mask];
}

static void ring_drop(struct ring *r, struct cq_rec *cq)
{
	while (r->head != r->tail)
		ent_release(&r->e[r->head++ & r->mask], cq);
	free(r->e);
	r->e = NULL;
}

static const void *pd_eff(const void *pd)
{
	struct rc_obj o, p;

	/* A parent domain's MRs and QPs are its protection domain's. */
	if (pd && rc_v_live(pd, RC_K_PD, &o) && o.u.vb.parent.h &&
	    rc_v_live((const void *)o.u.vb.parent.h, RC_K_PD, &p))
		return (const void *)o.u.vb.parent.h;
	return pd;
}

static void wq_insert(struct wq_rec *w)
{
	unsigned b = hptr(w->h);

	w->next_h = wq_by_h[b];
	wq_by_h[b] = w;
	if (!w->is_srq) {
		b = hkey(w->ctx, w->qpn);
		w->next_n = wq_by_n[b];
		wq_by_n[b] = w;
	}
}

static void wq_unhash(struct wq_rec *w)
{
	struct wq_rec **pp;

	for (pp = &wq_by_h[hptr(w->h)]; *pp; pp = &(*pp)->next_h)
		if (*pp == w) {
			*pp = w->next_h;
			break;
		}
	if (!w->is_srq)
		for (pp = &wq_by_n[hkey(w->ctx, w->qpn)]; *pp;
		     pp = &(*pp)->next_n)
			if (*pp == w) {
				*pp = w->next_n;
				break;
			}
	if (last_wq == w)
		last_wq = NULL;
}

static struct wq_rec *srq_get(struct ibv_srq *srq, const void *pd);

static int (*query_qp_fn)(struct ibv_qp *, struct ibv_qp_attr *, int,
			  struct ibv_qp_init_attr *);

/*
 * The record of a QP first seen posting (called and returning with
 * wr_lock held; drops it meanwhile to learn sq_sig_all, which struct
 * ibv_qp does not keep).
 */
static NOINLINE struct wq_rec *qp_learn(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct wq_rec *w, *old;
	const void *pd, *spd = NULL;

	wr_drop();
	if (!query_qp_fn)
		*(void **)&query_qp_fn = dlsym(RTLD_DEFAULT, "ibv_query_qp");
	memset(&ia, 0, sizeof(ia));
	memset(&a, 0, sizeof(a));
	if (!query_qp_fn || query_qp_fn(qp, &a, IBV_QP_STATE |
					IBV_QP_DEST_QPN, &ia)) {
		ia.sq_sig_all = 0;
		a.qp_state = IBV_QPS_RESET;
	}
	pd = pd_eff(qp->pd);
	if (qp->srq)
		spd = pd_eff(qp->srq->pd);
	w = calloc(1, sizeof(*w));
	wr_take();
	if ((old = wq_find(qp)) || !w) {
		free(w);
		return old;
	}
	w->h = qp;
	w->ctx = qp->context;
	w->qpn = qp->qp_num;
	w->sig_all = ia.sq_sig_all;
	w->dest_qpn = UINT32_MAX;
	if (qp->qp_type != IBV_QPT_RC && qp->qp_type != IBV_QPT_UC) {
		w->dest_done = true;
	} else if (a.qp_state >= IBV_QPS_RTR && a.qp_state != IBV_QPS_ERR) {
		w->dest_done = true;
		w->dest_qpn = a.dest_qp_num;
	}
	w->pd = pd;
	w->scq = cq_get(qp->send_cq);
	w->rcq = cq_get(qp->recv_cq);
	if (qp->srq && (w->srq = srq_get(qp->srq, spd)))
		w->srq->refs++;
	wq_insert(w);
	return w;
}

/* The peer QP number of an RC or UC QP first seen posting in RTR or
 * later (called and returning with wr_lock held, dropped meanwhile). */
static NOINLINE struct wq_rec *dest_learn(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct wq_rec *w;
	bool ok;

	wr_drop();
	ok = query_qp_fn && !query_qp_fn(qp, &a, IBV_QP_DEST_QPN, &ia);
	wr_take();
	w = wq_find(qp);
	if (w) {
		w->dest_done = true;
		w->dest_qpn = ok ? a.dest_qp_num : UINT32_MAX;
	}
	return w;
}

/* The record of an SRQ (wr_lock held); pd already resolved. */
static struct wq_rec *srq_get(struct ibv_srq *srq, const void *pd)
{
	struct wq_rec *w = wq_find(srq);

	if (w || !(w = calloc(1, sizeof(*w))))
		return w;
	w->h = srq;
	w->ctx = srq->context;
	w->is_srq = true;
	w->pd = pd;
	wq_insert(w);
	return w;
}

/* ---- findings ---------------------------------------------------------- */

#define MAX_PEND 4
struct pend {
	enum rc_rule rule;
	const void *h[2];
	enum rc_kind kind[2];
	char msg[256];
};

struct pends {
	unsigned n;
	struct pend p[MAX_PEND];
};

static struct pend *pend_add(struct pends *ps, enum rc_rule rule,
			     const void *h0, enum rc_kind k0, const void *h1,
			     enum rc_kind k1)
{
	struct pend *p;

	if (ps->n == MAX_PEND)
		return NULL;
	p = &ps->p[ps->n++];
	p->rule = rule;
	p->h[0] = h0;
	p->kind[0] = k0;
	p->h[1] = h1;
	p->kind[1] = k1;
	return p;
}

static const char *const kind_word[] = {
	[RC_K_QP] = "the QP", [RC_K_SRQ] = "the SRQ", [RC_K_MR] = "the MR",
	[RC_K_CQ] = "the CQ",
};

/* Report what the post found; frame is the wrapper's (the call's
 * record is made only here: the fast path does without it). */
static NOINLINE void report_pends(void *frame, enum rc_fn fn, uintptr_t ra,
				  struct pends *ps)
{
	struct rc_call c __attribute__((cleanup(rc_call_end))) = {
		.fwd = false, .frame = frame };
	struct rc_finding f;
	struct rc_obj o;
	unsigned i, j;
	int e = errno;

	rc_call_begin(&c, fn, ra);
	if (c.skip || c.internal || c.mod == RC_MOD_VERBS)
		goto out;
	for (i = 0; i < ps->n; i++) {
		rc_finding_init(&f, ps->p[i].rule, &c, "%s", ps->p[i].msg);
		for (j = 0; j < 2; j++)
			if (ps->p[i].h[j] &&
			    rc_v_live(ps->p[i].h[j], ps->p[i].kind[j], &o))
				rc_finding_add(&f, &o, "%s",
					       kind_word[ps->p[i].kind[j]]);
		rc_report(&f);
	}
out:
	errno = e;
}

#define RA ((uintptr_t)__builtin_return_address(0))
/* In a wrapper: what its post found, as its call. */
#define REPORT(fn, ps) report_pends(__builtin_frame_address(0), fn, RA, ps)

/* ---- posting ----------------------------------------------------------- */

static const char *const state_name[] = {
	"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN",
};

static const char *st_name(unsigned st)
{
	return st < 8 ? state_name[st] : "?";
}

/* One SGE of a WR being posted on w (wr_lock held): check it, count the
 * entry's use of its MR.  need: access flags the operation needs. */
static void sge_check(struct wq_rec *w, const struct ibv_sge *s, unsigned i,
		      uint64_t wr_id, unsigned need, struct ent *e,
		      struct pends *ps)
{
	struct mr_rec *m, **a;
	struct pend *p = NULL;
	const char *why = NULL;
	char what[96];
	enum rc_kind wk = w->is_srq ? RC_K_SRQ : RC_K_QP;

	if (!s->length)
		return;
	m = mr_find(w->ctx, s->lkey);
	if (!m)
		why = "no live MR has its lkey";
	else if (m->pd != w->pd)
		why = "its MR is on another PD than the queue's";
	else if (s->addr < m->start || s->addr + s->length > m->end ||
		 s->addr + s->length < s->addr)
		why = "it is not inside its MR";
	else if ((m->access & need) != need)
		why = "its MR lacks IBV_ACCESS_LOCAL_WRITE, which the NIC "
		      "needs to write there";
	if (why && !(w->reported & B_SGE)) {
		w->reported |= B_SGE;
		p = pend_add(ps, RC_R_WR_SGE_OUTSIDE_MR, w->h, wk,
			     m ? m->mr : NULL, RC_K_MR);
	}
	if (p) {
		if (m)
			snprintf(what, sizeof(what), " of MR [%#llx, %#llx)",
				 (unsigned long long)m->start,
				 (unsigned long long)m->end);
		else
			what[0] = 0;
		/* Cut short rather than not said. */
		if (snprintf(p->msg, sizeof(p->msg),
			 "SGE %u of WR %#llx, [%#llx, +%u) lkey %#x%s: %s; "
			 "the NIC fails it with IBV_WC_LOC_PROT_ERR", i,
			 (unsigned long long)wr_id,
			 (unsigned long long)s->addr, s->length, s->lkey, what,
			 why) >= (int)sizeof(p->msg))
			p->msg[sizeof(p->msg) - 1] = 0;
	}
	if (!m || (e->nmr == 1 && e->mr0 == m))
		return;
	if (e->nmr == 0) {
		e->mr0 = m;
	} else {
		a = realloc(e->nmr == 1 ? NULL : e->mrs,
			    (e->nmr + 1) * sizeof(*a));
		if (!a)
			return;
		if (e->nmr == 1)
			a[0] = e->mr0;
		a[e->nmr] = m;
		e->mrs = a;
	}
	e->nmr++;
	m->inflight++;
}

static void count_cq(struct wq_rec *w, struct cq_rec *cq, struct ent *e,
		     const struct ibv_cq *h, struct pends *ps)
{
	struct pend *p;

	if (!cq)
		return;
	e->flags |= E_CNT;
	if (++cq->outstanding <= h->cqe || cq->reported)
		return;
	cq->reported = true;
	p = pend_add(ps, RC_R_CQ_OVERRUN_POSSIBLE, h, RC_K_CQ, w->h,
		     RC_K_QP);
	if (p)
		snprintf(p->msg, sizeof(p->msg),
			 "%d completions may now be owed to a CQ of %d "
			 "entries: when they all arrive it overruns, the "
			 "device raises IBV_EVENT_CQ_ERR and its QPs go to "
			 "the error state", cq->outstanding, h->cqe);
}

/* Take back the last k entries of h's send or receive ring. */
static void unpost_n(const void *h, bool send, uint32_t k)
{
	struct wq_rec *w;
	struct ring *r;

	wr_take();
	w = wq_find(h);
	if (w) {
		r = send ? &w->sq : &w->rq;
		while (k-- && ring_len(r))
			ent_release(&r->e[--r->tail & r->mask],
				    send ? w->scq : w->rcq);
	}
	wr_drop();
}

/* Take back the entries of the WRs from bad on (the provider refused
 * them): the last ones of the ring. */
static void unpost(const void *h, bool send, const void *wr, const void *bad,
		   size_t next_off)
{
	const void *x;
	uint32_t k = 0, all = 0;
	bool seen = false;

	for (x = wr; x; x = *(const void *const *)((const char *)x +
						    next_off)) {
		if (x == bad)
			seen = true;
		k += seen;
		all++;
	}
	if (!seen)
		k = all;
	unpost_n(h, send, k);
}

/* ---- memory windows (wr_lock held) ------------------------------------ */

static struct mw_rec *mw_of(const struct ibv_mw *mw)
{
	struct mw_rec *x;

	for (x = mw_tab[hptr(mw)]; x; x = x->next_h)
		if (x->mw == mw)
			return x;
	return NULL;
}

static struct mw_rec *mw_find_r(const struct ibv_context *ctx,
				 uint32_t rkey)
{
	struct mw_rec *x;

	for (x = mw_rtab[hkey(ctx, rkey)]; x; x = x->next_r)
		if (x->rkey == rkey && x->ctx == ctx)
			return x;
	return NULL;
}

static void mw_unbind(struct mw_rec *x)
{
	struct mw_rec **pp = &mw_rtab[hkey(x->ctx, x->rkey)];

	if (!x->bound)
		return;
	for (; *pp; pp = &(*pp)->next_r)
		if (*pp == x) {
			*pp = x->next_r;
			break;
		}
	x->bound = false;
	bound_mws--;
}

/*
 * mw bound by a BIND WR posted on w (or ibv_bind_mw returning 0): rkey
 * names bi's range of its MR from now on, the rkey it had before
 * nothing.  A bind of length 0 unbinds; an MR we do not know binds
 * nothing (the bind fails).
 */
static void mw_bind(struct wq_rec *w, const struct ibv_mw *mw, uint32_t rkey,
		    const struct ibv_mw_bind_info *bi)
{
	struct mw_rec *x = mw_of(mw);
	struct mr_rec *m = NULL;
	unsigned b;

	if (x)
		mw_unbind(x);
	if (bi && bi->mr && bi->length &&
	    (m = mr_find(w->ctx, bi->mr->lkey)) && m->mr != bi->mr)
		m = NULL;
	if (!m)
		return;
	if (!x) {
		if (!(x = calloc(1, sizeof(*x))))
			return;
		x->mw = mw;
		b = hptr(mw);
		x->next_h = mw_tab[b];
		mw_tab[b] = x;
	}
	x->ctx = w->ctx;
	x->pd = m->pd;
	x->type2 = mw->type == IBV_MW_TYPE_2;
	x->qp = x->type2 ? w->h : NULL;
	x->mr = m->mr;
	x->lkey = m->lkey;
	x->rkey = rkey;
	x->addr = bi->addr;
	x->length = bi->length;
	b = hkey(x->ctx, rkey);
	x->next_r = mw_rtab[b];
	mw_rtab[b] = x;
	x->bound = true;
	bound_mws++;
}

/* The windows bound on a QP that goes are bound to nothing. */
static void mw_qp_gone(const void *qp)
{
	struct mw_rec *x;
	unsigned b;

	for (b = 0; b < NB && bound_mws; b++)
		for (x = mw_tab[b]; x; x = x->next_h)
			if (x->qp == qp)
				mw_unbind(x);
}

/* LOCAL_INV (pd: the QP's) or SEND_WITH_INV (the peer's) of rkey: only a
 * type 2 window is invalidated (an MR or a type 1 window fails it). */
static void mw_inval(const struct ibv_context *ctx, uint32_t rkey,
		     const void *pd)
{
	struct mw_rec *x;

	if (bound_mws && (x = mw_find_r(ctx, rkey)) && x->type2 &&
	    x->pd == pd)
		mw_unbind(x);
}

/*
 * The MR of ours that an RDMA or atomic WR posted on w, for the peer t,
 * reaches through the window named by rkey (no MR has it): the window's
 * PD is t's, a type 2 window is bound on t, the MR still the one bound.
 */
static struct mr_rec *mw_target(const struct wq_rec *t, uint32_t rkey)
{
	struct mw_rec *x = mw_find_r(t->ctx, rkey);
	struct mr_rec *m;

	if (!x || x->pd != t->pd || (x->type2 && x->qp != t->h) ||
	    !(m = mr_find(x->ctx, x->lkey)) || m->mr != x->mr)
		return NULL;
	m->mw_rkey = rkey;
	m->mw_addr = x->addr;
	m->mw_len = x->length;
	return m;
}

/*
 * What a WR r other than a SEND does to the tables as it is posted on w:
 * a bind or invalidation changes the windows; an RDMA or atomic WR whose
 * rkey names an MR of ours (the one of that rkey on the PD of w's peer,
 * when the peer is a QP of ours on the same context: an rkey means
 * nothing outside the peer's device and PD), or a window bound to one,
 * holds that MR until the entry is retired.  True: r is the BIND WR of
 * this thread's ibv_bind_mw, whose entry t_bind_mw made.
 */
static NOINLINE bool rkey_use(struct wq_rec *w, const struct ibv_send_wr *r,
			      struct ent *e)
{
	struct wq_rec *t;
	struct mr_rec *m;
	uint32_t rkey;

	switch (r->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		rkey = r->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		rkey = r->wr.atomic.rkey;
		break;
	case IBV_WR_BIND_MW:
		if (!r->bind_mw.mw)
			return false;
		if (RC_UNLIKELY(binding == r->bind_mw.mw))
			return true;
		mw_bind(w, r->bind_mw.mw, r->bind_mw.rkey,
			&r->bind_mw.bind_info);
		return false;
	case IBV_WR_LOCAL_INV:
		mw_inval(w->ctx, r->invalidate_rkey, w->pd);
		return false;
	case IBV_WR_SEND_WITH_INV:
		if (w->dest_done && w->dest_qpn != UINT32_MAX &&
		    (t = wq_find_num(w->ctx, w->dest_qpn)))
			mw_inval(w->ctx, r->invalidate_rkey, t->pd);
		return false;
	default:
		return false;
	}
	if (!w->dest_done || w->dest_qpn == UINT32_MAX ||
	    !(t = wq_find_num(w->ctx, w->dest_qpn)))
		return false;
	m = mr_find_r(w->ctx, rkey);
	if (m && m->pd != t->pd)
		return false;
	/* A window only when no MR has the key. */
	if (!m) {
		if (!bound_mws || !(m = mw_target(t, rkey)))
			return false;
		e->flags |= E_MW;
		m->mwinflight++;
	}
	e->rmr = m;
	m->inflight++;
	m->rinflight++;
	return false;
}

/* The send WRs wr posted on w (wr_lock held): checked and appended;
 * returns how many were appended. */
static inline __attribute__((always_inline)) uint32_t
post_sends(struct wq_rec *w, struct ibv_qp *qp, struct ibv_send_wr *wr,
	   struct pends *ps)
{
	struct ibv_send_wr *r;
	struct ent *e;
	struct pend *p;
	unsigned st = qp->state, i, need;
	uint32_t k = 0;

	for (r = wr; r; r = r->next) {
		if (RC_UNLIKELY(st <= IBV_QPS_RTR) &&
		    !(w->reported & B_STATE)) {
			w->reported |= B_STATE;
			p = pend_add(ps, RC_R_POST_IN_WRONG_QP_STATE, qp,
				     RC_K_QP, NULL, 0);
			if (p)
				snprintf(p->msg, sizeof(p->msg),
					 "send WR %#llx posted on QP %#x in "
					 "%s: a send queue works from RTS "
					 "on; the provider refuses it or it "
					 "never executes",
					 (unsigned long long)r->wr_id,
					 qp->qp_num, st_name(st));
		}
		if (!(e = ring_push(&w->sq)))
			break;
		k++;
		e->wr_id = r->wr_id;
		if (w->sig_all || (r->send_flags & IBV_SEND_SIGNALED))
			e->flags = E_SIG;
		if (!(r->send_flags & IBV_SEND_INLINE)) {
			need = r->opcode == IBV_WR_RDMA_READ ||
			       r->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			       r->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ?
			       IBV_ACCESS_LOCAL_WRITE : 0;
			for (i = 0; i < (unsigned)r->num_sge; i++)
				sge_check(w, &r->sg_list[i], i, r->wr_id,
					  need, e, ps);
		}
		if (RC_UNLIKELY(r->opcode != IBV_WR_SEND) &&
		    RC_UNLIKELY(rkey_use(w, r, e))) {
			/* the bind's own entry, made by t_bind_mw */
			ent_release(&w->sq.e[--w->sq.tail & w->sq.mask], NULL);
			k--;
			continue;
		}
		if (e->flags & E_SIG)
			count_cq(w, w->scq, e, qp->send_cq, ps);
	}
	return k;
}

static int t_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad)
{
	__typeof__(ops_of(0)->post_send) fn = ops_of(qp->context)->post_send;
	struct pends ps;
	struct wq_rec *w;
	int ret;

	ps.n = 0;
	wr_take();
	w = wq_find(qp);
	if (RC_UNLIKELY(!w))
		w = qp_learn(qp);
	if (RC_UNLIKELY(w && !w->dest_done) && qp->state >= IBV_QPS_RTR)
		w = dest_learn(qp);
	if (w)
		post_sends(w, qp, wr, &ps);
	wr_drop();
	if (RC_UNLIKELY(ps.n))
		REPORT(RC_FN_ibv_post_send, &ps);
	ret = fn(qp, wr, bad);
	/* (a refused BIND WR of ibv_bind_mw: t_bind_mw takes it back) */
	if (RC_UNLIKELY(ret) && w && !binding)
		unpost(qp, true, wr, bad ? *bad : NULL,
		       offsetof(struct ibv_send_wr, next));
	return ret;
}

/*
 * ibv_bind_mw (type 1): its BIND WR is recorded before the provider posts
 * it (the provider may post it through the context's post_send: that
 * call records nothing); the window's new rkey is known when the
 * provider returns 0, and names the bound range from then on.
 */
static int t_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		     struct ibv_mw_bind *mb)
{
	__typeof__(ops_of(0)->bind_mw) fn = ops_of(qp->context)->bind_mw;
	struct ibv_send_wr wr;
	struct pends ps;
	struct wq_rec *w;
	uint32_t k = 0;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mb->wr_id;
	wr.send_flags = mb->send_flags;
	/* no window: its rkey is not known yet */
	wr.opcode = IBV_WR_BIND_MW;
	ps.n = 0;
	wr_take();
	w = wq_find(qp);
	if (RC_UNLIKELY(!w))
		w = qp_learn(qp);
	if (w)
		k = post_sends(w, qp, &wr, &ps);
	wr_drop();
	if (RC_UNLIKELY(ps.n))
		REPORT(RC_FN_ibv_bind_mw, &ps);
	binding = mw;
	ret = fn(qp, mw, mb);
	binding = NULL;
	if (ret) {
		if (k)
			unpost_n(qp, true, k);
		return ret;
	}
	wr_take();
	if ((w = wq_find(qp)))
		mw_bind(w, mw, mw->rkey, &mb->bind_info);
	wr_drop();
	return ret;
}

/* Receives on w (a QP's RQ or an SRQ), wr_lock held. */
static void post_recvs(struct wq_rec *w, struct ibv_recv_wr *wr,
		       unsigned st, struct ibv_cq *cq, struct pends *ps)
{
	struct ibv_recv_wr *r;
	struct ent *e;
	struct pend *p;
	unsigned i;

	for (r = wr; r; r = r->next) {
		if (RC_UNLIKELY(st == IBV_QPS_RESET) &&
		    !(w->reported & B_STATE)) {
			w->reported |= B_STATE;
			p = pend_add(ps, RC_R_POST_IN_WRONG_QP_STATE, w->h,
				     RC_K_QP, NULL, 0);
			if (p)
				snprintf(p->msg, sizeof(p->msg),
					 "receive WR %#llx posted on QP %#x "
					 "in RESET: a receive queue works "
					 "from INIT on; the provider refuses "
					 "it", (unsigned long long)r->wr_id,
					 w->qpn);
		}
		if (!(e = ring_push(&w->rq)))
			break;
		e->wr_id = r->wr_id;
		e->flags = E_SIG;
		for (i = 0; i < (unsigned)r->num_sge; i++)
			sge_check(w, &r->sg_list[i], i, r->wr_id,
				  IBV_ACCESS_LOCAL_WRITE, e, ps);
		if (cq)
			count_cq(w, w->rcq, e, cq, ps);
	}
}

static int t_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	__typeof__(ops_of(0)->post_recv) fn = ops_of(qp->context)->post_recv;
	struct pends ps;
	struct wq_rec *w;
	int ret;

	ps.n = 0;
	wr_take();
	w = wq_find(qp);
	if (RC_UNLIKELY(!w))
		w = qp_learn(qp);
	if (w)
		post_recvs(w, wr, qp->state, qp->recv_cq, &ps);
	wr_drop();
	if (RC_UNLIKELY(ps.n))
		REPORT(RC_FN_ibv_post_recv, &ps);
	ret = fn(qp, wr, bad);
	if (RC_UNLIKELY(ret) && w)
		unpost(qp, false, wr, bad ? *bad : NULL,
		       offsetof(struct ibv_recv_wr, next));
	return ret;
}

static int t_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad)
{
	__typeof__(ops_of(0)->post_srq_recv) fn =
		ops_of(srq->context)->post_srq_recv;
	struct pends ps;
	struct wq_rec *w;
	const void *pd;
	int ret;

	ps.n = 0;
	wr_take();
	w = wq_find(srq);
	if (RC_UNLIKELY(!w)) {
		wr_drop();
		pd = pd_eff(srq->pd);
		wr_take();
		w = srq_get(srq, pd);
	}
	/* Which QP's CQ a shared receive completes on is not known: an
	 * SRQ's receives are not counted against a CQ. */
	if (w)
		post_recvs(w, wr, IBV_QPS_RTS, NULL, &ps);
	wr_drop();
	if (RC_UNLIKELY(ps.n))
		REPORT(RC_FN_ibv_post_srq_recv, &ps);
	ret = fn(srq, wr, bad);
	if (RC_UNLIKELY(ret) && w)
		unpost(srq, false, wr, bad ? *bad : NULL,
		       offsetof(struct ibv_recv_wr, next));
	return ret;
}

/* ---- the ibv_wr_* posting API ------------------------------------------
 * A QP made with send_ops_flags has the provider's ibv_wr_* operations in
 * its struct ibv_qp_ex; they are replaced by the ones here, which note
 * each WR built (wr_id, flags, opcode, SGEs) in the QP's batch and call
 * the provider's.  At wr_complete the batch is checked and recorded as a
 * post_send's WRs are; wr_abort drops it.
 */

static struct ibv_qp_ex last_xo;	/* any QP's: one provider's ops */
static struct ibv_qp_ex *(*qp_to_qp_ex_fn)(struct ibv_qp *);

/* The provider's operations of qx (wr_lock held). */
static struct xq *xq_of(struct ibv_qp_ex *qx, const struct ibv_qp_ex **o)
{
	struct wq_rec *w = wq_find(&qx->qp_base);

	*o = w && w->x ? &w->x->o : &last_xo;
	return w ? w->x : NULL;
}

/* A builder: a new WR in the batch (none when memory ran out); rkey is
 * the remote one, or the one to invalidate, or the bind's new one. */
static const struct ibv_qp_ex *x_add(struct ibv_qp_ex *qx,
				     enum ibv_wr_opcode op, uint32_t rkey,
				     uint64_t raddr, struct ibv_mw *mw,
				     const struct ibv_mw_bind_info *bi)
{
	const struct ibv_qp_ex *o;
	struct xwr *b;
	struct xq *x;
	unsigned n;

	wr_take();
	x = xq_of(qx, &o);
	if (x && x->n == x->cap) {
		n = x->cap ? x->cap * 2 : 8;
		b = realloc(x->b, n * sizeof(*b));
		if (b) {
			memset(b + x->cap, 0, (n - x->cap) * sizeof(*b));
			x->b = b;
			x->cap = n;
		}
	}
	if (x && x->n < x->cap) {
		b = &x->b[x->n++];
		memset(&b->wr, 0, sizeof(b->wr));
		b->wr.wr_id = qx->wr_id;
		b->wr.send_flags = qx->wr_flags;
		b->wr.opcode = op;
		if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			b->wr.wr.atomic.rkey = rkey;
			b->wr.wr.atomic.remote_addr = raddr;
		} else if (op == IBV_WR_LOCAL_INV ||
			   op == IBV_WR_SEND_WITH_INV) {
			b->wr.invalidate_rkey = rkey;
		} else if (op == IBV_WR_BIND_MW) {
			b->wr.bind_mw.mw = mw;
			b->wr.bind_mw.rkey = rkey;
			if (bi)
				b->wr.bind_mw.bind_info = *bi;
		} else {
			b->wr.wr.rdma.rkey = rkey;
			b->wr.wr.rdma.remote_addr = raddr;
		}
	}
	wr_drop();
	return o;
}

/* A setter: the last WR built gets these SGEs (inline: none to check). */
static const struct ibv_qp_ex *x_set(struct ibv_qp_ex *qx, size_t n,
				     const struct ibv_sge *sg, bool inl)
{
	const struct ibv_qp_ex *o;
	struct ibv_sge *a;
	struct xwr *b;
	struct xq *x;

	wr_take();
	x = xq_of(qx, &o);
	if (x && x->n) {
		b = &x->b[x->n - 1];
		b->wr.num_sge = 0;
		b->wr.send_flags &= ~IBV_SEND_INLINE;
		if (inl)
			b->wr.send_flags |= IBV_SEND_INLINE;
		if (!inl && n > b->sgl_cap && n <= 1024 &&
		    (a = realloc(b->sgl, n * sizeof(*a)))) {
			b->sgl = a;
			b->sgl_cap = n;
		}
		if (!inl && n <= b->sgl_cap) {
			memcpy(b->sgl, sg, n * sizeof(*sg));
			b->wr.sg_list = b->sgl;
			b->wr.num_sge = n;
		}
	}
	wr_drop();
	return o;
}

/*
 * The builders: field, opcode, rkey, remote address, window and bind,
 * prototype.
 */
#define RC_X_BUILDERS(X) \
	X(wr_send, IBV_WR_SEND, 0, 0, NULL, NULL, \
	  (struct ibv_qp_ex *qx), (qx)) \
	X(wr_send_imm, IBV_WR_SEND_WITH_IMM, 0, 0, NULL, NULL, \
	  (struct ibv_qp_ex *qx, __be32 imm), (qx, imm)) \
	X(wr_send_inv, IBV_WR_SEND_WITH_INV, inv, 0, NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t inv), (qx, inv)) \
	X(wr_send_tso, IBV_WR_TSO, 0, 0, NULL, NULL, \
	  (struct ibv_qp_ex *qx, void *hdr, uint16_t hsz, uint16_t mss), \
	  (qx, hdr, hsz, mss)) \
	X(wr_rdma_write, IBV_WR_RDMA_WRITE, rkey, raddr, NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr), \
	  (qx, rkey, raddr)) \
	X(wr_rdma_write_imm, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, \
	  NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, \
	   __be32 imm), (qx, rkey, raddr, imm)) \
	X(wr_rdma_read, IBV_WR_RDMA_READ, rkey, raddr, NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr), \
	  (qx, rkey, raddr)) \
	X(wr_atomic_cmp_swp, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, \
	  NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, \
	   uint64_t cmp, uint64_t swap), (qx, rkey, raddr, cmp, swap)) \
	X(wr_atomic_fetch_add, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, \
	  NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, \
	   uint64_t add), (qx, rkey, raddr, add)) \
	X(wr_atomic_write, IBV_WR_ATOMIC_WRITE, rkey, raddr, NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t rkey, uint64_t raddr, \
	   const void *d), (qx, rkey, raddr, d)) \
	X(wr_bind_mw, IBV_WR_BIND_MW, rkey, 0, mw, bi, \
	  (struct ibv_qp_ex *qx, struct ibv_mw *mw, uint32_t rkey, \
	   const struct ibv_mw_bind_info *bi), (qx, mw, rkey, bi)) \
	X(wr_local_inv, IBV_WR_LOCAL_INV, inv, 0, NULL, NULL, \
	  (struct ibv_qp_ex *qx, uint32_t inv), (qx, inv))

#define X(f, op, rk, ra, xmw, xbi, P, A) \
static void t_##f P \
{ \
	x_add(qx, op, rk, ra, xmw, xbi)->f A; \
}
RC_X_BUILDERS(X)
#undef X

static void t_wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr,
			 uint32_t length)
{
	struct ibv_sge s = { .addr = addr, .length = length, .lkey = lkey };

	x_set(qx, 1, &s, false)->wr_set_sge(qx, lkey, addr, length);
}

static void t_wr_set_sge_list(struct ibv_qp_ex *qx, size_t n,
			      const struct ibv_sge *sg)
{
	x_set(qx, n, sg, false)->wr_set_sge_list(qx, n, sg);
}

static void t_wr_set_inline_data(struct ibv_qp_ex *qx, void *addr,
				 size_t length)
{
	x_set(qx, 0, NULL, true)->wr_set_inline_data(qx, addr, length);
}

static void t_wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t n,
				      const struct ibv_data_buf *d)
{
	x_set(qx, 0, NULL, true)->wr_set_inline_data_list(qx, n, d);
}

static void t_wr_start(struct ibv_qp_ex *qx)
{
	const struct ibv_qp_ex *o;
	struct xq *x;

	wr_take();
	if ((x = xq_of(qx, &o)))
		x->n = 0;
	wr_drop();
	o->wr_start(qx);
}

static void t_wr_abort(struct ibv_qp_ex *qx)
{
	const struct ibv_qp_ex *o;
	struct xq *x;

	wr_take();
	if ((x = xq_of(qx, &o)))
		x->n = 0;
	wr_drop();
	o->wr_abort(qx);
}

static int t_wr_complete(struct ibv_qp_ex *qx)
{
	struct ibv_qp *qp = &qx->qp_base;
	int (*fn)(struct ibv_qp_ex *);
	const struct ibv_qp_ex *o;
	struct pends ps;
	struct xq *x;
	uint32_t k = 0;
	unsigned i;
	int ret;

	ps.n = 0;
	wr_take();
	x = xq_of(qx, &o);
	fn = o->wr_complete;
	if (x && x->n && !wq_find(qp)->dest_done &&
	    qp->state >= IBV_QPS_RTR) {
		dest_learn(qp);
		x = xq_of(qx, &o);
	}
	if (x && x->n) {
		for (i = 0; i < x->n; i++)
			x->b[i].wr.next = i + 1 < x->n ? &x->b[i + 1].wr :
					  NULL;
		k = post_sends(wq_find(qp), qp, &x->b[0].wr, &ps);
	}
	if (x)
		x->n = 0;
	wr_drop();
	if (RC_UNLIKELY(ps.n))
		REPORT(RC_FN_ibv_wr_complete, &ps);
	ret = fn(qx);
	/* Nothing of a batch that fails is posted (rxe, the loopback). */
	if (RC_UNLIKELY(ret) && k)
		unpost_n(qp, true, k);
	return ret;
}

/* The operations replaced: the builders, the SGE setters, the batch. */
#define RC_X_OPS(X) \
	RC_X_BUILDERS(X) \
	X(wr_set_sge, , , , , ) X(wr_set_sge_list, , , , , ) \
	X(wr_set_inline_data, , , , , ) \
	X(wr_set_inline_data_list, , , , , ) \
	X(wr_start, , , , , ) X(wr_abort, , , , , ) \
	X(wr_complete, , , , , )

void rc_wr_qp_made_(struct ibv_qp *qp, bool send_ops)
{
	struct ibv_qp_ex *qx;
	struct wq_rec *w;
	struct xq *x;

	if (!qp)
		return;
	if (!send_ops) {
		/* Known from the start: it may be the peer RDMA WRs name. */
		wr_take();
		if (!wq_find(qp))
			qp_learn(qp);
		wr_drop();
		return;
	}
	if (!qp_to_qp_ex_fn)
		*(void **)&qp_to_qp_ex_fn = dlsym(RTLD_DEFAULT,
						  "ibv_qp_to_qp_ex");
	if (!qp_to_qp_ex_fn || !(qx = qp_to_qp_ex_fn(qp)) || !qx->wr_start ||
	    !qx->wr_complete || qx->wr_complete == t_wr_complete ||
	    !(x = calloc(1, sizeof(*x)))) {
		rc_wr_qp_made_(qp, false);
		return;
	}
	x->o = *qx;
	wr_take();
	w = wq_find(qp);
	if (!w)
		w = qp_learn(qp);
	if (!w || w->x) {
		wr_drop();
		free(x);
		return;
	}
	w->x = x;
	last_xo = *qx;
	wr_drop();
	/* Before the program has the QP: no one calls them meanwhile. */
#define X(f, ...) \
	if (qx->f) \
		qx->f = t_##f;
	RC_X_OPS(X)
#undef X
}

static void xq_free(struct xq *x)
{
	unsigned i;

	if (!x)
		return;
	for (i = 0; i < x->cap; i++)
		free(x->b[i].sgl);
	free(x->b);
	free(x);
}

/* ---- polling ----------------------------------------------------------- */

/* Entries of r up to the one this completion is for: a send queue's
 * unsignaled WRs complete with the next signaled one. */
static void retire_send(struct wq_rec *w, const struct ibv_wc *wc)
{
	struct ring *r = &w->sq;
	uint32_t i, n = ring_len(r);
	struct ent *e;

	for (i = 0; i < n; i++) {
		e = ring_at(r, i);
		if (e->wr_id == wc->wr_id &&
		    ((e->flags & E_SIG) || wc->status != IBV_WC_SUCCESS))
			break;
	}
	if (i == n)
		return;
	for (n = i + 1; n; n--)
		ent_release(&r->e[r->head++ & r->mask], w->scq);
}

/* An SRQ's receives complete in any order. */
static void retire_srq(struct wq_rec *s, uint64_t wr_id)
{
	struct ring *r = &s->rq;
	uint32_t i, n = ring_len(r);
	struct ent *e;

	for (i = 0; i < n; i++) {
		e = ring_at(r, i);
		if (e->wr_id != wr_id)
			continue;
		ent_release(e, NULL);
		*e = *ring_at(r, 0);
		r->head++;
		return;
	}
}

static void retire(const struct ibv_context *ctx, const struct ibv_wc *wc)
{
	struct wq_rec *w = last_wq;
	struct ring *rq;
	bool recv;

	if (!w || w->qpn != wc->qp_num || w->ctx != ctx) {
		w = wq_find_num(ctx, wc->qp_num);
		if (!w)
			return;
		last_wq = w;
	}
	rq = w->srq ? &w->srq->rq : &w->rq;
	if (wc->status == IBV_WC_SUCCESS)
		recv = wc->opcode & IBV_WC_RECV;
	else
		recv = ring_len(rq) && (w->srq || ring_at(rq, 0)->wr_id ==
					wc->wr_id);
	if (!recv)
		retire_send(w, wc);
	else if (w->srq)
		retire_srq(w->srq, wc->wr_id);
	else if (ring_len(rq))
		ent_release(&rq->e[rq->head++ & rq->mask], w->rcq);
}

static int t_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int ret = ops_of(cq->context)->poll_cq(cq, num, wc), i;

	if (ret <= 0)
		return ret;
	wr_take();
	for (i = 0; i < ret; i++)
		retire(cq->context, &wc[i]);
	wr_drop();
	return ret;
}

/* ---- the control path's hooks ----------------------------------------- */

void rc_wr_wrap_(struct ibv_context *ctx)
{
	struct ibv_context_ops *o = &ctx->ops;
	unsigned i;

	pthread_mutex_lock(&wctx_lock);
	for (i = 0; i < MAX_CTX && wctx[i].ctx; i++)
		;
	/* Unfollowed, but working: the provider's stay. */
	if (i == MAX_CTX || !o->post_send || !o->post_recv || !o->poll_cq ||
	    o->poll_cq == t_poll_cq) {
		pthread_mutex_unlock(&wctx_lock);
		return;
	}
	wctx[i].post_send = o->post_send;
	wctx[i].post_recv = o->post_recv;
	wctx[i].post_srq_recv = o->post_srq_recv;
	wctx[i].poll_cq = o->poll_cq;
	wctx[i].bind_mw = o->bind_mw;
	last_ops = wctx[i];
	__atomic_store_n(&wctx[i].ctx, ctx, __ATOMIC_RELEASE);
	o->post_send = t_post_send;
	o->post_recv = t_post_recv;
	if (o->post_srq_recv)
		o->post_srq_recv = t_post_srq_recv;
	o->poll_cq = t_poll_cq;
	if (o->bind_mw)
		o->bind_mw = t_bind_mw;
	pthread_mutex_unlock(&wctx_lock);
}

void rc_wr_forget_(struct ibv_context *ctx)
{
	unsigned i;

	pthread_mutex_lock(&wctx_lock);
	for (i = 0; i < MAX_CTX; i++)
		if (wctx[i].ctx == ctx)
			__atomic_store_n(&wctx[i].ctx, NULL,
					 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&wctx_lock);
}

void rc_wr_mr_made_(struct ibv_mr *mr, struct ibv_pd *pd, uint64_t iova,
		    unsigned access, bool any_range)
{
	struct mr_rec *m = calloc(1, sizeof(*m)), *old;
	unsigned b;

	if (!m)
		return;
	m->mr = mr;
	m->ctx = mr->context;
	m->pd = pd_eff(pd);
	m->lkey = mr->lkey;
	m->rkey = mr->rkey;
	m->access = access;
	m->start = any_range ? 0 : iova;
	m->end = any_range ? UINT64_MAX : iova + mr->length;
	if (!any_range) {
		m->va = (uintptr_t)mr->addr;
		m->va_end = m->va + mr->length;
	}
	wr_take();
	/* A key reused: the record we had is stale. */
	if ((old = mr_find(m->ctx, m->lkey))) {
		mr_unhash(old);
		if (!old->inflight)
			free(old);
	}
	if (m->va_end) {
		if (m->va < va_lo)
			va_lo = m->va;
		if (m->va_end > va_hi)
			va_hi = m->va_end;
	}
	b = hkey(m->ctx, m->lkey);
	m->next = mr_tab[b];
	mr_tab[b] = m;
	if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_REMOTE_ATOMIC)) {
		if ((old = mr_find_r(m->ctx, m->rkey))) {
			mr_unhash(old);
			if (!old->inflight)
				free(old);
		}
		b = hkey(m->ctx, m->rkey);
		m->next_r = mr_rtab[b];
		mr_rtab[b] = m;
		m->rhashed = true;
	}
	__atomic_add_fetch(&live_mrs, 1, __ATOMIC_RELAXED);
	wr_drop();
}

static struct mr_rec *mr_of(const struct ibv_mr *mr)
{
	struct mr_rec *m = mr_find(mr->context, mr->lkey);

	return m && m->mr == mr ? m : NULL;
}

void rc_wr_mr_check_(struct rc_call *c, struct ibv_mr *mr, const char *why)
{
	struct rc_finding f;
	struct mr_rec *m;
	struct rc_obj o;
	unsigned n = 0, r = 0, w = 0;
	uint64_t wa = 0, wl = 0;
	uint32_t wk = 0;

	if (!mr || c->internal)
		return;
	wr_take();
	if ((m = mr_of(mr))) {
		n = m->inflight - m->rinflight;
		r = m->rinflight;
		if ((w = m->mwinflight)) {
			wk = m->mw_rkey;
			wa = m->mw_addr;
			wl = m->mw_len;
		}
	}
	wr_drop();
	if (n)
		rc_finding_init(&f, RC_R_MR_DEREG_WITH_WR_IN_FLIGHT, c,
				"%s(%p) while %u posted WR%s not yet seen "
				"completed use%s its lkey %#x: the NIC may "
				"still read or write the memory, and those WRs "
				"complete with IBV_WC_LOC_PROT_ERR", why,
				(void *)mr, n, n == 1 ? "" : "s",
				n == 1 ? "s" : "", mr->lkey);
	else if (w)
		rc_finding_init(&f, RC_R_MR_DEREG_WITH_WR_IN_FLIGHT, c,
				"%s(%p) while %u RDMA or atomic WR%s posted "
				"here and not yet seen completed target%s it, "
				"%u through memory window rkey %#x bound to "
				"[%#llx, +%llu) of it: the peer's NIC may "
				"still read or write the memory; while a "
				"window is bound the deregistration fails "
				"with EINVAL, once unbound those WRs complete "
				"with IBV_WC_REM_ACCESS_ERR", why, (void *)mr,
				r, r == 1 ? "" : "s", r == 1 ? "s" : "", w,
				wk, (unsigned long long)wa,
				(unsigned long long)wl);
	else if (r)
		rc_finding_init(&f, RC_R_MR_DEREG_WITH_WR_IN_FLIGHT, c,
				"%s(%p) while %u RDMA or atomic WR%s posted "
				"here and not yet seen completed target%s it "
				"by its rkey %#x: the peer's NIC may still "
				"read or write the memory, and those WRs "
				"complete with IBV_WC_REM_ACCESS_ERR", why,
				(void *)mr, r, r == 1 ? "" : "s",
				r == 1 ? "s" : "", mr->rkey);
	else
		return;
	if (rc_v_live(mr, RC_K_MR, &o))
		rc_finding_add(&f, &o, "the MR");
	rc_report(&f);
}

/* By address alone: ibv_rereg_mr may have changed its keys, and a
 * deregistered MR's memory is the provider's again. */
static struct mr_rec *mr_of_ptr(const struct ibv_mr *mr)
{
	struct mr_rec *m;
	unsigned b;

	for (b = 0; b < NB; b++)
		for (m = mr_tab[b]; m; m = m->next)
			if (m->mr == mr)
				return m;
	return NULL;
}

void rc_wr_mr_gone_(struct ibv_mr *mr)
{
	struct mr_rec *m;

	wr_take();
	if ((m = mr_of_ptr(mr))) {
		mr_unhash(m);
		if (!m->inflight)
			free(m);
	}
	wr_drop();
}

bool rc_wr_mr_covers(uintptr_t p, size_t len, const struct ibv_mr **mr)
{
	struct mr_rec *m;
	bool hit = false;
	unsigned b;

	if (!__atomic_load_n(&live_mrs, __ATOMIC_RELAXED) || wr_held)
		return false;
	wr_take();
	if (p + len <= va_lo || p >= va_hi) {
		wr_drop();
		return false;
	}
	for (b = 0; b < NB && !hit; b++)
		for (m = mr_tab[b]; m; m = m->next)
			if (m->va < p + len && p < m->va_end) {
				*mr = m->mr;
				hit = true;
				break;
			}
	wr_drop();
	return hit;
}

/* The completions of w's WRs never polled (wr_lock held): signaled
 * sends, and receives when the QP is in ERR. */
static void unpolled(const struct wq_rec *w, const struct ibv_qp *qp,
		     uint32_t *sends, uint32_t *recvs)
{
	uint32_t i;

	*sends = *recvs = 0;
	/* a CQ that overran lost them: nothing is left to poll */
	for (i = 0; i < ring_len(&w->sq) && !(w->scq && w->scq->lost); i++)
		*sends += !!(ring_at(&w->sq, i)->flags & E_SIG);
	/* A queue in ERR flushed its receives into the CQ; in other states
	 * a receive may still be waiting for a message. */
	if (qp->state == IBV_QPS_ERR && !(w->rcq && w->rcq->lost))
		*recvs = ring_len(&w->rq);
}

void rc_wr_qp_check_(struct rc_call *c, struct ibv_qp *qp)
{
	struct rc_finding f;
	struct wq_rec *w;
	struct rc_obj o;
	uint32_t sends = 0, recvs = 0;

	if (!qp || c->internal)
		return;
	wr_take();
	w = wq_find(qp);
	if (w && !(w->reported & B_UNPOLLED)) {
		unpolled(w, qp, &sends, &recvs);
		if (sends + recvs)
			w->reported |= B_UNPOLLED;
	}
	wr_drop();
	if (!sends && !recvs)
		return;
	rc_finding_init(&f, RC_R_DESTROY_QP_WITH_UNPOLLED_COMPLETIONS, c,
			"ibv_destroy_qp(%p): QP %#x has %u signaled send%s "
			"and %u flushed receive%s never polled: the provider "
			"drops their completions, and whatever the program "
			"meant to do at them never happens", (void *)qp,
			qp->qp_num, sends, sends == 1 ? "" : "s", recvs,
			recvs == 1 ? "" : "s");
	if (rc_v_live(qp, RC_K_QP, &o))
		rc_finding_add(&f, &o, "the QP");
	rc_report(&f);
}

unsigned rc_wr_unpolled_(const struct ibv_qp *qp)
{
	const struct wq_rec *w;
	uint32_t sends = 0, recvs = 0;

	wr_take();
	w = wq_find(qp);
	if (w && !w->is_srq)
		unpolled(w, qp, &sends, &recvs);
	wr_drop();
	return sends + recvs;
}

void rc_wr_qp_gone_(struct ibv_qp *qp)
{
	struct wq_rec *w;

	wr_take();
	w = wq_find(qp);
	if (w && !w->is_srq) {
		wq_unhash(w);
		if (bound_mws)
			mw_qp_gone(w->h);
		ring_drop(&w->sq, w->scq);
		ring_drop(&w->rq, w->rcq);
		cq_put(w->scq);
		cq_put(w->rcq);
		xq_free(w->x);
		if (w->srq && --w->srq->refs == 0 && !w->srq->h)
			free(w->srq);
		free(w);
	}
	wr_drop();
}

void rc_wr_mw_gone_(struct ibv_mw *mw)
{
	struct mw_rec **pp, *x;

	wr_take();
	for (pp = &mw_tab[hptr(mw)]; (x = *pp); pp = &x->next_h)
		if (x->mw == mw) {
			mw_unbind(x);
			*pp = x->next_h;
			free(x);
			break;
		}
	wr_drop();
}

void rc_wr_srq_gone_(struct ibv_srq *srq)
{
	struct wq_rec *w;

	wr_take();
	w = wq_find(srq);
	if (w && w->is_srq) {
		wq_unhash(w);
		ring_drop(&w->rq, NULL);
		w->h = NULL;
		if (!w->refs)
			free(w);
	}
	wr_drop();
}

/*
 * The device raised IBV_EVENT_CQ_ERR on cq (it overran: cq-overrun-possible
 * said so at the post): the completions it owed are lost, not unpolled.
 */
void rc_wr_cq_lost_(struct ibv_cq *cq)
{
	struct cq_rec *r;

	wr_take();
	for (r = cq_tab[hptr(cq)]; r; r = r->next)
		if (r->cq == cq && !r->dead)
			r->lost = true;
	wr_drop();
}

void rc_wr_cq_gone_(struct ibv_cq *cq)
{
	struct cq_rec **pp, *r;

	wr_take();
	for (pp = &cq_tab[hptr(cq)]; (r = *pp); pp = &r->next)
		if (r->cq == cq) {
			*pp = r->next;
			r->dead = true;
			if (!r->refs)
				free(r);
			break;
		}
	wr_drop();
}

bool rc_v_live_mr(const struct ibv_mr *mr, struct rc_obj *o)
{
	return rc_v_live(mr, RC_K_MR, o);
}

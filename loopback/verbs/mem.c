/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mem.c - protection domains, memory regions (the process-wide lkey/rkey
 * table the progress thread checks remote accesses against, mirrored in
 * the table peers place data through: dma.c) and address handles and
 * memory windows.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <sys/random.h>

#include "lo_verbs.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define LO_MR_HASH 4096

static pthread_rwlock_t lo_mr_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct lo_mr *lo_mr_hash[LO_MR_HASH];
static uint32_t lo_key_salt, lo_key_next;
static pthread_mutex_t lo_pd_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t lo_handle_next;

void lo_mr_rdlock(void)
{
	pthread_rwlock_rdlock(&lo_mr_lock);
}

void lo_mr_unlock(void)
{
	pthread_rwlock_unlock(&lo_mr_lock);
}

static unsigned int lo_mr_bucket(uint32_t key)
{
	return (key ^ (key >> 12) ^ (key >> 24)) % LO_MR_HASH;
}

/* Caller holds lo_mr_lock. */
struct lo_mr *lo_mr_find(uint32_t key)
{
	struct lo_mr *m;

	for (m = lo_mr_hash[lo_mr_bucket(key)]; m; m = m->hnext)
		if (m->mr.lkey == key)
			return m;
	return NULL;
}

void lo_pd_get(struct ibv_pd *pd)
{
	pthread_mutex_lock(&lo_pd_lock);
	lo_pd(pd)->refcnt++;
	pthread_mutex_unlock(&lo_pd_lock);
}

void lo_pd_put(struct ibv_pd *pd)
{
	pthread_mutex_lock(&lo_pd_lock);
	lo_pd(pd)->refcnt--;
	pthread_mutex_unlock(&lo_pd_lock);
}

uint32_t lo_new_handle(void)
{
	return __atomic_add_fetch(&lo_handle_next, 1, __ATOMIC_RELAXED);
}

/*
 * Translate [va, va+len) inside the MR named by key into a pointer, after
 * checking PD and access rights.  Caller holds lo_mr_lock for reading and
 * keeps holding it while touching the memory.
 */
void *lo_key_ptr(struct ibv_pd *pd, uint32_t key, uint64_t va, uint64_t len,
		 int access)
{
	struct lo_mr *m = lo_mr_find(key);
	uint64_t base;

	if (!m || (pd && m->mr.pd != pd))
		return NULL;
	if ((m->access & access) != access)
		return NULL;
	base = m->iova;
	if (va < base || va + len < va || va + len > base + m->mr.length)
		return NULL;
	return (char *)m->mr.addr + (va - base);
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct lo_pd *p;

	if (!lo_is_our_ctx(ctx)) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->pd.context = ctx;
	p->pd.handle = lo_new_handle();
	return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct lo_pd *p;

	if (!pd)
		return EINVAL;
	p = lo_pd(pd);
	pthread_mutex_lock(&lo_pd_lock);
	if (p->refcnt) {
		pthread_mutex_unlock(&lo_pd_lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&lo_pd_lock);
	free(p);
	return 0;
}

static void lo_key_init(void)
{
	if (!lo_key_salt) {
		uint32_t s = 0;

		if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s))
			s = (uint32_t)getpid() * 2654435761U;
		lo_key_salt = s | 1;
		lo_key_next = s >> 8;
	}
}

static struct lo_mw *lo_mw_find(uint32_t key);
static bool lo_mr_has_mw(struct lo_mr *m);

/*
 * A key no MR has, and (the counter only grows) no MW had since the
 * counter last wrapped.  Caller holds lo_mr_lock for writing.
 */
static uint32_t lo_key_alloc(void)
{
	uint32_t key;

	lo_key_init();
	do {
		/* Low byte is a per-process salt, the rest a counter. */
		key = (++lo_key_next << 8) ^ (lo_key_salt & 0xff);
	} while (!key || lo_mr_find(key) || lo_mw_find(key));
	return key;
}

/* Caller holds lo_mr_lock for writing. */
static void lo_mr_insert(struct lo_mr *m)
{
	uint32_t key = lo_key_alloc();

	m->mr.lkey = m->mr.rkey = key;
	m->hnext = lo_mr_hash[lo_mr_bucket(key)];
	lo_mr_hash[lo_mr_bucket(key)] = m;
}

static void lo_mr_remove(struct lo_mr *m)
{
	struct lo_mr **pp = &lo_mr_hash[lo_mr_bucket(m->mr.lkey)];

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == m) {
			*pp = m->hnext;
			break;
		}
}

static bool lo_access_ok(int access)
{
	int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		    IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
		    IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |
		    IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_OPTIONAL_RANGE;

	if (access & ~known)
		return false;
	/* Remote write/atomic need local write, as on real HCAs. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return false;
	return true;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct lo_mr *m;

	if (!pd || !lo_is_our_ctx(pd->context) || !lo_access_ok(access) ||
	    (!addr && length)) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.handle = lo_new_handle();
	m->access = access;
	m->iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
	m->dma_slot = LO_DMA_NONE;
	lo_pd_get(pd);
	pthread_rwlock_wrlock(&lo_mr_lock);
	lo_mr_insert(m);
	lo_dma_mr_pub(m);
	pthread_rwlock_unlock(&lo_mr_lock);
	return &m->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, access);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				 size_t length, uint64_t iova, int fd,
				 int access)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static bool lo_mr_valid(struct ibv_mr *mr)
{
	return mr && lo_mr_find(mr->lkey) == (struct lo_mr *)mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct ibv_pd *pd;

	pthread_rwlock_wrlock(&lo_mr_lock);
	if (!lo_mr_valid(mr)) {
		pthread_rwlock_unlock(&lo_mr_lock);
		return EINVAL;
	}
	/* IBA 10.6.7.2.6, rxe: not while windows are bound to it */
	if (lo_mr_has_mw((struct lo_mr *)mr)) {
		pthread_rwlock_unlock(&lo_mr_lock);
		return EINVAL;
	}
	/* no peer's placement lands in it once we return */
	lo_dma_mr_unpub((struct lo_mr *)mr);
	lo_mr_remove((struct lo_mr *)mr);
	pthread_rwlock_unlock(&lo_mr_lock);
	pd = mr->pd;
	lo_pd_put(pd);
	free(mr);
	return 0;
}

/*
 * Memory windows, bound as rxe binds them (rxe_mw.c): the window's rkey
 * lives in its own hash, looked up only when an inbound rkey names no MR,
 * so the MR path costs what it did.  Direct placement (dma.c) has no
 * entry for a window's rkey: an access through one goes by the stream and
 * is checked here by the target.  A bound window holds its MR (dereg
 * refused, as rxe's num_mw) and, type 2, the QP it was bound on.
 */
static struct lo_mw *lo_mw_hash[LO_MR_HASH];
static unsigned int lo_mw_nbound;	/* windows holding an MR */

/* Caller holds lo_mr_lock. */
static struct lo_mw *lo_mw_find(uint32_t key)
{
	struct lo_mw *w;

	for (w = lo_mw_hash[lo_mr_bucket(key)]; w; w = w->hnext)
		if (w->mw.rkey == key)
			return w;
	return NULL;
}

static void lo_mw_insert(struct lo_mw *w)
{
	unsigned int b = lo_mr_bucket(w->mw.rkey);

	w->hnext = lo_mw_hash[b];
	lo_mw_hash[b] = w;
}

static void lo_mw_remove(struct lo_mw *w)
{
	struct lo_mw **pp = &lo_mw_hash[lo_mr_bucket(w->mw.rkey)];

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == w) {
			*pp = w->hnext;
			break;
		}
}

/* Drop what a bound window holds.  Caller holds lo_mr_lock (write). */
static void lo_mw_unbind(struct lo_mw *w)
{
	if (w->mr)
		lo_mw_nbound--;
	w->mr = NULL;
	w->qp = NULL;
	w->length = 0;
	w->valid = w->mw.type == IBV_MW_TYPE_1;
}

/* The MR has windows bound to it (rxe: num_mw).  Caller holds the lock. */
static bool lo_mr_has_mw(struct lo_mr *m)
{
	unsigned int i;
	struct lo_mw *w;

	if (!lo_mw_nbound)
		return false;
	for (i = 0; i < LO_MR_HASH; i++)
		for (w = lo_mw_hash[i]; w; w = w->hnext)
			if (w->mr == m)
				return true;
	return false;
}

/*
 * [va, va+len) through the window named by key, for an inbound request
 * on qp (rxe_lookup_mw, then the window's range).  Caller holds
 * lo_mr_lock for reading.
 */
static void *lo_mw_ptr(struct ibv_qp *qp, uint32_t key, uint64_t va,
		       uint64_t len, int access)
{
	struct lo_mw *w = lo_mw_find(key);
	uint64_t base;

	if (!w || !w->valid || !w->mr || w->mw.pd != qp->pd ||
	    (w->mw.type == IBV_MW_TYPE_2 && w->qp != qp) ||
	    (w->access & access) != access)
		return NULL;
	base = (w->access & IBV_ACCESS_ZERO_BASED) ? 0 : w->addr;
	if (va < base || va + len < va || va + len > base + w->length)
		return NULL;
	return (char *)w->mr->mr.addr + (w->addr - w->mr->iova) + (va - base);
}

void *lo_rkey_ptr(struct ibv_qp *qp, uint32_t key, uint64_t va, uint64_t len,
		  int access)
{
	void *p = lo_key_ptr(qp->pd, key, va, len, access);

	if (p || lo_mr_find(key))
		return p;
	return lo_mw_ptr(qp, key, va, len, access);
}

struct ibv_mw *lo_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct lo_mw *w;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->mw.context = pd->context;
	w->mw.pd = pd;
	w->mw.type = type;
	w->mw.handle = lo_new_handle();
	/* rxe: a type 1 window starts valid (bindable), type 2 free */
	w->valid = type == IBV_MW_TYPE_1;
	pthread_rwlock_wrlock(&lo_mr_lock);
	w->mw.rkey = lo_key_alloc();
	lo_mw_insert(w);
	pthread_rwlock_unlock(&lo_mr_lock);
	lo_pd_get(pd);
	return &w->mw;
}

int lo_dealloc_mw(struct ibv_mw *mw)
{
	struct lo_mw *w = (struct lo_mw *)mw;

	pthread_rwlock_wrlock(&lo_mr_lock);
	lo_mw_unbind(w);
	lo_mw_remove(w);
	pthread_rwlock_unlock(&lo_mr_lock);
	lo_pd_put(mw->pd);
	free(w);
	return 0;
}

/*
 * Execute a BIND_MW WR on qp now (a local operation: nothing goes to the
 * peer): rxe_check_bind_mw's rules, then the window takes the new rkey's
 * low byte.  0 or the errno rxe's check gives (the WR then completes with
 * IBV_WC_MW_BIND_ERR).
 */
int lo_mw_bind_wr(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		  const struct ibv_mw_bind_info *bi)
{
	struct lo_mw *w = (struct lo_mw *)mw;
	struct lo_mr *m = NULL;
	int acc = bi->mw_access_flags;
	int ret = EINVAL;

	pthread_rwlock_wrlock(&lo_mr_lock);
	if (!mw || lo_mw_find(mw->rkey) != w || (rkey & ~0xffU) !=
	    (mw->rkey & ~0xffU))
		goto out;
	if (bi->length) {
		m = bi->mr ? lo_mr_find(bi->mr->lkey) : NULL;
		if (!m || &m->mr != bi->mr)
			goto out;
	}
	if (mw->type == IBV_MW_TYPE_1 &&
	    (!w->valid || (acc & IBV_ACCESS_ZERO_BASED)))
		goto out;
	if (mw->type == IBV_MW_TYPE_2 &&
	    (w->mr || mw->pd != qp->pd || !m))
		goto out;
	if (m && ((m->access & IBV_ACCESS_ZERO_BASED) ||
		  !(m->access & IBV_ACCESS_MW_BIND) ||
		  m->mr.pd != mw->pd ||
		  ((acc & (IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_ATOMIC)) &&
		   !(m->access & IBV_ACCESS_LOCAL_WRITE))))
		goto out;
	if (m && (acc & IBV_ACCESS_ZERO_BASED) ?
	    bi->length > m->mr.length :
	    m && (bi->addr < m->iova || bi->addr + bi->length < bi->addr ||
		  bi->addr + bi->length > m->iova + m->mr.length))
		goto out;
	lo_mw_unbind(w);
	lo_mw_remove(w);
	mw->rkey = rkey;
	lo_mw_insert(w);
	if (m) {
		w->mr = m;
		w->addr = bi->addr;
		w->length = bi->length;
		w->access = acc;
		if (mw->type == IBV_MW_TYPE_2)
			w->qp = qp;
		w->valid = true;
		lo_mw_nbound++;
	}
	ret = 0;
out:
	pthread_rwlock_unlock(&lo_mr_lock);
	return ret;
}

/*
 * Invalidate the window named by rkey (LOCAL_INV on qp's PD, or a
 * SEND_WITH_INV's target): only a bound type 2 window can be, as on rxe
 * (our MRs are user MRs, never invalidated).  0 or EINVAL.
 */
int lo_mw_invalidate(struct ibv_qp *qp, uint32_t rkey)
{
	struct lo_mw *w;
	int ret = EINVAL;

	pthread_rwlock_wrlock(&lo_mr_lock);
	w = lo_mw_find(rkey);
	if (w && w->mw.type == IBV_MW_TYPE_2 && w->mw.pd == qp->pd &&
	    w->mr) {
		lo_mw_unbind(w);
		ret = 0;
	}
	pthread_rwlock_unlock(&lo_mr_lock);
	return ret;
}

/*
 * Type 1: the library's ibv_bind_mw checked type, PD and range; post the
 * BIND WR (it completes as IBV_WC_BIND_MW) and give the window the next
 * rkey, as rxe's provider does (an error completion leaves the program
 * to undo it).
 */
int lo_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
	       struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr, *bad;
	int ret;

	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_BIND_MW;
	wr.wr_id = mw_bind->wr_id;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = qp->context->ops.post_send(qp, &wr, &bad);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/*
 * The library's checks (verbs.c) are input errors; what the kernel
 * refuses is a command error, as is an MR we do not know.  The keys stay:
 * HCAs modify the region in place (mlx4, mlx5's UMR path), and programs
 * keep using the rkey they already sent their peer.
 */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t length, int access)
{
	struct lo_mr *m = (struct lo_mr *)mr;

	if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (((flags & IBV_REREG_MR_CHANGE_ACCESS) && !lo_access_ok(access)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) &&
	     (!pd || pd->context != mr->context))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	pthread_rwlock_wrlock(&lo_mr_lock);
	if (!lo_mr_valid(mr)) {
		pthread_rwlock_unlock(&lo_mr_lock);
		errno = EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	lo_dma_mr_unpub(m);
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		m->mr.addr = addr;
		m->mr.length = length;
		m->iova = (uintptr_t)addr;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		m->access = access;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		lo_pd_put(m->mr.pd);
		lo_pd_get(pd);
		m->mr.pd = pd;
	}
	lo_dma_mr_pub(m);
	pthread_rwlock_unlock(&lo_mr_lock);
	return 0;
}

/* --- address handles ----------------------------------------------------- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct lo_ah *a;

	/* RoCE: an AH needs a GRH (the kernel's rdma_check_ah_attr) */
	if (!pd || !attr || !lo_is_our_ctx(pd->context) ||
	    (attr->port_num && attr->port_num != 1) || !attr->is_global ||
	    attr->grh.sgid_index >= LO_GID_TBL_LEN) {
		if (attr && !attr->is_global)
			lo_hint_no_grh("ibv_create_ah");
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->ah.context = pd->context;
	a->ah.pd = pd;
	a->ah.handle = lo_new_handle();
	a->attr = *attr;
	lo_pd_get(pd);
	return &a->ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (!ah)
		return EINVAL;
	lo_pd_put(ah->pd);
	free(lo_container_of(ah, struct lo_ah, ah));
	return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port_num,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	uint32_t flow;

	if (!lo_is_our_ctx(ctx) || !wc || !ah_attr || port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (wc->wc_flags & IBV_WC_GRH) {
		if (!grh) {
			errno = EINVAL;
			return -1;
		}
		flow = be32toh(grh->version_tclass_flow);
		ah_attr->is_global = 1;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.sgid_index = 0;
		ah_attr->grh.flow_label = flow & 0xfffff;
		ah_attr->grh.hop_limit = 0xff;
		ah_attr->grh.traffic_class = (flow >> 20) & 0xff;
	}
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
				     struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

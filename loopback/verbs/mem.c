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
	} while (!key || lo_mr_find(key));
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
 * Memory windows: allocated and freed as on rxe (an rkey of the MR key
 * space, a reference on the PD), but never bound: an unbound window grants
 * no access, which is what a remote access with its rkey finds.
 */
struct ibv_mw *lo_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->type = type;
	mw->handle = lo_new_handle();
	pthread_rwlock_wrlock(&lo_mr_lock);
	mw->rkey = lo_key_alloc();
	pthread_rwlock_unlock(&lo_mr_lock);
	lo_pd_get(pd);
	return mw;
}

int lo_dealloc_mw(struct ibv_mw *mw)
{
	lo_pd_put(mw->pd);
	free(mw);
	return 0;
}

int lo_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
	       struct ibv_mw_bind *mw_bind)
{
	return EOPNOTSUPP;
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

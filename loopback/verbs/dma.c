/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * dma.c - direct placement: an RC requester stores an RDMA WRITE's bytes
 * in the target process's memory itself (process_vm_writev), and fetches
 * an RDMA READ's (process_vm_readv), as an HCA's DMA does, so that no
 * thread of the target has to run for the data to land.  Owns this
 * process's table (struct lo_dma_tbl: the RC QPs and MRs it lets peers
 * reach, in a sealed memfd passed with the HELLO of every link it dials),
 * the peers' tables it was passed, and the checks a placement makes in
 * them.  Whatever a table cannot prove fine (an error to report, a QP not
 * in RTS, an MR it has no entry for, a refused process_vm_writev) goes by
 * the stream as before, and the target's own checks there give the
 * errors.
 *
 * Entries are written by their owner only.  A placement counts itself in
 * busy[its block] before it reads an entry and until its copy is done;
 * the owner, after withdrawing an entry (dereg, rereg, QP leaving RTS),
 * waits until every count is 0 before it returns (lo_dma_fence), so no
 * byte lands after ibv_dereg_mr or ibv_modify_qp(ERR) returned, as with
 * an HCA.  RDMACHECK_LOOPBACK_DMA=0 turns it off (everything by the
 * stream, as before).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "lo_verbs.h"

#define LO_DMA_ENV	"RDMACHECK_LOOPBACK_DMA"

_Static_assert(LO_DMA_MRS <= LO_DMA_NONE, "MR slots fit struct lo_mr");

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER	0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY	((unsigned long)-1)
#endif

/* A peer's table, from the HELLO of the link it dialled to us. */
struct lo_dma_peer {
	pthread_rwlock_t lock;		/* readers: placements; writer: swap */
	struct lo_dma_tbl *tbl;		/* NULL: place through the stream */
	pid_t pid;
	struct lo_conn *via;		/* the link that brought it */
	bool refused;			/* EPERM once: do not ask again */
};

static struct lo_dma_peer lo_dma_peers[LO_QPN_BLKS] = {
	[0 ... LO_QPN_BLKS - 1] = { .lock = PTHREAD_RWLOCK_INITIALIZER },
};

static pthread_mutex_t lo_dma_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct lo_dma_tbl *lo_dma_own;	/* ours; NULL: none (yet) */
static bool lo_dma_tried;		/* made (or failed) in this process */
static int lo_dma_fd = -1;
static dev_t lo_dma_dev;
static ino_t lo_dma_ino;
static int lo_dma_state;		/* 0: not read yet, 1: on, -1: off */

static bool lo_dma_enabled(void)
{
	int s = __atomic_load_n(&lo_dma_state, __ATOMIC_RELAXED);

	if (!s) {
		const char *e = getenv(LO_DMA_ENV);

		s = e && !strcmp(e, "0") ? -1 : 1;
		__atomic_store_n(&lo_dma_state, s, __ATOMIC_RELAXED);
	}
	return s > 0;
}

static uint32_t lo_ld(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static uint64_t lo_ld64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void lo_st(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static void lo_st64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* Our table, made at its first need.  NULL: turned off, or it failed. */
static struct lo_dma_tbl *lo_dma_tbl_get(void)
{
	struct lo_dma_tbl *t = __atomic_load_n(&lo_dma_own, __ATOMIC_ACQUIRE);
	struct stat st;
	int fd;

	if (t || !lo_dma_enabled())
		return t;
	lo_atfork_init();
	pthread_mutex_lock(&lo_dma_mtx);
	t = lo_dma_own;
	if (t || lo_dma_tried)
		goto out;
	lo_dma_tried = true;
	fd = memfd_create("rdmacheck-loopback", MFD_CLOEXEC |
			  MFD_ALLOW_SEALING);
	if (fd < 0)
		goto out;
	if (ftruncate(fd, sizeof(*t)) || fstat(fd, &st)) {
		close(fd);
		goto out;
	}
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED) {
		t = NULL;
		close(fd);
		goto out;
	}
	/* a peer that shrank it would make our own stores fault */
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	t->magic = LO_DMA_MAGIC;
	t->version = LO_DMA_VERSION;
	t->size = sizeof(*t);
	/*
	 * Under Yama's ptrace_scope 1 only a declared tracer may write into
	 * us; peers are not our ancestors.  Elsewhere this does nothing.
	 */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	lo_dma_fd = fd;
	lo_dma_dev = st.st_dev;
	lo_dma_ino = st.st_ino;
	__atomic_store_n(&lo_dma_own, t, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&lo_dma_mtx);
	return t;
}

static bool lo_dma_fd_ours(int fd)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) && st.st_dev == lo_dma_dev &&
	       st.st_ino == lo_dma_ino;
}

/*
 * The fd of our table for a HELLO, -1 if none.  The program may have
 * closed it (or reused its number): then peers go by the stream.
 */
int lo_dma_own_fd(void)
{
	int fd;

	if (!lo_dma_tbl_get())
		return -1;
	pthread_mutex_lock(&lo_dma_mtx);
	if (!lo_dma_fd_ours(lo_dma_fd))
		lo_dma_fd = -1;
	fd = lo_dma_fd;
	pthread_mutex_unlock(&lo_dma_mtx);
	return fd;
}

/*
 * The process owning block blk is gone (its end of the link that carried
 * our table closed): nobody counts in its slot any more, and whoever
 * takes the block next starts from 0.
 */
void lo_dma_blk_reset(uint32_t blk)
{
	struct lo_dma_tbl *t = __atomic_load_n(&lo_dma_own, __ATOMIC_ACQUIRE);

	if (t && blk && blk < LO_QPN_BLKS)
		__atomic_store_n(&t->busy[blk], 0, __ATOMIC_SEQ_CST);
}

/*
 * Wait until no placement that may have read an entry we withdrew is
 * still copying.  A peer killed in the middle of one never counts down:
 * its slot is skipped once its process is seen gone.
 */
static void lo_dma_fence(struct lo_dma_tbl *t)
{
	uint32_t i;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 1; i < LO_QPN_BLKS; i++) {
		unsigned int n = 0;

		while (__atomic_load_n(&t->busy[i], __ATOMIC_SEQ_CST)) {
			if (++n % 64 == 0 && !lo_blk_alive(i))
				break;
			sched_yield();
		}
	}
}

/* --- the peers' tables ---------------------------------------------------- */

/*
 * A HELLO came in on link c from block blk (progress thread): map the
 * table it passed (c->tbl_fd), replacing what an earlier owner of the
 * block left; the pid is the kernel's (SO_PEERCRED), not the peer's word.
 */
void lo_dma_peer_hello(uint32_t blk, struct lo_conn *c)
{
	struct lo_dma_tbl *t = NULL, *old;
	struct lo_dma_peer *p;
	struct ucred uc = { 0 };
	socklen_t len = sizeof(uc);
	struct stat st;
	int fd = c->tbl_fd;

	c->tbl_fd = -1;
	if (!blk || blk >= LO_QPN_BLKS) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (fd >= 0 && lo_dma_enabled() && !fstat(fd, &st) &&
	    st.st_size == (off_t)sizeof(*t) &&
	    !getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) &&
	    uc.pid > 0) {
		t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
		if (t == MAP_FAILED) {
			t = NULL;
		} else if (t->magic != LO_DMA_MAGIC ||
			   t->version != LO_DMA_VERSION ||
			   t->size != sizeof(*t)) {
			munmap(t, sizeof(*t));
			t = NULL;
		}
	}
	if (fd >= 0)
		close(fd);
	p = &lo_dma_peers[blk];
	pthread_rwlock_wrlock(&p->lock);
	old = p->tbl;
	p->pid = t ? uc.pid : 0;
	p->via = c;
	__atomic_store_n(&p->refused, false, __ATOMIC_RELAXED);
	__atomic_store_n(&p->tbl, t, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&p->lock);
	if (old)
		munmap(old, sizeof(*old));
}

/* Link c from block blk ended: its process is gone, and its table. */
void lo_dma_peer_gone(uint32_t blk, struct lo_conn *c)
{
	struct lo_dma_tbl *old = NULL;
	struct lo_dma_peer *p;

	if (!blk || blk >= LO_QPN_BLKS)
		return;
	p = &lo_dma_peers[blk];
	pthread_rwlock_wrlock(&p->lock);
	if (p->via == c) {
		old = p->tbl;
		__atomic_store_n(&p->tbl, NULL, __ATOMIC_RELAXED);
		p->via = NULL;
	}
	pthread_rwlock_unlock(&p->lock);
	if (old)
		munmap(old, sizeof(*old));
}

/* --- what we publish ------------------------------------------------------ */

/*
 * Bring qp's entry up to date (QP lock held): valid while an RC QP is in
 * RTR, RTS or SQD (a bandwidth test's target stays in RTR), with rtr set
 * while the first request must still reach it by the stream to raise
 * COMM_EST; withdraw: it is being destroyed.
 */
void lo_dma_qp_pub(struct lo_qp *qp, bool withdraw)
{
	enum ibv_qp_state s = qp->qp.state;
	struct lo_dma_tbl *t;
	struct lo_dma_qp *e;
	bool want, rtr = s == IBV_QPS_RTR && !qp->comm_est;

	/* a QP inherited over fork() is in the parent's table */
	if (qp->gen != lo_fork_gen)
		return;
	want = !withdraw && qp->qp.qp_type == IBV_QPT_RC && qp->qp.pd &&
	       (s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD);
	if (!want && !qp->dma_pub)
		return;
	t = lo_dma_tbl_get();
	if (!t)
		return;
	e = &t->qp[qp->qp.qp_num & (LO_QPN_PER_BLK - 1)];
	if (qp->dma_pub) {
		if (want && lo_ld(&e->dest_qpn) == qp->attr.dest_qp_num &&
		    lo_ld(&e->access) == (uint32_t)qp->attr.qp_access_flags) {
			/* only ever 1 -> 0: nothing placed can go wrong */
			lo_st(&e->rtr, rtr);
			return;
		}
		__atomic_store_n(&e->valid, 0, __ATOMIC_SEQ_CST);
		lo_dma_fence(t);
		qp->dma_pub = false;
	}
	if (!want)
		return;
	lo_st(&e->qpn, qp->qp.qp_num);
	lo_st(&e->dest_qpn, qp->attr.dest_qp_num);
	lo_st(&e->access, qp->attr.qp_access_flags);
	lo_st(&e->pd, qp->qp.pd->handle);
	lo_st(&e->rtr, rtr);
	__atomic_store_n(&e->valid, 1, __ATOMIC_RELEASE);
	qp->dma_pub = true;
}

/*
 * Publish a new MR that allows remote access (lo_mr_lock held for
 * writing).  Its entry is chosen by its key; one that is taken leaves
 * this MR to the stream.
 */
void lo_dma_mr_pub(struct lo_mr *m)
{
	struct lo_dma_tbl *t;
	struct lo_dma_mr *e;
	uint32_t i;

	m->dma_slot = LO_DMA_NONE;
	if (!(m->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		return;
	t = lo_dma_tbl_get();
	if (!t)
		return;
	i = (m->mr.rkey >> 8) & (LO_DMA_MRS - 1);
	e = &t->mr[i];
	if (lo_ld(&e->valid))
		return;
	lo_st(&e->key, m->mr.rkey);
	lo_st(&e->access, m->access);
	lo_st(&e->pd, m->mr.pd->handle);
	lo_st64(&e->iova, m->iova);
	lo_st64(&e->addr, (uintptr_t)m->mr.addr);
	lo_st64(&e->length, m->mr.length);
	__atomic_store_n(&e->valid, 1, __ATOMIC_RELEASE);
	m->dma_slot = (uint16_t)i;
	m->dma_gen = (uint16_t)lo_fork_gen;
}

/* Withdraw m's entry and wait out the placements that may use it. */
void lo_dma_mr_unpub(struct lo_mr *m)
{
	struct lo_dma_tbl *t = __atomic_load_n(&lo_dma_own, __ATOMIC_ACQUIRE);

	if (m->dma_slot != LO_DMA_NONE &&
	    m->dma_gen == (uint16_t)lo_fork_gen && t) {
		__atomic_store_n(&t->mr[m->dma_slot].valid, 0,
				 __ATOMIC_SEQ_CST);
		lo_dma_fence(t);
	}
	m->dma_slot = LO_DMA_NONE;
}

/* --- placing -------------------------------------------------------------- */

/*
 * Would the target accept this request as it stands?  The stream's
 * target-side checks, in the same order: the QP (ours as its peer, and
 * its qp_access_flags), then the MR (key, access, PD, bounds).  *addr:
 * where va is in the target.  Caller counts itself in busy.
 */
static bool lo_dma_check(struct lo_dma_tbl *t, const struct lo_wire_hdr *h,
			 uint64_t len, uint32_t need, uint64_t *addr,
			 bool *rtr)
{
	struct lo_dma_qp *q = &t->qp[h->dst_qpn & (LO_QPN_PER_BLK - 1)];
	struct lo_dma_mr *m;
	uint64_t base, mlen, va = h->raddr;

	if (!__atomic_load_n(&q->valid, __ATOMIC_SEQ_CST) ||
	    lo_ld(&q->qpn) != h->dst_qpn || lo_ld(&q->dest_qpn) != h->src_qpn ||
	    !(lo_ld(&q->access) & need))
		return false;
	*rtr = lo_ld(&q->rtr);
	/* a READ's response would come before COMM_EST */
	if (*rtr && need == IBV_ACCESS_REMOTE_READ)
		return false;
	if (!len)
		return true;
	m = &t->mr[(h->rkey >> 8) & (LO_DMA_MRS - 1)];
	if (!__atomic_load_n(&m->valid, __ATOMIC_SEQ_CST) ||
	    lo_ld(&m->key) != h->rkey || (lo_ld(&m->access) & need) != need ||
	    lo_ld(&m->pd) != lo_ld(&q->pd))
		return false;
	base = lo_ld64(&m->iova);
	mlen = lo_ld64(&m->length);
	if (va < base || va + len < va || va + len > base + mlen)
		return false;
	*addr = lo_ld64(&m->addr) + (va - base);
	return true;
}

/*
 * Before qp's posts (no lock held): until the HELLO of its peer's process
 * (its table) has been read, read what has arrived here ourselves, as
 * ibv_poll_cq does.  The peer dialled us at its RTR, before it could tell
 * the program it is ready, so the bytes are here already; without this a
 * first burst could beat our progress thread to them and go by the stream.
 */
void lo_dma_await_peer(struct lo_qp *qp)
{
	struct lo_dma_peer *p;
	uint32_t blk;
	bool seen = false;
	int i;

	if (!lo_dma_enabled()) {
		__atomic_store_n(&qp->dma_peer_seen, true, __ATOMIC_RELAXED);
		return;
	}
	pthread_mutex_lock(&qp->lock);
	blk = qp->attr.dest_qp_num >> LO_QPN_BLK_BITS;
	pthread_mutex_unlock(&qp->lock);
	if (!blk || blk >= LO_QPN_BLKS)
		return;
	p = &lo_dma_peers[blk];
	/* the accept, then the HELLO on the accepted link */
	for (i = 0; i < 8; i++) {
		pthread_rwlock_rdlock(&p->lock);
		seen = p->via != NULL;
		pthread_rwlock_unlock(&p->lock);
		if (seen)
			break;
		lo_progress_poll_wait();
	}
	if (seen)
		__atomic_store_n(&qp->dma_peer_seen, true, __ATOMIC_RELAXED);
}

/*
 * Place an RC RDMA WRITE (WRITE_WITH_IMM: its data) or READ request h of
 * total bytes straight into (or from) the target's memory.  true: done,
 * every byte once and the last one last (a separate copy), as a program
 * that polls the last byte must see; false: nothing was placed, send it
 * by the stream.  *notify: the target is in RTR and has not raised
 * COMM_EST yet; the caller tells it by the stream (a PLACED frame).
 * Caller holds the QP lock and has checked that no earlier request of
 * this QP still has data on its way (ordering).
 */
bool lo_dma_post(struct lo_qp *qp, struct ibv_send_wr *wr,
		 const struct lo_wire_hdr *h, uint64_t total, bool *notify)
{
	bool rd = h->op == LO_OP_READ_REQ;
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	uint32_t need = rd ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
	uint32_t blk = h->dst_qpn >> LO_QPN_BLK_BITS, me = lo_own_blk();
	struct iovec lv[LO_MAX_SGE + 1], rv[2];
	bool ok = false, locked = false;
	struct lo_dma_peer *p;
	struct lo_dma_tbl *t;
	uint64_t addr = 0;
	int nl = 0, i, err;
	ssize_t n;

	if (!blk || blk >= LO_QPN_BLKS || !me || !lo_dma_enabled() ||
	    wr->num_sge > LO_MAX_SGE)
		return false;
	p = &lo_dma_peers[blk];
	if (!__atomic_load_n(&p->tbl, __ATOMIC_RELAXED))
		return false;
	/*
	 * Our own MRs' lock before the count: a dereg holding it for
	 * writing fences on the counts, our own among them.
	 */
	if (!inl && total) {
		lo_mr_rdlock();
		locked = true;
	}
	for (i = 0; i < wr->num_sge; i++) {
		struct ibv_sge *s = &wr->sg_list[i];
		void *v;

		if (!s->length)
			continue;
		v = inl ? (void *)(uintptr_t)s->addr :
			lo_key_ptr(qp->qp.pd, s->lkey, s->addr, s->length,
				   rd ? IBV_ACCESS_LOCAL_WRITE : 0);
		if (!v)
			goto out;	/* the stream reports it */
		lv[nl].iov_base = v;
		lv[nl].iov_len = s->length;
		nl++;
	}
	pthread_rwlock_rdlock(&p->lock);
	t = p->tbl;
	if (!t || __atomic_load_n(&p->refused, __ATOMIC_RELAXED))
		goto unlock;
	__atomic_add_fetch(&t->busy[me], 1, __ATOMIC_SEQ_CST);
	if (!lo_dma_check(t, h, total, need, &addr, notify))
		goto uncount;
	if (!total) {
		ok = true;
		goto uncount;
	}
	err = errno;
	if (rd) {
		/* the response's last byte lands last here */
		if (lv[nl - 1].iov_len > 1) {
			lv[nl - 1].iov_len--;
			lv[nl].iov_base = (char *)lv[nl - 1].iov_base +
					  lv[nl - 1].iov_len;
			lv[nl].iov_len = 1;
			nl++;
		}
		rv[0].iov_base = (void *)(uintptr_t)addr;
		rv[0].iov_len = total;
		n = process_vm_readv(p->pid, lv, nl, rv, 1, 0);
	} else {
		rv[0].iov_base = (void *)(uintptr_t)addr;
		rv[0].iov_len = total - 1;
		rv[1].iov_base = (void *)(uintptr_t)(addr + total - 1);
		rv[1].iov_len = 1;
		n = total > 1 ?
		    process_vm_writev(p->pid, lv, nl, rv, 2, 0) :
		    process_vm_writev(p->pid, lv, nl, &rv[1], 1, 0);
	}
	if (n == (ssize_t)total)
		ok = true;
	else if (n < 0 && (errno == EPERM || errno == ENOSYS))
		__atomic_store_n(&p->refused, true, __ATOMIC_RELAXED);
	/* anything else (the target died, a fault) the stream handles */
	errno = err;
uncount:
	__atomic_sub_fetch(&t->busy[me], 1, __ATOMIC_SEQ_CST);
unlock:
	pthread_rwlock_unlock(&p->lock);
out:
	if (locked)
		lo_mr_unlock();
	return ok;
}

/* --- fork ----------------------------------------------------------------- */

void lo_dma_fork_prepare(void)
{
	pthread_mutex_lock(&lo_dma_mtx);
}

void lo_dma_fork_parent(void)
{
	pthread_mutex_unlock(&lo_dma_mtx);
}

/*
 * The child is a new process to its peers: none of the parent's tables
 * (its own would let it withdraw the parent's entries), a table of its
 * own when it needs one.
 */
void lo_dma_fork_child(void)
{
	uint32_t i;

	for (i = 0; i < LO_QPN_BLKS; i++) {
		struct lo_dma_peer *p = &lo_dma_peers[i];

		if (p->tbl)
			munmap(p->tbl, sizeof(*p->tbl));
		p->tbl = NULL;
		p->via = NULL;
		p->refused = false;
		pthread_rwlock_init(&p->lock, NULL);
	}
	if (lo_dma_own)
		munmap(lo_dma_own, sizeof(*lo_dma_own));
	lo_dma_own = NULL;
	if (lo_dma_fd_ours(lo_dma_fd))
		close(lo_dma_fd);
	lo_dma_fd = -1;
	lo_dma_tried = false;
	pthread_mutex_init(&lo_dma_mtx, NULL);
}

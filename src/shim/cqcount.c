/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cqcount.c - the completion events fetched and not yet acked, per CQ,
 * counted without a lock: event-driven programs call ibv_get_cq_event and
 * ibv_ack_cq_events once per completion, so these counts are the shim's
 * hottest path (make bench: cq_event_pair).
 *
 * One cell per CQ address, found through an open-addressing table that
 * readers probe without a lock.  Cells are never freed and never leave
 * their address: a destroyed CQ's cell is only marked dead (generation 0)
 * and taken again by the next CQ at that address, which the allocator
 * usually hands out again, so the table grows with the number of
 * addresses CQs ever had, not with churn.  A new address's cell goes in
 * by compare-and-swap on an empty slot, without a lock; only a doubling
 * takes one (a few times in a process's life).  An insert that may have
 * raced a doubling's copy puts its cell in the new table too.  The old
 * tables stay readable (they are never freed: geometric, less than the
 * newest in all).  Past RC_CQ_MAX addresses new CQs are not counted
 * (their events then give no finding).
 *
 * Also which completion channels threads wait on in ibv_get_cq_event: a
 * fixed table of slots taken by compare-and-swap for the call's length,
 * so that ibv_destroy_cq of a channel's last CQ can tell that a waiter
 * will never be woken (cq-destroy-while-waiting).
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/rdmacheck.h"
#include "shim/cqcount.h"

#define RC_CQ_MAX (1u << 20)

struct rc_cqcount {
	uintptr_t cq;		/* the key, set once */
	uint32_t gen;		/* the CQ record's generation; 0: dead */
	int unacked;		/* may go below 0 (protect=0 over-acks) */
	pid_t tid;		/* who fetched the first unacked event */
	uint32_t tgen;
	uintptr_t ra;		/* where, and the stack there */
	rc_stack_id stack;
	uint8_t multi, user;
};

struct table {
	unsigned mask;
	struct rc_cqcount *slot[];
};

static struct table *tab;		/* published with release */
static unsigned ncells;			/* cells made */
static int growing;			/* a doubling is copying */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static inline unsigned hash(uintptr_t cq, unsigned mask)
{
	return (unsigned)(((uint64_t)(cq >> 4) * 0x9E3779B97F4A7C15ull) >>
			  32) & mask;
}

static struct rc_cqcount *find(const struct table *t, uintptr_t cq)
{
	struct rc_cqcount *p;
	unsigned i;

	if (!t)
		return NULL;
	for (i = hash(cq, t->mask);; i = (i + 1) & t->mask) {
		p = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);
		if (!p || LOAD(&p->cq) == cq)
			return p;
	}
}

/* The live cell of cq, or NULL. */
struct rc_cqcount *rc_cq_count(uintptr_t cq)
{
	struct rc_cqcount *p = find(__atomic_load_n(&tab, __ATOMIC_ACQUIRE),
				    cq);

	return p && LOAD(&p->gen) ? p : NULL;
}

static void put(struct table *t, struct rc_cqcount *p)
{
	unsigned i = hash(p->cq, t->mask);

	while (t->slot[i])
		i = (i + 1) & t->mask;
	__atomic_store_n(&t->slot[i], p, __ATOMIC_RELEASE);
}

#define SC __ATOMIC_SEQ_CST

/*
 * Under grow_lock: the newest table, doubled first until it has room for
 * n cells (load at most 1/2); NULL without memory.  growing is set while
 * the copy runs, so that an insert into the old table meanwhile knows to
 * look again (see insert).
 */
static struct table *grow(unsigned n)
{
	struct table *t = __atomic_load_n(&tab, SC), *nt;
	unsigned cap = t ? t->mask + 1 : 0, i;
	struct rc_cqcount *p;

	if (n * 2 <= cap)
		return t;
	cap = cap ? cap : 256;
	while (n * 2 > cap)
		cap *= 2;
	nt = calloc(1, sizeof(*nt) + cap * sizeof(nt->slot[0]));
	if (!nt)
		return NULL;
	nt->mask = cap - 1;
	__atomic_store_n(&growing, 1, SC);
	for (i = 0; t && i <= t->mask; i++) {
		p = __atomic_load_n(&t->slot[i], SC);
		if (p)
			put(nt, p);
	}
	/* The old table stays: a reader may still be in it. */
	__atomic_store_n(&tab, nt, SC);
	__atomic_store_n(&growing, 0, SC);
	return nt;
}

/*
 * Put the new cell p (one of n) in the newest table.  Its slot is taken
 * by compare-and-swap.  A doubling that copied the table before that
 * missed it; then growing was already set, or the table is replaced, by
 * the time we look (all sequentially consistent), and p goes in the new
 * table as well (where a copy that did catch it is found first: nothing
 * is ever removed from a probe chain).
 */
static bool insert(struct rc_cqcount *p, unsigned n)
{
	struct rc_cqcount *cur;
	struct table *t;
	unsigned i;

	for (;;) {
		t = __atomic_load_n(&tab, SC);
		if (!t || n * 2 > t->mask + 1) {
			pthread_mutex_lock(&grow_lock);
			t = grow(n);
			pthread_mutex_unlock(&grow_lock);
			if (!t)
				return false;
		}
		for (i = hash(p->cq, t->mask);; i = (i + 1) & t->mask) {
			cur = NULL;
			if (__atomic_compare_exchange_n(&t->slot[i], &cur, p,
							false, SC, SC) ||
			    cur == p)
				break;
		}
		if (!__atomic_load_n(&growing, SC) &&
		    __atomic_load_n(&tab, SC) == t)
			return true;
		while (__atomic_load_n(&growing, SC))
			sched_yield();
	}
}

/* A cell for the new address cq, or NULL (no memory, or too many). */
static struct rc_cqcount *cell_new(uintptr_t cq)
{
	unsigned n = __atomic_add_fetch(&ncells, 1, __ATOMIC_RELAXED);
	struct rc_cqcount *p = n <= RC_CQ_MAX ? calloc(1, sizeof(*p)) : NULL;

	if (p) {
		p->cq = cq;
		if (insert(p, n))
			return p;
		free(p);
	}
	__atomic_sub_fetch(&ncells, 1, __ATOMIC_RELAXED);
	return NULL;
}

void rc_cq_count_add(uintptr_t cq, uint32_t gen)
{
	struct rc_cqcount *p;

	/*
	 * The address had a CQ before (the usual case): its cell is taken
	 * again, since only one CQ lives at an address; else a new cell.
	 * Only the thread creating the CQ at cq adds cq's cell.
	 */
	p = find(__atomic_load_n(&tab, __ATOMIC_ACQUIRE), cq);
	if (!p)
		p = cell_new(cq);
	if (p) {
		/* A new life at this address: no events yet. */
		STORE(&p->unacked, 0);
		STORE(&p->tid, 0);
		STORE(&p->multi, 0);
		STORE(&p->user, 0);
		__atomic_store_n(&p->gen, gen, __ATOMIC_RELEASE);
	}
}

/*
 * A doubling another thread was in when the process forked never ends in
 * the child: without this its inserts would wait on growing for ever.
 * The table it was copying into is dropped; the old one is whole.
 */
#define WAIT_SLOTS 64
static struct {
	uintptr_t ch;		/* 0: free */
	pid_t tid;
} waiting[WAIT_SLOTS];

/*
 * A waiter cancelled inside the call never reaches rc_cq_wait_end (a
 * cleanup handler would cost the hot path a setjmp): the thread's key
 * destructor frees its slot, which runs before pthread_join returns.
 */
static pthread_key_t wait_key;
static pthread_once_t wait_once = PTHREAD_ONCE_INIT;
static RC_TLS int wait_slot = -1;
static RC_TLS bool wait_keyed;

static void wait_exit(void *arg)
{
	(void)arg;
	if (wait_slot >= 0)
		__atomic_store_n(&waiting[wait_slot].ch, 0, __ATOMIC_RELAXED);
	wait_slot = -1;
}

static void wait_make_key(void)
{
	if (pthread_key_create(&wait_key, wait_exit))
		wait_key = (pthread_key_t)-1;
}

int rc_cq_wait_begin(uintptr_t channel, pid_t tid)
{
	unsigned i, k;

	if (RC_UNLIKELY(!wait_keyed)) {
		pthread_once(&wait_once, wait_make_key);
		if (wait_key == (pthread_key_t)-1 ||
		    pthread_setspecific(wait_key, (void *)1))
			return -1;	/* no destructor: not counted */
		wait_keyed = true;
	}
	for (i = 0; i < WAIT_SLOTS; i++) {
		uintptr_t free_slot = 0;

		k = ((unsigned)tid + i) % WAIT_SLOTS;
		if (!__atomic_load_n(&waiting[k].ch, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&waiting[k].ch, &free_slot,
						channel, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			__atomic_store_n(&waiting[k].tid, tid,
					 __ATOMIC_RELAXED);
			wait_slot = (int)k;
			return (int)k;
		}
	}
	return -1;	/* more waiters than slots: this one not counted */
}

void rc_cq_wait_end(int slot)
{
	if (slot >= 0)
		__atomic_store_n(&waiting[slot].ch, 0, __ATOMIC_RELAXED);
	wait_slot = -1;
}

unsigned rc_cq_waiters(uintptr_t channel)
{
	unsigned i, n = 0;

	for (i = 0; i < WAIT_SLOTS; i++)
		n += __atomic_load_n(&waiting[i].ch, __ATOMIC_RELAXED) ==
		     channel;
	return n;
}

void rc_cq_count_atfork_child(void)
{
	__atomic_store_n(&growing, 0, SC);
	pthread_mutex_init(&grow_lock, NULL);
	/* The child's one thread waits nowhere. */
	memset(waiting, 0, sizeof(waiting));
	wait_slot = -1;
}

void rc_cq_count_del(uintptr_t cq, uint32_t gen)
{
	struct rc_cqcount *p = rc_cq_count(cq);

	if (p)
		__atomic_compare_exchange_n(&p->gen, &gen, 0, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

bool rc_cq_count_get(uintptr_t cq, uint32_t gen, struct rc_cq_state *s)
{
	struct rc_cqcount *p = rc_cq_count(cq);

	if (!p || LOAD(&p->gen) != gen)
		return false;
	s->unacked = LOAD(&p->unacked);
	s->hold.tid = LOAD(&p->tid);
	s->hold.tgen = LOAD(&p->tgen);
	s->hold.ra = LOAD(&p->ra);
	s->hold.stack = LOAD(&p->stack);
	s->hold.multi = LOAD(&p->multi);
	s->hold.user = LOAD(&p->user);
	return true;
}

bool rc_cq_fetched(struct rc_cqcount *p, pid_t tid, uint32_t tgen,
		   uintptr_t ra, bool user)
{
	if (__atomic_fetch_add(&p->unacked, 1, __ATOMIC_RELAXED) == 0) {
		STORE(&p->tid, tid);
		STORE(&p->tgen, tgen);
		STORE(&p->multi, 0);
		STORE(&p->user, user);
		/* One stack per call site: a get loop captures once. */
		if (LOAD(&p->ra) != ra || !LOAD(&p->stack)) {
			STORE(&p->ra, ra);
			return true;
		}
		return false;
	}
	if (LOAD(&p->tid) != tid)
		STORE(&p->multi, 1);
	if (user && !LOAD(&p->user))
		STORE(&p->user, 1);
	return false;
}

void rc_cq_set_stack(struct rc_cqcount *p, uintptr_t ra, rc_stack_id st)
{
	if (LOAD(&p->ra) == ra)
		STORE(&p->stack, st);
}

int rc_cq_acked(struct rc_cqcount *p, int n, bool clamp, int *before)
{
	int cur = LOAD(&p->unacked), take;

	do {
		take = n;
		if (clamp && take > cur)
			take = cur > 0 ? cur : 0;
	} while (take && !__atomic_compare_exchange_n(&p->unacked, &cur,
						      cur - take, true,
						      __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED));
	*before = cur;
	if (cur - take <= 0)
		STORE(&p->tid, 0);
	return take;
}

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
 * addresses CQs ever had, not with churn, and only a new address takes
 * the lock (to add its cell).  It doubles under that lock; the
 * old tables stay readable (they are never freed: geometric, less than
 * the newest in all).  Past RC_CQ_MAX addresses new CQs are not counted
 * (their events then give no finding).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wrap.h"

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
static unsigned ncells;			/* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

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

/* Under lock: room for one more cell (load at most 1/2). */
static bool room(void)
{
	struct table *t = tab, *n;
	unsigned cap = t ? t->mask + 1 : 0, i;

	if ((ncells + 1) * 2 <= cap)
		return true;
	if (ncells >= RC_CQ_MAX)
		return false;
	cap = cap ? cap * 2 : 256;
	n = calloc(1, sizeof(*n) + cap * sizeof(n->slot[0]));
	if (!n)
		return false;
	n->mask = cap - 1;
	for (i = 0; t && i <= t->mask; i++)
		if (t->slot[i])
			put(n, t->slot[i]);
	/* The old table stays: a reader may still be in it. */
	__atomic_store_n(&tab, n, __ATOMIC_RELEASE);
	return true;
}

void rc_cq_count_add(uintptr_t cq, uint32_t gen)
{
	struct rc_cqcount *p;

	/*
	 * The address had a CQ before (the usual case): its cell is taken
	 * again without the lock, since only one CQ lives at an address.
	 * Only a new address takes the lock, to add a cell.
	 */
	p = find(__atomic_load_n(&tab, __ATOMIC_ACQUIRE), cq);
	if (!p) {
		pthread_mutex_lock(&lock);
		p = find(tab, cq);
		if (!p && room()) {
			p = calloc(1, sizeof(*p));
			if (p) {
				p->cq = cq;
				put(tab, p);
				ncells++;
			}
		}
		pthread_mutex_unlock(&lock);
	}
	if (p) {
		/* A new life at this address: no events yet. */
		STORE(&p->unacked, 0);
		STORE(&p->tid, 0);
		STORE(&p->multi, 0);
		STORE(&p->user, 0);
		__atomic_store_n(&p->gen, gen, __ATOMIC_RELEASE);
	}
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

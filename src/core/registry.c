/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * registry.c - the handle -> record tables.  64 shards, each an
 * open-addressing table (linear probing, Fibonacci hashing, backward-shift
 * deletion, load <= 1/2) under its own mutex, so threads working on
 * different objects rarely meet.  A destroyed record stays, marked, under
 * its address; when a new object takes the address, the old record is
 * buried under (address, kind) instead, so a stale pointer of one kind is
 * still known when the allocator handed its memory to another kind.  Only
 * the newest destroyed record per address and kind is kept, and each shard
 * keeps its destroyed records in a FIFO (of keys and generations): when
 * more than its share of the bound are kept, the oldest go, one or two per
 * destroy under the lock the destroy holds anyway.  So a double ack or a
 * use after destroy is told from an unknown pointer however much other
 * threads churn meanwhile, memory stays bounded, and no call ever pays for
 * a pass over the tables.  A shard whose records went away shrinks.
 * The tables hold only keys and pointers: a record never moves, and lives
 * in a per-shard, per-kind slab of mapped chunks, in just the bytes its
 * kind uses (rec_size); a chunk whose records are all gone goes back.
 * Counters other records charge live in cells beside the tables (one per
 * address, never moved or freed, found without a lock; a verbs object's
 * made only with its first child or user): see rc_tally_add.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/lock.h"
#include "core/rdmacheck.h"
#include "core/registry.h"

#define SHARD_BITS 6
#define NSHARDS (1u << SHARD_BITS)
#define MIN_CAP 16u
/* Destroyed records kept at most (a record each): sized by memory. */
#define QUARANTINE_MAX (1u << 17)
/* The least share of the bound a shard keeps, so that a small bound (in
 * tests) is not rounded to nothing by the hash's spread. */
#define QUAR_MIN_SHARE 16u

/* A destroyed record in a shard's FIFO; stale once gen is gone from key. */
struct qent {
	uintptr_t key;
	uint32_t gen;
};

/* A table slot: the key (0: empty) and its record, which never moves. */
struct slot {
	uintptr_t key;
	struct rc_obj *rec;
};

/* An open-addressing table; cap is a power of two, 0 before first use. */
struct tab {
	struct slot *slots;
	unsigned cap;
};

/*
 * The bytes a record of each kind keeps: the header and its part of the
 * union; of a verbs object's part, the uses and async-event fields only
 * for the kinds that have them (wrap_ctxops.c, wrap_qp.c, wrap_cq.c,
 * wrap_async.c), and of a PD, MR or flow only when it has its use.  0:
 * the whole struct (kinds seldom registered).  A record's chunk says how
 * many bytes it has: every copy in or out moves these only, a copy out
 * reads 0 beyond them, and nothing reads or writes a record past them.
 */
#define PART_END(p) (__builtin_offsetof(struct rc_obj, u.p) + \
		     sizeof(((struct rc_obj *)0)->u.p))
#define PART_UPTO(f) __builtin_offsetof(struct rc_obj, u.f)
#define ROUND8(n) (((n) + 7u) & ~7u)
static const uint16_t rec_size[RC_K_COUNT] = {
	[RC_K_CHANNEL] = ROUND8(PART_END(ch)),
	[RC_K_ID] = ROUND8(PART_END(id)),
	[RC_K_EVENT] = ROUND8(PART_END(ev)),
	[RC_K_MCAST] = ROUND8(PART_END(mc)),
	[RC_K_RSOCKET] = ROUND8(PART_END(rs)),
	/* Async events, uses up to three. */
	[RC_K_QP] = ROUND8(PART_END(vb)),
	[RC_K_SRQ] = ROUND8(PART_END(vb)),
	[RC_K_CQ] = ROUND8(PART_END(vb)),
	[RC_K_WQ] = ROUND8(PART_END(vb)),
	/* One use: a parent domain's TD, an MR's DM, a flow's QP. */
	[RC_K_PD] = ROUND8(PART_UPTO(vb.use[1])),
	[RC_K_MR] = ROUND8(PART_UPTO(vb.use[1])),
	[RC_K_FLOW] = ROUND8(PART_UPTO(vb.use[1])),
	/* No uses, no async events. */
	[RC_K_CONTEXT] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_MW] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_COMP_CHANNEL] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_AH] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_XRCD] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_RWQ_IND_TABLE] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_DM] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_COUNTERS] = ROUND8(PART_UPTO(vb.use[0])),
	[RC_K_TD] = ROUND8(PART_UPTO(vb.use[0])),
};

/* The bytes to keep of o: its kind's, less an unused last use. */
static inline size_t rec_need(const struct rc_obj *o)
{
	size_t n = o->kind < RC_K_COUNT ? rec_size[o->kind] : 0;

	if ((o->kind == RC_K_PD || o->kind == RC_K_MR ||
	     o->kind == RC_K_FLOW) && !o->u.vb.use[0].h)
		return ROUND8(PART_UPTO(vb.use[0]));
	return n ? n : sizeof(struct rc_obj);
}

/*
 * A slab chunk: CHUNK bytes aligned to CHUNK (a record finds its chunk by
 * masking), records of one kind after the header, handed out from bump
 * on (only the pages used are ever touched) and then from the free list
 * (threaded through the records' first word).  A shard keeps, per kind,
 * the chunks with room in a list and at most one empty spare (its pages
 * given back); any other chunk that empties is unmapped.
 */
#define CHUNK (64u << 10)
#define CHUNK_HDR 64u
struct chunk {
	struct chunk *next, *prev;	/* in its slab's list, with room */
	void *free;
	unsigned used, bump, cap, size;
};
_Static_assert(sizeof(struct chunk) <= CHUNK_HDR, "chunk header fits");

struct slab {
	struct chunk *room;		/* chunks with a free record */
	struct chunk *spare;		/* an empty chunk, or NULL */
};
#define NSLABS (sizeof(struct rc_obj) / 8 + 1)

/*
 * While a shard is resized, its records are in two tables: new ones go to
 * t, and each insert or destroy moves a few of old's (from slot mcur on)
 * into t, so no call pays for a whole rehash.  A step looks at up to 32
 * slots, or moves up to 8 records: a doubling (old's cap slots, cap / 2
 * records: 3 * cap units) is done within cap / 10 calls, long before the
 * cap / 2 inserts that fill t.
 */
#define MIGRATE_STEP 32u


/* A shard's cells, probed without a lock, grown under the shard's; an
 * outgrown table stays (a reader may be in it): geometric, < the newest. */
struct cells {
	unsigned mask;
	struct rc_tally_cell *slot[];
};

struct shard {
	struct rc_lock lock;
	struct tab t, old;
	unsigned mcur;
	unsigned count;		/* records in t and old */
	struct qent *q;		/* ring of destroyed records, oldest first */
	unsigned qcap, qhead, qlen;
	unsigned qvalid;	/* entries of q still naming their record */
	unsigned long live;	/* live records (read without the lock) */
	uint32_t next_gen;
	struct cells *cells;	/* published with release */
	unsigned ncells;
	struct slab slab[NSLABS];	/* by record size / 8 */
} __attribute__((aligned(64)));

static struct shard shards[NSHARDS];
static bool degraded;

static unsigned quar_share = QUARANTINE_MAX / NSHARDS;

static inline struct slab *slab_of(struct shard *s, size_t size)
{
	return &s->slab[size / 8];
}

static inline struct chunk *chunk_of(const struct rc_obj *o)
{
	return (struct chunk *)((uintptr_t)o & ~(uintptr_t)(CHUNK - 1));
}

/* The bytes the record o (in a slab) has: its chunk's size. */
static inline size_t rec_bytes(const struct rc_obj *o)
{
	return chunk_of(o)->size;
}

/*
 * Copy the record o out: its bytes, and 0 for every field it does not
 * keep.  Callers read a copy as a whole struct rc_obj: rc_v_gone and the
 * users' scan walk all three uses of any verbs object, so a PD's copy
 * must not carry the uses a QP left in the same stack slot.
 */
static inline void copy_out(struct rc_obj *out, const struct rc_obj *o)
{
	size_t n = rec_bytes(o);

	memcpy(out, o, n);
	if (n < sizeof(*out))
		memset((char *)out + n, 0, sizeof(*out) - n);
}

static void room_link(struct slab *b, struct chunk *c)
{
	c->prev = NULL;
	c->next = b->room;
	if (b->room)
		b->room->prev = c;
	b->room = c;
}

static void room_unlink(struct slab *b, struct chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		b->room = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

/* A new chunk for records of size bytes (mapped twice as large, then
 * trimmed to an aligned CHUNK), or NULL. */
static struct chunk *chunk_new(size_t size)
{
	char *p = mmap(NULL, 2 * CHUNK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;
	struct chunk *c;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + CHUNK, (size_t)(p + CHUNK - a));
	c = (struct chunk *)a;		/* zero: a fresh mapping */
	c->size = (unsigned)size;
	c->cap = (CHUNK - CHUNK_HDR) / (unsigned)size;
	return c;
}

/* Room for a record of size bytes in s (under its lock), or NULL. */
static struct rc_obj *rec_alloc(struct shard *s, size_t size)
{
	struct slab *b = slab_of(s, size);
	struct chunk *c = b->room;
	void *p;

	if (!c) {
		c = b->spare ? b->spare : chunk_new(size);
		if (!c)
			return NULL;
		b->spare = NULL;
		room_link(b, c);
	}
	if (c->free) {
		p = c->free;
		c->free = *(void **)p;
	} else {
		p = (char *)c + CHUNK_HDR + (size_t)c->bump++ * c->size;
	}
	if (++c->used == c->cap)
		room_unlink(b, c);
	return p;
}

/* Give the record o (gone from the tables) back to its slab. */
static void rec_free(struct shard *s, struct rc_obj *o)
{
	struct chunk *c = chunk_of(o);
	struct slab *b = slab_of(s, c->size);

	if (c->used == c->cap)
		room_link(b, c);
	*(void **)o = c->free;
	c->free = o;
	if (--c->used)
		return;
	room_unlink(b, c);
	if (b->spare) {
		munmap(c, CHUNK);
		return;
	}
	/* Kept for the next record, its pages given back meanwhile. */
	madvise((char *)c + 4096, CHUNK - 4096, MADV_DONTNEED);
	c->free = NULL;
	c->bump = 0;
	b->spare = c;
}

/* The record for need bytes at slot (NULL: none yet): its own when it
 * has that size, else a new one (NULL without room). */
static struct rc_obj *rec_for(struct shard *s, const struct slot *slot,
			      size_t need)
{
	if (slot && slot->rec && rec_bytes(slot->rec) == need)
		return slot->rec;
	return rec_alloc(s, need);
}

/* slot now holds rec; the record it held, if another, goes back. */
static void slot_hold(struct shard *s, struct slot *slot, struct rc_obj *rec)
{
	if (slot->rec && slot->rec != rec)
		rec_free(s, slot->rec);
	slot->rec = rec;
}

/*
 * A buried record's key: the address with its kind above the 57 bits of
 * user addresses.  Such keys never meet a handle a program passes.
 */
#define GRAVE_SHIFT 57
static inline uintptr_t grave_key(uintptr_t h, unsigned kind)
{
	return h | ((uintptr_t)(kind + 1) << GRAVE_SHIFT);
}

static inline bool is_grave(uintptr_t key)
{
	return key >> GRAVE_SHIFT != 0;
}

/*
 * The hash of a key.  A grave's kind changes its slot, not its shard (the
 * kind's term has its top SHARD_BITS clear): a burial then goes in under
 * the lock of the insert that makes it.  Only graves have a kind's term
 * (it is 0 for the rest): the others, nearly every key hashed, skip it.
 */
static inline uint64_t mix(uintptr_t h)
{
	uint64_t a = h & (((uintptr_t)1 << GRAVE_SHIFT) - 1);

	if (RC_LIKELY(!is_grave(h)))
		return (uint64_t)(h >> 3) * 0x9E3779B97F4A7C15ull;
	return (uint64_t)(a >> 3) * 0x9E3779B97F4A7C15ull ^
	       ((uint64_t)(h >> GRAVE_SHIFT) * 0xC2B2AE3D27D4EB4Full >>
		SHARD_BITS);
}

static inline struct shard *shard_of(uint64_t m)
{
	return &shards[m >> (64 - SHARD_BITS)];
}

static inline unsigned slot_of(uint64_t m, unsigned cap)
{
	return (unsigned)(m << SHARD_BITS >> 32) & (cap - 1);
}

/*
 * How many counters each kind keeps in a cell: they follow the cell
 * pointer at the start of its part of the union (registry.h).  The verbs
 * kinds' cells are lazy: made with the first count up, not at insert,
 * since most PDs, MRs and AHs never have a child or user, and a cell is
 * never freed.
 */
#define TALLY_LAZY 0x80
#define VB_TALLY(k) [RC_K_##k] = 2 | TALLY_LAZY
static const uint8_t tally_info[RC_K_COUNT] = {
	[RC_K_CHANNEL] = 3, [RC_K_ID] = 3, [RC_K_MCAST] = 1,
	VB_TALLY(QP), VB_TALLY(SRQ), VB_TALLY(CONTEXT), VB_TALLY(PD),
	VB_TALLY(MR), VB_TALLY(MW), VB_TALLY(COMP_CHANNEL), VB_TALLY(CQ),
	VB_TALLY(AH), VB_TALLY(XRCD), VB_TALLY(WQ), VB_TALLY(RWQ_IND_TABLE),
	VB_TALLY(FLOW), VB_TALLY(DM), VB_TALLY(COUNTERS), VB_TALLY(TD),
};
#define TALLY_AT(o) ((int *)((char *)&(o)->u + sizeof(void *)))
_Static_assert(__builtin_offsetof(struct rc_obj, u.ch.nids) ==
	       __builtin_offsetof(struct rc_obj, u) + sizeof(void *) &&
	       __builtin_offsetof(struct rc_obj, u.id.unacked) ==
	       __builtin_offsetof(struct rc_obj, u) + sizeof(void *) &&
	       __builtin_offsetof(struct rc_obj, u.mc.unacked) ==
	       __builtin_offsetof(struct rc_obj, u) + sizeof(void *) &&
	       __builtin_offsetof(struct rc_obj, u.vb.nchild) ==
	       __builtin_offsetof(struct rc_obj, u) + sizeof(void *) &&
	       __builtin_offsetof(struct rc_obj, u.ch.waiters) ==
	       __builtin_offsetof(struct rc_obj, u.ch.nids) + 2 * sizeof(int) &&
	       __builtin_offsetof(struct rc_obj, u.id.joins) ==
	       __builtin_offsetof(struct rc_obj, u.id.unacked) +
	       2 * sizeof(int) &&
	       __builtin_offsetof(struct rc_obj, u.vb.nusers) ==
	       __builtin_offsetof(struct rc_obj, u.vb.nchild) + sizeof(int) &&
	       __builtin_offsetof(struct rc_obj, u.vb.cell) ==
	       __builtin_offsetof(struct rc_obj, u.ch.cell),
	       "counters follow the cell, in order");

/* The counters of kind in a cell (0: none). */
static inline unsigned tally_count(unsigned kind)
{
	return kind < RC_K_COUNT ? tally_info[kind] & ~TALLY_LAZY : 0;
}

static inline bool tallied(unsigned kind)
{
	return kind < RC_K_COUNT && tally_info[kind];
}

/* A kind whose cell waits for its first count up. */
static inline bool tally_lazy(unsigned kind)
{
	return kind < RC_K_COUNT && (tally_info[kind] & TALLY_LAZY);
}

/* Where a record of a counted kind keeps its cell (set when stamped). */
static inline struct rc_tally_cell **cell_of(struct rc_obj *o)
{
	return &o->u.ch.cell;	/* the same place in id, mc and vb */
}

static inline int *tally_field(struct rc_obj *o, unsigned t)
{
	return TALLY_AT(o) + t;
}

/* The counter of this kind at offset, or -1. */
static inline int tally_at(unsigned kind, unsigned offset)
{
	unsigned base = __builtin_offsetof(struct rc_obj, u) + sizeof(void *);

	if (offset < base || (offset - base) % sizeof(int) ||
	    (offset - base) / sizeof(int) >= tally_count(kind))
		return -1;
	return (int)((offset - base) / sizeof(int));
}

/* The cell of h in s, or NULL; needs no lock. */
static struct rc_tally_cell *cell_find(struct shard *s, uintptr_t h, uint64_t m)
{
	struct cells *t = __atomic_load_n(&s->cells, __ATOMIC_ACQUIRE);
	struct rc_tally_cell *c;
	unsigned i;

	if (!t)
		return NULL;
	for (i = slot_of(m, t->mask + 1);; i = (i + 1) & t->mask) {
		c = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);
		if (!c || c->h == h)
			return c;
	}
}

static void cell_put(struct cells *t, struct rc_tally_cell *c)
{
	unsigned i = slot_of(mix(c->h), t->mask + 1);

	while (__atomic_load_n(&t->slot[i], __ATOMIC_RELAXED))
		i = (i + 1) & t->mask;
	__atomic_store_n(&t->slot[i], c, __ATOMIC_RELEASE);
}

/* The cell of h in s, made if need be (NULL without memory); under s's
 * lock. */
static struct rc_tally_cell *cell_make(struct shard *s, uintptr_t h, uint64_t m)
{
	struct cells *t = s->cells, *n;
	struct rc_tally_cell *c = cell_find(s, h, m);
	unsigned cap = t ? t->mask + 1 : 0, i;

	if (c)
		return c;
	if ((s->ncells + 1) * 2 > cap) {
		cap = cap ? cap * 2 : MIN_CAP;
		n = calloc(1, sizeof(*n) + cap * sizeof(n->slot[0]));
		if (!n)
			return NULL;
		n->mask = cap - 1;
		for (i = 0; t && i <= t->mask; i++)
			if (t->slot[i])
				cell_put(n, t->slot[i]);
		__atomic_store_n(&s->cells, n, __ATOMIC_RELEASE);
		t = n;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->h = h;
	cell_put(t, c);
	s->ncells++;
	return c;
}

/* Add delta to counter t of c if it still counts for gen. */
static bool cell_add(struct rc_tally_cell *c, uint32_t gen, unsigned t, int delta,
		     int *now)
{
	uint64_t v = __atomic_load_n(&c->w[t], __ATOMIC_RELAXED), n;

	do {
		if (v >> 32 != gen || !gen)
			return false;
		n = (v & ~0xffffffffull) | (uint32_t)((uint32_t)v + delta);
	} while (!__atomic_compare_exchange_n(&c->w[t], &v, n, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	if (now)
		*now = (int)(uint32_t)n;
	return true;
}

/*
 * The live record o (in s, under its lock, without a cell) counts in its
 * cell from now on, from the values it has: just put in s, or (a verbs
 * object) when its first child or user is counted.  The cell gets the
 * values before o names it, so that nothing under the lock charges the
 * record's own fields after; without a cell (no memory) it counts in
 * itself.
 */
static void tally_stamp(struct shard *s, struct rc_obj *o, uint64_t m)
{
	uint64_t g = (uint64_t)o->gen << 32;
	unsigned t, n = tally_count(o->kind);
	struct rc_tally_cell *c = cell_make(s, o->handle, m);

	if (!c)
		return;
	for (t = 0; t < RC_TALLIES; t++)
		__atomic_store_n(&c->w[t], g | (t < n ?
					(uint32_t)*tally_field(o, t) : 0),
				 __ATOMIC_RELAXED);
	__atomic_store_n(&c->aux, g | (o->kind == RC_K_ID ? o->u.id.inside : 0),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&c->stamp, g | (uint64_t)o->flags << 8 | o->kind,
			 __ATOMIC_RELEASE);
	*cell_of(o) = c;
}

/* The live record o stops counting: it keeps the last values. */
static void tally_kill(struct rc_obj *o)
{
	unsigned t, n = tally_count(o->kind);
	uint32_t gen = o->gen;
	struct rc_tally_cell *c;
	int *f = TALLY_AT(o);
	uint64_t v;

	/* n and gen in locals: the stores to f could alias them. */
	if (!n || !(c = *cell_of(o)) ||
	    __atomic_load_n(&c->stamp, __ATOMIC_RELAXED) >> 32 != gen)
		return;
	__atomic_store_n(&c->stamp, 0, __ATOMIC_RELEASE);
	for (t = 0; t < RC_TALLIES; t++) {
		v = __atomic_exchange_n(&c->w[t], 0, __ATOMIC_ACQ_REL);
		if (t < n && v >> 32 == gen)
			f[t] = (int)(uint32_t)v;
	}
	v = __atomic_exchange_n(&c->aux, 0, __ATOMIC_ACQ_REL);
	if (o->kind == RC_K_ID && v >> 32 == gen)
		o->u.id.inside = (uint32_t)v;
}

/*
 * The live record o (locked) had flags was before its fn ran: its cell's
 * stamp keeps them current for the lock-free copies of its header.
 */
static inline void flags_kept(struct rc_obj *o, uint16_t was)
{
	struct rc_tally_cell *c;
	uint64_t st;

	if (RC_LIKELY(o->flags == was) || o->destroyed ||
	    !tallied(o->kind) || !(c = *cell_of(o)))
		return;
	st = __atomic_load_n(&c->stamp, __ATOMIC_RELAXED);
	if (st >> 32 == o->gen)
		__atomic_store_n(&c->stamp, (st & ~0xffff00ull) |
				 (uint64_t)o->flags << 8, __ATOMIC_RELEASE);
}

/* Counter t of c into *f if it counts for gen. */
static inline void tally_fill_one(const struct rc_tally_cell *c, unsigned t,
				  uint32_t gen, int *f)
{
	uint64_t v = __atomic_load_n(&c->w[t], __ATOMIC_RELAXED);

	if (v >> 32 == gen)
		*f = (int)(uint32_t)v;
}

/*
 * Give o (a copy of, or a live record) its counters' values.  Every
 * copy out of a counted record comes here: written out for the one to
 * RC_TALLIES counters, not looped.
 */
_Static_assert(RC_TALLIES == 3, "tally_fill fills three at most");
static inline void tally_fill(struct rc_obj *o)
{
	unsigned n = tally_count(o->kind);
	uint32_t gen = o->gen;
	struct rc_tally_cell *c;
	int *f = TALLY_AT(o);

	/* gen in a local: the stores to f could alias it. */
	if (!n || o->destroyed || !(c = o->u.ch.cell))
		return;
	tally_fill_one(c, 0, gen, &f[0]);
	if (n > 1)
		tally_fill_one(c, 1, gen, &f[1]);
	if (n > 2)
		tally_fill_one(c, 2, gen, &f[2]);
	if (o->kind == RC_K_ID) {
		uint64_t v = __atomic_load_n(&c->aux, __ATOMIC_RELAXED);

		if (v >> 32 == gen)
			o->u.id.inside = (uint32_t)v;
	}
}

/*
 * Add delta to the int at offset of the live record o (in s, locked); a
 * count up of a verbs object's counter makes its cell if need be.
 */
static inline void add_at(struct shard *s, struct rc_obj *o, unsigned offset,
			  int delta, uint64_t m)
{
	int t = tally_at(o->kind, offset);
	struct rc_tally_cell *c;

	if (t >= 0 && !*cell_of(o) && delta > 0 && tally_lazy(o->kind))
		tally_stamp(s, o, m);
	if (t >= 0 && (c = *cell_of(o)) &&
	    cell_add(c, o->gen, (unsigned)t, delta, NULL))
		return;
	if (offset + sizeof(int) <= rec_bytes(o))	/* its own bytes */
		*(int *)((char *)o + offset) += delta;
}

void rc_reg_init(void)
{
	unsigned i;

	for (i = 0; i < NSHARDS; i++)
		rc_lock_reset(&shards[i].lock);
}

void rc_reg_atfork_child(void)
{
	rc_reg_init();
}

void rc_reg_set_quarantine(unsigned max)
{
	max = max ? max : QUARANTINE_MAX;
	quar_share = max / NSHARDS > QUAR_MIN_SHARE ? max / NSHARDS :
		     QUAR_MIN_SHARE;
}

bool rc_reg_degraded(void)
{
	return __atomic_load_n(&degraded, __ATOMIC_RELAXED);
}

unsigned long rc_reg_slots(void)
{
	unsigned long n = 0;
	unsigned i;

	for (i = 0; i < NSHARDS; i++) {
		rc_lock(&shards[i].lock);
		n += shards[i].t.cap + shards[i].old.cap;
		rc_unlock(&shards[i].lock);
	}
	return n;
}

unsigned long rc_reg_cells(void)
{
	unsigned long n = 0;
	unsigned i;

	for (i = 0; i < NSHARDS; i++) {
		rc_lock(&shards[i].lock);
		n += shards[i].ncells;
		rc_unlock(&shards[i].lock);
	}
	return n;
}

unsigned long rc_reg_live(void)
{
	unsigned long n = 0;
	unsigned i;

	for (i = 0; i < NSHARDS; i++)
		n += __atomic_load_n(&shards[i].live, __ATOMIC_RELAXED);
	return n;
}

/* Index of h in t, or of the empty slot where it would go. */
static unsigned probe(const struct tab *t, uintptr_t h, uint64_t m)
{
	unsigned i = slot_of(m, t->cap);

	while (t->slots[i].key && t->slots[i].key != h)
		i = (i + 1) & (t->cap - 1);
	return i;
}

/* Where the record at key is in s: false when it is in neither table. */
static bool locate(struct shard *s, uintptr_t key, uint64_t m,
		   struct tab **tp, unsigned *ip)
{
	struct tab *t = &s->t;
	unsigned i;

	for (;;) {
		if (t->cap) {
			i = probe(t, key, m);
			if (t->slots[i].key) {
				*tp = t;
				*ip = i;
				return true;
			}
		}
		if (t == &s->old || !s->old.cap)
			return false;
		t = &s->old;
	}
}

/* The record at key in s, or NULL. */
static struct rc_obj *find(struct shard *s, uintptr_t key, uint64_t m)
{
	struct tab *t;
	unsigned i;

	return locate(s, key, m, &t, &i) ? t->slots[i].rec : NULL;
}

/*
 * The slot of key in s, or NULL and in *empty the slot of t where it
 * would go: the probe of t serves both (t has room: after reserve).
 */
static struct slot *find_or_empty(struct shard *s, uintptr_t key,
				  uint64_t m, struct slot **empty)
{
	unsigned i = probe(&s->t, key, m);

	if (s->t.slots[i].key)
		return &s->t.slots[i];
	*empty = &s->t.slots[i];
	if (s->old.cap) {
		i = probe(&s->old, key, m);
		if (s->old.slots[i].key)
			return &s->old.slots[i];
	}
	return NULL;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void remove_at(struct tab *t, unsigned i)
{
	unsigned j = i, k;

	for (;;) {
		j = (j + 1) & (t->cap - 1);
		if (!t->slots[j].key)
			break;
		k = slot_of(mix(t->slots[j].key), t->cap);
		/* Move j back to i unless its home k lies in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i].key = 0;	/* empty: see slots_alloc */
}

/*
 * A table's slots.  A big one is mapped, not malloc()ed: freed, it goes
 * back to the system at once, where the heap would keep it (glibc then
 * serves blocks of that size from the heap instead of mappings).
 */
#define MAP_MIN (128u << 10)

static struct slot *slots_alloc(unsigned cap)
{
	size_t len = (size_t)cap * sizeof(struct slot);
	struct slot *slots;
	unsigned i;
	void *p;

	if (len < MAP_MIN) {
		/* Only a slot's key says it is empty (nothing else of an
		 * empty slot is read): zero that. */
		slots = malloc(len);
		for (i = 0; slots && i < cap; i++)
			slots[i].key = 0;
		return slots;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void slots_free(struct slot *slots, unsigned cap)
{
	size_t len = (size_t)cap * sizeof(struct slot);

	if (len < MAP_MIN)
		free(slots);
	else if (slots)
		munmap(slots, len);
}

/*
 * Move a step of old into t: budget counts slots looked at, a record moved
 * counts four.  Removing old[mcur] by backward shift may pull a later
 * record into mcur, so mcur moves on only once its slot is empty; no
 * record is ever left behind it.
 */
static void migrate(struct shard *s, unsigned budget)
{
	struct slot *o;

	while (s->old.cap && budget) {
		o = &s->old.slots[s->mcur];
		if (o->key) {
			s->t.slots[probe(&s->t, o->key, mix(o->key))] = *o;
			remove_at(&s->old, s->mcur);
			budget = budget > 4 ? budget - 4 : 0;
			continue;
		}
		budget--;
		if (++s->mcur == s->old.cap) {
			slots_free(s->old.slots, s->old.cap);
			s->old = (struct tab){ NULL, 0 };
			s->mcur = 0;
		}
	}
}

/* Start moving s into a table of ncap slots (none in flight). */
static bool resize(struct shard *s, unsigned ncap)
{
	struct slot *nslots = slots_alloc(ncap);

	if (!nslots)
		return false;
	s->old = s->t;
	s->mcur = 0;
	s->t = (struct tab){ nslots, ncap };
	return true;
}

/* Room for one more record at load <= 1/2, and a step of any move. */
static bool reserve(struct shard *s)
{
	if ((s->count + 1) * 2 > s->t.cap) {
		migrate(s, ~0u);	/* a shrink still in flight: rare */
		if (!resize(s, s->t.cap ? s->t.cap * 2 : MIN_CAP))
			return false;
	}
	if (s->old.cap)
		migrate(s, MIGRATE_STEP);
	return true;
}

static bool q_valid(struct shard *s, const struct qent *e)
{
	const struct rc_obj *o = find(s, e->key, mix(e->key));

	return o && o->gen == e->gen;
}

/* Forget the oldest destroyed record still in s. */
static void q_evict(struct shard *s)
{
	struct qent e;
	struct tab *t;
	unsigned i;

	while (s->qlen) {
		e = s->q[s->qhead];
		s->qhead = (s->qhead + 1) & (s->qcap - 1);
		s->qlen--;
		if (locate(s, e.key, mix(e.key), &t, &i) &&
		    t->slots[i].rec->gen == e.gen) {
			rec_free(s, t->slots[i].rec);
			remove_at(t, i);
			s->count--;
			s->qvalid--;
			return;
		}
	}
}

/*
 * The ring is full: drop its stale entries (each was pushed once, and at
 * most half of a full ring is valid, so this is constant time per push),
 * or grow it, up to twice the shard's share.
 */
static void q_make_room(struct shard *s)
{
	unsigned i, n = 0, ncap;
	struct qent *nq;

	if (s->qcap < 2 * quar_share) {
		ncap = s->qcap ? s->qcap * 2 : 16;
		nq = malloc(ncap * sizeof(*nq));
		if (nq) {
			for (i = 0; i < s->qlen; i++)
				nq[i] = s->q[(s->qhead + i) & (s->qcap - 1)];
			free(s->q);
			s->q = nq;
			s->qcap = ncap;
			s->qhead = 0;
			return;
		}
	}
	for (i = 0; i < s->qlen; i++) {
		struct qent e = s->q[(s->qhead + i) & (s->qcap - 1)];

		if (q_valid(s, &e))
			s->q[(s->qhead + n++) & (s->qcap - 1)] = e;
	}
	s->qlen = n;
	if (s->qlen == s->qcap)
		q_evict(s);
}

/* The record at key (generation gen), just destroyed or buried, joins
 * the quarantine; the oldest go beyond the shard's share. */
static void q_push(struct shard *s, uintptr_t key, uint32_t gen)
{
	if (s->qlen == s->qcap)
		q_make_room(s);
	if (s->qlen < s->qcap) {
		s->q[(s->qhead + s->qlen) & (s->qcap - 1)] =
			(struct qent){ key, gen };
		s->qlen++;
		s->qvalid++;
	}
	while (s->qvalid > quar_share && s->qlen)
		q_evict(s);
	/*
	 * Give memory back once most of the shard went away: below load
	 * 1/4, so that the half-size table is still under the 1/2 that
	 * makes it grow again.
	 */
	if (s->t.cap > MIN_CAP && s->count * 4 < s->t.cap && !s->old.cap)
		resize(s, s->t.cap / 2);
}

/* A record of s stops being live (the count is read without the lock). */
static void unlive(struct shard *s)
{
	__atomic_store_n(&s->live, s->live - 1, __ATOMIC_RELAXED);
}

/* Keep old (destroyed) under (address, kind), over an older burial; in
 * s, the address's shard (see mix), under its lock. */
static void bury(struct shard *s, const struct rc_obj *old)
{
	uintptr_t key = grave_key(old->handle, old->kind);
	uint64_t m = mix(key);
	struct slot *slot, *empty;
	struct rc_obj *rec;
	size_t need = rec_need(old);

	if (!reserve(s))
		return;		/* forgotten: only the memory ran out */
	slot = find_or_empty(s, key, m, &empty);
	rec = rec_for(s, slot, need);
	if (!rec)
		return;		/* the older burial, if any, stays */
	if (slot) {
		s->qvalid--;	/* the older burial's entry goes stale */
	} else {
		slot = empty;
		slot->key = key;
		slot->rec = NULL;
		s->count++;
	}
	slot_hold(s, slot, rec);
	memcpy(rec, old, need);
	rec->handle = key;
	q_push(s, key, old->gen);
}

/* Generations count per shard, with the shard in the low bits: unique
 * without a counter all threads write. */
static uint32_t new_gen(struct shard *s)
{
	uint32_t g = ++s->next_gen << SHARD_BITS | (uint32_t)(s - shards);

	if (RC_UNLIKELY(!g))
		g = ++s->next_gen << SHARD_BITS | (uint32_t)(s - shards);
	return g;
}

uint32_t rc_reg_insert(struct rc_obj *o)
{
	uint64_t m = mix(o->handle);
	struct shard *s = shard_of(m);
	struct slot *slot, *empty;
	struct rc_obj *rec, old;
	size_t need = rec_need(o);
	bool buried = false;

	rc_lock(&s->lock);
	if (!reserve(s))
		goto fail;
	slot = find_or_empty(s, o->handle, m, &empty);
	/* Room first: nothing changes when there is none. */
	rec = rec_for(s, slot, need);
	if (!rec)
		goto fail;
	o->gen = new_gen(s);
	if (!slot) {
		slot = empty;
		slot->key = o->handle;
		slot->rec = NULL;
		s->count++;
		__atomic_store_n(&s->live, s->live + 1, __ATOMIC_RELAXED);
	} else if (slot->rec->destroyed) {
		/*
		 * A new life at the address: the old one is buried, unless
		 * it is of the same kind (a grave is only looked at while
		 * the address holds another kind, and by then this new life
		 * is the newest destroyed one of its kind here).
		 */
		__atomic_store_n(&s->live, s->live + 1, __ATOMIC_RELAXED);
		s->qvalid--;
		if (slot->rec->kind != o->kind) {
			copy_out(&old, slot->rec);
			buried = true;
		}
	} else {
		if (tallied(slot->rec->kind))
			tally_kill(slot->rec);	/* replaced while live */
	}
	slot_hold(s, slot, rec);
	memcpy(rec, o, need);
	if (tallied(o->kind)) {
		*cell_of(rec) = NULL;	/* o's may be a copy's */
		if (!tally_lazy(o->kind))
			tally_stamp(s, rec, m);
	}
	if (buried)
		bury(s, &old);	/* the same shard: one lock */
	rc_unlock(&s->lock);
	return o->gen;
fail:
	rc_unlock(&s->lock);
	__atomic_store_n(&degraded, true, __ATOMIC_RELAXED);
	o->gen = 0;
	return 0;
}

bool rc_reg_get(uintptr_t h, struct rc_obj *out)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	struct rc_obj *o;

	if (!h)
		return false;
	rc_lock(&s->lock);
	o = find(s, h, m);
	if (o) {
		copy_out(out, o);
		tally_fill(out);
	}
	rc_unlock(&s->lock);
	return o != NULL;
}

bool rc_reg_get_kind(uintptr_t h, unsigned kind, struct rc_obj *out)
{
	if (rc_reg_get(h, out) && out->kind == kind)
		return true;
	if (is_grave(h) || !rc_reg_get(grave_key(h, kind), out))
		return false;
	out->handle = h;
	return true;
}

bool rc_reg_update(uintptr_t h, uint32_t gen,
		   void (*fn)(struct rc_obj *o, void *arg), void *arg)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	struct rc_obj *o;

	if (!h)
		return false;
	rc_lock(&s->lock);
	o = find(s, h, m);
	if (o && gen && o->gen != gen)
		o = NULL;
	if (o) {
		uint16_t was = o->flags;

		fn(o, arg);
		flags_kept(o, was);
	}
	rc_unlock(&s->lock);
	return o != NULL;
}

void rc_reg_add(struct rc_ref ref, unsigned offset, int delta)
{
	uint64_t m = mix(ref.h);
	struct shard *s = shard_of(m);
	struct rc_obj *o;

	if (!ref.h)
		return;
	rc_lock(&s->lock);
	o = find(s, ref.h, m);
	if (o && (!ref.gen || o->gen == ref.gen) && !o->destroyed)
		add_at(s, o, offset, delta, m);
	rc_unlock(&s->lock);
}

bool rc_reg_get_add(uintptr_t h, unsigned kind, unsigned offset, int delta,
		    struct rc_obj *out)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	struct rc_obj *o;
	bool found = false;

	if (!h)
		return false;
	rc_lock(&s->lock);
	o = find(s, h, m);
	if (o && o->kind == kind && !o->destroyed) {
		if (tallied(kind)) {
			add_at(s, o, offset, delta, m);
			copy_out(out, o);
			tally_fill(out);
		} else {
			if (RC_LIKELY(offset + sizeof(int) <= rec_bytes(o)))
				*(int *)((char *)o + offset) += delta;
			copy_out(out, o);
		}
		found = true;
	}
	rc_unlock(&s->lock);
	return found;
}

bool rc_reg_get_update(uintptr_t h, unsigned kind,
		       void (*fn)(struct rc_obj *o, void *arg), void *arg,
		       struct rc_obj *out)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	struct rc_obj *o;
	bool found = false;

	if (!h)
		return false;
	rc_lock(&s->lock);
	o = find(s, h, m);
	if (o && o->kind == kind && !o->destroyed) {
		uint16_t was = o->flags;

		fn(o, arg);
		flags_kept(o, was);
		if (out) {
			copy_out(out, o);
			tally_fill(out);
		}
		found = true;
	}
	rc_unlock(&s->lock);
	return found;
}

/* Mark o (live, in s) destroyed and quarantine it; under s's lock. */
static void mark_destroyed(struct shard *s, struct rc_obj *o, pid_t tid,
			   rc_stack_id st)
{
	if (tallied(o->kind))
		tally_kill(o);
	o->destroyed = 1;
	o->destroyed_tid = tid;
	o->destroyed_stack = st;
	unlive(s);
	q_push(s, o->handle, o->gen);
	if (s->old.cap)
		migrate(s, MIGRATE_STEP);
}

bool rc_reg_destroy(uintptr_t h, uint32_t gen, pid_t tid, rc_stack_id st)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	struct rc_obj *o;
	bool done = false;

	if (!h)
		return false;
	rc_lock(&s->lock);
	o = find(s, h, m);
	if (o && (!gen || o->gen == gen) && !o->destroyed) {
		mark_destroyed(s, o, tid, st);
		done = true;
	}
	rc_unlock(&s->lock);
	return done;
}

enum rc_take rc_reg_take(uintptr_t h, unsigned kind, unsigned keep_flags,
			 pid_t tid, rc_stack_id st, struct rc_obj *out)
{
	return rc_reg_take_fn(h, kind, keep_flags, tid, st, NULL, NULL, out);
}

enum rc_take rc_reg_take_fn(uintptr_t h, unsigned kind, unsigned keep_flags,
			    pid_t tid, rc_stack_id st,
			    void (*fn)(struct rc_obj *o, void *arg), void *arg,
			    struct rc_obj *out)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	enum rc_take r = RC_TAKE_NONE;
	struct rc_obj *o;

	out->handle = 0;
	if (!h)
		return r;
	rc_lock(&s->lock);
	o = find(s, h, m);
	if (o && o->kind == kind) {
		if (o->destroyed) {
			r = RC_TAKE_DESTROYED;
		} else if (o->flags & keep_flags) {
			r = RC_TAKE_KEPT;
		} else {
			if (fn)
				fn(o, arg);
			r = RC_TAKE_TAKEN;
		}
		/* One copy, as the record was before it is marked. */
		copy_out(out, o);
		tally_fill(out);
		if (r == RC_TAKE_TAKEN)
			mark_destroyed(s, o, tid, st);
	} else if (o) {
		copy_out(out, o);	/* another kind: the caller may say so */
		tally_fill(out);
	}
	rc_unlock(&s->lock);
	/* The memory is another kind's now: was it one of ours before? */
	if (r == RC_TAKE_NONE && !is_grave(h) &&
	    rc_reg_get(grave_key(h, kind), out)) {
		out->handle = h;
		r = RC_TAKE_DESTROYED;
	}
	return r;
}

static void copy_tab(struct shard *s, const struct tab *t,
		     struct rc_obj *copy, unsigned *n)
{
	unsigned j;

	/* Every caller's fn skips destroyed records: copy the live only. */
	for (j = 0; j < t->cap; j++)
		if (t->slots[j].key && !t->slots[j].rec->destroyed) {
			copy_out(&copy[*n], t->slots[j].rec);
			tally_fill(&copy[*n]);
			(*n)++;
		}
}

void rc_reg_foreach(void (*fn)(const struct rc_obj *o, void *arg), void *arg)
{
	struct rc_obj *copy = NULL;
	unsigned i, j, n, cap = 0;

	for (i = 0; i < NSHARDS; i++) {
		struct shard *s = &shards[i];

		rc_lock(&s->lock);
		if (s->live > cap) {
			struct rc_obj *c = realloc(copy, s->live *
						   sizeof(*copy));
			if (!c) {
				rc_unlock(&s->lock);
				continue;
			}
			copy = c;
			cap = s->live;
		}
		n = 0;
		copy_tab(s, &s->t, copy, &n);
		copy_tab(s, &s->old, copy, &n);
		rc_unlock(&s->lock);
		for (j = 0; j < n; j++)
			fn(&copy[j], arg);
	}
	free(copy);
}

/*
 * Under the lock: in the record's cell, which it may have got since the
 * caller looked (a verbs object's first child), else (none yet, or no
 * memory for one) in the record itself.  Out of line: the lock-free path
 * then saves no registers.
 */
static __attribute__((noinline)) bool
tally_add_locked(struct shard *s, struct rc_ref ref, unsigned t, int delta,
		 int *now, uint64_t m)
{
	struct rc_tally_cell *c;
	struct rc_obj *o;
	bool ok;

	rc_lock(&s->lock);
	o = find(s, ref.h, m);
	ok = o && o->gen == ref.gen && !o->destroyed &&
	     t < tally_count(o->kind);
	if (ok && (c = *cell_of(o))) {
		ok = cell_add(c, o->gen, t, delta, now);
	} else if (ok) {
		*tally_field(o, t) += delta;
		if (now)
			*now = *tally_field(o, t);
	}
	rc_unlock(&s->lock);
	return ok;
}

bool rc_tally_add(struct rc_ref ref, enum rc_tally t, int delta, int *now)
{
	uint64_t m = mix(ref.h);
	struct shard *s = shard_of(m);
	struct rc_tally_cell *c;
	uint64_t st;

	if (!ref.h || !ref.gen)
		return false;
	c = cell_find(s, ref.h, m);
	if (c) {
		if (cell_add(c, ref.gen, t, delta, now))
			return true;
		/* Another live record counts here: ref is stale.  Else the
		 * address's record may be a verbs object without its cell
		 * yet: the lock tells. */
		st = __atomic_load_n(&c->stamp, __ATOMIC_ACQUIRE);
		if (st && st >> 32 != ref.gen)
			return false;
	}
	return tally_add_locked(s, ref, t, delta, now, m);
}

bool rc_tally_add_obj(const struct rc_obj *o, enum rc_tally t, int delta,
		      int *now)
{
	struct rc_tally_cell *c = tallied(o->kind) ? o->u.ch.cell : NULL;

	/* A cell is only ever h's: its generation check is the rest. */
	if (c && o->handle && o->gen)
		return cell_add(c, o->gen, t, delta, now);
	return rc_tally_add((struct rc_ref){ o->handle, o->gen }, t, delta,
			    now);
}

bool rc_tally_add_cell(struct rc_ref ref, struct rc_tally_cell *cell,
		       enum rc_tally t, int delta, int *now)
{
	/* A cell is only ever h's: its generation check is the rest. */
	if (cell && ref.h && ref.gen)
		return cell_add(cell, ref.gen, t, delta, now);
	return rc_tally_add(ref, t, delta, now);
}

bool rc_tally_find_add(uintptr_t h, unsigned kind, enum rc_tally t,
		       int delta, struct rc_ref *ref,
		       struct rc_tally_cell **cell)
{
	uint64_t m = mix(h), st;
	struct shard *s = shard_of(m);
	struct rc_obj o;
	struct rc_tally_cell *c;

	if (!h || !tallied(kind))
		return false;
	c = cell_find(s, h, m);
	if (!c)
		goto locked;
	/* A live record of this kind at h has its counters here (a verbs
	 * object's may still be in the record: the lock tells). */
	for (;;) {
		st = __atomic_load_n(&c->stamp, __ATOMIC_ACQUIRE);
		if (!st && tally_lazy(kind))
			goto locked;
		if (!st || (st & 0xff) != kind)
			return false;
		if (cell_add(c, (uint32_t)(st >> 32), t, delta, NULL)) {
			*ref = (struct rc_ref){ h, (uint32_t)(st >> 32) };
			if (cell)
				*cell = c;
			return true;
		}
	}
locked:
	if (!rc_reg_get_add(h, kind, (unsigned)((char *)tally_field(&o, t) -
			    (char *)&o), delta, &o))
		return false;
	*ref = (struct rc_ref){ h, o.gen };
	if (cell)
		*cell = *cell_of(&o);
	return true;
}

/* A copy of h's header made from its cell c's stamp st, without the lock
 * (the kind, generation and flags the stamp keeps; the rest zero). */
static inline void hdr_of_stamp(struct rc_obj *out, uintptr_t h, uint64_t st,
				struct rc_tally_cell *c)
{
	memset(out, 0, __builtin_offsetof(struct rc_obj, u));
	out->handle = h;
	out->gen = (uint32_t)(st >> 32);
	out->kind = (uint8_t)(st & 0xff);
	out->flags = (uint16_t)(st >> 8);
	*cell_of(out) = c;
}

bool rc_tally_get_add(uintptr_t h, unsigned kind, enum rc_tally t, int delta,
		      struct rc_obj *out, bool *full)
{
	uint64_t m = mix(h), st;
	struct shard *s = shard_of(m);
	struct rc_tally_cell *c;

	*full = false;
	if (!h || !tallied(kind))
		return false;
	c = cell_find(s, h, m);
	while (c) {
		st = __atomic_load_n(&c->stamp, __ATOMIC_ACQUIRE);
		if (!st && tally_lazy(kind))
			break;
		if (!st || (st & 0xff) != kind)
			return false;
		if (cell_add(c, (uint32_t)(st >> 32), t, delta, NULL)) {
			hdr_of_stamp(out, h, st, c);
			return true;
		}
	}
	*full = true;
	return rc_reg_get_add(h, kind, (unsigned)((char *)tally_field(out, t) -
			      (char *)out), delta, out);
}

void rc_aux_note_set(struct rc_tally_cell *cell, uint64_t note)
{
	__atomic_store_n(&cell->note, note, __ATOMIC_RELAXED);
}

uint64_t rc_aux_note(const struct rc_tally_cell *cell)
{
	return __atomic_load_n(&cell->note, __ATOMIC_RELAXED);
}

enum rc_aux rc_aux_get(uintptr_t h, unsigned kind, struct rc_obj *out)
{
	uint64_t m = mix(h), st;
	struct shard *s = shard_of(m);
	struct rc_tally_cell *c;

	if (!h || kind != RC_K_ID)
		return RC_AUX_LOCK;
	c = cell_find(s, h, m);
	if (!c)
		return RC_AUX_LOCK;
	st = __atomic_load_n(&c->stamp, __ATOMIC_ACQUIRE);
	if (!st || (st & 0xff) != kind)
		return RC_AUX_NONE;
	hdr_of_stamp(out, h, st, c);
	return RC_AUX_DONE;
}

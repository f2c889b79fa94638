/*
 * registry.c - the handle -> record tables.  64 shards, each an
 * open-addressing table (linear probing, Fibonacci hashing, backward-shift
 * deletion, load <= 1/2) under its own mutex, so threads working on
 * different objects rarely meet.  A destroyed record stays, marked, under
 * its address; when a new object takes the address, the old record is
 * buried under (address, kind) instead, so a stale pointer of one kind is
 * still known when the allocator handed its memory to another kind.  Only
 * the newest destroyed record per address and kind is kept, and when more
 * than a bound of them have piled up the oldest are swept out.  So a
 * double ack or a use after destroy is told from an unknown pointer
 * however much other threads churn meanwhile, and memory stays bounded.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacheck.h"
#include "registry.h"

#define SHARD_BITS 6
#define NSHARDS (1u << SHARD_BITS)
#define MIN_CAP 64u
/* Destroyed records kept at most (about 230 bytes each): sized by memory. */
#define QUARANTINE_MAX (1u << 17)

struct shard {
	pthread_mutex_t lock;
	struct rc_obj *slots;
	unsigned cap;		/* power of two, 0 before first use */
	unsigned count;
} __attribute__((aligned(64)));

static struct shard shards[NSHARDS];
static uint32_t next_gen;
static unsigned long live;
static bool degraded;

static unsigned long quar_valid;	/* destroyed records in the tables */
static unsigned quar_max = QUARANTINE_MAX;
static int sweeping;

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

static inline uint64_t mix(uintptr_t h)
{
	return (uint64_t)(h >> 3) * 0x9E3779B97F4A7C15ull;
}

static inline struct shard *shard_of(uint64_t m)
{
	return &shards[m >> (64 - SHARD_BITS)];
}

static inline unsigned slot_of(uint64_t m, unsigned cap)
{
	return (unsigned)(m << SHARD_BITS >> 32) & (cap - 1);
}

void rc_reg_init(void)
{
	unsigned i;

	for (i = 0; i < NSHARDS; i++)
		pthread_mutex_init(&shards[i].lock, NULL);
}

void rc_reg_atfork_child(void)
{
	rc_reg_init();
	sweeping = 0;
}

void rc_reg_set_quarantine(unsigned max)
{
	quar_max = max ? max : QUARANTINE_MAX;
}

bool rc_reg_degraded(void)
{
	return __atomic_load_n(&degraded, __ATOMIC_RELAXED);
}

unsigned long rc_reg_live(void)
{
	return __atomic_load_n(&live, __ATOMIC_RELAXED);
}

/* Index of h in s, or of the empty slot where it would go. */
static unsigned probe(const struct shard *s, uintptr_t h, uint64_t m)
{
	unsigned i = slot_of(m, s->cap);

	while (s->slots[i].handle && s->slots[i].handle != h)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static bool grow(struct shard *s)
{
	unsigned ncap = s->cap ? s->cap * 2 : MIN_CAP, i, j;
	struct rc_obj *old = s->slots, *nslots;

	nslots = calloc(ncap, sizeof(*nslots));
	if (!nslots)
		return false;
	for (i = 0; i < s->cap; i++) {
		if (!old[i].handle)
			continue;
		j = slot_of(mix(old[i].handle), ncap);
		while (nslots[j].handle)
			j = (j + 1) & (ncap - 1);
		nslots[j] = old[i];
	}
	s->slots = nslots;
	s->cap = ncap;
	free(old);
	return true;
}

/* Keep old (destroyed) under (address, kind), over an older burial. */
static void bury(const struct rc_obj *old)
{
	uintptr_t key = grave_key(old->handle, old->kind);
	uint64_t m = mix(key);
	struct shard *s = shard_of(m);
	struct rc_obj *slot;

	pthread_mutex_lock(&s->lock);
	if ((s->count + 1) * 2 > s->cap && !grow(s)) {
		pthread_mutex_unlock(&s->lock);
		__atomic_sub_fetch(&quar_valid, 1, __ATOMIC_RELAXED);
		return;		/* forgotten: only the memory ran out */
	}
	slot = &s->slots[probe(s, key, m)];
	if (slot->handle)
		__atomic_sub_fetch(&quar_valid, 1, __ATOMIC_RELAXED);
	else
		s->count++;
	*slot = *old;
	slot->handle = key;
	pthread_mutex_unlock(&s->lock);
}

uint32_t rc_reg_insert(struct rc_obj *o)
{
	uint64_t m = mix(o->handle);
	struct shard *s = shard_of(m);
	struct rc_obj *slot, old;
	unsigned i;
	bool buried = false;

	o->gen = __atomic_add_fetch(&next_gen, 1, __ATOMIC_RELAXED);
	if (RC_UNLIKELY(!o->gen))
		o->gen = __atomic_add_fetch(&next_gen, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->lock);
	if ((s->count + 1) * 2 > s->cap && !grow(s)) {
		pthread_mutex_unlock(&s->lock);
		__atomic_store_n(&degraded, true, __ATOMIC_RELAXED);
		return 0;
	}
	i = probe(s, o->handle, m);
	slot = &s->slots[i];
	if (!slot->handle) {
		s->count++;
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	} else if (slot->destroyed) {
		/* A new life at the address: the old one is buried. */
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
		old = *slot;
		buried = true;
	}
	*slot = *o;
	pthread_mutex_unlock(&s->lock);
	if (buried)
		bury(&old);
	return o->gen;
}

bool rc_reg_get(uintptr_t h, struct rc_obj *out)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	bool found = false;
	unsigned i;

	if (!h)
		return false;
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		i = probe(s, h, m);
		if (s->slots[i].handle) {
			*out = s->slots[i];
			found = true;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return found;
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
	bool found = false;
	unsigned i;

	if (!h)
		return false;
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		i = probe(s, h, m);
		if (s->slots[i].handle && (!gen || s->slots[i].gen == gen)) {
			fn(&s->slots[i], arg);
			found = true;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

struct add_arg {
	unsigned offset;
	int delta;
};

static void add_fn(struct rc_obj *o, void *arg)
{
	struct add_arg *a = arg;
	int *field = (int *)((char *)o + a->offset);

	if (!o->destroyed)
		*field += a->delta;
}

void rc_reg_add(struct rc_ref ref, unsigned offset, int delta)
{
	struct add_arg a = { offset, delta };

	if (ref.h)
		rc_reg_update(ref.h, ref.gen, add_fn, &a);
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
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		o = &s->slots[probe(s, h, m)];
		if (o->handle && o->kind == kind && !o->destroyed) {
			*(int *)((char *)o + offset) += delta;
			*out = *o;
			found = true;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void remove_at(struct shard *s, unsigned i)
{
	unsigned j = i, k;

	for (;;) {
		j = (j + 1) & (s->cap - 1);
		if (!s->slots[j].handle)
			break;
		k = slot_of(mix(s->slots[j].handle), s->cap);
		/* Move j back to i unless its home k lies in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		s->slots[i] = s->slots[j];
		i = j;
	}
	memset(&s->slots[i], 0, sizeof(s->slots[i]));
	s->count--;
}

struct destroy_arg {
	pid_t tid;
	rc_stack_id st;
	bool done;
};

static void destroy_fn(struct rc_obj *o, void *arg)
{
	struct destroy_arg *a = arg;

	if (o->destroyed)
		return;
	o->destroyed = 1;
	o->destroyed_tid = a->tid;
	o->destroyed_stack = a->st;
	a->done = true;
}

/*
 * Too many destroyed records whose addresses were not handed out again:
 * forget those registered before the last quar_max / 2 registrations.
 * A full pass over the tables, but only after quar_max / 2 such records
 * have piled up since the last one: constant time per destroy.
 */
static void sweep(void)
{
	uint32_t cutoff;
	unsigned i, j;

	if (__atomic_exchange_n(&sweeping, 1, __ATOMIC_ACQUIRE))
		return;
	cutoff = __atomic_load_n(&next_gen, __ATOMIC_RELAXED) - quar_max / 2;
	for (i = 0; i < NSHARDS; i++) {
		struct shard *sh = &shards[i];

		pthread_mutex_lock(&sh->lock);
		for (j = 0; j < sh->cap;) {
			struct rc_obj *o = &sh->slots[j];

			/* Generations wrap: compare by difference. */
			if (o->handle && o->destroyed &&
			    (int32_t)(o->gen - cutoff) < 0) {
				remove_at(sh, j);	/* j holds the next one */
				__atomic_sub_fetch(&quar_valid, 1,
						   __ATOMIC_RELAXED);
			} else {
				j++;
			}
		}
		pthread_mutex_unlock(&sh->lock);
	}
	__atomic_store_n(&sweeping, 0, __ATOMIC_RELEASE);
}

/* A record just marked destroyed joins the quarantine. */
static void quarantine(void)
{
	__atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&quar_valid, 1, __ATOMIC_RELAXED) > quar_max)
		sweep();
}

bool rc_reg_destroy(uintptr_t h, uint32_t gen, pid_t tid, rc_stack_id st)
{
	struct destroy_arg a = { tid, st, false };

	rc_reg_update(h, gen, destroy_fn, &a);
	if (!a.done)
		return false;
	quarantine();
	return true;
}

enum rc_take rc_reg_take(uintptr_t h, unsigned kind, unsigned keep_flags,
			 pid_t tid, rc_stack_id st, struct rc_obj *out)
{
	uint64_t m = mix(h);
	struct shard *s = shard_of(m);
	enum rc_take r = RC_TAKE_NONE;
	struct rc_obj *o;

	out->handle = 0;
	if (!h)
		return r;
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		o = &s->slots[probe(s, h, m)];
		if (o->handle && o->kind == kind) {
			*out = *o;
			if (o->destroyed) {
				r = RC_TAKE_DESTROYED;
			} else if (o->flags & keep_flags) {
				r = RC_TAKE_KEPT;
			} else {
				o->destroyed = 1;
				o->destroyed_tid = tid;
				o->destroyed_stack = st;
				r = RC_TAKE_TAKEN;
			}
		} else if (o->handle) {
			*out = *o;	/* another kind: the caller may say so */
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (r == RC_TAKE_TAKEN)
		quarantine();
	/* The memory is another kind's now: was it one of ours before? */
	if (r == RC_TAKE_NONE && !is_grave(h) &&
	    rc_reg_get(grave_key(h, kind), out)) {
		out->handle = h;
		r = RC_TAKE_DESTROYED;
	}
	return r;
}

void rc_reg_foreach(void (*fn)(const struct rc_obj *o, void *arg), void *arg)
{
	struct rc_obj *copy = NULL;
	unsigned i, j, n, cap = 0;

	for (i = 0; i < NSHARDS; i++) {
		struct shard *s = &shards[i];

		pthread_mutex_lock(&s->lock);
		if (s->count > cap) {
			struct rc_obj *c = realloc(copy, s->count *
						   sizeof(*copy));
			if (!c) {
				pthread_mutex_unlock(&s->lock);
				continue;
			}
			copy = c;
			cap = s->count;
		}
		for (j = 0, n = 0; j < s->cap; j++)
			if (s->slots[j].handle && !is_grave(s->slots[j].handle))
				copy[n++] = s->slots[j];
		pthread_mutex_unlock(&s->lock);
		for (j = 0; j < n; j++)
			fn(&copy[j], arg);
	}
	free(copy);
}

/*
 * registry.c - the handle -> record tables.  64 shards, each an
 * open-addressing table (linear probing, Fibonacci hashing, backward-shift
 * deletion, load <= 1/2) under its own mutex, so threads working on
 * different objects rarely meet.  Destroyed records stay in place, marked,
 * until the quarantine ring pushes them out.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacheck.h"
#include "registry.h"

#define SHARD_BITS 6
#define NSHARDS (1u << SHARD_BITS)
#define MIN_CAP 64u
#define QUARANTINE 16384u

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

static struct {
	pthread_mutex_t lock;
	struct rc_ref ring[QUARANTINE];
	unsigned head, count;
} quar = { .lock = PTHREAD_MUTEX_INITIALIZER };

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
	pthread_mutex_init(&quar.lock, NULL);
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

uint32_t rc_reg_insert(struct rc_obj *o)
{
	uint64_t m = mix(o->handle);
	struct shard *s = shard_of(m);
	struct rc_obj *slot;
	unsigned i;

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
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	}
	*slot = *o;
	pthread_mutex_unlock(&s->lock);
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

static void forget(struct rc_ref ref)
{
	uint64_t m = mix(ref.h);
	struct shard *s = shard_of(m);
	unsigned i;

	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		i = probe(s, ref.h, m);
		if (s->slots[i].handle && s->slots[i].gen == ref.gen &&
		    s->slots[i].destroyed)
			remove_at(s, i);
	}
	pthread_mutex_unlock(&s->lock);
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

/* A record just marked destroyed enters the quarantine. */
static void quarantine(uintptr_t h, uint32_t gen)
{
	struct rc_ref old = { 0, 0 };

	__atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&quar.lock);
	if (quar.count == QUARANTINE) {
		old = quar.ring[quar.head];
		quar.count--;
	}
	quar.ring[quar.head] = (struct rc_ref){ h, gen };
	quar.head = (quar.head + 1) % QUARANTINE;
	quar.count++;
	pthread_mutex_unlock(&quar.lock);
	if (old.h)
		forget(old);
}

bool rc_reg_destroy(uintptr_t h, uint32_t gen, pid_t tid, rc_stack_id st)
{
	struct destroy_arg a = { tid, st, false };

	rc_reg_update(h, gen, destroy_fn, &a);
	if (!a.done)
		return false;
	quarantine(h, gen);
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
		quarantine(h, out->gen);
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
			if (s->slots[j].handle)
				copy[n++] = s->slots[j];
		pthread_mutex_unlock(&s->lock);
		for (j = 0; j < n; j++)
			fn(&copy[j], arg);
	}
	free(copy);
}

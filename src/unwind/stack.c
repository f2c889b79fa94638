/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * stack.c - stack capture and the stack depot.
 *
 * Capture, on x86_64: our own CFI walk (src/unwind/unwind_cfi.h), from the
 * wrapper's frame record (or capture()'s own registers), a cached unwind
 * rule per return address, each frame checked (CFA above sp and inside
 * this thread's stack, the return address in a loaded object's text);
 * it gives libunwind's frames at a fraction of the cost and without a
 * lock.  A frame it cannot step, or a check that fails, hands that
 * capture to the unwinder below, so no stack is worse than its.
 * Elsewhere, and as that fallback: libunwind's unw_backtrace() from a
 * dlopen(RTLD_LOCAL)ed libunwind.so.8 (never linked: it exports
 * backtrace() and the _Unwind_* ABI; never an unw_step loop: a global
 * lock and 2 syscalls per frame), else libgcc's _Unwind_Backtrace() from
 * an explicit libgcc_s.so.1 handle.  Leading frames inside our own text
 * ("self range") are dropped, so frame #0 is the caller of the
 * intercepted function.  The CFI walk stops once the frames kept are
 * there; for the unwinders each capture site learns how many frames it
 * drops, so that only those and the frames kept are unwound.  A site's
 * walk from a wrapper's frame is kept per thread (where it read each
 * word, and what it found) once a call path repeats: while those words
 * hold, the next capture there is the same stack, checked word by word
 * instead of stepped, hashed and looked up (last_walk; fast_unwind's
 * walk likewise, last_fp_walk).
 *
 * unw_backtrace() gives every thread a 256 KiB frame cache on its first
 * call (whatever unw_set_caching_policy says): ~90 us of page faults.  A
 * thread's first WARM_CAPTURES captures use libgcc's unwinder instead
 * (~5 us each, no per-thread state), so short threads never pay for it.
 *
 * fast_unwind: a frame-pointer walk from the wrapper's frame, checked
 * frame by frame (inside this thread's stack, increasing, returning into
 * an executable segment of an object loaded now); it stops at the first
 * frame that fails.  The objects loaded now are modules.c's map, which
 * also gives the CFI walk's misses each object's .eh_frame_hdr.  On
 * x86_64 the walk asks the CFI rule cache, which knows each return
 * address once seen, so a capture does not read the map's counters (the
 * loader's lock).
 *
 * Depot: a fixed array of hash buckets, each a chain of immutable entries
 * carved from mmap()ed arena chunks.  Lookups are lock-free (acquire loads
 * of published pointers); inserts take one mutex, so a stack is stored once
 * and ids are dense.  Id -> entry is a two-level table of mmap()ed pages.
 * Nothing is ever freed.  Capture is not async-signal-safe (libunwind's
 * per-thread cache, our mutexes): never from a signal handler.
 * rc_stack_frames() is lock-free and may be.
 *
 * The stack a fatal signal interrupted (rc_stack_capture_signal) is the
 * exception: a walk of its own from the handler's ucontext, the faulting
 * pc first, every word read through the kernel (process_vm_readv), the
 * CFI rules from the cache or parsed without a lock, else frame
 * pointers; its frames go to one static slot, not the depot.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"		/* _GNU_SOURCE: dladdr, dl_iterate_phdr */
#elif !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unwind.h>

#include "core/rdmacheck.h"
#include "unwind/modules.h"
#include "unwind/stack.h"
#include "unwind/unwind_cfi.h"

/*
 * Raw frames requested beyond the depth for our own frames: a site's
 * guess until it has learned its own count, and the most ever unwound.
 */
#define SLACK_INIT	3
#define SLACK_MAX	16
#define NSITES		1024	/* learned counts; larger sites share slot 0 */
/*
 * A thread's first captures use libgcc: each costs ~28k instructions
 * (~5 us) more than libunwind's, whose frame cache costs ~90 us once per
 * thread, so switching after 8 keeps any thread within 1.5x of the
 * cheaper choice made in hindsight.
 */
#define WARM_CAPTURES	8

#define BUCKET_BITS	16
#define NBUCKETS	(1u << BUCKET_BITS)
#define ID_PAGE_BITS	12		/* ids per second-level page */
#define ID_PAGE_SIZE	(1u << ID_PAGE_BITS)
#define ID_PAGES	1024		/* at most 4M distinct stacks */
#define ARENA_CHUNK	(1u << 20)

struct depot_entry {
	struct depot_entry *next;	/* bucket chain; immutable */
	uint64_t hash;
	uint32_t id;
	uint32_t n;
	uintptr_t pcs[];
};

enum unwinder { UW_NONE, UW_LIBUNWIND, UW_LIBGCC };

typedef int (*unw_backtrace_fn)(void **buf, int size);
typedef _Unwind_Reason_Code (*ub_fn)(_Unwind_Trace_Fn fn, void *arg);
typedef _Unwind_Ptr (*getip_fn)(struct _Unwind_Context *ctx);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_bool ready;
static _Atomic enum unwinder uw;	/* set before ready */
static unw_backtrace_fn p_unw_backtrace;
static ub_fn p_unwind_backtrace;
static getip_fn p_unwind_getip;

static atomic_uint depth = 16;
/*
 * Per site: the frames it drops (0: not learned), and a window of
 * captures that dropped fewer: after SITE_WINDOW in a row the site
 * learns their maximum.  A first call that ran deeper (initialisation)
 * is forgotten; a site that varies keeps its maximum and never unwinds
 * twice.  Racy updates only cost a frame or a second unwind.
 */
#define SITE_WINDOW	16
static atomic_uint site_state[NSITES];	/* learned | max << 8 | count << 16 */
static atomic_bool fast;		/* fast_unwind: frame-pointer walk */
static atomic_bool cfi;			/* the CFI walk first */
static RC_TLS unsigned long cfi_walks, cfi_falls;
static RC_TLS unsigned thread_captures;
static RC_TLS uintptr_t stack_lo, stack_hi;	/* stack_hi 1: unknown */
static atomic_uintptr_t self_lo, self_hi;
static bool (*skip_pc)(uintptr_t pc);	/* library frames to drop */
/* Bumped when the self range, skip_pc or its answers change: walks kept
 * go stale. */
static atomic_uint walk_cfg;

static _Atomic(struct depot_entry *) *buckets;
static _Atomic(struct depot_entry **) id_pages[ID_PAGES];
static atomic_uint nstacks;
static pthread_mutex_t depot_lock = PTHREAD_MUTEX_INITIALIZER;
static char *arena_cur, *arena_end;
static bool full_warned;

/* Used only for its address: it lies in our own text. */
static void self_anchor(void)
{
}

struct find_text {
	uintptr_t addr, lo, hi;
};

static int find_text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_text *ft = arg;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (ft->addr >= lo && ft->addr - lo < ph->p_memsz) {
			ft->lo = lo;
			ft->hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static bool load_libunwind(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return false;
	p_unw_backtrace = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
	if (!p_unw_backtrace) {
		dlclose(h);
		return false;
	}
	return true;
}

static bool load_libgcc(void)
{
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return false;
	p_unwind_backtrace = (ub_fn)dlsym(h, "_Unwind_Backtrace");
	p_unwind_getip = (getip_fn)dlsym(h, "_Unwind_GetIP");
	if (!p_unwind_backtrace || !p_unwind_getip) {
		p_unwind_backtrace = NULL;
		dlclose(h);
		return false;
	}
	return true;
}

static void do_init(void)
{
	struct find_text ft = { .addr = (uintptr_t)&self_anchor };
	void *b;

	if (dl_iterate_phdr(find_text_cb, &ft)) {
		atomic_store(&self_lo, ft.lo);
		atomic_store(&self_hi, ft.hi);
	} else {
		rc_warn("cannot find our own text segment; stacks may start inside rdmacheck");
	}

	b = mmap(NULL, NBUCKETS * sizeof(*buckets), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED) {
		rc_warn("stack depot: mmap failed; no stacks will be recorded");
		return;
	}
	buckets = b;
#ifdef RC_CFI
	atomic_store(&cfi, true);
#endif

#ifdef __SANITIZE_THREAD__
	/*
	 * ThreadSanitizer's build (src/tsan): libunwind's per-thread cache
	 * destructor takes a mutex after TSan has torn the exiting thread's
	 * state down, and crashes; libgcc's unwinder keeps no such state.
	 */
	if (false)
#else
	if (load_libunwind())
#endif
	{
		uw = UW_LIBUNWIND;
		load_libgcc();	/* for threads' first captures, if there */
	} else if (load_libgcc())
		uw = UW_LIBGCC;
	else
		rc_warn("neither libunwind.so.8 nor libgcc_s.so.1 loads; no stacks will be recorded");
	atomic_store_explicit(&ready, true, memory_order_release);
}

void rc_stack_init(void)
{
	pthread_once(&init_once, do_init);
}

int rc_stack_use_unwinder(const char *name)
{
	rc_stack_init();
	if (!atomic_load_explicit(&ready, memory_order_acquire))
		return -1;
	if (!strcmp(name, "libunwind")) {
		if (!p_unw_backtrace && !load_libunwind())
			return -1;
		uw = UW_LIBUNWIND;
	} else if (!strcmp(name, "libgcc")) {
		if (!p_unwind_backtrace && !load_libgcc())
			return -1;
		uw = UW_LIBGCC;
	} else if (!strcmp(name, "none")) {
		uw = UW_NONE;
	} else {
		return -1;
	}
	return 0;
}

const char *rc_stack_unwinder(void)
{
	switch (atomic_load_explicit(&uw, memory_order_relaxed)) {
	case UW_LIBUNWIND:
		return "libunwind";
	case UW_LIBGCC:
		return "libgcc";
	default:
		return "none";
	}
}

void rc_stack_set_depth(unsigned d)
{
	if (d < 1)
		d = 1;
	if (d > RC_STACK_MAX_DEPTH)
		d = RC_STACK_MAX_DEPTH;
	atomic_store_explicit(&depth, d, memory_order_relaxed);
}

void rc_stack_set_self_range(uintptr_t lo, uintptr_t hi)
{
	rc_stack_init();
	atomic_store(&self_lo, lo);
	atomic_store(&self_hi, hi);
	atomic_fetch_add(&walk_cfg, 1);
}

void rc_stack_get_self_range(uintptr_t *lo, uintptr_t *hi)
{
	rc_stack_init();
	*lo = atomic_load(&self_lo);
	*hi = atomic_load(&self_hi);
}

struct ub_state {
	uintptr_t *buf;
	unsigned n, max;
};

static _Unwind_Reason_Code ub_cb(struct _Unwind_Context *ctx, void *arg)
{
	struct ub_state *st = arg;
	uintptr_t ip = p_unwind_getip(ctx);

	if (!ip || st->n >= st->max)
		return _URC_END_OF_STACK;
	st->buf[st->n++] = ip;
	return _URC_NO_REASON;
}

/*
 * Word-wise FNV-1a over the frames, then their number and the murmur3
 * 64-bit finaliser to mix the bits.  In steps, so that a walk hashes
 * each frame as it finds it (no second pass over them).
 */
#define HASH_INIT	0xcbf29ce484222325ull

static inline uint64_t hash_step(uint64_t h, uintptr_t pc)
{
	return (h ^ pc) * 0x100000001b3ull;
}

static inline uint64_t hash_end(uint64_t h, unsigned n)
{
	h = hash_step(h, n);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static uint64_t hash_pcs(const uintptr_t *pcs, unsigned n)
{
	uint64_t h = HASH_INIT;
	unsigned i;

	for (i = 0; i < n; i++)
		h = hash_step(h, pcs[i]);
	return hash_end(h, n);
}

static void *arena_alloc(size_t sz)
{
	void *p;

	sz = (sz + 15) & ~(size_t)15;
	if ((size_t)(arena_end - arena_cur) < sz) {
		p = mmap(NULL, ARENA_CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		arena_cur = p;
		arena_end = arena_cur + ARENA_CHUNK;
	}
	p = arena_cur;
	arena_cur += sz;
	return p;
}

static struct depot_entry *chain_find(struct depot_entry *e, uint64_t h,
				      const uintptr_t *pcs, unsigned n)
{
	for (; e; e = e->next)
		if (e->hash == h && e->n == n &&
		    !memcmp(e->pcs, pcs, n * sizeof(*pcs)))
			return e;
	return NULL;
}

static rc_stack_id depot_insert(uint64_t h, const uintptr_t *pcs, unsigned n)
{
	_Atomic(struct depot_entry *) *b = &buckets[h & (NBUCKETS - 1)];
	struct depot_entry *e, **page;
	unsigned id;

	pthread_mutex_lock(&depot_lock);
	/* Another thread may have stored it since our lock-free look. */
	e = atomic_load_explicit(b, memory_order_relaxed);
	e = chain_find(e, h, pcs, n);
	if (e)
		goto out;
	id = atomic_load_explicit(&nstacks, memory_order_relaxed) + 1;
	if (id >= ID_PAGES * ID_PAGE_SIZE)
		goto fail;
	page = atomic_load_explicit(&id_pages[id >> ID_PAGE_BITS],
				    memory_order_relaxed);
	if (!page) {
		page = mmap(NULL, ID_PAGE_SIZE * sizeof(*page),
			    PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			goto fail;
		atomic_store_explicit(&id_pages[id >> ID_PAGE_BITS], page,
				      memory_order_release);
	}
	e = arena_alloc(sizeof(*e) + n * sizeof(*pcs));
	if (!e)
		goto fail;
	e->next = atomic_load_explicit(b, memory_order_relaxed);
	e->hash = h;
	e->id = id;
	e->n = n;
	memcpy(e->pcs, pcs, n * sizeof(*pcs));
	/* Publish the id first: whoever finds e may look its id up. */
	page[id & (ID_PAGE_SIZE - 1)] = e;
	atomic_store_explicit(&nstacks, id, memory_order_release);
	atomic_store_explicit(b, e, memory_order_release);
out:
	pthread_mutex_unlock(&depot_lock);
	return e->id;
fail:
	if (!full_warned)
		rc_warn("stack depot full or out of memory; new stacks are not recorded");
	full_warned = true;
	pthread_mutex_unlock(&depot_lock);
	return 0;
}

/* The hot path: lock-free lookup, the mutex only to insert. */
/* The id of pcs[0..n), whose hash_pcs() is h. */
static inline rc_stack_id depot_get_h(uint64_t h, const uintptr_t *pcs,
				      unsigned n)
{
	struct depot_entry *e;

	e = chain_find(atomic_load_explicit(&buckets[h & (NBUCKETS - 1)],
					    memory_order_acquire), h, pcs, n);
	if (RC_LIKELY(e != NULL))
		return e->id;
	return depot_insert(h, pcs, n);
}

static inline rc_stack_id depot_get(const uintptr_t *pcs, unsigned n)
{
	return depot_get_h(hash_pcs(pcs, n), pcs, n);
}

#ifndef RC_CFI	/* fp_walk asks the CFI rule cache instead */
/* The range of m holding pc in *r, or false. */
static bool in_text(const struct rc_text_map *m, uintptr_t pc, uintptr_t *r)
{
	const struct rc_text_seg *t = rc_modules_find(m, pc);

	if (!t)
		return false;
	r[0] = t->lo;
	r[1] = t->hi;
	return true;
}
#endif

/* This thread's stack, found on its first capture. */
static __attribute__((noinline)) void thread_stack_find(void)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	stack_hi = 1;
	if (!pthread_getattr_np(pthread_self(), &a)) {
		if (!pthread_attr_getstack(&a, &addr, &size) && size) {
			stack_lo = (uintptr_t)addr;
			stack_hi = stack_lo + size;
		}
		pthread_attr_destroy(&a);
	}
}

static inline bool thread_stack(uintptr_t *lo, uintptr_t *hi)
{
	if (RC_UNLIKELY(!stack_hi))
		thread_stack_find();
	*lo = stack_lo;
	*hi = stack_hi;
	return stack_hi > 1;
}

bool rc_stack_holds(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, lo, hi;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);

	/* On this thread's stack (not a signal stack), above us: mapped. */
	return thread_stack(&lo, &hi) && sp >= lo && sp < hi && a >= sp &&
	       a < hi && len <= hi - a;
}

#ifdef RC_CFI
/*
 * Per thread, the rules of the last walks' frames by frame number: a
 * capture from the call path of one before finds each frame's rule in
 * one compare instead of a hashed look in the shared cache (and fp_walk
 * its return addresses known).  Only copies of rules found in the
 * cache's first slot; all dropped once the cache is emptied (its
 * generation moved: a module was unloaded).  Never from a signal
 * handler, as all capture.
 */
#define WALK_FRAMES	(RC_STACK_MAX_DEPTH + SLACK_MAX)

struct walk_memo {
	unsigned gen;			/* rc_cfi_gen + 1; 0: not yet */
	uintptr_t pc[WALK_FRAMES];	/* 0 (rule 0): none */
	uint64_t rule[WALK_FRAMES];
	uintptr_t fp[RC_STACK_MAX_DEPTH]; /* fp_walk's, known */
};

static RC_TLS struct walk_memo memo;

static __attribute__((noinline)) void memo_reset(unsigned g)
{
	unsigned i;

	memset(memo.pc, 0, sizeof(memo.pc));
	memset(memo.rule, 0, sizeof(memo.rule));
	/* A return address truly in our text: no garbage is "known". */
	for (i = 0; i < RC_STACK_MAX_DEPTH; i++)
		memo.fp[i] = (uintptr_t)&self_anchor + 1;
	memo.gen = g + 1;
}

static inline struct walk_memo *memo_get(void)
{
	unsigned g = atomic_load_explicit(&rc_cfi_gen, memory_order_acquire);
	struct walk_memo *m = &memo;

	if (RC_UNLIKELY(memo.gen != g + 1))
		memo_reset(g);
	/* A plain pointer: no TLS offset loaded again for each frame. */
	__asm__("" : "+r"(m));
	return m;
}

/*
 * The rule of raw frame i at pc as rc_cfi_rule() gives it: 0 (pc 0 and
 * any pc not in its first slot) makes rc_cfi_apply() take the miss path.
 */
static inline __attribute__((always_inline)) uint64_t
memo_rule(struct walk_memo *m, unsigned i, uintptr_t pc)
{
	uint64_t r;

	if (RC_LIKELY(m->pc[i] == pc))
		return m->rule[i];
	r = rc_cfi_rule(pc);
	if (r) {
		m->pc[i] = pc;
		m->rule[i] = r;
	}
	return r;
}

/*
 * Per thread and capture site (a few slots), the last CFI walk from a
 * wrapper's frame: where it read each word of the stack (return
 * addresses, saved rbp) and what it found there, and the stack it gave.
 * The walk is a function of those words and of what seldom moves (the
 * rule cache's generation, the depth, the self range and skip_pc, this
 * thread's stack bounds), so while they hold, that site's next capture
 * from the same frame is the same stack: checked word by word, without
 * a rule, a hash or a depot look (the common loop that makes many
 * objects from one call path).  The rules are those of live return
 * addresses, the same however they are found; kept only while the depth
 * leaves the raw frames within LAST_STEPS.  skip_pc's answers change
 * only with rc_stack_skip_changed(), which moves walk_cfg.
 */
#define LAST_SLOTS	4
#define LAST_STEPS	32	/* raw frames: depth 16 + SLACK_MAX */

/*
 * A walk's words, in rows of a stride of raw frames: raw frame i (row
 * WF_PC), read at the CFA of its step less 8 (WF_SP), rbp after that
 * step (WF_BP) and the step's rule (WF_RULE), which read rbp at CFA
 * plus its offset when it has RC_CFI_BP_SAVED.
 */
enum { WF_PC, WF_SP, WF_BP, WF_RULE, WF_ROWS };

struct walk_last {
	uintptr_t seen, seen_ra;	/* the last capture's frame, its [1] */
	uintptr_t frame;		/* the wrapper's frame; 0: none */
	unsigned gen, cfg, d, n;	/* memo.gen, walk_cfg, depth, frames */
	rc_stack_id id;
	/*
	 * fp_walk's (fast_unwind): f holds the n words it read.  The CFI
	 * walk's rows, once kept, become n { address, word } pairs: only
	 * the words the walk depended on (keep_words).
	 */
	bool fp;
	uintptr_t f[WF_ROWS * LAST_STEPS];
};

static RC_TLS struct walk_last last[LAST_SLOTS];
static RC_TLS unsigned long cfi_repeats;

/*
 * Whether w keeps a walk of this kind (fp: fp_walk's) from frame at depth
 * d that what seldom moves still allows; sp is the capture's.
 */
static inline __attribute__((always_inline)) bool
kept_for(const struct walk_last *w, bool fp, uintptr_t frame, unsigned d,
	 uintptr_t sp)
{
	return w->frame == frame && w->d == d && w->fp == fp &&
	       w->gen == atomic_load_explicit(&rc_cfi_gen,
					      memory_order_acquire) + 1 &&
	       w->cfg == atomic_load_explicit(&walk_cfg,
					      memory_order_acquire) &&
	       frame >= sp && sp >= stack_lo && sp < stack_hi;
}

/*
 * The CFI walk's rows in w, as the { address, word } pairs it depended
 * on: each raw frame's return address, and a saved rbp only where a
 * later step takes its CFA from rbp before another step restores it
 * (most code saves none, or never reads it back: no frame pointers).
 * The rule of each frame is a function of its return address.
 */
static __attribute__((noinline)) void keep_words(struct walk_last *w)
{
	uintptr_t out[2 * 2 * LAST_STEPS];
	uint32_t need = 0;
	unsigned i, k = 0, src = 0;
	uint64_t r;

	for (i = 0; i < w->n; i++) {
		r = w->f[WF_RULE * LAST_STEPS + i];
		if (i && (r & RC_CFI_FROM_BP))
			need |= 1u << src;
		if (r & RC_CFI_BP_SAVED)
			src = i;
	}
	for (i = 0; i < w->n; i++) {
		const uintptr_t *a =
			(const uintptr_t *)w->f[WF_SP * LAST_STEPS + i];

		r = w->f[WF_RULE * LAST_STEPS + i];
		out[k++] = (uintptr_t)(a - 1);
		out[k++] = w->f[WF_PC * LAST_STEPS + i];
		if ((need >> i) & 1) {
			out[k++] = (uintptr_t)(a + (int8_t)(r >> 8));
			out[k++] = w->f[WF_BP * LAST_STEPS + i];
		}
	}
	memcpy(w->f, out, k * sizeof(*out));
	w->n = k / 2;
}

/* A walk from frame at depth d, its words just put in w, gave id. */
static inline __attribute__((always_inline)) void
keep(struct walk_last *w, bool fp, uintptr_t frame, unsigned d,
     unsigned cfg, rc_stack_id id)
{
	if (!fp)
		keep_words(w);
	w->fp = fp;
	w->gen = memo.gen;
	w->cfg = cfg;
	w->d = d;
	w->id = id;
	w->frame = frame;
}

/*
 * The stack of the walk kept in w, if it starts at frame and every word
 * it read still holds what it did (0 if not); sp is the capture's.
 */
static inline __attribute__((always_inline, no_sanitize_address))
rc_stack_id last_walk(const struct walk_last *w, uintptr_t frame,
		      unsigned d, uintptr_t sp)
{
	const uintptr_t *p = w->f, *end = w->f + 2 * w->n;
	uintptr_t diff = 0;

	if (!kept_for(w, false, frame, d, sp))
		return 0;
	/* Every pair read (all lie in this stack above frame): no branch. */
#pragma GCC unroll 4
	for (; p < end; p += 2)
		diff |= *(const uintptr_t *)p[0] ^ p[1];
	return diff ? 0 : w->id;
}

/*
 * The stack of fp_walk's walk kept in w, if it starts at frame and each
 * word it read still holds (0 if not): the walk is a function of those,
 * of the rule cache's generation (which pcs return into text), walk_cfg,
 * the depth and this thread's stack bounds.  w->f holds the words in the
 * order read, frame by frame its return address then its saved rbp, so
 * each record's address is the word before it (the first is frame).
 */
static inline __attribute__((always_inline, no_sanitize_address))
rc_stack_id last_fp_walk(const struct walk_last *w, uintptr_t frame,
			 unsigned d, uintptr_t sp)
{
	const uintptr_t *p = w->f, *end = w->f + w->n, *a;
	uintptr_t fp = frame;

	if (!kept_for(w, true, frame, d, sp))
		return 0;
	for (; p + 1 < end; p += 2) {
		a = (const uintptr_t *)fp;
		if (a[1] != p[0] || a[0] != p[1])
			return 0;
		fp = p[1];
	}
	/* A walk that stopped at a return address read no rbp after it. */
	if (p < end && ((const uintptr_t *)fp)[1] != p[0])
		return 0;
	return w->id;
}

/*
 * The slot of site for a walk from frame to be kept in, or NULL: only
 * from a call path's second capture in a row (the same frame, returning
 * to the same place), so that a walk not repeated costs what it did.
 */
static inline __attribute__((always_inline, no_sanitize_address))
struct walk_last *repeat_slot(unsigned site, uintptr_t frame, uintptr_t sp)
{
	struct walk_last *w = &last[site % LAST_SLOTS];
	uintptr_t ra = frame >= sp && stack_hi > 16 && frame <= stack_hi - 16 &&
		       !(frame & 7) ? ((const uintptr_t *)frame)[1] : 0;

	if (w->seen != frame || w->seen_ra != ra) {
		w->seen = frame;
		w->seen_ra = ra;
		return NULL;
	}
	return w;
}

/* rc_cfi_known(pc), for kept frame i of fp_walk. */
static inline __attribute__((always_inline)) bool
memo_known(struct walk_memo *m, unsigned i, uintptr_t pc)
{
	if (RC_LIKELY(m->fp[i] == pc))
		return true;
	if (rc_cfi_known_fast(pc)) {
		m->fp[i] = pc;
		return true;
	}
	return rc_cfi_slow(pc);
}
#endif

/*
 * The frame-pointer walk from frame, the wrapper's frame: { caller's
 * frame pointer, return address }.  Each frame record must lie in this
 * thread's stack above us, in increasing order, and return into
 * executable text; the walk stops at the first that does not.  Returns 0
 * when not even the first frame can be trusted, or when it is inside
 * librdmacm (built without frame pointers): the caller falls back.
 * Reads only words inside the stack, so a garbage chain cannot fault.
 * The frames' hash_pcs() in *hp.
 */
__attribute__((noinline, no_sanitize_address)) static unsigned
fp_walk(const void *frame, uintptr_t *out, unsigned max, uint64_t *hp,
	uintptr_t *kept, unsigned *nkept)
{
	uint64_t h = HASH_INIT;
	uintptr_t fp = (uintptr_t)frame, lo, hi, next, pc;
#ifdef RC_CFI
	struct walk_memo *m;
#else
	uintptr_t seg[2] = { 0, 0 };	/* the segment of the last frame */
	const struct rc_text_map *m = NULL;
#endif
	uintptr_t slo = atomic_load_explicit(&self_lo, memory_order_relaxed);
	uintptr_t shi = atomic_load_explicit(&self_hi, memory_order_relaxed);
	bool (*sp)(uintptr_t) = skip_pc;
	unsigned n = 0;

#if defined(__x86_64__) || defined(__aarch64__)
	if (!thread_stack(&lo, &hi))
		return 0;
	if (lo < (uintptr_t)__builtin_frame_address(0))
		lo = (uintptr_t)__builtin_frame_address(0);
	/* Frame records only go up: checked here, then by next > fp. */
	if (fp < lo)
		return 0;
	hi -= 2 * sizeof(uintptr_t);
#ifdef RC_CFI
	m = memo_get();
#endif
	while (n < max) {
		if (fp >= hi || (fp & (sizeof(uintptr_t) - 1)))
			break;
		pc = ((const uintptr_t *)fp)[1];
#ifdef RC_CFI
		/*
		 * What the walk read, for last_fp_walk to check; nothing for
		 * a walk that gives no frame, which leaves the slot to the
		 * CFI walk that follows it.
		 */
		if (kept && n)
			kept[(*nkept)++] = pc;
		/*
		 * The CFI rule cache knows every return address seen: no
		 * dl_iterate_phdr() (the loader's lock) on each capture.
		 */
		if (!memo_known(m, n, pc))
			break;
#else
		/* Most frames return into the segment the last one did. */
		if (pc - seg[0] >= seg[1] - seg[0]) {
			if (!m)
				m = rc_modules_current();
			if (!m || !in_text(m, pc, seg))
				break;
		}
#endif
		/* Ours or librdmacm's: no frame pointers to follow. */
		if (!n && (pc - slo < shi - slo || (sp && sp(pc))))
			return 0;
#ifdef RC_CFI
		if (kept && !n)
			kept[(*nkept)++] = pc;
#endif
		out[n++] = pc;
		h = hash_step(h, pc);
		next = ((const uintptr_t *)fp)[0];
#ifdef RC_CFI
		if (kept)
			kept[(*nkept)++] = next;
#endif
		if (next <= fp)
			break;
		fp = next;
	}
#else
	(void)fp; (void)lo; (void)hi; (void)next; (void)pc; (void)sp;
	(void)slo; (void)shi; (void)seg; (void)m; (void)max; (void)out;
	(void)kept; (void)nkept;
#endif
	*hp = hash_end(h, n);
	return n;
}

#ifdef RC_CFI
/* Before raw frame n: the words of the step that found it (by rule r). */
#define WALK_NOTE(raw, stride, n, c, r)					\
	do {								\
		if (stride) {						\
			(raw)[WF_SP * (stride) + (n)] = (c)->sp;	\
			(raw)[WF_BP * (stride) + (n)] = (c)->bp;	\
			(raw)[WF_RULE * (stride) + (n)] = (r);		\
		}							\
	} while (0)

/*
 * The CFI walk, dropping what capture() drops of unwind()'s frames (raw
 * frame 0, then those in our text, then the library's, kept when nothing
 * follows), unwinding at most d + SLACK_MAX raw frames as that loop
 * does, and no more than d kept ones.  It starts at capture()'s own
 * frame (pc, sp, bp: its registers at one instruction, raw frame 0), or
 * with frame (a wrapper's frame pointer: { rbp, return address }, as
 * fp_walk reads it) at the wrapper's caller: the frames between are all
 * ours.  Returns how many frames are kept, at raw + *first (their
 * hash_pcs() in *hp); -1 when a
 * frame cannot be stepped or a check fails: the caller then unwinds
 * with libunwind or libgcc, so a stack is never worse than theirs.
 * With a stride, each step's words go in raw's other rows (WF_*) and
 * the frames walked in *steps.
 */
static inline __attribute__((always_inline, no_sanitize_address)) int
cfi_walk_in(uintptr_t pc, uintptr_t sp, uintptr_t bp, const void *frame,
	    uintptr_t *raw, const unsigned stride, unsigned *steps,
	    unsigned d, unsigned *first, uint64_t *hp)
{
	uint64_t h = HASH_INIT;
	struct rc_cfi_cursor c = { .pc = pc, .sp = sp, .bp = bp };
	uintptr_t slo = atomic_load_explicit(&self_lo, memory_order_relaxed);
	uintptr_t shi = atomic_load_explicit(&self_hi, memory_order_relaxed);
	uintptr_t lo, hi, f = (uintptr_t)frame;
	bool (*lib)(uintptr_t) = skip_pc;
	unsigned n = 0, max = d + SLACK_MAX, k;
	int skip = -1, all = -1, st = 1;
	/* The walk from frame reads rbp first, as a step that saved it. */
	uint64_t r = RC_CFI_BP_SAVED | (uint64_t)(uint8_t)-2 << 8;
	struct walk_memo *m;

	if (!thread_stack(&lo, &hi) || sp < lo || sp >= hi)
		return -1;
	c.hi = hi;
	m = memo_get();
	if (f) {
		if (f < sp || f > hi - 16 || (f & 7))
			return -1;
		c.pc = ((const uintptr_t *)f)[1];
		c.bp = ((const uintptr_t *)f)[0];
		c.sp = f + 16;
	} else {
		raw[n++] = pc;		/* ours: dropped */
		st = rc_cfi_apply(&c, memo_rule(m, 0, pc));
		if (st <= 0)
			return st;
	}
	/* Ours, then the library's: stepped over. */
	for (;;) {
		WALK_NOTE(raw, stride, n, &c, r);
		raw[n++] = c.pc;
		if (skip < 0) {
			if (c.pc - slo >= shi - slo)
				skip = (int)n - 1;
		}
		if (skip >= 0 && !(lib && lib(c.pc))) {
			all = (int)n - 1;
			h = hash_step(h, c.pc);
			break;
		}
		if (n == max)
			break;
		r = memo_rule(m, n - 1, c.pc);
		st = rc_cfi_apply_rule(&c, &r);
		if (st <= 0) {
			if (st < 0)
				return -1;
			break;		/* the outermost frame */
		}
	}
	/* The frames kept. */
	if (all >= 0) {
		k = (unsigned)all + d < max ? (unsigned)all + d : max;
		while (n < k) {
			r = memo_rule(m, n - 1, c.pc);
			st = rc_cfi_apply_rule(&c, &r);
			if (st <= 0) {
				if (st < 0)
					return -1;
				break;
			}
			WALK_NOTE(raw, stride, n, &c, r);
			raw[n++] = c.pc;
			h = hash_step(h, c.pc);
		}
	}
	/* The last return address, unless stepped from: into text? */
	if (st > 0 && !memo_rule(m, n - 1, c.pc) && !rc_cfi_slow(c.pc))
		return -1;
	if (stride)
		*steps = n;
	if (skip < 0)
		return 0;
	*first = (unsigned)(all >= 0 ? all : skip);
	k = n - *first;
	if (k > d)
		k = d;		/* only when all < 0: not hashed yet */
	/* Kept: raw[all..n), hashed on the way, or the library's. */
	*hp = all >= 0 ? hash_end(h, k) : hash_pcs(raw + *first, k);
	return (int)k;
}

/* The walk alone. */
__attribute__((noinline, no_sanitize_address)) static int
cfi_walk(uintptr_t pc, uintptr_t sp, uintptr_t bp, const void *frame,
	 uintptr_t *raw, unsigned d, unsigned *first, uint64_t *hp)
{
	return cfi_walk_in(pc, sp, bp, frame, raw, 0, NULL, d, first, hp);
}

/* The walk from a wrapper's frame, its words kept in w (frames in w->f). */
__attribute__((noinline, no_sanitize_address)) static int
cfi_walk_kept(uintptr_t pc, uintptr_t sp, uintptr_t bp, const void *frame,
	      struct walk_last *w, unsigned d, unsigned *first, uint64_t *hp)
{
	return cfi_walk_in(pc, sp, bp, frame, w->f, LAST_STEPS, &w->n, d,
			   first, hp);
}
#endif

/* Raw frame 0 is in our exported caller: always_inline keeps it there. */
static inline __attribute__((always_inline)) unsigned
unwind(uintptr_t *raw, unsigned want)
{
	enum unwinder u = atomic_load_explicit(&uw, memory_order_relaxed);
	int got;

	if (u == UW_LIBUNWIND && RC_UNLIKELY(thread_captures < WARM_CAPTURES)) {
		thread_captures++;
		if (p_unwind_backtrace)
			u = UW_LIBGCC;
	}
	if (u == UW_LIBUNWIND) {
		got = p_unw_backtrace((void **)raw, (int)want);
		return got > 0 ? (unsigned)got : 0;
	}
	if (u == UW_LIBGCC) {
		struct ub_state st = { .buf = raw, .n = 0, .max = want };

		p_unwind_backtrace(ub_cb, &st);
		return st.n;
	}
	return 0;
}

static inline __attribute__((always_inline)) rc_stack_id
capture(unsigned site, const void *frame)
{
	uintptr_t raw[RC_STACK_MAX_DEPTH + SLACK_MAX], lo, hi;
	unsigned d, learned, pred, want, n, skip, all, need;
	bool (*sp)(uintptr_t);
	unsigned st, wmax, cnt, nst;
	atomic_uint *slot;

	if (RC_UNLIKELY(!atomic_load_explicit(&ready, memory_order_acquire))) {
		rc_stack_init();
		if (!atomic_load_explicit(&ready, memory_order_acquire))
			return 0;
	}
	d = atomic_load_explicit(&depth, memory_order_relaxed);
	if (frame && atomic_load_explicit(&fast, memory_order_relaxed)) {
		uint64_t h;
#ifdef RC_CFI
		uintptr_t f = (uintptr_t)frame;
		uintptr_t here = (uintptr_t)__builtin_frame_address(0);
		struct walk_last *w = NULL;
		unsigned cfg = 0;
		rc_stack_id id;

		/* As the CFI walk's below: kept once the path repeats. */
		if (2 * d <= RC_ARRAY_SIZE(w->f)) {
			w = &last[site % LAST_SLOTS];
			id = last_fp_walk(w, f, d, here);
			if (id) {
				cfi_repeats++;
				return id;
			}
			w = repeat_slot(site, f, here);
		}
		if (w) {
			unsigned nk = 0;

			cfg = atomic_load_explicit(&walk_cfg,
						   memory_order_acquire);
			n = fp_walk(frame, raw, d, &h, w->f, &nk);
			/* Its words written over what w kept, if any. */
			if (nk) {
				w->frame = 0;
				w->n = nk;
			}
		} else {
			n = fp_walk(frame, raw, d, &h, NULL, NULL);
		}
		if (n) {
			id = depot_get_h(h, raw, n);
			if (w && id)
				keep(w, true, f, d, cfg, id);
			return id;
		}
#else
		n = fp_walk(frame, raw, d, &h, NULL, NULL);
		if (n)
			return depot_get_h(h, raw, n);
#endif
	}
#ifdef RC_CFI
	if (atomic_load_explicit(&cfi, memory_order_relaxed) &&
	    atomic_load_explicit(&uw, memory_order_relaxed) != UW_NONE) {
		uintptr_t r_pc, r_sp, r_bp, *pcs;
		struct walk_last *w;
		unsigned first = 0, cfg = 0;
		rc_stack_id id;
		uint64_t h;
		int k;

		/* The walk starts here: pc - 1 lies in the lea. */
		__asm__ volatile("lea 0(%%rip), %0\n\t"
				 "mov %%rsp, %1\n\t"
				 "mov %%rbp, %2"
				 : "=r"(r_pc), "=r"(r_sp), "=r"(r_bp));
		w = NULL;
		if (frame && d + SLACK_MAX <= LAST_STEPS) {
			w = &last[site % LAST_SLOTS];
			id = last_walk(w, (uintptr_t)frame, d, r_sp);
			if (id) {
				cfi_walks++;
				cfi_repeats++;
				return id;
			}
			w = repeat_slot(site, (uintptr_t)frame, r_sp);
		}
		if (w) {
			/* Before the walk: a change meanwhile makes it stale. */
			cfg = atomic_load_explicit(&walk_cfg,
						   memory_order_acquire);
			w->frame = 0;
			pcs = w->f;
			k = cfi_walk_kept(r_pc, r_sp, r_bp, frame, w, d, &first,
					  &h);
		} else {
			pcs = raw;
			k = cfi_walk(r_pc, r_sp, r_bp, frame, raw, d, &first,
				     &h);
		}
		if (RC_LIKELY(k >= 0)) {
			cfi_walks++;
			id = k ? depot_get_h(h, pcs + first, (unsigned)k) : 0;
			if (w && id)
				keep(w, false, (uintptr_t)frame, d, cfg, id);
			return id;
		}
		cfi_falls++;
	}
#endif
	lo = atomic_load_explicit(&self_lo, memory_order_relaxed);
	hi = atomic_load_explicit(&self_hi, memory_order_relaxed);
	slot = &site_state[site < NSITES ? site : 0];
	st = atomic_load_explicit(slot, memory_order_relaxed);
	learned = st & 0xff;
	pred = learned ? learned : SLACK_INIT;
	for (;;) {
		want = d + pred;
		n = unwind(raw, want);
		/* raw[0] is in our caller; then skip our own callers. */
		skip = 1;
		while (skip < n && raw[skip] - lo < hi - lo)
			skip++;
		/* Then the library's frames, keeping at least one frame. */
		all = skip;
		sp = skip_pc;
		if (sp)
			while (all < n && sp(raw[all]))
				all++;
		if (all < n)
			skip = all;
		/* What this site drops; more than n when n was too few. */
		need = all < n || n < want ? all : n + SLACK_INIT;
		if (n < want || n - skip >= d || pred >= SLACK_MAX)
			break;
		/* Frames were lost: unwind again, with what we now know. */
		pred = need > pred ? need : pred + 1;
		if (pred > SLACK_MAX)
			pred = SLACK_MAX;
	}
	if (need > SLACK_MAX)
		need = SLACK_MAX;
	wmax = (st >> 8) & 0xff;
	cnt = st >> 16;
	if (need >= learned) {
		nst = need;			/* window restarts */
	} else if (cnt + 1 < SITE_WINDOW) {
		nst = learned | (need > wmax ? need : wmax) << 8 |
		      (cnt + 1) << 16;
	} else {
		nst = need > wmax ? need : wmax;	/* learn the window */
	}
	if (nst != st)
		atomic_store_explicit(slot, nst, memory_order_relaxed);
	n -= skip < n ? skip : n;
	if (n > d)
		n = d;
	if (!n)
		return 0;
	return depot_get(raw + skip, n);
}

/* noinline, and the unwinder called inline: raw frame 0 is in here. */
__attribute__((noinline)) rc_stack_id rc_stack_capture(void)
{
	return capture(0, NULL);
}

__attribute__((noinline)) rc_stack_id rc_stack_capture_at(unsigned site,
							   const void *frame)
{
	return capture(site, frame);
}

void rc_stack_set_cfi(bool on)
{
#ifdef RC_CFI
	rc_stack_init();
	atomic_store(&cfi, on);
#else
	(void)on;
#endif
}

bool rc_stack_cfi(void)
{
	return atomic_load(&cfi);
}

void rc_stack_cfi_counts(unsigned long *walks, unsigned long *fallbacks)
{
	*walks = cfi_walks;
	*fallbacks = cfi_falls;
}

unsigned long rc_stack_cfi_repeats(void)
{
#ifdef RC_CFI
	return cfi_repeats;
#else
	return 0;
#endif
}

void rc_stack_set_fast(bool on)
{
	atomic_store_explicit(&fast, on, memory_order_relaxed);
}

void rc_stack_set_skip(bool (*fn)(uintptr_t pc))
{
	skip_pc = fn;
	atomic_fetch_add(&walk_cfg, 1);
}

void rc_stack_skip_changed(void)
{
	atomic_fetch_add(&walk_cfg, 1);
}

rc_stack_id rc_stack_intern(const uintptr_t *pcs, unsigned n)
{
	if (!n || !pcs)
		return 0;
	if (n > RC_STACK_MAX_DEPTH)
		n = RC_STACK_MAX_DEPTH;
	rc_stack_init();
	if (!atomic_load_explicit(&ready, memory_order_acquire) || !buckets)
		return 0;
	return depot_get(pcs, n);
}

/* ---- the stack a fatal signal interrupted ----------------------------- */

/*
 * One slot: lifecycle.c reports one crash at a time.  Written before the
 * id is handed out, read by the writers that id goes to.
 */
static uintptr_t sig_pcs[RC_STACK_MAX_DEPTH];
static unsigned sig_n;

struct sig_cursor {
	uintptr_t pc, sp, bp;
};

/*
 * A word of the interrupted thread's memory, which may be anything: its
 * stack may have overflowed, a frame pointer may be garbage.  The kernel
 * checks the address (EFAULT, no SIGSEGV); where it may not be asked
 * (seccomp), only this thread's stack as a capture found it is read.
 */
static bool sig_peek(uintptr_t a, uintptr_t *v)
{
	struct iovec local = { v, sizeof(*v) };
	struct iovec remote = { (void *)a, sizeof(*v) };
	ssize_t n;
	int saved = errno;

	if (a & (sizeof(*v) - 1))
		return false;
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n < 0 && (errno == ENOSYS || errno == EPERM) && stack_hi > 1 &&
	    a >= stack_lo && a <= stack_hi - sizeof(*v)) {
		*v = *(const uintptr_t *)a;
		n = sizeof(*v);
	}
	errno = saved;
	return n == sizeof(*v);
}

/*
 * Whether pc - 1 lies in a loaded object's text, by the last map a
 * capture made (never made again here: dl_iterate_phdr locks).  Without
 * a map, any pc above the first page passes.
 */
static const struct rc_text_seg *sig_text(uintptr_t pc)
{
	static const struct rc_text_seg any;
	const struct rc_text_map *m = rc_modules_last();

	if (pc < 4096)
		return NULL;
	return m ? rc_modules_find(m, pc - 1) : &any;
}

/* Frame pointers: the record at bp holds the caller's bp and pc. */
static bool sig_fp_step(struct sig_cursor *c)
{
	uintptr_t bp, pc;

	if (c->bp < c->sp || c->bp > UINTPTR_MAX - 16 ||
	    !sig_peek(c->bp, &bp) || !sig_peek(c->bp + 8, &pc))
		return false;
	c->sp = c->bp + 16;
	c->bp = bp;
	c->pc = pc;
	return true;
}

#ifdef RC_CFI
/*
 * The rule for key (a return address; the faulting pc plus one): the
 * cache's, else parsed from a module the last map knows whose CFI
 * segment is still mapped (msync() says so; an object unloaded since
 * the map was made has none), never stored.  0 when unknown.
 */
static uint64_t sig_rule(uintptr_t key)
{
	uint64_t r = rc_cfi_cached(key);
	const struct rc_text_map *m;
	const struct rc_text_seg *t;
	struct rc_cfi_module mod;
	uintptr_t lo;

	if (r)
		return r;
	m = rc_modules_last();
	t = m ? rc_modules_find(m, key - 1) : NULL;
	if (!t || !t->hdr)
		return 0;
	lo = t->hdr_lo & ~(uintptr_t)4095;
	if (msync((void *)lo, t->hdr_hi - lo, MS_ASYNC))
		return 0;
	mod.text_lo = t->lo;
	mod.text_hi = t->hi;
	mod.hdr = t->hdr;
	mod.lo = t->hdr_lo;
	mod.hi = t->hdr_hi;
	mod.subs = m->subs;
	return rc_cfi_parse(key, &mod);
}

/* rc_cfi_apply_rule(), every word through sig_peek: 1, 0 (outermost) or
 * -1 (this rule cannot step it). */
static int sig_cfi_step(struct sig_cursor *c, uint64_t r)
{
	uintptr_t cfa, bp = c->bp, pc;

	if (r & RC_CFI_LAST)
		return 0;
	if (!(r & RC_CFI_STEP))
		return -1;
	cfa = ((r & RC_CFI_FROM_BP) ? c->bp : c->sp) +
	      (int64_t)(int32_t)(r >> 32);
	if (cfa < c->sp + 8)
		return -1;
	if ((r & RC_CFI_BP_SAVED) &&
	    (cfa + (intptr_t)(int8_t)(r >> 8) * 8 < c->sp ||
	     !sig_peek(cfa + (intptr_t)(int8_t)(r >> 8) * 8, &bp)))
		return -1;
	if (!sig_peek(cfa - 8, &pc))
		return -1;
	c->sp = cfa;
	c->bp = bp;
	c->pc = pc;
	return 1;
}
#endif

/*
 * One frame up: by its CFI rule, else by frame pointers; the first frame
 * is looked up at its pc (the instruction that faulted, not a return
 * address), and when that pc is in no text (a call through a bad
 * pointer) its caller's return address is the word at sp.  False at the
 * outermost frame or when no step is sound.
 */
static bool sig_step(struct sig_cursor *c, bool first)
{
	uintptr_t sp = c->sp, pc;
#ifdef RC_CFI
	int st = sig_cfi_step(c, sig_rule(first ? c->pc + 1 : c->pc));

	if (st == 0)
		return false;
	if (st < 0 && first && !sig_text(c->pc + 1) &&
	    sig_peek(c->sp, &pc) && sig_text(pc)) {
		c->pc = pc;
		c->sp += 8;
	} else if (st < 0 && !sig_fp_step(c)) {
		return false;
	}
#else
	if (first && !sig_text(c->pc + 1) && sig_peek(c->sp, &pc) &&
	    sig_text(pc)) {
		c->pc = pc;
		c->sp += sizeof(pc);
	} else if (!sig_fp_step(c)) {
		return false;
	}
#endif
	/* Up the stack, into text. */
	return c->sp > sp && sig_text(c->pc);
}

rc_stack_id rc_stack_capture_signal(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	unsigned d = atomic_load_explicit(&depth, memory_order_relaxed);
	struct sig_cursor c;
	unsigned n = 0;

	if (!uc)
		return 0;
#if defined(__x86_64__)
	c.pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	c.sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	c.bp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
	c.pc = (uintptr_t)uc->uc_mcontext.pc;
	c.sp = (uintptr_t)uc->uc_mcontext.sp;
	c.bp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
	/* No registers we know how to read: no stack. */
	return 0;
#endif
	do
		sig_pcs[n++] = c.pc;
	while (n < d && sig_step(&c, n == 1));
	__atomic_store_n(&sig_n, n, __ATOMIC_RELEASE);
	return RC_STACK_SIGNAL;
}

static struct depot_entry *id_to_entry(rc_stack_id id)
{
	struct depot_entry **page;

	if (!id || id > atomic_load_explicit(&nstacks, memory_order_acquire))
		return NULL;
	page = atomic_load_explicit(&id_pages[id >> ID_PAGE_BITS],
				    memory_order_acquire);
	return page ? page[id & (ID_PAGE_SIZE - 1)] : NULL;
}

unsigned rc_stack_frames(rc_stack_id id, const uintptr_t **pcs)
{
	struct depot_entry *e;

	if (id == RC_STACK_SIGNAL) {
		*pcs = sig_pcs;
		return __atomic_load_n(&sig_n, __ATOMIC_ACQUIRE);
	}
	e = id_to_entry(id);

	if (!e) {
		*pcs = NULL;
		return 0;
	}
	*pcs = e->pcs;
	return e->n;
}

unsigned rc_stack_depot_size(void)
{
	return atomic_load_explicit(&nstacks, memory_order_acquire);
}

void rc_stack_atfork_child(void)
{
	/* The parent's locks may have been held by a thread that is gone. */
	pthread_mutex_init(&depot_lock, NULL);
	rc_modules_atfork_child();
#ifdef RC_CFI
	rc_cfi_atfork_child();
#endif
}

/*
 * stack.c - stack capture and the stack depot.
 *
 * Capture: libunwind's unw_backtrace() from a dlopen(RTLD_LOCAL)ed
 * libunwind.so.8 (never linked: it exports backtrace() and the _Unwind_*
 * ABI; never an unw_step loop: a global lock and 2 syscalls per frame),
 * else libgcc's _Unwind_Backtrace() from an explicit libgcc_s.so.1
 * handle.  Leading frames inside our own text ("self range") are dropped,
 * so frame #0 is the caller of the intercepted function.
 *
 * Depot: a fixed array of hash buckets, each a chain of immutable entries
 * carved from mmap()ed arena chunks.  Lookups are lock-free (acquire loads
 * of published pointers); inserts take one mutex, so a stack is stored once
 * and ids are dense.  Id -> entry is a two-level table of mmap()ed pages.
 * Nothing is ever freed.  Capture is not async-signal-safe (libunwind's
 * per-thread cache, our mutex): never from a signal handler.
 * rc_stack_frames() is lock-free and may be.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"		/* _GNU_SOURCE: dladdr, dl_iterate_phdr */
#elif !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unwind.h>

#include "rdmacheck.h"
#include "stack.h"

/* Raw frames requested beyond the depth, to allow for our own frames. */
#define SLACK_INIT	3
#define SLACK_MAX	16

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
static atomic_uint slack = SLACK_INIT;
static atomic_uintptr_t self_lo, self_hi;
static bool (*skip_pc)(uintptr_t pc);	/* library frames to drop */

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
		uw = UW_LIBUNWIND;
	else if (load_libgcc())
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

/* Word-wise FNV-1a, then the murmur3 64-bit finaliser to mix the bits. */
static uint64_t hash_pcs(const uintptr_t *pcs, unsigned n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	unsigned i;

	for (i = 0; i < n; i++) {
		h ^= pcs[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
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
static inline rc_stack_id depot_get(const uintptr_t *pcs, unsigned n)
{
	uint64_t h = hash_pcs(pcs, n);
	struct depot_entry *e;

	e = chain_find(atomic_load_explicit(&buckets[h & (NBUCKETS - 1)],
					    memory_order_acquire), h, pcs, n);
	if (RC_LIKELY(e != NULL))
		return e->id;
	return depot_insert(h, pcs, n);
}

/*
 * noinline and calling the unwinder directly: raw frame 0 is then always
 * inside this function, whatever the unwinder and the build.
 */
__attribute__((noinline)) rc_stack_id rc_stack_capture(void)
{
	uintptr_t raw[RC_STACK_MAX_DEPTH + SLACK_MAX], lo, hi;
	unsigned d, want, n, skip, extra;
	bool (*sp)(uintptr_t);
	enum unwinder u;
	int got;

	if (RC_UNLIKELY(!atomic_load_explicit(&ready, memory_order_acquire))) {
		rc_stack_init();
		if (!atomic_load_explicit(&ready, memory_order_acquire))
			return 0;
	}
	d = atomic_load_explicit(&depth, memory_order_relaxed);
	lo = atomic_load_explicit(&self_lo, memory_order_relaxed);
	hi = atomic_load_explicit(&self_hi, memory_order_relaxed);
again:
	extra = atomic_load_explicit(&slack, memory_order_relaxed);
	want = d + extra;
	u = atomic_load_explicit(&uw, memory_order_relaxed);
	if (u == UW_LIBUNWIND) {
		got = p_unw_backtrace((void **)raw, (int)want);
		n = got > 0 ? (unsigned)got : 0;
	} else if (u == UW_LIBGCC) {
		struct ub_state st = { .buf = raw, .n = 0, .max = want };

		p_unwind_backtrace(ub_cb, &st);
		n = st.n;
	} else {
		return 0;
	}

	/* raw[0] is in this function; then skip our own callers. */
	skip = 1;
	while (skip < n && raw[skip] - lo < hi - lo)
		skip++;
	/* Then the library's frames, keeping at least one frame. */
	sp = skip_pc;
	if (sp) {
		unsigned s2 = skip;

		while (s2 < n && sp(raw[s2]))
			s2++;
		if (s2 < n)
			skip = s2;
	}
	if (skip > extra && n == want && extra < SLACK_MAX) {
		/* Too little slack: frames were lost.  Learn, retry. */
		extra = skip + 2 < SLACK_MAX ? skip + 2 : SLACK_MAX;
		atomic_store_explicit(&slack, extra, memory_order_relaxed);
		goto again;
	}
	n -= skip < n ? skip : n;
	if (n > d)
		n = d;
	if (!n)
		return 0;
	return depot_get(raw + skip, n);
}

void rc_stack_set_skip(bool (*fn)(uintptr_t pc))
{
	skip_pc = fn;
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
	struct depot_entry *e = id_to_entry(id);

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
	/* The parent's lock may have been held by a thread that is gone. */
	pthread_mutex_init(&depot_lock, NULL);
}

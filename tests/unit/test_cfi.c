/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_cfi.c - unit tests of the CFI unwinder (src/unwind/unwind_cfi.c, its
 * walk in src/unwind/stack.c): the same frames as libunwind's unw_backtrace,
 * through frames of every kind it meets (cfi_chain.h), in a dlopen()ed library,
 * in a thread, after the library was unloaded and loaded elsewhere; and a
 * corrupt stack or a frame it cannot step makes it hand the capture to
 * libunwind, without a crash; and the walk from a fatal signal's context
 * (rc_stack_capture_signal) gives the faulting pc and then the frames a capture
 * there gives.  x86_64 only (elsewhere: skipped).
 *
 * Each chain ends in fake_call(), in the section "rc_test_shim" that
 * main() makes the self range (as test_stack.c does): it captures twice
 * from the same frame, with the CFI walk and with libunwind, so equal
 * frames are equal depot ids.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#elif !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <check.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/rdmacheck.h"
#include "unwind/stack.h"
#include "unwind/unwind_cfi.h"
#include "cfi_chain.h"

#ifndef RC_CFI
int main(void)
{
	puts("SKIP: the CFI unwinder is x86_64 only");
	return 77;
}
#else
extern char __start_rc_test_shim[], __stop_rc_test_shim[];

/*
 * What fake_call() saw: the captures by the CFI walk from the capture's
 * own frame and from fake_call()'s frame (as a wrapper gives it), by
 * libunwind, and how this thread's walks went meanwhile.
 */
struct seen {
	rc_stack_id cfi, cfi_at, uw;
	unsigned long walks, falls, repeats;
};
static __thread struct seen seen;
static uintptr_t (*volatile plugin_fn)(const char *, int, cfi_next_fn);
static void *plugin;
static uintptr_t fake_frames[64];	/* zeros: libunwind stops at them */

__attribute__((section("rc_test_shim"))) CFI_NOINLINE uintptr_t
fake_call(void)
{
	unsigned long w0, f0, w1, f1, r0 = rc_stack_cfi_repeats();

	rc_stack_cfi_counts(&w0, &f0);
	rc_stack_set_cfi(true);
	seen.cfi = rc_stack_capture();
	seen.cfi_at = rc_stack_capture_at(1, __builtin_frame_address(0));
	rc_stack_cfi_counts(&w1, &f1);
	seen.repeats = rc_stack_cfi_repeats() - r0;
	rc_stack_set_cfi(false);
	seen.uw = rc_stack_capture();
	rc_stack_set_cfi(true);
	seen.walks = w1 - w0;
	seen.falls = f1 - f0;
	return seen.cfi;
}

/* 'f': a frame-pointer frame (this file is built with them). */
static CFI_NOINLINE uintptr_t fp_step(const char *path, int i)
{
	uintptr_t r = cfi_next(path, i + 1);

	CFI_KEEP(r);
	return r + 1;
}

/* 'R', 'B' are sound while this is set (test_repeat_spoiled). */
static volatile bool steps_sound;

/* 'R': the return address of this frame is wrong while it captures. */
static CFI_NOINLINE uintptr_t bad_ra_step(const char *path, int i)
{
	uintptr_t *fp = __builtin_frame_address(0), saved = fp[1], r;

	if (!steps_sound)
		fp[1] = (uintptr_t)&fake_frames[8]; /* readable, not text */
	__asm__ volatile("" ::: "memory");
	r = cfi_next(path, i + 1);
	CFI_KEEP(r);
	fp[1] = saved;
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

/* 'B': the caller's rbp saved by this frame is wrong while it captures. */
static CFI_NOINLINE uintptr_t bad_bp_step(const char *path, int i)
{
	uintptr_t *fp = __builtin_frame_address(0), saved = fp[0], r;

	if (!steps_sound)
		fp[0] = (uintptr_t)&fake_frames[16];
	__asm__ volatile("" ::: "memory");
	r = cfi_next(path, i + 1);
	CFI_KEEP(r);
	fp[0] = saved;
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

/*
 * test_signal: the end of a path faults instead of capturing (1: a store
 * through NULL, 2: a call through a NULL pointer), after a capture of
 * its own stack to compare with the signal's.
 */
static volatile int fault_kind;
static sigjmp_buf fault_env;
static rc_stack_id fault_id, fault_before;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	fault_id = rc_stack_capture_signal(uc);
	siglongjmp(fault_env, 1);
}

CFI_NOINLINE uintptr_t fault_call(void)
{
	volatile int *volatile p = NULL;
	void (*volatile fn)(void) = NULL;

	fault_before = rc_stack_capture();
	if (fault_kind == 2)
		fn();
	*p = 1;
	return 0;
}

CFI_NOINLINE uintptr_t cfi_next(const char *path, int i)
{
	uintptr_t r;

	switch (path[i]) {
	case 'f': r = fp_step(path, i); break;
	case 'o': r = cfi_omit_step(path, i); break;
	case 'a': r = cfi_alloca_step(path, i); break;
	case 'r': r = cfi_realign_step(path, i); break;
	case 'x': r = cfi_drap_step(path, i); break;
	case 'p': r = plugin_fn(path, i, cfi_next); break;
	case 'R': r = bad_ra_step(path, i); break;
	case 'B': r = bad_bp_step(path, i); break;
	default: r = fault_kind ? fault_call() : fake_call(); break;
	}
	CFI_KEEP(r);
	return r;
}

static const char *plugin_path(void)
{
	static char buf[PATH_MAX];
	const char *top = getenv("top_builddir");

	snprintf(buf, sizeof(buf), "%s/tests/unit/.libs/cfi_plugin.so",
		 top ? top : ".");
	return buf;
}

static void plugin_load(void)
{
	plugin = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(plugin, "dlopen: %s", dlerror());
	plugin_fn = (uintptr_t (*)(const char *, int, cfi_next_fn))
		dlsym(plugin, "cfi_plugin_step");
	ck_assert_ptr_nonnull(plugin_fn);
}

static void print_stack(const char *what, rc_stack_id id)
{
	const uintptr_t *pcs;
	unsigned n = rc_stack_frames(id, &pcs), i;
	Dl_info di;

	fprintf(stderr, "%s (%u frames):\n", what, n);
	for (i = 0; i < n; i++) {
		if (dladdr((void *)(pcs[i] - 1), &di) && di.dli_sname)
			fprintf(stderr, "  %#lx %s+%#lx\n",
				(unsigned long)pcs[i], di.dli_sname,
				(unsigned long)(pcs[i] -
						(uintptr_t)di.dli_saddr));
		else
			fprintf(stderr, "  %#lx\n", (unsigned long)pcs[i]);
	}
}

/* A thread's first captures use libgcc: past them, libunwind's frames. */
static void warm_up(void)
{
	unsigned i;

	rc_stack_set_cfi(false);
	for (i = 0; i < 8; i++)
		rc_stack_capture();
	rc_stack_set_cfi(true);
}

/*
 * Run path; both captures must have the same frames, at least min of
 * them; falls: whether the CFI walk had to hand the capture over.
 */
static void check_path(const char *path, unsigned min, bool falls)
{
	const uintptr_t *pcs;

	memset(&seen, 0, sizeof(seen));
	cfi_next(path, 0);
	if (seen.cfi != seen.uw || seen.cfi_at != seen.uw) {
		print_stack("CFI walk", seen.cfi);
		print_stack("CFI walk from the frame", seen.cfi_at);
		print_stack("libunwind", seen.uw);
	}
	ck_assert_uint_ne(seen.cfi, 0);
	ck_assert_msg(seen.cfi == seen.uw, "path %s: other frames", path);
	ck_assert_msg(seen.cfi_at == seen.uw,
		      "path %s: other frames from the frame", path);
	ck_assert_uint_ge(rc_stack_frames(seen.cfi, &pcs), min);
	if (falls) {
		ck_assert_msg(seen.falls == 2, "path %s: no fallback", path);
		ck_assert_msg(!seen.repeats, "path %s: repeated", path);
	} else {
		ck_assert_msg(seen.walks == 2 && seen.falls == 0,
			      "path %s: the CFI walk did not make it", path);
	}
}

START_TEST(test_chains)
{
	static const char *const paths[] = {
		"", "f", "o", "a", "r", "ffff", "oooo", "aaaa", "rrrr",
		"fofaorfo", "ooaaoorrfoo", "arararar",
		/* Deeper than the 64 frames kept. */
		"oooooooooooooooooooooooooooooooooooooooooooooooo",
		"ffffffffffooooooooooaaaaaaaaaarrrrrrrrrrffffffffff",
	};
	unsigned i;

	rc_stack_set_depth(RC_STACK_MAX_DEPTH);
	warm_up();
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		/* Twice: the second walk is all cache hits. */
		check_path(paths[i], strlen(paths[i]) + 1, false);
		check_path(paths[i], strlen(paths[i]) + 1, false);
	}
}
END_TEST

/*
 * A round of run_rounds(): before it, hook(j) sets what round j does
 * (steps_sound, the library's range) and what check_path() expects of
 * it (the least frames, a fallback); after it, whether its capture from
 * the frame repeated a kept walk (src/unwind/stack.c, last_walk) and its
 * frames.
 */
struct round {
	unsigned min;
	bool falls;
	unsigned long repeats;
	rc_stack_id at;
};
#define ROUNDS_MAX 8
static struct round rounds[ROUNDS_MAX];

/*
 * Run path n times from one call site: the stack each round sees is the
 * same but for what the hook changes (a loop unrolled or split by the
 * compiler would call from several places: n is opaque, and the body
 * does the same each round).
 */
static CFI_NOINLINE void run_rounds(const char *path, unsigned n,
				    void (*hook)(unsigned j))
{
	unsigned j;

	__asm__("" : "+r"(n));
	for (j = 0; j < n && j < ROUNDS_MAX; j++) {
		hook(j);
		check_path(path, rounds[j].min, rounds[j].falls);
		rounds[j].repeats = seen.repeats;
		rounds[j].at = seen.cfi_at;
	}
}

static void hook_plain(unsigned j)
{
	rounds[j].min = 1;
	rounds[j].falls = false;
}

/*
 * At the default depth a site's capture from the same frame over the
 * same stack repeats its last walk: the same frames as libunwind's,
 * from the third time on without a step (a walk is kept when the last
 * capture was from the same frame, returning to the same place: the
 * second of a new path, or its first when the last path's frame was
 * there too).
 */
START_TEST(test_repeat)
{
	static const char *const paths[] = {
		"", "f", "o", "a", "r", "fofaorfo", "arararar",
		"ffffffffffooooooooooaaaaaaaaaarrrrrrrrrrffffffffff",
	};
	unsigned i, j;

	rc_stack_set_depth(16);
	warm_up();
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		run_rounds(paths[i], 4, hook_plain);
		for (j = 0; j < 4; j++)
			ck_assert_msg(j == 1 || rounds[j].repeats == (j > 1),
				      "path %s: repeated %lu at %u", paths[i],
				      rounds[j].repeats, j);
	}
	/* Another depth: walked again. */
	rc_stack_set_depth(8);
	run_rounds(paths[5], 1, hook_plain);
	ck_assert_uint_eq(rounds[0].repeats, 0);
}
END_TEST

/* Sound but for round 3. */
static void hook_spoil(unsigned j)
{
	steps_sound = j != 3;
	rounds[j].min = steps_sound ? 4 : 2;
	rounds[j].falls = !steps_sound;
}

/*
 * A return address, or a saved rbp that only the frames above depend
 * on, changed since the walk was kept: not repeated; the walk finds the
 * change and hands the capture over, as it does the first time.
 */
START_TEST(test_repeat_spoiled)
{
	static const char *const paths[] = { "fRf", "aBf", "oooBooo" };
	unsigned i, j;

	rc_stack_set_depth(16);
	warm_up();
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		run_rounds(paths[i], 6, hook_spoil);
		for (j = 0; j < 6; j++)
			ck_assert_msg(j == 1 || j == 4 || rounds[j].repeats ==
				      (j == 2 || j == 5),
				      "path %s: repeated %lu at %u", paths[i],
				      rounds[j].repeats, j);
	}
}
END_TEST

/* The library's range, for test_repeat_skip: empty at first. */
static uintptr_t lib_lo, lib_hi;

static bool lib_pc(uintptr_t pc)
{
	return pc - lib_lo < lib_hi - lib_lo;
}

/* From round 3 on, the function that frame #0 returns into is the
 * library's (as interpose.c says when its ranges grow). */
static void hook_grow(unsigned j)
{
	const uintptr_t *pcs;
	Dl_info di;

	hook_plain(j);
	rounds[j].min = 2;
	if (j != 3)
		return;
	ck_assert_uint_ge(rc_stack_frames(rounds[2].at, &pcs), 1);
	ck_assert(dladdr((void *)(pcs[0] - 1), &di));
	ck_assert_ptr_eq(di.dli_saddr, (void *)cfi_next);
	lib_lo = (uintptr_t)di.dli_saddr;
	lib_hi = pcs[0] + 1;
	rc_stack_skip_changed();
}

/*
 * A frame the walk kept because it was not the library's is now: not
 * repeated, dropped as libunwind's capture drops it.
 */
START_TEST(test_repeat_skip)
{
	const uintptr_t *pcs;
	unsigned j;

	rc_stack_set_depth(16);
	rc_stack_set_skip(lib_pc);
	warm_up();
	run_rounds("ff", 5, hook_grow);
	for (j = 0; j < 5; j++) {
		ck_assert_msg(j == 1 || rounds[j].repeats ==
			      (j == 2 || j == 4),
			      "repeated %lu at %u", rounds[j].repeats, j);
		ck_assert_uint_ge(rc_stack_frames(rounds[j].at, &pcs), 2);
		ck_assert(j < 3 || !lib_pc(pcs[0]));
	}
	rc_stack_set_skip(NULL);
}
END_TEST

/*
 * fast_unwind=1 where the frame-pointer walk gives up at the first frame
 * (the library's, as a call librdmacm makes to its own export): the CFI
 * walk that follows repeats as it does without fast_unwind, since the
 * walk that gave nothing left the kept walk alone.
 */
START_TEST(test_repeat_fast_fallback)
{
	const uintptr_t *pcs;
	Dl_info di;
	unsigned j;

	rc_stack_set_depth(16);
	warm_up();
	run_rounds("ff", 1, hook_plain);
	ck_assert_uint_ge(rc_stack_frames(rounds[0].at, &pcs), 1);
	ck_assert(dladdr((void *)(pcs[0] - 1), &di));
	lib_lo = (uintptr_t)di.dli_saddr;
	lib_hi = pcs[0] + 1;
	rc_stack_set_skip(lib_pc);
	rc_stack_set_fast(true);
	run_rounds("ff", 4, hook_plain);
	rc_stack_set_fast(false);
	rc_stack_set_skip(NULL);
	lib_lo = lib_hi = 0;
	for (j = 0; j < 4; j++)
		ck_assert_msg(j == 1 || rounds[j].repeats == (j > 1),
			      "repeated %lu at %u", rounds[j].repeats, j);
}
END_TEST

/* The depth cut: exactly the first frames of the full stack. */
START_TEST(test_depths)
{
	static const unsigned depths[] = { 1, 2, 3, 16, 40 };
	unsigned i;

	warm_up();
	for (i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		rc_stack_set_depth(depths[i]);
		check_path("foarfoarfoarfoarfoarfoarfoarfoar", depths[i],
			   false);
	}
}
END_TEST

START_TEST(test_plugin)
{
	rc_stack_set_depth(RC_STACK_MAX_DEPTH);
	plugin_load();
	warm_up();
	check_path("p", 2, false);
	check_path("fpopafpr", 9, false);
	check_path("ppppppppoooooooo", 17, false);
}
END_TEST

static void *thread_main(void *arg)
{
	(void)arg;
	warm_up();
	check_path("fopapr", 7, false);
	check_path("oooooooooooooooooooopoooo", 26, false);
	return NULL;
}

/* In a thread: its own stack bounds, start_thread and clone3 below. */
START_TEST(test_thread)
{
	pthread_t t;

	rc_stack_set_depth(RC_STACK_MAX_DEPTH);
	plugin_load();
	ck_assert_int_eq(pthread_create(&t, NULL, thread_main, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}
END_TEST

/* The extent of the object that holds addr. */
struct span {
	uintptr_t addr, lo, hi;
};

static int span_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct span *s = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0, a;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (s->addr < lo || s->addr >= hi)
		return 0;
	s->lo = lo & ~(uintptr_t)4095;
	s->hi = (hi + 4095) & ~(uintptr_t)4095;
	return 1;
}

/*
 * A return address in libc's text that hashes to the cache's slot 0,
 * looked up: where pc 0 would look.  False if libc has none (1 in 8192
 * of its addresses does).
 */
static bool fill_slot0(void)
{
	uintptr_t pc = (uintptr_t)&fprintf, end = pc + (1u << 20);

	for (; pc < end; pc++)
		if (!rc_cfi_hash(pc) && rc_cfi_known(pc))
			return true;
	return false;
}

/*
 * Unloaded and loaded again at another address (the old one is kept
 * taken): the cache is emptied, and the new frames are right.  An
 * emptied slot keeps its rule: pc 0 (garbage) must still find none.
 */
START_TEST(test_reload)
{
	struct span old = { 0 };
	unsigned resets;
	void *block;

	rc_stack_set_depth(RC_STACK_MAX_DEPTH);
	plugin_load();
	warm_up();
	check_path("fpf", 4, false);
	old.addr = (uintptr_t)plugin_fn;
	ck_assert(dl_iterate_phdr(span_cb, &old));
	ck_assert(fill_slot0());
	resets = rc_cfi_resets();
	ck_assert_int_eq(dlclose(plugin), 0);
	ck_assert_ptr_null(dlopen(plugin_path(), RTLD_NOW | RTLD_NOLOAD));
	block = mmap((void *)old.lo, old.hi - old.lo, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert(block == (void *)old.lo);
	plugin_load();
	ck_assert((uintptr_t)plugin_fn - old.lo >= old.hi - old.lo);
	check_path("fpf", 4, false);
	check_path("ofpaop", 7, false);
	ck_assert_uint_gt(rc_cfi_resets(), resets);
	ck_assert_uint_eq(rc_cfi_rule(0), 0);
	ck_assert(!rc_cfi_known(0));
	munmap(block, old.hi - old.lo);
}
END_TEST

/* A CFA expression: handed to libunwind, which can; each time. */
START_TEST(test_unsupported)
{
	rc_stack_set_depth(RC_STACK_MAX_DEPTH);
	warm_up();
	check_path("fxf", 4, true);
	check_path("fxf", 4, true);
	/* Above the frame: the walk stops in time, nothing to hand over. */
	rc_stack_set_depth(2);
	check_path("ooxf", 2, false);
}
END_TEST

/* A return address into data, a saved rbp into data: no crash. */
START_TEST(test_corrupt)
{
	rc_stack_set_depth(RC_STACK_MAX_DEPTH);
	warm_up();
	check_path("fRf", 2, true);
	check_path("aBf", 2, true);
	check_path("oooBooo", 4, true);
	/* Still right once the stack is sound again. */
	check_path("fof", 4, false);
}
END_TEST

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/*
 * rc_cfi_parse() on garbage, in a segment between PROT_NONE pages (a
 * byte read outside it faults): random bytes; then a sound header,
 * table, CIE and FDE around random lengths and CFA programs, so that
 * every instruction's bounds are tried.  Every answer must be a rule.
 */
/*
 * From a fault's ucontext: the faulting pc itself (in fault_call; for a
 * call through NULL, 0 and then the call's return address), then the
 * callers a capture in fault_call found, through frames with and
 * without frame pointers, their rules cached or not.
 */
START_TEST(test_signal)
{
	static const char *const paths[] = {
		"", "f", "o", "a", "r", "oooo", "fofaorfo", "arararar",
	};
	const uintptr_t *sp, *bp;
	struct sigaction sa;
	unsigned i, k, n, m, skip;
	uintptr_t at;
	Dl_info di;
	int kind;

	rc_stack_set_depth(RC_STACK_MAX_DEPTH);
	warm_up();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	for (kind = 1; kind <= 2; kind++)
		for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			fault_kind = kind;
			fault_id = fault_before = 0;
			if (!sigsetjmp(fault_env, 1)) {
				cfi_next(paths[i], 0);
				ck_abort_msg("path %s: no fault", paths[i]);
			}
			fault_kind = 0;
			ck_assert_uint_eq(fault_id, RC_STACK_SIGNAL);
			n = rc_stack_frames(fault_id, &sp);
			m = rc_stack_frames(fault_before, &bp);
			skip = kind == 2 ? 2 : 1;
			ck_assert_msg(n >= skip + strlen(paths[i]) + 2 && m > 1,
				      "path %s: %u frames", paths[i], n);
			if (kind == 2)
				ck_assert_uint_eq(sp[0], 0);
			/* The faulting pc is looked up as is, not at pc - 1. */
			at = kind == 2 ? sp[1] - 1 : sp[0];
			ck_assert(dladdr((void *)at, &di));
			ck_assert_ptr_nonnull(di.dli_sname);
			ck_assert_str_eq(di.dli_sname, "fault_call");
			for (k = 1; k < m && k - 1 + skip < n; k++)
				if (sp[k - 1 + skip] != bp[k]) {
					print_stack("capture", fault_before);
					ck_abort_msg("path %s, kind %d: frame %u differs",
						     paths[i], kind, k);
				}
		}
}
END_TEST

START_TEST(test_parse_garbage)
{
	const size_t page = 4096, len = 4 * 4096;
	struct rc_cfi_module m = { 0 };
	unsigned round, i, seed = 12345, c, f;
	uint8_t *map, *seg;
	uintptr_t pc;

	map = mmap(NULL, len + 2 * page, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(map != MAP_FAILED);
	seg = map + page;
	ck_assert_int_eq(mprotect(seg, len, PROT_READ | PROT_WRITE), 0);
	m.lo = (uintptr_t)seg;
	m.hi = m.lo + len;
#define RND() (seed = seed * 1103515245u + 12345u, seed >> 8)
	for (round = 0; round < 20000; round++) {
		for (i = 0; i < len; i++) {
			seg[i] = (uint8_t)RND();
			/* Small numbers often: lengths, offsets, opcodes. */
			if (!(RND() & 3))
				seg[i] &= 0x0f;
		}
		m.hdr = m.lo + RND() % len;
		pc = m.lo + RND() % len;
		ck_assert_uint_ne(rc_cfi_parse(pc, &m), 0);
		/* A sound frame around a random program. */
		m.hdr = m.lo;
		memcpy(seg, "\x01\x1b\x03\x3b", 4);
		put32(seg + 8, 1);			/* fde_count */
		put32(seg + 12, 0);			/* initial_loc: hdr */
		c = 64 + RND() % 1024;			/* the CIE */
		f = c + 64 + RND() % 1024;		/* the FDE */
		put32(seg + 16, f);
		put32(seg + c, 18 + RND() % 64);
		put32(seg + c + 4, 0);
		/* Then def_cfa rsp+8, the return address at cfa-8. */
		memcpy(seg + c + 8, "\x01zR\x00\x01\x78\x10\x01\x1b"
		       "\x0c\x07\x08\x90\x01", 14);
		put32(seg + f, 12 + RND() % 256);
		put32(seg + f + 4, f + 4 - c);
		put32(seg + f + 8, (uint32_t)-(int32_t)(f + 8));
		put32(seg + f + 12, (uint32_t)len);	/* pc_range */
		seg[f + 16] = 0;			/* augmentation */
		if (RND() & 1)
			seg[f + 16 + 1 + RND() % 8] = 0x0a; /* remember */
		pc = m.lo + 1 + RND() % (len - 1);
		ck_assert_uint_ne(rc_cfi_parse(pc, &m), 0);
		/* The header at the very end of the segment. */
		m.hdr = m.hi - 1 - RND() % 8;
		ck_assert_uint_ne(rc_cfi_parse(pc, &m), 0);
	}
#undef RND
	munmap(map, len + 2 * page);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cfi");
	TCase *tc = tcase_create("cfi");
	SRunner *sr;
	int failed;

	rc_stack_init();
	if (rc_stack_use_unwinder("libunwind")) {
		puts("SKIP: libunwind.so.8 is not installed");
		return 77;
	}
	if (!rc_stack_cfi()) {
		puts("FAIL: the CFI walk is off");
		return 1;
	}
	rc_stack_set_self_range((uintptr_t)__start_rc_test_shim,
				(uintptr_t)__stop_rc_test_shim);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_chains);
	tcase_add_test(tc, test_depths);
	tcase_add_test(tc, test_repeat);
	tcase_add_test(tc, test_repeat_spoiled);
	tcase_add_test(tc, test_repeat_skip);
	tcase_add_test(tc, test_repeat_fast_fallback);
	tcase_add_test(tc, test_plugin);
	tcase_add_test(tc, test_thread);
	tcase_add_test(tc, test_reload);
	tcase_add_test(tc, test_unsupported);
	tcase_add_test(tc, test_corrupt);
	tcase_add_test(tc, test_parse_garbage);
	tcase_add_test(tc, test_signal);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
#endif /* RC_CFI */

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * unwind_cfi.h - rdmacheck's own DWARF CFI unwinder (x86_64 only): one
 * step from a frame to its caller, by the unwind rule of the frame's pc.
 *
 * A rule says where the caller's registers are: CFA = rsp or rbp +
 * offset, the return address at CFA - 8, rbp saved at CFA - offset or
 * unchanged.  It is read once per pc from the module's .eh_frame_hdr
 * and .eh_frame (src/unwind/unwind_cfi.c) and kept in a global cache that every
 * thread reads without a lock: a slot's rule is stored before its pc is
 * published (release), a published slot is never overwritten, and a
 * full cache computes without storing.  Frames this cannot step (CFI
 * expressions, signal frames, a register rule that matters and is not
 * an offset, no FDE) have a "bad" rule, cached too: the caller then
 * unwinds the whole stack with libunwind or libgcc instead.
 *
 * stack.c owns the walk (its skipping of our frames) and the bounds of
 * this thread's stack; a miss finds its module in modules.c's map of the
 * objects loaded now.  When a module was unloaded since the
 * cache was filled (dl_iterate_phdr's unload counter moved), the next
 * miss empties it.  Not async-signal-safe (the miss path locks), but
 * for the lookups without a miss (rc_cfi_rule, rc_cfi_cached) and
 * rc_cfi_parse.
 */
#ifndef RC_UNWIND_CFI_H
#define RC_UNWIND_CFI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__linux__)
#define RC_CFI 1
#endif

#ifdef RC_CFI

/* The module around a pc, as the miss path needs it. */
struct rc_cfi_module {
	uintptr_t text_lo, text_hi;	/* the executable segment of pc */
	uintptr_t hdr;			/* its .eh_frame_hdr; 0: none */
	uintptr_t lo, hi;		/* the PT_LOAD segment holding hdr */
	unsigned long long subs;	/* dl_iterate_phdr's unloads */
};

/*
 * A rule, 64 bits (0: none known): bits 0-2 its kind (one of three,
 * one bit each: testing for a step is one test), bit 3 CFA from rbp
 * (else rsp), bit 4 rbp saved (else unchanged), bits 8-15 the saved
 * rbp's offset from CFA in words (signed, negative), bits 32-63 CFA's
 * offset in bytes (signed).  The return address is at CFA - 8 (the call
 * pushed it; anything else is a bad rule, as for libunwind's fast path).
 */
#define RC_CFI_STEP	1u	/* an ordinary frame */
#define RC_CFI_LAST	2u	/* return address undefined: outermost */
#define RC_CFI_BAD	4u	/* cannot be stepped here */
#define RC_CFI_FROM_BP	8u
#define RC_CFI_BP_SAVED	16u

#define RC_CFI_BITS	13		/* 8192 slots, 128 KiB, in .bss */
#define RC_CFI_SLOTS	(1u << RC_CFI_BITS)
#define RC_CFI_PROBES	8

struct rc_cfi_slot {
	atomic_uintptr_t pc;		/* 0 empty; published last */
	_Atomic uint64_t rule;
};

/*
 * In .bss: pages are touched as slots are filled.  Slot 0 is never
 * filled: pc 0 (a garbage or outermost return address) hashes there,
 * and an emptied slot keeps its old rule, so pc 0 must find rule 0.
 */
extern struct rc_cfi_slot rc_cfi_table[RC_CFI_SLOTS]
	__attribute__((visibility("hidden")));
/*
 * How often the cache was emptied, bumped (release) after the slots
 * were: a copy of rules taken while it read g stays good while it does.
 */
extern atomic_uint rc_cfi_gen __attribute__((visibility("hidden")));
/*
 * The rule of pc when its first slot holds another: the other slots,
 * then a miss (read from the module and cached); 0 when pc - 1 is in no
 * loaded object's text (not cached).
 */
uint64_t rc_cfi_slow(uintptr_t pc);
/*
 * The rule of pc in any of its slots, 0 when none holds it: rc_cfi_slow
 * without the miss (no lock), for the fatal-signal handler's walk.
 */
uint64_t rc_cfi_cached(uintptr_t pc);
/* Re-initialise the miss path's lock in a fork()ed child. */
void rc_cfi_atfork_child(void);
/* How often the cache was emptied (for tests). */
unsigned rc_cfi_resets(void);

/*
 * The rule of the frame for pc - 1 in module m, parsed from its CFI: a
 * rule (never 0), perhaps RC_CFI_BAD.  For rc_cfi_slow and tests.
 */
uint64_t rc_cfi_parse(uintptr_t pc, const struct rc_cfi_module *m);

static inline unsigned rc_cfi_hash(uintptr_t pc)
{
	return (unsigned)((pc * 0x9e3779b97f4a7c15ull) >> (64 - RC_CFI_BITS));
}

/* The rule in slot s if it is pc's, else 0.  Lock-free. */
static inline uint64_t rc_cfi_slot_rule(struct rc_cfi_slot *s, uintptr_t pc)
{
	uint64_t r;

	if (atomic_load_explicit(&s->pc, memory_order_acquire) != pc)
		return 0;
	/* Acquire: the pc is read again after the rule. */
	r = atomic_load_explicit(&s->rule, memory_order_acquire);
	/* Emptied meanwhile (a module was unloaded): a miss. */
	if (atomic_load_explicit(&s->pc, memory_order_relaxed) != pc)
		return 0;
	return r;
}

/* The rule of pc, or 0 when its first slot holds another.  Lock-free. */
static inline uint64_t rc_cfi_rule(uintptr_t pc)
{
	return rc_cfi_slot_rule(&rc_cfi_table[rc_cfi_hash(pc)], pc);
}

/*
 * Whether pc's first slot holds it: a published slot's rule is never 0,
 * so unlike rc_cfi_rule() no rule is read and no second look is needed
 * (emptied just after the look: it was known just before).  Slot 0 is
 * never published, so pc 0 is not "known" here.
 */
static inline bool rc_cfi_known_fast(uintptr_t pc)
{
	return pc && atomic_load_explicit(&rc_cfi_table[rc_cfi_hash(pc)].pc,
					  memory_order_relaxed) == pc;
}

/* Whether pc is a return address into a loaded object's text. */
static inline bool rc_cfi_known(uintptr_t pc)
{
	return rc_cfi_known_fast(pc) || rc_cfi_slow(pc);
}

/*
 * A frame: its pc, the stack pointer and rbp in it; the top of the
 * stack.  Words read lie in [sp, hi), sp increasing from frame to frame.
 */
struct rc_cfi_cursor {
	uintptr_t pc, sp, bp;
	uintptr_t hi;
};

/*
 * Step c to its caller by r, c->pc's rule (0: not in its first slot:
 * the miss path runs): 1 and c->pc is the caller's return address; 0
 * when c is the outermost frame; -1 when this frame cannot be stepped or
 * a check failed (a word outside [sp, hi), CFA not above sp): fall back.
 * The return address is checked by the next step (its rule is found only
 * for a pc in a module's text; libunwind stops at one below 0x4000, we
 * fall back), or by rc_cfi_known() when no step follows.  The rule
 * applied goes back in *rp (the miss path's, when *rp was 0).
 */
static inline __attribute__((always_inline, no_sanitize_address)) int
rc_cfi_apply_rule(struct rc_cfi_cursor *c, uint64_t *rp)
{
	uint64_t r = *rp;
	uintptr_t cfa, a;

	if (__builtin_expect(!(r & RC_CFI_STEP), 0)) {
		if (!r)
			r = *rp = rc_cfi_slow(c->pc);
		if (!(r & RC_CFI_STEP))		/* incl. 0 */
			return (r & RC_CFI_LAST) ? 0 : -1;
	}
	cfa = ((r & RC_CFI_FROM_BP) ? c->bp : c->sp) +
	      (int64_t)(int32_t)(r >> 32);
	/* sp + 8 <= cfa <= hi: the return address at cfa - 8 is above sp. */
	if (cfa < c->sp + 8 || cfa > c->hi)
		return -1;
	if (r & RC_CFI_BP_SAVED) {
		/* Saved in this frame: between sp and cfa. */
		a = cfa + (intptr_t)(int8_t)(r >> 8) * 8;
		if (a < c->sp)
			return -1;
		c->bp = *(const uintptr_t *)a;
	}
	c->sp = cfa;
	c->pc = ((const uintptr_t *)cfa)[-1];
	return 1;
}

static inline __attribute__((always_inline, no_sanitize_address)) int
rc_cfi_apply(struct rc_cfi_cursor *c, uint64_t r)
{
	return rc_cfi_apply_rule(c, &r);
}

/* rc_cfi_apply() by the cached rule of c->pc. */
static inline __attribute__((always_inline, no_sanitize_address)) int
rc_cfi_step(struct rc_cfi_cursor *c)
{
	return rc_cfi_apply(c, rc_cfi_rule(c->pc));
}

#endif /* RC_CFI */
#endif

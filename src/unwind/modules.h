/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * modules.h - the map of the objects loaded now (modules.c): their
 * executable segments, sorted, made again when dl_iterate_phdr's load
 * and unload counters move; with each segment its object's .eh_frame_hdr
 * and the PT_LOAD segment holding it.  The stack walks check return
 * addresses against it (stack.c); the CFI unwinder's misses find the
 * unwind tables in it (unwind_cfi.c).
 */
#ifndef RC_UNWIND_MODULES_H
#define RC_UNWIND_MODULES_H

#include <stdint.h>

/*
 * The executable PT_LOAD segments of the loaded objects, sorted; with
 * each, its object's .eh_frame_hdr and the PT_LOAD segment holding it
 * (for the CFI unwinder's misses).
 */
struct rc_text_seg {
	uintptr_t lo, hi;
	uintptr_t hdr, hdr_lo, hdr_hi;	/* hdr 0: no PT_GNU_EH_FRAME */
};

struct rc_text_map {
	unsigned n, cap;
	unsigned long long adds, subs;	/* dl_iterate_phdr's, when made */
	struct rc_text_seg r[];
};

/*
 * The map of the objects loaded now: one dl_iterate_phdr() step (the
 * loader's lock) to read its counters, a new map when they moved; NULL
 * when none could be made.  Maps are never freed (a reader may hold
 * one).
 */
const struct rc_text_map *rc_modules_current(void);

/* The last map made, without asking the loader: for signal handlers
 * (an atomic load; NULL before the first). */
const struct rc_text_map *rc_modules_last(void);

/* The segment of m holding pc, or NULL. */
static inline const struct rc_text_seg *
rc_modules_find(const struct rc_text_map *m, uintptr_t pc)
{
	unsigned lo = 0, hi = m->n, mid;

	/* The last range starting at or below pc. */
	while (hi - lo > 1) {
		mid = (lo + hi) / 2;
		if (m->r[mid].lo <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (!m->n || pc < m->r[lo].lo || pc >= m->r[lo].hi)
		return NULL;
	return &m->r[lo];
}


/* A fork child: the parent's lock may have been held by a thread that
 * is gone. */
void rc_modules_atfork_child(void);

#endif

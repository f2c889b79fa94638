/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fake_stack.h - a deterministic stand-in for the stack depot and the
 * symbolizer, linked into the report/suppression unit tests instead of
 * src/unwind/stack.c and src/symbolize/symbolize.c.
 */
#ifndef RC_FAKE_STACK_H
#define RC_FAKE_STACK_H

#include <stdint.h>

#include "unwind/stack.h"
#include "symbolize/symbolize.h"

/* Store a stack of n pcs; returns its id (1, 2, ...). */
rc_stack_id fake_stack(unsigned n, const uintptr_t *pcs);

/* What rc_symbolize() returns for pc (strings are not copied). */
void fake_symbol(uintptr_t pc, const char *module, uintptr_t offset,
		 const char *function, const char *file, unsigned line);

/* What rc_stack_capture_signal() returns (0 until set). */
extern rc_stack_id fake_signal_stack;

/* Number of rc_symbolize() calls so far. */
extern unsigned fake_symbolize_calls;

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * stack.h - stack capture and the stack depot.
 *
 * Stacks are captured with libunwind's unw_backtrace (dlopen()ed with
 * RTLD_LOCAL, never linked: libunwind.so.8 exports backtrace() and the
 * _Unwind_* ABI and would take over the host's C++ exceptions), or with
 * libgcc's _Unwind_Backtrace when libunwind is absent; on x86_64 our own
 * cached CFI walk (unwind_cfi.h) gives their frames first, and hands a
 * capture it cannot make to them.  Each unique stack is
 * stored once in an append-only depot; objects keep a 32-bit id.  Raw PCs
 * only: symbolization happens when a report is written (symbolize.h).
 * Never call these from a signal handler, but rc_stack_capture_signal()
 * and rc_stack_frames().
 */
#ifndef RC_STACK_H
#define RC_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/kinds.h"		/* rc_stack_id */

#define RC_STACK_MAX_DEPTH 64

/* Load the unwinder; call once from the constructor. Idempotent. */
void rc_stack_init(void);

/* Frames kept per stack from now on (clamped to 1..RC_STACK_MAX_DEPTH). */
void rc_stack_set_depth(unsigned depth);

/*
 * Capture the calling thread's stack, dropping the leading frames that are
 * inside librdmacheck.so itself, so frame #0 is the caller of the
 * intercepted function.  Returns the depot id, 0 on failure.
 */
rc_stack_id rc_stack_capture(void);

/*
 * The same, from a wrapper.  site (< 1024; e.g. the function's number,
 * larger ones share a slot) learns how many frames of ours (and of
 * librdmacm's, when it called in) that call path drops, so that those
 * and the frames kept are all that is unwound.  frame is the wrapper's
 * __builtin_frame_address(0), or NULL: where the fast_unwind walk starts.
 */
rc_stack_id rc_stack_capture_at(unsigned site, const void *frame);

/*
 * fast_unwind: follow frame pointers from rc_stack_capture_at()'s frame
 * instead of unwinding with CFI.  Each frame is checked (inside this
 * thread's stack, above the last, returning into executable text); the
 * walk stops at the first that is not, so code built without frame
 * pointers gives short stacks.  Without a frame, or when even the first
 * frame fails or is librdmacm's, the usual unwinder runs.
 */
void rc_stack_set_fast(bool on);

/*
 * The CFI walk (x86_64; src/unwind/unwind_cfi.h): on by default, it steps each
 * frame by a cached rule read from its module's .eh_frame and gives the
 * default unwinder's frames; a frame it cannot step makes that capture
 * use the default unwinder instead.  Off: every capture uses the default
 * unwinder.  For tests and measurements; not meant to race with
 * captures.  rc_stack_cfi_counts() gives the calling thread's captures
 * that the walk made and those it handed to the unwinder.
 */
void rc_stack_set_cfi(bool on);
bool rc_stack_cfi(void);
void rc_stack_cfi_counts(unsigned long *walks, unsigned long *fallbacks);
/*
 * The calling thread's captures that a capture site repeated from the
 * same frame over an unchanged stack: its last walk's stack again, each
 * word the walk read checked, none stepped.  A CFI walk's count as walks
 * too; fast_unwind's frame-pointer walks are counted here alone.
 */
unsigned long rc_stack_cfi_repeats(void);

/*
 * The stack of the thread a signal interrupted, from the handler's
 * ucontext: the interrupted pc first (the faulting instruction, not a
 * return address: named at that pc, not at pc - 1), then its callers,
 * at most the depth.  For fatal-signal handlers: async-signal-safe (no
 * lock, no allocation, each word read through the kernel), so not in
 * the depot: the frames go to one static slot, RC_STACK_SIGNAL, which
 * the next call overwrites.  0 when the registers cannot be read here.
 */
#define RC_STACK_SIGNAL UINT32_MAX
rc_stack_id rc_stack_capture_signal(const void *ucontext);

/*
 * Store (or find) a stack given its frames; at most RC_STACK_MAX_DEPTH are
 * kept.  The same depot as rc_stack_capture(), so equal frames give equal
 * ids.  Returns 0 for n == 0 or when the depot is full.
 */
rc_stack_id rc_stack_intern(const uintptr_t *pcs, unsigned n);

/*
 * The frames of a stored stack; returns their number (0 and *pcs = NULL
 * for id 0 or an unknown id).  The frames are immutable and stay valid
 * until exit.  Lock-free and allocation-free: unlike the rest of this
 * file, safe to call from a fatal-signal handler.
 */
unsigned rc_stack_frames(rc_stack_id id, const uintptr_t **pcs);

/*
 * After our own frames, also drop leading frames for which fn is true
 * (librdmacm's, when it calls its own exports), so that stacks start where
 * the program called in; at least one frame is always kept.  Set once at
 * initialisation; whenever fn's answers change, call
 * rc_stack_skip_changed() (stacks kept from earlier walks are dropped).
 */
void rc_stack_set_skip(bool (*fn)(uintptr_t pc));
void rc_stack_skip_changed(void);

/*
 * Whether [p, p + len) lies in the calling thread's stack, above the
 * caller's frame: memory that is there to read (rc_peek's fast path; an
 * argument in the caller's locals).  False on a signal stack, or when
 * the stack's bounds are unknown.  Not from a signal handler: the first
 * call in a thread asks pthread_getattr_np().
 */
bool rc_stack_holds(const void *p, size_t len);

/* "libunwind", "libgcc" or "none": which unwinder is in use. */
const char *rc_stack_unwinder(void);

/* Number of distinct stacks stored (for tests and statistics). */
unsigned rc_stack_depot_size(void);

/*
 * Select the unwinder by name ("libunwind", "libgcc" or "none"); returns 0,
 * or -1 when it cannot be loaded (the current one stays).  For tests and an
 * --unwinder option; not meant to race with captures.
 */
int rc_stack_use_unwinder(const char *name);

/*
 * The "self range": leading frames whose pc lies in [lo, hi) are dropped
 * (after the frame inside rc_stack_capture() itself, which always is).
 * rc_stack_init() sets it to the executable PT_LOAD segment holding
 * stack.c, i.e. librdmacheck.so's text.  Tests that link stack.c into the
 * test program set it to the range of their fake interposer instead;
 * lo == hi drops only the rc_stack_capture() frame.
 */
void rc_stack_set_self_range(uintptr_t lo, uintptr_t hi);
void rc_stack_get_self_range(uintptr_t *lo, uintptr_t *hi);

/* Re-initialise locks in a fork()ed child. */
void rc_stack_atfork_child(void);

#endif

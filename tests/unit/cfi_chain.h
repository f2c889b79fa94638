/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cfi_chain.h - the call chains of tests/unit/test_cfi.c: each step
 * function makes one or more frames of one kind and calls cfi_next()
 * for the rest of the path; path[i] names the kind of step i ('\0':
 * capture there).  The kinds live in objects built differently, so that
 * their CFI differs: test_cfi.c (-fno-omit-frame-pointer), cfi_omit.c
 * (-fomit-frame-pointer) and the dlopen()ed cfi_plugin.c.
 */
#ifndef RC_TEST_CFI_CHAIN_H
#define RC_TEST_CFI_CHAIN_H

#include <stdint.h>

#define CFI_NOINLINE __attribute__((noinline, noclone))
/* A barrier after each call: no tail calls, every frame stays. */
#define CFI_KEEP(x) __asm__ volatile("" : "+r"(x) : : "memory")

typedef uintptr_t (*cfi_next_fn)(const char *path, int i);

/* test_cfi.c: the dispatcher, a frame of its own. */
uintptr_t cfi_next(const char *path, int i);

/* cfi_omit.c, -fomit-frame-pointer: */
uintptr_t cfi_omit_step(const char *path, int i);	/* 'o': rsp-based */
uintptr_t cfi_alloca_step(const char *path, int i);	/* 'a': rbp-based */
uintptr_t cfi_realign_step(const char *path, int i);	/* 'r': and $-64 */
uintptr_t cfi_drap_step(const char *path, int i);	/* 'x': expression */

/* cfi_plugin.c (dlopen()ed), the 'p' step, found with dlsym: */
uintptr_t cfi_plugin_step(const char *path, int i, cfi_next_fn next);

#endif

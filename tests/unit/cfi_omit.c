/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cfi_omit.c - call-chain steps built with -fomit-frame-pointer for
 * tests/unit/test_cfi.c (see cfi_chain.h): frames whose CFA is rsp-based,
 * rbp-based (alloca, a 64-byte aligned local), and one whose CFA is a
 * DWARF expression (the CFI unwinder cannot step it and hands the
 * capture to libunwind).
 */
#include <alloca.h>
#include <string.h>

#include "cfi_chain.h"

CFI_NOINLINE uintptr_t cfi_omit_step(const char *path, int i)
{
	uintptr_t r = cfi_next(path, i + 1);

	CFI_KEEP(r);
	return r + 1;
}

CFI_NOINLINE uintptr_t cfi_alloca_step(const char *path, int i)
{
	volatile char *p = alloca(16 + (unsigned)i * 8);
	uintptr_t r;

	p[0] = (char)i;
	r = cfi_next(path, i + 1);
	CFI_KEEP(r);
	return r + (uintptr_t)p[0];
}

CFI_NOINLINE uintptr_t cfi_realign_step(const char *path, int i)
{
	volatile char buf[64] __attribute__((aligned(64)));
	uintptr_t r;

	buf[0] = (char)i;
	r = cfi_next(path, i + 1);
	CFI_KEEP(r);
	return r + (uintptr_t)buf[0];
}

/*
 * CFA = rbp + 16 written as a DWARF expression (DW_CFA_def_cfa_expression
 * DW_OP_breg6 16), as compilers write it for realigned frames with a
 * DRAP: libunwind and libgcc evaluate it, our unwinder cannot.
 */
#if defined(__x86_64__)
__asm__(".pushsection .text\n"
	".globl cfi_drap_step\n"
	".type cfi_drap_step, @function\n"
	"cfi_drap_step:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	".cfi_escape 0x0f, 0x02, 0x76, 0x10\n"
	"	add $1, %esi\n"
	"	call cfi_next@PLT\n"
	"	pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfi_drap_step, .-cfi_drap_step\n"
	".popsection\n");
#else
/* Elsewhere test_cfi is skipped: a plain step keeps it linking. */
CFI_NOINLINE uintptr_t cfi_drap_step(const char *path, int i)
{
	uintptr_t r = cfi_next(path, i + 1);

	CFI_KEEP(r);
	return r + 1;
}
#endif

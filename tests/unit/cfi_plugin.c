/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cfi_plugin.c - the 'p' step of tests/unit/test_cfi.c's call chains
 * (cfi_chain.h), in a library the test dlopen()s, dlclose()s and loads
 * again elsewhere.
 */
#include "cfi_chain.h"

uintptr_t cfi_plugin_step(const char *path, int i, cfi_next_fn next);

CFI_NOINLINE uintptr_t cfi_plugin_step(const char *path, int i,
				       cfi_next_fn next)
{
	uintptr_t r = next(path, i + 1);

	CFI_KEEP(r);
	return r + 1;
}

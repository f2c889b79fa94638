/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize_dw.c - the shim's choice of symbolizer per module, at report
 * time (symbolizer= option): libdw (dwfl.c, libdw.so.1 dlopen()ed on the
 * first lookup, RTLD_LOCAL) for inline levels, C++ names and separate
 * debug files, or src/symbolize/symbolize.c's own reader.  libdw inflates every
 * compressed debug section of a module before its first lookup (hundreds
 * of millions of instructions for a compressed libc6-dbg), so "auto"
 * takes libdw only for modules whose local debug data is not compressed
 * (symbolize.c knows from the section headers it has mapped anyway), and
 * never loads it for the others.
 * Called by rc_symbolize() under its lock; never on the crash path.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/dwfl.h"
#include "core/options.h"
#include "core/rdmacheck.h"
#include "symbolize/symbolize.h"

bool rc_symbolize_dw(const char *path, uintptr_t offset, bool plain,
		     struct rc_frame *out);

enum dw_mode { DW_BUILTIN, DW_AUTO, DW_ALL };

/* The option alone: deciding must not load libdw. */
static enum dw_mode opt_mode(void)
{
	static int m = -1;
	const char *s = rc_opt.symbolizer;

	if (m >= 0)
		return (enum dw_mode)m;
	if (!s || !*s || !strcmp(s, "auto")) {
		m = DW_AUTO;
	} else if (!strcmp(s, "builtin")) {
		m = DW_BUILTIN;
	} else {
		/* libdw: the option parser admits nothing else */
		m = DW_ALL;
	}
	return (enum dw_mode)m;
}

/* libdw loaded (first call), or not to be had. */
static bool dw_loaded(void)
{
	static int ok = -1;

	if (ok < 0) {
		ok = rr_dwfl_available();
		if (!ok && opt_mode() == DW_ALL)
			rc_warn("symbolizer=libdw: libdw.so.1 cannot be loaded: the built-in reader symbolizes");
	}
	return ok;
}

static void free_syms(struct rr_sym *s, int n)
{
	while (n-- > 0) {
		free(s[n].function);
		free(s[n].file);
	}
}

/*
 * plain: symbolize.c found the module's DWARF (its own, or a separate
 * debug file by build id or debuglink) and it is not compressed.  In
 * "auto" nothing else is worth loading libdw for: compressed debug info
 * costs it a full inflation, and without local DWARF it has no more than
 * the symbol table (and would ask debuginfod, from inside the host).
 */
bool rc_symbolize_dw(const char *path, uintptr_t offset, bool plain,
		     struct rc_frame *out)
{
	struct rr_sym syms[RR_INLINE_MAX];
	struct rc_frame *inl = NULL;
	enum dw_mode m = opt_mode();
	int n, i;

	if (m == DW_BUILTIN || (m == DW_AUTO && !plain) || !dw_loaded())
		return false;
	n = rr_dwfl_symbolize(path, offset, syms, RR_INLINE_MAX);
	if (n <= 0)
		return false;
	/* Nothing named: the built-in reader may still know more. */
	if (!syms[n - 1].function ||
	    (n > 1 && !(inl = calloc((size_t)n - 1, sizeof(*inl))))) {
		free_syms(syms, n);
		return false;
	}
	/* The frame is the function that holds the inline levels, so
	 * that a consumer of one frame per pc sees what it always saw.
	 * The strings stay with the cache until exit. */
	out->module = path;
	out->offset = offset;
	out->function = syms[n - 1].function;
	out->file = syms[n - 1].file;
	out->line = syms[n - 1].line;
	for (i = 0; i < n - 1; i++) {
		inl[i] = *out;
		inl[i].function = syms[i].function;
		inl[i].file = syms[i].file;
		inl[i].line = syms[i].line;
	}
	out->inl = inl;
	out->ninl = n > 1 ? (unsigned)n - 1 : 0;
	return true;
}

/*
 * symbolize_dw.c - the shim's choice of symbolizer per module, at report
 * time (symbolizer= option): libdw (dwfl.c, libdw.so.1 dlopen()ed on the
 * first lookup, RTLD_LOCAL) for inline levels, C++ names and separate
 * debug files, or src/symbolize.c's own reader.  libdw inflates every
 * compressed debug section of a module before its first lookup (hundreds
 * of millions of instructions for a compressed libc6-dbg), so "auto"
 * takes libdw only for modules whose debug data is not compressed.
 * Called by rc_symbolize() under its lock; never on the crash path.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dwfl.h"
#include "options.h"
#include "rdmacheck.h"
#include "symbolize.h"

bool rc_symbolize_dw(const char *path, uintptr_t offset,
		     struct rc_frame *out);

enum dw_mode { DW_BUILTIN, DW_AUTO, DW_ALL };

/* Per module path: whether libdw reads it. */
struct dw_choice {
	struct dw_choice *next;
	const char *path;	/* symbolize.c's, kept until exit */
	bool use;
};

static struct dw_choice *choices;

static enum dw_mode mode(void)
{
	static int m = -1;
	const char *s = rc_opt.symbolizer;

	if (m >= 0)
		return (enum dw_mode)m;
	if (!s || !*s || !strcmp(s, "auto")) {
		m = DW_AUTO;
	} else if (!strcmp(s, "builtin")) {
		m = DW_BUILTIN;
	} else if (!strcmp(s, "libdw")) {
		m = DW_ALL;
	} else {
		rc_warn("symbolizer=%s: not auto, builtin or libdw: auto", s);
		m = DW_AUTO;
	}
	if (m != DW_BUILTIN && !rr_dwfl_available()) {
		if (m == DW_ALL)
			rc_warn("symbolizer=libdw: libdw.so.1 cannot be loaded: the built-in reader symbolizes");
		m = DW_BUILTIN;
	}
	return (enum dw_mode)m;
}

static bool use_dw(const char *path)
{
	struct dw_choice *c;

	for (c = choices; c; c = c->next)
		if (c->path == path || !strcmp(c->path, path))
			return c->use;
	c = malloc(sizeof(*c));
	if (!c)
		return false;
	c->path = path;
	c->use = mode() == DW_ALL || !rr_dwfl_compressed(path);
	c->next = choices;
	choices = c;
	return c->use;
}

static void free_syms(struct rr_sym *s, int n)
{
	while (n-- > 0) {
		free(s[n].function);
		free(s[n].file);
	}
}

bool rc_symbolize_dw(const char *path, uintptr_t offset,
		     struct rc_frame *out)
{
	struct rr_sym syms[RR_INLINE_MAX];
	struct rc_frame *inl = NULL;
	int n, i;

	if (mode() == DW_BUILTIN || !use_dw(path))
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

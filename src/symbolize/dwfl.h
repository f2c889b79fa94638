/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * dwfl.h - the libdw symbolizer (dwfl.c), shared by rdmacheck-report,
 * which links libdw (RR_HAVE_DWFL), and the shim, which dlopen()s
 * libdw.so.1 at report time (RC_DW_DLOPEN; src/symbolize/symbolize_dw.c).
 */
#ifndef RC_DWFL_H
#define RC_DWFL_H

#include <stdbool.h>
#include <stdint.h>

/* Inline levels kept per frame. */
#define RR_INLINE_MAX 16

struct rr_sym {
	char *function;		/* malloc()ed, or NULL */
	char *file;		/* malloc()ed, or NULL */
	unsigned line;		/* 0 when unknown */
};

/*
 * Whether libdw's functions are there: always when linked; in the shim,
 * the first call dlopen()s libdw.so.1 (RTLD_LOCAL: the host never sees
 * its symbols) and says whether every function of dw_api.def was found.
 */
bool rr_dwfl_available(void);

/*
 * The frames of the return address at offset (pc - load base, as the
 * reports give it) in the ELF file at path, innermost first: one per
 * inline level, then the function that holds them.  Returns how many it
 * filled (1..max; the caller frees their strings), or -1 when the file
 * cannot be read.
 */
int rr_dwfl_symbolize(const char *path, uintptr_t offset,
		      struct rr_sym *out, int max);

/* Close the modules kept open between calls. */
void rr_dwfl_close(void);

#endif

/*
 * report-dwfl.h - rdmacheck-report's libdw symbolizer (report-dwfl.c),
 * built when configure finds libdw; RR_HAVE_DWFL says it is linked in.
 */
#ifndef RR_REPORT_DWFL_H
#define RR_REPORT_DWFL_H

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
 * The frames of the return address at offset (pc - load base, as the
 * reports give it) in the ELF file at path, innermost first: one per
 * inline level, then the function that holds them.  Returns how many it
 * filled (1..max; the caller frees their strings), or -1 when the file
 * cannot be read.
 */
int rr_dwfl_symbolize(const char *path, uintptr_t offset,
		      struct rr_sym *out, int max);

/* Close the module kept open between calls. */
void rr_dwfl_close(void);

#endif

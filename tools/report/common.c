/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * common.c - rdmacheck-report: the helpers every part of the tool uses: die()
 * and its die_catch/die_msg (callers that must survive bad input), the
 * allocation wrappers, and the huge-page hint.
 */
#include "report_tool.h"

const char *prog = "rdmacheck-report";

/*
 * A caller that must survive bad input points die_catch at its jmp_buf:
 * die() then jumps there, the message in die_msg, instead of exiting.
 * The threads that load reports do (load_all()), and so does
 * tests/fuzz/fuzz_report.c; free_reports() frees what was loaded.
 */
__thread jmp_buf *die_catch;
__thread char die_msg[PATH_MAX + 256];

void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	if (die_catch) {
		va_start(ap, fmt);
		vsnprintf(die_msg, sizeof(die_msg), fmt, ap);
		va_end(ap);
		longjmp(*die_catch, 1);
	}
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

void *xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		die("out of memory");
	p = realloc(p, n && size ? n * size : 1);
	if (!p)
		die("out of memory");
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

/*
 * Huge pages for big blocks: a 200 MB report is parsed in a fraction of
 * the time when its pages do not thrash the TLB.  Just a hint.
 */

void huge_pages(void *p, size_t size)
{
	const uintptr_t mask = ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & mask;
	uintptr_t hi = ((uintptr_t)p + size) & mask;

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}


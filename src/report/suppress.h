/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * suppress.h - suppression files: "RULE:PATTERN" lines that silence
 * findings (see doc/reports.md).
 *
 * RULE is a rule id or a prefix ending in '*' ("leak-*", "*").  PATTERN is
 * an fnmatch(3) glob (no flags: '*' also matches '/') tried against every
 * frame of the finding's stack: the function name, the source file and the
 * module path (each also by basename), and against the intercepted call's
 * name.  '#' starts a comment; blank lines are ignored; bad lines are
 * reported on stderr as file:line and skipped.
 *
 * Load at init (single-threaded); matching is thread-safe and lock-free.
 */
#ifndef RC_SUPPRESS_H
#define RC_SUPPRESS_H

#include "report/report.h"
#include "core/rules.h"
#include "symbolize/symbolize.h"

/* Append the entries of a file; their number, or -1 (errno set, nothing
 * printed) when it cannot be read. */
int rc_suppress_load(const char *path);

/*
 * Parse one line as in a file; where/lineno name it in complaints.
 * Returns 1 when an entry was added, 0 for blank/comment, -1 when bad.
 */
int rc_suppress_add_line(const char *line, const char *where,
			 unsigned lineno);

/* Number of entries loaded. */
unsigned rc_suppress_count(void);

/*
 * The index of the first entry matching a finding of this rule whose call
 * is call (may be NULL) and whose stack is frames[0..n); -1 if none.  A
 * match is counted (see rc_suppress_hits).
 */
int rc_suppress_match_frames(enum rc_rule rule, const char *call,
			     const struct rc_frame *frames, unsigned n);

/*
 * The same for a stack of raw pcs (the caller's: the shim's come from its
 * depot), symbolized with rc_symbolize only when an entry for the rule
 * exists; at most RC_SUPPRESS_MAX_PCS frames are matched.
 */
#define RC_SUPPRESS_MAX_PCS 64
int rc_suppress_match_pcs(enum rc_rule rule, const char *call,
			  const uintptr_t *pcs, unsigned n);

/* How often entry idx matched, and its text ("rule:pattern"). */
unsigned rc_suppress_hits(unsigned idx);
const char *rc_suppress_text(unsigned idx);

/*
 * Format the "Suppressions used:" list (entries that matched, with their
 * counts) as lines prefixed by prefix into buf; returns the length (0 when
 * nothing matched).  Output is truncated to fit len.
 */
size_t rc_suppress_format_used(char *buf, size_t len, const char *prefix);

/*
 * A suppression entry for a finding, "rule:pattern", into buf: the pattern
 * is the innermost frame's function (escaped as a glob), else the
 * innermost module's base name, else the call.  Returns its length (0 if
 * len is too small).  No allocation.
 */
size_t rc_suppress_suggest(char *buf, size_t len, enum rc_rule rule,
			   const char *call, const struct rc_frame *frames,
			   unsigned n);

/* Drop every entry (tests). */
void rc_suppress_reset(void);

#endif

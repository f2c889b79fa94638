/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * options.h - RDMACHECK_OPTIONS, generated from options.def.
 */
#ifndef RC_OPTIONS_H
#define RC_OPTIONS_H

#include <stdbool.h>

#define RC_OPTTYPE_BOOL bool
#define RC_OPTTYPE_INT int
#define RC_OPTTYPE_STR const char *
#define RC_OPTTYPE_WORDS const char *

struct rc_options {
#define RC_OPT(type, name, def, min, max, help) RC_OPTTYPE_##type name;
#include "core/options.def"
#undef RC_OPT
};

extern struct rc_options rc_opt;

/* Reset rc_opt to the defaults of options.def. */
void rc_options_defaults(void);

/*
 * Parse "key=value:key=value" into rc_opt.  Unknown keys and bad values are
 * reported once each on stderr (prefixed "rdmacheck: ") and ignored; never
 * fails.  Returns the number of problems found.  Strings are copied.
 * The first '=' ends the key, so values may contain '=', but never ':'
 * (there is no escape); empty entries are skipped.  BOOL takes
 * 0/1/true/false/yes/no (any case), INT a plain decimal within its bounds.
 */
int rc_options_parse(const char *s);

/* help=1: every option, its current value and its help, to fd. */
void rc_options_print_help(int fd);

/*
 * Expand %p to the pid, %h to the host name, %q{VAR} to the value of
 * environment variable VAR, %n to rc_path_seq and %% to % into buf,
 * truncating to len (an expansion that does not fit ends it, left out
 * whole); returns buf ("" for NULL/empty tmpl).  While rc_path_seq is not
 * 0, a template without %n gets ".snapshot.<rc_path_seq>" appended.
 * Async-signal-safe.
 */
char *rc_options_expand_path(const char *tmpl, char *buf, unsigned len);

/*
 * The report sequence number of this thread's paths: 0 (the exit, crash
 * or kill report, and the log), or N while the service thread writes the
 * N-th snapshot, so that a snapshot never replaces the exit report.
 */
extern __thread unsigned rc_path_seq
	__attribute__((tls_model("initial-exec")));

/*
 * A problem in the user's input (options, suppression files): one line on
 * stderr, "rdmacheck: " + message, control characters replaced by '?'.
 */
void rc_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report.h - findings: what a check produces, and the collector that
 * applies suppressions, counts, prints text reports, keeps what the JSON
 * report needs, and decides the exit status.
 */
#ifndef RC_REPORT_H
#define RC_REPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/kinds.h"
#include "core/rules.h"
#include "unwind/stack.h"

/* The JSON report's "format": raised on any incompatible change. */
#define RC_REPORT_FORMAT 2

/* An object a finding names, with where it was created and destroyed. */
struct rc_objref {
	enum rc_kind kind;
	uintptr_t handle;
	pid_t created_tid;
	rc_stack_id created_stack;
	bool destroyed;
	pid_t destroyed_tid;
	rc_stack_id destroyed_stack;
	char note[96];		/* role in this finding, e.g. "fetched by
				 * thread 1234 (the caller)"; may be empty */
};

#define RC_MAX_OBJS 8

struct rc_finding {
	enum rc_rule rule;
	const char *call;	/* intercepted function, or NULL (leaks) */
	char message[256];	/* one line, no rule id, no newline */
	unsigned count;		/* > 1 for grouped leaks */
	bool suppressed;	/* set by rc_report() */
	bool as_warning;	/* an error rule whose certain case does not
				 * hold here: reported as a warning */
	pid_t tid;		/* thread that made the call (0 for leaks) */
	rc_stack_id stack;	/* the call's stack (leaks: creation stack) */
	unsigned nobjs;		/* entries used in objs */
	unsigned max_objs;	/* rc_finding_add lists at most these
				 * (0: RC_MAX_OBJS) */
	unsigned more_objs;	/* objects named but not stored */
	struct rc_objref objs[RC_MAX_OBJS];
};

/* The severity f is reported with: its rule's, or warning (as_warning). */
static inline enum rc_severity rc_finding_severity(const struct rc_finding *f)
{
	return f->as_warning ? RC_SEV_WARNING : rc_rules[f->rule].severity;
}

/* Open log_path, load suppressions; after rc_options_parse(). */
void rc_report_init(void);

/*
 * Record a finding: match suppressions (sets f->suppressed), count it,
 * print the text block (unless suppressed), keep a copy for the JSON
 * report, and abort when halt_on_error is set and it is an error.
 * Thread-safe; never call from a signal handler.
 */
void rc_report(struct rc_finding *f);

/* Print a one-line note to the log ("==pid== rdmacheck: ..."). */
void rc_report_note(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * Unsuppressed errors and warnings (findings), leaks (leaked objects: the
 * sum of the leak findings' counts), and suppressed (findings, a leak
 * finding weighing its count), as in the summary line and the JSON.
 */
struct rc_summary {
	unsigned errors, warnings, leaks, suppressed;
};
void rc_report_summary(struct rc_summary *s);

/*
 * Write the JSON report (if the json option is set) atomically (temp file
 * + rename).  status: "exited", "crashed", "snapshot" or "killed" (by
 * the signal rc_report_set_signal named).  crash_safe:
 * called from a fatal-signal handler: take no blocking lock (trylock and
 * give up), allocate nothing new where avoidable.
 */
void rc_report_write_json(const char *status, bool crash_safe);

/*
 * A fatal signal (sig, its siginfo and ucontext): the fatal-signal
 * finding, its stack the signal's (the faulting pc first), printed on
 * the log (frames as module+offset) and put in the JSON report, status
 * "crashed".  chained: the program's own handler runs next (the block
 * says so).  Async-signal-safe, for the fatal-signal handler alone.
 */
void rc_report_crash(int sig, const siginfo_t *si, const void *uc,
		     bool chained);
/*
 * The program's handler returned from that signal (and the process goes
 * on): a note on the log, and the next JSON report replaces the crash
 * report.  Async-signal-safe.
 */
void rc_report_crash_withdrawn(int sig);

/* The librdmacm that is loaded, and how many of its own exports it calls
 * through the PLT (0: linked with -Bsymbolic-functions), for the JSON. */
void rc_report_set_librdmacm(const char *path, int self_calls);

/* The termination signal a "killed" report names. */
void rc_report_set_signal(int sig);

/* Print the summary line to the log. */
void rc_report_print_summary(void);

/*
 * A file the user named cannot be used (the suppressions, the log, the
 * JSON report): one line on stderr, an error unless file_errors=warn.
 */
void rc_report_file_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * The exit status to force at exit: 2 after a file error (file_errors=
 * fail), else rc_opt.exitcode when unsuppressed errors or leaks remain
 * (warnings do not count), else -1 (leave it).
 */
int rc_report_exit_status(void);

/*
 * Re-initialise locks in a fork()ed child.  The child starts with no
 * findings (one report per process) and reopens a log_path with %p.
 */
void rc_report_atfork_child(void);

/*
 * Forget the leak findings and their counts, keeping errors and warnings:
 * after a snapshot's leak check, so the next one (or the one at exit)
 * does not count the same live objects twice.  Suppression hit counts,
 * and the counts of findings beyond the storage cap, are kept.
 */
void rc_report_forget_leaks(void);

/* Forget all findings and counts (tests; the fork child). */
void rc_report_reset(void);

/*
 * True once halt_on_error fired: the JSON report is written and abort()
 * follows; a SIGABRT handler should not write a "crashed" report over it
 * (rc_report_write_json(..., true) already returns without writing).
 */
bool rc_report_halted(void);

#endif

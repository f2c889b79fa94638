/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report_int.h - shared between report.c (the collector), report_text.c
 * and report_json.c; not part of the shim's internal API.
 */
#ifndef RC_REPORT_INT_H
#define RC_REPORT_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "report/report.h"
#include "symbolize/symbolize.h"

/* Findings kept for the JSON report; later ones are only counted. */
#define RC_MAX_FINDINGS 10000

struct rc_collector {
	pthread_mutex_t lock;	/* guards everything below but the
				 * init-time fields */
	struct rc_finding *findings;
	unsigned nfindings, cap;
	unsigned dropped;	/* findings beyond RC_MAX_FINDINGS */
	struct rc_summary sum;
	bool halted;		/* halt_on_error fired; JSON written */
	int signal;		/* the termination signal being reported */
	char lib_path[256];	/* librdmacm, once resolved ("" before) */
	int lib_self_calls;

	/* One JSON writer at a time: they share the temporary file name.
	 * Taken before lock, never while holding it. */
	pthread_mutex_t json_lock;
	pid_t json_owner;	/* the thread writing under json_lock */
	bool crash_written;	/* the crash report is the last word */
	bool file_error;	/* rc_report_file_error() was called */

	/* Set by rc_report_init(), read-only afterwards. */
	int log_fd;
	bool log_owned;
	char exe[PATH_MAX];	/* "" when unknown */
	char *cmdline;		/* NUL-separated, as /proc/self/cmdline */
	size_t cmdline_len;
	struct timespec start;	/* CLOCK_REALTIME at init (or fork) */
};

extern struct rc_collector rc_coll;

/*
 * An output buffer that either grows with realloc (text blocks: one
 * write(2) each) or lives in fixed storage and is flushed to fd when full
 * (the JSON writer, also from a signal handler).  Nothing here uses stdio.
 */
struct rc_out {
	char *buf;
	size_t len, cap;
	int fd;			/* < 0: grow instead of flushing */
	bool failed;		/* allocation or write failed */
};

void rc_out_init_grow(struct rc_out *o);
void rc_out_init_fd(struct rc_out *o, char *storage, size_t cap, int fd);
/* The slow path of rc_out_put(): flush or grow first. */
void rc_out_put_slow(struct rc_out *o, const char *s, size_t n);

/* Inline: a report is millions of short puts that fit. */
static inline void rc_out_put(struct rc_out *o, const char *s, size_t n)
{
	if (n <= o->cap - o->len) {
		if (n)
			memcpy(o->buf + o->len, s, n);
		o->len += n;
		return;
	}
	rc_out_put_slow(o, s, n);
}

static inline void rc_out_puts(struct rc_out *o, const char *s)
{
	rc_out_put(o, s, strlen(s));
}

static inline void rc_out_putc(struct rc_out *o, char c)
{
	if (o->len < o->cap)
		o->buf[o->len++] = c;
	else
		rc_out_put_slow(o, &c, 1);
}
void rc_out_udec(struct rc_out *o, unsigned long long v);
void rc_out_dec(struct rc_out *o, long long v);
void rc_out_hex(struct rc_out *o, uintptr_t v);	/* "0x..." */
/* Write everything buffered to fd; false on a write error. */
bool rc_out_write(struct rc_out *o, int fd);
void rc_out_free(struct rc_out *o);	/* grow mode only */

/* report_file.c: where a report file goes (see there). */
enum rc_file_kind {
	RC_FILE_NONE,		/* cannot be written (errno says why) */
	RC_FILE_DIRECT,		/* a FIFO, device or socket: written as is */
	RC_FILE_RENAME,		/* a regular or new file: temp + rename */
};
struct rc_report_file {
	enum rc_file_kind kind;
	char final[PATH_MAX];	/* the file written, links followed */
	char tmp[PATH_MAX];	/* RC_FILE_RENAME: the temporary */
};
/* An fd to write the report to (-1 with errno), async-signal-safe. */
int rc_report_file_open(const char *path, struct rc_report_file *f);
/* Could a report be written to path now?  0, or -1 with errno. */
int rc_report_file_check(const char *path);
/* At start: a file error now if the JSON report could not be written. */
void rc_report_json_check(void);
/* Finish it (rename into place); 0, or -1 with errno.  ok: all written. */
int rc_report_file_close(int fd, const struct rc_report_file *f, bool ok);
/* Remove temporaries that killed processes left beside final. */
void rc_report_file_clean(const char *final);

/* Append the text block of f ("==pid== ERROR: ..." through the blank
 * line), symbolizing its stacks. */
void rc_text_finding(struct rc_out *o, const struct rc_finding *f, int pid);

/*
 * The fatal-signal finding's block, async-signal-safe: frames as module
 * and offset (rc_crash_frame), then note, a line of its own, if any.
 */
void rc_text_crash(struct rc_out *o, const struct rc_finding *f, int pid,
		   const char *note);

/*
 * report_json.c, async-signal-safe: module and offset of pc from
 * /proc/self/maps (read again when fresh), in tables of its own.
 */
void rc_crash_frame(uintptr_t pc, struct rc_frame *fr, bool fresh);
/* The crash report: status "crashed", the findings kept, then extra. */
void rc_json_crash(const struct rc_finding *extra, int sig);
/* The process goes on after all: the next report may replace it. */
void rc_json_crash_withdraw(void);

#endif

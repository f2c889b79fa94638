/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report.c - the findings collector: suppression, counting, the text log,
 * the copy the JSON report is written from, halt_on_error and the exit
 * status.  Also the output buffer the text and JSON writers share.
 *
 * Locking: one mutex (rc_coll.lock) guards the counters and the stored
 * findings.  Suppression matching and text formatting (both symbolize,
 * which can be slow) and the write(2) of the text block happen outside it.
 *
 * The fatal-signal finding (rc_report_crash) is made in its signal
 * handler: never collected, matched or symbolized, it goes only to its
 * text block and the crash report.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/options.h"
#include "core/rdmacheck.h"
#include "report/report_int.h"
#include "report/suppress.h"
#include "unwind/stack.h"

struct rc_collector rc_coll = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.json_lock = PTHREAD_MUTEX_INITIALIZER,
	.log_fd = STDERR_FILENO,
};

/* ---- output buffer ---------------------------------------------------- */

void rc_out_init_grow(struct rc_out *o)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

void rc_out_init_fd(struct rc_out *o, char *storage, size_t cap, int fd)
{
	memset(o, 0, sizeof(*o));
	o->buf = storage;
	o->cap = cap;
	o->fd = fd;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= w;
	}
	return true;
}

bool rc_out_write(struct rc_out *o, int fd)
{
	bool ok = write_all(fd, o->buf, o->len);

	o->len = 0;
	if (!ok)
		o->failed = true;
	return ok;
}

/* Make room for n more bytes; false when impossible (data dropped). */
static bool out_room(struct rc_out *o, size_t n)
{
	size_t cap;
	char *nb;

	if (o->len + n <= o->cap)
		return true;
	if (o->fd >= 0) {
		rc_out_write(o, o->fd);
		return n <= o->cap;
	}
	cap = o->cap ? o->cap : 1024;
	while (cap < o->len + n)
		cap *= 2;
	nb = realloc(o->buf, cap);
	if (!nb) {
		o->failed = true;
		return false;
	}
	o->buf = nb;
	o->cap = cap;
	return true;
}

void rc_out_put_slow(struct rc_out *o, const char *s, size_t n)
{
	/* Fixed storage: feed large strings through in pieces. */
	while (o->fd >= 0 && n > o->cap && o->cap) {
		rc_out_put_slow(o, s, o->cap);
		s += o->cap;
		n -= o->cap;
	}
	if (!out_room(o, n))
		return;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

void rc_out_udec(struct rc_out *o, unsigned long long v)
{
	char tmp[24];
	unsigned n = 0;

	do
		tmp[sizeof(tmp) - ++n] = '0' + v % 10;
	while ((v /= 10));
	rc_out_put(o, tmp + sizeof(tmp) - n, n);
}

void rc_out_dec(struct rc_out *o, long long v)
{
	if (v < 0) {
		rc_out_putc(o, '-');
		rc_out_udec(o, -(unsigned long long)v);
	} else {
		rc_out_udec(o, v);
	}
}

void rc_out_hex(struct rc_out *o, uintptr_t v)
{
	char tmp[2 + 2 * sizeof(v)];
	unsigned n = 0;

	do
		tmp[sizeof(tmp) - ++n] = "0123456789abcdef"[v & 15];
	while ((v >>= 4));
	tmp[sizeof(tmp) - ++n] = 'x';
	tmp[sizeof(tmp) - ++n] = '0';
	rc_out_put(o, tmp + sizeof(tmp) - n, n);
}

void rc_out_free(struct rc_out *o)
{
	if (o->fd < 0)
		free(o->buf);
	o->buf = NULL;
	o->len = o->cap = 0;
}

/* ---- init ------------------------------------------------------------- */

static void open_log(void)
{
	const char *lp = rc_opt.log_path;
	char path[PATH_MAX];
	int fd;

	if (rc_coll.log_owned)
		close(rc_coll.log_fd);
	rc_coll.log_fd = STDERR_FILENO;
	rc_coll.log_owned = false;
	if (!lp || !*lp || !strcmp(lp, "stderr"))
		return;
	if (!strcmp(lp, "stdout")) {
		rc_coll.log_fd = STDOUT_FILENO;
		return;
	}
	rc_options_expand_path(lp, path, sizeof(path));
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc_report_file_error("cannot open log_path '%s': %m; logging "
				     "to stderr", path);
		return;
	}
	rc_coll.log_fd = fd;
	rc_coll.log_owned = true;
}

/* Read argv now: the program may overwrite its argv strings later. */
static void read_cmdline(void)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	free(rc_coll.cmdline);
	rc_coll.cmdline = NULL;
	rc_coll.cmdline_len = 0;
	if (fd < 0 || !buf)
		goto out;
	for (;;) {
		if (len == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
	}
	rc_coll.cmdline = buf;
	rc_coll.cmdline_len = len;
	buf = NULL;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
}

void rc_report_file_error(const char *fmt, ...)
{
	bool fail = strcmp(rc_opt.file_errors, "warn");
	char buf[768];
	va_list ap;
	int n;

	__atomic_store_n(&rc_coll.file_error, true, __ATOMIC_RELAXED);
	n = snprintf(buf, sizeof(buf), "rdmacheck: %s: ",
		     fail ? "error" : "warning");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	if (fail && n < (int)sizeof(buf))
		n += snprintf(buf + n, sizeof(buf) - n, " (exit status 2 at "
			      "exit; file_errors=warn makes this a warning)");
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write(2): lines from threads do not interleave. */
	if (write(STDERR_FILENO, buf, n) < 0)
		return;
}

void rc_report_init(void)
{
	char path[PATH_MAX];
	ssize_t n;

	clock_gettime(CLOCK_REALTIME, &rc_coll.start);
	open_log();
	n = readlink("/proc/self/exe", rc_coll.exe, sizeof(rc_coll.exe) - 1);
	rc_coll.exe[n > 0 ? n : 0] = '\0';
	read_cmdline();
	rc_suppress_reset();
	if (rc_opt.suppressions && *rc_opt.suppressions) {
		rc_options_expand_path(rc_opt.suppressions, path,
				       sizeof(path));
		if (rc_suppress_load(path) < 0)
			rc_report_file_error("cannot read the suppressions "
					     "file '%s': %m", path);
	}
	rc_report_json_check();
}

void rc_report_reset(void)
{
	pthread_mutex_lock(&rc_coll.lock);
	free(rc_coll.findings);
	rc_coll.findings = NULL;
	rc_coll.nfindings = rc_coll.cap = rc_coll.dropped = 0;
	memset(&rc_coll.sum, 0, sizeof(rc_coll.sum));
	rc_coll.halted = false;
	pthread_mutex_unlock(&rc_coll.lock);
}

void rc_report_atfork_child(void)
{
	pthread_mutex_init(&rc_coll.lock, NULL);
	pthread_mutex_init(&rc_coll.json_lock, NULL);
	/* One report per process: the parent's findings are its own. */
	rc_report_reset();
	clock_gettime(CLOCK_REALTIME, &rc_coll.start);
	if (rc_coll.log_owned && strstr(rc_opt.log_path, "%p"))
		open_log();
}

/* ---- the collector ---------------------------------------------------- */

static unsigned weight(const struct rc_finding *f)
{
	return rc_finding_severity(f) == RC_SEV_LEAK ? f->count : 1;
}

/* Under the lock: count f and keep a copy. */
static void collect(const struct rc_finding *f)
{
	struct rc_summary *s = &rc_coll.sum;

	if (f->suppressed)
		s->suppressed += weight(f);
	else if (rc_finding_severity(f) == RC_SEV_ERROR)
		s->errors++;
	else if (rc_finding_severity(f) == RC_SEV_WARNING)
		s->warnings++;
	else
		s->leaks += f->count;

	if (rc_coll.nfindings == rc_coll.cap) {
		unsigned cap = rc_coll.cap ? rc_coll.cap * 2 : 64;
		struct rc_finding *nf;

		if (cap > RC_MAX_FINDINGS)
			cap = RC_MAX_FINDINGS;
		nf = cap > rc_coll.cap ?
			realloc(rc_coll.findings, cap * sizeof(*nf)) : NULL;
		if (!nf) {
			rc_coll.dropped++;
			return;
		}
		rc_coll.findings = nf;
		rc_coll.cap = cap;
	}
	rc_coll.findings[rc_coll.nfindings++] = *f;
}

void rc_report_forget_leaks(void)
{
	unsigned i, kept = 0;

	pthread_mutex_lock(&rc_coll.lock);
	for (i = 0; i < rc_coll.nfindings; i++) {
		const struct rc_finding *f = &rc_coll.findings[i];

		if (rc_finding_severity(f) != RC_SEV_LEAK)
			rc_coll.findings[kept++] = *f;
		else if (f->suppressed)
			rc_coll.sum.suppressed -= f->count;
		else
			rc_coll.sum.leaks -= f->count;
	}
	rc_coll.nfindings = kept;
	pthread_mutex_unlock(&rc_coll.lock);
}

static void halt(void)
{
	int status;

	/* A second erring thread waits for the first one's exit. */
	pthread_mutex_lock(&rc_coll.lock);
	if (rc_coll.halted) {
		pthread_mutex_unlock(&rc_coll.lock);
		for (;;)
			pause();
	}
	rc_coll.halted = true;
	pthread_mutex_unlock(&rc_coll.lock);

	rc_report_write_json("exited", false);
	rc_report_print_summary();
	/* As ASan: exit with exitcode, without running the program's exit
	 * handlers on top of the error; a core only when asked. */
	if (rc_opt.abort_on_error)
		abort();
	status = rc_report_exit_status();
	_exit(status >= 0 ? status : rc_opt.exitcode);
}

/* Whether an entry suppresses f: its stack's frames from the depot. */
static bool suppressed(const struct rc_finding *f)
{
	const uintptr_t *pcs;
	unsigned n = rc_stack_frames(f->stack, &pcs);

	return rc_suppress_match_pcs(f->rule, f->call, pcs, n) >= 0;
}

void rc_report(struct rc_finding *f)
{
	struct rc_out text;
	bool is_error;

	if ((unsigned)f->rule >= RC_R_COUNT)
		return;
	if (!f->count)
		f->count = 1;
	if (f->nobjs > RC_MAX_OBJS) {
		f->more_objs += f->nobjs - RC_MAX_OBJS;
		f->nobjs = RC_MAX_OBJS;
	}
	f->message[sizeof(f->message) - 1] = '\0';
	f->suppressed = rc_suppress_count() && suppressed(f);
	is_error = !f->suppressed &&
		   rc_finding_severity(f) == RC_SEV_ERROR;

	rc_out_init_grow(&text);
	if (!f->suppressed)
		rc_text_finding(&text, f, getpid());

	pthread_mutex_lock(&rc_coll.lock);
	collect(f);
	pthread_mutex_unlock(&rc_coll.lock);

	if (text.len)
		rc_out_write(&text, rc_coll.log_fd);
	rc_out_free(&text);

	if (is_error && rc_opt.halt_on_error)
		halt();
}

void rc_report_set_librdmacm(const char *path, int self_calls)
{
	pthread_mutex_lock(&rc_coll.lock);
	snprintf(rc_coll.lib_path, sizeof(rc_coll.lib_path), "%s",
		 path ? path : "?");
	rc_coll.lib_self_calls = self_calls;
	pthread_mutex_unlock(&rc_coll.lock);
}

void rc_report_set_signal(int sig)
{
	pthread_mutex_lock(&rc_coll.lock);
	rc_coll.signal = sig;
	pthread_mutex_unlock(&rc_coll.lock);
	rc_report_note("killed by signal %d (%s)", sig, strsignal(sig));
}

bool rc_report_halted(void)
{
	return __atomic_load_n(&rc_coll.halted, __ATOMIC_RELAXED);
}

void rc_report_note(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "==%d== rdmacheck: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	write_all(rc_coll.log_fd, buf, n);
}

void rc_report_summary(struct rc_summary *s)
{
	pthread_mutex_lock(&rc_coll.lock);
	*s = rc_coll.sum;
	pthread_mutex_unlock(&rc_coll.lock);
}

void rc_report_print_summary(void)
{
	struct rc_summary s;
	unsigned dropped;
	char prefix[32];

	pthread_mutex_lock(&rc_coll.lock);
	s = rc_coll.sum;
	dropped = rc_coll.dropped;
	pthread_mutex_unlock(&rc_coll.lock);

	/* As LeakSanitizer: the entries that matched, always. */
	if (rc_suppress_count()) {
		char buf[8192];
		size_t n;

		snprintf(prefix, sizeof(prefix), "==%d== rdmacheck: ",
			 (int)getpid());
		n = rc_suppress_format_used(buf, sizeof(buf), prefix);
		write_all(rc_coll.log_fd, buf, n);
	}
	if (dropped)
		rc_report_note("%u findings not kept for the JSON report (limit %u)",
			       dropped, RC_MAX_FINDINGS);
	rc_report_note("%u errors, %u warnings, %u leaked objects (%u suppressed)",
		       s.errors, s.warnings, s.leaks, s.suppressed);
}

int rc_report_exit_status(void)
{
	struct rc_summary s;

	if (__atomic_load_n(&rc_coll.file_error, __ATOMIC_RELAXED) &&
	    strcmp(rc_opt.file_errors, "warn")) {
		rc_report_note("exit status 2: a file the options name could "
			       "not be used (see the error above)");
		return 2;
	}
	rc_report_summary(&s);
	if (rc_opt.exitcode && (s.errors || s.leaks))
		return rc_opt.exitcode;
	return -1;
}

/* ---- the fatal-signal finding, from its handler ------------------------ */

/* A bounded string for a signal handler: no stdio; truncates. */
struct sig_str {
	char *p;
	size_t len, cap;	/* cap counts the NUL */
};

static void ss_put(struct sig_str *b, const char *s)
{
	while (*s && b->len + 1 < b->cap)
		b->p[b->len++] = *s++;
	b->p[b->len] = '\0';
}

static void ss_num(struct sig_str *b, unsigned long long v, unsigned base)
{
	char tmp[24], *p = tmp + sizeof(tmp) - 1;

	*p = '\0';
	do
		*--p = "0123456789abcdef"[v % base];
	while ((v /= base));
	if (base == 16)
		ss_put(b, "0x");
	ss_put(b, p);
}

static void ss_signal(struct sig_str *b, int sig)
{
	const char *name = rc_signal_name(sig);

	if (name) {
		ss_put(b, name);
	} else {
		ss_put(b, "signal ");
		ss_num(b, (unsigned)sig, 10);
	}
}

/* "SIGSEGV (SEGV_MAPERR) at address 0x0", or who sent it. */
static void crash_message(struct sig_str *b, int sig, const siginfo_t *si)
{
	const char *code = si ? rc_signal_code(sig, si->si_code) : NULL;
	bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
		     sig == SIGFPE;

	ss_signal(b, sig);
	if (!si)
		return;
	ss_put(b, " (");
	if (code) {
		ss_put(b, code);
	} else {
		ss_put(b, "si_code ");
		if (si->si_code < 0)
			ss_put(b, "-");
		ss_num(b, si->si_code < 0 ? -(unsigned)si->si_code :
			  (unsigned)si->si_code, 10);
	}
	ss_put(b, ")");
	if (fault && si->si_code > 0 && si->si_code != SI_KERNEL) {
		ss_put(b, " at address ");
		ss_num(b, (uintptr_t)si->si_addr, 16);
	} else if (si->si_code <= 0 && si->si_pid == getpid()) {
		ss_put(b, " sent by the process itself");
	} else if (si->si_code <= 0) {
		ss_put(b, " sent by pid ");
		ss_num(b, (unsigned)si->si_pid, 10);
	}
}

void rc_report_crash(int sig, const siginfo_t *si, const void *uc,
		     bool chained)
{
	/* Static: the alternate signal stack is small. */
	static struct rc_finding f;
	static char text[4096], note[160];
	struct sig_str b = { f.message, 0, sizeof(f.message) };
	struct sig_str nb = { note, 0, sizeof(note) };
	struct rc_out o;

	memset(&f, 0, sizeof(f));
	f.rule = RC_R_FATAL_SIGNAL;
	f.count = 1;
	f.tid = rc_gettid();
	f.stack = rc_stack_capture_signal(uc);
	crash_message(&b, sig, si);

	ss_put(&nb, "in thread ");
	ss_num(&nb, (unsigned)f.tid, 10);
	if (chained) {
		ss_put(&nb, "; the program's own ");
		ss_signal(&nb, sig);
		ss_put(&nb, " handler runs next");
	} else if (rc_opt.json && *rc_opt.json) {
		ss_put(&nb, "; rdmacheck-report names these frames from the "
		       "JSON report");
	}
	rc_out_init_fd(&o, text, sizeof(text), rc_coll.log_fd);
	rc_text_crash(&o, &f, getpid(), note);
	rc_out_write(&o, rc_coll.log_fd);

	rc_json_crash(&f, sig);
}

void rc_report_crash_withdrawn(int sig)
{
	char line[256];
	struct sig_str b = { line, 0, sizeof(line) };

	ss_put(&b, "==");
	ss_num(&b, (unsigned)getpid(), 10);
	ss_put(&b, "== rdmacheck: the program's ");
	ss_signal(&b, sig);
	ss_put(&b, " handler returned: the process goes on, so that was no "
	       "crash (its later ones are left to that handler)\n");
	write_all(rc_coll.log_fd, line, b.len);
	rc_json_crash_withdraw();
}

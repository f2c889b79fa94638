/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * util.c - small shared helpers: our own diagnostics, the cached tid,
 * the creation of our own threads, and the names of signals and their
 * si_codes (the shim's fatal-signal handler and rdmacheck-report).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "core/rdmacheck.h"

void rc_warn(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "rdmacheck: warning: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write(2): lines from threads do not interleave. */
	if (write(STDERR_FILENO, buf, n) < 0)
		return;
}

uint64_t rc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

RC_TLS pid_t rc_cached_tid;

pid_t rc_gettid_slow(void)
{
	rc_cached_tid = (pid_t)syscall(SYS_gettid);
	return rc_cached_tid;
}

void rc_gettid_atfork_child(void)
{
	rc_cached_tid = 0;
}

/*
 * A thread that blocks the host's signals itself leaves a window, from
 * pthread_create() to its first pthread_sigmask(), in which a SIGTERM
 * sent to the process may be delivered to it: it inherits the creator's
 * mask.  So the creator blocks them around pthread_create().
 */
int rc_thread_create(pthread_t *t, const pthread_attr_t *attr,
		     void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* Tables, not strsignal() or sigabbrev_np(): for a signal handler too. */
#define SIG_NAME(s) [s] = #s
static const char *const sig_names[] = {
	SIG_NAME(SIGHUP), SIG_NAME(SIGINT), SIG_NAME(SIGQUIT),
	SIG_NAME(SIGILL), SIG_NAME(SIGTRAP), SIG_NAME(SIGABRT),
	SIG_NAME(SIGBUS), SIG_NAME(SIGFPE), SIG_NAME(SIGKILL),
	SIG_NAME(SIGUSR1), SIG_NAME(SIGSEGV), SIG_NAME(SIGUSR2),
	SIG_NAME(SIGPIPE), SIG_NAME(SIGALRM), SIG_NAME(SIGTERM),
	SIG_NAME(SIGCHLD), SIG_NAME(SIGCONT), SIG_NAME(SIGSTOP),
	SIG_NAME(SIGTSTP), SIG_NAME(SIGTTIN), SIG_NAME(SIGTTOU),
	SIG_NAME(SIGURG), SIG_NAME(SIGXCPU), SIG_NAME(SIGXFSZ),
	SIG_NAME(SIGVTALRM), SIG_NAME(SIGPROF), SIG_NAME(SIGWINCH),
	SIG_NAME(SIGIO), SIG_NAME(SIGPWR), SIG_NAME(SIGSYS),
};

const char *rc_signal_name(int sig)
{
	if (sig <= 0 || (unsigned)sig >= RC_ARRAY_SIZE(sig_names))
		return NULL;
	return sig_names[sig];
}

#define CODE_NAME(c) [c] = #c
static const char *const segv_codes[] = {
	CODE_NAME(SEGV_MAPERR), CODE_NAME(SEGV_ACCERR),
	[3] = "SEGV_BNDERR", [4] = "SEGV_PKUERR",
};
static const char *const bus_codes[] = {
	CODE_NAME(BUS_ADRALN), CODE_NAME(BUS_ADRERR), CODE_NAME(BUS_OBJERR),
	[4] = "BUS_MCEERR_AR", [5] = "BUS_MCEERR_AO",
};
static const char *const ill_codes[] = {
	CODE_NAME(ILL_ILLOPC), CODE_NAME(ILL_ILLOPN), CODE_NAME(ILL_ILLADR),
	CODE_NAME(ILL_ILLTRP), CODE_NAME(ILL_PRVOPC), CODE_NAME(ILL_PRVREG),
	CODE_NAME(ILL_COPROC), CODE_NAME(ILL_BADSTK),
};
static const char *const fpe_codes[] = {
	CODE_NAME(FPE_INTDIV), CODE_NAME(FPE_INTOVF), CODE_NAME(FPE_FLTDIV),
	CODE_NAME(FPE_FLTOVF), CODE_NAME(FPE_FLTUND), CODE_NAME(FPE_FLTRES),
	CODE_NAME(FPE_FLTINV), CODE_NAME(FPE_FLTSUB),
};

#define CODE_OF(tab, c) \
	((unsigned)(c) < RC_ARRAY_SIZE(tab) ? (tab)[c] : NULL)

const char *rc_signal_code(int sig, int code)
{
	switch (code) {
	case SI_USER:
		return "SI_USER";
	case SI_KERNEL:
		return "SI_KERNEL";
	case SI_QUEUE:
		return "SI_QUEUE";
	case SI_TKILL:
		return "SI_TKILL";
	}
	if (code <= 0)
		return NULL;
	switch (sig) {
	case SIGSEGV:
		return CODE_OF(segv_codes, code);
	case SIGBUS:
		return CODE_OF(bus_codes, code);
	case SIGILL:
		return CODE_OF(ill_codes, code);
	case SIGFPE:
		return CODE_OF(fpe_codes, code);
	}
	return NULL;
}

/*
 * util.c - small shared helpers: our own diagnostics, the cached tid and
 * the creation of our own threads.
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

#include "rdmacheck.h"

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

static RC_TLS pid_t cached_tid;

pid_t rc_gettid(void)
{
	if (RC_UNLIKELY(!cached_tid))
		cached_tid = (pid_t)syscall(SYS_gettid);
	return cached_tid;
}

void rc_gettid_atfork_child(void)
{
	cached_tid = 0;
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

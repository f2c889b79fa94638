/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmacheck.h - what every part of the shim shares: the diagnostics
 * channel for our own problems and the thread id helper.
 */
#ifndef RC_RDMACHECK_H
#define RC_RDMACHECK_H

#include <pthread.h>
#include <sys/types.h>

#define RC_TLS __thread __attribute__((tls_model("initial-exec")))
#define RC_LIKELY(x) __builtin_expect(!!(x), 1)
#define RC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* An internal problem of rdmacheck itself: one line on stderr, no abort. */
void rc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds; async-signal-safe. */
uint64_t rc_now_ms(void);

/*
 * Copy len bytes the program passed us at src, which may be any pointer
 * (NULL, freed, unmapped): false instead of a crash when they cannot be
 * read.  For memory a wrapper reads before the library would.
 */
bool rc_peek(void *dst, const void *src, size_t len);

/* The calling thread's kernel tid, cached per thread (inline: every
 * wrapper asks). */
extern RC_TLS pid_t rc_cached_tid;
pid_t rc_gettid_slow(void);
static inline pid_t rc_gettid(void)
{
	return RC_LIKELY(rc_cached_tid) ? rc_cached_tid : rc_gettid_slow();
}
/*
 * pthread_create() for our own threads: every signal blocked in the new
 * thread from its first instruction (the creator's mask is restored).
 */
int rc_thread_create(pthread_t *t, const pthread_attr_t *attr,
		     void *(*fn)(void *), void *arg);
void rc_gettid_atfork_child(void);

/*
 * "SIGSEGV" for SIGSEGV, and "SEGV_MAPERR" for its si_code 1 ("SI_TKILL"
 * for one raise() sent); NULL when unknown.  Async-signal-safe.
 */
const char *rc_signal_name(int sig);
const char *rc_signal_code(int sig, int code);

#endif

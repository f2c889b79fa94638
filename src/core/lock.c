/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lock.c - the futex mutex of lock.h (mutex 2 of Drepper's "Futexes Are
 * Tricky"): lock by compare-and-swap 0 -> 1; on contention mark the word
 * 2 and sleep in FUTEX_WAIT while it stays 2; unlock by exchange to 0,
 * waking one sleeper when it was 2.  A short spin first: the sections it
 * guards are a few hundred instructions, shorter than a sleep and wake.
 */
#include <errno.h>
#include <stdbool.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/lock.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define TSAN(call) call
#else
#define TSAN(call) do { } while (0)
#endif

#define SPINS 64

static inline int cas(int *p, int old, int new)
{
	__atomic_compare_exchange_n(p, &old, new, false, __ATOMIC_ACQUIRE,
				    __ATOMIC_RELAXED);
	return old;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A futex call; the host's errno is left as it was. */
static void futex(int *p, int op, int val)
{
	int e = errno;

	syscall(SYS_futex, p, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
	errno = e;
}

static __attribute__((noinline)) void lock_slow(struct rc_lock *l, int c)
{
	int i;

	for (i = 0; i < SPINS && c == 1; i++) {
		cpu_relax();
		c = __atomic_load_n(&l->v, __ATOMIC_RELAXED);
		if (!c)
			c = cas(&l->v, 0, 1);
		if (!c)
			return;
	}
	if (c != 2)
		c = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
	while (c) {
		futex(&l->v, FUTEX_WAIT, 2);
		c = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
	}
}

void rc_lock(struct rc_lock *l)
{
	int c;

	TSAN(__tsan_mutex_pre_lock(l, 0));
	c = cas(&l->v, 0, 1);
	if (__builtin_expect(c != 0, 0))
		lock_slow(l, c);
	TSAN(__tsan_mutex_post_lock(l, 0, 0));
}

void rc_unlock(struct rc_lock *l)
{
	TSAN(__tsan_mutex_pre_unlock(l, 0));
	if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
		futex(&l->v, FUTEX_WAKE, 1);
	TSAN(__tsan_mutex_post_unlock(l, 0));
}

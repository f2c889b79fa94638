/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lock.h - rdmacheck's own mutex for short critical sections on every
 * call (the registry's shards): one futex word, 0 free, 1 held, 2 held
 * with a waiter possibly asleep.  Uncontended, a lock and an unlock are
 * one atomic each, against ~200 instructions for glibc's
 * pthread_mutex_lock/unlock pair.  Not recursive, not robust, never
 * taken in a signal handler.  ThreadSanitizer builds are told about it
 * (tsan_interface.h), so its reports name it as a mutex.
 */
#ifndef RC_LOCK_H
#define RC_LOCK_H

struct rc_lock {
	int v;
};

#define RC_LOCK_INIT { 0 }

/* Out of line, so that tests/perf/cost.sh can count them by name. */
void rc_lock(struct rc_lock *l);
void rc_unlock(struct rc_lock *l);

/* For a fork child: free, whoever held it in the parent. */
static inline void rc_lock_reset(struct rc_lock *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELAXED);
}

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * threads.h - thread records (threads.c): the calling thread's record,
 * what became of an event's holder, who waits for whom.
 */
#ifndef RC_SHIM_THREADS_H
#define RC_SHIM_THREADS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rc_call;

/* The calling thread's record (registered on first use; 0 when it
 * cannot be tracked), and what became of an event's holder. */
enum rc_holder {
	RC_HOLDER_CALLER,	/* the calling thread itself */
	RC_HOLDER_LIVE,		/* another thread, still running */
	RC_HOLDER_EXITED,	/* a thread that has exited */
	RC_HOLDER_UNKNOWN,	/* not tracked */
};
uint32_t rc_thread_self(struct rc_call *c);
enum rc_holder rc_thread_state(pid_t tid, uint32_t gen, pid_t caller);
/* Thread tid sleeps in pthread_join(target) (or a robust lock it owns). */
bool rc_thread_waits_for(pid_t tid, pid_t target);
void rc_thread_atfork_child(void);

#endif

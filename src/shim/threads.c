/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * threads.c - the host threads the ledger names as event holders.  A
 * thread that fetches an event gets a registry record (kind thread) that
 * lives until the thread exits: a thread-specific-data destructor marks it
 * destroyed.  A destroy can then tell a certain hang (the events it waits
 * for are held by the calling thread, or by one that is gone) from the
 * wait librdmacm does by design until another live thread acks them.
 *
 * The record's handle is (tid << 3) | 1: odd, so never the address of an
 * object the libraries hand out, and found again from the tid alone.  A
 * kernel tid reused by a later thread gets a new record with a new
 * generation, so the old holder still reads as exited.  And whether a
 * live holder sleeps joining a given thread (or waiting for a robust mutex
 * it owns): it can ack nothing until that thread ends.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "shim/call.h"
#include "shim/threads.h"

static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool have_key;
static RC_TLS uint32_t self_gen;

static uintptr_t thread_handle(pid_t tid)
{
	return ((uintptr_t)(unsigned)tid << 3) | 1;
}

/* Runs in the exiting thread, after its own code is done. */
static void thread_exit(void *arg)
{
	pid_t tid = rc_gettid();

	if (!self_gen)
		return;
	rc_busy++;
	rc_reg_destroy(thread_handle(tid), self_gen, tid, 0);
	self_gen = 0;
	rc_busy--;
}

static void make_key(void)
{
	have_key = !pthread_key_create(&exit_key, thread_exit);
}

uint32_t rc_thread_self(struct rc_call *c)
{
	struct rc_obj t;

	if (RC_LIKELY(self_gen))
		return self_gen;
	pthread_once(&key_once, make_key);
	/* Without the destructor we would never learn of the exit. */
	if (!have_key || pthread_setspecific(exit_key, (void *)1))
		return 0;
	rc_obj_init(c, RC_K_THREAD, (void *)thread_handle(c->tid), 0, &t);
	self_gen = rc_reg_insert(&t);
	return self_gen;
}

enum rc_holder rc_thread_state(pid_t tid, uint32_t gen, pid_t caller)
{
	struct rc_obj t;

	if (tid == caller)
		return RC_HOLDER_CALLER;
	if (!gen)
		return RC_HOLDER_UNKNOWN;
	if (!rc_reg_get(thread_handle(tid), &t) || t.gen != gen ||
	    t.destroyed)
		return RC_HOLDER_EXITED;
	return RC_HOLDER_LIVE;
}

/*
 * pthread_join(T) sleeps in futex(FUTEX_WAIT[_BITSET], &T's tid word, T's
 * tid) until T exits; so does a wait for a robust mutex T owns (with the
 * waiters bit, also set in the value).  /proc/self/task/N/syscall says
 * "NR ARG1 ARG2 ARG3 ..." while thread N sleeps in call NR.
 */
bool rc_thread_waits_for(pid_t tid, pid_t target)
{
	char path[48], buf[128], *p;
	unsigned long nr, op, val;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return false;	/* "running", or "-1 ..." outside a call */
	buf[n] = 0;
	nr = strtoul(buf, &p, 10);
	strtoul(p, &p, 0);		/* the futex word's address */
	op = strtoul(p, &p, 0) & 0x7f;	/* without PRIVATE, CLOCK_REALTIME */
	val = strtoul(p, &p, 0) & 0x3fffffff;	/* without the waiters bits */
	return nr == SYS_futex && (op == 0 || op == 9) &&
	       val == (unsigned long)target;
}

void rc_thread_atfork_child(void)
{
	/* The child's only thread has a new tid: register it anew. */
	self_gen = 0;
}

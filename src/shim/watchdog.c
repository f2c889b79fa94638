/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * watchdog.c - the blocked-call rule: forwarded rdma_destroy_id,
 * rdma_destroy_ep and rdma_migrate_id calls register here while they run
 * in the real library; a watchdog thread, started at the first such call,
 * reports each one still blocked after watchdog_ms, once, with the ledger
 * of the events its id is waiting for: a destroy that waits for unacked
 * events as id-destroy-with-unacked-events (an error), the rest as
 * blocked-call.  A fixed table: no allocation, no lock and no clock on
 * the wrappers' path (a call's start is the watchdog's tick that first
 * sees it, so a report comes watchdog_ms to watchdog_ms * 5 / 4 late).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/watchdog.h"

#define SLOTS 64

/*
 * A slot is owned through busy alone, so a call pays no lock: the call
 * claims a free slot (0 -> 1), fills it and publishes it (-> 2); the
 * watchdog claims a published one to read it (2 -> 3) and gives it back
 * (3 -> 2).  A call that ends while the watchdog reads its slot leaves it
 * to the watchdog (3 -> 4), which frees it (-> 0) without a report.  So a
 * slot's fields are only touched by whoever moved busy last.
 */
enum { W_FREE, W_FILLING, W_WATCHED, W_READING, W_ENDED };

struct watched {
	int busy;
	bool reported;
	struct rc_call call;
	struct rc_obj id;
	uint64_t start_ms;	/* when the watchdog first saw it; 0: not yet */
};

static struct watched slots[SLOTS];
static pthread_once_t started = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;

/*
 * A destroy still waiting for events of its id is an error, whoever holds
 * them: rdma_destroy_id(3) asks for every event to be acked first, and
 * watchdog_ms is far beyond the time an event handler takes to ack.
 */
static void report_blocked(struct watched *w)
{
	struct rc_ledger_scan s = { 0 };
	bool destroy = w->call.fn == RC_FN_rdma_destroy_id ||
		       w->call.fn == RC_FN_rdma_destroy_ep;
	struct rc_finding f;
	struct rc_obj id;

	/* The id's record now, for its current counters. */
	if (!rc_reg_get(w->id.handle, &id) || id.gen != w->id.gen)
		id = w->id;
	rc_ledger_scan_id(&id, w->call.tid, &s);
	destroy = destroy && s.n;
	rc_finding_init(&f, destroy ? RC_R_ID_DESTROY_WITH_UNACKED_EVENTS :
			RC_R_BLOCKED_CALL, &w->call, "x");
	rc_finding_add(&f, &w->id, NULL);
	memset(&s, 0, sizeof(s));
	s.f = &f;
	rc_ledger_scan_id(&id, w->call.tid, &s);
	if (destroy)
		snprintf(f.message, sizeof(f.message),
			 "%s(%p) in thread %d has been blocked for %d ms: %u "
			 "event%s charged to this cm id %s still not acked by "
			 "the thread that fetched %s; rdma_destroy_id(3) asks "
			 "for every event to be acked before the destroy",
			 rc_fn_info[w->call.fn].name, (void *)w->id.handle,
			 w->call.tid, rc_opt.watchdog_ms, s.n,
			 s.n == 1 ? "" : "s", s.n == 1 ? "is" : "are",
			 s.n == 1 ? "it" : "them");
	else
		snprintf(f.message, sizeof(f.message),
			 "%s(%p) in thread %d has been blocked for %d ms; %u "
			 "event%s charged to the cm id %s still unacked",
			 rc_fn_info[w->call.fn].name, (void *)w->id.handle,
			 w->call.tid, rc_opt.watchdog_ms, s.n,
			 s.n == 1 ? "" : "s", s.n == 1 ? "is" : "are");
	rc_report(&f);
}

static void *watchdog(void *arg)
{
	unsigned period = rc_opt.watchdog_ms / 4 ? rc_opt.watchdog_ms / 4 : 1;
	struct watched w;
	struct timespec ts;
	uint64_t now;
	unsigned i;

	/*
	 * The host's signals are for its threads (rc_thread_create blocks
	 * them all here): a termination signal taken here would find
	 * rc_busy set and kill the process without waiting for its report.
	 */
	rc_busy++;	/* never tracked as a host thread's calls */
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += period / 1000;
		ts.tv_nsec += (long)(period % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&lock);
		pthread_cond_timedwait(&cond, &lock, &ts);
		pthread_mutex_unlock(&lock);
		for (i = 0; i < SLOTS; i++) {
			int expected = W_WATCHED;
			bool due;

			if (!__atomic_compare_exchange_n(&slots[i].busy,
							 &expected, W_READING,
							 false,
							 __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED))
				continue;
			/* A call's start is when this thread first saw it. */
			now = rc_now_ms();
			if (!slots[i].start_ms)
				slots[i].start_ms = now;
			due = !slots[i].reported &&
			      now - slots[i].start_ms >=
			      (uint64_t)rc_opt.watchdog_ms;
			if (due) {
				slots[i].reported = true;
				w = slots[i];
			}
			expected = W_READING;
			/* The call may have returned meanwhile: no report. */
			if (!__atomic_compare_exchange_n(&slots[i].busy,
							 &expected, W_WATCHED,
							 false,
							 __ATOMIC_RELEASE,
							 __ATOMIC_RELAXED)) {
				__atomic_store_n(&slots[i].busy, W_FREE,
						 __ATOMIC_RELEASE);
				continue;
			}
			if (due)
				report_blocked(&w);
		}
	}
	return NULL;
}

static void start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t attr;
	pthread_t t;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (rc_thread_create(&t, &attr, watchdog, NULL))
		rc_warn("cannot start the watchdog thread; blocked calls "
			"will not be reported");
	pthread_attr_destroy(&attr);
}

int rc_watch_begin(struct rc_call *c, const struct rc_obj *id)
{
	int i, expected;

	if (!rc_opt.watchdog_ms || !id->handle)
		return -1;
	pthread_once(&started, start);
	for (i = 0; i < SLOTS; i++) {
		expected = W_FREE;
		if (!__atomic_compare_exchange_n(&slots[i].busy, &expected,
						 W_FILLING, false,
						 __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		rc_call_stack(c);	/* the report names the caller */
		slots[i].call = *c;
		slots[i].id = *id;
		slots[i].reported = false;
		slots[i].start_ms = 0;	/* the watchdog's clock, not ours */
		__atomic_store_n(&slots[i].busy, W_WATCHED, __ATOMIC_RELEASE);
		return i;
	}
	return -1;	/* more than SLOTS blocked calls: watch the rest not */
}

void rc_watch_end(int slot)
{
	int expected = W_WATCHED;

	if (slot < 0)
		return;
	/* Free it, or, while the watchdog reads it, leave it to it. */
	while (!__atomic_compare_exchange_n(&slots[slot].busy, &expected,
					    expected == W_WATCHED ? W_FREE :
					    W_ENDED, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		if (expected != W_WATCHED && expected != W_READING)
			return;		/* cannot happen: not ours */
}

void rc_watch_atfork_child(void)
{
	/* The thread did not survive fork: start again when needed. */
	memset(slots, 0, sizeof(slots));
	started = (pthread_once_t)PTHREAD_ONCE_INIT;
	pthread_mutex_init(&lock, NULL);
}

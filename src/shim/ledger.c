/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ledger.c - the event ledger's questions: which events charged to an id
 * (or fetched from a channel) are still unacked, who holds them, and which
 * ids still use a channel.  The counters live in the registry records and
 * are kept by wrap_event.c; the scans here run only when a counter says
 * there is something to report, so the common path stays O(1).  Also the
 * parameter pointers of the last acked events, for event-use-after-ack.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/options.h"
#include <rdma/rdma_cma.h>

#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/threads.h"
#include "shim/cm.h"

static const char *const event_names[] = {
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
	"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE",
	"REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL",
	"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT",
	"ADDRINFO_RESOLVED", "ADDRINFO_ERROR", "USER", "INTERNAL",
};

/* Our own names: a wrapper must not call rdma_event_str. */
const char *rc_event_name(int type)
{
	if (type >= 0 && type < (int)RC_ARRAY_SIZE(event_names))
		return event_names[type];
	return "UNKNOWN";
}

struct scan_ctx {
	enum { BY_ID, BY_CHANNEL, BY_MC } by;
	struct rc_ref ref;
	pid_t caller;
	struct rc_ledger_scan *s;
	bool waits;		/* ask whether live holders join the caller */
};

static const char *const holder_note[] = {
	[RC_HOLDER_CALLER] = " (the caller)",
	[RC_HOLDER_LIVE] = "",
	[RC_HOLDER_EXITED] = " (exited)",
	[RC_HOLDER_UNKNOWN] = "",
};

static const char waiting_note[] = " (alive, joining the caller)";

static void scan_fn(const struct rc_obj *o, void *arg)
{
	struct scan_ctx *x = arg;
	const struct rc_ref *r;
	enum rc_holder h;
	bool waiting;

	if (o->kind != RC_K_EVENT || o->destroyed || (o->flags & RC_F_LIB) ||
	    o->pid != rc_pid())
		return;
	r = x->by == BY_ID ? &o->u.ev.id :
	    x->by == BY_MC ? &o->u.ev.mc : &o->u.ev.channel;
	if (r->h != x->ref.h || r->gen != x->ref.gen)
		return;
	h = rc_thread_state(o->u.ev.holder, o->u.ev.holder_gen, x->caller);
	x->s->n++;
	x->s->by_caller += h == RC_HOLDER_CALLER;
	x->s->by_exited += h == RC_HOLDER_EXITED;
	waiting = x->waits && h == RC_HOLDER_LIVE &&
		  rc_thread_waits_for(o->u.ev.holder, x->caller);
	x->s->by_waiting += waiting;
	if (x->s->f)
		rc_finding_add(x->s->f, o, "%s, fetched by thread %d%s, not "
			       "acked", rc_event_name(o->u.ev.type),
			       o->u.ev.holder,
			       waiting ? waiting_note : holder_note[h]);
}

void rc_ledger_scan_id(const struct rc_obj *id, pid_t caller,
		       struct rc_ledger_scan *s)
{
	struct scan_ctx x = { BY_ID, rc_ref_of(id), caller, s, false };

	rc_reg_foreach(scan_fn, &x);
}

void rc_ledger_scan_channel(const struct rc_obj *ch, pid_t caller,
			    struct rc_ledger_scan *s)
{
	struct scan_ctx x = { BY_CHANNEL, rc_ref_of(ch), caller, s, false };

	rc_reg_foreach(scan_fn, &x);
}

struct ids_ctx {
	struct rc_ref ch;
	struct rc_finding *f;
};

static void ids_fn(const struct rc_obj *o, void *arg)
{
	struct ids_ctx *x = arg;

	if (o->kind != RC_K_ID || o->destroyed || o->pid != rc_pid() ||
	    o->u.id.channel.h != x->ch.h || o->u.id.channel.gen != x->ch.gen)
		return;
	rc_finding_add(x->f, o, o->flags & RC_F_CHILD ?
		       "delivered by CONNECT_REQUEST, still alive" :
		       "still alive");
}

void rc_ledger_ids_on_channel(const struct rc_obj *ch, struct rc_finding *f)
{
	struct ids_ctx x = { rc_ref_of(ch), f };

	rc_reg_foreach(ids_fn, &x);
}

/*
 * The destroy (migrate, leave) waits until these events are acked.  Held
 * by another live thread, that is librdmacm's synchronisation by design:
 * no finding (blocked-call reports it if the wait really lasts).  Held by
 * the calling thread, by a thread that has exited, or by one that joins
 * the calling thread (an event loop waiting for its teardown thread),
 * nobody can ack them: the call would never return.  A destroy blocked
 * on another holder for watchdog_ms is an error too (watchdog.c):
 * rdma_destroy_id(3) asks for every event to be acked first.
 */
static __attribute__((noinline)) bool check_unacked(struct rc_call *c,
						     const struct rc_obj *o,
						     enum rc_rule rule)
{
	bool mc = o->kind == RC_K_MCAST;
	struct scan_ctx x = { mc ? BY_MC : BY_ID, rc_ref_of(o), c->tid, NULL,
			      rule == RC_R_ID_DESTROY_WITH_UNACKED_EVENTS };
	struct rc_ledger_scan s = { 0 };
	struct rc_finding f;
	unsigned stuck;
	size_t len;
	bool refuse;

	rc_finding_init(&f, rule, c, "x");
	rc_finding_add(&f, o, NULL);
	s.f = &f;
	x.s = &s;
	rc_reg_foreach(scan_fn, &x);
	stuck = s.by_caller + s.by_exited + s.by_waiting;
	if (!stuck)
		return true;
	refuse = rc_opt.protect;
	len = snprintf(f.message, sizeof(f.message),
		       "%s(%p): %u event%s %s %s not acked, %u held by ",
		       rc_fn_info[c->fn].name,
		       (void *)(mc ? o->u.mc.id.h : o->handle), s.n,
		       s.n == 1 ? "" : "s",
		       mc ? "of this multicast group" :
		       "charged to this cm id", s.n == 1 ? "is" : "are",
		       stuck);
	if (len >= sizeof(f.message))
		len = sizeof(f.message) - 1;
	len += snprintf(f.message + len, sizeof(f.message) - len,
			"%s%s%s%s%s",
			s.by_caller ? "the calling thread" : "",
			s.by_caller && s.by_exited + s.by_waiting ? " and " :
			"",
			s.by_exited > 1 ? "threads that have exited" :
			s.by_exited ? "a thread that has exited" : "",
			s.by_exited && s.by_waiting ? " and " : "",
			s.by_waiting > 1 ? "threads joining this one" :
			s.by_waiting ? "a thread joining this one" : "");
	if (len >= sizeof(f.message))
		len = sizeof(f.message) - 1;
	snprintf(f.message + len, sizeof(f.message) - len,
		 ", so the call would never return%s",
		 refuse ? " (not forwarded: returns -1/EBUSY)" : "");
	rc_report(&f);
	if (refuse)
		errno = EBUSY;
	return !refuse;
}

/* The common case, nothing unacked, never sets up the scan's frame. */
bool rc_ledger_check_unacked(struct rc_call *c, const struct rc_obj *o,
			     enum rc_rule rule)
{
	if ((o->kind == RC_K_MCAST ? o->u.mc.unacked : o->u.id.unacked) <= 0)
		return true;
	return check_unacked(c, o, rule);
}

/*
 * The parameter pointers of recently acked events, without a lock of
 * their own.  Only exact matches count (&event->param.conn, and
 * param.conn.private_data): those are what programs pass on, and an
 * unrelated allocation cannot start at the first.  Each user ack takes
 * the next number; the event's record, destroyed by the ack, keeps that
 * number and the private data pointer (written under the lock the ack
 * takes anyway), so "among the last ACKED_RING acks" is a comparison of
 * numbers and the record itself confirms a hit.  The pointers lead to
 * the record through a hashed table of ACKED_WAYS-way buckets: a way
 * holds a pointer and its event's handle (with the ack's number, low 16
 * bits, to tell a way gone stale), is written with atomics, and a key
 * found again or the first empty or stale way is reused first.  Two
 * keys per ack over ACKED_INDEX / ACKED_WAYS buckets: a bucket holds one
 * in the mean, so a key of the last ACKED_RING acks is pushed out of its
 * bucket (a missed warning, never a false one) only when nine of them
 * meet there.
 */
#define ACKED_RING 256
#define ACKED_INDEX 4096
#define ACKED_WAYS 8
#define ACKED_HANDLE ((1ull << 48) - 1)	/* user addresses: 47 bits */

static uint32_t acked_next;	/* acks noted so far */
static struct acked_way {
	uintptr_t key;		/* 0: empty */
	uint64_t val;		/* ack number << 48 | event handle */
} acked_index[ACKED_INDEX];

/* Acked within the last ACKED_RING acks (n: acks noted now)? */
static bool recent(uint32_t seq, uint32_t n)
{
	return seq && n - (seq - 1) <= ACKED_RING;
}

static struct acked_way *bucket(uintptr_t key)
{
	return &acked_index[(unsigned)(((uint64_t)key * 0x9E3779B97F4A7C15ull)
				       >> 40) % (ACKED_INDEX / ACKED_WAYS) *
			    ACKED_WAYS];
}

void rc_ledger_note(struct rc_obj *o, void *arg)
{
	struct rc_ack *a = arg;
	struct rdma_cm_event *ev = a->ev;

	a->seq = __atomic_add_fetch(&acked_next, 1, __ATOMIC_RELAXED);
	if (!a->seq)	/* 0 means never acked here: skip it */
		a->seq = __atomic_add_fetch(&acked_next, 1, __ATOMIC_RELAXED);
	a->conn = (uintptr_t)&ev->param.conn;
	/* A multicast event's private_data is the user's join context. */
	a->pdata = ev->event != RDMA_CM_EVENT_MULTICAST_JOIN &&
		   ev->event != RDMA_CM_EVENT_MULTICAST_ERROR ?
		   (uintptr_t)ev->param.conn.private_data : 0;
	o->u.ev.ack_seq = a->seq;
	o->u.ev.pdata = a->pdata;
}

/* Put key (of the event at h, ack number seq) in its bucket. */
static void key_put(uintptr_t key, uintptr_t h, uint32_t seq)
{
	struct acked_way *b = bucket(key), *w = NULL;
	uint64_t v, nv = (uint64_t)seq << 48 | (h & ACKED_HANDLE);
	unsigned i, age, oldest = 0;

	if (!key)
		return;
	for (i = 0; i < ACKED_WAYS; i++) {
		if (__atomic_load_n(&b[i].key, __ATOMIC_RELAXED) == key) {
			w = &b[i];
			break;
		}
		v = __atomic_load_n(&b[i].val, __ATOMIC_RELAXED);
		age = (uint16_t)(seq - (v >> 48));
		if (!v || age > ACKED_RING) {
			/* Empty or stale: take it, and stop looking (a copy
			 * of the key further on is harmless: every hit is
			 * confirmed by the record it names). */
			w = &b[i];
			break;
		}
		if (age > oldest) {
			oldest = age;
			w = &b[i];
		}
	}
	if (!w)
		w = b;
	__atomic_store_n(&w->val, nv, __ATOMIC_RELAXED);
	__atomic_store_n(&w->key, key, __ATOMIC_RELEASE);
}

void rc_ledger_index(const struct rc_obj *e, const struct rc_ack *a)
{
	key_put(a->conn, e->handle, a->seq);
	key_put(a->pdata, e->handle, a->seq);
}

void rc_ledger_acked(const struct rc_obj *e, struct rdma_cm_event *ev)
{
	struct rc_ack a = { ev, 0, 0, 0 };

	if (rc_reg_update(e->handle, e->gen, rc_ledger_note, &a))
		rc_ledger_index(e, &a);
}

/*
 * The acked event ptr belongs to, if it was acked within the last
 * ACKED_RING acks and not fetched again since: its record in *e.
 */
static bool acked_event(uintptr_t ptr, struct rc_obj *e)
{
	struct acked_way *b = bucket(ptr);
	uint32_t n = __atomic_load_n(&acked_next, __ATOMIC_RELAXED);
	unsigned i;

#pragma GCC unroll 8
	for (i = 0; i < ACKED_WAYS; i++) {
		/* Compared relaxed; a match is read again with acquire,
		 * to see the handle written before it. */
		if (RC_LIKELY(__atomic_load_n(&b[i].key, __ATOMIC_RELAXED) !=
			      ptr) ||
		    __atomic_load_n(&b[i].key, __ATOMIC_ACQUIRE) != ptr)
			continue;
		/* The event's address may have been handed out again. */
		if (rc_reg_get(__atomic_load_n(&b[i].val, __ATOMIC_RELAXED) &
			       ACKED_HANDLE, e) &&
		    e->kind == RC_K_EVENT && e->destroyed &&
		    recent(e->u.ev.ack_seq, n) &&
		    ((uintptr_t)&((struct rdma_cm_event *)e->handle)->
		     param.conn == ptr || e->u.ev.pdata == ptr))
			return true;
	}
	return false;
}

/*
 * Report ptr (a conn_param or private data pointer a user call passes) if
 * it belongs to an event acked already and not fetched again since.
 */
static __attribute__((noinline)) void
report_use_after_ack(struct rc_call *c, const void *ptr, const char *what,
		     const struct rc_obj *ev)
{
	struct rc_obj e = *ev;
	struct rc_finding f;

	rc_finding_init(&f, RC_R_EVENT_USE_AFTER_ACK, c,
			"%s: %s %p points into event %p, acked already "
			"(freed memory)", rc_fn_info[c->fn].name, what, ptr,
			(void *)e.handle);
	rc_finding_add(&f, &e, "%s event", rc_event_name(e.u.ev.type));
	rc_report(&f);
}

void rc_check_use_after_ack(struct rc_call *c, const void *ptr,
			    const char *what)
{
	struct rc_obj e;

	if (ptr && acked_event((uintptr_t)ptr, &e))
		report_use_after_ack(c, ptr, what, &e);
}

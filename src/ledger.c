/*
 * ledger.c - the event ledger's questions: which events charged to an id
 * (or fetched from a channel) are still unacked, who holds them, and which
 * ids still use a channel.  The counters live in the registry records and
 * are kept by wrap_event.c; the scans here run only when a counter says
 * there is something to report, so the common path stays O(1).  Also the
 * parameter pointers of the last acked events, for event-use-after-ack.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "options.h"
#include <rdma/rdma_cma.h>

#include "wrap.h"

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
};

static const char *const holder_note[] = {
	[RC_HOLDER_CALLER] = " (the caller)",
	[RC_HOLDER_LIVE] = "",
	[RC_HOLDER_EXITED] = " (exited)",
	[RC_HOLDER_UNKNOWN] = "",
};

static void scan_fn(const struct rc_obj *o, void *arg)
{
	struct scan_ctx *x = arg;
	const struct rc_ref *r;
	enum rc_holder h;

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
	if (x->s->f)
		rc_finding_add(x->s->f, o, "%s, fetched by thread %d%s, not "
			       "acked", rc_event_name(o->u.ev.type),
			       o->u.ev.holder, holder_note[h]);
}

void rc_ledger_scan_id(const struct rc_obj *id, pid_t caller,
		       struct rc_ledger_scan *s)
{
	struct scan_ctx x = { BY_ID, rc_ref_of(id), caller, s };

	rc_reg_foreach(scan_fn, &x);
}

void rc_ledger_scan_channel(const struct rc_obj *ch, pid_t caller,
			    struct rc_ledger_scan *s)
{
	struct scan_ctx x = { BY_CHANNEL, rc_ref_of(ch), caller, s };

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
 * the calling thread or by a thread that has exited, nobody can ack them:
 * the call would never return.
 */
bool rc_ledger_check_unacked(struct rc_call *c, const struct rc_obj *o,
			     enum rc_rule rule)
{
	bool mc = o->kind == RC_K_MCAST;
	struct scan_ctx x = { mc ? BY_MC : BY_ID, rc_ref_of(o), c->tid, NULL };
	struct rc_ledger_scan s = { 0 };
	struct rc_finding f;
	unsigned stuck;
	size_t len;
	bool refuse;

	if ((mc ? o->u.mc.unacked : o->u.id.unacked) <= 0)
		return true;
	rc_finding_init(&f, rule, c, "x");
	rc_finding_add(&f, o, NULL);
	s.f = &f;
	x.s = &s;
	rc_reg_foreach(scan_fn, &x);
	stuck = s.by_caller + s.by_exited;
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
	snprintf(f.message + len, sizeof(f.message) - len,
		 "%s%s%s, so the call would never return%s",
		 s.by_caller ? "the calling thread" : "",
		 s.by_caller && s.by_exited ? " and " : "",
		 s.by_exited > 1 ? "threads that have exited" :
		 s.by_exited ? "a thread that has exited" : "",
		 refuse ? " (not forwarded: returns -1/EBUSY)" : "");
	rc_report(&f);
	if (refuse)
		errno = EBUSY;
	return !refuse;
}

/*
 * The parameter pointers of recently acked events.  Only exact matches
 * count (&event->param.conn, and param.conn.private_data): those are what
 * programs pass on, and an unrelated allocation cannot start at the first.
 * The last ACKED_RING acks are kept in a ring, and an index (open
 * addressing, pointer -> newest ring entry with it) answers a check in
 * constant time instead of a scan of the ring.
 */
#define ACKED_RING 256
#define ACKED_INDEX (4 * ACKED_RING)	/* two keys per entry, load <= 1/2 */

static struct acked {
	struct rc_ref ev;
	uintptr_t conn;		/* &event->param.conn */
	uintptr_t pdata;	/* event->param.conn.private_data */
} acked[ACKED_RING];
static unsigned acked_next;
static struct acked_key {
	uintptr_t key;		/* 0: empty */
	unsigned pos;		/* its entry in acked[] */
} acked_index[ACKED_INDEX];
static pthread_mutex_t acked_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned key_home(uintptr_t key)
{
	return (unsigned)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 32) &
	       (ACKED_INDEX - 1);
}

/* The index slot of key, or the empty one where it would go. */
static unsigned key_slot(uintptr_t key)
{
	unsigned i = key_home(key);

	while (acked_index[i].key && acked_index[i].key != key)
		i = (i + 1) & (ACKED_INDEX - 1);
	return i;
}

static void key_put(uintptr_t key, unsigned pos)
{
	if (key)
		acked_index[key_slot(key)] = (struct acked_key){ key, pos };
}

/* Drop key if it still names entry pos (a newer ack may have taken it). */
static void key_drop(uintptr_t key, unsigned pos)
{
	unsigned i, j, k;

	if (!key)
		return;
	i = key_slot(key);
	if (acked_index[i].key != key || acked_index[i].pos != pos)
		return;
	/* Backward-shift deletion, as in the registry's tables. */
	for (j = i;;) {
		j = (j + 1) & (ACKED_INDEX - 1);
		if (!acked_index[j].key)
			break;
		k = key_home(acked_index[j].key);
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		acked_index[i] = acked_index[j];
		i = j;
	}
	acked_index[i].key = 0;
}

void rc_ledger_acked(const struct rc_obj *e, struct rdma_cm_event *ev)
{
	struct acked a = { rc_ref_of(e), (uintptr_t)&ev->param.conn, 0 };
	unsigned pos;

	/* A multicast event's private_data is the user's join context. */
	if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN &&
	    ev->event != RDMA_CM_EVENT_MULTICAST_ERROR)
		a.pdata = (uintptr_t)ev->param.conn.private_data;
	pthread_mutex_lock(&acked_lock);
	pos = acked_next++ % ACKED_RING;
	key_drop(acked[pos].conn, pos);
	key_drop(acked[pos].pdata, pos);
	acked[pos] = a;
	key_put(a.conn, pos);
	key_put(a.pdata, pos);
	pthread_mutex_unlock(&acked_lock);
}

void rc_acked_atfork_child(void)
{
	pthread_mutex_init(&acked_lock, NULL);
}

/*
 * Report ptr (a conn_param or private data pointer a user call passes) if
 * it belongs to an event acked already and not fetched again since.
 */
void rc_check_use_after_ack(struct rc_call *c, const void *ptr,
			    const char *what)
{
	struct rc_finding f;
	struct rc_obj e;
	struct acked a;
	bool hit;
	unsigned i;

	if (!ptr)
		return;
	pthread_mutex_lock(&acked_lock);
	i = key_slot((uintptr_t)ptr);
	hit = acked_index[i].key != 0;
	if (hit)
		a = acked[acked_index[i].pos];
	pthread_mutex_unlock(&acked_lock);
	/* The event's address may have been handed out again since. */
	if (!hit || !rc_reg_get(a.ev.h, &e) || e.gen != a.ev.gen ||
	    !e.destroyed)
		return;
	rc_finding_init(&f, RC_R_EVENT_USE_AFTER_ACK, c,
			"%s: %s %p points into event %p, acked already "
			"(freed memory)", rc_fn_info[c->fn].name, what, ptr,
			(void *)e.handle);
	rc_finding_add(&f, &e, "%s event", rc_event_name(e.u.ev.type));
	rc_report(&f);
}

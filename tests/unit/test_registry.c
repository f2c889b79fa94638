/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_registry.c - unit tests for the registry (src/core/registry.c) and the
 * event ledger's scans (src/shim/ledger.c): records in and out, generations,
 * destroy and quarantine eviction, growth, backward-shift deletion,
 * concurrent use, and who-holds-what questions the rules ask; the
 * lock-free completion event counts per CQ (src/shim/cqcount.c).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "core/lock.h"
#include "core/options.h"
#include "core/registry.h"
#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/cqcount.h"

/* Captures are not needed (the lifecycle is not linked in: the call
 * protocol's default hooks do nothing). */
rc_stack_id rc_stack_capture(void)
{
	return 0;
}

rc_stack_id rc_stack_capture_at(unsigned site, const void *frame)
{
	return 0;
}

void rc_stack_skip_changed(void)
{
}

bool rc_stack_holds(const void *p, size_t len)
{
	(void)p;
	(void)len;
	return false;
}

static void setup(void)
{
	rc_options_defaults();
	rc_reg_init();
	rc_report_init();
}

static struct rc_obj mk(uintptr_t h, enum rc_kind kind)
{
	struct rc_obj o;

	memset(&o, 0, sizeof(o));
	o.handle = h;
	o.kind = kind;
	o.pid = rc_pid();
	o.created_stack = 7;
	return o;
}

/* Handles spread like heap pointers, far from other tests' ranges. */
static uintptr_t handle(unsigned base, unsigned i)
{
	return ((uintptr_t)base << 32) + (uintptr_t)i * 48 + 16;
}

START_TEST(insert_get_update)
{
	struct rc_obj o = mk(handle(1, 1), RC_K_ID), got;
	uint32_t gen = rc_reg_insert(&o);

	ck_assert_uint_ne(gen, 0);
	ck_assert(rc_reg_get(o.handle, &got));
	ck_assert_uint_eq(got.gen, gen);
	ck_assert_int_eq(got.kind, RC_K_ID);
	ck_assert(!got.destroyed);
	ck_assert(!rc_reg_get(handle(1, 2), &got));
	ck_assert(!rc_reg_get(0, &got));

	RC_REG_ADD(rc_ref_of(&o), u.id.unacked, 3);
	RC_REG_ADD(rc_ref_of(&o), u.id.unacked, -1);
	ck_assert(rc_reg_get(o.handle, &got));
	ck_assert_int_eq(got.u.id.unacked, 2);
	/* A stale generation changes nothing. */
	RC_REG_ADD(((struct rc_ref){ o.handle, gen + 1000 }), u.id.unacked, 5);
	ck_assert(rc_reg_get(o.handle, &got));
	ck_assert_int_eq(got.u.id.unacked, 2);
}
END_TEST

/*
 * A record keeps only its kind's bytes, but a copy out is a whole struct
 * rc_obj, read as one (rc_v_gone walks every use of any verbs object): a
 * PD's copy into a buffer that held a QP's must not keep the QP's uses.
 */
START_TEST(short_records_copy_out_zeroes)
{
	struct rc_obj qp = mk(handle(21, 1), RC_K_QP);
	struct rc_obj pd = mk(handle(21, 2), RC_K_PD), got;
	unsigned i;

	for (i = 0; i < 3; i++)
		qp.u.vb.use[i] = (struct rc_ref){ handle(21, 10 + i), 5 + i };
	qp.u.vb.async_unacked = 9;
	pd.u.vb.nchild = 4;
	ck_assert_uint_ne(rc_reg_insert(&qp), 0);
	ck_assert_uint_ne(rc_reg_insert(&pd), 0);
	ck_assert(rc_reg_get(qp.handle, &got));
	ck_assert_uint_eq(got.u.vb.use[2].h, handle(21, 12));
	ck_assert_int_eq(got.u.vb.async_unacked, 9);
	ck_assert(rc_reg_get(pd.handle, &got));
	ck_assert_int_eq(got.kind, RC_K_PD);
	ck_assert_int_eq(got.u.vb.nchild, 4);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(got.u.vb.use[i].h, 0);
	ck_assert_int_eq(got.u.vb.async_unacked, 0);
	ck_assert_uint_eq(got.u.vb.async_ev.stack, 0);
}
END_TEST

START_TEST(destroy_and_reuse)
{
	struct rc_obj o = mk(handle(2, 1), RC_K_EVENT), got;
	uint32_t gen = rc_reg_insert(&o), gen2;

	ck_assert(!rc_reg_destroy(o.handle, gen + 1, 11, 12));
	ck_assert(rc_reg_destroy(o.handle, gen, 11, 12));
	ck_assert(!rc_reg_destroy(o.handle, gen, 11, 12));
	ck_assert(rc_reg_get(o.handle, &got));
	ck_assert(got.destroyed);
	ck_assert_int_eq(got.destroyed_tid, 11);
	ck_assert_uint_eq(got.destroyed_stack, 12);
	/* Counters of a destroyed record stay put. */
	RC_REG_ADD(rc_ref_of(&got), u.ev.type, 1);
	ck_assert(rc_reg_get(o.handle, &got));
	ck_assert_int_eq(got.u.ev.type, 0);
	/* The allocator hands the address out again: a new life. */
	gen2 = rc_reg_insert(&o);
	ck_assert_uint_ne(gen2, gen);
	ck_assert(rc_reg_get(o.handle, &got));
	ck_assert(!got.destroyed);
	ck_assert_uint_eq(got.gen, gen2);
}
END_TEST

START_TEST(quarantine_evicts_oldest)
{
	const unsigned n = 20000;
	struct rc_obj o, got;
	unsigned i;

	rc_reg_set_quarantine(4000);
	for (i = 0; i < n; i++) {
		o = mk(handle(3, i), RC_K_CHANNEL);
		rc_reg_insert(&o);
		ck_assert(rc_reg_destroy(o.handle, o.gen, 1, 1));
	}
	/* The first destroyed are forgotten, the last still quarantined. */
	ck_assert(!rc_reg_get(handle(3, 0), &got));
	ck_assert(!rc_reg_get(handle(3, 1000), &got));
	for (i = n - 2000; i < n; i++) {
		ck_assert(rc_reg_get(handle(3, i), &got));
		ck_assert(got.destroyed);
	}
	rc_reg_set_quarantine(0);
}
END_TEST

/*
 * Churn at reused addresses replaces destroyed records instead of piling
 * them up: a record destroyed once stays however much churn follows (a
 * FIFO of destroys forgot it after its length).
 */
START_TEST(reused_addresses_keep_the_quarantine)
{
	struct rc_obj o, got;
	unsigned i;

	rc_reg_set_quarantine(100);
	o = mk(handle(6, 999), RC_K_EVENT);
	rc_reg_insert(&o);
	ck_assert(rc_reg_destroy(o.handle, o.gen, 1, 1));
	for (i = 0; i < 100000; i++) {
		o = mk(handle(6, i % 10), RC_K_EVENT);
		rc_reg_insert(&o);
		ck_assert(rc_reg_destroy(o.handle, o.gen, 1, 1));
	}
	ck_assert(rc_reg_get(handle(6, 999), &got));
	ck_assert(got.destroyed);
	rc_reg_set_quarantine(0);
}
END_TEST

/* The allocator gave a destroyed event's memory to an id: the event's
 * record is still found for its kind, the id's for its own. */
/* Every rc_lock of the registry, counted (linked with --wrap=rc_lock). */
void __real_rc_lock(struct rc_lock *l);
void __wrap_rc_lock(struct rc_lock *l);
static __thread unsigned locks_taken;

void __wrap_rc_lock(struct rc_lock *l)
{
	locks_taken++;
	__real_rc_lock(l);
}

START_TEST(another_kind_at_the_address)
{
	struct rc_obj ev = mk(handle(7, 1), RC_K_EVENT), id, got;
	uint32_t gen = rc_reg_insert(&ev);

	ck_assert(rc_reg_destroy(ev.handle, gen, 1, 1));
	id = mk(handle(7, 1), RC_K_ID);
	/* The burial is in the address's shard: no second lock. */
	locks_taken = 0;
	rc_reg_insert(&id);
	ck_assert_uint_eq(locks_taken, 1);
	ck_assert(rc_reg_get(handle(7, 1), &got));
	ck_assert_int_eq(got.kind, RC_K_ID);
	ck_assert(!got.destroyed);
	ck_assert(rc_reg_get_kind(handle(7, 1), RC_K_EVENT, &got));
	ck_assert_int_eq(got.kind, RC_K_EVENT);
	ck_assert(got.destroyed);
	ck_assert_uint_eq(got.handle, handle(7, 1));
	ck_assert_uint_eq(got.gen, gen);
	ck_assert_int_eq(rc_reg_take(handle(7, 1), RC_K_EVENT, 0, 1, 1, &got),
			 RC_TAKE_DESTROYED);
	ck_assert(!rc_reg_get_kind(handle(7, 1), RC_K_CHANNEL, &got));
}
END_TEST

/*
 * Tables grow by moving a few records per call: every record stays found
 * (live or destroyed) at every step, while records are added, destroyed
 * and pushed out of the quarantine in between.
 */
START_TEST(incremental_growth_finds_everything)
{
	const unsigned n = 60000;
	struct rc_obj o, got;
	unsigned i, j;

	for (i = 0; i < n; i++) {
		o = mk(handle(8, i), RC_K_ID);
		ck_assert_uint_ne(rc_reg_insert(&o), 0);
		if (i % 3 == 0)
			ck_assert(rc_reg_destroy(o.handle, o.gen, 1, 1));
		/* A spread of earlier ones, wherever they are now. */
		for (j = i; j; j /= 2) {
			ck_assert(rc_reg_get(handle(8, j), &got));
			ck_assert_int_eq(got.destroyed, j % 3 == 0);
		}
	}
	ck_assert_uint_eq(rc_reg_live(), n - (n + 2) / 3);
}
END_TEST

/* Once most records are destroyed and forgotten, the tables shrink. */
START_TEST(memory_returned_after_destroy)
{
	const unsigned n = 50000;
	struct rc_obj o;
	unsigned long peak;
	unsigned i;

	rc_reg_set_quarantine(1000);
	for (i = 0; i < n; i++) {
		o = mk(handle(9, i), RC_K_MR);
		rc_reg_insert(&o);
	}
	peak = rc_reg_slots();
	ck_assert_uint_ge(peak, 2 * n);
	for (i = 0; i < n; i++)
		ck_assert(rc_reg_take(handle(9, i), RC_K_MR, 0, 1, 1, &o) ==
			  RC_TAKE_TAKEN);
	/* A shard shrinks a step per call: let a program go on a while, at
	 * addresses its allocator hands out again. */
	for (i = 0; i < 20000 && rc_reg_slots() > peak / 8; i++) {
		o = mk(handle(10, i % 1024), RC_K_MR);
		rc_reg_insert(&o);
		rc_reg_destroy(o.handle, o.gen, 1, 1);
	}
	/* Left: the quarantine's share per shard, at load >= 1/8. */
	ck_assert_uint_le(rc_reg_slots(), peak / 8);
	ck_assert_uint_eq(rc_reg_live(), 0);
	rc_reg_set_quarantine(0);
}
END_TEST

START_TEST(take_and_get_add)
{
	struct rc_obj o = mk(handle(5, 1), RC_K_EVENT), got;

	o.flags = RC_F_LIB;
	rc_reg_insert(&o);
	/* Kept: it has a flag we asked to keep. */
	ck_assert_int_eq(rc_reg_take(o.handle, RC_K_EVENT, RC_F_LIB, 3, 4,
				     &got), RC_TAKE_KEPT);
	ck_assert(rc_reg_get(o.handle, &got) && !got.destroyed);
	/* Another kind is never taken. */
	ck_assert_int_eq(rc_reg_take(o.handle, RC_K_ID, 0, 3, 4, &got),
			 RC_TAKE_NONE);
	ck_assert_int_eq(rc_reg_take(o.handle, RC_K_EVENT, 0, 3, 4, &got),
			 RC_TAKE_TAKEN);
	ck_assert(!got.destroyed);	/* the record as it was */
	ck_assert(rc_reg_get(o.handle, &got) && got.destroyed);
	ck_assert_int_eq(got.destroyed_tid, 3);
	ck_assert_uint_eq(got.destroyed_stack, 4);
	ck_assert_int_eq(rc_reg_take(o.handle, RC_K_EVENT, 0, 3, 4, &got),
			 RC_TAKE_DESTROYED);
	ck_assert_int_eq(rc_reg_take(handle(5, 2), RC_K_EVENT, 0, 3, 4, &got),
			 RC_TAKE_NONE);
	ck_assert_uint_eq(got.handle, 0);

	o = mk(handle(5, 3), RC_K_CHANNEL);
	rc_reg_insert(&o);
	ck_assert(RC_REG_GET_ADD(o.handle, RC_K_CHANNEL, u.ch.waiters, 2,
				 &got));
	ck_assert_int_eq(got.u.ch.waiters, 2);
	ck_assert(!RC_REG_GET_ADD(o.handle, RC_K_ID, u.id.unacked, 1, &got));
	rc_reg_destroy(o.handle, o.gen, 1, 1);
	ck_assert(!RC_REG_GET_ADD(o.handle, RC_K_CHANNEL, u.ch.waiters, 1,
				  &got));
}
END_TEST

struct count {
	unsigned live, destroyed;
	unsigned base;
};

static void count_fn(const struct rc_obj *o, void *arg)
{
	struct count *c = arg;

	if (o->handle >> 32 != c->base)
		return;
	if (o->destroyed)
		c->destroyed++;
	else
		c->live++;
}

START_TEST(growth_and_deletion_keep_chains)
{
	const unsigned n = 100000;
	struct count c = { 0, 0, 4 };
	struct rc_obj o, got;
	unsigned i;

	for (i = 0; i < n; i++) {
		o = mk(handle(4, i), RC_K_ID);
		rc_reg_insert(&o);
	}
	/* Destroy every other one, enough to push many out of quarantine:
	 * their removal shifts probe chains that the rest must survive. */
	for (i = 0; i < n; i += 2) {
		ck_assert(rc_reg_get(handle(4, i), &got));
		ck_assert(rc_reg_destroy(got.handle, got.gen, 1, 1));
	}
	for (i = 1; i < n; i += 2) {
		ck_assert(rc_reg_get(handle(4, i), &got));
		ck_assert(!got.destroyed);
	}
	rc_reg_foreach(count_fn, &c);
	ck_assert_uint_eq(c.live, n / 2);
	/* The quarantined stay in the registry, out of the walk. */
	ck_assert_uint_eq(c.destroyed, 0);
	ck_assert(rc_reg_get(handle(4, n - 2), &got) && got.destroyed);
}
END_TEST

static void *hammer(void *arg)
{
	unsigned base = 10 + (unsigned)(uintptr_t)arg, i;
	struct rc_obj o;

	for (i = 0; i < 20000; i++) {
		o = mk(handle(base, i), RC_K_ID);
		rc_reg_insert(&o);
		if (i & 1)
			rc_reg_destroy(o.handle, o.gen, 1, 1);
	}
	return NULL;
}

START_TEST(threads)
{
	pthread_t t[4];
	struct count c;
	uintptr_t i;

	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer,
						(void *)i), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 4; i++) {
		memset(&c, 0, sizeof(c));
		c.base = 10 + i;
		rc_reg_foreach(count_fn, &c);
		ck_assert_uint_eq(c.live, 10000);
	}
}
END_TEST

/* An event's charge settled through the cell its fetch found (the ack's
 * path): the same count as a lookup's, and nothing once the id is gone. */
START_TEST(tally_through_a_kept_cell)
{
	struct rc_tally_cell *cell = NULL;
	struct rc_obj id, got;
	struct rc_ref ref;
	int now = -1;

	id = mk(handle(41, 0), RC_K_ID);
	rc_reg_insert(&id);
	ck_assert(rc_tally_find_add(id.handle, RC_K_ID, RC_T_ID_UNACKED, 2,
				    &ref, &cell));
	ck_assert_ptr_nonnull(cell);
	ck_assert(rc_tally_add_cell(ref, cell, RC_T_ID_UNACKED, -1, &now));
	ck_assert_int_eq(now, 1);
	ck_assert(rc_reg_get(id.handle, &got));
	ck_assert_int_eq(got.u.id.unacked, 1);
	/* Without a cell: the lookup, the same count. */
	ck_assert(rc_tally_add_cell(ref, NULL, RC_T_ID_UNACKED, -1, &now));
	ck_assert_int_eq(now, 0);
	/* Destroyed, then a new life at the address: the kept cell is the
	 * address's, its generation check refuses the old reference. */
	ck_assert(rc_reg_destroy(id.handle, id.gen, 1, 1));
	ck_assert(!rc_tally_add_cell(ref, cell, RC_T_ID_UNACKED, 1, NULL));
	id = mk(handle(41, 0), RC_K_ID);
	rc_reg_insert(&id);
	ck_assert(!rc_tally_add_cell(ref, cell, RC_T_ID_UNACKED, 1, NULL));
	ck_assert(rc_reg_get(id.handle, &got));
	ck_assert_int_eq(got.u.id.unacked, 0);
}
END_TEST

/* An id with three unacked events, two of them held by thread 100. */
static void ledger_fixture(struct rc_obj *ch, struct rc_obj *id)
{
	struct rc_obj e;
	unsigned i;

	*ch = mk(handle(20, 0), RC_K_CHANNEL);
	rc_reg_insert(ch);
	*id = mk(handle(20, 1), RC_K_ID);
	id->u.id.channel = rc_ref_of(ch);
	id->u.id.unacked = 3;
	rc_reg_insert(id);
	for (i = 0; i < 4; i++) {
		e = mk(handle(20, 10 + i), RC_K_EVENT);
		e.u.ev.id = rc_ref_of(id);
		e.u.ev.channel = rc_ref_of(ch);
		e.u.ev.holder = i < 2 ? 100 : 200;
		/* The fourth is the library's own: never counted. */
		if (i == 3)
			e.flags = RC_F_LIB;
		rc_reg_insert(&e);
	}
}

START_TEST(ledger_scans)
{
	struct rc_ledger_scan s = { 0 };
	struct rc_obj ch, id;
	struct rc_finding f;

	ledger_fixture(&ch, &id);
	rc_ledger_scan_id(&id, 100, &s);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_uint_eq(s.by_caller, 2);
	memset(&s, 0, sizeof(s));
	rc_ledger_scan_channel(&ch, 300, &s);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_uint_eq(s.by_caller, 0);
	memset(&f, 0, sizeof(f));
	rc_ledger_ids_on_channel(&ch, &f);
	ck_assert_uint_eq(f.nobjs, 1);
	ck_assert_uint_eq(f.objs[0].handle, id.handle);
}
END_TEST

START_TEST(ledger_refuses_certain_hang)
{
	struct rc_call c = { .fn = RC_FN_rdma_destroy_id, .tid = 100 };
	struct rc_obj ch, id;

	ledger_fixture(&ch, &id);
	errno = 0;
	ck_assert(!rc_ledger_check_unacked(&c, &id,
				RC_R_ID_DESTROY_WITH_UNACKED_EVENTS));
	ck_assert_int_eq(errno, EBUSY);
	/* Held only by other threads: reported, but it may go on. */
	c.tid = 300;
	ck_assert(rc_ledger_check_unacked(&c, &id,
				RC_R_ID_DESTROY_WITH_UNACKED_EVENTS));
	/* protect=0 forwards even the certain hang. */
	c.tid = 100;
	rc_opt.protect = false;
	ck_assert(rc_ledger_check_unacked(&c, &id,
				RC_R_ID_DESTROY_WITH_UNACKED_EVENTS));
	rc_opt.protect = true;
	/* Nothing unacked: nothing to say. */
	id.u.id.unacked = 0;
	ck_assert(rc_ledger_check_unacked(&c, &id,
				RC_R_ID_DESTROY_WITH_UNACKED_EVENTS));
}
END_TEST

/* The last 256 acked events' parameter pointers, found by the index. */
static unsigned findings(void)
{
	struct rc_summary sum;

	rc_report_summary(&sum);
	return sum.errors + sum.warnings;
}

START_TEST(ledger_acked_index)
{
	static struct rdma_cm_event evs[300];
	static char pdata[300];
	struct rc_call c = { .fn = RC_FN_rdma_connect, .tid = 100 };
	struct rc_obj e;
	unsigned i, n;

	for (i = 0; i < 300; i++) {
		evs[i].event = RDMA_CM_EVENT_CONNECT_RESPONSE;
		evs[i].param.conn.private_data = &pdata[i];
		e = mk((uintptr_t)&evs[i], RC_K_EVENT);
		rc_reg_insert(&e);
		ck_assert(rc_reg_destroy(e.handle, e.gen, 1, 1));
		rc_ledger_acked(&e, &evs[i]);
	}
	n = findings();
	rc_check_use_after_ack(&c, &evs[299].param.conn, "conn_param");
	ck_assert_uint_eq(findings(), ++n);
	rc_check_use_after_ack(&c, &pdata[100], "private data");
	ck_assert_uint_eq(findings(), ++n);
	/* Pushed out of the ring, or never acked: nothing. */
	rc_check_use_after_ack(&c, &evs[0].param.conn, "conn_param");
	rc_check_use_after_ack(&c, &pdata[43], "private data");
	rc_check_use_after_ack(&c, &evs[299], "conn_param");
	ck_assert_uint_eq(findings(), n);
	rc_check_use_after_ack(&c, &pdata[44], "private data");
	ck_assert_uint_eq(findings(), ++n);
	/* The event's memory came back as a new event: no longer acked. */
	e = mk((uintptr_t)&evs[299], RC_K_EVENT);
	rc_reg_insert(&e);
	rc_check_use_after_ack(&c, &evs[299].param.conn, "conn_param");
	ck_assert_uint_eq(findings(), n);
}
END_TEST

/*
 * The counters others charge, in cells: charged without a lock, checked
 * against the generation, carried by every copy, kept when destroyed.
 */
START_TEST(tally_cells)
{
	struct rc_obj ch = mk(handle(40, 0), RC_K_CHANNEL), got;
	struct rc_ref old, ref;
	int now = 0;

	ch.u.ch.nids = 1;
	rc_reg_insert(&ch);
	old = (struct rc_ref){ ch.handle, ch.gen };
	ck_assert(rc_tally_add(old, RC_T_CH_NIDS, 2, &now));
	ck_assert_int_eq(now, 3);
	ck_assert(rc_tally_add(old, RC_T_CH_WAITERS, 1, NULL));
	ck_assert(rc_reg_get(ch.handle, &got));
	ck_assert_int_eq(got.u.ch.nids, 3);
	ck_assert_int_eq(got.u.ch.waiters, 1);
	/* The locked counter ops see the same counts. */
	ck_assert(RC_REG_GET_ADD(ch.handle, RC_K_CHANNEL, u.ch.unacked, 4,
				 &got));
	ck_assert_int_eq(got.u.ch.unacked, 4);
	RC_REG_ADD(old, u.ch.nids, -1);
	ck_assert(rc_tally_add(old, RC_T_CH_NIDS, 0, &now));
	ck_assert_int_eq(now, 2);
	/* A stale generation changes nothing. */
	ck_assert(!rc_tally_add((struct rc_ref){ ch.handle, ch.gen + 1 },
				RC_T_CH_NIDS, 1, NULL));
	/* Not an id: no id's counter found there. */
	ck_assert(!rc_tally_find_add(ch.handle, RC_K_ID, RC_T_ID_UNACKED, 1,
				     &ref, NULL));
	ck_assert(rc_tally_find_add(ch.handle, RC_K_CHANNEL, RC_T_CH_UNACKED,
				    1, &ref, NULL));
	ck_assert_uint_eq(ref.gen, ch.gen);
	/* Destroyed: the last values stay with the record, charges fail. */
	ck_assert(rc_reg_take(ch.handle, RC_K_CHANNEL, 0, 1, 1, &got) ==
		  RC_TAKE_TAKEN);
	ck_assert_int_eq(got.u.ch.unacked, 5);
	ck_assert(!rc_tally_add(old, RC_T_CH_NIDS, 1, NULL));
	ck_assert(rc_reg_get(ch.handle, &got) && got.destroyed);
	ck_assert_int_eq(got.u.ch.nids, 2);
	ck_assert_int_eq(got.u.ch.unacked, 5);
	ck_assert_int_eq(got.u.ch.waiters, 1);
	/* A new life at the address counts from its own values. */
	ch = mk(handle(40, 0), RC_K_CHANNEL);
	rc_reg_insert(&ch);
	ck_assert(!rc_tally_add(old, RC_T_CH_NIDS, 1, NULL));
	ck_assert(rc_tally_add((struct rc_ref){ ch.handle, ch.gen },
			       RC_T_CH_NIDS, 1, &now));
	ck_assert_int_eq(now, 1);
	ck_assert(rc_reg_get(ch.handle, &got));
	ck_assert_int_eq(got.u.ch.unacked, 0);
	/* Another kind takes the address: the cell is not its. */
	got = mk(handle(40, 0), RC_K_QP);
	rc_reg_insert(&got);
	ck_assert(!rc_tally_add((struct rc_ref){ ch.handle, ch.gen },
				RC_T_CH_NIDS, 1, NULL));
	ck_assert(!rc_tally_find_add(ch.handle, RC_K_CHANNEL, RC_T_CH_NIDS, 1,
				     &ref, NULL));
}
END_TEST

/*
 * A verbs object's child and user counts: in a cell made with its first
 * count up (none before: cells are never freed, and most PDs, MRs and AHs
 * never have a child), from the values the record had; given back without
 * a lock from then on, checked against the generation.
 */
struct vb_charge {
	struct rc_ref ref;
	bool ok;
	int now;
};

/* Under the PD's shard lock: a charge that took the lock would hang. */
static void vb_charge_locked(struct rc_obj *o, void *arg)
{
	struct vb_charge *a = arg;

	a->ok = rc_tally_add(a->ref, RC_T_VB_NCHILD, -1, &a->now);
}

START_TEST(verbs_counts_lazy_cells)
{
	static const enum rc_kind kinds[] = { RC_K_PD, RC_K_MR, RC_K_AH,
					      RC_K_CQ, RC_K_QP };
	struct rc_obj pd = mk(handle(42, 0), RC_K_PD), o, got;
	unsigned long cells = rc_reg_cells();
	struct vb_charge a;
	struct rc_ref ref, found;
	unsigned i;
	int now = 0;

	/* No child, no user: no cell, live or destroyed. */
	for (i = 0; i < RC_ARRAY_SIZE(kinds); i++) {
		o = mk(handle(42, 1 + i), kinds[i]);
		ck_assert_uint_ne(rc_reg_insert(&o), 0);
		ck_assert(rc_reg_get(o.handle, &got));
		ck_assert_ptr_null(got.u.vb.cell);
		ck_assert(rc_reg_destroy(o.handle, o.gen, 1, 1));
	}
	ck_assert_uint_eq(rc_reg_cells(), cells);
	/* Counted in the record until then (under the lock). */
	ck_assert_uint_ne(rc_reg_insert(&pd), 0);
	ref = rc_ref_of(&pd);
	ck_assert(rc_tally_add(ref, RC_T_VB_NUSERS, 2, &now));
	ck_assert_int_eq(now, 2);
	ck_assert_uint_eq(rc_reg_cells(), cells);
	/* The first child makes the cell, which keeps the users counted. */
	ck_assert(RC_REG_GET_ADD(pd.handle, RC_K_PD, u.vb.nchild, 1, &got));
	ck_assert_int_eq(got.u.vb.nchild, 1);
	ck_assert_int_eq(got.u.vb.nusers, 2);
	ck_assert_ptr_nonnull(got.u.vb.cell);
	ck_assert_uint_eq(rc_reg_cells(), cells + 1);
	ck_assert(RC_REG_GET_ADD(pd.handle, RC_K_PD, u.vb.nchild, 1, &got));
	ck_assert_int_eq(got.u.vb.nchild, 2);
	ck_assert_uint_eq(rc_reg_cells(), cells + 1);
	/* Given back without the lock: also from under it. */
	a = (struct vb_charge){ ref, false, -1 };
	ck_assert(rc_reg_update(pd.handle, pd.gen, vb_charge_locked, &a));
	ck_assert(a.ok);
	ck_assert_int_eq(a.now, 1);
	ck_assert(rc_tally_add(ref, RC_T_VB_NCHILD, -1, &now));
	ck_assert_int_eq(now, 0);
	ck_assert(rc_tally_add(ref, RC_T_VB_NUSERS, -2, &now));
	ck_assert_int_eq(now, 0);
	ck_assert(rc_reg_get(pd.handle, &got));
	ck_assert_int_eq(got.u.vb.nchild, 0);
	ck_assert_int_eq(got.u.vb.nusers, 0);
	/* A stale generation changes nothing. */
	ck_assert(!rc_tally_add((struct rc_ref){ pd.handle, pd.gen + 1 },
				RC_T_VB_NCHILD, 1, NULL));
	ck_assert(rc_reg_get(pd.handle, &got));
	ck_assert_int_eq(got.u.vb.nchild, 0);
	/* Destroyed: keeps the last values, charges fail. */
	ck_assert(rc_tally_add(ref, RC_T_VB_NCHILD, 3, NULL));
	ck_assert(rc_reg_destroy(pd.handle, pd.gen, 1, 1));
	ck_assert(!rc_tally_add(ref, RC_T_VB_NCHILD, -1, NULL));
	ck_assert(rc_reg_get(pd.handle, &got) && got.destroyed);
	ck_assert_int_eq(got.u.vb.nchild, 3);
	/*
	 * A new PD at the address: no cell of its own yet, but the old one
	 * is there; a charge to the new record still counts (in the record,
	 * also one found by address), the old reference's does not, and its
	 * first child takes the old cell over, with the count the record
	 * had.
	 */
	pd = mk(handle(42, 0), RC_K_PD);
	ck_assert_uint_ne(rc_reg_insert(&pd), 0);
	ck_assert(rc_reg_get(pd.handle, &got));
	ck_assert_ptr_null(got.u.vb.cell);
	ck_assert_int_eq(got.u.vb.nchild, 0);
	ck_assert(!rc_tally_add(ref, RC_T_VB_NCHILD, 1, NULL));
	ck_assert(rc_tally_add(rc_ref_of(&pd), RC_T_VB_NUSERS, 2, &now));
	ck_assert_int_eq(now, 2);
	ck_assert(rc_tally_find_add(pd.handle, RC_K_PD, RC_T_VB_NUSERS, -1,
				    &found, NULL));
	ck_assert_uint_eq(found.gen, pd.gen);
	ck_assert(rc_reg_get(pd.handle, &got));
	ck_assert_ptr_null(got.u.vb.cell);
	ck_assert_int_eq(got.u.vb.nusers, 1);
	ck_assert(RC_REG_GET_ADD(pd.handle, RC_K_PD, u.vb.nchild, 1, &got));
	ck_assert_int_eq(got.u.vb.nchild, 1);
	ck_assert_int_eq(got.u.vb.nusers, 1);
	ck_assert_uint_eq(rc_reg_cells(), cells + 1);
	ck_assert(!rc_tally_add(ref, RC_T_VB_NCHILD, -1, NULL));
	ck_assert(rc_tally_add(rc_ref_of(&pd), RC_T_VB_NCHILD, -1, &now));
	ck_assert_int_eq(now, 0);
	/* Found by address, as an id's counters are. */
	ck_assert(rc_tally_find_add(pd.handle, RC_K_PD, RC_T_VB_NUSERS, -1,
				    &found, NULL));
	ck_assert_uint_eq(found.gen, pd.gen);
	ck_assert(!rc_tally_find_add(pd.handle, RC_K_CQ, RC_T_VB_NUSERS, 1,
				     &found, NULL));
	ck_assert(rc_reg_get(pd.handle, &got));
	ck_assert_int_eq(got.u.vb.nusers, 0);
}
END_TEST

/*
 * Children come and go on shared parents from four threads, the parents'
 * cells made while others charge them: every count ends at 0.
 */
#define VB_PARENTS 64
static struct rc_ref vb_parent[VB_PARENTS];

static void *vb_children(void *arg)
{
	struct rc_obj got;
	unsigned i, k;

	for (i = 0; i < 2000; i++) {
		k = (i * 7 + (unsigned)(uintptr_t)arg) % VB_PARENTS;
		ck_assert(RC_REG_GET_ADD(vb_parent[k].h, RC_K_PD,
					 u.vb.nchild, 1, &got));
		ck_assert_int_ge(got.u.vb.nchild, 1);
		ck_assert(rc_tally_add(vb_parent[k], RC_T_VB_NCHILD, -1,
				       NULL));
	}
	return NULL;
}

START_TEST(verbs_counts_threads)
{
	struct rc_obj pd, got;
	pthread_t t[4];
	uintptr_t i;

	for (i = 0; i < VB_PARENTS; i++) {
		pd = mk(handle(43, (unsigned)i), RC_K_PD);
		ck_assert_uint_ne(rc_reg_insert(&pd), 0);
		vb_parent[i] = rc_ref_of(&pd);
	}
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, vb_children,
						(void *)i), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < VB_PARENTS; i++) {
		ck_assert(rc_reg_get(vb_parent[i].h, &got));
		ck_assert_int_eq(got.u.vb.nchild, 0);
	}
}
END_TEST

/* ---- cqcount.c: completion events per CQ, without a lock ------------ */

START_TEST(cq_counts_grow_and_reuse)
{
	struct rc_cq_state st;
	struct rc_cqcount *p;
	int before;
	uintptr_t i;

	/* Far more addresses than the first table holds. */
	for (i = 0; i < 5000; i++)
		rc_cq_count_add(handle(30, i), 1);
	for (i = 0; i < 5000; i++) {
		p = rc_cq_count(handle(30, i));
		ck_assert_ptr_nonnull(p);
		/* The first fetch at a new call site wants the stack. */
		ck_assert(rc_cq_fetched(p, 7, 1, 0x1000, true));
		ck_assert(!rc_cq_fetched(p, 8, 1, 0x1000, true));
	}
	ck_assert(rc_cq_count_get(handle(30, 4999), 1, &st));
	ck_assert_int_eq(st.unacked, 2);
	ck_assert_int_eq(st.hold.tid, 7);
	ck_assert_int_eq(st.hold.multi, 1);
	ck_assert(!rc_cq_count_get(handle(30, 4999), 2, &st));
	/* Gone: no cell; back at the same address: no events yet. */
	rc_cq_count_del(handle(30, 17), 1);
	ck_assert_ptr_null(rc_cq_count(handle(30, 17)));
	rc_cq_count_add(handle(30, 17), 2);
	ck_assert(rc_cq_count_get(handle(30, 17), 2, &st));
	ck_assert_int_eq(st.unacked, 0);
	/* A stale generation does not kill the new life. */
	rc_cq_count_del(handle(30, 17), 1);
	ck_assert_ptr_nonnull(rc_cq_count(handle(30, 17)));
	/* Over-acks: clamped (protect=1), or counted below zero. */
	p = rc_cq_count(handle(30, 17));
	rc_cq_fetched(p, 7, 1, 0x1000, true);
	ck_assert_int_eq(rc_cq_acked(p, 3, true, &before), 1);
	ck_assert_int_eq(before, 1);
	ck_assert_int_eq(rc_cq_acked(p, 2, true, &before), 0);
	ck_assert_int_eq(rc_cq_acked(p, 2, false, &before), 2);
	ck_assert(rc_cq_count_get(handle(30, 17), 2, &st));
	ck_assert_int_eq(st.unacked, -2);
}
END_TEST

static void *cq_hammer(void *arg)
{
	struct rc_cqcount *p = rc_cq_count(handle(31, 0));
	uintptr_t base = (uintptr_t)arg;
	int before, i;

	for (i = 0; i < 20000; i++) {
		rc_cq_fetched(p, (pid_t)base, 1, 0x2000, true);
		ck_assert_int_eq(rc_cq_acked(p, 1, false, &before), 1);
		/* New addresses while the others read: the table grows. */
		if (i % 10 == 0)
			rc_cq_count_add(handle(40 + base, (uintptr_t)i), 1);
		ck_assert_ptr_nonnull(rc_cq_count(handle(31, 0)));
	}
	return NULL;
}

START_TEST(cq_counts_threads)
{
	struct rc_cq_state st;
	pthread_t t[4];
	uintptr_t i;

	rc_cq_count_add(handle(31, 0), 1);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, cq_hammer,
						(void *)i), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert(rc_cq_count_get(handle(31, 0), 1, &st));
	ck_assert_int_eq(st.unacked, 0);
	for (i = 0; i < 4; i++)
		ck_assert_ptr_nonnull(rc_cq_count(handle(40 + i, 19990)));
}
END_TEST

static void *cq_adder(void *arg)
{
	uintptr_t base = (uintptr_t)arg, i;

	for (i = 0; i < 30000; i++)
		rc_cq_count_add(handle(50 + base, i), 1);
	return NULL;
}

/* New addresses from four threads at once, without a lock, through ten
 * doublings: none is lost to a doubling's copy. */
START_TEST(cq_counts_concurrent_inserts)
{
	pthread_t t[4];
	uintptr_t i, j;

	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, cq_adder,
						(void *)i), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 30000; j++)
			ck_assert_msg(rc_cq_count(handle(50 + i, j)),
				      "cell %lu of thread %lu lost",
				      (unsigned long)j, (unsigned long)i);
}
END_TEST

/* Its first instruction's signal mask, as the new thread sees it. */
static void *read_mask(void *arg)
{
	pthread_sigmask(SIG_BLOCK, NULL, arg);
	return NULL;
}

/*
 * Our threads (service, watchdog) start with every signal blocked, not
 * after their own first pthread_sigmask(): in that window a SIGTERM to
 * the process could be delivered to them, whose handler then finds the
 * shim busy and kills the process without its report.
 */
START_TEST(own_threads_start_blocked)
{
	sigset_t term, mine, theirs;
	pthread_t t;

	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &term, NULL);
	sigemptyset(&theirs);
	ck_assert_int_eq(rc_thread_create(&t, NULL, read_mask, &theirs), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert(sigismember(&theirs, SIGTERM));
	ck_assert(sigismember(&theirs, SIGINT));
	ck_assert(sigismember(&theirs, SIGUSR1));
	pthread_sigmask(SIG_BLOCK, NULL, &mine);
	ck_assert(!sigismember(&mine, SIGTERM));	/* ours restored */
}
END_TEST

/* The registry's lock (lock.c): four threads in a read-modify-write that
 * loses updates unless it excludes, contended enough to sleep and wake
 * in the futex; the threads' errno survives it. */
static struct rc_lock lk = RC_LOCK_INIT;
static volatile unsigned long lk_count;
#define LK_ROUNDS 100000

static void *lock_worker(void *arg)
{
	unsigned long v;
	int i, j;

	(void)arg;
	errno = 4242;
	for (i = 0; i < LK_ROUNDS; i++) {
		rc_lock(&lk);
		v = lk_count;
		for (j = 0; j < 8; j++)
			__asm__ __volatile__("" ::: "memory");
		lk_count = v + 1;
		rc_unlock(&lk);
	}
	return (void *)(long)(errno == 4242);
}

START_TEST(lock_excludes_and_keeps_errno)
{
	pthread_t t[4];
	void *ok;
	int i;

	lk_count = 0;
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, lock_worker,
						NULL), 0);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], &ok), 0);
		ck_assert_msg(ok, "errno changed by rc_lock/rc_unlock");
	}
	ck_assert_uint_eq(lk_count, 4ul * LK_ROUNDS);
	ck_assert_int_eq(lk.v, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, insert_get_update);
	tcase_add_test(tc, short_records_copy_out_zeroes);
	tcase_add_test(tc, destroy_and_reuse);
	tcase_add_test(tc, quarantine_evicts_oldest);
	tcase_add_test(tc, reused_addresses_keep_the_quarantine);
	tcase_add_test(tc, another_kind_at_the_address);
	tcase_add_test(tc, take_and_get_add);
	tcase_add_test(tc, incremental_growth_finds_everything);
	tcase_add_test(tc, memory_returned_after_destroy);
	tcase_add_test(tc, growth_and_deletion_keep_chains);
	tcase_add_test(tc, threads);
	tcase_add_test(tc, ledger_scans);
	tcase_add_test(tc, ledger_refuses_certain_hang);
	tcase_add_test(tc, ledger_acked_index);
	tcase_add_test(tc, tally_cells);
	tcase_add_test(tc, tally_through_a_kept_cell);
	tcase_add_test(tc, verbs_counts_lazy_cells);
	tcase_add_test(tc, verbs_counts_threads);
	tcase_add_test(tc, cq_counts_grow_and_reuse);
	tcase_add_test(tc, cq_counts_threads);
	tcase_add_test(tc, cq_counts_concurrent_inserts);
	tcase_add_test(tc, own_threads_start_blocked);
	tcase_add_test(tc, lock_excludes_and_keeps_errno);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

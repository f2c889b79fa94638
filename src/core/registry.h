/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * registry.h - every tracked object, by handle: a sharded open-addressing
 * table of records, which keeps destroyed records (and their destroy
 * stacks) for use-after-destroy and double-destroy reports until their
 * address is reused or a memory bound pushes the oldest out.  Records are
 * copied in and out (only the bytes a record of its kind keeps: a copy
 * out reads 0 for every field the record does not keep); all
 * changes to a live record happen under its shard lock through
 * rc_reg_update(), whose fn must touch only its kind's fields (see the
 * verbs part below).  No lock is ever held when a function here returns.
 */
#ifndef RC_REGISTRY_H
#define RC_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/kinds.h"

/* A reference to another record: handle plus the generation it had
 * (packed: 12 bytes, not 16, in every record that holds some). */
struct rc_ref {
	uintptr_t h;
	uint32_t gen;
} __attribute__((packed, aligned(4)));

enum rc_obj_flags {
	RC_F_LIB = 1 << 0,	/* owned by librdmacm, not the user */
	RC_F_SYNC = 1 << 1,	/* id: synchronous (private channel) */
	RC_F_EP = 1 << 2,	/* id: made by rdma_create_ep */
	RC_F_CHILD = 1 << 3,	/* id: delivered by CONNECT_REQUEST */
	RC_F_REJECTED = 1 << 4,	/* id: rdma_reject was called */
	RC_F_VERBS_GONE = 1 << 5, /* qp: destroyed with ibv_destroy_qp */
	RC_F_SEEN = 1 << 6,	/* verbs object first seen in use, not made
				 * where we could see: never a leak */
	RC_F_IMPORTED = 1 << 7,	/* verbs object from ibv_import_* */
};

/*
 * Who fetched the first of the events still unacked on a verbs object
 * (async events of a QP, CQ, SRQ or WQ; a CQ's completion events, in
 * cqcount.c): the events themselves are only counted.
 */
struct rc_evhold {
	pid_t tid;		/* the fetching thread */
	uint32_t tgen;		/* its thread record (threads.c) */
	uintptr_t ra;		/* where it was fetched */
	rc_stack_id stack;	/* and the stack there (one per call site) */
	uint8_t multi;		/* other threads fetched some too */
	uint8_t user;		/* the program fetched some (not librdmacm) */
};

/* A multicast join as we know it: the handle of its record. */
struct rc_mc_key {
	uintptr_t id;
	void *context;
	unsigned len;
	unsigned char addr[128];
};

/*
 * The counters of the record at an address (see rc_tally_add), registry.c's
 * (in the open for rc_aux_update only).  stamp names that record,
 * gen << 32 | kind, 0 while none live has them; each counter word is
 * gen << 32 | the count, so a charge checks the generation in the same
 * atomic operation.  Between them, the stamp keeps the record's flags
 * (bits 8-23: rc_tally_get_add), restamped whenever they change under
 * the lock.  An id's inside word is kept as a counter is (aux), with a
 * note beside it.
 */
#define RC_TALLIES 3
struct rc_tally_cell {
	uintptr_t h;			/* the address, set once */
	uint64_t stamp;
	uint64_t w[RC_TALLIES];
	uint64_t aux, note;
};

struct rc_obj {
	uintptr_t handle;	/* 0: empty slot */
	uint32_t gen;		/* unique per registration, never 0 */
	uint8_t kind;		/* enum rc_kind */
	uint8_t destroyed;
	uint16_t flags;
	pid_t pid;		/* process that created it */
	pid_t created_tid, destroyed_tid;
	rc_stack_id created_stack, destroyed_stack;
	union {
		/*
		 * The kinds with counters others charge (rc_tally_add)
		 * start alike: the cell, then the counters in its order.
		 */
		struct {
			struct rc_tally_cell *cell; /* registry.c's */
			int nids;	/* live ids using this channel */
			int unacked;	/* user-held events fetched here */
			int waiters;	/* threads in rdma_get_cm_event */
			int fd;		/* its descriptor */
		} ch;
		struct {
			struct rc_tally_cell *cell; /* registry.c's */
			int unacked;	/* user-held events charged here */
			int lib_held;	/* library-held events charged */
			int joins;	/* multicast groups joined */
			struct rc_ref channel;
			struct rc_ref parent;	/* listener, for children */
			struct rc_ref lib_event; /* the event librdmacm keeps
						  * in id->event */
			/* Who is inside calls on it (concurrent-calls-on-id:
			 * wrap_common.c lays the word out), kept in the cell
			 * while the record has one (rc_aux_update). */
			uint32_t inside;
			uint16_t inside_fn; /* the first one's call, while
					     * there is no cell */
		} id;
		struct {
			struct rc_ref id;	/* charged id */
			struct rc_ref channel;
			uintptr_t ev_id;	/* event->id */
			int type;
			pid_t holder;		/* thread that fetched it */
			uint32_t holder_gen;	/* its record (threads.c) */
			struct rc_ref mc;	/* multicast join, if any */
			uint32_t ack_seq;	/* its ack's number (ledger.c),
						 * 0 before */
			uintptr_t pdata;	/* the private data it left */
			/* The id's and channel's cells when known: the ack
			 * settles through them (rc_tally_add_cell). */
			struct rc_tally_cell *id_cell, *ch_cell;
		} ev;
		struct {
			struct rc_tally_cell *cell; /* registry.c's */
			int unacked;	/* user-held events of the group */
			struct rc_ref id;	/* the joining id */
			struct rc_mc_key *key;	/* our copy of the address */
		} mc;
		/*
		 * libibverbs objects (QPs and SRQs made through rdmacm too):
		 * counted like the kinds above, but their cell is made only
		 * when the first child or user is counted (most never have
		 * one); NULL until then.
		 */
		struct {
			struct rc_tally_cell *cell; /* registry.c's, or NULL */
			int nchild;		/* live objects made on it */
			int nusers;		/* live objects using it */
			struct rc_ref id;	/* QP, SRQ: owning cm id */
			uint32_t ident;		/* QP: its number; CQ, SRQ:
						 * the kernel's handle; ...:
						 * tells a new object at the
						 * same address */
			int fd;			/* completion channel: its fd */
			struct rc_ref parent;	/* made on: context (PD, CQ,
						 * channel, XRCD, ...), PD
						 * (MR, MW, AH, QP, SRQ) */
			/*
			 * From here on, only the kinds that have them keep
			 * them (see rec_size in registry.c; copies out read
			 * 0 for the others).
			 */
			struct rc_ref use[3];	/* used: QP: send CQ, recv
						 * CQ, SRQ; SRQ, WQ: its CQ;
						 * CQ: its completion
						 * channel; PD: its TD; MR:
						 * its DM; flow: its QP */
			int async_unacked;	/* async events fetched for
						 * it, not acked */
			int async_seen;		/* async events ever fetched */
			struct rc_evhold async_ev;
			/* A CQ's completion events: cqcount.c. */
		} vb;
		struct {
			int fd;			/* the socket number */
			int iomaps;		/* riomap()s not riounmap()ed */
		} rs;
	} u;
};

void rc_reg_init(void);

/*
 * Register o (its handle must be non-zero), replacing any record, live or
 * destroyed, at that handle.  Fills o->gen and returns it (0 when the
 * registry could not grow: the object is untracked, see rc_reg_degraded).
 */
uint32_t rc_reg_insert(struct rc_obj *o);

/* Copy the record at h into *out; false when there is none. */
bool rc_reg_get(uintptr_t h, struct rc_obj *out);

/*
 * The record of this kind at h: the one there now, or, when the address
 * now holds another kind's (or nothing), the last destroyed one of this
 * kind that was there.  False when h never held one we still know.
 */
bool rc_reg_get_kind(uintptr_t h, unsigned kind, struct rc_obj *out);

/*
 * Run fn on the record at h under its shard lock, if it exists and (when
 * gen is non-zero) still has that generation.  fn must not call anything
 * that takes a lock, and neither reads nor changes the counters kept in
 * cells (see rc_tally_add: the record's fields for them are stale while it
 * is live).  Returns false when there was no such record.
 */
bool rc_reg_update(uintptr_t h, uint32_t gen,
		   void (*fn)(struct rc_obj *o, void *arg), void *arg);

/*
 * Find the live record of this kind at h, add delta to the int field at
 * offset and copy the record out, under one lock (a verbs object's first
 * child or user makes its counter cell here).  False when there is no
 * such record (*out then says nothing).
 */
bool rc_reg_get_add(uintptr_t h, unsigned kind, unsigned offset, int delta,
		    struct rc_obj *out);
#define RC_REG_GET_ADD(h, kind, field, delta, out) \
	rc_reg_get_add((h), (kind), __builtin_offsetof(struct rc_obj, field), \
		       (delta), (out))

/*
 * Find the live record of this kind at h, run fn on it and copy it out
 * (unless out is NULL), under one lock (fn as for rc_reg_update).  False
 * when there is none.
 */
bool rc_reg_get_update(uintptr_t h, unsigned kind,
		       void (*fn)(struct rc_obj *o, void *arg), void *arg,
		       struct rc_obj *out);

/* Add delta to an int field of a live record (by offset); see RC_REG_ADD. */
void rc_reg_add(struct rc_ref ref, unsigned offset, int delta);
#define RC_REG_ADD(ref, field, delta) \
	rc_reg_add((ref), __builtin_offsetof(struct rc_obj, field), (delta))

/*
 * The counters other records charge -- a channel's ids, unacked events and
 * waiters; an id's unacked and library-held events and multicast joins; a
 * multicast join's unacked events; a verbs object's children and users --
 * are kept, while the record is live, in a cell of their own that never
 * moves and is never freed (one per address such a record ever had), so a
 * charge is one atomic operation and takes no lock.  A verbs object gets
 * its cell only when a count up (rc_reg_get_add) first charges it; until
 * then, and without memory for a cell, the record counts in itself under
 * its lock.  Each counter word carries the generation it counts for: a
 * stale reference changes nothing.  Every copy of a record out of the
 * registry carries the counters' values; a destroyed record keeps the
 * last ones.  Indices into the cell, by kind:
 */
enum rc_tally {
	RC_T_CH_NIDS = 0,	/* u.ch.nids */
	RC_T_CH_UNACKED = 1,	/* u.ch.unacked */
	RC_T_CH_WAITERS = 2,	/* u.ch.waiters */
	RC_T_ID_UNACKED = 0,	/* u.id.unacked */
	RC_T_ID_LIB_HELD = 1,	/* u.id.lib_held */
	RC_T_ID_JOINS = 2,	/* u.id.joins */
	RC_T_MC_UNACKED = 0,	/* u.mc.unacked */
	RC_T_VB_NCHILD = 0,	/* u.vb.nchild */
	RC_T_VB_NUSERS = 1,	/* u.vb.nusers */
};

/*
 * Add delta to counter t of the live record ref names (of a kind that has
 * it) and put the new value in *now (if now is not NULL).  False, and
 * nothing changed, when that record is not live.
 */
bool rc_tally_add(struct rc_ref ref, enum rc_tally t, int delta, int *now);

/*
 * The same for the record o is a copy of: through the cell the copy names
 * (cells never move), without finding it again; as rc_tally_add when it
 * names none.
 */
bool rc_tally_add_obj(const struct rc_obj *o, enum rc_tally t, int delta,
		      int *now);

/*
 * The same for the record ref names, through cell when not NULL (a cell
 * the record had when a copy of it was taken: the generation check is
 * the rest).
 */
bool rc_tally_add_cell(struct rc_ref ref, struct rc_tally_cell *cell,
		       enum rc_tally t, int delta, int *now);

/*
 * The live record of this kind at h: add delta to its counter t and give
 * its reference, and in *cell (if not NULL) its cell or NULL, without a
 * lock when its cell is known.  False when there is no such record.
 */
bool rc_tally_find_add(uintptr_t h, unsigned kind, enum rc_tally t,
		       int delta, struct rc_ref *ref,
		       struct rc_tally_cell **cell);

/*
 * rc_reg_get_add for a counter, without a lock when the record's cell is
 * known: add delta to counter t of the live record of this kind at h and
 * fill out's header, the flags as they were when last changed (the stamp
 * keeps them: every change of a record's flags under the lock restamps
 * it), the pid, tids and stacks 0, and its cell, nothing
 * else (*full false); or, without a cell, copy it all out (*full true).
 * False when there is no such record.
 */
bool rc_tally_get_add(uintptr_t h, unsigned kind, enum rc_tally t, int delta,
		      struct rc_obj *out, bool *full);

/*
 * An id's inside word (u.id.inside), in its cell while it has one, beside
 * the counters and with the generation as they are: rc_aux_update runs fn
 * on the word of the live record gen names through its cell, without a
 * lock (fn may run more than once, the last run counts; it returns false
 * to leave the word as it is, and sees o, the record or a copy of its
 * header) and returns whether the cell still counts for gen.  The cell
 * also keeps a note beside it (rc_aux_note, read racily: what the word's
 * layout has no room for).  Only for the kind RC_K_ID.
 */
typedef bool (*rc_aux_fn)(uint32_t *v, const struct rc_obj *o, void *arg);
/* Inline: fn, a constant where it is called, is inlined with it. */
static inline bool rc_aux_update(struct rc_tally_cell *cell, uint32_t gen,
				 const struct rc_obj *o, rc_aux_fn fn,
				 void *arg)
{
	uint64_t v = __atomic_load_n(&cell->aux, __ATOMIC_RELAXED);
	uint32_t w;

	do {
		if (v >> 32 != gen || !gen)
			return false;
		w = (uint32_t)v;
		if (!fn(&w, o, arg))
			return true;
	} while (!__atomic_compare_exchange_n(&cell->aux, &v,
					      (v & ~0xffffffffull) | w, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return true;
}
void rc_aux_note_set(struct rc_tally_cell *cell, uint64_t note);
uint64_t rc_aux_note(const struct rc_tally_cell *cell);

/*
 * The live record of this kind (RC_K_ID) at h through its cell, without a
 * lock: fill out's header as rc_tally_get_add does (the flags current,
 * its cell), RC_AUX_DONE: then rc_aux_update on out's cell and gen (when
 * that fails, the record went meanwhile: ask again).  RC_AUX_NONE: no
 * live record of this kind at h; RC_AUX_LOCK: no cell known for h
 * (the caller goes under the lock).
 */
enum rc_aux { RC_AUX_NONE, RC_AUX_DONE, RC_AUX_LOCK };
enum rc_aux rc_aux_get(uintptr_t h, unsigned kind, struct rc_obj *out);

/*
 * Mark the record destroyed (with the destroying thread and stack) if it
 * still has generation gen.  It stays until a new object at the address
 * replaces it, or until more than the quarantine bound of destroyed
 * records have piled up: then the oldest destroyed are forgotten (the
 * bound is shared out over the shards, oldest first in each).
 */
bool rc_reg_destroy(uintptr_t h, uint32_t gen, pid_t tid, rc_stack_id st);

/*
 * Look up the record of this kind at h and, if it is live and has none of
 * keep_flags, mark it destroyed (as rc_reg_destroy) under the same lock.
 * *out gets the record as it was (handle 0 when there is none; another
 * kind's record is copied but never taken).
 */
enum rc_take {
	RC_TAKE_NONE,		/* nothing of this kind at h */
	RC_TAKE_TAKEN,		/* was live, now destroyed */
	RC_TAKE_DESTROYED,	/* destroyed already */
	RC_TAKE_KEPT,		/* live, left alone because of keep_flags */
};
enum rc_take rc_reg_take(uintptr_t h, unsigned kind, unsigned keep_flags,
			 pid_t tid, rc_stack_id st, struct rc_obj *out);
/* The same, running fn (as for rc_reg_update) on the record it takes. */
enum rc_take rc_reg_take_fn(uintptr_t h, unsigned kind, unsigned keep_flags,
			    pid_t tid, rc_stack_id st,
			    void (*fn)(struct rc_obj *o, void *arg), void *arg,
			    struct rc_obj *out);

/*
 * Call fn on a copy of every live record, shard by shard (the
 * quarantined are left out: rc_reg_get finds them); fn runs without any
 * registry lock held.
 */
void rc_reg_foreach(void (*fn)(const struct rc_obj *o, void *arg), void *arg);

/* True once an object could not be registered: unknown-handle checks are
 * then unreliable and are skipped rather than refusing a legal call. */
bool rc_reg_degraded(void);

/* Live records (for tests and statistics). */
unsigned long rc_reg_live(void);

/* Table slots allocated, live and destroyed records' (for tests). */
unsigned long rc_reg_slots(void);

/* Counter cells made, ever (they are never freed; for tests). */
unsigned long rc_reg_cells(void);

void rc_reg_atfork_child(void);

/* The bound on destroyed records kept (0: the default); for tests. */
void rc_reg_set_quarantine(unsigned max);

#endif

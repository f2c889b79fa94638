/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * unwind_cfi.c - the slow half of rdmacheck's CFI unwinder (x86_64): the
 * unwind rule of a pc from its module's .eh_frame_hdr and .eh_frame, and
 * the global cache of rules (unwind_cfi.h has the fast half: lookup and
 * step).
 *
 * A miss finds the module (modules.c's map of loaded objects), binary
 * searches .eh_frame_hdr's table for the FDE, reads the FDE and its CIE
 * (augmentations z, R, P, L; S is a signal frame: bad), and runs the
 * CIE's and the FDE's CFA programs up to the pc.  Only what the step
 * needs is kept: CFA as rsp or rbp + offset, the return address at
 * CFA - 8, rbp saved below CFA or unchanged.  Any other rule for those
 * (expressions, registers, val_*, other offsets) makes the rule "bad",
 * as does anything unknown; other registers' rules are skipped.  Every
 * byte read lies inside the module's PT_LOAD segment that holds
 * .eh_frame_hdr, so a corrupt table cannot make us fault.
 *
 * Misses take one mutex (rare: once per pc); so do inserts, so that a
 * slot is written by one thread and emptying the cache (after a module
 * was unloaded: its addresses may be reused by another) never races an
 * insert.  Readers never lock (unwind_cfi.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "core/leb128.h"
#include "unwind/modules.h"
#include "unwind/unwind_cfi.h"

#ifdef RC_CFI

struct rc_cfi_slot rc_cfi_table[RC_CFI_SLOTS] __attribute__((aligned(64)));
static pthread_mutex_t cfi_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long cfi_subs;	/* the unloads the cache is of */
atomic_uint rc_cfi_gen;

void rc_cfi_atfork_child(void)
{
	pthread_mutex_init(&cfi_lock, NULL);
}

unsigned rc_cfi_resets(void)
{
	return atomic_load_explicit(&rc_cfi_gen, memory_order_relaxed);
}

/* A bounded reader of CFI bytes: [p, end) of the segment. */
struct rd {
	const uint8_t *p, *lo, *end;
	bool bad;
};

static bool rd_at(struct rd *r, uintptr_t a)
{
	if (a < (uintptr_t)r->lo || a >= (uintptr_t)r->end) {
		r->bad = true;
		return false;
	}
	r->p = (const uint8_t *)a;
	return true;
}

static bool rd_has(struct rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return false;
	}
	return true;
}

static uint64_t rd_le(struct rd *r, unsigned n)
{
	uint64_t v;

	if (!rd_has(r, n))
		return 0;
	v = rc_le_bytes(r->p, n);
	r->p += n;
	return v;
}

static uint64_t rd_leb(struct rd *r, bool sign)
{
	uint64_t v;

	if (!r->bad && rc_leb128(&r->p, r->end, sign, &v))
		return v;
	r->bad = true;
	return 0;
}

static uint64_t rd_uleb(struct rd *r)
{
	return rd_leb(r, false);
}

static int64_t rd_sleb(struct rd *r)
{
	return (int64_t)rd_leb(r, true);
}

#define PE_OMIT		0xff
#define PE_FORMAT	0x0f
#define PE_APPL		0x70
#define PE_PCREL	0x10
#define PE_DATAREL	0x30
#define PE_INDIRECT	0x80

/*
 * A pointer in encoding enc (DW_EH_PE_*): absptr, uleb128, udata2/4/8,
 * sleb128, sdata2/4/8; applied pcrel (to the field's address) or datarel
 * (to base: .eh_frame_hdr's address); indirect and others are bad.  With
 * raw, the value is not applied (an FDE's pc_range).
 */
static uintptr_t rd_enc(struct rd *r, unsigned enc, uintptr_t base, bool raw)
{
	uintptr_t field = (uintptr_t)r->p;
	uint64_t v;

	switch (enc & PE_FORMAT) {
	case 0x00: v = rd_le(r, 8); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_le(r, 2); break;
	case 0x03: v = rd_le(r, 4); break;
	case 0x04: v = rd_le(r, 8); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_le(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_le(r, 4); break;
	case 0x0c: v = rd_le(r, 8); break;
	default: r->bad = true; return 0;
	}
	if (raw)
		return (uintptr_t)v;
	if (enc & PE_INDIRECT) {
		r->bad = true;
		return 0;
	}
	switch (enc & PE_APPL) {
	case 0x00: return (uintptr_t)v;
	case PE_PCREL: return field + (uintptr_t)v;
	case PE_DATAREL: return base + (uintptr_t)v;
	default: r->bad = true; return 0;
	}
}

/* A register's rule, as far as the step cares. */
enum how { H_SAME, H_UNDEF, H_OFFSET, H_OTHER };

struct row {
	uint8_t cfa_reg;	/* DWARF register number */
	bool cfa_expr;
	int64_t cfa_off;
	enum how bp, ra;
	int64_t bp_off, ra_off;
};

#define REG_RBP		6
#define REG_RSP		7
#define STATE_STACK	8

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	unsigned fde_enc;
	bool has_z;
	uintptr_t insn, end;
};

/* Set register reg's rule; registers other than rbp and RA don't matter. */
static void set_rule(struct row *s, const struct cie *c, uint64_t reg,
		     enum how h, int64_t off)
{
	if (reg == REG_RBP) {
		s->bp = h;
		s->bp_off = off;
	} else if (reg == c->ra_reg) {
		s->ra = h;
		s->ra_off = off;
	}
}

/*
 * Run a CFA program over [r->p, end) from loc, stopping before the row
 * that starts above target; init is the CIE's row (for restore), NULL
 * while running the CIE.  False: bad or unknown instruction.
 */
static bool run_cfa(struct rd *r, uintptr_t end, const struct cie *c,
		    struct row *s, const struct row *init, uintptr_t loc,
		    uintptr_t target, uintptr_t hdr)
{
	struct row stack[STATE_STACK];
	unsigned depth = 0;
	uint64_t reg, delta;
	int64_t off;
	uint8_t op;

	while ((uintptr_t)r->p < end && !r->bad) {
		op = *r->p++;
		delta = 0;
		switch (op & 0xc0) {
		case 0x40:		/* advance_loc */
			delta = op & 0x3f;
			goto advance;
		case 0x80:		/* offset */
			off = (int64_t)rd_uleb(r) * c->data_align;
			set_rule(s, c, op & 0x3f, H_OFFSET, off);
			continue;
		case 0xc0:		/* restore */
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case 0x00:		/* nop */
			continue;
		case 0x01:		/* set_loc */
			if (!init)
				return false;
			delta = rd_enc(r, c->fde_enc, hdr, false);
			if (r->bad || delta < loc)
				return false;
			if (delta > target)
				return true;
			loc = delta;
			continue;
		case 0x02:		/* advance_loc1 */
			delta = rd_le(r, 1);
			goto advance;
		case 0x03:		/* advance_loc2 */
			delta = rd_le(r, 2);
			goto advance;
		case 0x04:		/* advance_loc4 */
			delta = rd_le(r, 4);
			goto advance;
		case 0x05:		/* offset_extended */
			reg = rd_uleb(r);
			off = (int64_t)rd_uleb(r) * c->data_align;
			set_rule(s, c, reg, H_OFFSET, off);
			continue;
		case 0x06:		/* restore_extended */
			reg = rd_uleb(r);
			goto restore;
		case 0x07:		/* undefined */
			set_rule(s, c, rd_uleb(r), H_UNDEF, 0);
			continue;
		case 0x08:		/* same_value */
			set_rule(s, c, rd_uleb(r), H_SAME, 0);
			continue;
		case 0x09:		/* register */
			reg = rd_uleb(r);
			rd_uleb(r);
			set_rule(s, c, reg, H_OTHER, 0);
			continue;
		case 0x0a:		/* remember_state */
			if (depth == STATE_STACK)
				return false;
			stack[depth++] = *s;
			continue;
		case 0x0b:		/* restore_state */
			if (!depth)
				return false;
			*s = stack[--depth];
			continue;
		case 0x0c:		/* def_cfa */
			s->cfa_reg = (uint8_t)rd_uleb(r);
			s->cfa_off = (int64_t)rd_uleb(r);
			s->cfa_expr = false;
			continue;
		case 0x0d:		/* def_cfa_register */
			s->cfa_reg = (uint8_t)rd_uleb(r);
			continue;
		case 0x0e:		/* def_cfa_offset */
			s->cfa_off = (int64_t)rd_uleb(r);
			continue;
		case 0x0f:		/* def_cfa_expression */
			delta = rd_uleb(r);
			if (!rd_has(r, delta))
				return false;
			r->p += delta;
			s->cfa_expr = true;
			continue;
		case 0x10:		/* expression */
		case 0x16:		/* val_expression */
			reg = rd_uleb(r);
			delta = rd_uleb(r);
			if (!rd_has(r, delta))
				return false;
			r->p += delta;
			set_rule(s, c, reg, H_OTHER, 0);
			continue;
		case 0x11:		/* offset_extended_sf */
			reg = rd_uleb(r);
			off = rd_sleb(r) * c->data_align;
			set_rule(s, c, reg, H_OFFSET, off);
			continue;
		case 0x12:		/* def_cfa_sf */
			s->cfa_reg = (uint8_t)rd_uleb(r);
			s->cfa_off = rd_sleb(r) * c->data_align;
			s->cfa_expr = false;
			continue;
		case 0x13:		/* def_cfa_offset_sf */
			s->cfa_off = rd_sleb(r) * c->data_align;
			continue;
		case 0x14:		/* val_offset */
			reg = rd_uleb(r);
			rd_uleb(r);
			set_rule(s, c, reg, H_OTHER, 0);
			continue;
		case 0x15:		/* val_offset_sf */
			reg = rd_uleb(r);
			rd_sleb(r);
			set_rule(s, c, reg, H_OTHER, 0);
			continue;
		case 0x2e:		/* GNU_args_size */
			rd_uleb(r);
			continue;
		case 0x2f:		/* GNU_negative_offset_extended */
			reg = rd_uleb(r);
			off = -(int64_t)rd_uleb(r) * c->data_align;
			set_rule(s, c, reg, H_OFFSET, off);
			continue;
		default:
			return false;
		}
advance:
		if (r->bad)
			return false;
		delta *= c->code_align;
		if (delta > target - loc)
			return true;	/* the next row is above target */
		loc += delta;
		continue;
restore:
		if (!init)
			return false;
		if (reg == REG_RBP) {
			s->bp = init->bp;
			s->bp_off = init->bp_off;
		} else if (reg == c->ra_reg) {
			s->ra = init->ra;
			s->ra_off = init->ra_off;
		}
		continue;
	}
	return !r->bad;
}

/* The CIE at a: its fields and initial instructions. */
static bool read_cie(struct rd *r, uintptr_t a, struct cie *c)
{
	uint64_t len, alen;
	unsigned version, idsz = 4;
	uintptr_t aug_end;
	const char *aug;
	const uint8_t *q;

	memset(c, 0, sizeof(*c));
	if (!rd_at(r, a))
		return false;
	len = rd_le(r, 4);
	if (len == 0xffffffffu) {
		len = rd_le(r, 8);
		idsz = 8;
	}
	if (r->bad || len < idsz || !rd_has(r, len))
		return false;
	c->end = (uintptr_t)r->p + len;
	if (rd_le(r, idsz))
		return false;			/* CIE id must be 0 */
	version = (unsigned)rd_le(r, 1);
	if (version != 1 && version != 3)
		return false;
	aug = (const char *)r->p;
	for (q = r->p; q < (const uint8_t *)c->end && *q; q++)
		;
	if (q >= (const uint8_t *)c->end)
		return false;
	r->p = q + 1;
	if (aug[0] && aug[0] != 'z')
		return false;			/* "eh" and the like */
	c->code_align = rd_uleb(r);
	c->data_align = rd_sleb(r);
	c->ra_reg = version == 1 ? rd_le(r, 1) : rd_uleb(r);
	c->fde_enc = 0;			/* absptr */
	if (aug[0] == 'z') {
		c->has_z = true;
		alen = rd_uleb(r);
		if (!rd_has(r, alen))
			return false;
		aug_end = (uintptr_t)r->p + alen;
		for (aug++; *aug; aug++) {
			unsigned enc;

			switch (*aug) {
			case 'R':
				c->fde_enc = (unsigned)rd_le(r, 1);
				break;
			case 'L':
				rd_le(r, 1);
				break;
			case 'P':
				enc = (unsigned)rd_le(r, 1);
				/* Skip the personality; never applied. */
				rd_enc(r, enc & PE_FORMAT, 0, true);
				break;
			default:		/* S: a signal frame; others */
				return false;
			}
			if (r->bad || (uintptr_t)r->p > aug_end)
				return false;
		}
		r->p = (const uint8_t *)aug_end;
	}
	c->insn = (uintptr_t)r->p;
	return !r->bad && c->insn <= c->end;
}

/* The FDE for target in .eh_frame_hdr's table, or 0. */
static uintptr_t find_fde(struct rd *r, uintptr_t hdr, uintptr_t target)
{
	unsigned fde_enc, count_enc, table_enc;
	uint64_t count, lo, hi, mid;
	const uint8_t *table;
	int32_t loc, fde;

	if (!rd_at(r, hdr) || rd_le(r, 1) != 1)
		return 0;
	fde_enc = (unsigned)rd_le(r, 1);
	count_enc = (unsigned)rd_le(r, 1);
	table_enc = (unsigned)rd_le(r, 1);
	if (r->bad || fde_enc == PE_OMIT || count_enc == PE_OMIT ||
	    table_enc != (PE_DATAREL | 0x0b))
		return 0;		/* only datarel sdata4 tables */
	rd_enc(r, fde_enc, hdr, false);		/* eh_frame_ptr */
	count = rd_enc(r, count_enc, hdr, false);
	if (r->bad || !count || count > (1u << 28) || !rd_has(r, count * 8))
		return 0;
	table = r->p;
	/* The last entry starting at or below target. */
	lo = 0;
	hi = count;
	while (hi - lo > 1) {
		mid = (lo + hi) / 2;
		memcpy(&loc, table + mid * 8, 4);
		if (hdr + (intptr_t)loc <= target)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(&loc, table + lo * 8, 4);
	memcpy(&fde, table + lo * 8 + 4, 4);
	if (hdr + (intptr_t)loc > target)
		return 0;
	return hdr + (intptr_t)fde;
}

/* The row for target from the FDE at fde. */
static bool fde_row(struct rd *r, uintptr_t fde, uintptr_t target,
		    uintptr_t hdr, struct row *s)
{
	uint64_t len, cie_off;
	uintptr_t end, field, begin, range;
	struct row init;
	struct cie c;

	if (!rd_at(r, fde))
		return false;
	len = rd_le(r, 4);
	if (len == 0xffffffffu)
		return false;		/* 64-bit: never in .eh_frame */
	if (r->bad || !len || !rd_has(r, len))
		return false;
	end = (uintptr_t)r->p + len;
	field = (uintptr_t)r->p;
	cie_off = rd_le(r, 4);
	if (r->bad || !cie_off || cie_off > field)
		return false;
	{
		struct rd cr = *r;

		if (!read_cie(&cr, field - cie_off, &c))
			return false;
	}
	begin = rd_enc(r, c.fde_enc, hdr, false);
	range = rd_enc(r, c.fde_enc & PE_FORMAT, 0, true);
	if (r->bad || target < begin || target - begin >= range)
		return false;		/* no FDE covers it */
	if (c.has_z) {
		uint64_t alen = rd_uleb(r);

		if (!rd_has(r, alen))
			return false;
		r->p += alen;
	}
	if ((uintptr_t)r->p > end)
		return false;
	memset(s, 0, sizeof(*s));
	s->bp = H_SAME;
	s->ra = H_SAME;
	{
		struct rd cr = *r;

		cr.p = (const uint8_t *)c.insn;
		if (!run_cfa(&cr, c.end, &c, s, NULL, begin, target, hdr))
			return false;
	}
	init = *s;
	return run_cfa(r, end, &c, s, &init, begin, target, hdr);
}

static uint64_t pack(const struct row *s)
{
	uint64_t r = RC_CFI_STEP;

	if (s->ra == H_UNDEF)
		return RC_CFI_LAST;
	if (s->cfa_expr || (s->cfa_reg != REG_RSP && s->cfa_reg != REG_RBP) ||
	    s->cfa_off != (int32_t)s->cfa_off)
		return RC_CFI_BAD;
	if (s->ra != H_OFFSET || s->ra_off != -8)
		return RC_CFI_BAD;
	if (s->cfa_reg == REG_RBP)
		r |= RC_CFI_FROM_BP;
	if (s->bp == H_OFFSET) {
		if ((s->bp_off & 7) || s->bp_off >= 0 || s->bp_off < -128 * 8)
			return RC_CFI_BAD;
		r |= RC_CFI_BP_SAVED;
		r |= (uint64_t)(uint8_t)(int8_t)(s->bp_off / 8) << 8;
	} else if (s->bp != H_SAME) {
		return RC_CFI_BAD;
	}
	r |= (uint64_t)(uint32_t)(int32_t)s->cfa_off << 32;
	return r;
}

uint64_t rc_cfi_parse(uintptr_t pc, const struct rc_cfi_module *m)
{
	struct rd r = { NULL, (const uint8_t *)m->lo, (const uint8_t *)m->hi,
			false };
	uintptr_t target = pc - 1, fde;
	struct row s;

	if (!m->hdr || m->hi <= m->lo)
		return RC_CFI_BAD;
	fde = find_fde(&r, m->hdr, target);
	if (!fde || !fde_row(&r, fde, target, m->hdr, &s))
		return RC_CFI_BAD;
	return pack(&s);
}

/*
 * Under cfi_lock: empty every slot (an unloaded module's addresses may
 * hold another's code now).  A reader between its two loads of a slot's
 * pc sees it change and takes a miss (rc_cfi_slot_rule).  Reading the
 * untouched pages maps no memory.
 */
static void reset(void)
{
	unsigned i;

	for (i = 0; i < RC_CFI_SLOTS; i++)
		if (atomic_load_explicit(&rc_cfi_table[i].pc,
					 memory_order_relaxed))
			atomic_store_explicit(&rc_cfi_table[i].pc, 0,
					      memory_order_relaxed);
	/* After the slots: copies taken before this are dropped. */
	atomic_fetch_add_explicit(&rc_cfi_gen, 1, memory_order_release);
}

uint64_t rc_cfi_cached(uintptr_t pc)
{
	struct rc_cfi_slot *s;
	unsigned i = rc_cfi_hash(pc), k;
	uint64_t r;

	if (!pc)	/* in no text; an emptied slot's pc 0 would match */
		return 0;
	for (k = 0; k < RC_CFI_PROBES; k++) {
		if (!((i + k) & (RC_CFI_SLOTS - 1)))
			continue;	/* slot 0: never filled (pc 0's) */
		s = &rc_cfi_table[(i + k) & (RC_CFI_SLOTS - 1)];
		r = rc_cfi_slot_rule(s, pc);
		if (r)
			return r;
		if (!atomic_load_explicit(&s->pc, memory_order_relaxed))
			break;
	}
	return 0;
}

/*
 * The module whose executable segment holds pc - 1 (the call a return
 * address follows), from the map of the objects loaded now; false when
 * none does.
 */
static bool module_of(uintptr_t pc, struct rc_cfi_module *mod)
{
	const struct rc_text_map *m = rc_modules_current();
	const struct rc_text_seg *t = m ? rc_modules_find(m, pc - 1) : NULL;

	if (!t)
		return false;
	mod->text_lo = t->lo;
	mod->text_hi = t->hi;
	mod->hdr = t->hdr;
	mod->lo = t->hdr_lo;
	mod->hi = t->hdr_hi;
	mod->subs = m->subs;
	return true;
}

uint64_t rc_cfi_slow(uintptr_t pc)
{
	struct rc_cfi_module m;
	struct rc_cfi_slot *s;
	unsigned i = rc_cfi_hash(pc), k;
	uint64_t r;

	if (!pc)	/* in no text; an emptied slot's pc 0 would match */
		return 0;
	r = rc_cfi_cached(pc);
	if (r)
		return r;
	pthread_mutex_lock(&cfi_lock);
	if (!module_of(pc, &m)) {
		/* Not in any loaded object's text: garbage, never cached. */
		pthread_mutex_unlock(&cfi_lock);
		return 0;
	}
	if (m.subs != cfi_subs) {
		reset();
		cfi_subs = m.subs;
	}
	for (k = 0; k < RC_CFI_PROBES; k++) {
		if (!((i + k) & (RC_CFI_SLOTS - 1)))
			continue;
		s = &rc_cfi_table[(i + k) & (RC_CFI_SLOTS - 1)];
		r = atomic_load_explicit(&s->pc, memory_order_relaxed);
		if (r == pc) {		/* another thread's miss */
			r = atomic_load_explicit(&s->rule,
						 memory_order_relaxed);
			goto out;
		}
		if (!r)
			break;
	}
	r = rc_cfi_parse(pc, &m);
	/* Never overwrite a slot; none free: computed each time. */
	if (k < RC_CFI_PROBES) {
		atomic_store_explicit(&s->rule, r, memory_order_relaxed);
		atomic_store_explicit(&s->pc, pc, memory_order_release);
	}
out:
	pthread_mutex_unlock(&cfi_lock);
	return r;
}

#endif /* RC_CFI */

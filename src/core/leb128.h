/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * leb128.h - the little-endian and LEB128 integers of ELF's DWARF and
 * CFI sections, decoded from bounded bytes: shared by the line-table
 * reader (symbolize.c) and the CFI unwinder (unwind_cfi.c), which each
 * keep their own cursor and error rule around these.
 */
#ifndef RC_LEB128_H
#define RC_LEB128_H

#include <stdbool.h>
#include <stdint.h>

/* n (<= 8) bytes at p, little-endian; the caller checked they are there. */
static inline uint64_t rc_le_bytes(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * The (un)signed LEB128 at *pp, not reading at or past end: *pp moves
 * past it and true, or false when it runs past end.  Bits beyond 64 are
 * dropped.
 */
static inline bool rc_leb128(const uint8_t **pp, const uint8_t *end,
			     bool sign, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= end)
			return false;
		b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*pp = p;
	*out = v;
	return true;
}

#endif

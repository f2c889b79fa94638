/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fake_stack.c - see fake_stack.h.
 */
#include <string.h>

#include "fake_stack.h"

#define FAKE_STACKS 64
#define FAKE_SYMS 256

static struct {
	unsigned n;
	uintptr_t pcs[RC_STACK_MAX_DEPTH];
} stacks[FAKE_STACKS];
static unsigned nstacks;

static struct rc_frame syms[FAKE_SYMS];
static unsigned nsyms;

unsigned fake_symbolize_calls;

rc_stack_id fake_stack(unsigned n, const uintptr_t *pcs)
{
	if (nstacks == FAKE_STACKS || n > RC_STACK_MAX_DEPTH)
		return 0;
	stacks[nstacks].n = n;
	memcpy(stacks[nstacks].pcs, pcs, n * sizeof(*pcs));
	return ++nstacks;
}

void fake_symbol(uintptr_t pc, const char *module, uintptr_t offset,
		 const char *function, const char *file, unsigned line)
{
	struct rc_frame *f;

	if (nsyms == FAKE_SYMS)
		return;
	f = &syms[nsyms++];
	f->pc = pc;
	f->module = module;
	f->offset = offset;
	f->function = function;
	f->file = file;
	f->line = line;
}

unsigned rc_stack_frames(rc_stack_id id, const uintptr_t **pcs)
{
	if (!id || id > nstacks) {
		*pcs = NULL;
		return 0;
	}
	*pcs = stacks[id - 1].pcs;
	return stacks[id - 1].n;
}

void rc_symbolize(uintptr_t pc, struct rc_frame *out)
{
	unsigned i;

	__atomic_fetch_add(&fake_symbolize_calls, 1, __ATOMIC_RELAXED);
	memset(out, 0, sizeof(*out));
	out->pc = pc;
	for (i = 0; i < nsyms; i++)
		if (syms[i].pc == pc)
			*out = syms[i];
}

rc_stack_id fake_signal_stack;

rc_stack_id rc_stack_capture_signal(const void *ucontext)
{
	(void)ucontext;
	return fake_signal_stack;
}

const char *rc_stack_unwinder(void)
{
	return "fake";
}

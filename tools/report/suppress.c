/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * suppress.c - rdmacheck-report: applying suppression files (src/report/suppress.c) to
 * findings.
 */
#include "report_tool.h"

unsigned long long weight(const struct finding *f)
{
	return f->sev == RC_SEV_LEAK ? f->count : 1;
}

static void take(unsigned long long *n, unsigned long long w)
{
	*n = *n > w ? *n - w : 0;
}

/* Take f's weight out of its class in p's summary. */
void uncount(struct proc *p, const struct finding *f)
{
	if (f->sev == RC_SEV_ERROR)
		take(&p->sum.errors, 1);
	else if (f->sev == RC_SEV_WARNING)
		take(&p->sum.warnings, 1);
	else
		take(&p->sum.leaks, f->count);
}

void apply_suppressions(void)
{
	struct rc_frame *frames = NULL;
	size_t cap = 0, i, j, k;

	for (i = 0; i < nprocs; i++) {
		struct proc *p = &procs[i];

		for (j = 0; j < p->nf; j++) {
			struct finding *f = &p->f[j];

			if (f->suppressed || f->rule_idx < 0)
				continue;
			if (f->stack.n > cap) {
				cap = f->stack.n;
				frames = xrealloc(frames, cap, sizeof(*frames));
			}
			for (k = 0; k < f->stack.n; k++) {
				const struct frame *fr = &f->stack.f[k];

				memset(&frames[k], 0, sizeof(frames[k]));
				frames[k].pc = fr->pc;
				frames[k].module = fr->module;
				frames[k].offset = fr->offset;
				frames[k].function = fr->function;
				frames[k].file = fr->file;
				frames[k].line = fr->line;
			}
			if (rc_suppress_match_frames((enum rc_rule)f->rule_idx,
						     f->call, frames,
						     (unsigned)f->stack.n) < 0)
				continue;
			/* Move its weight from its class to suppressed;
			 * counts of dropped findings stay as reported. */
			f->suppressed = true;
			uncount(p, f);
			p->sum.suppressed += weight(f);
		}
	}
	free(frames);
}


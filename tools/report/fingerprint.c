/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fingerprint.c - rdmacheck-report: the findings' fingerprints
 * (src/report/fingerprint.c).
 */
#include "report_tool.h"

/* Findings whose report has none (crash reports, older reports). */
void fingerprint_all(void)
{
	char hex[RC_FP_LEN + 1];
	struct rc_fp fp;
	size_t i, j, k;

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < procs[i].nf; j++) {
			struct finding *f = &procs[i].f[j];

			if (f->fingerprint)
				continue;
			rc_fp_init(&fp, f->rule, f->call);
			for (k = 0; k < f->stack.n; k++) {
				const struct frame *fr = &f->stack.f[k];

				rc_fp_frame(&fp, fr->function, fr->file,
					    fr->module, fr->offset);
			}
			rc_fp_hex(&fp, hex);
			f->fingerprint = astrdup(&procs[i].arena, hex);
		}
}


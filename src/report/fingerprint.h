/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fingerprint.h - a finding's identity across runs and rebuilds: rule,
 * intercepted call and the symbolic frames of its stack (function and
 * source file name; no address, no line number).  Written by the shim
 * into each JSON finding and used by rdmacheck-report for --merge and
 * --baseline, so both must compute it the same way: this file.
 */
#ifndef RC_FINGERPRINT_H
#define RC_FINGERPRINT_H

#include <stdbool.h>
#include <stdint.h>

/* Hex digits of a fingerprint, without the NUL. */
#define RC_FP_LEN 16

struct rc_fp {
	uint64_t h;
	bool done;		/* main() was seen: later frames do not count */
};

void rc_fp_init(struct rc_fp *fp, const char *rule, const char *call);

/*
 * The next frame, outermost last.  A frame with a function counts by its
 * function and the base name of its file; one without (nothing could
 * symbolize it) by its module's base name and offset, so that findings we
 * know nothing about stay apart.  Frames below main() do not count.
 */
void rc_fp_frame(struct rc_fp *fp, const char *function, const char *file,
		 const char *module, uintptr_t offset);

/* RC_FP_LEN lowercase hex digits and a NUL; no allocation, no locks. */
void rc_fp_hex(const struct rc_fp *fp, char out[RC_FP_LEN + 1]);

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz.h - what the fuzz harnesses share: the libFuzzer entry point that
 * each defines, and a check that stops the run when a harness finds its
 * code broke a promise (libFuzzer and replay.c both report the abort).
 */
#ifndef RC_FUZZ_H
#define RC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: broken: %s\n",		\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

#endif

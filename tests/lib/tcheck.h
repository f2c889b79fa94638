/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/tcheck.h: the assertions of the C test programs.  CHECK counts
 * a failure and goes on, so that one run shows every broken expectation;
 * REQUIRE stops where going on makes no sense.  Each program returns
 * failures ? 1 : 0.  Included by single-file programs only.
 */
#ifndef RDMACHECK_TESTS_TCHECK_H
#define RDMACHECK_TESTS_TCHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: FAIL: %s (errno %d)\n",		\
			__FILE__, __LINE__, #cond, errno);		\
		failures++;						\
	}								\
} while (0)

#define REQUIRE(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: FATAL: %s (errno %d)\n",	\
			__FILE__, __LINE__, #cond, errno);		\
		exit(1);						\
	}								\
} while (0)

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_options.c - fuzz harness of src/core/options.c: the input is an
 * RDMACHECK_OPTIONS string.  After rc_options_parse() every option must
 * hold a value its options.def line allows; a second parse of the same
 * string must find the same problems; rc_options_expand_path() of the
 * input and of every string option must fit any buffer, each shorter
 * buffer getting a prefix of what a longer one gets.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "fuzz.h"
#include "core/options.h"

/* What each type of options.def line allows. */
#define CHECK_BOOL(name, min, max) FUZZ_ASSERT(rc_opt.name == !!rc_opt.name);
#define CHECK_INT(name, min, max) \
	FUZZ_ASSERT(rc_opt.name >= (min) && rc_opt.name <= (max));
#define CHECK_STR(name, min, max) FUZZ_ASSERT(rc_opt.name != NULL);
#define CHECK_WORDS(name, words, max) \
	FUZZ_ASSERT(rc_opt.name && one_of(words, rc_opt.name));

/* Is v one of the space-separated words (checked apart from options.c)? */
static int one_of(const char *words, const char *v)
{
	size_t n = strlen(v);

	while (*words) {
		size_t k = strcspn(words, " ");

		if (k == n && !memcmp(words, v, n))
			return 1;
		words += k;
		words += strspn(words, " ");
	}
	return 0;
}

static void check_values(void)
{
#define RC_OPT(type, name, def, min, max, help) CHECK_##type(name, min, max)
#include "core/options.def"
#undef RC_OPT
}

static void check_expand(const char *tmpl)
{
	static const unsigned lens[] = { 1, 2, 3, 5, 8, 13, 64, 4096 };
	char longest[4096], buf[4096];
	unsigned i;

	/* A zero length writes nothing at all. */
	buf[0] = 'x';
	FUZZ_ASSERT(rc_options_expand_path(tmpl, buf, 0) == buf &&
		    buf[0] == 'x');
	rc_options_expand_path(tmpl, longest, sizeof(longest));
	FUZZ_ASSERT(strlen(longest) < sizeof(longest));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(buf, 'x', sizeof(buf));
		FUZZ_ASSERT(rc_options_expand_path(tmpl, buf, lens[i]) == buf);
		FUZZ_ASSERT(strnlen(buf, lens[i]) < lens[i]);
		FUZZ_ASSERT(!strncmp(buf, longest, strlen(buf)));
		/* Nothing written past the buffer. */
		if (lens[i] < sizeof(buf))
			FUZZ_ASSERT(buf[lens[i]] == 'x');
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	int problems;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	rc_options_defaults();
	problems = rc_options_parse(s);
	FUZZ_ASSERT(problems >= 0);
	check_values();
	FUZZ_ASSERT(rc_options_parse(s) == problems);
	check_values();
	check_expand(s);
	check_expand(rc_opt.log_path);
	check_expand(rc_opt.json);
	check_expand(rc_opt.suppressions);
	check_expand(NULL);

	/* The defaults free what the parser copied. */
	rc_options_defaults();
	free(s);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_options.c - RDMACHECK_OPTIONS parsing: defaults, every type,
 * bounds, unknown keys, garbage, and %p expansion.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/options.h"
#include "report_test_util.h"

static void setup(void)
{
	rc_options_defaults();
}

START_TEST(test_defaults)
{
	ck_assert_str_eq(rc_opt.log_path, "");
	ck_assert_str_eq(rc_opt.json, "");
	ck_assert_int_eq(rc_opt.exitcode, 23);
	ck_assert(!rc_opt.halt_on_error);
	ck_assert(rc_opt.protect);
	ck_assert(rc_opt.leak_check);
	ck_assert_int_eq(rc_opt.stack_depth, 16);
	ck_assert_str_eq(rc_opt.suppressions, "");
	ck_assert_int_eq(rc_opt.watchdog_ms, 5000);
	ck_assert_int_eq(rc_opt.verbosity, 0);
}
END_TEST

START_TEST(test_every_type)
{
	ck_assert_int_eq(rc_options_parse("exitcode=7:halt_on_error=1:"
					  "protect=false:log_path=/tmp/x.%p:"
					  "json=a=b=c:verbosity=2"), 0);
	ck_assert_int_eq(rc_opt.exitcode, 7);
	ck_assert(rc_opt.halt_on_error);
	ck_assert(!rc_opt.protect);
	ck_assert_str_eq(rc_opt.log_path, "/tmp/x.%p");
	ck_assert_str_eq(rc_opt.json, "a=b=c");	/* '=' allowed in values */
	ck_assert_int_eq(rc_opt.verbosity, 2);
}
END_TEST

START_TEST(test_bool_spellings)
{
	static const struct {
		const char *s;
		bool v;
	} cases[] = {
		{ "1", true }, { "0", false }, { "true", true },
		{ "false", false }, { "yes", true }, { "no", false },
		{ "TRUE", true }, { "No", false },
	};
	char buf[64];
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc_opt.leak_check = !cases[i].v;
		snprintf(buf, sizeof(buf), "leak_check=%s", cases[i].s);
		ck_assert_int_eq(rc_options_parse(buf), 0);
		ck_assert_msg(rc_opt.leak_check == cases[i].v, "%s", buf);
	}
}
END_TEST

START_TEST(test_int_bounds)
{
	char *err;

	ck_assert_int_eq(rc_options_parse("stack_depth=1"), 0);
	ck_assert_int_eq(rc_opt.stack_depth, 1);
	ck_assert_int_eq(rc_options_parse("stack_depth=64"), 0);
	ck_assert_int_eq(rc_opt.stack_depth, 64);
	ck_assert_int_eq(rc_options_parse("watchdog_ms=86400000"), 0);
	ck_assert_int_eq(rc_opt.watchdog_ms, 86400000);
	ck_assert_int_eq(rc_options_parse("exitcode=0"), 0);
	ck_assert_int_eq(rc_opt.exitcode, 0);

	rc_opt.stack_depth = 16;
	capture_begin();
	ck_assert_int_eq(rc_options_parse("stack_depth=0:stack_depth=65:"
					  "stack_depth=-1"), 3);
	err = capture_end();
	ck_assert_int_eq(rc_opt.stack_depth, 16);
	ck_assert_int_eq(count_lines(err), 3);
	ck_assert_ptr_nonnull(strstr(err,
		"rdmacheck: RDMACHECK_OPTIONS: bad value '65' for stack_depth (expected 1..64; keeping 16)\n"));
	free(err);
}
END_TEST

START_TEST(test_int_garbage)
{
	static const char *const bad[] = {
		"", " 12", "12 ", "+5", "12abc", "0x10", "1e3", "--1",
		"99999999999999999999", "-", "1.5",
	};
	char buf[64];
	unsigned i;
	char *err;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc_opt.exitcode = 9;
		snprintf(buf, sizeof(buf), "exitcode=%s", bad[i]);
		capture_begin();
		ck_assert_int_eq(rc_options_parse(buf), 1);
		err = capture_end();
		ck_assert_msg(rc_opt.exitcode == 9, "%s", buf);
		ck_assert_int_eq(count_lines(err), 1);
		ck_assert_ptr_nonnull(strstr(err, "keeping 9)"));
		free(err);
	}
}
END_TEST

START_TEST(test_bad_bool)
{
	char *err;

	capture_begin();
	ck_assert_int_eq(rc_options_parse("protect=maybe"), 1);
	err = capture_end();
	ck_assert(rc_opt.protect);
	ck_assert_str_eq(err,
		"rdmacheck: RDMACHECK_OPTIONS: bad value 'maybe' for protect (expected 0/1/true/false/yes/no; keeping 1)\n");
	free(err);
}
END_TEST

START_TEST(test_unknown_keys)
{
	char *err;

	capture_begin();
	ck_assert_int_eq(rc_options_parse("foo=1:exitcode=5:bar:=3"), 3);
	err = capture_end();
	ck_assert_int_eq(rc_opt.exitcode, 5);
	ck_assert_int_eq(count_lines(err), 3);
	ck_assert_ptr_nonnull(strstr(err,
		"rdmacheck: RDMACHECK_OPTIONS: unknown option 'foo' (ignored)\n"));
	ck_assert_ptr_nonnull(strstr(err, "missing '=' in 'bar'"));
	ck_assert_ptr_nonnull(strstr(err, "unknown option '' (ignored)"));
	free(err);
}
END_TEST

START_TEST(test_complaints_are_one_line)
{
	char *err;

	capture_begin();
	ck_assert_int_eq(rc_options_parse("fo\no=1:verbosity=\n2\r"), 2);
	err = capture_end();
	ck_assert_int_eq(count_lines(err), 2);
	ck_assert_ptr_nonnull(strstr(err, "unknown option 'fo?o'"));
	ck_assert_ptr_nonnull(strstr(err, "bad value '?2?' for verbosity"));
	free(err);
}
END_TEST

START_TEST(test_empty_and_separators)
{
	char *err;

	capture_begin();
	ck_assert_int_eq(rc_options_parse(NULL), 0);
	ck_assert_int_eq(rc_options_parse(""), 0);
	ck_assert_int_eq(rc_options_parse(":::"), 0);
	ck_assert_int_eq(rc_options_parse("verbosity=1:"), 0);
	ck_assert_int_eq(rc_options_parse(":leak_check=0::"), 0);
	err = capture_end();
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(rc_opt.verbosity, 1);
	ck_assert(!rc_opt.leak_check);
	free(err);
}
END_TEST

START_TEST(test_garbage_never_crashes)
{
	char buf[4096];
	unsigned i, seed = 12345;
	char *err;

	/* A value longer than the parser's limit is refused, not cut. */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "json=", 5);
	buf[sizeof(buf) - 1] = '\0';
	capture_begin();
	ck_assert_int_eq(rc_options_parse(buf), 1);
	for (i = 0; i < 2000; i++) {
		unsigned j, len = (seed = seed * 1103515245 + 12345) % 64;

		for (j = 0; j < len; j++) {
			seed = seed * 1103515245 + 12345;
			buf[j] = "=:ab_1-x\xff\n%"[(seed >> 16) % 12];
		}
		buf[len] = '\0';
		rc_options_parse(buf);
	}
	err = capture_end();
	free(err);
	ck_assert_int_ge(rc_opt.stack_depth, 1);
	ck_assert_int_le(rc_opt.stack_depth, 64);
}
END_TEST

START_TEST(test_strings_replaced)
{
	ck_assert_int_eq(rc_options_parse("json=/tmp/a:json=/tmp/b"), 0);
	ck_assert_str_eq(rc_opt.json, "/tmp/b");
	ck_assert_int_eq(rc_options_parse("json="), 0);
	ck_assert_str_eq(rc_opt.json, "");
	rc_options_defaults();
	ck_assert_str_eq(rc_opt.json, "");
}
END_TEST

START_TEST(test_expand_path)
{
	char buf[64], want[64];

	snprintf(want, sizeof(want), "/tmp/r.%d.json", (int)getpid());
	ck_assert_str_eq(rc_options_expand_path("/tmp/r.%p.json", buf,
						sizeof(buf)), want);
	ck_assert_str_eq(rc_options_expand_path("a%%p%q%", buf, sizeof(buf)),
			 "a%p%q%");
	ck_assert_str_eq(rc_options_expand_path(NULL, buf, sizeof(buf)), "");
	{
		struct utsname u;
		char host[128], hwant[128];

		ck_assert_int_eq(uname(&u), 0);
		snprintf(hwant, sizeof(hwant), "r.%s.x", u.nodename);
		ck_assert_str_eq(rc_options_expand_path("r.%h.x", host,
							sizeof(host)), hwant);
	}
	setenv("RC_TEST_RANK", "3", 1);
	unsetenv("RC_TEST_UNSET");
	ck_assert_str_eq(rc_options_expand_path("r%q{RC_TEST_RANK}.%q{RC_TEST_UNSET}.j",
						buf, sizeof(buf)), "r3..j");
	/* Without its braces, %q is text. */
	ck_assert_str_eq(rc_options_expand_path("%q{x", buf, sizeof(buf)),
			 "%q{x");
	ck_assert_str_eq(rc_options_expand_path("", buf, sizeof(buf)), "");
	ck_assert_str_eq(rc_options_expand_path("abcdef", buf, 4), "abc");
	/* A pid that does not fit is left out whole. */
	snprintf(want, sizeof(want), "ab%d", (int)getpid());
	ck_assert_str_eq(rc_options_expand_path("ab%p", buf, 4),
			 strlen(want) < 4 ? want : "ab");
}
END_TEST

/* color= takes one of its words; another keeps the value. */
START_TEST(test_color_words)
{
	ck_assert_str_eq(rc_opt.color, "auto");
	ck_assert_int_eq(rc_options_parse("color=never"), 0);
	ck_assert_str_eq(rc_opt.color, "never");
	ck_assert_int_eq(rc_options_parse("color=always"), 0);
	ck_assert_int_eq(rc_options_parse("color=Always"), 1);
	ck_assert_int_eq(rc_options_parse("color="), 1);
	ck_assert_str_eq(rc_opt.color, "always");
}
END_TEST

/* symbolizer= too: a word of another option, or a part of one, is not its
 * own, and the complaint lists the valid words. */
START_TEST(test_symbolizer_words)
{
	char *err;

	ck_assert_str_eq(rc_opt.symbolizer, "auto");
	ck_assert_int_eq(rc_options_parse("symbolizer=builtin"), 0);
	ck_assert_str_eq(rc_opt.symbolizer, "builtin");
	ck_assert_int_eq(rc_options_parse("symbolizer=libdw"), 0);
	ck_assert_int_eq(rc_options_parse("symbolizer=never"), 1);
	ck_assert_int_eq(rc_options_parse("symbolizer=lib"), 1);
	ck_assert_int_eq(rc_options_parse("symbolizer=libdwx"), 1);
	ck_assert_int_eq(rc_options_parse("symbolizer=auto builtin"), 1);
	ck_assert_str_eq(rc_opt.symbolizer, "libdw");
	capture_begin();
	ck_assert_int_eq(rc_options_parse("symbolizer=foo"), 1);
	err = capture_end();
	ck_assert_str_eq(err,
		"rdmacheck: RDMACHECK_OPTIONS: bad value 'foo' for symbolizer (expected one of: auto builtin libdw; keeping libdw)\n");
	free(err);
}
END_TEST

/* %n and the snapshot suffix: a snapshot never gets the exit's name. */
START_TEST(test_expand_seq)
{
	char buf[64];

	ck_assert_str_eq(rc_options_expand_path("r.%n.json", buf,
						sizeof(buf)), "r.0.json");
	ck_assert_str_eq(rc_options_expand_path("r.json", buf, sizeof(buf)),
			 "r.json");
	rc_path_seq = 12;
	ck_assert_str_eq(rc_options_expand_path("r.%n.json", buf,
						sizeof(buf)), "r.12.json");
	ck_assert_str_eq(rc_options_expand_path("r.json", buf, sizeof(buf)),
			 "r.json.snapshot.12");
	ck_assert_str_eq(rc_options_expand_path("r%%n", buf, sizeof(buf)),
			 "r%n.snapshot.12");
	/* Cut short, it would be the exit report's: no name at all. */
	ck_assert_str_eq(rc_options_expand_path("r.json", buf, 12), "");
	ck_assert_str_eq(rc_options_expand_path("r.%n.json.long", buf, 6),
			 "");
	rc_path_seq = 0;
	ck_assert_str_eq(rc_options_expand_path("r.json", buf, 12), "r.json");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_every_type);
	tcase_add_test(tc, test_bool_spellings);
	tcase_add_test(tc, test_int_bounds);
	tcase_add_test(tc, test_int_garbage);
	tcase_add_test(tc, test_bad_bool);
	tcase_add_test(tc, test_unknown_keys);
	tcase_add_test(tc, test_complaints_are_one_line);
	tcase_add_test(tc, test_empty_and_separators);
	tcase_add_test(tc, test_garbage_never_crashes);
	tcase_add_test(tc, test_strings_replaced);
	tcase_add_test(tc, test_expand_path);
	tcase_add_test(tc, test_expand_seq);
	tcase_add_test(tc, test_color_words);
	tcase_add_test(tc, test_symbolizer_words);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

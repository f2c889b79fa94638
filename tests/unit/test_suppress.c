/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_suppress.c - suppression files: parsing, rule prefixes, globs over
 * function/file/module (and basenames) and the call, hit counts, and that
 * nothing is symbolized for rules without an entry.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_stack.h"
#include "report_test_util.h"
#include "report/suppress.h"

static const struct rc_frame frames[] = {
	{ 0x1000, "/usr/lib/libapp.so.1", 0x100, "app_teardown",
	  "/src/app/teardown.c", 88, NULL, 0 },
	{ 0x2000, "/usr/bin/server", 0x200, "main", "server.c", 140, NULL, 0 },
	{ 0x3000, "/lib/x86_64-linux-gnu/libc.so.6", 0x300, NULL, NULL, 0, NULL, 0 },
};
#define NFRAMES (sizeof(frames) / sizeof(frames[0]))

static int match(enum rc_rule rule, const char *call)
{
	return rc_suppress_match_frames(rule, call, frames, NFRAMES);
}

static void teardown(void)
{
	rc_suppress_reset();
}

/* Add one line and expect result; returns stderr output (free it). */
static char *add(const char *line, int want)
{
	char *err;

	capture_begin();
	ck_assert_int_eq(rc_suppress_add_line(line, "test.supp", 7), want);
	err = capture_end();
	if (want >= 0)
		ck_assert_str_eq(err, "");
	else
		ck_assert_int_eq(count_lines(err), 1);
	return err;
}

START_TEST(test_parse_lines)
{
	free(add("", 0));
	free(add("   \t", 0));
	free(add("# a comment", 0));
	free(add("  # indented comment", 0));
	free(add("leak-id:foo", 1));
	free(add("  leak-*  :  bar  # why", 1));
	free(add("*:baz", 1));
	free(add("use-after-destroy:ns::func", 1));
	ck_assert_int_eq(rc_suppress_count(), 4);
	ck_assert_str_eq(rc_suppress_text(0), "leak-id:foo");
	ck_assert_str_eq(rc_suppress_text(1), "leak-*:bar");
	ck_assert_str_eq(rc_suppress_text(3), "use-after-destroy:ns::func");
	ck_assert_ptr_null(rc_suppress_text(4));
}
END_TEST

START_TEST(test_bad_lines)
{
	char *err;

	err = add("no-colon-here", -1);
	ck_assert_ptr_nonnull(strstr(err, "rdmacheck: test.supp:7: "));
	ck_assert_ptr_nonnull(strstr(err, "'no-colon-here'"));
	free(err);
	err = add("leak-idd:foo", -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown rule 'leak-idd'"));
	free(err);
	err = add("zzz-*:foo", -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown rule 'zzz-*'"));
	free(err);
	err = add("bad\x01rule:foo", -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown rule 'bad?rule'"));
	free(err);
	free(add("le*ak:foo", -1));
	free(add(":foo", -1));
	free(add("leak-id:", -1));
	free(add("leak-id:   # only a comment", -1));
	ck_assert_int_eq(rc_suppress_count(), 0);
}
END_TEST

START_TEST(test_rule_selection)
{
	free(add("leak-*:main", 1));
	ck_assert_int_eq(match(RC_R_LEAK_ID, NULL), 0);
	ck_assert_int_eq(match(RC_R_LEAK_QP, NULL), 0);
	ck_assert_int_eq(match(RC_R_ID_DESTROY_WITH_QP, NULL), -1);
	free(add("double-destroy:main", 1));
	ck_assert_int_eq(match(RC_R_DOUBLE_DESTROY, NULL), 1);
	ck_assert_int_eq(match(RC_R_USE_AFTER_DESTROY, NULL), -1);
	free(add("*:main", 1));
	ck_assert_int_eq(match(RC_R_USE_AFTER_DESTROY, NULL), 2);
}
END_TEST

START_TEST(test_globs)
{
	static const char *const hits[] = {
		"app_*",		/* function */
		"main",
		"teardown.c",		/* file basename */
		"/src/app/*.c",		/* file path */
		"*/app/*",
		"libc.so*",		/* module basename */
		"/usr/bin/server",	/* module path */
		"libapp.so.?",
		"rdma_destroy_id",	/* the call */
	};
	static const char *const misses[] = {
		"app", "teardown", "*.h", "libc", "server.c:140", "[x]*",
		"rdma_destroy",
	};
	unsigned i;

	for (i = 0; i < sizeof(hits) / sizeof(hits[0]); i++) {
		char line[128];

		rc_suppress_reset();
		snprintf(line, sizeof(line), "id-destroy-with-qp:%s", hits[i]);
		free(add(line, 1));
		ck_assert_msg(match(RC_R_ID_DESTROY_WITH_QP,
				    "rdma_destroy_id") == 0, "%s", hits[i]);
	}
	for (i = 0; i < sizeof(misses) / sizeof(misses[0]); i++) {
		char line[128];

		rc_suppress_reset();
		snprintf(line, sizeof(line), "id-destroy-with-qp:%s",
			 misses[i]);
		free(add(line, 1));
		ck_assert_msg(match(RC_R_ID_DESTROY_WITH_QP,
				    "rdma_destroy_id") == -1, "%s", misses[i]);
	}
}
END_TEST

/* A frame's inline levels (libdw in the shim) are frames too: an entry
 * naming an inlined function matches at -O2 as it does at -O0. */
START_TEST(test_inline_levels)
{
	static const struct rc_frame inner[] = {
		{ .pc = 0x1000, .function = "drop_conn", .file = "conn.h",
		  .line = 3 },
	};
	struct rc_frame fr = {
		.pc = 0x1000, .module = "/app", .function = "close_all",
		.file = "conn.c", .line = 12, .inl = inner, .ninl = 1,
	};

	free(add("leak-id:drop_conn", 1));
	ck_assert_int_eq(rc_suppress_match_frames(RC_R_LEAK_ID, NULL, &fr, 1),
			 0);
	fr.ninl = 0;
	ck_assert_int_eq(rc_suppress_match_frames(RC_R_LEAK_ID, NULL, &fr, 1),
			 -1);
}
END_TEST

/* A suggested entry is a valid line that matches the finding it was made
 * for, however odd the function name. */
START_TEST(test_suggest)
{
	struct rc_frame fr[2] = {
		{ .module = "/usr/lib/libx.so.1", .offset = 0x30 },
		{ .function = "ns::f<int*>(char [4]) #2", .file = "a.cc",
		  .module = "/app" },
	};
	char buf[256];

	ck_assert_uint_gt(rc_suppress_suggest(buf, sizeof(buf),
					      RC_R_LEAK_QP, NULL, fr, 2), 0);
	ck_assert_str_eq(buf, "leak-qp:ns::f<int\\*>(char?\\[4])??2");
	rc_suppress_reset();
	ck_assert_int_eq(rc_suppress_add_line(buf, "gen", 1), 1);
	ck_assert_int_eq(rc_suppress_match_frames(RC_R_LEAK_QP, NULL, fr, 2),
			 0);
	/* No function: the module's base name; no frame: the call. */
	ck_assert_uint_gt(rc_suppress_suggest(buf, sizeof(buf),
					      RC_R_LEAK_QP, NULL, fr, 1), 0);
	ck_assert_str_eq(buf, "leak-qp:libx.so.1");
	ck_assert_uint_gt(rc_suppress_suggest(buf, sizeof(buf),
					      RC_R_DOUBLE_DESTROY,
					      "rdma_destroy_id", fr, 0), 0);
	ck_assert_str_eq(buf, "double-destroy:rdma_destroy_id");
	ck_assert_uint_eq(rc_suppress_suggest(buf, 8, RC_R_LEAK_QP, NULL,
					      fr, 2), 0);
}
END_TEST

START_TEST(test_hits_and_used_list)
{
	char buf[512], want[512];

	free(add("leak-*:main", 1));
	free(add("double-destroy:nothing", 1));
	ck_assert_uint_eq(rc_suppress_format_used(buf, sizeof(buf), "P "), 0);
	ck_assert_str_eq(buf, "");
	match(RC_R_LEAK_ID, NULL);
	match(RC_R_LEAK_QP, NULL);
	match(RC_R_DOUBLE_DESTROY, NULL);
	ck_assert_uint_eq(rc_suppress_hits(0), 2);
	ck_assert_uint_eq(rc_suppress_hits(1), 0);
	ck_assert_uint_eq(rc_suppress_hits(9), 0);
	snprintf(want, sizeof(want),
		 "P Suppressions used:\nP   count rule:pattern\nP       2 leak-*:main\n");
	rc_suppress_format_used(buf, sizeof(buf), "P ");
	ck_assert_str_eq(buf, want);
	/* Truncation keeps whole lines. */
	rc_suppress_format_used(buf, 30, "P ");
	ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_load_file)
{
	char path[64], *err;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/rc-unit-supp.%d", (int)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("# rdmacheck suppressions\n"
	      "\n"
	      "leak-id:main\n"
	      "bogus line\n"
	      "nonexistent-rule:x\n"
	      "leak-*:*libc*   # the C library\r\n"
	      "channel-destroy-with-ids:teardown.c", f);
	fclose(f);
	capture_begin();
	ck_assert_int_eq(rc_suppress_load(path), 3);
	err = capture_end();
	ck_assert_int_eq(count_lines(err), 2);
	ck_assert_ptr_nonnull(strstr(err, ":4: "));
	ck_assert_ptr_nonnull(strstr(err, ":5: unknown rule"));
	free(err);
	ck_assert_str_eq(rc_suppress_text(1), "leak-*:*libc*");
	ck_assert_str_eq(rc_suppress_text(2), "channel-destroy-with-ids:teardown.c");
	unlink(path);

	/* The caller says what a missing file means (file_errors). */
	capture_begin();
	errno = 0;
	ck_assert_int_eq(rc_suppress_load("/nonexistent/supp"), -1);
	ck_assert_int_eq(errno, ENOENT);
	err = capture_end();
	ck_assert_str_eq(err, "");
	free(err);
}
END_TEST

START_TEST(test_match_finding)
{
	static const uintptr_t pcs[] = { 0x1000, 0x2000 };
	struct rc_finding f;
	unsigned i;

	for (i = 0; i < NFRAMES; i++)
		fake_symbol(frames[i].pc, frames[i].module, frames[i].offset,
			    frames[i].function, frames[i].file,
			    frames[i].line);
	memset(&f, 0, sizeof(f));
	f.rule = RC_R_LEAK_ID;
	ck_assert_int_eq(rc_suppress_match_pcs(f.rule, f.call, pcs, 2), -1);
	ck_assert_uint_eq(fake_symbolize_calls, 0);

	free(add("double-destroy:*", 1));
	ck_assert_int_eq(rc_suppress_match_pcs(f.rule, f.call, pcs, 2), -1);
	ck_assert_uint_eq(fake_symbolize_calls, 0);	/* other rule only */

	free(add("leak-id:server.c", 1));
	ck_assert_int_eq(rc_suppress_match_pcs(f.rule, f.call, pcs, 2), 1);
	ck_assert_uint_eq(fake_symbolize_calls, 2);

	ck_assert_int_eq(rc_suppress_match_pcs(f.rule, f.call, pcs, 0), -1);
	f.call = "rdma_destroy_id";
	f.rule = RC_R_DOUBLE_DESTROY;
	ck_assert_int_eq(rc_suppress_match_pcs(f.rule, f.call, pcs, 0), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("suppress");
	TCase *tc = tcase_create("suppress");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_parse_lines);
	tcase_add_test(tc, test_bad_lines);
	tcase_add_test(tc, test_rule_selection);
	tcase_add_test(tc, test_globs);
	tcase_add_test(tc, test_inline_levels);
	tcase_add_test(tc, test_suggest);
	tcase_add_test(tc, test_hits_and_used_list);
	tcase_add_test(tc, test_load_file);
	tcase_add_test(tc, test_match_finding);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

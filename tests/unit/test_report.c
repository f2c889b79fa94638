/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_report.c - the collector, the text and JSON writers: exact text
 * format, counts, exit status, JSON that parses with the right fields
 * (checked with python3 and jq), crash mode, halt_on_error, the findings
 * cap and concurrent reporters.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_stack.h"
#include "report/fingerprint.h"
#include "core/options.h"
#include "report/report.h"
#include "report/report_int.h"
#include "report_test_util.h"
#include "report/suppress.h"

static char log_file[64], json_file[64];
static rc_stack_id st_call, st_create, st_destroy, st_empty_sym;

static void fake_symbols(void)
{
	static const uintptr_t call[] = { 0x401000, 0x7f0000, 0x7f1000,
					  0x9000 };
	static const uintptr_t create[] = { 0x401100 };
	static const uintptr_t destroy[] = { 0x401200, 0x401100 };
	static const uintptr_t weird[] = { 0x401300 };

	fake_symbol(0x401000, "/usr/bin/server", 0x1000, "teardown",
		    "server.c", 88);
	fake_symbol(0x401100, "/usr/bin/server", 0x1100, "main", "server.c",
		    140);
	fake_symbol(0x401200, "/usr/bin/server", 0x1200, "cleanup",
		    "/src/x.c", 0);
	fake_symbol(0x401300, "/odd \"dir\"\n/m\xff.so", 0x1300,
		    "f\tn", NULL, 0);
	fake_symbol(0x7f0000, "/usr/lib/libx.so", 0x2000, "helper", NULL, 0);
	fake_symbol(0x7f1000, "/usr/lib/liby.so", 0x30, NULL, NULL, 0);
	st_call = fake_stack(4, call);
	st_create = fake_stack(1, create);
	st_destroy = fake_stack(2, destroy);
	st_empty_sym = fake_stack(1, weird);
}

/* (Re)start the collector with RDMACHECK_OPTIONS-style extra options. */
static void start(const char *opts)
{
	char o[512];

	rc_suppress_reset();
	rc_report_reset();
	rc_options_defaults();
	snprintf(o, sizeof(o), "log_path=/tmp/rc-unit-log.%%p:"
		 "json=/tmp/rc-unit-json.%%p%s%s", opts ? ":" : "",
		 opts ? opts : "");
	ck_assert_int_eq(rc_options_parse(o), 0);
	rc_report_init();
}

/* start() with a suppression file holding text. */
static void start_with_suppressions(const char *text, const char *opts)
{
	char supp[64], o[256];
	FILE *sf;

	snprintf(supp, sizeof(supp), "/tmp/rc-unit-supp.%d", (int)getpid());
	sf = fopen(supp, "w");
	ck_assert_ptr_nonnull(sf);
	fputs(text, sf);
	fclose(sf);
	snprintf(o, sizeof(o), "suppressions=%s%s%s", supp, opts ? ":" : "",
		 opts ? opts : "");
	start(o);
	unlink(supp);
}

static void setup(void)
{
	snprintf(log_file, sizeof(log_file), "/tmp/rc-unit-log.%d",
		 (int)getpid());
	snprintf(json_file, sizeof(json_file), "/tmp/rc-unit-json.%d",
		 (int)getpid());
	unlink(log_file);
	unlink(json_file);
	fake_symbols();
	start(NULL);
}

static void teardown(void)
{
	unlink(log_file);
	unlink(json_file);
}

static void finding(struct rc_finding *f, enum rc_rule rule,
		    const char *call, const char *msg)
{
	memset(f, 0, sizeof(*f));
	f->rule = rule;
	f->call = call;
	snprintf(f->message, sizeof(f->message), "%s", msg);
	f->tid = 4242;
	f->stack = st_call;
}

static struct rc_objref *obj(struct rc_finding *f, enum rc_kind kind,
			     uintptr_t handle, pid_t tid, rc_stack_id st)
{
	struct rc_objref *r = &f->objs[f->nobjs++];

	r->kind = kind;
	r->handle = handle;
	r->created_tid = tid;
	r->created_stack = st;
	return r;
}

static void report_error_with_objects(void)
{
	struct rc_finding f;
	struct rc_objref *r;

	finding(&f, RC_R_CHANNEL_DESTROY_WITH_IDS,
		"rdma_destroy_event_channel",
		"rdma_destroy_event_channel(0x1234): 2 cm ids still use this channel");
	obj(&f, RC_K_ID, 0x55d1, 101, st_create);
	r = obj(&f, RC_K_ID, 0x55d2, 102, st_create);
	snprintf(r->note, sizeof(r->note), "migrated here by thread 102");
	r->destroyed = true;
	r->destroyed_tid = 103;
	r->destroyed_stack = st_destroy;
	rc_report(&f);
}

START_TEST(test_text_error_block)
{
	char want[2048], *log;
	int pid = getpid();

	report_error_with_objects();
	snprintf(want, sizeof(want),
		 "==%d== ERROR: rdmacheck: rdma_destroy_event_channel(0x1234): 2 cm ids still use this channel [channel-destroy-with-ids]\n"
		 "    #0 0x401000 in teardown server.c:88\n"
		 "    #1 0x7f0000 in helper (/usr/lib/libx.so+0x2000)\n"
		 "    #2 0x7f1000 (/usr/lib/liby.so+0x30)\n"
		 "    #3 0x9000 (<unknown module>)\n"
		 "  cm id 0x55d1 was created here (thread 101):\n"
		 "    #0 0x401100 in main server.c:140\n"
		 "  cm id 0x55d2 migrated here by thread 102:\n"
		 "  cm id 0x55d2 was created here (thread 102):\n"
		 "    #0 0x401100 in main server.c:140\n"
		 "  cm id 0x55d2 was destroyed here (thread 103):\n"
		 "    #0 0x401200 in cleanup /src/x.c\n"
		 "    #1 0x401100 in main server.c:140\n"
		 "\n", pid);
	log = slurp(log_file);
	ck_assert_ptr_nonnull(log);
	ck_assert_str_eq(log, want);
	free(log);
}
END_TEST

START_TEST(test_text_leak_and_warning)
{
	struct rc_finding f;
	char want[2048], *log;
	int pid = getpid();

	finding(&f, RC_R_LEAK_ID, NULL, "3 cm ids leaked, created here");
	f.tid = 0;
	f.count = 3;
	f.stack = st_create;
	obj(&f, RC_K_ID, 0xa1, 7, st_create);
	obj(&f, RC_K_ID, 0xa2, 0, st_create);
	f.more_objs = 1;
	rc_report(&f);

	finding(&f, RC_R_CREATE_QP_TWICE, "rdma_create_qp",
		"odd\nmessage\x01");
	f.stack = 0;
	obj(&f, RC_K_QP, 0xb1, 0, 0);
	f.objs[0].destroyed = true;
	f.objs[0].destroyed_tid = 9;
	obj(&f, RC_K_DEVLIST, 0xb2, 0, 0);
	rc_report(&f);

	snprintf(want, sizeof(want),
		 "==%d== LEAK: rdmacheck: 3 cm ids leaked, created here [leak-id]\n"
		 "    #0 0x401100 in main server.c:140\n"
		 "  cm id 0xa1 was created by thread 7 at the stack above\n"
		 "  cm id 0xa2 was created by unknown thread at the stack above\n"
		 "  ... and 1 more object\n"
		 "\n"
		 "==%d== WARNING: rdmacheck: odd?message? [create-qp-twice]\n"
		 "    <no stack>\n"
		 "  QP 0xb1 was destroyed here (thread 9):\n"
		 "    <no stack>\n"
		 "  device list 0xb2 (no creation record)\n"
		 "\n", pid, pid);
	log = slurp(log_file);
	ck_assert_str_eq(log, want);
	free(log);
}
END_TEST

START_TEST(test_counts_summary_exit_status)
{
	struct rc_finding f;
	struct rc_summary s;
	char want[256], *log;

	ck_assert_int_eq(rc_report_exit_status(), -1);
	finding(&f, RC_R_CREATE_QP_TWICE, "rdma_create_qp", "w");
	rc_report(&f);
	ck_assert_int_eq(rc_report_exit_status(), -1);	/* warnings only */
	finding(&f, RC_R_LEAK_ID, NULL, "leak");
	f.count = 5;
	rc_report(&f);
	ck_assert_int_eq(rc_report_exit_status(), 23);
	finding(&f, RC_R_DOUBLE_DESTROY, "rdma_destroy_id", "e");
	rc_report(&f);
	rc_report_summary(&s);
	ck_assert_uint_eq(s.errors, 1);
	ck_assert_uint_eq(s.warnings, 1);
	ck_assert_uint_eq(s.leaks, 5);
	ck_assert_uint_eq(s.suppressed, 0);

	unlink(log_file);
	start(NULL);
	rc_report_print_summary();
	rc_report_note("hello %d", 5);
	log = slurp(log_file);
	snprintf(want, sizeof(want),
		 "==%d== rdmacheck: 0 errors, 0 warnings, 0 leaked objects (0 suppressed)\n"
		 "==%d== rdmacheck: hello 5\n", (int)getpid(), (int)getpid());
	ck_assert_str_eq(log, want);
	free(log);
}
END_TEST

START_TEST(test_forget_leaks)
{
	struct rc_finding f;
	struct rc_summary s;

	start_with_suppressions("leak-qp:*\n", NULL);

	finding(&f, RC_R_LEAK_ID, NULL, "3 leaked");
	f.count = 3;
	rc_report(&f);
	finding(&f, RC_R_DOUBLE_DESTROY, "rdma_destroy_id", "e");
	rc_report(&f);
	finding(&f, RC_R_LEAK_QP, NULL, "2 leaked, suppressed");
	f.count = 2;
	rc_report(&f);
	finding(&f, RC_R_CREATE_QP_TWICE, "rdma_create_qp", "w");
	rc_report(&f);
	rc_report_summary(&s);
	ck_assert_uint_eq(s.leaks, 3);
	ck_assert_uint_eq(s.suppressed, 2);

	rc_report_forget_leaks();
	rc_report_summary(&s);
	ck_assert_uint_eq(s.errors, 1);
	ck_assert_uint_eq(s.warnings, 1);
	ck_assert_uint_eq(s.leaks, 0);
	ck_assert_uint_eq(s.suppressed, 0);
	rc_report_write_json("snapshot", false);
	assert_json_parses(json_file);
	assert_jq(json_file, "[.findings[].rule] == [\"double-destroy\", \"create-qp-twice\"]");
}
END_TEST

START_TEST(test_exitcode_option)
{
	struct rc_finding f;

	start("exitcode=0");
	finding(&f, RC_R_DOUBLE_DESTROY, "rdma_destroy_id", "e");
	rc_report(&f);
	ck_assert_int_eq(rc_report_exit_status(), -1);
	start("exitcode=3");
	rc_report(&f);
	ck_assert_int_eq(rc_report_exit_status(), 3);
}
END_TEST

START_TEST(test_suppressed)
{
	char want[512], *log;
	struct rc_finding f;
	struct rc_summary s;

	start_with_suppressions("leak-*:main\nid-destroy-with-qp:*libx*\n",
				"verbosity=1");

	finding(&f, RC_R_LEAK_ID, NULL, "leak");
	f.stack = st_create;
	f.count = 4;
	rc_report(&f);
	ck_assert(f.suppressed);
	finding(&f, RC_R_ID_DESTROY_WITH_QP, "rdma_destroy_id", "qp");
	rc_report(&f);
	ck_assert(f.suppressed);
	finding(&f, RC_R_DOUBLE_DESTROY, "rdma_destroy_id", "dd");
	rc_report(&f);
	ck_assert(!f.suppressed);
	rc_report_summary(&s);
	ck_assert_uint_eq(s.errors, 1);
	ck_assert_uint_eq(s.leaks, 0);
	ck_assert_uint_eq(s.suppressed, 5);	/* leaks count per object */
	ck_assert_int_eq(rc_report_exit_status(), 23);

	ck_assert_int_eq(truncate(log_file, 0), 0);
	rc_report_print_summary();
	log = slurp(log_file);
	snprintf(want, sizeof(want),
		 "==%1$d== rdmacheck: Suppressions used:\n"
		 "==%1$d== rdmacheck:   count rule:pattern\n"
		 "==%1$d== rdmacheck:       1 leak-*:main\n"
		 "==%1$d== rdmacheck:       1 id-destroy-with-qp:*libx*\n"
		 "==%1$d== rdmacheck: 1 errors, 0 warnings, 0 leaked objects (5 suppressed)\n",
		 (int)getpid());
	ck_assert_str_eq(log, want);
	free(log);

	rc_report_write_json("exited", false);
	assert_json_parses(json_file);
	assert_jq(json_file, "[.findings[].suppressed] == [true, true, false]");
	assert_jq(json_file, ".summary == {\"errors\": 1, \"warnings\": 0, \"leaks\": 0, \"suppressed\": 5}");
}
END_TEST

/* rc_fp_hex of rule + call + frames (function, file, module, offset). */
static void fp_of(char out[RC_FP_LEN + 1], const char *rule,
		  const char *const fr[][3], const uintptr_t *off, unsigned n)
{
	struct rc_fp fp;
	unsigned i;

	rc_fp_init(&fp, rule, "rdma_destroy_id");
	for (i = 0; i < n; i++)
		rc_fp_frame(&fp, fr[i][0], fr[i][1], fr[i][2], off[i]);
	rc_fp_hex(&fp, out);
}

/* Fingerprints ignore addresses, lines, directories and what is below
 * main(), and nothing else. */
START_TEST(test_fingerprint)
{
	static const char *const a[][3] = {
		{ "teardown", "/build1/server.c", "/build1/server" },
		{ NULL, NULL, "/usr/lib/libx.so" },
		{ "main", "/build1/server.c", "/build1/server" },
		{ "__libc_start_call_main", "libc.c", "/lib/libc.so.6" },
	};
	static const char *const b[][3] = {
		{ "teardown", "/build2/server.c", "/build2/server" },
		{ NULL, NULL, "/opt/libx.so" },
		{ "main", "/build2/server.c", "/build2/server" },
		{ "_start", NULL, "/build2/server" },
	};
	static const char *const c[][3] = {
		{ "teardown2", "/build1/server.c", "/build1/server" },
		{ NULL, NULL, "/usr/lib/libx.so" },
		{ "main", "/build1/server.c", "/build1/server" },
	};
	const uintptr_t off_a[] = { 0x1000, 0x30, 0x2000, 0x27000 };
	const uintptr_t off_b[] = { 0x1400, 0x30, 0x2400, 0x1200 };
	const uintptr_t off_c[] = { 0x1000, 0x31, 0x2000 };
	char fa[RC_FP_LEN + 1], fb[RC_FP_LEN + 1], fc[RC_FP_LEN + 1];

	fp_of(fa, "double-destroy", a, off_a, 4);
	fp_of(fb, "double-destroy", b, off_b, 4);
	ck_assert_uint_eq(strspn(fa, "0123456789abcdef"), RC_FP_LEN);
	ck_assert_str_eq(fa, fb);
	fp_of(fb, "double-destroy", a, off_a, 3);
	ck_assert_str_eq(fa, fb);
	fp_of(fb, "use-after-destroy", a, off_a, 4);
	ck_assert_str_ne(fa, fb);
	fp_of(fc, "double-destroy", c, off_a, 3);
	ck_assert_str_ne(fa, fc);
	/* An unsymbolized frame counts by its module's offset. */
	fp_of(fb, "double-destroy", a, off_c, 3);
	ck_assert_str_ne(fa, fb);
}
END_TEST

/* A leak group's stack is written once: its objects refer to it. */
START_TEST(test_json_stack_ref)
{
	struct rc_finding f;

	finding(&f, RC_R_LEAK_QP, NULL, "3 QPs leaked");
	f.count = 3;
	f.tid = 0;
	f.stack = st_create;
	obj(&f, RC_K_QP, 0x77a1, 201, st_create);
	obj(&f, RC_K_QP, 0x77a2, 202, st_create);
	obj(&f, RC_K_QP, 0x77a3, 203, st_call);
	rc_report(&f);
	rc_report_write_json("exited", false);
	assert_json_parses(json_file);
	assert_jq(json_file, ".findings[0].stack[0].function == \"main\"");
	assert_jq(json_file, "[.findings[0].objects[0,1].created] == [{\"thread\": 201, \"stack\": [], \"stack_ref\": \"finding\"}, {\"thread\": 202, \"stack\": [], \"stack_ref\": \"finding\"}]");
	assert_jq(json_file, ".findings[0].objects[2].created | .thread == 203 and (.stack_ref | not) and .stack[0].function == \"teardown\"");
}
END_TEST

START_TEST(test_json_fields)
{
	struct rc_finding f;
	char expr[64];

	report_error_with_objects();
	finding(&f, RC_R_LEAK_QP, NULL, "2 QPs leaked");
	f.count = 2;
	f.tid = 0;
	f.stack = st_create;
	rc_report(&f);
	rc_report_write_json("exited", false);
	ck_assert_int_eq(access(json_file, F_OK), 0);
	ck_assert_int_ne(run("ls %s.tmp.* 2>/dev/null | grep -q .", json_file), 0);
	assert_json_parses(json_file);

	assert_jq(json_file, ".tool == \"rdmacheck\" and .version == \"" PACKAGE_VERSION "\"");
	snprintf(expr, sizeof(expr), ".pid == %d", (int)getpid());
	assert_jq(json_file, expr);
	assert_jq(json_file, ".status == \"exited\" and (.halted | not)");
	assert_jq(json_file, ".exe | endswith(\"test_report\")");
	assert_jq(json_file, ".argv | length >= 1 and (.[0] | endswith(\"test_report\"))");
	assert_jq(json_file, ".unwinder == \"fake\" and .symbolized == true");
	assert_jq(json_file, ".options.stack_depth == 16 and .options.halt_on_error == false and .options.json == \"/tmp/rc-unit-json.%p\" and .options.suppressions == \"\"");
	assert_jq(json_file, ".findings | length == 2");
	assert_jq(json_file, ".findings[0] | .rule == \"channel-destroy-with-ids\" and .severity == \"error\" and .call == \"rdma_destroy_event_channel\" and .count == 1 and .suppressed == false and .thread == 4242");
	assert_jq(json_file, ".findings[0].stack | length == 4");
	assert_jq(json_file, ".findings[0].stack[0] == {\"pc\": \"0x401000\", \"module\": \"/usr/bin/server\", \"offset\": \"0x1000\", \"function\": \"teardown\", \"file\": \"server.c\", \"line\": 88}");
	assert_jq(json_file, ".findings[0].stack[2] == {\"pc\": \"0x7f1000\", \"module\": \"/usr/lib/liby.so\", \"offset\": \"0x30\", \"function\": null, \"file\": null, \"line\": 0}");
	assert_jq(json_file, ".findings[0].stack[3] | .module == null and .offset == \"0x0\"");
	assert_jq(json_file, ".findings[0].objects | length == 2");
	assert_jq(json_file, ".findings[0].objects[0] | .kind == \"id\" and .handle == \"0x55d1\" and .destroyed == null and (has(\"note\") | not) and .created.thread == 101 and .created.stack[0].function == \"main\"");
	assert_jq(json_file, ".findings[0].objects[1] | .destroyed.thread == 103 and (.destroyed.stack | length) == 2 and .note == \"migrated here by thread 102\"");
	assert_jq(json_file, ".findings[1] | .rule == \"leak-qp\" and .severity == \"leak\" and .call == null and .count == 2 and .thread == null and .objects == []");
	assert_jq(json_file, ".summary == {\"errors\": 1, \"warnings\": 0, \"leaks\": 2, \"suppressed\": 0}");
	assert_jq(json_file, ".findings_dropped == 0");
	/* Format 2: each frame once, stacks as indices into "frames". */
	assert_jq_raw(json_file, ".format == 2 and (.frames | length) == (.frames | unique | length) and ([.findings[] | .stack[], (.objects[] | (.created, .destroyed) | objects | .stack[])] | map(type == \"number\") | all)");
	assert_jq_raw(json_file, "[keys_unsorted[] | select(. == \"frames\" or . == \"findings\")] == [\"frames\", \"findings\"]");
	assert_jq(json_file, "[.findings[].fingerprint | test(\"^[0-9a-f]{16}$\")] == [true, true]");
}
END_TEST

START_TEST(test_json_escaping)
{
	struct rc_finding f;

	finding(&f, RC_R_UNKNOWN_HANDLE, "rdma_\"x\"",
		"q\"uote\\ back\nnl\ttab\x01" "ctl\x7f \xc3\xa9 \xff\xfe \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98\x80 end");
	f.stack = st_empty_sym;
	obj(&f, RC_K_EVENT, 0x1, 1, 0);
	snprintf(f.objs[0].note, sizeof(f.objs[0].note), "\x1f\r\b\f/");
	rc_report(&f);
	rc_report_write_json("snapshot", false);
	assert_json_parses(json_file);
	assert_jq(json_file, ".status == \"snapshot\"");
	assert_jq(json_file, ".findings[0].call == \"rdma_\\\"x\\\"\"");
	assert_jq(json_file, ".findings[0].message == \"q\\\"uote\\\\ back\\nnl\\ttab\\u0001ctl\\u007f \xc3\xa9 \\u00ff\\u00fe \\u00e2\\u0082 \\u00ed\\u00a0\\u0080 \xf0\x9f\x98\x80 end\"");
	assert_jq(json_file, ".findings[0].objects[0].note == \"\\u001f\\r\\b\\f/\"");
	assert_jq(json_file, ".findings[0].stack[0] | .module == \"/odd \\\"dir\\\"\\n/m\\u00ff.so\" and .function == \"f\\tn\"");
}
END_TEST

START_TEST(test_json_disabled)
{
	struct rc_finding f;

	rc_suppress_reset();
	rc_report_reset();
	rc_options_defaults();
	rc_report_init();
	finding(&f, RC_R_LEAK_QP, NULL, "x");
	capture_begin();
	rc_report(&f);
	rc_report_write_json("exited", false);
	free(capture_end());
	ck_assert_int_ne(access(json_file, F_OK), 0);
	ck_assert_int_ne(run("ls %s.tmp.* 2>/dev/null | grep -q .", json_file), 0);
}
END_TEST

/* A function of this binary, for crash-mode module/offset. */
static __attribute__((noinline)) void crash_anchor(void)
{
	__asm__ volatile("");
}

START_TEST(test_json_crash_mode)
{
	uintptr_t pcs[1];
	struct rc_finding f;
	char expr[256];
	Dl_info info;

	pcs[0] = (uintptr_t)&crash_anchor + 4;
	ck_assert(dladdr((void *)pcs[0], &info));
	finding(&f, RC_R_EVENT_DOUBLE_ACK, "rdma_ack_cm_event", "crash");
	f.stack = fake_stack(1, pcs);
	obj(&f, RC_K_EVENT, 0x2, 1, st_create);
	rc_report(&f);
	fake_symbolize_calls = 0;
	rc_report_write_json("crashed", true);
	ck_assert_uint_eq(fake_symbolize_calls, 0);
	assert_json_parses(json_file);
	assert_jq(json_file, ".status == \"crashed\" and .symbolized == false");
	/* Without names there is no fingerprint yet. */
	assert_jq(json_file, ".findings[0].fingerprint == null");
	assert_jq(json_file, ".findings[0].stack[0].module == .exe and .findings[0].stack[0].function == null and .findings[0].stack[0].line == 0");
	snprintf(expr, sizeof(expr), ".findings[0].stack[0].offset == \"0x%lx\"",
		 (unsigned long)(pcs[0] - (uintptr_t)info.dli_fbase));
	assert_jq(json_file, expr);
	/* Made-up pcs: no module. */
	assert_jq(json_file, ".findings[0].objects[0].created.stack[0] | .module == null and .pc == \"0x401100\"");

	/* A busy lock: give up rather than wait. */
	unlink(json_file);
	pthread_mutex_lock(&rc_coll.lock);
	rc_report_write_json("crashed", true);
	pthread_mutex_unlock(&rc_coll.lock);
	ck_assert_int_ne(access(json_file, F_OK), 0);
}
END_TEST

/*
 * The fatal-signal finding: its block on the log (frames as module and
 * offset, nothing symbolized), and the crash report with the kept
 * findings, then it, counted as an error; withdrawn, the next report
 * replaces the crash report.
 */
START_TEST(test_report_crash)
{
	uintptr_t pcs[2];
	struct rc_finding f;
	siginfo_t si;
	char *log;

	pcs[0] = (uintptr_t)&crash_anchor + 4;
	pcs[1] = 0x401100;
	fake_signal_stack = fake_stack(2, pcs);
	finding(&f, RC_R_DOUBLE_DESTROY, "rdma_destroy_id", "kept");
	rc_report(&f);
	ck_assert_int_eq(truncate(log_file, 0), 0);
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGSEGV;
	si.si_code = SEGV_MAPERR;
	si.si_addr = NULL;
	fake_symbolize_calls = 0;
	rc_report_crash(SIGSEGV, &si, NULL, false);
	ck_assert_uint_eq(fake_symbolize_calls, 0);
	log = slurp(log_file);
	ck_assert_ptr_nonnull(log);
	ck_assert_ptr_nonnull(strstr(log, "ERROR: rdmacheck: SIGSEGV (SEGV_MAPERR) at address 0x0 [fatal-signal]\n    #0 0x"));
	ck_assert_ptr_nonnull(strstr(log, "    #1 0x401100 (<unknown module>)\n  in thread "));
	free(log);
	assert_json_parses(json_file);
	assert_jq(json_file, ".status == \"crashed\" and .signal == 11 and .summary.errors == 2 and (.findings | length) == 2 and .findings[0].message == \"kept\"");
	assert_jq(json_file, ".exe as $e | .findings[1] | .rule == \"fatal-signal\" and .severity == \"error\" and .call == null and .message == \"SIGSEGV (SEGV_MAPERR) at address 0x0\" and .thread > 0 and (.stack | length) == 2 and .stack[0].module == $e and .stack[1].pc == \"0x401100\"");

	/* A signal sent: who sent it, no address. */
	si.si_signo = SIGABRT;
	si.si_code = SI_TKILL;
	si.si_pid = getpid();
	rc_report_crash(SIGABRT, &si, NULL, true);
	assert_jq(json_file, ".signal == 6 and .findings[1].message == \"SIGABRT (SI_TKILL) sent by the process itself\"");
	log = slurp(log_file);
	ck_assert_ptr_nonnull(strstr(log, "; the program's own SIGABRT handler runs next\n\n"));
	free(log);

	/* Until withdrawn, the crash report is the last word. */
	rc_report_write_json("exited", false);
	assert_jq(json_file, ".status == \"crashed\"");
	rc_report_crash_withdrawn(SIGABRT);
	log = slurp(log_file);
	ck_assert_ptr_nonnull(strstr(log, "rdmacheck: the program's SIGABRT handler returned: the process goes on"));
	free(log);
	rc_report_write_json("exited", false);
	assert_jq(json_file, ".status == \"exited\" and .signal == null and (.findings | length) == 1 and .summary.errors == 1");
	fake_signal_stack = 0;
}
END_TEST

/*
 * The frame table grows with the distinct pcs (it starts at 128): 20
 * findings of 32 pcs each, all distinct, in both modes, each stack's
 * indices naming its own pcs in order.
 */
START_TEST(test_json_many_frames)
{
	static const char *const check =
		"[.findings[] | select(.message | startswith(\"many \"))"
		" | [.stack[].pc]] as $s"
		" | ($s | length) == 20 and ($s | map(length == 32) | all)"
		" and ($s | flatten | unique | length) == 640"
		" and $s[0][0] == \"0x500000\" and $s[0][1] == \"0x500010\""
		" and $s[19][31] == \"0x5027f0\"";
	uintptr_t pcs[32];
	struct rc_finding f;
	char msg[32];
	unsigned i, k;

	for (i = 0; i < 20; i++) {
		for (k = 0; k < 32; k++)
			pcs[k] = 0x500000 + (i * 32 + k) * 16;
		snprintf(msg, sizeof(msg), "many %u", i);
		finding(&f, RC_R_EVENT_DOUBLE_ACK, "rdma_ack_cm_event", msg);
		f.stack = fake_stack(32, pcs);
		rc_report(&f);
	}
	rc_report_write_json("exited", false);
	assert_json_parses(json_file);
	assert_jq_raw(json_file, "(.frames | length) >= 640 and (.frames | unique | length) == (.frames | length)");
	assert_jq(json_file, check);
	rc_report_write_json("crashed", true);
	assert_jq_raw(json_file, ".status == \"crashed\" and (.frames | length) >= 640 and (.frames | unique | length) == (.frames | length)");
	assert_jq(json_file, check);
}
END_TEST

START_TEST(test_halt_on_error)
{
	struct rc_finding f;
	char want[128], *log;
	int status;
	pid_t pid;

	start("halt_on_error=1");
	finding(&f, RC_R_CREATE_QP_TWICE, "rdma_create_qp", "warning only");
	rc_report(&f);		/* warnings do not halt */
	pid = fork();
	if (pid == 0) {
		struct rlimit nocore = { 0, 0 };

		setrlimit(RLIMIT_CORE, &nocore);
		/* As lifecycle.c does: own findings, own log file. */
		rc_report_atfork_child();
		finding(&f, RC_R_DOUBLE_DESTROY, "rdma_destroy_id", "dd");
		rc_report(&f);
		_exit(0);
	}
	/* As ASan: exitcode, not a core-dumping abort(). */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 23);

	/* The child wrote its own files (%p). */
	snprintf(want, sizeof(want), "/tmp/rc-unit-json.%d", (int)pid);
	assert_json_parses(want);
	assert_jq(want, ".status == \"exited\" and .halted == true and .summary.errors == 1 and .summary.warnings == 0 and (.findings | length) == 1");
	unlink(want);
	snprintf(want, sizeof(want), "/tmp/rc-unit-log.%d", (int)pid);
	log = slurp(want);
	unlink(want);
	ck_assert_ptr_nonnull(log);
	ck_assert_ptr_nonnull(strstr(log, "ERROR: rdmacheck: dd [double-destroy]\n"));
	ck_assert_ptr_nonnull(strstr(log, " rdmacheck: 1 errors, 0 warnings, 0 leaked objects (0 suppressed)\n"));
	free(log);
}
END_TEST

START_TEST(test_findings_cap)
{
	struct rc_finding f;
	struct rc_summary s;
	unsigned i;

	start("log_path=/dev/null");
	finding(&f, RC_R_USE_AFTER_DESTROY, "rdma_connect", "uad");
	f.stack = 0;
	for (i = 0; i < 10003; i++)
		rc_report(&f);
	rc_report_summary(&s);
	ck_assert_uint_eq(s.errors, 10003);
	rc_report_write_json("exited", false);
	assert_json_parses(json_file);
	assert_jq(json_file, "(.findings | length) == 10000 and .findings_dropped == 3 and .summary.errors == 10003");
}
END_TEST

#define NTHREADS 4
#define PER_THREAD 300

static void *reporter(void *arg)
{
	struct rc_finding f;
	unsigned i;

	for (i = 0; i < PER_THREAD; i++) {
		finding(&f, i % 2 ? RC_R_EVENT_DOUBLE_ACK : RC_R_LEAK_EVENT,
			NULL, "concurrent");
		f.count = 2;
		obj(&f, RC_K_EVENT, (uintptr_t)arg, 1, st_create);
		rc_report(&f);
	}
	return NULL;
}

START_TEST(test_threads)
{
	pthread_t th[NTHREADS];
	struct rc_summary s;
	char *log, *p, head[64];
	unsigned i, blocks = 0;

	for (i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, reporter, (void *)(uintptr_t)i);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	rc_report_summary(&s);
	ck_assert_uint_eq(s.errors, NTHREADS * PER_THREAD / 2);
	ck_assert_uint_eq(s.leaks, NTHREADS * PER_THREAD);

	/* Every block is whole: a header, 6 lines, a blank line. */
	log = slurp(log_file);
	snprintf(head, sizeof(head), "==%d== ", (int)getpid());
	for (p = log; *p; blocks++) {
		char *end = strstr(p, "\n\n");

		ck_assert_ptr_nonnull(end);
		ck_assert(!strncmp(p, head, strlen(head)));
		*end = '\0';
		ck_assert_int_eq(count_lines(p), 6);
		ck_assert_ptr_null(strstr(p + strlen(head), "=="));
		p = end + 2;
	}
	ck_assert_uint_eq(blocks, NTHREADS * PER_THREAD);
	free(log);

	rc_report_write_json("exited", false);
	assert_json_parses(json_file);
	assert_jq(json_file, ".findings | length == 1200");
}
END_TEST

static void *json_writer(void *arg)
{
	unsigned i;

	for (i = 0; i < 40; i++)
		rc_report_write_json("snapshot", false);
	return NULL;
}

/* Concurrent writers and reporters: the file is always one document. */
START_TEST(test_json_concurrent_writers)
{
	pthread_t th[4];
	unsigned i;

	start("log_path=/dev/null");
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, i < 2 ? json_writer : reporter,
			       (void *)(uintptr_t)i);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_json_parses(json_file);
	ck_assert_int_ne(run("ls %s.tmp.* 2>/dev/null | grep -q .", json_file), 0);
	rc_report_write_json("exited", false);
	assert_jq(json_file, ".findings | length == 600");
}
END_TEST

START_TEST(test_tables)
{
	unsigned i, j;

	ck_assert_str_eq(rc_severity_name(RC_SEV_ERROR), "error");
	ck_assert_str_eq(rc_severity_name(RC_SEV_WARNING), "warning");
	ck_assert_str_eq(rc_severity_name(RC_SEV_LEAK), "leak");
	ck_assert_str_eq(rc_rules[RC_R_LEAK_ID].id, "leak-id");
	ck_assert_int_eq(rc_rules[RC_R_BLOCKED_CALL].severity, RC_SEV_WARNING);
	for (i = 0; i < RC_R_COUNT; i++) {
		ck_assert_ptr_nonnull(rc_rules[i].id);
		ck_assert_ptr_nonnull(rc_rules[i].summary);
		for (j = 0; j < i; j++)
			ck_assert_str_ne(rc_rules[i].id, rc_rules[j].id);
	}
	ck_assert_str_eq(rc_kind_json(RC_K_DEVLIST), "device_list");
	ck_assert_str_eq(rc_kind_text(RC_K_ID), "cm id");
	ck_assert_str_eq(rc_kind_json(RC_K_COUNT), "unknown");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("report");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_text_error_block);
	tcase_add_test(tc, test_text_leak_and_warning);
	tcase_add_test(tc, test_counts_summary_exit_status);
	tcase_add_test(tc, test_exitcode_option);
	tcase_add_test(tc, test_forget_leaks);
	tcase_add_test(tc, test_suppressed);
	tcase_add_test(tc, test_json_fields);
	tcase_add_test(tc, test_json_stack_ref);
	tcase_add_test(tc, test_fingerprint);
	tcase_add_test(tc, test_json_escaping);
	tcase_add_test(tc, test_json_disabled);
	tcase_add_test(tc, test_json_crash_mode);
	tcase_add_test(tc, test_report_crash);
	tcase_add_test(tc, test_json_many_frames);
	tcase_add_test(tc, test_halt_on_error);
	tcase_add_test(tc, test_findings_cap);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_json_concurrent_writers);
	tcase_add_test(tc, test_tables);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report_test_util.h - helpers for the options/suppression/report unit
 * tests: capture stderr, read files, run jq/python3 on a JSON file.
 */
#ifndef RC_REPORT_TEST_UTIL_H
#define RC_REPORT_TEST_UTIL_H

#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int saved_stderr = -1;
static char capture_path[64];

/* Redirect fd 2 to a temporary file until capture_end(). */
static inline void capture_begin(void)
{
	int fd;

	snprintf(capture_path, sizeof(capture_path),
		 "/tmp/rc-unit-stderr.%d", (int)getpid());
	fd = open(capture_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved_stderr = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

/* Whole file contents (malloc()ed, NUL-terminated), or NULL. */
static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, n + 1);
	if (fread(buf, 1, n, f) != (size_t)n)
		n = 0;
	fclose(f);
	return buf;
}

/* Restore stderr; returns what was written (free it). */
static inline char *capture_end(void)
{
	char *s;

	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	s = slurp(capture_path);
	unlink(capture_path);
	return s;
}

static inline int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

static inline int run(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static inline const char *jq_path(void)
{
	const char *jq = getenv("JQ");

	if (jq && !strcmp(jq, "no"))
		return NULL;
	return jq && *jq ? jq : "jq";
}

/*
 * The file must be one valid JSON document: python3's strict parser (it
 * also insists on valid UTF-8), else jq; skipped without either.
 */
static inline void assert_json_parses(const char *path)
{
	const char *py = getenv("PYTHON3"), *jq = jq_path();

	if (!py || !*py)
		py = "python3";
	if (strcmp(py, "no"))
		ck_assert_msg(!run("'%s' -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' %s",
				   py, path), "%s does not parse as JSON", path);
	else if (jq)
		ck_assert_msg(!run("'%s' -e . %s >/dev/null", jq, path),
			      "%s does not parse as JSON", path);
}

/* jq -e EXPR must be true on the file as it is (skipped without jq). */
static inline void assert_jq_raw(const char *path, const char *expr)
{
	const char *jq = jq_path();

	if (!jq)
		return;
	ck_assert_msg(!run("'%s' -e '%s' %s >/dev/null", jq, expr, path),
		      "jq '%s' is not true on %s", expr, path);
}

/*
 * The same on the report with its stacks as frame objects, whatever its
 * format (tests/lib/report.jq's frames_inlined, shared with the shell
 * tests).
 */
static inline void assert_jq(const char *path, const char *expr)
{
	const char *jq = jq_path(), *top = getenv("top_srcdir");

	if (!jq)
		return;
	ck_assert_msg(top && *top,
		      "top_srcdir is not set: run from make check");
	ck_assert_msg(!run("'%s' -e -L '%s/tests/lib' 'include \"report\"; frames_inlined | (%s)' %s >/dev/null",
			   jq, top, expr, path),
		      "jq '%s' is not true on %s", expr, path);
}

#endif

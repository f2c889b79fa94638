/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_report.c - fuzz harness of rdmacheck-report's input: the input is
 * a JSON report, loaded twice (two processes) by the tool's own loader,
 * then suppressed, merged and written out in every mode as the tool
 * does, except that frames are not symbolized (modules are paths from
 * the input).  The merged JSON document must be valid JSON again.
 *
 * The tool's parts (tools/report/, but its main.c) are linked in; its
 * die() jumps back here instead of exiting (die_catch).
 */
#include "report_tool.h"

#include "fuzz.h"

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const supp[] = {
		"leak-*:*leaks.c", "double-destroy:drop_id", "*:rdma_connect",
	};
	unsigned i;

	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	for (i = 0; i < sizeof(supp) / sizeof(supp[0]); i++)
		rc_suppress_add_line(supp[i], "fuzz", i + 1);
	return 0;
}

static char *copy(const uint8_t *data, size_t size)
{
	char *p = malloc(size ? size : 1);

	if (!p)
		abort();
	memcpy(p, data, size);
	return p;
}

/* What rdmacheck-report --format=json or sarif writes must read back as
 * JSON. */
static void check_json(void (*output)(FILE *o))
{
	char *out = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&out, &len);
	json_error_t err;
	json_t *v;

	FUZZ_ASSERT(o);
	output(o);
	FUZZ_ASSERT(!fclose(o));
	v = json_loadb(out, len, 0, &err);
	if (!v) {
		fprintf(stderr, "JSON output is not JSON: %d:%d: %s\n",
			err.line, err.column, err.text);
		abort();
	}
	FUZZ_ASSERT(json_is_object(v));
	json_decref(v);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	jmp_buf jb;

	if (!devnull)
		LLVMFuzzerInitialize(NULL, NULL);
	if (setjmp(jb)) {
		/* Bad input: die() said why. */
		die_catch = NULL;
		FUZZ_ASSERT(*die_msg);
		free_reports();
		return 0;
	}
	die_catch = &jb;
	load_report_buf("fuzz.1.json", copy(data, size), size);
	load_report_buf("fuzz.2.json", copy(data, size), size);
	apply_suppressions();

	merge_all(false);
	output_text(devnull, false, false);
	output_text(devnull, false, true);
	merge_all(true);
	output_text(devnull, true, false);
	output_json(devnull);
	check_json(output_json);
	output_junit(devnull, true);
	output_junit(devnull, false);
	check_json(output_sarif);
	output_github(devnull, true);
	output_gen_suppressions(devnull);

	die_catch = NULL;
	free_reports();
	return 0;
}

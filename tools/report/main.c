/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * main.c - rdmacheck-report(1)'s arguments and main().  The tool reads
 * the JSON reports that librdmacheck.so writes (one per process),
 * symbolizes frames offline,
 * applies suppressions, merges identical findings across processes, and
 * prints them as text blocks (like the shim's), summary lines, or one
 * merged JSON document.  Exit status: 0 clean, 1 unsuppressed errors or
 * leaks remain, 2 usage or input errors, 3 a process died of a signal
 * (a report with status "crashed" or "killed"), whatever else it says.
 *
 * Its parts, in tools/report/, share report_tool.h: common.c, arena.c,
 * json_read.c, writers.c, model.c, symbolize.c, fingerprint.c,
 * suppress.c, baseline.c, merge.c, text.c, json_write.c, formats.c and
 * inputs.c; each says what it owns.
 * Reuses src/symbolize/ (offline symbolizer), src/report/suppress.c
 * (matcher), src/core/rules.c, src/core/options.c (rc_complain) and
 * src/core/util.c (rc_warn).
 *
 * Memory: a report is read whole; jansson builds the tree of its top
 * level, findings left out, and of one finding at a time, which is
 * copied into the model (findings, stacks, objects, strings, all from its
 * arena) and freed.  Format 2's stacks index the top-level "frames"
 * (read before the first finding): each stack gets copies of its frames,
 * so the model is format 1's.  The file and the trees are freed once it
 * is loaded.
 * Reports that are regular files load in parallel.
 */
#include "report_tool.h"

static void usage(FILE *o)
{
	fprintf(o,
		"Usage: %s [OPTION]... REPORT.json|DIR...\n"
		"Render and merge rdmacheck JSON reports (a DIR means every *.json in it,\n"
		"- standard input).\n"
		"\n"
		"  -m, --merge              show identical findings once, across processes;\n"
		"                           a process's snapshots give way to its exit report\n"
		"  -f, --format=FORMAT      text (default), json (the merged result as one\n"
		"                           JSON document), junit, sarif or github\n"
		"  -j, --json               the same as --format=json\n"
		"  -b, --baseline=OLD       report and fail only on findings whose fingerprint\n"
		"                           is not in OLD (a report, a directory of them, or\n"
		"                           what --format=json wrote)\n"
		"  -s, --suppressions=FILE  mark findings matching FILE suppressed\n"
		"      --strip-path-prefix=PREFIX  remove PREFIX from source paths\n"
		"      --gen-suppressions   write a suppression file silencing the findings\n"
		"      --summary            print only the summary lines\n"
		"  -o, --output=FILE        write to FILE instead of stdout\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n"
		"\n"
		"Exit status: 0 when no unsuppressed error or leak remains, 1 when\n"
		"some do, 2 on usage or input errors, 3 when a process died of a signal\n"
		"(a report with status crashed or killed), whatever its findings.\n",
		prog);
}

int main(int argc, char **argv)
{
	enum { OPT_SUMMARY = 256, OPT_STRIP, OPT_GEN };
	enum { F_TEXT, F_JSON, F_JUNIT, F_SARIF, F_GITHUB };
	static const char *const formats[] = {
		[F_TEXT] = "text", [F_JSON] = "json", [F_JUNIT] = "junit",
		[F_SARIF] = "sarif", [F_GITHUB] = "github",
	};
	static const struct option longopts[] = {
		{ "merge", no_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "strip-path-prefix", required_argument, NULL, OPT_STRIP },
		{ "gen-suppressions", no_argument, NULL, OPT_GEN },
		{ "suppressions", required_argument, NULL, 's' },
		{ "summary", no_argument, NULL, OPT_SUMMARY },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool merge = false, summary_only = false, gen = false, died;
	const char *outpath = NULL, *baseline = NULL;
	int format = F_TEXT;
	size_t k;
	struct summary t;
	struct stat st;
	FILE *o = stdout;
	int c;

	while ((c = getopt_long(argc, argv, "mjf:b:s:o:hV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'm':
			merge = true;
			break;
		case 'j':
			format = F_JSON;
			break;
		case 'f':
			for (k = 0; k < sizeof(formats) / sizeof(*formats); k++)
				if (!strcmp(optarg, formats[k]))
					break;
			if (k == sizeof(formats) / sizeof(*formats))
				die("unknown format '%s' (text, json, junit, sarif or github)",
				    optarg);
			format = (int)k;
			break;
		case 'b':
			baseline = optarg;
			break;
		case OPT_STRIP:
			strip_prefix = optarg;
			break;
		case OPT_GEN:
			gen = true;
			break;
		case 's':
			if (rc_suppress_load(optarg) < 0)
				die("cannot read the suppressions file '%s': "
				    "%s", optarg, strerror(errno));
			break;
		case OPT_SUMMARY:
			summary_only = true;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
#ifdef RR_HAVE_DWFL
			printf("%s %s (symbolizer: libdw)\n", prog,
			       PACKAGE_VERSION);
#else
			printf("%s %s (symbolizer: built-in)\n", prog,
			       PACKAGE_VERSION);
#endif
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no report given\n", prog);
		usage(stderr);
		return 2;
	}
	if (format != F_TEXT && summary_only)
		die("--summary is for the text format");
	if (gen && (format != F_TEXT || summary_only))
		die("--gen-suppressions writes a suppression file: no --format or --summary");
	/* The baseline first, while procs[] is free. */
	if (baseline)
		load_baseline(baseline);
	for (; optind < argc; optind++) {
		if (!stat(argv[optind], &st) && S_ISDIR(st.st_mode))
			add_dir(argv[optind]);
		else
			add_input(argv[optind]);
	}
	load_all(inputs, ninputs);
	/* Merged output shows each process once. */
	if (merge || format == F_JSON || format == F_SARIF)
		collapse_snapshots();

	/* Suppressions and fingerprints use function and file names. */
	if (!summary_only || rc_suppress_count() || merge || baseline)
		symbolize_all();
	apply_suppressions();
	apply_baseline();
	/* JSON and SARIF always list each finding once. */
	merge_all(merge || format == F_JSON || format == F_SARIF);

	if (outpath && !(o = fopen(outpath, "w")))
		die("%s: cannot create: %s", outpath, strerror(errno));
	switch (gen ? -1 : format) {
	case -1:
		output_gen_suppressions(o);
		break;
	case F_JSON:
		output_json(o);
		break;
	case F_JUNIT:
		output_junit(o, merge);
		break;
	case F_SARIF:
		output_sarif(o);
		break;
	case F_GITHUB:
		output_github(o, merge);
		break;
	default:
		output_text(o, merge, summary_only);
	}
	if (fflush(o) || ferror(o) || (o != stdout && fclose(o)))
		die("%s: write error: %s", outpath ? outpath : "stdout",
		    strerror(errno));

	total_summary(&t);
	died = any_died();
	free_reports();
	free_baseline();
	return died ? 3 : t.errors || t.leaks ? 1 : 0;
}


#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# format1.sh: rdmacheck-report still reads format 1, the layout the shim
# wrote before format 2 (each stack an array of frame objects), and reads
# it into the same model as format 2:
# - each format-1 report in tests/report-tool/format1-reports/ gives the text,
#   JUnit and SARIF results NAME.txt, NAME.xml and NAME.sarif.json hold:
#   what rdmacheck-report printed for it before format 2 (main 57f7ef7;
#   the SARIF results and invocations only, not the rule catalogue), but
#   for killed.*: a process killed is a failure since, so its text names
#   the signal, its JUnit failure says it was killed and its SARIF
#   invocation did not succeed;
# - the same report as format 2 (report.jq's frames_tabled) gives the
#   same text, JUnit, SARIF and merged JSON;
# - --merge of a format-1 and a format-2 report is --merge of the two as
#   format 1.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"

t_name=format1
tool=$top_builddir/tools/rdmacheck-report
fix=$top_srcdir/tests/report-tool/format1-reports
jq=${JQ:-jq}
[ -x "$tool" ] || { echo "$t_name: $tool is missing"; exit 77; }
if [ "$jq" = no ] || ! command -v "$jq" >/dev/null 2>&1; then
	echo "$t_name: jq not found"
	exit 77
fi

# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

# outputs DIR NAME: every format of DIR/NAME.json into DIR/NAME.out.*;
# run in DIR, so that the report's path is NAME.json in all.
outputs() {
	(
		cd "$1"
		for f in text junit sarif json github; do
			# 1: findings; 3: killed.json, a process killed
			"$tool" --format=$f "$2.json" >"$2.out.$f" ||
				case $? in 1 | 3) ;; *) false ;; esac
		done
	)
}

mkdir "$t_dir/f1" "$t_dir/f2" "$t_dir/mix" "$t_dir/same"
for r in "$fix"/*.json; do
	case $r in *.sarif.json) continue ;; esac
	n=$(basename "$r" .json)
	cp "$r" "$t_dir/f1/$n.json"
	"$jq" -L "$top_srcdir/tests/lib" 'include "report"; frames_tabled' \
		"$r" >"$t_dir/f2/$n.json"
	"$jq" -e '.format == 2 and (.frames | length) > 0' \
		"$t_dir/f2/$n.json" >/dev/null ||
		fail "$n: frames_tabled wrote no format 2"
	outputs "$t_dir/f1" "$n"
	outputs "$t_dir/f2" "$n"

	cmp -s "$fix/$n.txt" "$t_dir/f1/$n.out.text" &&
		pass "$n (format 1): the text of before" ||
		fail "$n: text: $(diff "$fix/$n.txt" "$t_dir/f1/$n.out.text")"
	cmp -s "$fix/$n.xml" "$t_dir/f1/$n.out.junit" &&
		pass "$n (format 1): the JUnit of before" ||
		fail "$n: JUnit: $(diff "$fix/$n.xml" "$t_dir/f1/$n.out.junit")"
	"$jq" -S '.runs[0] | {results, invocations}' "$t_dir/f1/$n.out.sarif" \
		>"$t_dir/f1/$n.results"
	"$jq" -S . "$fix/$n.sarif.json" >"$t_dir/f1/$n.results.before"
	cmp -s "$t_dir/f1/$n.results.before" "$t_dir/f1/$n.results" &&
		pass "$n (format 1): the SARIF results of before" ||
		fail "$n: SARIF: $(diff "$t_dir/f1/$n.results.before" \
		     "$t_dir/f1/$n.results")"
	# jq reads the shim's \u0080..\u00ff (raw bytes) as characters:
	# its format-2 twin of escapes.json has other strings.
	[ "$n" != escapes ] || continue
	same=1
	for f in text junit sarif json github; do
		cmp -s "$t_dir/f1/$n.out.$f" "$t_dir/f2/$n.out.$f" && continue
		same=0
		fail "$n: --format=$f differs in format 2:" \
		     "$(diff "$t_dir/f1/$n.out.$f" "$t_dir/f2/$n.out.$f")"
	done
	[ "$same" = 0 ] ||
		pass "$n: format 2 reads the same (text, junit, sarif, json, github)"
done

# Mixed inputs: leaks in format 1, double-destroy in format 2.
cp "$t_dir/f1/leaks.json" "$t_dir/f1/double-destroy.json" "$t_dir/same/"
cp "$t_dir/f1/leaks.json" "$t_dir/f2/double-destroy.json" "$t_dir/mix/"
for d in same mix; do
	(
		cd "$t_dir/$d"
		for f in text json sarif; do
			"$tool" --merge --format=$f leaks.json double-destroy.json \
				>merged.$f || [ $? = 1 ]
		done
	)
done
for f in text json sarif; do
	cmp -s "$t_dir/same/merged.$f" "$t_dir/mix/merged.$f" &&
		pass "--merge --format=$f of format 1 and 2 inputs" ||
		fail "--merge --format=$f: $(diff "$t_dir/same/merged.$f" \
		     "$t_dir/mix/merged.$f")"
done
grep -q 'in 2 processes' "$t_dir/mix/merged.text" ||
	fail "--merge: not 2 processes: $(cat "$t_dir/mix/merged.text")"

finish

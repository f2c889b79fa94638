#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# gen-rules.sh RULES.TAB PROSE SCENARIO-DIR: doc/rules.md, one section per
# rule of src/core/rules.def (via tools/rules.tab), in its order: severity and
# summary from the table, the prose that doc/rules.md.in has for the rule
# ("@@ rule-id" blocks; a rule without one gets its summary only), and the
# scenario of tests/scenarios/ that breaks it, with the command that runs
# it and the shape of its report.  New rules appear without editing here.
set -eu
tab=$1
prose=$2
scn=$3

# The scenario breaking each rule: "id program mode function" lines, the
# scenario named after the rule first.
for f in "$scn"/*.scenario; do
	awk -v base="${f##*/}" -F= '
		$1 == "program" { p = $2 } $1 == "mode" { m = $2 }
		$1 == "expect_rule" { r = $2 } $1 == "expect_function" { fn = $2 }
		$1 == "backend" { b = $2 } $1 == "wrapper" { w = 1 }
		$1 == "options" { o = substr($0, 9) }
		$1 == "symbolize" { y = $2 }
		END {
			if (r == "" || p == "" || w || (b != "" && b != "loopback"))
				exit
			pri = base == r ".scenario" ? 0 : 1
			print pri, r, p, (m == "" ? "bad" : m), fn, base, \
				(o == "" ? "-" : o), (y == "1" ? 1 : 0)
		}' "$f"
done | sort -k1,1n -k6,6 >"${TMPDIR:-/tmp}/gen-rules.$$"

awk -F '\t' -v prosefile="$prose" -v scnfile="${TMPDIR:-/tmp}/gen-rules.$$" '
BEGIN {
	while ((getline l < prosefile) > 0) {
		if (l ~ /^@@ /) { cur = substr(l, 4); continue }
		if (cur == "") { head = head l "\n"; continue }
		text[cur] = text[cur] l "\n"
	}
	while ((getline l < scnfile) > 0) {
		split(l, a, " ")
		if (!(a[2] in sprog)) {
			sprog[a[2]] = a[3]; smode[a[2]] = a[4]
			sfn[a[2]] = a[5]; sfile[a[2]] = a[6]
			sopt[a[2]] = a[7] == "-" ? "" : "RDMACHECK_OPTIONS=" a[7] " "
			ssym[a[2]] = a[8]
		}
	}
	printf "%s", head
}
$1 == "rule" {
	id = $3; sev = tolower($4); sum = $5
	word = sev == "leak" ? "LEAK" : toupper(sev)
	printf "\n## `%s`\n\n*Severity: %s.* %s.\n", id, sev, sum
	if (id in text)
		printf "\n%s", text[id]
	if (id in sprog) {
		printf "\n**Example.** `tests/scenarios/%s` breaks it: ", sfile[id]
		printf "`%srdmacheck --loopback -- build/tests/scenarios/%s %s` reports\n\n", sopt[id], sprog[id], smode[id]
		printf "    ==PID== %s: rdmacheck: ... [%s]\n", word, id
		if (ssym[id] == 1) {
			# from a signal handler: module+offset, named offline
			printf "        #0 0x... (build/tests/scenarios/%s+0x...)\n", sprog[id]
			printf "        ...\n"
			printf "\nand `rdmacheck-report` names its first frame `%s`.\n", sfn[id]
		} else {
			printf "        #0 0x... in %s tests/scenarios/...\n", sfn[id] == "" ? "..." : sfn[id]
			printf "        ...\n"
		}
	}
}
' "$tab"
rm -f "${TMPDIR:-/tmp}/gen-rules.$$"

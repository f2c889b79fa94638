#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/report-tool/ci-recipes.sh: the recipes of doc/ci.md, as written
# there: the GitHub Actions and GitLab YAML parsed (python3-yaml), the
# GitHub steps named "rdmacheck: ..." and the GitLab script run with bash
# as those runners do, and the mpirun and srun recipes run with stand-ins
# for mpirun and srun that start the ranks with their rank variables set
# and fail when a rank fails, as Open MPI and Slurm do.  The program
# under test is a scenario program that leaks (and one that destroys an
# id twice), on the loopback backend.  What the recipes write is read
# back: SARIF against the 2.1.0 schema, JUnit with an XML parser, the
# annotations and the merged text.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
: "${RDMACHECK_LOOPBACK_DIR:?run this test from make check}"

t_name=ci-recipes
scn=$top_builddir/tests/scenarios
py=${PYTHON3:-python3}
for f in "$top_builddir/tools/rdmacheck" "$top_builddir/tools/rdmacheck-report" \
	"$scn/leaks" "$scn/double_destroy"; do
	[ -e "$f" ] || { echo "$t_name: $f is missing"; exit 77; }
done
for t in "$py" xmllint bash; do
	if [ "$t" = no ] || ! command -v "$t" >/dev/null 2>&1; then
		echo "$t_name: $t not found (./quickstart.sh installs it): skipped"
		exit 77
	fi
done
if ! "$py" -c 'import yaml, jsonschema' 2>/dev/null; then
	echo "$t_name: python3-yaml or python3-jsonschema not found (./quickstart.sh installs them): skipped"
	exit 77
fi

# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

cd "$t_dir"
PATH=$top_builddir/tools:$PATH
export PATH
RDMACHECK_LOOPBACK_NS=ci$$
export RDMACHECK_LOOPBACK_NS

# The recipes: the code block after each "<!-- recipe: NAME -->".
"$py" - "$top_srcdir/doc/ci.md" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
found = re.findall(r"<!-- recipe: (\w+) -->\n```\w*\n(.*?)```", text, re.S)
for name, body in found:
    open(name + ".recipe", "w").write(body)
print(" ".join(n for n, _ in found))
EOF
for r in github gitlab mpirun srun; do
	[ -s "$r.recipe" ] && pass "doc/ci.md has the $r recipe" ||
		fail "doc/ci.md: no $r recipe"
done

# What the recipes run: "your tests", two scenario programs.
cat >run-tests.sh <<EOF
#!/bin/sh
"$scn/leaks" bad && "$scn/double_destroy" bad
EOF
cat >my_mpi_app <<EOF
#!/bin/sh
exec "$scn/leaks" bad
EOF
chmod +x run-tests.sh my_mpi_app

# steps FILE: the commands the runner would run, one file per step:
# GitHub's steps named "rdmacheck: ...", GitLab's script lines.
"$py" - github.recipe gitlab.recipe <<'EOF'
import sys, yaml
gh = yaml.safe_load(open(sys.argv[1]))
job = gh["jobs"]["rdmacheck"]
# YAML 1.1 reads the key "on" as true; GitHub reads it as "on".
assert gh.get("on", gh.get(True)) == ["push", "pull_request"], gh
assert job["permissions"]["security-events"] == "write"
uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
assert uses == ["actions/checkout", "github/codeql-action/upload-sarif",
                "actions/upload-artifact"], uses
sarif = [s for s in job["steps"] if s.get("uses", "").startswith(
    "github/codeql-action/upload-sarif")][0]
assert sarif["with"]["sarif_file"] == "rdmacheck.sarif"
assert sarif["if"] == "always()"
runs = [s for s in job["steps"] if s.get("name", "").startswith("rdmacheck:")]
assert len(runs) == 3, runs
for i, s in enumerate(runs):
    open("gh-step%d.sh" % i, "w").write(s["run"])
gl = yaml.safe_load(open(sys.argv[2]))["rdmacheck"]
assert gl["artifacts"]["reports"]["junit"] == "rdmacheck-junit.xml"
assert gl["artifacts"]["when"] == "always"
open("gl-script.sh", "w").write("\n".join(gl["script"]) + "\n")
print("ok")
EOF
[ -s gh-step0.sh ] && [ -s gl-script.sh ] &&
	pass "GitHub and GitLab YAML parse, with the expected steps" ||
	fail "YAML of doc/ci.md"

# --- GitHub: as the runner does, "bash -e" per step, in the checkout.
# The scenario sources were compiled from the source tree, so that is
# the workspace whose prefix the recipe strips.
GITHUB_WORKSPACE=$(cd "$top_srcdir" && pwd)
export GITHUB_WORKSPACE
ghsrc=$(mktemp -d "$t_dir/gh.XXXXXX")
cp run-tests.sh "$ghsrc/"
for i in 0 1 2; do
	set +e
	(cd "$ghsrc" && bash --noprofile --norc -eo pipefail \
		"$t_dir/gh-step$i.sh") >"gh$i.out" 2>"gh$i.err"
	eval "gh_rc$i=\$?"
	set -e
done
# shellcheck disable=SC2154
[ "$gh_rc0" = 0 ] && [ "$gh_rc1" = 0 ] && [ "$gh_rc2" = 1 ] &&
	pass "GitHub steps: tests and SARIF/JUnit pass, the gate fails on the findings" ||
	fail "GitHub steps: exits $gh_rc0 $gh_rc1 $gh_rc2: $(cat gh*.err)"
[ "$(ls "$ghsrc"/rdmacheck-reports/*.json | wc -l)" = 2 ] &&
	pass "GitHub: a report per process" ||
	fail "GitHub reports: $(ls "$ghsrc"/rdmacheck-reports)"
run "$py" "$top_srcdir/tests/sarif/validate.py" \
	"$top_srcdir/tests/sarif/sarif-schema-2.1.0.json" "$ghsrc/rdmacheck.sarif"
[ "$rc" = 0 ] && grep -q '"uri": "tests/scenarios/double_destroy.c"' \
	"$ghsrc/rdmacheck.sarif" &&
	pass "GitHub: rdmacheck.sarif is valid SARIF 2.1.0, repository-relative" ||
	fail "GitHub SARIF: $out $err"
run xmllint --noout "$ghsrc/rdmacheck-junit.xml"
[ "$rc" = 0 ] && pass "GitHub: rdmacheck-junit.xml well-formed" ||
	fail "GitHub JUnit: $err"
grep -q '^::error file=tests/scenarios/double_destroy\.c,line=9,title=rdmacheck double-destroy::' gh2.out &&
	grep -q '^::error file=tests/scenarios/leaks\.c,line=[0-9]*,title=rdmacheck leak-qp::' gh2.out &&
	pass "GitHub gate: annotations on the source lines" ||
	fail "GitHub annotations: $(head -c 600 gh2.out)"

# --- GitLab: each script line in order, the job failing at the first
# that fails (the runner's bash with -e).
glsrc=$(mktemp -d "$t_dir/gl.XXXXXX")
cp run-tests.sh "$glsrc/"
set +e
(cd "$glsrc" && bash --noprofile --norc -e "$t_dir/gl-script.sh") \
	>gl.out 2>gl.err
gl_rc=$?
set -e
[ "$gl_rc" = 1 ] && grep -q '^==total== rdmacheck: 1 errors, 0 warnings, 5 leaked objects' gl.out &&
	pass "GitLab script: the last line fails the job on the findings" ||
	fail "GitLab: exit $gl_rc: $(cat gl.out gl.err)"
cat >junit.py <<'EOF'
import sys
import xml.etree.ElementTree as ET
s = ET.parse(sys.argv[1]).getroot().find("testsuite")
assert int(s.get("tests")) == 2 and int(s.get("failures")) == 2, s.attrib
print("ok")
EOF
run "$py" junit.py "$glsrc/rdmacheck-junit.xml"
[ "$rc" = 0 ] && pass "GitLab: the JUnit report has a failing testcase per process" ||
	fail "GitLab JUnit: $out $err"

# --- mpirun and srun: stand-ins that start N ranks with the rank
# variable set and, as Open MPI does, fail when a rank fails.
mkdir bin
cat >bin/mpirun <<'EOF'
#!/bin/sh
# mpirun -np N PROGRAM...: the test's stand-in for Open MPI's.
[ "$1" = -np ] || { echo "mpirun stand-in: -np N first" >&2; exit 2; }
n=$2
shift 2
i=0 pids=
while [ "$i" -lt "$n" ]; do
	OMPI_COMM_WORLD_RANK=$i RDMACHECK_LOOPBACK_NS=$RDMACHECK_LOOPBACK_NS.$i \
		"$@" &
	pids="$pids $!"
	i=$((i + 1))
done
status=0
for p in $pids; do
	wait "$p" || status=1
done
[ "$status" = 0 ] || echo "mpirun: a rank exited with a non-zero status; job aborted" >&2
exit "$status"
EOF
sed -e 's/mpirun -np N/srun -n N/' -e 's/\[ "\$1" = -np \]/[ "$1" = -n ]/' \
	-e 's/OMPI_COMM_WORLD_RANK/SLURM_PROCID/' -e 's/mpirun:/srun:/' \
	bin/mpirun >bin/srun
chmod +x bin/mpirun bin/srun
for r in mpirun srun; do
	mkdir "$r" && cp my_mpi_app "$r/"
	set +e
	(cd "$r" && PATH=$t_dir/bin:$PATH \
		LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR \
		bash --noprofile --norc -e "$t_dir/$r.recipe") >"$r.out" 2>"$r.err"
	rc=$?
	set -e
	host=$(uname -n)
	names=$(cd "$r/reports" && ls | sed 's/\.[0-9]*\.json$//' | sort | tr '\n' ' ')
	[ "$rc" = 1 ] && ! grep -q 'job aborted' "$r.err" &&
		[ "$names" = "$host.0 $host.1 $host.2 $host.3 " ] &&
		grep -q "in 4 processes (pids [0-9]*, [0-9]*, [0-9]*, [0-9]*)$" "$r.out" &&
		grep -q '^==total== rdmacheck: 0 errors, 0 warnings, 20 leaked objects (0 suppressed) in 4 processes, 4 unique findings$' "$r.out" &&
		pass "$r recipe: 4 ranks, reports named host.rank, merged; the job ran to its end" ||
		fail "$r recipe: exit $rc, reports '$names': $(cat "$r.out" "$r.err" | head -c 800)"
done
# Why --exitcode=0: with the default the launcher aborts the job.
mkdir abort && cp my_mpi_app abort/
set +e
(cd abort && PATH=$t_dir/bin:$PATH LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR \
	mpirun -np 2 rdmacheck --json='%p.json' -- ./my_mpi_app) >abort.out \
	2>abort.err
rc=$?
set -e
[ "$rc" = 1 ] && grep -q 'job aborted' abort.err &&
	pass "without --exitcode=0 a rank's findings abort the MPI job" ||
	fail "default exitcode under mpirun: exit $rc $(cat abort.err)"

finish

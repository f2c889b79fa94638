#!/bin/sh
# The examples of README.md and doc/*.md that read a report cannot drift:
# every ```console block there is a session of "$ COMMAND" lines, each
# followed by the output it must print.  They run here, in a directory
# holding build/demo-report.json, the demo's report as ./quickstart.sh
# leaves it (made now by the demo under the shim), with jq and the
# build's rdmacheck-report on PATH; each output must equal the text.
# A block whose command is missing, or no block at all, fails.
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
PY=${PYTHON3:-python3}
command -v "$PY" >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
command -v "${JQ:-jq}" >/dev/null 2>&1 || { echo "SKIP: jq missing"; exit 77; }
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

mkdir "$t_dir/build"
set +e	# the demo's status is checked next
env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" LD_PRELOAD="$RDMACHECK_SHIM" \
	RDMACHECK_LOOPBACK_NS="rcdocex-$$" \
	RDMACHECK_OPTIONS="json=$t_dir/build/demo-report.json" \
	"$top_builddir/tests/scenarios/demo" >"$t_dir/demo.out" 2>&1
rc=$?
set -e
[ "$rc" = 23 ] && [ -s "$t_dir/build/demo-report.json" ] &&
	pass "the demo's report (exit 23)" ||
	fail "the demo exited $rc, report: $(ls "$t_dir/build")"

set +e	# the script's status is the verdict, read next
PATH="$top_builddir/tools:$PATH" "$PY" - "$t_dir" "$top_srcdir/README.md" \
	"$top_srcdir"/doc/*.md <<'PYEOF'
import glob, subprocess, sys
work, files = sys.argv[1], sys.argv[2:]
n = bad = 0
for path in files:
	lines = open(path, encoding="utf-8").read().split("\n")
	i = 0
	while i < len(lines):
		if lines[i].strip() != "```console":
			i += 1
			continue
		i += 1
		cmds = []	# [line number, command, expected lines]
		while i < len(lines) and lines[i].strip() != "```":
			if lines[i].startswith("$ "):
				cmds.append([i + 1, lines[i][2:], []])
			elif cmds:
				cmds[-1][2].append(lines[i])
			else:
				print("%s:%d: output before any command" %
				      (path, i + 1))
				bad += 1
			i += 1
		for line, cmd, want in cmds:
			n += 1
			r = subprocess.run(["sh", "-c", cmd], cwd=work,
					   capture_output=True, text=True)
			got = r.stdout.rstrip("\n").split("\n")
			if r.returncode or got != want:
				bad += 1
				print("%s:%d: %s\n  exit %d, printed:\n%s\n  "
				      "stderr: %s\n  expected:\n%s" %
				      (path, line, cmd, r.returncode,
				       "\n".join(got), r.stderr.strip(),
				       "\n".join(want)))
			else:
				print("ok: %s:%d: %s" % (path, line, cmd))
if n == 0:
	sys.exit("no ```console examples found: nothing was checked")
print("%d examples, %d failed" % (n, bad))
sys.exit(1 if bad else 0)
PYEOF
rc=$?
set -e
[ "$rc" = 0 ] && pass "every console example prints its text" ||
	fail "console examples (exit $rc)"
finish

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The examples of README.md and doc/*.md cannot drift: every ```console block
# there is a session of "$ COMMAND" lines, each followed by the output it must
# print (stdout and stderr, as on a terminal).  They run here, one shell per
# block, in a directory holding build/demo-report.json (the demo's report as
# ./quickstart.sh leaves it, made now by the demo under the shim) and the
# build's tests/, src/ and loopback/, with jq and the build's rdmacheck and
# rdmacheck-report on PATH and a loopback namespace of their own.  Each output
# must equal the text once addresses, pids, thread ids and the checkout's path
# are normalised; "..." stands for any lines.  A failed command (unless "echo
# $?" follows), a different output, or no block at all fails.
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

# the sessions run in a folder that looks like the build tree, as the
# README's do: ./tests/scenarios/demo, build/demo-report.json
for d in tests src loopback; do
	ln -s "$(cd "$top_builddir" && pwd)/$d" "$t_dir/$d"
done
set +e	# the script's status is the verdict, read next
PATH="$top_builddir/tools:$PATH" RDMACHECK_LOOPBACK_NS="rcdocex-$$" \
	"$PY" - "$t_dir" "$top_srcdir" "$top_builddir" \
	"$top_srcdir/README.md" "$top_srcdir"/doc/*.md <<'PYEOF'
import os, re, subprocess, sys

# Each ```console block runs in one shell, so a block may start a server
# in the background, cd, or read the last status with "echo $?".  A
# command must exit 0 unless the block's next command is "echo $?".
# Output is compared after normalising what changes from run to run
# (addresses, pids, thread ids, the checkout's path); an expected line
# "..." stands for any number of lines.
work, srcdir, builddir, files = (sys.argv[1], sys.argv[2], sys.argv[3],
				 sys.argv[4:])
srcdir, builddir = os.path.realpath(srcdir), os.path.realpath(builddir)
prefixes = [builddir + "/" + os.path.relpath(srcdir, builddir) + "/",
	    srcdir + "/", builddir + "/"]
MARK = "@@rdmacheck-doc-example-status"

def norm(line):
	for p in prefixes:
		line = line.replace(p, "")
	line = re.sub(r"0x[0-9a-f]+", "0xADDR", line)
	line = re.sub(r"==[0-9]+==", "==PID==", line)
	return re.sub(r"thread [0-9]+", "thread TID", line)

def match(want, got):
	if not want:
		return not got
	if want[0].strip() == "...":
		return any(match(want[1:], got[k:]) for k in range(len(got) + 1))
	return bool(got) and norm(want[0]) == norm(got[0]) and \
		match(want[1:], got[1:])

def run_block(cmds):
	script = "__rc=0\n"
	for _, cmd, _ in cmds:
		script += ("(exit $__rc); { %s\n} 2>&1; __rc=$?; "
			   "printf '\\n%s %%d\\n' \"$__rc\"\n" % (cmd, MARK))
	r = subprocess.run(["sh", "-c", script], cwd=work, stdout=subprocess.PIPE,
			   stderr=subprocess.STDOUT, text=True, timeout=120)
	parts = re.split(r"\n" + MARK + r" ([0-9]+)\n", r.stdout)
	res = []
	for k in range(len(cmds)):
		if 2 * k + 1 >= len(parts):
			res.append((None, parts[-1].split("\n")))
			continue
		out = parts[2 * k].strip("\n")
		res.append((int(parts[2 * k + 1]), out.split("\n") if out else []))
	return res

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
		if not cmds:
			continue
		for k, ((line, cmd, want), (rc, got)) in \
		    enumerate(zip(cmds, run_block(cmds))):
			n += 1
			may_fail = k + 1 < len(cmds) and \
				cmds[k + 1][1].strip() == "echo $?"
			if rc is None or (rc and not may_fail) or \
			   not match(want, got):
				bad += 1
				print("%s:%d: %s\n  exit %s, printed:\n%s\n"
				      "  expected:\n%s" %
				      (path, line, cmd, rc, "\n".join(got),
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

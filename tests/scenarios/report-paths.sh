#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Where json= leads, the report goes there and nothing else is touched:
# a regular file is replaced atomically (and temporaries a killed run left
# are removed), a FIFO or character device is written as it is, a
# symbolic link's target is written and the link stays, /dev/stdout works;
# a directory or an unwritable path gives one message at the start and
# exit status 2 (file_errors=fail, the default), or the same message as a
# warning and the program's own status with file_errors=warn.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
bin=$top_builddir/tests/scenarios/leaks
work=$(mktemp -d)
trap 'kill $reader 2>/dev/null; rm -rf "$work"' EXIT
reader=
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
# run PATH: the clean scenario under the shim with json=PATH; its stdout
# and stderr in $work/out, $work/err; its exit status in $rc.
run() {
	LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR LD_PRELOAD=$RDMACHECK_SHIM \
		RDMACHECK_LOOPBACK_NS="rcpaths-$$" \
		RDMACHECK_OPTIONS="json=$1${2:+:$2}" \
		"$bin" clean >"$work/out" 2>"$work/err"
	rc=$?
}
report() { "$JQ" -e '.tool == "rdmacheck"' "$1" >/dev/null 2>&1; }

# A regular file, with the temporary of a process that is gone beside it.
sh -c 'exit 0' & dead=$!
wait $dead
: >"$work/r.json.tmp.$dead"
run "$work/r.json"
[ "$rc" = 0 ] && report "$work/r.json" && [ -f "$work/r.json" ] &&
	ok "regular file written" || bad "regular file (exit $rc)"
[ ! -e "$work/r.json.tmp.$dead" ] && ok "stale temporary removed" ||
	bad "r.json.tmp.$dead left behind"
ls "$work" | grep -q '\.tmp\.' && bad "a temporary left: $(ls "$work")"

# A FIFO, read by another process: written, still a FIFO.
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/from-fifo" & reader=$!
# Readiness: the reader waits in open(2) for a writer (a writer that comes
# before any reader gets ENXIO).
i=0
until [ "$(cat "/proc/$reader/wchan" 2>/dev/null)" = wait_for_partner ] ||
    ls -l "/proc/$reader/fd" 2>/dev/null | grep -q "$work/fifo"; do
	i=$((i + 1))
	[ "$i" -lt 1000 ] || { bad "the FIFO reader never opened it"; break; }
	sleep 0.01
done
run "$work/fifo"
wait $reader
reader=
[ "$rc" = 0 ] && [ -p "$work/fifo" ] && report "$work/from-fifo" &&
	ok "FIFO written and kept" || bad "FIFO (exit $rc)"

# A symbolic link: the target is written, the link stays; a dangling one
# creates its target.
: >"$work/target.json"
ln -s target.json "$work/link.json"
run "$work/link.json"
[ -L "$work/link.json" ] && report "$work/target.json" &&
	ok "symlink kept, target written" || bad "symlink"
ln -s new.json "$work/dangling.json"
run "$work/dangling.json"
[ -L "$work/dangling.json" ] && report "$work/new.json" &&
	ok "dangling symlink: target created" || bad "dangling symlink"

# /dev/stdout: the report goes where standard output goes.
run /dev/stdout
[ "$rc" = 0 ] && report "$work/out" && ok "json=/dev/stdout" ||
	bad "json=/dev/stdout (exit $rc)"

# A character device stays one (as root, /dev/null used to be replaced).
run /dev/null
[ "$rc" = 0 ] && [ -c /dev/null ] && ok "/dev/null written, still a device" ||
	bad "/dev/null (exit $rc)"

# A directory and a path in no directory: one message (an error, before
# the program's first line), exit status 2; as a warning, the status kept.
mkdir "$work/dir"
for p in "$work/dir" "$work/none/r.json"; do
	run "$p"
	n=$(grep -c '^rdmacheck: error: cannot write the JSON report' \
		"$work/err")
	first=$(grep -n -m 1 'cannot write the JSON' "$work/err" | cut -d: -f1)
	[ "$rc" = 2 ] && [ "$n" = 1 ] && [ "$first" = 1 ] &&
		grep -q 'rdmacheck: exit status 2: ' "$work/err" &&
		ok "$p: one error at the start, exit 2" ||
		bad "$p: exit $rc, $n errors: $(cat "$work/err")"
	run "$p" file_errors=warn
	n=$(grep -c '^rdmacheck: warning: cannot write the JSON report' \
		"$work/err")
	[ "$rc" = 0 ] && [ "$n" = 1 ] &&
		ok "$p, file_errors=warn: one warning, exit 0" ||
		bad "$p, file_errors=warn: exit $rc, $n warnings: $(cat "$work/err")"
done
[ -d "$work/dir" ] && [ -z "$(ls "$work/dir")" ] || bad "the directory changed"
exit $fail

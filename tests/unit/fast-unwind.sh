#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# fast-unwind.sh: fast_unwind=1 (the frame-pointer walk) names the same
# frames as the default unwinder.  Runs the leaks scenario program (built
# with -fno-omit-frame-pointer, like every scenario) under the shim on
# each loopback build, once per unwinder, and compares every finding's
# stack and every named object's creation stack, frame by frame (module
# and offset: the addresses move with ASLR), down to main.  Below main
# are libc's frames, built without frame pointers: the walk may stop
# there, which is what fast_unwind documents.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
bin=$top_builddir/tests/scenarios/leaks
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The stacks of a report, each cut after main, one line each.
stacks() {
	"$JQ" -r -L "${top_srcdir:?}/tests/lib" 'include "report";
		  def upto_main: (map(.function) | index("main")) as $i
			| if $i == null then . else .[0:$i + 1] end;
		  frames_inlined
		  | .findings[] | [.stack] + [.objects[].created.stack]
		  | .[] | upto_main | map(.module + "+" + .offset) | join(" ")' \
		"$1"
}

for b in ${RDMACHECK_LOOPBACK_DIRS:-plt=$RDMACHECK_LOOPBACK_DIR}; do
	build=${b%%=*} libpath=${b#*=}
	for fast in 0 1; do
		timeout -k 5 60 env LD_LIBRARY_PATH="$libpath" \
			LD_PRELOAD="$RDMACHECK_SHIM" \
			SCN_DIR="$top_builddir/tests/scenarios" \
			RDMACHECK_LOOPBACK_NS="rcfast-$$-$build-$fast" \
			RDMACHECK_OPTIONS="json=$work/$fast.json:fast_unwind=$fast" \
			"$bin" bad > "$work/out" 2>&1
		st=$?
		[ "$st" = 23 ] || { cat "$work/out"; fail "[$build] exit $st with fast_unwind=$fast"; }
		stacks "$work/$fast.json" > "$work/$fast.stacks" ||
			fail "[$build] no stacks in the fast_unwind=$fast report"
	done
	n=$(grep -c ' ' "$work/0.stacks")
	[ "$n" -ge 4 ] || fail "[$build] only $n stacks of two frames or more"
	grep -q . "$work/1.stacks" || fail "[$build] no stacks with fast_unwind=1"
	diff -u "$work/0.stacks" "$work/1.stacks" ||
		fail "[$build] fast_unwind=1 gives other frames than the default"
	echo "PASS: [$build] $(wc -l < "$work/0.stacks") stacks, the same frames"
done

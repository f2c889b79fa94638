#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The double-ack / unknown-pointer and destroyed / unknown-handle decisions
# stay exact under load: 2 to 16 threads churning events and ids, each
# injecting K bugs of each kind, must give exactly THREADS * K findings of
# each rule and nothing else (tests/scenarios/stress.c).  The 16-thread run
# makes 10^6 intercepted calls; the last run acks and uses its stale
# pointers only after 40000 destroys of other objects.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
k=5
fail=0
for run in "2 20000" "4 10000" "8 5000" "16 15625" "4 10000 40000"; do
	set -- $run
	json=$work/r.$1.json
	env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		LD_PRELOAD="$RDMACHECK_SHIM" \
		RDMACHECK_LOOPBACK_NS="rcstress-$$-$1" \
		RDMACHECK_OPTIONS="json=$json:log_path=$work/log" \
		"$top_builddir/tests/scenarios/stress" "$1" "$2" "$k" ${3:-}
	rc=$?
	# The shim's exitcode: the injected bugs are errors.
	[ "$rc" = 23 ] ||
		{ echo "FAIL: $1 threads: exit $rc"; fail=1; continue; }
	want=$(($1 * k))
	got=$("$JQ" -r '[.findings[].rule] | group_by(.)
		| map("\(.[0])=\(length)") | join(" ")' "$json")
	exp="double-destroy=$want event-ack-unknown=$want"
	exp="$exp event-double-ack=$want use-after-destroy=$want"
	if [ "$got" = "$exp" ]; then
		echo "ok: $1 threads x $2 iterations${3:+, delay $3}: $got"
	else
		echo "FAIL: $1 threads: expected [$exp], got [$got]"
		fail=1
	fi
done
exit $fail

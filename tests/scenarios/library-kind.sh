#!/bin/sh
# The shim tells which kind of librdmacm it runs on: one that calls its own
# exports through the PLT (the wrappers see the library's internal calls)
# or one linked with -Bsymbolic-functions (they never reach the shim).  It
# says so at verbosity=1 and in the JSON report ("librdmacm").
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
bin=$top_builddir/tests/scenarios/errno_keep
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {	# NAME DIR WANT: WANT is "plt" or "symbolic"
	LD_LIBRARY_PATH=$2 LD_PRELOAD=$RDMACHECK_SHIM \
		RDMACHECK_LOOPBACK_NS="rckind-$$-$1" \
		RDMACHECK_OPTIONS="json=$work/$1.json:verbosity=1" \
		"$bin" clean > "$work/$1.out" 2>&1 ||
		{ echo "FAIL [$1]: run"; cat "$work/$1.out"; fail=1; return; }
	n=$("$JQ" '.librdmacm.plt_self_calls' "$work/$1.json")
	case $3 in
	plt)	re='calls [1-9][0-9]* of its own exports through the PLT'
		ok=$([ "$n" -gt 0 ] 2>/dev/null && echo 1) ;;
	*)	re='calls none .*-Bsymbolic-functions'
		ok=$([ "$n" = 0 ] && echo 1) ;;
	esac
	[ -n "$ok" ] || { echo "FAIL [$1]: plt_self_calls $n"; fail=1; }
	grep -q "rdmacheck: librdmacm $2/librdmacm.so.1 $re" "$work/$1.out" ||
		{ echo "FAIL [$1]: no note /$re/"; cat "$work/$1.out"; fail=1; }
	[ "$fail" = 1 ] || echo "ok [$1]: $n internal calls through the PLT"
}
check plt "$RDMACHECK_LOOPBACK_DIR" plt
check symbolic "$RDMACHECK_LOOPBACK_SYMBOLIC_DIR" symbolic
exit $fail

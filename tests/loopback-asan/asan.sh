#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/loopback-asan/asan.sh: the loopback backend's own tests on the
# AddressSanitizer builds of both libraries (loopback/asan): the C
# tests cm_semantics, fork and rc_test (one process and two), then the
# rdmacm-utils pairs of tests/programs plainly (not under the shim).
# Every process of the backend gets the ASan runtime preloaded; reports go
# to files, and the test fails unless every run passes and ASan wrote no
# report.  A canary with a deliberate use after free in librdmacm first
# proves that a report would be seen.
#
# ASAN_OPTIONS: detect_leaks=0, since the programs leak by design (rping,
# cmtime servers are killed) and leaks are the shim's business, not
# memory safety; abort_on_error=1, so the first report also fails the run.
dir=${RDMACHECK_LOOPBACK_ASAN_DIR:-}
rt=${RDMACHECK_ASAN_RUNTIME:-}
build=${top_builddir:-.}
src=${top_srcdir:-.}

if [ -z "$rt" ]; then
	echo "asan: SKIP: configured without the ASan builds" \
	     "(--disable-asan-backend, or no working -fsanitize=address)"
	exit 77
fi
for l in librdmacm.so.1 libibverbs.so.1; do
	if [ ! -e "$dir/$l" ]; then
		echo "asan: FAIL: $dir/$l not built"
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-asan.XXXXXX") || exit 99
fail=0
trap 'if [ $fail = 0 ]; then rm -rf "$tmp"; else
	echo "asan: outputs kept in $tmp"; fi' EXIT
mkdir "$tmp/reports" "$tmp/canary" "$tmp/bin"
opts="detect_leaks=0:abort_on_error=1"
ASAN_OPTIONS="$opts:log_path=$tmp/reports/asan"
export ASAN_OPTIONS

# The binary libtool's wrapper would run (the wrapper itself puts the
# normal build first in LD_LIBRARY_PATH).
bin()
{
	if [ -x "$build/$1" ] && [ -x "$(dirname "$build/$1")/.libs/${1##*/}" ]
	then
		echo "$(dirname "$build/$1")/.libs/${1##*/}"
	else
		echo "$build/$1"
	fi
}

# uses_asan PROG: the loader takes every loopback library PROG needs (at
# least one) from the ASan build.
uses_asan()
{
	_l=$(LD_LIBRARY_PATH="$dir" LD_TRACE_LOADED_OBJECTS=1 "$1" 2>&1 |
		grep -E '(librdmacm|libibverbs)\.so\.1 =>')
	if [ -z "$_l" ] || printf '%s\n' "$_l" | grep -vq " => $dir/"; then
		echo "asan: FAIL: $1 does not load the ASan build:"
		printf '%s\n' "$_l"
		fail=1
	fi
}

# run LABEL PROG ARGS...: one run on the ASan build, 60 s at most.
run()
{
	_label=$1
	shift
	if LD_LIBRARY_PATH="$dir" LD_PRELOAD="$rt" timeout 60 "$@" \
	    >"$tmp/$_label.out" 2>&1; then
		echo "asan: ok: $_label"
	else
		echo "asan: FAIL: $_label (exit $?)"
		tail -n 40 "$tmp/$_label.out"
		fail=1
	fi
}

# The canary must be caught, in the library, at the second ack.
canary=$(bin tests/loopback-asan/canary)
uses_asan "$canary"
{ ASAN_OPTIONS="$opts:log_path=$tmp/canary/asan" LD_LIBRARY_PATH="$dir" \
	LD_PRELOAD="$rt" timeout 60 "$canary" >"$tmp/canary.out" 2>&1; } \
	2>/dev/null
if [ $? = 0 ] ||
   ! grep -qs 'heap-use-after-free' "$tmp/canary"/asan.* ||
   ! grep -qs 'in rdma_ack_cm_event' "$tmp/canary"/asan.*; then
	echo "asan: FAIL: the canary's use after free was not reported"
	cat "$tmp/canary.out" "$tmp/canary"/asan.* 2>/dev/null | head -n 40
	fail=1
else
	echo "asan: ok: canary reported"
fi

cm=$(bin tests/programs/cm_semantics)
rc=$(bin tests/loopback-verbs/rc_test)
fk=$(bin tests/loopback-cm/fork)
uses_asan "$cm"
uses_asan "$rc"
uses_asan "$fk"
run cm_semantics "$cm"
run fork "$fk"
RDMACHECK_LOOPBACK_NS=rdmacheck-test-asan-rc-$$
export RDMACHECK_LOOPBACK_NS
run rc_test-single "$rc" single
run rc_test-fork "$rc" fork
unset RDMACHECK_LOOPBACK_NS

# The pairs, through wrappers that preload the runtime into the programs
# only (not into the harness's shell, timeout or awk) and keep argv[0]
# (rdma_xserver prints it).
progs="cmtime ucmatose rping rdma_server rdma_client rdma_xserver
rdma_xclient udaddy mckey rstream riostream rcopy udpong"
have=
for p in $progs; do
	real=$(command -v "$p") || continue
	printf '#!/bin/bash\nLD_PRELOAD="%s${LD_PRELOAD:+ $LD_PRELOAD}" %s\n' \
		"$rt" "exec -a $p $real \"\$@\"" >"$tmp/bin/$p"
	chmod +x "$tmp/bin/$p"
	have="$have $p"
done
if [ -z "$have" ]; then
	echo "asan: rdmacm-utils not installed: pairs not run"
else
	uses_asan "$(command -v rping || command -v cmtime)"
fi
for t in cmtime ucmatose-cm ucmatose rping rdma-server rdma-xserver \
	 udaddy mckey rstream riostream rcopy udpong; do
	PATH="$tmp/bin:$PATH" RDMACHECK_LOOPBACK_DIRS="asan=$dir" \
		RDMACHECK_SHIM= sh "$src/tests/programs/$t.sh" \
		>"$tmp/$t.out" 2>&1
	st=$?
	case $st in
	0)	echo "asan: ok: $t.sh" ;;
	77)	echo "asan: skipped: $t.sh ($(tail -n 1 "$tmp/$t.out"))" ;;
	*)	echo "asan: FAIL: $t.sh (exit $st)"
		tail -n 40 "$tmp/$t.out"
		fail=1 ;;
	esac
done

set -- "$tmp/reports"/asan.*
if [ -e "$1" ]; then
	echo "asan: FAIL: $# AddressSanitizer report(s):"
	for r in "$@"; do
		# ASan opens its log as it starts a report: an empty one is a
		# process that ended (another thread's exit) mid-report
		if [ -s "$r" ]; then
			head -n 40 "$r"
		else
			echo "asan: ${r##*/}: empty: process ${r##*.} ended" \
			     "while ASan was reporting"
		fi
	done
	fail=1
fi
[ $fail = 0 ] && echo "asan: PASS: no AddressSanitizer report"
exit $fail

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/report-tool/symbolize.sh: rdmacheck-report's offline symbolizer
# with libdw, on programs built here that print a return address (as
# offset from their load base, what reports hold) from a non-inlined leaf:
# * -O2 with two levels of always_inline functions: a frame per inline
#   level, each at its call site, as eu-addr2line -i shows them;
# * C++: the name demangled (ns::S<int>::f(int));
# * a stripped binary whose debug info is in a separate file named by
#   .gnu_debuglink;
# * debug sections compressed with zlib (and zstd when objcopy and libdw
#   can: Debian 12's libdw cannot, which is said, not hidden).
# Each is a crash-style report (function and file null), so the frames
# can only be named offline.  (A rebuilt binary: formats.sh.)
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"

t_name=symbolize
tool=$top_builddir/tools/rdmacheck-report
[ -x "$tool" ] || { echo "$t_name: $tool is missing"; exit 77; }
case $("$tool" --version) in
*libdw*) ;;
*)
	echo "$t_name: rdmacheck-report was built without libdw (./quickstart.sh installs libdw-dev): skipped"
	exit 77 ;;
esac
for t in cc c++ objcopy strip; do
	command -v "$t" >/dev/null 2>&1 ||
		{ echo "$t_name: $t not found: skipped"; exit 77; }
done

# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"
cd "$t_dir"

cat >leaf.h <<'EOF'
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

/* Prints its return address as an offset from the module's base. */
static __attribute__((noinline)) void leaf(void)
{
	Dl_info info;
	void *ra = __builtin_return_address(0);

	if (dladdr(ra, &info))
		printf("0x%lx\n", (unsigned long)((uintptr_t)ra -
						  (uintptr_t)info.dli_fbase));
}
EOF
cat >inl.c <<'EOF'
#include "leaf.h"

static inline __attribute__((always_inline)) void inner(void)
{
	leaf();			/* line 5 */
}

static inline __attribute__((always_inline)) void middle(void)
{
	inner();		/* line 10 */
}

int main(void)
{
	middle();		/* line 15 */
	return 0;
}
EOF
cat >cxx.cc <<'EOF'
#include "leaf.h"

namespace ns {
template <class T> struct S {
	static __attribute__((noinline)) void f(T) { leaf(); asm(""); }
};
}

int main()
{
	ns::S<int>::f(1);
	return 0;
}
EOF
flags="-O2 -g -fno-optimize-sibling-calls"
# shellcheck disable=SC2086
cc $flags -o inl inl.c -ldl && c++ $flags -o cxx cxx.cc -ldl ||
	{ fail "cannot build the test programs"; finish; }

# report NAME MODULE OFFSET: a crash-style report of one frame.
report() {
	cat >"$1.json" <<EOF
{"tool": "rdmacheck", "pid": 7, "status": "crashed", "findings": [
 {"rule": "leak-id", "severity": "leak", "call": null, "count": 1,
  "message": "cm id 0x1 leaked", "stack": [{"pc": "0x1", "module": "$2",
  "offset": "$3", "function": null, "file": null, "line": 0}]}],
 "summary": {"errors": 0, "warnings": 0, "leaks": 1, "suppressed": 0}}
EOF
}

# inlined NAME: the three frames of inl.c's return address.
inlined() {
	run "$tool" "$1.json"
	# no frame at all is a failure the checks of NAME.frames report
	printf '%s\n' "$out" | grep '^    #' >"$1.frames" || true
	if sed -n 1p "$1.frames" | grep -q ' in inner .*/inl\.c:5$' &&
	    sed -n 2p "$1.frames" | grep -q ' in middle .*/inl\.c:10$' &&
	    sed -n 3p "$1.frames" | grep -q ' in main .*/inl\.c:15$' &&
	    [ "$(wc -l <"$1.frames")" = 3 ]; then
		pass "$2: a frame per inline level, each at its call site"
	else
		fail "$2: $(cat "$1.frames") $err"
	fi
}

off=$(./inl)
report inl "$t_dir/inl" "$off"
inlined inl "-O2 inline frames"
run "$tool" --format=json inl.json
printf '%s\n' "$out" | grep -q '"function": "middle"' &&
	pass "inline frames in the JSON output too" ||
	fail "JSON inline frames: $out"

off_cxx=$(./cxx)
report cxx "$t_dir/cxx" "$off_cxx"
run "$tool" cxx.json
echo "$out" | grep -q ' in ns::S<int>::f(int) .*/cxx\.cc:5$' &&
	pass "C++: demangled name" || fail "C++: $out $err"

# Stripped, its debug info in a file named by .gnu_debuglink.
mkdir stripped
objcopy --only-keep-debug inl stripped/inl.debug
strip -s -o stripped/inl inl
objcopy --add-gnu-debuglink=stripped/inl.debug stripped/inl
report stripped "$t_dir/stripped/inl" "$off"
inlined stripped "stripped binary, separate debug file"
# Without it, nothing names a static function in a stripped binary.
strip -s -o bare inl
report bare "$t_dir/bare" "$off"
run "$tool" bare.json
echo "$out" | grep -q '(.*/bare+0x[0-9a-f]*)$' &&
	pass "stripped, no debug file: module+offset" ||
	fail "bare: $out"

# Compressed debug sections.
objcopy --compress-debug-sections=zlib inl zlib
report zlib "$t_dir/zlib" "$off"
inlined zlib "zlib-compressed debug sections"
if objcopy --compress-debug-sections=zstd inl zstd 2>/dev/null &&
    readelf -t zstd 2>/dev/null | grep -q ZSTD; then
	report zstd "$t_dir/zstd" "$off"
	run "$tool" zstd.json
	if echo "$out" | grep -q ' in inner '; then
		inlined zstd "zstd-compressed debug sections"
	elif ldd "$(ldconfig -p | sed -n 's/.*libdw.so.1 .*=> //p' | head -n 1)" |
	    grep -q zstd; then
		fail "zstd: libdw links libzstd but did not read the sections: $out"
	else
		echo "$t_name: note: this libdw is built without zstd: zstd-compressed debug sections stay unnamed"
	fi
else
	echo "$t_name: note: objcopy cannot compress with zstd here"
fi
finish

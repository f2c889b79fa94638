#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/symbolize/shim-libdw.sh: the shim symbolizes with libdw, dlopen()ed
# at report time (symbolizer=auto|builtin|libdw), on programs built here
# with -O2 -g that leak an event channel on the loopback backend:
# * inline: rdma_create_event_channel() called from an always_inline
#   function: the text and JSON reports have a frame per inline level, as
#   rdmacheck-report writes them (same pc, innermost first); with
#   symbolizer=builtin it has not (which shows libdw named them); a
#   suppression naming the inlined function matches;
# * after a snapshot has loaded libdw, the host's dlsym(RTLD_DEFAULT,
#   "dwfl_begin") is still NULL (RTLD_LOCAL);
# * C++: the creating function's name demangled;
# * symbolizer=libdw on a stack through libc (qsort's comparator creates
#   the channel): libc's frame is named too;
# * a libdw.so.1 that lacks libdw's functions: the built-in reader names
#   the frames, and symbolizer=libdw says why;
# * the scopes dwfl.c finds from the ranges it keeps per unit are those
#   of libdw's own walk (RDMACHECK_DWFL_GETSCOPES=1), for inline levels
#   three deep, C++ and libc.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${RDMACHECK_SHIM:?run this test from make check}"
: "${RDMACHECK_LOOPBACK_DIR:?run this test from make check}"

t_name=shim-libdw
if ! grep -q 'libdw\.so\.1' "$RDMACHECK_SHIM"; then
	echo "$t_name: the shim was built without libdw's headers (./quickstart.sh installs libdw-dev): skipped"
	exit 77
fi
for t in cc c++; do
	command -v "$t" >/dev/null 2>&1 ||
		{ echo "$t_name: $t not found: skipped"; exit 77; }
done

# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"
cd "$t_dir"

cat >inl.c <<'EOF'
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/rdma_cma.h>

static inline __attribute__((always_inline)) struct rdma_event_channel *
open_channel(void)
{
	return rdma_create_event_channel();	/* line 13 */
}

static struct rdma_event_channel *ch;

static int by_value(const void *a, const void *b)
{
	if (!ch)
		ch = rdma_create_event_channel();	/* line 21 */
	return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 1000000 };
	int v[] = { 3, 1, 2 }, i;

	if (argc > 1 && !strcmp(argv[1], "qsort")) {
		qsort(v, 3, sizeof(v[0]), by_value);
		return ch ? 0 : 2;
	}
	ch = open_channel();			/* line 34 */
	if (!ch)
		return 2;
	if (argc > 1 && !strcmp(argv[1], "snapshot")) {
		/* The snapshot is written by the shim's thread: wait (10 s
		 * at most) until it has loaded libdw. */
		raise(SIGUSR2);
		for (i = 0; i < 10000; i++) {
			if (dlopen("libdw.so.1", RTLD_LAZY | RTLD_NOLOAD))
				break;
			nanosleep(&ts, NULL);
		}
		printf("libdw %s, dwfl_begin %s\n",
		       i < 10000 ? "loaded" : "not loaded",
		       dlsym(RTLD_DEFAULT, "dwfl_begin") ? "seen" : "unseen");
	}
	return 0;
}
EOF
cat >cxx.cc <<'EOF'
#include <rdma/rdma_cma.h>

namespace app {
template <class T> struct conn {
	static __attribute__((noinline)) rdma_event_channel *open(T)
	{
		rdma_event_channel *c = rdma_create_event_channel();

		asm("");
		return c;
	}
};
}

int main()
{
	return app::conn<int>::open(1) ? 0 : 2;
}
EOF
cat >deep.c <<'EOF'
#include <stdlib.h>
#include <rdma/rdma_cma.h>

#define INL static inline __attribute__((always_inline))

static struct rdma_event_channel *keep[4];

INL void level3(int i)
{
	keep[i] = rdma_create_event_channel();
}

INL void level2(int i)
{
	for (int k = 0; k < 2; k++) {
		int j = (i + k) & 3;

		if (!keep[j])
			level3(j);
	}
}

INL void level1(int i)
{
	if (i >= 0)
		level2(i);
}

static __attribute__((noinline)) void outer(int i)
{
	level1(i);
	level2(i + 1);
}

int main(int argc, char **argv)
{
	(void)argv;
	outer(argc - 1);
	return keep[0] ? 0 : 2;
}
EOF
flags="-O2 -g -fno-optimize-sibling-calls"
# shellcheck disable=SC2086
cc $flags -o inl inl.c -lrdmacm -ldl && c++ $flags -o cxx cxx.cc -lrdmacm &&
	cc $flags -o deep deep.c -lrdmacm ||
	{ fail "cannot build the test programs"; finish; }

# shim NAME OPTIONS PROG ARG...: run under the shim; NAME.log is its
# text report, NAME.json its JSON report, NAME.out the program's output.
shim() {
	name=$1
	opts=$2
	shift 2
	# the status goes to rc, which the checks read
	set +e
	LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR LD_PRELOAD=$RDMACHECK_SHIM \
		RDMACHECK_LOOPBACK_NS=sd$$.$name \
		RDMACHECK_OPTIONS="json=$t_dir/$name.json:$opts" \
		"$@" >"$name.out" 2>"$name.log"
	rc=$?
	set -e
	# no frame at all is a failure the checks of NAME.frames report
	grep '^    #' "$name.log" >"$name.frames" || true
}

# The leak's frames: open_channel at its call, then main at its own.
shim auto "" ./inl
if sed -n 1p auto.frames | grep -q ' in open_channel .*/inl\.c:13$' &&
    sed -n 2p auto.frames | grep -q ' in main .*/inl\.c:34$' &&
    [ "$(sed -n 1p auto.frames | cut -d' ' -f6)" = \
      "$(sed -n 2p auto.frames | cut -d' ' -f6)" ]; then
	pass "auto: a frame per inline level, same pc, each at its call site"
else
	fail "auto: $(cat auto.log)"
fi
[ "$rc" = 23 ] && pass "auto: exit 23 for the leak" || fail "auto: exit $rc"

# json_top NAME: the first two frames of the JSON report's finding, as
# "pc function line" lines.
json_top() {
	"$JQ" -r -L "$top_srcdir/tests/lib" 'include "report"; frames_inlined
		| .findings[0].stack[0:2][] | "\(.pc) \(.function) \(.line)"' \
		"$1.json"
}
JQ=${JQ:-jq}
if command -v "$JQ" >/dev/null 2>&1; then
	top=$(json_top auto)
	pc=$(echo "$top" | sed -n '1s/ .*//p')
	[ "$top" = "$(printf '%s open_channel 13\n%s main 34' "$pc" "$pc")" ] &&
		pass "auto: the JSON report has the inline frame, as rdmacheck-report writes it" ||
		fail "auto JSON: $top"
fi

shim builtin "symbolizer=builtin" ./inl
if sed -n 1p builtin.frames | grep -q ' in main .*/inl\.c:13$' &&
    ! grep -q open_channel builtin.log; then
	pass "builtin: no inline level (so libdw named it under auto)"
else
	fail "builtin: $(cat builtin.log)"
fi
if command -v "${PYTHON3:-python3}" >/dev/null 2>&1; then
	top=$(json_top builtin)
	echo "$top" | sed -n 1p | grep -q ' main 13$' &&
		! echo "$top" | grep -q open_channel &&
		pass "builtin: no inline frame in the JSON report" ||
		fail "builtin JSON: $top"
fi

printf 'leak-channel:open_channel\n' >inl.supp
shim supp "suppressions=$t_dir/inl.supp" ./inl
[ "$rc" = 0 ] && grep -q '0 leaked objects (1 suppressed)' supp.log &&
	pass "a suppression naming the inlined function matches" ||
	fail "suppression of the inline level: exit $rc $(cat supp.log)"

shim snap "snapshot_signal=12" ./inl snapshot
if grep -q '^libdw loaded, dwfl_begin unseen$' snap.out; then
	pass "after a snapshot libdw is loaded, but not visible to the host"
else
	fail "snapshot: $(cat snap.out) $(cat snap.log)"
fi

shim cxx "" ./cxx
grep -q ' in app::conn<int>::open(int) .*/cxx\.cc:7$' cxx.frames &&
	pass "C++: demangled name" || fail "C++: $(cat cxx.log)"

libc_frame() {
	grep -E ' in [_a-z]*q?sort[_a-z]* .*\.c:[0-9]+$' "$1.frames" |
		grep -qv inl.c
}
shim qlibdw "symbolizer=libdw" ./inl qsort
if grep -q ' in by_value .*/inl\.c:21$' qlibdw.frames && libc_frame qlibdw; then
	pass "symbolizer=libdw: libc's frame named, file:line included"
else
	fail "symbolizer=libdw through libc: $(cat qlibdw.log)"
fi
# Debian's libc6-dbg is compressed: auto reads libc with the built-in
# reader, without its inline levels, which libdw adds.
libc=$(ldd ./inl | sed -n 's/.*libc\.so\.6 => \([^ ]*\) .*/\1/p')
bid=$(readelf -n "$libc" 2>/dev/null | sed -n 's/.*Build ID: //p')
libc_dbg=
[ -n "$bid" ] && libc_dbg=/usr/lib/debug/.build-id/$(echo "$bid" |
	cut -c1-2)/$(echo "$bid" | cut -c3-).debug
[ -f "$libc_dbg" ] || libc_dbg=
shim qauto "" ./inl qsort
if [ -n "$libc_dbg" ] && readelf -S -W "$libc_dbg" 2>/dev/null |
    grep -q ' \.debug_info .* C '; then
	[ "$(wc -l <qlibdw.frames)" -gt "$(wc -l <qauto.frames)" ] &&
		libc_frame qauto &&
		pass "auto: compressed debug data read by the built-in reader" ||
		fail "auto through libc: $(cat qauto.log) libdw: $(cat qlibdw.log)"
else
	echo "$t_name: note: no compressed separate debug files here"
fi

# dwfl.c finds a pc's scopes from its unit's children's ranges, kept;
# RDMACHECK_DWFL_GETSCOPES=1 (tests only) has libdw walk the unit for
# each pc instead: the same frames, functions, files and lines (the
# pcs, under ASLR, aside).  Inline levels two and three deep, in
# lexical blocks, a C++ template in a namespace, and libc's qsort.
frames_of() {
	sed 's/^ *#[0-9]* 0x[0-9a-f]* //' "$1.frames"
}
for t in "deep/./deep" "cxx/./cxx" "qlibdw/./inl qsort"; do
	n=${t%%/*}
	cmd=${t#*/}
	o=
	[ "$n" = qlibdw ] && o=symbolizer=libdw
	# shellcheck disable=SC2086
	shim "$n.kept" "$o" $cmd
	RDMACHECK_DWFL_GETSCOPES=1
	export RDMACHECK_DWFL_GETSCOPES
	# shellcheck disable=SC2086
	shim "$n.walk" "$o" $cmd
	unset RDMACHECK_DWFL_GETSCOPES
	if [ -s "$n.walk.frames" ] &&
	    [ "$(frames_of "$n.kept")" = "$(frames_of "$n.walk")" ]; then
		pass "$n: the kept unit ranges give libdw's own walk's frames"
	else
		fail "$n: kept $(cat "$n.kept.log") walked $(cat "$n.walk.log")"
	fi
done
if grep -q ' in level3 .*/deep\.c:10$' deep.kept.frames &&
    grep -q ' in level2 .*/deep\.c:19$' deep.kept.frames &&
    grep -q ' in outer .*/deep\.c:' deep.kept.frames; then
	pass "deep: each inline level at its call site"
else
	fail "deep: $(cat deep.kept.log)"
fi

# A libdw.so.1 found first that has none of libdw's functions.
mkdir nolibdw
echo 'int not_libdw;' >nolibdw/empty.c
cc -shared -fPIC -Wl,-soname,libdw.so.1 -o nolibdw/libdw.so.1 \
	nolibdw/empty.c || { fail "cannot build the empty libdw.so.1"; finish; }
loopback=$RDMACHECK_LOOPBACK_DIR
RDMACHECK_LOOPBACK_DIR=$t_dir/nolibdw:$loopback
shim nodw "symbolizer=libdw" ./inl
RDMACHECK_LOOPBACK_DIR=$loopback
if sed -n 1p nodw.frames | grep -q ' in main .*/inl\.c:13$' &&
    ! grep -q open_channel nodw.log &&
    grep -q 'symbolizer=libdw: libdw.so.1 cannot be loaded' nodw.log; then
	pass "no usable libdw.so.1: the built-in reader, and a warning"
else
	fail "unusable libdw.so.1: $(cat nodw.log)"
fi
finish

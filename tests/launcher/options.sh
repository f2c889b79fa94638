#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every option of src/core/options.def is a long option of the launcher, listed
# by --help, and becomes its RDMACHECK_OPTIONS entry; the launcher's
# table (tools/options.tab) holds exactly the options of options.def.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

cd "$t_dir"
# help=1 is RDMACHECK_OPTIONS only: the launcher's --help is its usage.
def_options | grep -v '^BOOL help ' >options
n=$(wc -l <options)
# A broken extraction must not pass vacuously.
[ "$n" -ge 5 ] && pass "$n options in options.def" ||
	fail "only $n options found in options.def"

cut -d ' ' -f 2 options | sort >names.def
echo help >>names.def
sort -o names.def names.def
awk -F '\t' '$1 == "opt" { print $3 }' "$top_builddir/tools/options.tab" |
    sort >names.tab
if cmp -s names.def names.tab; then
	pass "tools/options.tab has the options of options.def"
else
	fail "tools/options.tab differs from options.def: $(diff names.def names.tab | tr '\n' ' ')"
fi

run "$launcher" --help
help=$out

# entry ARG...: the RDMACHECK_OPTIONS the launcher builds from ARG...
entry() {
	# shellcheck disable=SC2016
	run env -u RDMACHECK_OPTIONS "$launcher" "$@" -- \
		sh -c 'printf "%s\n" "${RDMACHECK_OPTIONS-unset}"'
}

while read -r type name def; do
	flag=$(printf '%s' "$name" | tr _ -)
	case $help in
	*"--$flag"* | *"--[no-]$flag"*) pass "--help lists --$flag" ;;
	*) fail "--help does not list --$flag" ;;
	esac
	case $type in
	BOOL)
		entry "--$flag"
		[ "$out" = "$name=1" ] && pass "--$flag" ||
			fail "--$flag gives '$out' (exit $rc: $err)"
		entry "--no-$flag"
		[ "$out" = "$name=0" ] && pass "--no-$flag" ||
			fail "--no-$flag gives '$out' (exit $rc: $err)"
		entry "--$flag=$def"
		[ "$out" = "$name=$def" ] && pass "--$flag=$def" ||
			fail "--$flag=$def gives '$out' (exit $rc: $err)" ;;
	INT)
		# The default is in range by definition.
		entry "--$flag=$def"
		[ "$out" = "$name=$def" ] && pass "--$flag=$def" ||
			fail "--$flag=$def gives '$out' (exit $rc: $err)"
		entry "--$flag=x"
		[ "$rc" = 2 ] && pass "--$flag=x refused" ||
			fail "--$flag=x: exit $rc" ;;
	WORDS)
		# one of its words: the default is one; any other word,
		# a case change or nothing is refused, naming the words
		def=${def#\"}
		def=${def%\"}
		entry "--$flag=$def"
		[ "$out" = "$name=$def" ] && pass "--$flag=$def" ||
			fail "--$flag=$def gives '$out' (exit $rc: $err)"
		for bad in purple "$def$def" "" "$(echo "$def" | tr a-z A-Z)"
		do
			entry "--$flag=$bad"
			case $rc:$err in
			2:*"bad value '$bad' for --$flag (expected one of: "*"$def"*)
				pass "--$flag='$bad' refused with the words" ;;
			*) fail "--$flag='$bad': exit $rc: $err" ;;
			esac
		done ;;
	*)
		entry "--$flag=v.%p"
		[ "$out" = "$name=v.%p" ] && pass "--$flag=v.%p" ||
			fail "--$flag=v.%p gives '$out' (exit $rc: $err)" ;;
	esac
	# The key itself, underscores and all, is accepted too.
	case $type in
	BOOL | INT | WORDS) val=$def ;;
	*) val=v ;;
	esac
	entry "--$name=$val"
	[ "$out" = "$name=$val" ] && pass "--$name=$val" ||
		fail "--$name=$val gives '$out' (exit $rc: $err)"
done <options

# RDMACHECK_OPTIONS=help=1: the shim itself lists every option of
# options.def with its current value and help, and exits 0 at once.
shim=${RDMACHECK_SHIM:-}
if [ -n "$shim" ] && [ -e "$shim" ]; then
	run env RDMACHECK_OPTIONS=help=1:stack_depth=7 LD_PRELOAD="$shim" \
		sh -c 'echo ran'
	missing=
	while read -r type name def; do
		printf '%s\n' "$err" | grep -q "^  $name=" ||
			missing="$missing $name"
	done <options
	[ "$rc" = 0 ] && [ -z "$out" ] && [ -z "$missing" ] &&
		printf '%s\n' "$err" | grep -qx '  stack_depth=7 (1..64)' &&
		printf '%s\n' "$err" | grep -qx '      frames kept per stack' &&
		pass "help=1: every option, value and help; exit 0" ||
		fail "help=1: exit $rc, out '$out', missing '$missing': $err"
else
	fail "RDMACHECK_SHIM is not set or missing: help=1 not tested"
fi

finish

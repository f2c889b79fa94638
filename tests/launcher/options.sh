#!/bin/sh
# Every option of src/options.def is a long option of the launcher, listed
# by --help, and becomes its RDMACHECK_OPTIONS entry; the launcher's
# table (tools/options.tab) holds exactly the options of options.def.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

cd "$t_dir"
def_options >options
n=$(wc -l <options)
# A broken extraction must not pass vacuously.
[ "$n" -ge 5 ] && pass "$n options in options.def" ||
	fail "only $n options found in options.def"

cut -d ' ' -f 2 options | sort >names.def
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
	*)
		entry "--$flag=v.%p"
		[ "$out" = "$name=v.%p" ] && pass "--$flag=v.%p" ||
			fail "--$flag=v.%p gives '$out' (exit $rc: $err)" ;;
	esac
	# The key itself, underscores and all, is accepted too.
	case $type in
	BOOL | INT) val=$def ;;
	*) val=v ;;
	esac
	entry "--$name=$val"
	[ "$out" = "$name=$val" ] && pass "--$name=$val" ||
		fail "--$name=$val gives '$out' (exit $rc: $err)"
done <options

finish

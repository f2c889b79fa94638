#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The launcher and the manual pages follow the .def tables alone: with an
# option and a rule (of a new severity) added to copies of the tables, the
# generators give a launcher that accepts the option and pages that list
# both, without a groff warning.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

cd "$t_dir"
# What make uses (GNU make's default); any C preprocessor will do.
cpp=${CPP:-${CC:-cc} -E}
if ! echo 'int x;' | $cpp - >/dev/null 2>&1; then
	echo "$t_name: no C preprocessor ($cpp)"
	exit 77
fi

cp "$top_srcdir/src/core/options.def" options.def
printf '%s\n' 'RC_OPT(INT, zz_new_knob, 3, 1, (3 * 3),' \
	'	"a knob" " added by a test")' >>options.def
cp "$top_srcdir/src/core/rules.def" rules.def
printf '%s\n' 'RC_RULE(ZZ_NEW_RULE, "zz-new-rule", NOTE,' \
	'	"a rule added by a test")' >>rules.def

sh "$top_srcdir/tools/deftab.sh" "$cpp" options.def >options.tab
sh "$top_srcdir/tools/deftab.sh" "$cpp" rules.def >rules.tab
sh "$top_srcdir/tools/gen-launcher.sh" "$top_srcdir/tools/rdmacheck.in" \
	options.tab /nonexistent/lib /nonexistent/lib/rdmacheck 0 \
	/nonexistent/libexec/rdmacheck >rdmacheck
for n in 1 7; do
	sh "$top_srcdir/doc/gen-man.sh" "$top_srcdir/doc/rdmacheck.$n.in" \
		options.tab rules.tab 0 /nonexistent/lib \
		/nonexistent/lib/rdmacheck /nonexistent/libexec/rdmacheck \
		>rdmacheck.$n
done

# shellcheck disable=SC2016
run env -u RDMACHECK_OPTIONS RDMACHECK_SHIM_PATH="$RDMACHECK_SHIM" \
	sh ./rdmacheck --zz-new-knob=9 -- \
	sh -c 'printf "%s\n" "$RDMACHECK_OPTIONS"'
[ "$rc" = 0 ] && [ "$out" = zz_new_knob=9 ] &&
	pass "the new option is accepted" ||
	fail "--zz-new-knob=9: exit $rc, '$out' ($err)"
run env RDMACHECK_SHIM_PATH="$RDMACHECK_SHIM" sh ./rdmacheck \
	--zz-new-knob=10 true
expect_rc 2 "the new option's bound (a C expression) is checked"
run sh ./rdmacheck --help
case $out in
*--zz-new-knob=N*"a knob added by a test"*) pass "--help lists it" ;;
*) fail "--help lacks --zz-new-knob" ;;
esac

if command -v groff >/dev/null 2>&1; then
	for n in 1 7; do
		run groff -man -ww -z rdmacheck.$n
		[ "$rc" = 0 ] && [ -z "$err" ] &&
			pass "rdmacheck.$n: no groff warning" ||
			fail "rdmacheck.$n: groff says: $err"
	done
	groff -man -Tascii -P-cbou -rLL=200n rdmacheck.7 >page7.txt
	groff -man -Tascii -P-cbou -rLL=200n rdmacheck.1 >page1.txt
	grep -q '^ *zz-new-rule$' page7.txt && grep -q 'Severity note' page7.txt &&
		pass "rdmacheck(7) lists the new rule" ||
		fail "rdmacheck(7) lacks zz-new-rule"
	grep -q '^ *zz_new_knob=n$' page7.txt &&
		grep -q 'Integer, 1 to (3 \* 3); default 3' page7.txt &&
		pass "rdmacheck(7) lists the new option" ||
		fail "rdmacheck(7) lacks zz_new_knob"
	grep -q '^ *--zz-new-knob=n$' page1.txt &&
		pass "rdmacheck(1) lists the new option" ||
		fail "rdmacheck(1) lacks --zz-new-knob"
fi

finish

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/launcher/completion.sh: the bash completion of rdmacheck and
# rdmacheck-report (tools/completion/) completes options from the
# commands' own --help: launcher options with their "=" or their --no-
# form, rdmacheck-report's options and --format values, and after "--"
# no option at all.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
t_name=completion
command -v bash >/dev/null 2>&1 || { echo "$t_name: bash not found: skipped"; exit 77; }
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

# complete CMD WORD...: what TAB gives for the last WORD.
complete_words() {
	bash --norc --noprofile -c '
		. "$1"
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		case ${1##*/} in
		rdmacheck) _rdmacheck ;;
		*) _rdmacheck_report ;;
		esac
		[ ${#COMPREPLY[@]} = 0 ] || printf "%s\n" "${COMPREPLY[@]}"' sh \
		"$top_srcdir/tools/completion/rdmacheck-report" "$@"
}

l=$top_builddir/tools/rdmacheck
r=$top_builddir/tools/rdmacheck-report
check() {
	what=$1
	want=$2
	shift 2
	got=$(complete_words "$@" | tr '\n' ' ')
	[ "$got" = "$want" ] && pass "$what: '$got'" ||
		fail "$what: got '$got', expected '$want'"
}
check "launcher option with a value" "--json= " "$l" --js
check "launcher boolean" "--leak-check " "$l" --leak-c
check "launcher --no- form" "--no-leak-check " "$l" --no-leak
check "launcher's own option" "--loopback " "$l" --loop
check "report tool option" "--baseline= " "$r" --basel
check "report tool --format values" "sarif " "$r" --format=sa
check "after --, no options" "" "$l" --loopback -- ./prog --js
n=$(complete_words "$l" -- | wc -l)
[ "$n" -ge 20 ] && pass "launcher: $n options offered for '--'" ||
	fail "launcher: only $n options for '--'"
finish

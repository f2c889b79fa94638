#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The manual pages format without a groff warning, and name every rule id
# of src/core/rules.def (with its prose from doc/rules.md.in) and every option
# of src/core/options.def.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

if ! command -v groff >/dev/null 2>&1; then
	echo "$t_name: groff is not installed"
	exit 77
fi
cd "$t_dir"
page1=$top_builddir/doc/rdmacheck.1
page7=$top_builddir/doc/rdmacheck.7

for page in "$page1" "$page7"; do
	run groff -man -ww -z "$page"
	[ "$rc" = 0 ] && [ -z "$err" ] && pass "${page##*/}: no groff warning" ||
		fail "${page##*/}: groff says: $err"
	if command -v man >/dev/null 2>&1; then
		run env MANWIDTH=80 man -l "$page"
		[ "$rc" = 0 ] && [ -n "$out" ] && pass "${page##*/}: man -l" ||
			fail "${page##*/}: man -l failed: $err"
	fi
done

# Plain text, wide, so that each name stands on its own line.
render() {
	groff -man -Tascii -P-cbou -rLL=200n "$1" 2>/dev/null
}
render "$page1" >page1.txt
render "$page7" >page7.txt
render "$top_srcdir/doc/rdmacheck-report.1" >report1.txt

# No roff escape shows in the rendered text (gen-man.sh once escaped its
# own \(lq quotes): a backslash there is one the reader sees.  The pages'
# examples may end a shell line with one, nothing else may.
for f in page1.txt page7.txt report1.txt; do
	bad=$(grep -n '\\' "$f" | grep -v '\\$' | head -n 3)
	[ -z "$bad" ] && pass "$f: no roff escape in the rendered text" ||
		fail "$f: roff escapes shown literally: $bad"
done

# The launcher takes no --help=VALUE (help=1 is RDMACHECK_OPTIONS's).
grep -q -- '--help\[=' page1.txt &&
	fail "rdmacheck(1) lists a --help=VALUE form the launcher refuses" ||
	pass "rdmacheck(1) lists --help only as the launcher takes it"

# has FILE TEXT: a line of FILE is TEXT after leading blanks, or TEXT
# followed by '=' or '['.
has() {
	awk -v t="$2" '{ sub(/^ +/, "") }
	$0 == t || index($0, t "=") == 1 || index($0, t "[") == 1 { f = 1 }
	END { exit !f }' "$1"
}

def_rule_ids >ids
n=$(wc -l <ids)
[ "$n" -ge 10 ] && pass "$n rules in rules.def" ||
	fail "only $n rules found in rules.def"
missing=
while read -r id; do
	has page7.txt "$id" || missing="$missing $id"
done <ids
[ -z "$missing" ] && pass "rdmacheck(7) lists every rule" ||
	fail "rdmacheck(7) lacks the rules:$missing"
# With its prose: what triggers it and how to fix it, rule by rule.
for part in "What triggers it." "How to fix it."; do
	# Justified: the words may be further apart.
	# grep -c exits 1 on a count of 0, which the test below judges
	k=$(tr -s ' ' <page7.txt | grep -c "^ $part" || true)
	[ "$k" = "$n" ] && pass "rdmacheck(7): '$part' for each of the $n rules" ||
		fail "rdmacheck(7): '$part' $k times for $n rules"
done

def_options >options
missing7=
missing1=
while read -r _ name _; do
	has page7.txt "$name" || missing7="$missing7 $name"
	# help=1 is not a launcher option: its --help (checked below) is
	[ "$name" = help ] ||
		has page1.txt "--$(printf '%s' "$name" | tr _ -)" ||
		missing1="$missing1 $name"
done <options
[ -z "$missing7" ] && pass "rdmacheck(7) lists every option" ||
	fail "rdmacheck(7) lacks the options:$missing7"
[ -z "$missing1" ] && pass "rdmacheck(1) lists every option" ||
	fail "rdmacheck(1) lacks the options:$missing1"

# The hand-written parts name the launcher's own options.
for opt in --loopback --help --version; do
	grep -q -- "$opt" page1.txt && pass "rdmacheck(1) documents $opt" ||
		fail "rdmacheck(1) lacks $opt"
done

finish

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/launcher/rules-doc.sh: doc/rules.md (built from src/core/rules.def and
# doc/rules.md.in) has one section per rule, in the table's order, and
# every Example command in it, run as written (build/ being the build
# tree), reports its rule.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

doc=$top_builddir/doc/rules.md
[ -f "$doc" ] || { fail "$doc is not built"; finish; }
cd "$t_dir"
def_rule_ids >ids.def
sed -n 's/^## `\(.*\)`$/\1/p' "$doc" >ids.doc
[ "$(wc -l <ids.def)" -ge 10 ] && cmp -s ids.def ids.doc &&
	pass "one section per rule of rules.def, in order ($(wc -l <ids.def))" ||
	fail "sections differ from rules.def: $(diff ids.def ids.doc | tr '\n' ' ')"
# Each section says what triggers the rule, what the real library does
# and how to fix the code, and shows a report: the scenario's Example,
# or an example report of its own.
awk '/^## `/ { if (id != "") print id, t, w, h, e
		id = substr($2, 2, length($2) - 2); t = w = h = e = 0 }
	/^\*\*What triggers it\.\*\*/ { t = 1 }
	/^\*\*What (librdmacm|libibverbs) does\.\*\*/ { w = 1 }
	/^\*\*How to fix it\.\*\*/ { h = 1 }
	/^\*\*Example( report)?\.\*\*/ { e = 1 }
	END { if (id != "") print id, t, w, h, e }' "$doc" >parts
lacking=$(awk '$2 $3 $4 != "111" { printf " %s", $1 }' parts)
[ -z "$lacking" ] &&
	pass "every section: what triggers it, what the library does, how to fix it" ||
	fail "sections without the three parts:$lacking"
noex=$(awk '$5 != 1 { printf " %s", $1 }' parts)
[ -z "$noex" ] && pass "every section shows a report" ||
	echo "sections without an example report (no scenario breaks them on the loopback backend):$noex"
if grep -n 'shared/\|reference/' "$doc" "$top_srcdir/doc/rules.md.in"; then
	fail "doc/rules.md refers outside the repository"
fi

# Each example: "**Example.** `tests/scenarios/F` breaks it: `CMD` reports"
# in the section of its rule.
awk '/^## `/ { id = substr($2, 2, length($2) - 2) }
	/^\*\*Example\.\*\*/ { split($0, q, "`"); print id "\t" q[4] }' \
	"$doc" >examples
n=0 bad=
while IFS='	' read -r id cmd; do
	n=$((n + 1))
	rm -f r.*.json
	cmd=$(printf '%s' "$cmd" |
		sed "s|build/tests/|$top_builddir/tests/|; s|rdmacheck --loopback|$launcher --loopback --json=r.%p.json --exitcode=0|")
	# an example exits as its program does: the verdict is the rule
	# in its report, checked next
	set +e
	RDMACHECK_LOOPBACK_NS=rd$$.$n timeout 60 sh -c "$cmd" >out 2>&1
	set -e
	if ! cat r.*.json 2>/dev/null | grep -q "\"rule\": \"$id\""; then
		bad="$bad $id"
	fi
done <examples
[ "$n" -ge 10 ] && [ -z "$bad" ] &&
	pass "$n Example commands report their rule" ||
	fail "examples not reporting their rule:$bad (of $n)"
finish

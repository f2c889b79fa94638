#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The manual pages pass mandoc -T lint with no message at all (style
# included), and carry a valid date: the build's SOURCE_DATE_EPOCH when
# it has one (reproducible builds, the Debian package), else a real day.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

if ! command -v mandoc >/dev/null 2>&1; then
	echo "$t_name: mandoc is not installed (Debian: apt-get install mandoc)"
	exit 77
fi
cd "$t_dir"
pages="$top_builddir/doc/rdmacheck.1 $top_builddir/doc/rdmacheck.7
$top_srcdir/doc/rdmacheck-report.1"

# th_date PAGE: the date field of PAGE's .TH line.
th_date() {
	awk '$1 == ".TH" {
		n = split($0, q, "\"")
		print (n >= 3 ? q[2] : "")
		exit
	}' "$1"
}

for page in $pages; do
	run mandoc -T lint -W all "$page"
	[ -z "$out$err" ] && pass "${page##*/}: mandoc -T lint -W all is silent" ||
		fail "${page##*/}: mandoc says: $out$err"
	d=$(th_date "$page")
	case $d in
	[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9])
		[ "$(date -u -d "$d" +%Y-%m-%d 2>/dev/null)" = "$d" ] &&
			pass "${page##*/}: dated $d" ||
			fail "${page##*/}: '$d' is no day" ;;
	*) fail "${page##*/}: date '$d' is not YYYY-MM-DD" ;;
	esac
done

# The generated pages: dated from SOURCE_DATE_EPOCH when set, and
# lint-clean however long the installation paths are.
tab=$top_builddir/tools
long=/opt/a/rather/long/installation/prefix/that/goes/on/and/on/lib
for t in 1 7; do
	SOURCE_DATE_EPOCH=86400 sh "$top_srcdir/doc/gen-man.sh" \
		"$top_srcdir/doc/rdmacheck.$t.in" "$tab/options.tab" \
		"$tab/rules.tab" 9.9 "$long" "$long/rdmacheck" \
		"$long/exec/rdmacheck" "$top_srcdir/doc/rules.md.in" >"page.$t"
	d=$(th_date "page.$t")
	[ "$d" = 1970-01-02 ] && pass "rdmacheck.$t: SOURCE_DATE_EPOCH gives $d" ||
		fail "rdmacheck.$t: SOURCE_DATE_EPOCH=86400 gives '$d'"
	run mandoc -T lint -W all "page.$t"
	[ -z "$out$err" ] && pass "rdmacheck.$t with a long prefix: lint-clean" ||
		fail "rdmacheck.$t with a long prefix: $out$err"
done
finish

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/gates/table.sh: the real-kernel tier's verdict, tests/kernel/table.sh,
# on fixture result folders (no guest): all the same passes; a documented
# difference passes as known; an unexplained difference, a test with no
# result on one side, empty or missing folders, an emptied known-
# differences file fail with 1; a table that cannot be made (unreadable
# known file, a filter no test matches) fails with 2.  Each case asserts
# the exit status and the summary line.
. "${top_srcdir:-.}/tests/lib/check.sh"

table=$top_srcdir/tests/kernel/table.sh
t=$t_dir
# two tests of the tier's list: a program pair and a scenario
tests='^(prog/rping|scn/channel-destroy-with-ids)$'

# facts DIR NAME KEY=VALUE...: a test's facts file.
facts()
{
	_d=$1/$2
	shift 2
	mkdir -p "$_d"
	: >"$_d/facts"
	for kv in "$@"; do
		printf '%s\t%s\n' "${kv%%=*}" "${kv#*=}" >>"$_d/facts"
	done
}

# a side where both tests passed as they must
good()
{
	facts "$1" prog/rping plain.server.rc=0 plain.client.rc=0 \
		plain.out=ok shim.server.rc=0 shim.client.rc=0 shim.out=ok \
		"shim.server.findings=none" "shim.client.findings=none"
	facts "$1" scn/channel-destroy-with-ids plain.rc=- shim.rc=23 shim.verdict=pass \
		"shim.findings=E:channel-destroy-with-ids@rdma_destroy_event_channel"
	printf 'prog/rping\t1200\nscn/channel-destroy-with-ids\t300\n' >"$1/times"
}

cat >"$t/known" <<'KNOWN'
known: gate-fixture
tests: ^prog/rping$
diff: ^calls\.server\.rdma_fixture: real \[1\] loopback \[\]$
why: a fixture's documented difference
KNOWN
: >"$t/empty-known"

# case NAME WANT-STATUS SUMMARY-ERE REAL LO KNOWN: one run of the table.
case_()
{
	_n=$1 _want=$2 _ere=$3
	shift 3
	top_srcdir=$top_srcdir top_builddir=${top_builddir:-.} \
		sh "$table" "$1" "$2" "$3" "${4:-$tests}" >"$t/$_n.out" 2>&1
	verdict "$_n" $? "$_want" "$_ere" "$t/$_n.out"
}

good "$t/same/real"
good "$t/same/lo"
case_ same 0 '^check-kernel: 2 same, 0 known differences, 0 unexplained$' \
	"$t/same/real" "$t/same/lo" "$t/known"

good "$t/known-diff/real"
good "$t/known-diff/lo"
printf 'calls.server.rdma_fixture\t1\n' >>"$t/known-diff/real/prog/rping/facts"
case_ known 0 '^check-kernel: 1 same, 1 known differences, 0 unexplained$' \
	"$t/known-diff/real" "$t/known-diff/lo" "$t/known"
# the same difference with the known differences emptied
case_ known-emptied 1 \
	'^check-kernel: 1 same, 0 known differences, 1 unexplained$' \
	"$t/known-diff/real" "$t/known-diff/lo" "$t/empty-known"

good "$t/diff/real"
good "$t/diff/lo"
facts "$t/diff/lo" scn/channel-destroy-with-ids plain.rc=- shim.rc=0 shim.verdict=pass \
	shim.findings=none
case_ unexplained 1 \
	'^check-kernel: 1 same, 0 known differences, 1 unexplained$' \
	"$t/diff/real" "$t/diff/lo" "$t/known"
grep -q 'shim.rc: real \[23\] loopback \[0\]  => NOT A KNOWN DIFFERENCE' \
	"$t/unexplained.out" || fail "unexplained: the problem is not named"

# one backend alone wrong: a timeout is a failure even where both agree
good "$t/timeout/real"
good "$t/timeout/lo"
for d in real lo; do
	printf 'timeout\tkilled after 150 s\n' \
		>>"$t/timeout/$d/prog/rping/facts"
done
case_ timeout 1 '^check-kernel: 1 same, 0 known differences, 1 unexplained$' \
	"$t/timeout/real" "$t/timeout/lo" "$t/known"

good "$t/missing/real"
good "$t/missing/lo"
rm -r "$t/missing/real/scn/channel-destroy-with-ids"
case_ missing-one-side 1 \
	'^check-kernel: 1 same, 0 known differences, 1 unexplained$' \
	"$t/missing/real" "$t/missing/lo" "$t/known"
grep -q 'check: real \[not run\]' "$t/missing-one-side.out" ||
	fail "missing-one-side: not reported as not run"

mkdir -p "$t/empty/real" "$t/empty/lo"
case_ empty 1 '^check-kernel: 0 same, 0 known differences, 2 unexplained$' \
	"$t/empty/real" "$t/empty/lo" "$t/known"
case_ no-folders 1 \
	'^check-kernel: 0 same, 0 known differences, 2 unexplained$' \
	"$t/none/real" "$t/none/lo" "$t/known"

case_ no-known 2 'cannot read the known differences' \
	"$t/same/real" "$t/same/lo" "$t/no-such-file"
case_ no-test 2 "no test matches" \
	"$t/same/real" "$t/same/lo" "$t/known" '^no/such-test$'

# the tier's own known differences leave an unexplained problem alone
case_ shipped-known 1 \
	'^check-kernel: 1 same, 0 known differences, 1 unexplained$' \
	"$t/diff/real" "$t/diff/lo" "$top_srcdir/tests/kernel/known-differences"
finish

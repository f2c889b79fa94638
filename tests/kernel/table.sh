#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/kernel/table.sh REAL LOOPBACK KNOWN [TESTS-ERE]: the fidelity table
# of the real-kernel tier.  Reads the facts run-tests.sh left for each test
# in the result folders REAL and LOOPBACK, compares them key by key, checks
# what each backend must do on its own (programs exit 0 and print their
# lines plainly, scenarios pass run-scenario.sh, nothing times out), and
# matches every problem against the documented known differences in the
# file KNOWN.  Prints one line per test and a summary; exits 1 when a
# problem is not a known difference, 2 when the table cannot be made.
#
# A problem line is "KEY: real [VALUE] loopback [VALUE]" (the backends
# differ; [] is a fact the backend did not record) or "check: BACKEND
# KEY [VALUE]" (that backend alone is wrong).  KNOWN holds stanzas:
#   known: ID            a name for the difference
#   tests: ERE           the tests it applies to
#   diff: ERE            a problem line it explains (one or more)
#   why: TEXT            why it is not a defect (or whose defect it is)
set -u
real=$1 lo=$2 known=$3 filter=${4:-.}
here=$(cd "$(dirname "$0")" && pwd)
tab=$(printf '\t')
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-table.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

# Exit 2 when the table cannot be made: a test list that cannot be read
# or that the filter empties is a run that checked nothing.
fail() { echo "check-kernel: FAIL: $*" >&2; exit 2; }
[ -r "$known" ] || fail "cannot read the known differences $known"
top_srcdir=${top_srcdir:-$here/../..} top_builddir=${top_builddir:-.} \
	sh "$here/run-tests.sh" list >"$work/all" || fail "run-tests.sh list"
grep -E -- "$filter" "$work/all" >"$work/tests"
[ -s "$work/tests" ] || fail "no test matches '$filter'"

# facts DIR NAME: the facts of a test, sorted by key ("" if none).
facts()
{
	if [ -f "$1/$2/facts" ]; then
		sort -t "$tab" -k1,1 "$1/$2/facts"
	fi
}

# problems NAME: the problem lines of one test.
problems()
{
	facts "$real" "$1" >"$work/r"
	facts "$lo" "$1" >"$work/l"
	[ -s "$work/r" ] || echo "check: real [not run]"
	[ -s "$work/l" ] || echo "check: loopback [not run]"
	# key by key
	awk -F "$tab" '
		FILENAME == ARGV[1] { r[$1] = $2; keys[$1]; next }
		{ l[$1] = $2; keys[$1] }
		END {
			for (k in keys) {
				rv = (k in r) ? r[k] : ""
				lv = (k in l) ? l[k] : ""
				if (rv != lv)
					printf "%s: real [%s] loopback [%s]\n",
					    k, rv, lv
			}
		}' "$work/r" "$work/l" | sort
	for b in real loopback; do
		if [ "$b" = real ]; then f=$work/r; else f=$work/l; fi
		awk -F "$tab" -v b="$b" -v t="$1" '
			function bad() { printf "check: %s %s [%s]\n", b, $1, $2 }
			$1 == "timeout" || $1 == "error" { bad() }
			t ~ /^prog\// {
				if ($1 == "plain.server.rc" &&
				    $2 != "0" && $2 != "killed" && $2 != "-") bad()
				if ($1 == "plain.client.rc" &&
				    $2 != "0" && $2 != "-") bad()
				if ($1 == "plain.out" && $2 != "ok" &&
				    $2 !~ /^not run/) bad()
				if ($1 == "shim.out" && $2 != "ok") bad()
				if ($1 ~ /^shim\.(server|client)\.rc$/ &&
				    $2 != "0" && $2 != "23" && $2 != "killed")
					bad()
			}
			t ~ /^scn\// {
				if ($1 == "shim.verdict" && $2 != "pass") bad()
				if ($1 == "plain.rc" && $2 != "0" && $2 != "-")
					bad()
			}' "$f"
	done
}

while read -r t; do
	problems "$t" | while IFS= read -r p; do
		printf '%s\t%s\n' "$t" "$p"
	done
done <"$work/tests" >"$work/problems"

# Each problem: TEST<tab>LINE<tab>IDS of the known differences matching it
# ("" if none); the known file's stanzas are read first.
awk -F "$tab" '
	FILENAME == ARGV[1] {
		if ($0 ~ /^known: /) { n++; id[n] = substr($0, 8) }
		else if ($0 ~ /^tests: /) tre[n] = substr($0, 8)
		else if ($0 ~ /^kind: /) kind[n] = substr($0, 7)
		else if ($0 ~ /^diff: /) { nd[n]++; dre[n, nd[n]] = substr($0, 7) }
		next
	}
	{
		ids = ""
		for (i = 1; i <= n; i++) {
			if ($1 !~ tre[i])
				continue
			for (j = 1; j <= nd[i]; j++)
				if ($2 ~ dre[i, j]) {
					ids = ids (ids == "" ? "" : ",") id[i] \
					    (kind[i] == "defect" ? "!" : "")
					used[i] = 1
					break
				}
		}
		print $1 "\t" $2 "\t" ids
	}
	END {
		for (i = 1; i <= n; i++)
			if (!used[i])
				print id[i] >"/dev/stderr"
	}' "$known" "$work/problems" >"$work/matched" 2>"$work/unused" ||
	fail "cannot match the problems against $known"

# --- the table ----------------------------------------------------------
get() { awk -F "$tab" -v k="$2" '$1 == k { print $2; exit }' "$1" 2>/dev/null; }

# rc DIR NAME MODE: "server/client" (programs) or the rc (scenarios).
rc()
{
	_f=$1/$2/facts
	[ -f "$_f" ] || { echo "not run"; return; }
	if grep -q "^timeout$tab" "$_f"; then
		echo "TIMEOUT"
		return
	fi
	case $2 in
	prog/*|def/*)
		_s=$(get "$_f" "$3.server.rc") _c=$(get "$_f" "$3.client.rc")
		_s=${_s%% (*} _c=${_c%% (*}
		[ "$_s" = killed ] && _s=k
		[ "$_c" = server-not-ready ] && _c=nr
		echo "${_s:-?}/${_c:-?}"
		;;
	*)
		_r=$(get "$_f" "$3.rc")
		_r=${_r%% (*}
		if [ "$3" = shim ] && [ "$(get "$_f" shim.verdict)" != pass ]
		then
			_r="$_r!"
		fi
		echo "${_r:-?}"
		;;
	esac
}

# found DIR NAME: the findings, short: errors rule@call, W:warnings, leaks
# by rule; programs as s:... c:...
short() { sed 's/E:\([^,]*\)/\1/g; s/L:\([^@,]*\)@-/\1/g'; }
found()
{
	_f=$1/$2/facts
	[ -f "$_f" ] || { echo "-"; return; }
	case $2 in
	prog/*|def/*)
		_s=$(get "$_f" shim.server.findings | short)
		_c=$(get "$_f" shim.client.findings | short)
		echo "s:${_s:-?} c:${_c:-?}"
		;;
	*)
		_x=$(get "$_f" shim.findings | short)
		echo "${_x:--}"
		;;
	esac
}

secs()
{
	awk -F "$tab" -v t="$2" '$1 == t { printf "%.1f", $2 / 1000; f = 1 }
		END { if (!f) printf "-" }' "$1/times" 2>/dev/null || printf -
}

same=0 knownn=0 bad=0
fmt='%-46s %-7s %-7s %-7s %-7s %6s %6s  %-8s %s\n'
printf "$fmt" "test" "real" "real" "lo" "lo" "real" "lo" "verdict" \
	"findings under the shim: real | loopback (one if the same)"
printf "$fmt" "" "plain" "shim" "plain" "shim" "s" "s" "" ""
while read -r t; do
	p=$(awk -F "$tab" -v t="$t" '$1 == t' "$work/matched")
	if [ -z "$p" ]; then
		v=same
		same=$((same + 1))
	elif printf '%s\n' "$p" | awk -F "$tab" '$3 == "" { f = 1 }
			END { exit !f }'; then
		v="DIFF($(printf '%s\n' "$p" | awk -F "$tab" '$3 == "" {
			sub(/ \[.*/, "", $2); sub(/^check: /, "", $2);
			print $2 }' | sort -u | paste -sd, -))"
		bad=$((bad + 1))
	else
		v="known($(printf '%s\n' "$p" | cut -f3 | tr ',' '\n' |
			sort -u | paste -sd, -))"
		knownn=$((knownn + 1))
	fi
	fr=$(found "$real" "$t") fl=$(found "$lo" "$t")
	if [ "$fr" = "$fl" ]; then ff=$fr; else ff="$fr | $fl"; fi
	printf "$fmt" "$t" \
		"$(rc "$real" "$t" plain)" "$(rc "$real" "$t" shim)" \
		"$(rc "$lo" "$t" plain)" "$(rc "$lo" "$t" shim)" \
		"$(secs "$real" "$t")" "$(secs "$lo" "$t")" "$v" "$ff"
done <"$work/tests"

echo
echo "Problems (KEY: real [VALUE] loopback [VALUE], or check: BACKEND KEY [VALUE]):"
awk -F "$tab" '{ printf "  %s  %s  => %s\n", $1, $2,
	($3 == "" ? "NOT A KNOWN DIFFERENCE" : "known: " $3) }' "$work/matched"
if [ -s "$work/unused" ]; then
	echo "Known differences not seen in this run: $(paste -sd' ' "$work/unused")"
fi
echo
echo "check-kernel: $same same, $knownn known differences, $bad unexplained"
[ "$bad" = 0 ]

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The launcher, run from the build tree: what it puts in the environment
# of the program, its errors and exit statuses, --help and --version, and
# the installed layout (a copy outside the build tree).
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

cd "$t_dir"
# Prints what the launcher hands over (expanded by the program's shell).
# shellcheck disable=SC2016
show='printf "%s|%s|%s\n" "${LD_PRELOAD-unset}" "${RDMACHECK_OPTIONS-unset}" "${LD_LIBRARY_PATH-unset}"'

# canon PATH: PATH with its directory's symbolic links resolved.
canon() {
	printf '%s/%s' "$(cd "${1%/*}" 2>/dev/null && pwd -P)" "${1##*/}"
}

# first_is LIST FILE: the first ':'-separated entry of LIST is FILE.
first_is() {
	[ -e "$2" ] && [ "$(canon "${1%%:*}")" = "$(canon "$2")" ]
}

version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
run "$launcher" --version
expect_rc 0 "--version"
[ "$out" = "rdmacheck $version" ] && pass "--version prints '$out'" ||
	fail "--version prints '$out', expected 'rdmacheck $version'"

run "$launcher" --help
expect_rc 0 "--help"
case $out in
Usage:\ rdmacheck*--loopback*--help*--version*) pass "--help text" ;;
*) fail "--help text: $out" ;;
esac

# Options become RDMACHECK_OPTIONS entries after the environment's.
run env -u LD_LIBRARY_PATH LD_PRELOAD='libc.so.6 libm.so.6' \
	RDMACHECK_OPTIONS=protect=0:exitcode=9 \
	"$launcher" --exitcode=7 --no-leak-check --halt-on-error=no \
	--stack-depth=8 --json="$t_dir/r.%p.json" -- sh -c "$show"
expect_rc 0 "options run"
pre=${out%%|*}
opts=${out#*|}
opts=${opts%%|*}
llp=${out##*|}
first_is "$pre" "$RDMACHECK_SHIM" &&
	pass "LD_PRELOAD starts with the build tree's shim" ||
	fail "LD_PRELOAD is '$pre', not the build tree's shim first"
[ "${pre#*:}" = 'libc.so.6 libm.so.6' ] &&
	pass "LD_PRELOAD keeps the previous value after the shim" ||
	fail "LD_PRELOAD is '$pre'"
expected="protect=0:exitcode=9:exitcode=7:leak_check=0:halt_on_error=no:stack_depth=8:json=$t_dir/r.%p.json"
[ "$opts" = "$expected" ] &&
	pass "RDMACHECK_OPTIONS: environment first, then the options" ||
	fail "RDMACHECK_OPTIONS is '$opts', expected '$expected'"
[ "$llp" = unset ] && pass "LD_LIBRARY_PATH left alone" ||
	fail "LD_LIBRARY_PATH set to '$llp' without --loopback"

run env -u LD_PRELOAD -u RDMACHECK_OPTIONS "$launcher" sh -c "$show"
expect_rc 0 "plain run"
case $out in
*:*'|unset|'*) fail "LD_PRELOAD or RDMACHECK_OPTIONS wrong: $out" ;;
*'|unset|'*) first_is "${out%%|*}" "$RDMACHECK_SHIM" &&
	pass "no LD_PRELOAD before: the shim alone, no RDMACHECK_OPTIONS" ||
	fail "LD_PRELOAD is '${out%%|*}'" ;;
*) fail "RDMACHECK_OPTIONS set without options: $out" ;;
esac

# A report path without %p for a wrapper command draws a warning.
run "$launcher" --json="$t_dir/w.json" -- timeout 5 true
case $err in
*"warning: json has no %p and timeout runs programs"*)
	pass "json without %p under timeout(1): warned" ;;
*) fail "no warning for json without %p under timeout: $err" ;;
esac
run "$launcher" --json="$t_dir/w.%p.json" -- timeout 5 true
case $err in
*warning*) fail "a warning although json has %p: $err" ;;
*) pass "json with %p under timeout(1): no warning" ;;
esac

# A program that never uses librdmacm is left alone: no report.
run env -u RDMACHECK_OPTIONS "$launcher" --json="$t_dir/quiet.%p.json" true
expect_rc 0 "a program without librdmacm keeps its status"
set -- "$t_dir"/quiet.*.json
[ ! -e "$1" ] && pass "no report from a program that never used librdmacm" ||
	fail "a program without librdmacm wrote $1"

# The shim really is loaded and reads the options: it writes the report.
run env -u RDMACHECK_OPTIONS RDMACHECK_LOOPBACK_NS="launcher-$$" \
	"$launcher" --loopback --json="$t_dir/report.%p.json" \
	--exitcode=5 "$top_builddir/tests/scenarios/leaks" clean
expect_rc 0 "a clean program keeps its status"
set -- "$t_dir"/report.*.json
if [ -f "$1" ] && grep -q '"tool": "rdmacheck"' "$1" &&
    grep -q '"exitcode": 5' "$1"; then
	pass "the shim wrote $1 with the options given"
else
	fail "no JSON report from the shim (or options missing in it)"
fi

run "$launcher" sh -c 'exit 3'
expect_rc 3 "the program's exit status is passed on"

# --loopback puts the backend first, keeping the previous entries.
run env LD_LIBRARY_PATH=/nonexistent/a:/nonexistent/b "$launcher" \
	--loopback -- sh -c "$show"
expect_rc 0 "--loopback"
llp=${out##*|}
first_is "$llp" "$RDMACHECK_LOOPBACK_DIR" &&
	pass "--loopback: the backend's directory first" ||
	fail "--loopback: LD_LIBRARY_PATH is '$llp'"
[ "${llp#*:}" = /nonexistent/a:/nonexistent/b ] &&
	pass "--loopback keeps LD_LIBRARY_PATH" ||
	fail "--loopback: LD_LIBRARY_PATH is '$llp'"

# Usage errors: exit 2 with a message that names the problem.
run "$launcher" --no-such-option=1 true
expect_rc 2 "unknown option"
expect_err "unknown option '--no-such-option'" "unknown option named"
expect_err "valid options: --" "valid options listed"
run "$launcher" -z true
expect_rc 2 "unknown short option"
run "$launcher"
expect_rc 2 "no program"
expect_err "missing program" "no program: message"
run "$launcher" --json=x.json --
expect_rc 2 "no program after --"
run "$launcher" --exitcode=256 true
expect_rc 2 "value out of range"
expect_err "out of range" "value out of range: message"
run "$launcher" --exitcode=seven true
expect_rc 2 "value not a number"
run "$launcher" --exitcode true
expect_rc 2 "missing value"
run "$launcher" --leak-check=maybe true
expect_rc 2 "bad Boolean"
run "$launcher" --json=a:b true
expect_rc 2 "value with a colon"
run "$launcher" --no-json true
expect_rc 2 "--no- on a non-Boolean option"
run "$launcher" --loopback=1 true
expect_rc 2 "--loopback with a value"

# The program: not found (127, like a shell), not executable (126).
run "$launcher" rdmacheck-no-such-program
expect_rc 127 "program not found"
expect_err "rdmacheck: cannot find program 'rdmacheck-no-such-program'" \
	"program not found: message"
run "$launcher" ./no-such-file
expect_rc 127 "program path not found"
run "$launcher" -- -x
expect_rc 127 "-- ends the options"
: >not-executable
run "$launcher" ./not-executable
expect_rc 126 "program not executable"
run "$launcher" "$t_dir"
expect_rc 126 "program is a directory"

# Installed layout: a copy outside the build tree looks in $libdir.
mkdir -p bin
cp "$launcher" bin/rdmacheck
run env -u RDMACHECK_SHIM_PATH bin/rdmacheck true
expect_rc 1 "installed launcher without an installed shim"
expect_err "librdmacheck.so is not installed" "missing shim: message"
expect_err "RDMACHECK_SHIM_PATH" "missing shim: mentions RDMACHECK_SHIM_PATH"
run env RDMACHECK_SHIM_PATH="$RDMACHECK_SHIM" bin/rdmacheck sh -c "$show"
expect_rc 0 "RDMACHECK_SHIM_PATH"
first_is "${out%%|*}" "$RDMACHECK_SHIM" &&
	pass "RDMACHECK_SHIM_PATH is preloaded" ||
	fail "RDMACHECK_SHIM_PATH not used: $out"
run env RDMACHECK_SHIM_PATH=/nonexistent/librdmacheck.so "$launcher" true
expect_rc 1 "RDMACHECK_SHIM_PATH naming no file"
expect_err "RDMACHECK_SHIM_PATH names '/nonexistent/librdmacheck.so'" \
	"bad RDMACHECK_SHIM_PATH: message"

finish

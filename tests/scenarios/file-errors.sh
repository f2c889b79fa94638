#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A file the options name that cannot be used is an error, so that a CI
# gate cannot pass because its suppressions or its report went missing:
# a suppressions file that cannot be read, a log_path that cannot be
# opened (json= paths: report-paths.sh) give one "rdmacheck: error:" line
# at the start and exit status 2 at exit, over the program's status and
# over exitcode (also with halt_on_error); file_errors=warn makes each a
# warning and leaves the status alone.  rdmacheck-report refuses a
# missing suppressions file with exit status 2 too.
set -eu
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
bin=$top_builddir/tests/scenarios/leaks
tool=$top_builddir/tools/rdmacheck-report
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

# shim OPTIONS MODE: the leaks scenario (clean: status 0; bad: 23) under
# the shim with RDMACHECK_OPTIONS=OPTIONS.
shim() {
	run env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		LD_PRELOAD="$RDMACHECK_SHIM" \
		RDMACHECK_LOOPBACK_NS="rcfileerr-$$" RDMACHECK_OPTIONS="$1" \
		"$bin" "$2"
}

# errors N SEV TEXT WHAT: stderr has N lines "rdmacheck: SEV: ...TEXT".
errors() {
	n=$(printf '%s\n' "$err" | grep -c "^rdmacheck: $2: .*$3" || true)
	if [ "$n" = "$1" ]; then
		pass "$4: $n $2 line(s)"
	else
		fail "$4: $n '$2: ...$3' lines, expected $1: $err"
	fi
}

# The baselines: the statuses the file errors must override.
shim "" clean
expect_rc 0 "clean run"
shim "" bad
expect_rc 23 "leaking run"

printf 'leak-*:*\n' >"$t_dir/supp"
shim "suppressions=$t_dir/supp" bad
expect_rc 0 "a readable suppressions file suppresses the leaks"

for mode in clean bad; do
	shim "suppressions=$t_dir/missing" $mode
	expect_rc 2 "missing suppressions file ($mode)"
	errors 1 error "cannot read the suppressions file '$t_dir/missing'" \
		"missing suppressions file ($mode)"
	expect_err "rdmacheck: exit status 2: " \
		"missing suppressions file ($mode): the status explained"
done
# The error comes first, before anything the program prints.
case $err in
"rdmacheck: error: cannot read the suppressions file"*)
	pass "the error is the first line" ;;
*) fail "the error is not the first line: $err" ;;
esac

shim "suppressions=$t_dir/missing:file_errors=warn" bad
expect_rc 23 "missing suppressions file, file_errors=warn"
errors 1 warning "cannot read the suppressions file" \
	"missing suppressions file, file_errors=warn"
errors 0 error "" "missing suppressions file, file_errors=warn"

# A directory is not a suppressions file either.
shim "suppressions=$t_dir" clean
expect_rc 2 "a directory as suppressions file"

shim "suppressions=$t_dir/missing:halt_on_error=1" bad
expect_rc 2 "missing suppressions file, halt_on_error=1"

shim "suppressions=$t_dir/missing:exitcode=0" bad
expect_rc 2 "missing suppressions file, exitcode=0"

shim "log_path=$t_dir/none/log" clean
expect_rc 2 "log_path in a missing directory"
errors 1 error "cannot open log_path '$t_dir/none/log'" \
	"log_path in a missing directory"

shim "log_path=$t_dir/none/log:file_errors=warn" clean
expect_rc 0 "log_path in a missing directory, file_errors=warn"

shim "file_errors=maybe" clean
expect_rc 0 "file_errors=maybe: the default kept"
expect_err "bad value 'maybe' for file_errors (expected one of: fail warn" \
	"file_errors=maybe: the valid values listed"

# The report tool: a missing suppressions file is an error there too.
shim "json=$t_dir/r.json" bad
run "$tool" --suppressions="$t_dir/missing" "$t_dir/r.json"
expect_rc 2 "rdmacheck-report --suppressions=missing"
expect_err "cannot read the suppressions file '$t_dir/missing'" \
	"rdmacheck-report --suppressions=missing: says which file"
finish

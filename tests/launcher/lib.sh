# tests/launcher/lib.sh: common code of the launcher and manual page tests,
# sourced by tests/launcher/*.sh.  Environment (from the top Makefile.am):
# top_srcdir, top_builddir, RDMACHECK_SHIM, RDMACHECK_LOOPBACK_DIR.
# Variables set here are used by the tests that source this file.
# shellcheck shell=sh disable=SC2034

t_name=${0##*/}
t_name=${t_name%.sh}
t_fail=0
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
launcher=$top_builddir/tools/rdmacheck

t_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-$t_name.XXXXXX") || exit 99
t_cleanup() {
	if [ "$t_fail" = 0 ]; then
		rm -rf "$t_dir"
	else
		echo "$t_name: outputs kept in $t_dir"
	fi
}
trap t_cleanup EXIT

fail() {
	echo "$t_name: FAIL: $*"
	t_fail=1
}

pass() {
	echo "$t_name: ok: $*"
}

# run ARG...: run the command; sets rc, and out and err to its outputs.
run() {
	set +e
	"$@" >"$t_dir/out" 2>"$t_dir/err"
	rc=$?
	set -e
	out=$(cat "$t_dir/out")
	err=$(cat "$t_dir/err")
}

# expect_rc N WHAT: the last run exited with N.
expect_rc() {
	if [ "$rc" = "$1" ]; then
		pass "$2: exit $rc"
	else
		fail "$2: exit $rc, expected $1 (stderr: $err)"
	fi
}

# expect_err TEXT WHAT: the last run's stderr contains TEXT.
expect_err() {
	case $err in
	*"$1"*) pass "$2" ;;
	*) fail "$2: stderr lacks '$1': $err" ;;
	esac
}

# def_entries FILE MACRO: the arguments of every MACRO(...) in the .def
# FILE, one entry a line, comments removed.  Deliberately independent of
# tools/deftab.sh (no preprocessor), so that the two check each other.
def_entries() {
	awk -v m="$2" '
	{ s = s " " $0 }
	END {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", s)
		while ((i = index(s, m "(")) > 0) {
			s = substr(s, i + length(m) + 1)
			e = s
			sub(/\)[ \t]*(RC_|$).*/, "", e)
			gsub(/[ \t]+/, " ", e)
			print e
		}
	}' "$1"
}

# def_options: "TYPE name default" of every option in src/options.def.
def_options() {
	def_entries "$top_srcdir/src/options.def" RC_OPT |
	    awk -F ' *, *' '{ print $1, $2, $3 }'
}

# def_rule_ids: the id of every rule in src/rules.def.
def_rule_ids() {
	def_entries "$top_srcdir/src/rules.def" RC_RULE |
	    awk -F '"' '{ print $2 }'
}

finish() {
	if [ "$t_fail" = 0 ]; then
		echo "$t_name: all passed"
		exit 0
	fi
	exit 1
}

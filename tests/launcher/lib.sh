# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/launcher/lib.sh: common code of the launcher and manual page tests,
# sourced by tests/launcher/*.sh.  Environment (from the top Makefile.am):
# top_srcdir, top_builddir, RDMACHECK_SHIM, RDMACHECK_LOOPBACK_DIR.
# Variables set here are used by the tests that source this file.
# shellcheck shell=sh disable=SC2034

: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"
launcher=$top_builddir/tools/rdmacheck

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

# def_options: "TYPE name default" of every option in src/core/options.def.
def_options() {
	def_entries "$top_srcdir/src/core/options.def" RC_OPT |
	    awk -F ' *, *' '{ print $1, $2, $3 }'
}

# def_rule_ids: the id of every rule in src/core/rules.def.
def_rule_ids() {
	def_entries "$top_srcdir/src/core/rules.def" RC_RULE |
	    awk -F '"' '{ print $2 }'
}

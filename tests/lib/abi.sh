# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/lib/abi.sh: shared checks of a loopback library against the real
# one, sourced by tests/loopback-verbs/abi-exports.sh and
# tests/programs/abi-exports.sh.  Each check prints what is wrong and sets
# abi_fail=1; abi_exports leaves both lists in $abi_tmp/real, $abi_tmp/lo.
abi_fail=0
abi_tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-abi.XXXXXX") || exit 99
trap 'rm -rf "$abi_tmp"' EXIT

# abi_need REAL LO: skip without the real library, fail without ours.
abi_need()
{
	if [ ! -e "$1" ]; then
		echo "abi-exports: SKIP: $1 not installed"
		exit 77
	fi
	if [ ! -e "$2" ]; then
		echo "abi-exports: FAIL: $2 not built"
		exit 1
	fi
}

# abi_exports REAL LO LIST-CMD [EXTRA-OK-REGEX]: LIST-CMD FILE prints a
# library's name@version exports; ours must have all of the real one's and
# nothing more, except names matching EXTRA-OK-REGEX.
abi_exports()
{
	"$3" "$1" >"$abi_tmp/real"
	"$3" "$2" >"$abi_tmp/lo"
	if [ ! -s "$abi_tmp/real" ]; then
		echo "abi-exports: FAIL: could not read the exports of $1"
		abi_fail=1
		return
	fi
	missing=$(comm -23 "$abi_tmp/real" "$abi_tmp/lo")
	if [ -n "$missing" ]; then
		echo "abi-exports: FAIL: missing from the loopback library:"
		echo "$missing"
		abi_fail=1
	fi
	extra=$(comm -13 "$abi_tmp/real" "$abi_tmp/lo" |
		grep -v "${4:-^\$}")
	if [ -n "$extra" ]; then
		echo "abi-exports: FAIL: exported but not by the real library:"
		echo "$extra"
		abi_fail=1
	fi
}

# abi_dynamic LO SONAME [NEEDED]: the SONAME (and a DT_NEEDED), and no
# -Bsymbolic, which would hide the library's internal calls from a shim.
abi_dynamic()
{
	readelf -d "$1" >"$abi_tmp/dyn"
	grep -qF "Library soname: [$2]" "$abi_tmp/dyn" || {
		echo "abi-exports: FAIL: SONAME is not $2"
		abi_fail=1
	}
	if [ -n "${3:-}" ] && ! grep -qF "Shared library: [$3]" "$abi_tmp/dyn"
	then
		echo "abi-exports: FAIL: no DT_NEEDED $3"
		abi_fail=1
	fi
	if grep -q 'SYMBOLIC' "$abi_tmp/dyn"; then
		echo "abi-exports: FAIL: linked with -Bsymbolic"
		abi_fail=1
	fi
}

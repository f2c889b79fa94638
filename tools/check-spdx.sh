#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# check-spdx.sh ROOT: every source file of the tree at ROOT carries the
# project's SPDX line (COPYING) in its first three lines: C sources,
# headers, X-macro tables and version scripts, shell, Python, jq, make
# fragments, configure.ac, the man pages and scripts with no extension
# that are ours.  Data carries none (scenario specs, fixtures, golden
# outputs, fuzz corpora, the vendored SARIF schema), nor does prose (.md).
# Prints each file without the line and exits 1 if there is one, 2 on bad
# usage.
set -eu

root=${1:?usage: check-spdx.sh ROOT}
id='SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause'
[ -f "$root/configure.ac" ] ||
	{ echo "check-spdx.sh: $root: not an rdmacheck tree" >&2; exit 2; }
cd "$root"

list=$(mktemp)
trap 'rm -f "$list"' EXIT
# Only the tree's own files: a build folder inside it (build/) is not
# walked, and generated files of an in-tree build are left out by name.
{
	for f in configure.ac Makefile.am quickstart.sh .ci/run debian/rules \
		tools/rdmacheck.in tools/rdmacheck.pc.in doc/rdmacheck-report.1 \
		doc/rdmacheck.1.in doc/rdmacheck.7.in; do
		echo "$f"
	done
	find src loopback tools tests bench doc -type f \( -name '*.c' \
		-o -name '*.h' -o -name '*.def' -o -name '*.map' \
		-o -name '*.sh' -o -name '*.py' -o -name '*.jq' \
		-o -name '*.inc' \) \
		! -path 'tests/fuzz/*/crashes/*' ! -path 'tests/sarif/*' \
		! -name 'rc_nodes.h' ! -name 'ext-rdmacm-*' \
		! -name 'librdmacheck.map' ! -name 'config.h'
	find tools/completion -type f
} >"$list"
n=$(wc -l <"$list")
if [ "$n" -lt 200 ]; then
	echo "check-spdx.sh: only $n source files found under $root" >&2
	exit 2
fi
bad=0
while read -r f; do
	if [ ! -f "$f" ]; then
		echo "$f: listed as a source file, missing"
		bad=1
	elif ! head -n 3 "$f" | grep -qF "$id"; then
		echo "$f: no \"$id\" line in its first three lines"
		bad=1
	fi
done <"$list"
exit $bad

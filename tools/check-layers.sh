#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# check-layers.sh ROOT: the one-way dependency rule of the source tree,
# read from its #include lines (doc/design.md, "Layers"):
#
#	src/shim -> src/report -> {src/symbolize, src/unwind} -> src/core
#
# a folder includes its own headers and those of layers below it, never
# one above or beside it; an include of ours names its folder
# ("core/registry.h"); loopback/ is a separate product and includes
# nothing of src/ (nor src/ of it); tools/ use core, symbolize and report
# only, and the sources of src/ that the report tool compiles in (listed
# in tools/report.inc) may not include unwind/ or shim/ either, since
# the tool links neither.  Prints each back edge as FILE:LINE and exits 1
# if there is one, 2 on bad usage.
set -eu

root=${1:?usage: check-layers.sh ROOT}
[ -d "$root/src" ] || { echo "check-layers.sh: $root/src: no such folder" >&2; exit 2; }
cd "$root"

# The sources of src/ compiled into rdmacheck-report.
tool_srcs=$(sed -n 's|.*\(src/[a-z_]*/[a-z_-]*\.c\).*|\1|p' \
	tools/report.inc 2>/dev/null | sort -u | tr '\n' ' ')

# One line per include of ours: FILE LINE HEADER.  Written out first so
# that a failure to read the tree is an error, not an empty pass.
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
find src loopback tools -type f \( -name '*.c' -o -name '*.h' \
	-o -name '*.def' \) >"$edges.files"
sort -o "$edges.files" "$edges.files"
while read -r f; do
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
	sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2/' |
	while read -r line inc; do
		echo "$f $line $inc"
	done
done <"$edges.files" >"$edges"
rm -f "$edges.files"
n=$(wc -l <"$edges")
if [ "$n" -lt 100 ]; then
	echo "check-layers.sh: only $n includes found under $root" >&2
	exit 2
fi
awk -v tool_srcs=" $tool_srcs " '
function rank(layer) {
	if (layer == "core") return 0
	if (layer == "unwind" || layer == "symbolize") return 1
	if (layer == "report") return 2
	if (layer == "shim") return 3
	return -1
}
function bad(why) {
	printf "%s:%s: includes \"%s\": %s\n", f, line, inc, why
	nbad++
}
{
	f = $1; line = $2; inc = $3
	split(f, p, "/")
	if (inc == "config.h" || inc ~ /^src\/rc_nodes\.h$/ || \
	    inc ~ /^tools\/[a-z_]*\.h$/)
		next
	if (p[1] == "loopback") {
		if (inc ~ /^(core|unwind|symbolize|report|shim)\// || \
		    inc ~ /^(\.\.\/)*src\//)
			bad("the loopback includes nothing of src/")
		next
	}
	split(inc, q, "/")
	to = (q[1] in layers) ? q[1] : ""
	if (p[1] == "tools") {
		if (to == "unwind" || to == "shim")
			bad("tools use core, symbolize and report only")
		if (inc ~ /\.c$/)
			bad("a .c file is compiled, not included")
		next
	}
	# src/LAYER/...
	from = p[2]
	if (rank(from) < 0)
		next
	if (index(inc, "/") == 0) {
		bad("an include of ours names its folder (\"" from "/" inc "\")")
		next
	}
	if (to == "") {
		if (inc ~ /loopback\//)
			bad("src/ includes nothing of the loopback")
		next
	}
	if (to != from && rank(to) >= rank(from))
		bad(from " may not depend on " to \
		    " (shim -> report -> {symbolize, unwind} -> core)")
	if (index(tool_srcs, " " f " ") && (to == "unwind" || to == "shim"))
		bad("compiled into rdmacheck-report, which links no " to "/")
}
BEGIN {
	layers["core"]; layers["unwind"]; layers["symbolize"]
	layers["report"]; layers["shim"]
}
END { exit nbad > 0 }
' "$edges"

#!/bin/sh
# gen-map.sh CPP DEF: print the linker version script for librdmacheck.so,
# every function of rdmacm_api.def under the version the real library gives
# it, so that binaries linked against librdmacm bind to our wrappers.
set -e
cpp=$1
def=$2
printf '#define RC_API(how, ret, name, ver, ...) RCMAP ver name\n#include "%s"\n' \
	"$def" | $cpp -P - | awk '
$1 == "RCMAP" {
	gsub(/"/, "", $2)
	if (!($2 in syms)) order[n++] = $2
	syms[$2] = syms[$2] "\t\t" $3 ";\n"
}
END {
	# Sort the nodes so that each can name its predecessor.
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && order[j - 1] > order[j]; j--) {
			t = order[j]; order[j] = order[j - 1]; order[j - 1] = t
		}
	prev = ""
	for (i = 0; i < n; i++) {
		v = order[i]
		printf "%s {\n\tglobal:\n%s", v, syms[v]
		if (i == 0)
			printf "\tlocal:\n\t\t*;\n"
		# Chain the RDMACM nodes as the real library does.
		if (prev != "" && substr(v, 1, 6) == substr(prev, 1, 6))
			printf "} %s;\n", prev
		else
			printf "};\n"
		prev = v
	}
}'

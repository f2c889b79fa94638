#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# gen-launcher.sh TEMPLATE OPTIONS_TAB LIBDIR PKGLIBDIR VERSION
# PKGLIBEXECDIR: print the launcher script.  OPTIONS_TAB is tools/deftab.sh's
# output for options.def.  In TEMPLATE, @libdir@, @pkglibdir@,
# @pkglibexecdir@ and @PACKAGE_VERSION@ are replaced,
# @RC_OPTIONS@ by "name:TYPE:min:max" words (bounds empty when they are not
# plain numbers; the shim still checks them; a WORDS option's min is its
# values joined with "|"), and a line holding only
# @RC_OPTIONS_HELP@ by the option lines of --help.
set -eu
template=$1
tab=$2
RC_LIBDIR=$3
RC_PKGLIBDIR=$4
RC_VERSION=$5
RC_PKGLIBEXECDIR=$6

# Bounds may be C expressions; plain arithmetic is evaluated here.
bound() {
	case ${1#-} in
	'' | *[!0-9]*) ;;
	*) echo "$1"; return ;;
	esac
	case $1 in
	*[!-0-9+*/%\(\)\ ]*) ;;
	*) (echo "$(($1))") 2>/dev/null && return ;;
	esac
	echo
}

words=
help=
# Tab is IFS white space (empty fields would merge): split on \037 instead.
us=$(printf '\037')
while IFS=$us read -r kind type name def min max text; do
	[ "$kind" = opt ] || continue
	# help=1 is for RDMACHECK_OPTIONS: the launcher's --help is its own.
	[ "$name" = help ] && continue
	case $name in
	'' | *[!a-z0-9_]*)
		echo "gen-launcher.sh: bad option name '$name'" >&2
		exit 1 ;;
	esac
	flag=$(echo "$name" | tr _ -)
	case $type in
	BOOL)
		words="$words $name:BOOL::"
		spec="--[no-]$flag"
		if [ "$def" = 0 ]; then extra=" (default off)"; else extra=" (default on)"; fi ;;
	INT)
		lo=$(bound "$min")
		hi=$(bound "$max")
		words="$words $name:INT:$lo:$hi"
		spec="--$flag=N"
		extra=" ($min..$max, default $def)" ;;
	WORDS)
		# the values, joined with "|" (no white space in a word)
		vals=$(printf '%s' "$min" | tr -s ' ' '|')
		words="$words $name:WORDS:$vals:"
		spec="--$flag=$vals"
		extra=" (default $def)" ;;
	*)
		words="$words $name:$type::"
		spec="--$flag=VALUE"
		extra= ;;
	esac
	help=$(printf '%s\n%s%s%s%s' "$help" "$spec" "$us" "$text" "$extra")
done <<EOF
$(tr '\t' '\037' <"$tab")
EOF
if [ -z "$words" ]; then
	echo "gen-launcher.sh: no options in $tab" >&2
	exit 1
fi

RC_OPTIONS=${words# }
RC_OPTIONS_HELP=${help#?}
export RC_LIBDIR RC_PKGLIBDIR RC_PKGLIBEXECDIR RC_VERSION RC_OPTIONS \
	RC_OPTIONS_HELP
# ENVIRON, not -v: values are used verbatim (no backslash processing).
awk '
function subst(s, key, val,    i, out) {
	out = ""
	while ((i = index(s, key)) > 0) {
		out = out substr(s, 1, i - 1) val
		s = substr(s, i + length(key))
	}
	return out s
}
# "spec\037text" lines: text wrapped at 79 columns beside the spec.
function help(s,    n, lines, i, spec, w, nw, col, out, k) {
	n = split(s, lines, "\n")
	for (i = 1; i <= n; i++) {
		spec = substr(lines[i], 1, index(lines[i], "\037") - 1)
		nw = split(substr(lines[i], length(spec) + 2), w, " ")
		out = sprintf("  %-27s", spec)
		if (length(spec) > 26)
			out = out "\n" sprintf("%29s", "")
		col = 29
		for (k = 1; k <= nw; k++) {
			if (col > 29 && col + 1 + length(w[k]) > 79) {
				out = out "\n" sprintf("%29s", "")
				col = 29
			}
			if (col > 29) {
				out = out " "
				col++
			}
			out = out w[k]
			col += length(w[k])
		}
		print out
	}
}
$0 == "@RC_OPTIONS_HELP@" { help(ENVIRON["RC_OPTIONS_HELP"]); next }
{
	s = subst($0, "@libdir@", ENVIRON["RC_LIBDIR"])
	s = subst(s, "@pkglibdir@", ENVIRON["RC_PKGLIBDIR"])
	s = subst(s, "@pkglibexecdir@", ENVIRON["RC_PKGLIBEXECDIR"])
	s = subst(s, "@PACKAGE_VERSION@", ENVIRON["RC_VERSION"])
	s = subst(s, "@RC_OPTIONS@", ENVIRON["RC_OPTIONS"])
	print s
}' "$template"
